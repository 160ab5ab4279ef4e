"""Sustained sandbox throughput: executions per second of a trivial program.

    python benchmarks/sandbox.py --runs 2000 --workers 2 [--site-packages] [--unsafe]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builders.core.sandbox import Sandbox  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--site-packages", action="store_true", help="start Python with site-packages")
    parser.add_argument("--unsafe", action="store_true", help="plain subprocess, no bubblewrap")
    args = parser.parse_args()
    sandbox = Sandbox(workers=args.workers, unsafe=args.unsafe, site_packages=args.site_packages)
    programs = [f"print({i} * {i})" for i in range(args.runs)]
    started = time.perf_counter()
    results = sandbox.run_many(programs)
    elapsed = time.perf_counter() - started
    wrong = sum(result.stdout != f"{i * i}\n" for i, result in enumerate(results))
    mode = "unsafe" if args.unsafe else f"bwrap={sandbox.bwrap}"
    print(f"{mode} workers={args.workers} site_packages={args.site_packages}")
    print(f"{args.runs} executions in {elapsed:.1f} s: {args.runs / elapsed:.1f} executions/s ({wrong} wrong)")


if __name__ == "__main__":
    main()
