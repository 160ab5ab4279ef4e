"""Options whose meaning depends on the other options or on their positions.

"None of the above", "All of the above", "Both A and B" and options that name other options by
letter stop being coherent when options are removed, added or reordered. WiCkeD copies such items
unchanged, and the perturbation builder keeps them out of order, position and symbol changes. This is
the one detector both use.
"""

from __future__ import annotations

import re
from typing import Sequence

_ABOVE = r"(?:above|below|these|those|others|other\s+(?:options|choices|answers)|options|choices|answers|previous|preceding|following|foregoing)"
# Anchored at the start of the option: "all of these" inside a sentence is content, not a reference.
_NOTA = re.compile(rf"^\W*(?:none|neither)\s+(?:of\s+)?(?:the\s+)?(?:{_ABOVE}|them)\b", re.I)
_AOTA = re.compile(rf"^\W*(?:all|both|each|any)\s+(?:of\s+)?(?:the\s+)?(?:{_ABOVE}|them)\b", re.I)
_LETTER = r"\(?[A-J]\)?"
_LETTER_COMBINATION = re.compile(
    # "A and B", "Both (A) and (C)", "A, B and D", "Neither A nor B", "A & B only"
    # letters stay case-sensitive ("a and b" is prose), the words around them are not
    rf"^\s*(?:(?i:both|either|neither|only)\s+)?{_LETTER}(?:\s*(?i:,|&|and|or|nor)\s*{_LETTER})+"
    r"(?:\s+(?i:only|both|are\s+(?:correct|true|right)))?\s*\.?\s*$"
    # inside a sentence only with a verdict, so that "when both G and H are false" (variables) is content
    rf"|\b(?i:both|either|neither)\s+{_LETTER}\s+(?i:and|or|nor)\s+{_LETTER}\s+(?i:are|is)\s+(?i:correct|right|true)\b"
)
_LETTER_REFERENCE = re.compile(rf"\b(?i:options?|choices?|answers?)\s+{_LETTER}(?![\w'])|^\s*\(?[A-J]\)\s*$")

NOTA_TEXT = "None of the above"


def position_dependent_reason(choices: Sequence[str]) -> str | None:
    """Why this item's options depend on each other or on their positions, or None if they don't."""
    for choice in choices:
        if _NOTA.search(choice):
            return "has_none_of_the_above"
    for choice in choices:
        if _AOTA.search(choice):
            return "has_all_of_the_above"
    for choice in choices:
        if _LETTER_COMBINATION.search(choice):
            return "has_option_combination"
    for choice in choices:
        if _LETTER_REFERENCE.search(choice):
            return "has_letter_reference"
    return None


def is_nota(choice: str) -> bool:
    return bool(_NOTA.search(choice))
