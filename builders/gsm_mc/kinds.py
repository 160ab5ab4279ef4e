"""Distractors of the question's kind: a count question gets no non-integer and no negative distractor, and no wrong
value is shown at two roundings in one item.

**A count question** is one whose gold is a whole number, 0 or more, and whose asking sentence asks for a number of
things: it says "how many", or "number of" after "calculate", "find", "determine", "what is", "what's" or "what was"
with no comma between ("Calculate the total number of legs", "What is the maximum number of boxes"). The asking
sentence is the last sentence that ends in "?", else the last sentence (sentences end at ".", "!" or "?" followed
by a space): "How many people does he help? (Remember there are 31 days in March.)" asks "how many", "He asks his
friends how many they think are in the jar. ... What is their average guess?" does not. A "how many" measure with
a whole gold ("how many hours", 3) counts too: beside a whole key of a question that asks how many, 2.5 or -3 is
of another kind, which needs no knowledge to rule out. Both conditions are needed: a question asking "how many"
whose gold is not whole (2.5 hours) keeps its non-integer distractors, and a whole amount of money ("How much does
she make?", 18) keeps 17.5.

**Two roundings of one value**: two wrong values are one value at two roundings when they are equal once both are
rounded to the shown precision of the less precise ("8/3" and "2.67", "2.666" and "2.67", "2.54" and "2.5"). A
whole number is no rounding (3 beside 2.67 is another answer), nor are two values shown at the same precision.

Candidates are left out of the pool with their reason (``pools.jsonl`` lists them under ``left_out``, the card counts
them), so a set draws the next candidates instead, deterministically: the pool is ordered by model count, and of
two roundings the one more models gave is kept.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction

from builders.from_predictions.pools import Candidate, LeftOut, Pool, rounds_to

from .answers import parse_number, shown_decimals

NON_INTEGER, NEGATIVE, ANOTHER_ROUNDING = "not_a_count:non_integer", "not_a_count:negative", "another_rounding"
REASONS = (NON_INTEGER, NEGATIVE, ANOTHER_ROUNDING)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_COUNT_ASK = re.compile(r"\bhow\s+many\b|\b(?:calculate|find|determine|what\s+is|what's|what\s+was)\b[^,]*?\bnumber\s+of\b",
                        re.IGNORECASE)


def asking_sentence(question: str) -> str:
    """The last sentence that ends in "?", else the last sentence."""
    sentences = [s for s in _SENTENCE_END.split(question.strip()) if s]
    asking = [s for s in sentences if s.endswith("?")]
    return (asking or sentences or [""])[-1]


def is_count_question(question: str, gold: Fraction) -> bool:
    """Whether the question asks for a count (see the module's rule)."""
    return gold.denominator == 1 and gold >= 0 and _COUNT_ASK.search(asking_sentence(question)) is not None


def _precision(text: str) -> float:
    """Decimals shown; an exact fraction ("8/3", a value with no finite decimal) is exact: infinitely precise."""
    return float("inf") if "/" in text else shown_decimals(text)


def two_roundings(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one value at two roundings (see the module)."""
    (coarse, fine) = sorted((a, b), key=_precision)
    decimals = _precision(coarse)
    if decimals == 0 or decimals == float("inf"):
        return False
    return rounds_to(parse_number(fine), parse_number(coarse), int(decimals))


def not_of_the_kind(count: bool, text: str) -> str | None:
    """The reason a candidate is of another kind than a count question's answer, or None."""
    value = parse_number(text)
    if not count or value is None:
        return None
    if value < 0:
        return NEGATIVE
    return NON_INTEGER if value.denominator != 1 else None


def of_the_questions_kind(pool: Pool, question: str) -> Pool:
    """The pool without the candidates of another kind than the question's answer, and without a second rounding of a
    candidate kept (the one more models gave, the pool's order, stays); they move to ``left_out`` with the reason."""
    count = is_count_question(question, parse_number(pool.gold))
    kept: list[Candidate] = []
    left = list(pool.left_out)
    for candidate in pool.candidates:
        reason = not_of_the_kind(count, candidate.text)
        if reason is None and any(two_roundings(other.text, candidate.text) for other in kept):
            reason = ANOTHER_ROUNDING
        if reason is None:
            kept.append(candidate)
        else:
            left.append(LeftOut(candidate, reason))
    return replace(pool, candidates=kept, left_out=tuple(left))
