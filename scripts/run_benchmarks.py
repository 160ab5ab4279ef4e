"""Run the full-scale benchmark scripts on real benchmark copies, one after the other, and keep their output.

    python scripts/run_benchmarks.py --data ../shared/data --output bench-logs/
    python scripts/run_benchmarks.py --data ../shared/data --only wicked perturbations

Each script under ``benchmarks/`` times one builder (or one stage) at full scale and prints its figures; this
driver runs the chosen ones with the same ``--data``, writes each one's output to ``<output>/<name>.log``,
and ends with a table of exit status and wall time. The benchmarks are never run by CI (they need the real
data, which a clone does not have).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
# Scripts that take no --data (they make their own inputs).
NO_DATA = {"contrast_judge", "sandbox"}


def available() -> list[str]:
    return sorted(p.stem for p in BENCHMARKS.glob("*.py") if p.stem != "harness")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the folder of real benchmark copies (../shared/data)")
    parser.add_argument("--only", nargs="+", choices=available(), help="run only these benchmarks")
    parser.add_argument("--output", type=Path, default=Path("bench-logs"), help="where each benchmark's log goes")
    args = parser.parse_args(argv)
    if not args.data.is_dir():
        print(f"error: --data {args.data} is not a folder", file=sys.stderr)
        return 2
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        print(f"error: --output {args.output}: cannot create this folder ({error.strerror})", file=sys.stderr)
        return 2
    rows = []
    for name in args.only or available():
        command = [sys.executable, str(BENCHMARKS / f"{name}.py")] + ([] if name in NO_DATA else ["--data", str(args.data)])
        started = time.perf_counter()
        with open(args.output / f"{name}.log", "w", encoding="utf-8") as log:
            status = subprocess.run(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT).returncode
        rows.append((name, status, time.perf_counter() - started))
        print(f"{name}: exit {status} in {rows[-1][2]:.0f} s (log: {args.output / (name + '.log')})", flush=True)
    print("\n| benchmark | exit | seconds |\n|---|---|---|")
    for name, status, seconds in rows:
        print(f"| {name} | {status} | {seconds:.0f} |")
    return 0 if all(status == 0 for _, status, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
