"""The validator's own reading of when two options are the same option: a second normaliser, apart from the
builders' (builders.core.items.twins)."""

from __future__ import annotations

import re
from functools import lru_cache

# Apart from builders.core.items.twins: the option is decomposed (NFD), stripped of every format character (Unicode
# category Cf), and each number in it is read as a decimal value; the rest compared word by word.

_NUMBER_TEXT = re.compile(r"\d[\d,]*(?:\.\d+)?")
_DASHES = {"\u2212", "\u2012", "\u2013"}


@lru_cache(maxsize=1 << 18)
def option_spelling(option: str) -> str:
    """The option as the validator compares options: equal spellings are the same option ("128.1", "128.10").
    A pure reading of one text, kept once per distinct text: a build reads each option in every config."""
    import unicodedata
    from decimal import Decimal, InvalidOperation

    decomposed = unicodedata.normalize("NFD", option)
    kept = "".join("-" if ch in _DASHES else " " if unicodedata.category(ch) == "Zs" else ch
                   for ch in decomposed if unicodedata.category(ch) != "Cf" and ch != "\u00ad")

    def value(match: re.Match) -> str:
        digits = match.group()
        if "," in digits and not re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", digits):
            return digits  # "1,2,3": a list, not a number
        try:
            number = Decimal(digits.replace(",", ""))
        except InvalidOperation:
            return digits
        return format(number.normalize(), "f") if "." in digits else digits.replace(",", "")

    return " ".join(_NUMBER_TEXT.sub(value, kept).split())
