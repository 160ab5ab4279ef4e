"""GSM-MC's invariants, checked on the release as built: the kernel's (one option equivalent to the gold, and it is
the answer; no two options equivalent; every distractor from its pool or a random draw), judged with the builder's
exact equivalence and again with floats; no distractor that is the gold in another unit or rounded, re-read with
the validator's own unit list and Decimal; a count question's distractors whole and not negative, and no wrong
value at two roundings, each re-read with the validator's own reading of the question and of the option text
(:data:`COUNT_DISTRACTORS`, :data:`ONE_ROUNDING`); and the balanced draw's distractors of the key's kind."""

from __future__ import annotations

import functools
import math
import re
from decimal import ROUND_HALF_DOWN, ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from typing import Mapping

from builders.core.build.result import Build, Check
from builders.from_predictions import consensus
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import Pool, pool_rows

from .answers import is_random_offset, normalize_number, parse_number


def checks(golds: Mapping[str, str], pools: Mapping[str, Pool] | None, equal, *, draw: str,
           keep_unit_multiples: bool, keep_suspect_keys: bool) -> list[Check]:
    """``golds``: every item's gold, by id; ``pools``: the items' pools (None for random distractors); ``equal``:
    the builder's equivalence of two numbers."""
    return [*mc.make_checks(golds, equal, pools, random_ok), one_numeric_gold(golds),
            *([] if keep_unit_multiples else [NO_UNIT_MULTIPLE]), NO_ROUNDED_GOLD, COUNT_DISTRACTORS, ONE_ROUNDING,
            *([keys_kind_check(pools)] if pools is not None and draw == "balanced" else []),
            *([consensus.no_suspect_check(pool_rows(pools.values()))] if pools is not None and not keep_suspect_keys
              else [])]


def random_ok(gold: str, text: str) -> bool:
    """Whether ``text`` is one of the numbers ``--distractors random`` may draw for ``gold``."""
    value, option = parse_number(gold), parse_number(text)
    return option is not None and normalize_number(text) == text and is_random_offset(value, option - value)


# The validator's own reading of the units a question names (apart from answers.question_conversions): each
# unit's words, and the factors of its conversions to the other units of the builder's documented list.
_CHECKED_UNITS = (
    (r"years?|yearly|annual(?:ly)?", (12, 52, 365)), (r"months?|monthly", (12,)), (r"weeks?|weekly", (52, 7, 168)),
    (r"days?|daily", (365, 7, 24, 1440)), (r"hours?|hourly|hrs?", (168, 24, 3600)), (r"minutes?|mins?", (1440,)),
    (r"seconds|secs?", (3600,)), (r"dozens?", (12,)), (r"pounds?|lbs?", (16,)), (r"ounces?|oz", (16,)),
    (r"yards?", (3, 36)), (r"feet|foot|ft", (3, 12)), (r"inch(?:es)?", (36, 12)), (r"gallons?", (4, 8, 16)),
    (r"quarts?", (4,)), (r"pints?", (8,)), (r"cups?", (16, 4)),
)


@functools.lru_cache(maxsize=4096)  # every config holds the question again
def _checked_factors(question: str) -> frozenset[int]:
    return frozenset({100, 1000, 60} | {factor for words, factors in _CHECKED_UNITS
                                        if re.search(rf"\b(?:{words})\b", question, re.IGNORECASE) for factor in factors})


def _other_form_options(build: Build):
    """Re-checked with floats and the validator's own unit reading, apart from the pool filter's exact fractions
    and unit list: no option is the gold ×/÷ a unit factor (the general ones and those of the units the question
    names)."""
    for config, split, records in build.records():
        for record in records:
            factors = _checked_factors(record.question)
            values = [float_value(c) for c in record.choices]
            gold = values[record.answer]
            for index, value in enumerate(values):
                if index != record.answer and gold and any(
                        math.isclose(value, gold * f, rel_tol=1e-12) or math.isclose(value * f, gold, rel_tol=1e-12)
                        for f in factors):
                    yield f"{config}/{split} {record.id}: option {record.choices[index]!r} is the gold {record.gold!r} in another unit"


def _rounded_gold_options(build: Build):
    """With Decimal quantize, apart from the builder's fractions: no decimal option is the gold rounded to the
    option's own decimals (half up or half even)."""
    for config, split, records in build.records():
        for record in records:
            gold = record.choices[record.answer]
            for index, option in enumerate(record.choices):
                if index == record.answer or "." not in option or "/" in option or "/" in gold:
                    continue
                exponent = Decimal(1).scaleb(-len(option.split(".")[1]))
                exact = Decimal(gold)
                if exact != exact.quantize(exponent) and any(
                        exact.quantize(exponent, rounding=mode) == Decimal(option) for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN)):
                    yield f"{config}/{split} {record.id}: option {option!r} is the gold {gold!r} rounded"


@functools.lru_cache(maxsize=1 << 16)
def float_value(text: str) -> float:
    """An option's value as a float: the checks' own reading, apart from the builder's exact equivalence."""
    if "/" in text:
        numerator, denominator = text.split("/")
        return float(numerator) / float(denominator)
    return float(text.replace(",", ""))


def one_numeric_gold(golds: dict[str, str]) -> Check:
    return mc.second_reading_check(
        "one_numeric_gold", "with floats, apart from the builder's exact equivalence", golds,
        lambda a, b: math.isclose(float_value(a), float_value(b), rel_tol=1e-12, abs_tol=1e-12))


NO_UNIT_MULTIPLE = Check("no_unit_multiple", "no distractor equals the gold times or divided by 100, 1000, 60 or a "
                         "conversion between units the question names", _other_form_options)


NO_ROUNDED_GOLD = Check("no_rounded_gold", "no decimal distractor is the gold rounded to the distractor's own decimals",
                        _rounded_gold_options)


def keys_kind_check(pools: dict[str, Pool]) -> Check:
    return Check("distractors_of_the_keys_kind", "the balanced draw: every distractor is of the key's kind (an "
                 "integer or not, its sign) where the pool holds enough of that kind",
                 lambda build: _kind_violations(build, pools))


def _kind_violations(build: Build, pools: dict[str, Pool]):
    """With exact fractions, apart from the draw's floats: a distractor of another kind than the key (an integer
    among fractions, a sign) is drawn only when the pool holds too few candidates of the key's kind."""
    for config, split, records in build.records():
        for record in records:
            key = _kind(record.gold)
            alike = sum(_kind(c.text) == key for c in pools[record.id].candidates)
            odd = [c for i, c in enumerate(record.choices) if i != record.answer and _kind(c) != key]
            if odd and alike >= len(record.choices) - 1:
                yield (f"{config}/{split} {record.id}: {odd} are not of the key {record.gold!r}'s kind, and the pool "
                       f"holds {alike} candidates that are")


@functools.lru_cache(maxsize=1 << 16)
def _kind(text: str) -> tuple[bool, bool]:
    """An integer or not, and the sign, with exact fractions."""
    number = Fraction(text.replace(",", ""))
    return number.denominator == 1, number < 0


# ---- distractors of the question's kind, re-read apart from builders.gsm_mc.kinds -----------------------------------

_ASKS_FOR = ("calculate", "find", "determine", "what is", "what's", "what was")


@functools.lru_cache(maxsize=4096)  # every config holds the question again
def _asks_for_a_count(question: str) -> bool:
    """The validator's own reading of a count question's wording: the last sentence ending in "?" (else the last
    sentence), cut by scanning for ".", "!" or "?" before a space, says "how many", or "number of" after one of
    :data:`_ASKS_FOR` with no comma between."""
    text, sentences, start = question.strip(), [], 0
    for index, char in enumerate(text):
        if char in ".!?" and (index + 1 == len(text) or text[index + 1].isspace()):
            sentences.append(text[start:index + 1].strip())
            start = index + 1
    if text[start:].strip():
        sentences.append(text[start:].strip())
    asking = next((s for s in reversed(sentences) if s.endswith("?")), sentences[-1] if sentences else "")
    words = " ".join(asking.lower().split())
    if re.search(r"(?<![a-z0-9_])how many(?![a-z0-9_])", words):
        return True
    for phrase in _ASKS_FOR:
        for found in re.finditer(rf"(?<![a-z0-9_]){re.escape(phrase)}(?![a-z0-9_])", words):
            rest = words[found.end():]
            number_of = re.search(r"(?<![a-z0-9_])number of(?![a-z0-9_])", rest)
            if number_of and "," not in rest[:number_of.start()]:
                return True
    return False


@functools.lru_cache(maxsize=1 << 16)  # an option is read in every config and twice per record
def _exact(text: str) -> Fraction:
    """An option's exact value by :class:`Fraction`'s own parsing of the text ("2.67", "8/3", "-3", "1,200")."""
    return Fraction(text.replace(",", ""))


def _count_violations(build: Build):
    for config, split, records in build.records():
        for record in records:
            gold = _exact(record.choices[record.answer])
            if gold.denominator != 1 or gold < 0 or not _asks_for_a_count(record.question):
                continue
            odd = [c for i, c in enumerate(record.choices) if i != record.answer
                   and (_exact(c).denominator != 1 or _exact(c) < 0)]
            if odd:
                yield f"{config}/{split} {record.id}: the count question's distractors {odd} are not whole counts"


def _places(text: str) -> int | None:
    """Decimals shown, None for an exact fraction."""
    if "/" in text:
        return None
    return len(text.rpartition(".")[2]) if "." in text else 0


def _rounding_violations(build: Build):
    """With Decimal quantize, half up and half down: no two distractors are equal once rounded to the decimals of
    the less precise (an exact fraction is the most precise; a whole number is no rounding)."""
    for config, split, records in build.records():
        for record in records:
            wrong = [c for i, c in enumerate(record.choices) if i != record.answer]
            for i, first in enumerate(wrong):
                for second in wrong[i + 1:]:
                    places = [p for p in (_places(first), _places(second)) if p is not None]
                    if not places or min(places) == 0:
                        continue
                    exponent = Decimal(1).scaleb(-min(places))
                    with localcontext() as context:
                        context.prec = 60
                        values = [Decimal(v.numerator) / Decimal(v.denominator) for v in map(_exact, (first, second))]
                        if values[0] != values[1] and any(
                                values[0].quantize(exponent, rounding=mode) == values[1].quantize(exponent, rounding=mode)
                                for mode in (ROUND_HALF_UP, ROUND_HALF_DOWN)):
                            yield f"{config}/{split} {record.id}: {first!r} and {second!r} are one value at two roundings"


COUNT_DISTRACTORS = Check("count_question_distractors", "a count question (a whole gold, 0 or more, and an asking "
                          "sentence that says how many or asks for the number of something) has no non-integer and no "
                          "negative distractor", _count_violations)
ONE_ROUNDING = Check("one_rounding_per_value", "no two distractors are one value at two roundings (equal once rounded "
                     "to the shown precision of the less precise)", _rounding_violations)
