"""WiCkeD's figure without SBA detection, per source: of the labelled items WiCkeD alters, how many are SBA.

    nice python sba_share.py [--data ../../shared/data]

Reads ``sba_labels/{train,eval}.jsonl`` (version 2) and prints, per source, the counts that
``builders.wicked.sba.SBA_LABEL_SHARES`` holds. Never run by CI.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from builders.core.items.record import MCQRecord
from builders.wicked.transform import skip_reason

SOURCES = {"mmlu": "mmlu", "mmlu_pro": "mmlu_pro", "truthful_qa": "truthful_qa", "unifiedqa": "commonsense_qa"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    args = parser.parse_args()
    altered, sba = Counter(), Counter()
    for name in ("train.jsonl", "eval.jsonl"):
        for line in (args.data / "sba_labels" / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            record = MCQRecord(row["id"], row["question"], tuple(row["choices"]), row["answer"], row["source"], "", "", 0)
            if skip_reason(record) is None:
                altered[SOURCES[row["source"]]] += 1
                sba[SOURCES[row["source"]]] += row["label"] == "SBA"
    for source, count in altered.items():
        print(f"{source}: {sba[source]} of {count} labelled items WiCkeD alters are SBA ({sba[source] / count:.1%})")


if __name__ == "__main__":
    main()
