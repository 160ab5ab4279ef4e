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

import math
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction

import numpy as np

NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s*/\s*\d+(?![\d,]|\.\d))?|-?\.\d+"
_NUMBER = re.compile(NUMBER)
_HASHES = re.compile(r"####\s*\$?\s*(" + NUMBER + ")")
_BOX_START = re.compile(r"\\boxed\s*\{")
_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textrm|mathrm|mbox)\s*\{([^{}]*)\}")
_MIXED = re.compile(r"(?<![\d.])(-?)(\d+)\s*\\[dt]?frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}")
_FRACTION = re.compile(r"\\[dt]?frac\s*\{\s*(-?[\d.,]+)\s*\}\s*\{\s*([\d.,]+)\s*\}")
_SPACED_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3})((?: \d{3})+)(?![\d.,])")
# Next to the one number of a boxed answer, these make it an expression, not a number: an operator, a
# variable ("3x", "T - 14"; g, m, l, h and s are units), a time ("2:00").
_EXPRESSION = re.compile(r"[+*/^=<>:]|\\(?:times|div|cdot|pm)(?![A-Za-z])|#\s*(?![ghlms](?![A-Za-z]))[A-Za-z](?![A-Za-z])"
                         r"|(?<![A-Za-z])(?![ghlms](?![A-Za-z]))[A-Za-z]\s*#|[A-Za-z0-9)}]\s*-\s*#|#\s*-")
_ANSWER_IS = re.compile(r"answer\s+is\s*:?\s*\$?\\?\$?\s*(" + NUMBER + ")", re.IGNORECASE)
# Enough for GSM8K; longer digit strings are copying accidents, not answers.
MAX_DIGITS = 30


def parse_number(text: str) -> Fraction | None:
    """The exact value of one number as written ("1,234.50", "-3", "3/4"), or None."""
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
    return value


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
    """The content of the last ``\\boxed{...}`` with balanced braces, or None when there is none."""
    for match in reversed(list(_BOX_START.finditer(output))):
        depth = 1
        for index in range(match.end(), len(output)):
            if output[index] == "{":
                depth += 1
            elif output[index] == "}":
                depth -= 1
                if depth == 0:
                    return output[match.end():index]
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


class NumericEquivalence:
    """Exact numeric equality after normalisation; anything that is not a number is invalid."""

    def key(self, answer: str) -> Fraction | None:
        return parse_number(answer.strip().lstrip("$").rstrip("%"))

    def equal(self, a: str, b: str) -> bool:
        """Equal keys. Deliberately not named ``same``: keys alone decide, no pairwise pass is needed."""
        return self.key(a) is not None and self.key(a) == self.key(b)

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


def random_distractors(gold: str, count: int, rng: np.random.Generator) -> list[str]:
    """``count`` distinct numbers ``gold + d``, d drawn uniformly without replacement from :func:`offset_range`
    (never 0); a fractional gold keeps its fractional part. O(count): offsets are drawn, not listed."""
    value = parse_number(gold)
    if value is None:
        raise ValueError(f"gold {gold!r} is not a number")
    low, high = offset_range(value)
    if high - low < count:  # the range holds high - low + 1 integers, one of them 0
        raise ValueError(f"only {high - low} random numbers around {gold}")
    chosen: set[int] = set()
    while len(chosen) < count:
        offset = int(rng.integers(low, high + 1))
        if offset != 0:
            chosen.add(offset)
    return [format_number(value + offset) for offset in sorted(chosen)]


def random_interval(gold: str) -> tuple[str, str]:
    """The closed interval the random distractors of ``gold`` come from (for records and the card)."""
    value = parse_number(gold)
    low, high = offset_range(value)
    return format_number(value + low), format_number(value + high)


# ---- correct answers in another unit ---------------------------------------------------------------

UNIT_FACTORS = (100, 1000, 60)  # cents and percent, thousands (grams, metres), minutes and seconds


def unit_multiple(gold: Fraction, option: Fraction) -> int | None:
    """The factor f when ``option`` is the gold times or divided by f: the same answer in another unit
    (100 cents for 1 dollar, 0.7 for 70 %), which a model could defend as correct."""
    for factor in UNIT_FACTORS:
        if gold != 0 and (option == gold * factor or option * factor == gold):
            return factor
    return None
