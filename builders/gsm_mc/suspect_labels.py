"""How often the consensus check (:mod:`builders.from_predictions.consensus`) is right on GSM8K, measured on labels.

``data/suspect_key_labels.jsonl`` holds one row per GSM8K test question the check flagged in a default build on the
shared predictions: ``question_index``, ``id``, ``gsm8k_key``, the ``label`` (``wrong_key``: GSM8K's key is wrong,
``correct`` gives the right value; ``ambiguous``: the question has two readings, ``correct`` names both;
``key_right``: a false alarm, ``correct`` is the key) and a one-line ``reason``. Each question and its worked answer
were read and solved by hand, for mcqforge (the labels are ours, not GSM8K-Platinum's).

:func:`precision` scores any build's flags against the labels; ``python benchmarks/gsm_mc_suspect_precision.py
RELEASE`` does it for a release folder. :data:`SUSPECT_KEY_MEASURED` is the figure the card states.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Iterable

LABELS_FILE = "data/suspect_key_labels.jsonl"
LABELS = ("wrong_key", "ambiguous", "key_right")


@lru_cache(maxsize=1)
def labels() -> dict[str, dict]:
    """The labelled rows, by item id (``gsm8k/test/<index>``)."""
    text = resources.files(__package__).joinpath(LABELS_FILE).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    for row in rows:
        if row["label"] not in LABELS or row["id"] != f"gsm8k/test/{row['question_index']}":
            raise ValueError(f"{LABELS_FILE}: bad row {row}")
    return {row["id"]: row for row in rows}


@dataclass(frozen=True)
class Precision:
    """A build's flags against the labels: how many of each label, and how many flags have none."""

    flagged: int
    wrong_key: int
    ambiguous: int
    key_right: int
    unlabelled: int

    @property
    def labelled(self) -> int:
        return self.flagged - self.unlabelled

    @property
    def wrong_key_share(self) -> float:
        """wrong_key / labelled flags: how often a flag is a wrong key."""
        return self.wrong_key / self.labelled if self.labelled else 0.0

    @property
    def defect_share(self) -> float:
        """(wrong_key + ambiguous) / labelled flags: how often a flag is an item worth taking out."""
        return (self.wrong_key + self.ambiguous) / self.labelled if self.labelled else 0.0

    def as_dict(self) -> dict:
        return {"flagged": self.flagged, "wrong_key": self.wrong_key, "ambiguous": self.ambiguous,
                "key_right": self.key_right, "unlabelled": self.unlabelled,
                "wrong_key_share": self.wrong_key_share, "defect_share": self.defect_share}


def precision(flagged_ids: Iterable[str]) -> Precision:
    """The flags (item ids) scored against the labels."""
    known = labels()
    flagged = sorted(set(flagged_ids))
    counts = {label: sum(known[i]["label"] == label for i in flagged if i in known) for label in LABELS}
    return Precision(len(flagged), counts["wrong_key"], counts["ambiguous"], counts["key_right"],
                     sum(i not in known for i in flagged))


# Measured 2026-12-03 with builders/gsm_mc/data/suspect_key_labels.jsonl: the 29 suspect_key flags of a default build
# (`--source ../shared/data/gsm8k --predictions ../shared/data/predictions/gsm8k_test.jsonl`, seed 0) are those of the
# labels file less gsm8k/test/1046, which the count rule of builders.gsm_mc.kinds no longer flags (its models agreed
# on 47.25 hours). tests/test_gsm_mc_kinds.py recomputes it from the labels file.
DEFAULT_BUILD_UNFLAGGED = ("gsm8k/test/1046",)
SUSPECT_KEY_MEASURED = {"flagged": 29, "wrong_key": 7, "ambiguous": 8, "key_right": 14, "unlabelled": 0,
                        "wrong_key_share": 7 / 29, "defect_share": 15 / 29}
