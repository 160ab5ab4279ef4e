"""Kills a full-MMLU WiCkeD rebuild over an existing release at random moments; after each kill the folder must
hold a whole release (the old one or the new one), and re-running the same command must complete.

    python benchmarks/kill_rebuild.py [--data ../shared/data] [--kills 4] [--seed 0]

A release is whole when ``build_config.yaml`` is there and every config/split the validation report counts has its
Parquet file with that many rows.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builders.registry import BUILDERS  # noqa: E402


def command(data: Path, out: Path, seed: int) -> list[str]:
    return [sys.executable, "-m", BUILDERS["wicked"], "--source", str(data / "mmlu"), "--sba-classifier", "none",
            "--seed", str(seed), "--output", str(out), "--log-level", "ERROR"]


def whole_release_seed(out: Path) -> int | None:
    """The seed of the whole release in ``out``, or None when the folder is not a whole release."""
    config_file = out / "build_config.yaml"
    if not config_file.is_file():
        return None
    report = json.loads((out / "validation_report.json").read_text())
    for config, splits in report["counts"].items():
        for split, counts in splits.items():
            file = out / config / f"{split}-00000-of-00001.parquet"
            if not file.is_file() or pq.ParquetFile(file).metadata.num_rows != counts["out"]:
                return None
    return yaml.safe_load(config_file.read_text())["params"]["seed"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO / ".." / "shared" / "data")
    parser.add_argument("--kills", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill times")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="kill-rebuild-") as tmp:
        out = Path(tmp) / "release"
        started = time.monotonic()
        subprocess.run(command(args.data, out, 0), check=True, cwd=REPO)
        build_s = time.monotonic() - started
        print(f"first build: {build_s:.0f} s, whole release of seed {whole_release_seed(out)}")
        for kill in range(1, args.kills + 1):
            seed = kill
            process = subprocess.Popen(command(args.data, out, seed), cwd=REPO)
            moment = rng.uniform(1.0, build_s)
            time.sleep(moment)
            process.send_signal(signal.SIGKILL)
            process.wait()
            after_kill = whole_release_seed(out)
            rerun = subprocess.run(command(args.data, out, seed), cwd=REPO)
            print(f"kill {kill} at {moment:.1f} s: folder holds {'the whole release of seed ' + str(after_kill) if after_kill is not None else 'NO WHOLE RELEASE'}; "
                  f"re-run exit {rerun.returncode}, then the whole release of seed {whole_release_seed(out)}", flush=True)


if __name__ == "__main__":
    main()
