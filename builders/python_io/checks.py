"""PythonIO's invariants, checked on the release as built: the kernel's (one option equivalent to the gold, and it
is the answer; no two options equivalent; every distractor from its pool), judged with the builder's value
equality, then again with the standard library's reading of the options, which shares no code with the builder's,
and no distractor that is the gold rounded to the decimals it shows."""

from __future__ import annotations

import ast
import decimal
import math
from collections.abc import Iterable, Mapping
from typing import Any

from builders.core.build.result import Build, Check
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import Pool

from .values import PythonValueEquivalence


def checks(golds: Mapping[str, str], pools: Mapping[str, Pool], max_chars: int) -> list[Check]:
    """``golds``: the verified gold of every item, by id; ``pools``: the items' pools."""
    return [*mc.make_checks(golds, PythonValueEquivalence(max_chars).same, pools),
            mc.second_reading_check("one_gold_literal_eval", "with the standard library's ast.literal_eval and ==, "
                                    "apart from the builder's value keys", golds, literally_equal),
            Check("no_rounded_gold", "no distractor is the gold rounded to the decimals it shows (re-read with "
                  "ast.literal_eval and decimal, apart from the builder's rule)",
                  lambda build: rounded_gold_violations(build, golds))]


def rounded_gold_violations(build: Build, golds: Mapping[str, str]) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            gold = _plain_reading(golds[record.id])
            for index, choice in enumerate(record.choices):
                if index != record.answer and _rounds_gold(gold, _plain_reading(choice), choice.strip()):
                    yield f"{config}/{split} {record.id}: option {index} ({choice}) is the gold rounded"


def _rounds_gold(gold: tuple[str, Any], option: tuple[str, Any], text: str) -> bool:
    """A float option written with k decimals equals the number gold rounded half-up to k decimals."""
    (gold_kind, exact), (kind, shown) = gold, option
    if gold_kind != "value" or kind != "value" or not isinstance(shown, float) or isinstance(exact, bool):
        return False
    if not isinstance(exact, (int, float)) or exact == shown or not all(map(math.isfinite, (exact, shown))):
        return False
    if "e" in text.lower():
        return False
    written = decimal.Decimal(text)
    if not isinstance(written.as_tuple().exponent, int) or written.as_tuple().exponent >= 0:
        return False
    return decimal.Decimal(repr(exact)).quantize(written, rounding=decimal.ROUND_HALF_UP) == written


def literally_equal(a: str, b: str) -> bool:
    """Two options as the standard library reads them: literal values compare with Python's ==; text that is
    no literal compares as text. Only data is parsed (never evaluated), so outputs stay untrusted text."""
    return _plain_reading(a) == _plain_reading(b)


def _plain_reading(text: str) -> tuple[str, Any]:
    try:
        return "value", ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "text", " ".join(text.split())

