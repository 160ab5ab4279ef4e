"""The NOTA-keyed items a person should read: their question asks for the best, most likely or primary answer.

Two-answer items gather there (44% of ARC's and 29% of MMLU's NOTA-keyed items, read by hand): removing the best
option often leaves a second-best one that is still acceptable, so "None of the above" is not clearly right. The
release's review queue lists them, for every variant, with the cue that put each there.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Mapping, Sequence

from builders.core.items.record import MCQRecord
from builders.core.items.review import ReviewEntry, shown_item

BEST_ANSWER_REASON = "nota_keyed_best_answer_question"
BEST_ANSWER_CUE = re.compile(
    r"\b(?:best|most\s+(?:likely|probably|probable|appropriate|accurate|important|common|commonly|effective|"
    r"suitable|useful|significant|important)|primary|primarily|main|mainly|chief|chiefly|principal|principally)\b",
    re.I)


@lru_cache(maxsize=1 << 16)  # a question is read in every variant where its key became NOTA
def best_answer_cue(question: str) -> str | None:
    """The words of ``question`` that ask for the best of several acceptable answers ("most likely"), or None."""
    match = BEST_ANSWER_CUE.search(question)
    return " ".join(match.group(0).lower().split()) if match else None


def best_answer_nota_keyed(configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]]) -> list[dict]:
    """Per variant and split, the items keyed "None of the above" whose question asks for the best answer: what the
    review queue lists (id, config, split, the cue, the question, the options and the removed key's index)."""
    entries = []
    for config, splits in configs.items():
        for split, records in splits.items():
            for record in records:
                cue = best_answer_cue(record.question) if record.metadata.get("nota_is_answer") else None
                if cue:
                    entries.append({"id": record.id, "config": config, "split": split, "reason": BEST_ANSWER_REASON,
                                    "cue": cue, "question": record.question, "choices": list(record.choices),
                                    "removed_index": record.metadata["removed_index"]})
    return entries


def best_answer_review(records: Sequence[MCQRecord], configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]]
                       ) -> list[ReviewEntry]:
    """The review queue's entries for :func:`best_answer_nota_keyed`: one per source item (a decision applies to
    every variant), queued for :data:`BEST_ANSWER_REASON`, with the cue, the variants where "None of the above" is
    its key, and the removed key's text. ``records``: the source's items, as the source has them."""
    found: dict[str, list[dict]] = {}
    for entry in best_answer_nota_keyed(configs):
        found.setdefault(entry["id"], []).append(entry)
    source = {record.id: record for record in records}
    return [ReviewEntry(item_id, BEST_ANSWER_REASON, "altered", shown_item(source[item_id]),
                        {"cue": entries[0]["cue"], "nota_keyed_in": [entry["config"] for entry in entries],
                         "removed_key": source[item_id].choices[source[item_id].answer]})
            for item_id, entries in found.items()]


def best_answer_counts(entries: Sequence[ReviewEntry]) -> dict[str, int]:
    """What the card says of them: the items queued, and the item-variants they stand for."""
    return {"queued": len(entries), "item_variants": sum(len(e.evidence["nota_keyed_in"]) for e in entries)}
