"""GSM8K answers: extraction from model outputs, numeric normalisation, equivalence, random numbers.

Extraction, first match wins: the ``#### N`` line (GSM8K's own format), then the last ``\\boxed{}``, then
"The answer is N", then the last number in the text. A boxed answer is the model's final word: it gives
its one number (``\\$45``, ``140 minutes``, ``\\frac{840}{13}``, ``2\\frac{2}{3}``, ``8 + 7 = 15`` after
the last ``=``, ``85{,}000``), and a boxed answer that is not one number (``12x + 4``, ``2:00 pm``,
``\\text{undefined}``, ``470 cows, 230 chickens``) makes the output invalid rather than falling back to a
number elsewhere in the text, which the model never gave as its answer. Every number is normalised: thousands commas,
``$``, ``%`` and units are dropped, ``18.0`` is ``18``, ``3/4`` is kept as an exact fraction. Two
answers are equivalent when their exact (rational) values are equal.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

from builders.from_predictions.extract import MAX_BOXED_CHARS, brace_pairs
from builders.from_predictions.pools import rounds_to

if TYPE_CHECKING:
    import numpy as np

NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+(?![\d,]|\.\d))?|-?\.\d+"
_NUMBER = re.compile(NUMBER)
_HASHES = re.compile(r"####\s*+\$?\s*+(" + NUMBER + ")")
_BOX_START = re.compile(r"\\boxed\s*\{")
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{([^{}]*)\}")
_MIXED = re.compile(r"(?<![\d.])(-?)(\d+)\s*\\[dt]?frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}")
_FRACTION = re.compile(r"\\[dt]?frac\s*\{\s*(-?[\d.,]+)\s*\}\s*\{\s*([\d.,]+)\s*\}")
_SPACED_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3})((?: \d{3})+)(?![\d.,])")
# Next to the one number of a boxed answer, these make it an expression, not a number: an operator, a
# variable ("3x", "T - 14"; g, m, l, h and s are units), a time ("2:00").
_EXPRESSION = re.compile(r"[+*/^=<>:]|\\(?:times|div|cdot|pm)(?![A-Za-z])|#\s*(?![ghlms](?![A-Za-z]))[A-Za-z](?![A-Za-z])"
                         r"|(?<![A-Za-z])(?![ghlms](?![A-Za-z]))[A-Za-z]\s*#|[A-Za-z0-9)}]\s*-\s*#|#\s*-")
# Possessive spaces (``\s*+``): adjacent optional runs of spaces would be tried in every split, cubic in a
# long run of spaces.
_ANSWER_IS = re.compile(r"answer\s++is\s*+:?\s*+\$?\\?\$?\s*+(" + NUMBER + ")", re.IGNORECASE)
# Enough for GSM8K; longer digit strings are copying accidents, not answers.
MAX_DIGITS = 30


@functools.lru_cache(maxsize=1 << 16)
def parse_number(text: str) -> Fraction | None:
    """The exact value of one number as written ("1,234.50", "-3", "3/4"), or None (once per distinct text)."""
    cleaned = text.replace(",", "").replace(" ", "")
    if not cleaned or len(cleaned) > MAX_DIGITS:
        return None
    try:
        if "/" in cleaned:
            numerator, denominator = cleaned.split("/")
            value = Fraction(Decimal(numerator)) / Fraction(Decimal(denominator))
        else:
            value = Fraction(Decimal(cleaned))
    except (InvalidOperation, ValueError, ZeroDivisionError):
        return None
    return meant_value(value) if is_float_artefact(cleaned) else value


# A binary float printed in full ("201.89999999999998", "10.833333333333332") has 15 to 17 significant digits;
# nobody writes a GSM8K answer that way by hand.
FLOAT_DIGITS = 15


def is_float_artefact(cleaned: str) -> bool:
    return "." in cleaned and "/" not in cleaned and len(cleaned.replace("-", "").replace(".", "").lstrip("0")) >= FLOAT_DIGITS


def meant_value(value: Fraction) -> Fraction:
    """The number a program's float output stands for: the shortest decimal within 1e-9 of it relatively, with
    at most 6 decimals (201.89999999999998 is 201.9, 0.04999999999999999 is 0.05); a repeating decimal has
    none, and is read at cents' precision (10.833333333333332 is 10.83), as GSM8K writes such amounts."""
    tolerance = abs(value) * Fraction(1, 10 ** 9)
    for decimals in range(7):
        rounded = round(value, decimals)
        if abs(rounded - value) <= tolerance:
            return rounded
    return round(value, 2)


def format_number(value: Fraction) -> str:
    """Canonical text: "18", "18.5", "-0.25"; a fraction with no finite decimal stays "1/3"."""
    if value.denominator == 1:
        return str(value.numerator)
    denominator = value.denominator
    for prime in (2, 5):
        while denominator % prime == 0:
            denominator //= prime
    if denominator != 1:
        return f"{value.numerator}/{value.denominator}"
    text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def normalize_number(text: str) -> str | None:
    value = parse_number(text)
    return None if value is None else format_number(value)


def last_boxed(output: str) -> str | None:
    """The content of the last ``\\boxed{...}`` with balanced braces, or None when there is none; a content
    longer than ``MAX_BOXED_CHARS`` is no answer. Linear: the braces are matched once (``brace_pairs``)."""
    starts = [match.end() for match in _BOX_START.finditer(output)]
    if not starts:
        return None
    pairs = brace_pairs(output, starts[0] - 1)
    for start in reversed(starts):
        end = pairs.get(start - 1)
        if end is not None:
            return output[start:end] if end - start <= MAX_BOXED_CHARS else ""
    return None


def boxed_number(content: str) -> str | None:
    """The one number of a boxed answer, as written (a fraction as "a/b"); None when it is not one number."""
    text = content.replace("{,}", ",")
    for _ in range(3):
        text = _TEXT_COMMAND.sub(r" \1 ", text)
    text = re.sub(r"\\(?:left|right|displaystyle)(?![A-Za-z])|\\[,;! ]", " ", text)
    text = text.split("=")[-1]  # "8 + 7 + 6 = 21": the value after the last "="
    text = re.sub(r"\\?\$|\\?%|€|£", " ", text)
    text = re.sub(r"(?<![\w)}\]])-\s+(?=[\d.])", "-", text)  # "-$2.50" is -2.50
    text = _MIXED.sub(lambda m: m.group(1) + format_number(
        int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4))) if int(m.group(4)) else Fraction(0)), text)
    text = _FRACTION.sub(r"\1/\2", text)
    text = _SPACED_THOUSANDS.sub(lambda m: m.group(1) + m.group(2).replace(" ", ","), " ".join(text.split()))
    numbers = list(_NUMBER.finditer(text))
    if len(numbers) != 1:
        return None
    number = numbers[0]
    if _EXPRESSION.search(text[:number.start()] + "#" + text[number.end():]):
        return None
    return number.group().strip()


def extract_answer_text(output: str) -> str | None:
    """The final answer's number as the model wrote it ("1,000.00"), or None when there is no number."""
    matches = _HASHES.findall(output)
    if matches:
        return matches[-1].strip()
    boxed = last_boxed(output)
    if boxed is not None:
        return boxed_number(boxed)
    matches = _ANSWER_IS.findall(output)
    if matches:
        return matches[-1].strip()
    numbers = _NUMBER.findall(output)
    return numbers[-1].strip() if numbers else None


def extract_answer(output: str) -> str | None:
    """The normalised final answer of a GSM8K-style output, or None when there is no number."""
    text = extract_answer_text(output)
    return None if text is None else normalize_number(text)


def gold_answer(answer_field: str) -> str | None:
    """The ``#### N`` line of a GSM8K ``answer`` field, normalised; None when it is missing."""
    matches = _HASHES.findall(answer_field)
    return normalize_number(matches[-1]) if matches else None


@functools.lru_cache(maxsize=1 << 16)  # the pools, the draws and the checks ask for the same texts again and again
def _numeric_key(answer: str) -> Fraction | None:
    return parse_number(answer.strip().lstrip("$").rstrip("%"))


class NumericEquivalence:
    """Exact numeric equality after normalisation; anything that is not a number is invalid."""

    def key(self, answer: str) -> Fraction | None:
        return _numeric_key(answer)

    def equal(self, a: str, b: str) -> bool:
        """Equal keys. Deliberately not named ``same``: keys alone decide, no pairwise pass is needed."""
        key = _numeric_key(a)
        return key is not None and key == _numeric_key(b)

    def spell(self, answer: str) -> str:
        """The canonical text of a valid answer (what the options show)."""
        return format_number(self.key(answer))


# ---- the paper's ablation: random numbers instead of models' answers -------------------------------


def offset_range(value: Fraction) -> tuple[int, int]:
    """The integer offsets d in [low, high], d != 0, that ``--distractors random`` draws from:
    ``w = max(10, ceil(|gold| / 2))`` either side, and a non-negative gold keeps ``gold + d >= 0`` (GSM8K
    answers are counts and amounts)."""
    width = max(10, math.ceil(abs(value) / 2))
    low = -width if value < 0 else max(-width, -math.floor(value))
    return low, width


def is_random_offset(value: Fraction, offset: Fraction) -> bool:
    low, high = offset_range(value)
    return offset.denominator == 1 and offset != 0 and low <= offset <= high


def random_distractors(gold: str, count: int, rng: np.random.Generator, avoid: Sequence[Fraction] = ()) -> list[str]:
    """``count`` distinct numbers ``gold + d``, d a non-zero integer of :func:`offset_range`, none of them in
    ``avoid`` (the gold in another unit). The gold is made exchangeable with its distractors: ``count + 1``
    distinct points are drawn uniformly from a window of ``w + 1`` integers, one of them (uniformly) is the gold,
    and the others' distances to it are the offsets; a draw that leaves the interval or hits ``avoid`` is drawn
    again. So the gold's rank among the options is uniform and no rule on the values alone ("closest to the
    mean", "the middle one") finds it, except where the interval forbids (a gold of 0 is the smallest). A gold
    smaller than ``w`` has fewer integers below it than above: its window shrinks to ``gold + 1`` integers (at
    least ``count + 1``), so that no draw is rejected for leaving the interval; rejecting them made the gold the
    smallest option in 28% of a full build's items and the largest in 22%. Drawing
    offsets from the whole interval at once left the gold in the middle of its options (closest to their mean
    in 48% of the items). A fractional gold keeps its fractional part. O(count) per draw."""
    value = parse_number(gold)
    if value is None:
        raise ValueError(f"gold {gold!r} is not a number")
    low, high = offset_range(value)
    banned = {v - value for v in avoid if (v - value).denominator == 1 and low <= v - value <= high}
    if high - low - len(banned) < count:  # the range holds high - low + 1 integers, one of them 0
        raise ValueError(f"only {high - low - len(banned)} random numbers around {gold}")
    window = high if -low >= high else max(-low, count + len(banned))
    for _ in range(MAX_DRAWS):
        points = _distinct_integers(0, window, count + 1, rng)
        key = points[int(rng.integers(count + 1))]
        offsets = [point - key for point in points if point != key]
        if all(low <= offset and offset not in banned for offset in offsets):
            return [format_number(value + offset) for offset in offsets]
    raise ValueError(f"no {count} random numbers around {gold} in {MAX_DRAWS} draws")


# A gold of 0 is accepted in 1 of count + 1 draws (it must be the smallest option); nothing needs more.
MAX_DRAWS = 10_000


def _distinct_integers(low: int, high: int, count: int, rng: np.random.Generator) -> list[int]:
    """``count`` distinct integers drawn uniformly from [low, high], sorted, by rejection (the range may be huge)."""
    chosen: set[int] = set()
    while len(chosen) < count:
        chosen.add(int(rng.integers(low, high + 1)))
    return sorted(chosen)


def other_unit_values(gold: Fraction, conversions: Sequence[tuple[str, int]]) -> list[Fraction]:
    """The gold in every other unit of ``conversions``: times and divided by each factor."""
    return [v for _, factor in conversions for v in (gold * factor, gold / factor)]


def random_interval(gold: str) -> tuple[str, str]:
    """The closed interval the random distractors of ``gold`` come from (for records and the card)."""
    value = parse_number(gold)
    low, high = offset_range(value)
    return format_number(value + low), format_number(value + high)


# ---- correct answers in another unit ---------------------------------------------------------------

UNIT_FACTORS = (100, 1000, 60)  # cents and percent, thousands (grams, metres), minutes and seconds
# Units a question may name (a word, its plural, its usual abbreviation), and the conversions between them:
# (larger unit, smaller unit, how many smaller make one larger).
UNIT_NAMES = {
    "years": r"years?|yearly|annual(?:ly)?", "months": r"months?|monthly", "weeks": r"weeks?|weekly",
    "days": r"days?|daily", "hours": r"hours?|hourly|hrs?", "minutes": r"minutes?|mins?",
    "seconds": r"seconds|secs?", "dozens": r"dozens?", "pounds": r"pounds?|lbs?", "ounces": r"ounces?|oz",
    "yards": r"yards?", "feet": r"feet|foot|ft", "inches": r"inch(?:es)?", "gallons": r"gallons?",
    "quarts": r"quarts?", "pints": r"pints?", "cups": r"cups?",
}
CONVERSIONS = (
    ("years", "months", 12), ("years", "weeks", 52), ("years", "days", 365), ("weeks", "days", 7),
    ("weeks", "hours", 168), ("days", "hours", 24), ("days", "minutes", 1440), ("hours", "seconds", 3600),
    ("dozens", "items", 12), ("pounds", "ounces", 16), ("yards", "feet", 3), ("yards", "inches", 36),
    ("feet", "inches", 12), ("gallons", "quarts", 4), ("gallons", "pints", 8), ("gallons", "cups", 16),
    ("quarts", "cups", 4),
)  # not quarts/pints/cups by 2: twice the key is a common wrong answer of its own
_UNIT_PATTERNS = {unit: re.compile(rf"\b(?:{words})\b", re.IGNORECASE) for unit, words in UNIT_NAMES.items()}


_SINGULAR = {"feet": "foot", "inches": "inch", "dozens": "dozen"}


def unit_label(larger: str, smaller: str, factor: int) -> str:
    return f"{factor} ({smaller} per {_SINGULAR.get(larger, larger.removesuffix('s'))})"


@functools.lru_cache(maxsize=4096)  # asked per candidate and per released record: 17 searches each time
def question_conversions(question: str) -> tuple[tuple[str, int], ...]:
    """(label, factor) of every conversion one of whose units the question names: "how many weeks" makes 7
    days per week a second reading of the answer, whether or not the question says "days"."""
    named = {unit for unit, pattern in _UNIT_PATTERNS.items() if pattern.search(question)}
    return tuple((unit_label(larger, smaller, factor), factor) for larger, smaller, factor in CONVERSIONS
                 if larger in named or smaller in named)


def unit_conversions(question: str) -> list[tuple[str, int]]:
    """Every conversion that applies to a question: the general factors, then the ones its units name."""
    return [(str(factor), factor) for factor in UNIT_FACTORS] + list(question_conversions(question))


def unit_multiple(gold: Fraction, option: Fraction, conversions: Sequence[tuple[str, int]] | None = None) -> str | None:
    """The conversion's label when ``option`` is the gold times or divided by its factor: the same answer in
    another unit (100 cents for 1 dollar, 0.7 for 70 %, 21 days for 3 weeks), which a model could defend."""
    for label, factor in conversions if conversions is not None else [(str(f), f) for f in UNIT_FACTORS]:
        if gold != 0 and (option == gold * factor or option * factor == gold):
            return label
    return None


def shown_decimals(text: str) -> int:
    """Digits after the decimal point of a number as shown ("15.588": 3; "16", "3/4": 0)."""
    return len(text.split(".")[1]) if "." in text and "/" not in text else 0


def is_rounded_gold(gold: Fraction, option: str) -> bool:
    """Whether a decimal option is the gold rounded to the option's own precision (see
    :func:`~builders.from_predictions.pools.rounds_to`)."""
    value = parse_number(option)
    return value is not None and rounds_to(gold, value, shown_decimals(option))
