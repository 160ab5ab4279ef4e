"""The precision of GSM-MC's consensus check (``suspect_key``), measured on the labels shipped in
``builders/gsm_mc/data/suspect_key_labels.jsonl``: how many of a release's flags are wrong keys, ambiguous questions
and false alarms.

    python benchmarks/gsm_mc_suspect_precision.py RELEASE [RELEASE ...]

A release's flags are its ``suspect_key`` exclusions (``exclusions.jsonl``); a release built with
``--keep-suspect-keys`` excludes none, so build it without. Flags the labels do not cover are counted as unlabelled:
read them and add them to the labels file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from builders.gsm_mc.suspect_labels import SUSPECT_KEY_MEASURED, labels, precision


def flags(release: Path) -> list[str]:
    rows = [json.loads(line) for line in (release / "exclusions.jsonl").read_text().splitlines() if line.strip()]
    return [row["id"] for row in rows if row["reason"] == "suspect_key"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="+", type=Path)
    args = parser.parse_args()
    print(f"labels: {len(labels())} questions; the card states {SUSPECT_KEY_MEASURED}")
    for release in args.releases:
        found = flags(release)
        measured = precision(found)
        print(f"{release}: {json.dumps(measured.as_dict())}")
        for item in sorted(set(found) - set(labels())):
            print(f"  unlabelled: {item}")


if __name__ == "__main__":
    main()
