"""The contrast pairs a person should read, for the release's review queue (``review.jsonl``, ``review.html``).

The paper validated its contrast set before testing models. A release built without a judge (no ``--validate-with``)
is not validated, so every one of its pairs is queued: the pairs the screen (:mod:`.screen`) flags with the screen's
reason (``contrast_screen_containment``, ``contrast_screen_near_synonym``), the others as ``contrast_not_validated``.
With a judge, the pairs it dropped are excluded with its reason (``exclusions.jsonl``); of those it kept, the ones the
screen flags are queued, with the judge's verdicts beside the screen's reason (its recall is not perfect either).

A queue entry is one question (the corrections file names source items): both questions of a queued pair are queued,
each showing the source item, with the pair, the partner's question and the two options it is asked with as evidence.
Where the screen flags the pair, the evidence points to excluding it: each question may have two defensible answers.
"""

from __future__ import annotations

from typing import Any, Sequence

from builders.core.items.review import ReviewEntry, shown_item

from .screen import screened
from .transform import ContrastPair
from .validation import Validation

NOT_VALIDATED = "contrast_not_validated"
SCREEN_PREFIX = "contrast_screen_"


def queued_pairs(pairs: Sequence[ContrastPair], validation: Validation | None) -> list[tuple[ContrastPair, str]]:
    """The pairs queued for review, each with why: every pair without a judge, the kept pairs the screen flags with
    one."""
    flags = {f["pair_id"]: f["reason"] for f in screened(pairs)}
    queued = []
    for pair in pairs:
        flag = flags.get(pair.id)
        if validation is None:
            queued.append((pair, SCREEN_PREFIX + flag if flag else NOT_VALIDATED))
        elif flag and validation.kept(pair):
            queued.append((pair, SCREEN_PREFIX + flag))
    return queued


def review_queue(pairs: Sequence[ContrastPair], validation: Validation | None) -> list[ReviewEntry]:
    """Both questions of every queued pair (:func:`queued_pairs`), as review entries."""
    entries = []
    for pair, why in queued_pairs(pairs, validation):
        options = [pair.first.gold, pair.second.gold]
        for record, partner in ((pair.first, pair.second), (pair.second, pair.first)):
            evidence: dict[str, Any] = {
                "pair_id": pair.id, "partner_id": partner.id, "partner_question": partner.question,
                "pair_options": options, "key_in_pair": record.gold, "golds_similarity": pair.golds_similarity,
            }
            if validation is None:
                evidence["validated"] = "no: neither a judge nor a person read this pair"
            else:
                verdict = validation.verdicts[pair.id]
                own, other = verdict.judgements if record is pair.first else verdict.judgements[::-1]
                evidence["judge"] = (f"{validation.model} kept the pair: {own.letters()} for this question, "
                                     f"{other.letters()} for its partner, options "
                                     + " / ".join(f"{letter}. {text}" for letter, text in zip("AB", verdict.options, strict=True)))
            suggestion = {"action": "exclude"} if why != NOT_VALIDATED else {}
            entries.append(ReviewEntry(record.id, why, "kept", shown_item(record), evidence, suggestion))
    return entries
