"""Full-scale GSM-MC on the real GSM8K test set and predictions: time, peak memory, byte-identity, the
correct-answers-in-another-unit count and the answer cues (:mod:`gsm_mc_cues`), for the pool build (default,
--draw weighted, --keep-unit-multiples) and the random-distractor ablation.

    python benchmarks/gsm_mc.py --data ../shared/data [--sets 10] [--choices 4]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
from gsm_mc_cues import cues
from harness import REPO, parquet_digest, run_builder

FACTORS = (100, 1000, 60)


def items_with_unit_multiples(release: Path) -> tuple[int, int]:
    """(records over all sets with a distractor equal to the gold x or / 100, 1000, 60; records), from the files."""
    hits = total = 0
    for file in sorted(release.glob("set_*/*.parquet")):
        for row in pq.read_table(file, columns=["choices", "answer"]).to_pylist():
            values = [float(c) if "/" not in c else float(c.split("/")[0]) / float(c.split("/")[1]) for c in row["choices"]]
            gold = values[row["answer"]]
            total += 1
            hits += any(i != row["answer"] and gold and any(abs(v - gold * f) < 1e-9 or abs(v * f - gold) < 1e-9
                                                            for f in FACTORS) for i, v in enumerate(values))
    return hits, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--sets", type=int, default=10)
    parser.add_argument("--choices", type=int, default=4)
    args = parser.parse_args()
    data = args.data.resolve()
    common = ["--source", str(data / "gsm8k"), "--sets", str(args.sets), "--choices", str(args.choices)]
    pool = [*common, "--predictions", str(data / "predictions" / "gsm8k_test.jsonl")]
    builds = {"pools": pool, "pools, --draw weighted": [*pool, "--draw", "weighted"],
              "pools, --keep-unit-multiples": [*pool, "--keep-unit-multiples"],
              "random distractors": [*common, "--distractors", "random"]}
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in builds.items():
            outs = [Path(tmp) / f"{name}-{i}".replace(" ", "_").replace(",", "") for i in range(2)]
            runs = [run_builder("gsm_mc", [*argv, "--output", str(out)]) for out in outs]
            hits, total = items_with_unit_multiples(outs[0])
            same = parquet_digest(outs[0]) == parquet_digest(outs[1])
            print(f"{name}: {runs[0][0]:.1f} s and {runs[1][0]:.1f} s wall, peak {max(r[1] for r in runs):.0f} MiB; "
                  f"byte-identical: {same}; {hits} of {total} items (over {args.sets} sets) hold a unit multiple")
            print(f"    {cues(outs[0])}")


if __name__ == "__main__":
    main()
