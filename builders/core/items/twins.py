"""When two options, or two questions, are the same: the builders' one normaliser of option and question text.

Two options are twins when they say the same thing in another spelling: "128.1" and "128.10", "$6,049 " and
"$6049", "−14" and "-14", a composed "é" and an "e" with a combining accent, a word with a zero-width space in it.
Beside "None of the above" such a pair is two keys, and among an item's options it is a duplicate. Case still
matters ("Bb" and "BB" are alleles), and so do words ("1.5 m" and "1.5 cm"). The validator checks the builders'
output with a normaliser of its own (:func:`builders.core.validation.validate.same_option`).

Two questions are the same question when they are equal but for case, whitespace and punctuation
(:func:`question_key`): the source's duplicates (:mod:`builders.core.sources.duplicates`).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# format characters that show nothing: zero-width space / joiners, word joiner, byte-order mark, soft hyphen
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)
_LOOK_ALIKES = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\u00a0": " ", "\u202f": " "})
# a number, with thousands separators ("6,049", "1,234,567.50") or a decimal part ("128.10"), not preceded by a digit,
# a point or a comma. Written to open with its first digit, the lookbehind after it: a pattern that opens with a digit
# is searched for at the digits only, one that opens with a lookbehind at every character (7 times slower on MMLU)
_NUMBER = re.compile(r"\d(?<![\d.,]\d)(?:\d{0,2}(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d*\.\d+(?![\d.]))")


def _canonical_number(match: re.Match) -> str:
    number = match.group().replace(",", "")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return number


@lru_cache(maxsize=1 << 18)
def option_key(text: str) -> str:
    """What an option says, spelling aside: NFC, no invisible characters, one kind of minus and space, whitespace
    collapsed, numbers without thousands separators and trailing decimal zeros. Equal keys: the same option. Kept
    once per distinct text: the loader and the builders read the same options."""
    if not text.isascii():  # ASCII is NFC already, and holds no invisible character, minus or space to replace
        text = unicodedata.normalize("NFC", text).translate(_INVISIBLE).translate(_LOOK_ALIKES)
    text = " ".join(text.split())
    # a number the pattern rewrites has a thousands comma or a decimal point
    return _NUMBER.sub(_canonical_number, text) if "," in text or "." in text else text


def duplicate_option(choices: list[str] | tuple[str, ...]) -> int | None:
    """The index of the first option that is a twin of an earlier one (:func:`option_key`), or None."""
    seen: set[str] = set()
    for index, choice in enumerate(choices):
        key = option_key(choice)
        if key in seen:
            return index
        seen.add(key)
    return None


_PUNCTUATION = re.compile(r"[^\w\s]|_")


def question_key(text: str) -> str:
    """A question's text for finding the same question twice: :func:`option_key`, case-folded, punctuation out."""
    return " ".join(_PUNCTUATION.sub(" ", option_key(text).casefold()).split())
