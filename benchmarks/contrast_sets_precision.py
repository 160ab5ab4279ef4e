"""The contrast-set matcher's precision on a labelled sample of replaced distractors.

    python benchmarks/contrast_sets_precision.py RELEASE [RELEASE ...]

Every contrast question offers its partner's gold in place of one of its own distractors. Where the two texts
differ (after case and spacing), the replacement is only sound if they mean the same.
``contrast_sets_replacements.jsonl`` holds such replacements from full UnifiedQA builds (train + test, seed 0,
default options) before and after the equivalence veto (``builders/contrast_sets/equivalence.py``), each labelled
by reading it: ``equivalent`` is true when the stand-in means what the replaced distractor meant (forms of one
word, articles, punctuation), false for another number, a narrower or wider thing, a part, a degree or another
predicate. For each release it prints the labelled replacements it contains, how many are equivalent (the
precision) and how many of its replacements carry no label. ``builders/contrast_sets/calibration.py``
(``MATCHER_PRECISION``) keeps the figures the card shows.
"""

from __future__ import annotations

import argparse
import glob
import json
from pathlib import Path

import pyarrow.parquet as pq

LABELS = Path(__file__).with_name("contrast_sets_replacements.jsonl")


def replacements(release: Path) -> set[tuple[str, str, str]]:
    found = set()
    for path in sorted(glob.glob(str(release / "contrast" / "*.parquet"))):
        for row in pq.read_table(path).to_pylist():
            stand_in = row["choices"][1 - row["answer"]]
            replaced = row["metadata"]["replaced_distractor"]
            if " ".join(stand_in.casefold().split()) != " ".join(replaced.casefold().split()):
                found.add((row["id"], replaced, stand_in))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="+", type=Path)
    args = parser.parse_args()
    labels = {(r["id"], r["replaced"], r["stand_in"]): r["equivalent"]
              for r in map(json.loads, LABELS.read_text().splitlines())}
    for release in args.releases:
        found = replacements(release)
        labelled = [labels[key] for key in found if key in labels]
        precision = sum(labelled) / len(labelled) if labelled else float("nan")
        print(json.dumps({"release": release.name, "replacements": len(found), "labelled": len(labelled),
                          "equivalent": sum(labelled), "precision": round(precision, 3),
                          "unlabelled": len(found) - len(labelled)}))


if __name__ == "__main__":
    main()
