"""The judge's validation of the contrast pairs (``--validate-with MODEL``), as the paper validated its contrast set
before testing models.

Each question of each matched pair is shown to the judge with the pair's two options, in an order drawn per pair
(:func:`judged_order`), with the shared prompt of :mod:`builders.core.llm.correct_options`: the judge names every
option that answers the question correctly. A pair is kept only where each of its two questions has exactly one
correct option and it is that question's key. Otherwise both of its questions are excluded from every config, with
the reason (first that applies, over the two questions):

- ``judge_two_answers``: the judge calls both shared options correct for a question (near-synonyms, a hypernym, one
  containing the other: the defect the screen looks for);
- ``judge_other_answer``: it calls only the other option correct (the source's key, or the pair, is wrong);
- ``judge_no_answer``: it calls neither correct;
- ``judge_failed``: no defect was found, but a question got no usable judgement (the request failed, or the reply
  was no JSON list of letters, twice). Such a pair is not validated, so it is not released as such: dropped.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import Any, Sequence

from builders.core.items.outcomes import Exclude
from builders.core.items.rng import item_rng
from builders.core.llm.correct_options import TEMPLATE_VERSION, Judgement, judge_correct_options

from .transform import NAME, ContrastPair

logger = logging.getLogger(__name__)

# The reasons a judged pair is dropped, in the order they take precedence.
TWO_ANSWERS, OTHER_ANSWER, NO_ANSWER, FAILED = "judge_two_answers", "judge_other_answer", "judge_no_answer", "judge_failed"
DROP_REASONS = (TWO_ANSWERS, OTHER_ANSWER, NO_ANSWER, FAILED)


def judged_order(pair: ContrastPair, seed: int) -> tuple[str, str]:
    """The pair's two options in the order the judge sees them, drawn per pair (a judge's positional bias then
    favours neither question's key)."""
    first_gold_first = bool(item_rng(seed, pair.id, NAME, "judge_order").random() < 0.5)
    return (pair.first.gold, pair.second.gold) if first_gold_first else (pair.second.gold, pair.first.gold)


def question_reason(judgement: Judgement, key: int) -> str | None:
    """Why a question fails validation, or None when the judge calls exactly its key correct."""
    if judgement.correct is None:
        return FAILED
    if judgement.correct == {key}:
        return None
    if len(judgement.correct) > 1:
        return TWO_ANSWERS
    return OTHER_ANSWER if judgement.correct else NO_ANSWER


@dataclass(frozen=True)
class PairVerdict:
    """The judge's verdict on a pair: its two questions' judgements (first, second) and why it is dropped (None:
    kept)."""

    pair_id: str
    options: tuple[str, str]  # as the judge saw them
    judgements: tuple[Judgement, Judgement]
    reason: str | None

    @property
    def kept(self) -> bool:
        return self.reason is None

    def exclusion(self, member: int) -> Exclude:
        """What becomes of the pair's ``member`` (0: first, 1: second) when the pair is dropped."""
        assert self.reason is not None, "only a dropped pair's questions are excluded"
        own, partner = self.judgements[member], self.judgements[1 - member]
        options = " / ".join(f"{letter}. {text}" for letter, text in zip("AB", self.options, strict=True))
        return Exclude(self.reason, "choices", f"judge: {own.letters()} for this question, {partner.letters()} for "
                                              f"its partner; options {options}"[:300])


@dataclass
class Validation:
    """The judge's verdicts on the matched pairs, and what the card says of them."""

    model: str
    verdicts: dict[str, PairVerdict]
    usage: str = ""

    def kept(self, pair: ContrastPair) -> bool:
        return self.verdicts[pair.id].kept

    def card(self) -> dict[str, Any]:
        judged = len(self.verdicts)
        kept = sum(v.kept for v in self.verdicts.values())
        dropped = Counter(v.reason for v in self.verdicts.values() if v.reason is not None)
        failed = sum(j.failed for v in self.verdicts.values() for j in v.judgements)
        return {"model": self.model, "template": TEMPLATE_VERSION, "pairs": judged, "questions": 2 * judged,
                "kept": kept, "kept_percent": round(100 * kept / judged, 1) if judged else 0.0,
                "dropped": {reason: dropped[reason] for reason in DROP_REASONS if dropped[reason]},
                "failed_questions": failed}


def validate_pairs(pairs: Sequence[ContrastPair], model: str, settings: Any, seed: int) -> Validation:
    """Ask ``model`` on the endpoint ``settings`` (:class:`builders.core.llm.settings.LLMSettings`) about both
    questions of every pair."""
    orders = [judged_order(pair, seed) for pair in pairs]
    questions = [(member.question, order) for pair, order in zip(pairs, orders, strict=True)
                 for member in (pair.first, pair.second)]
    with settings.client(model) as client:
        judgements = judge_correct_options(client, questions, desc="contrast judge")
        usage = client.usage_summary()
    logger.info("contrast judge: %s", usage)
    verdicts = {}
    for p, (pair, order) in enumerate(zip(pairs, orders, strict=True)):
        both = (judgements[2 * p], judgements[2 * p + 1])
        keys = (order.index(pair.first.gold), order.index(pair.second.gold))
        reasons = {question_reason(j, k) for j, k in zip(both, keys, strict=True)} - {None}
        reason = next((r for r in DROP_REASONS if r in reasons), None)
        verdicts[pair.id] = PairVerdict(pair.id, order, both, reason)
    return Validation(model, verdicts, usage)
