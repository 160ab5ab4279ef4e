"""What the choices-only adversary (:mod:`.adversary`) sees of an item: each option described relative to the other
options of its item, one row of :data:`FEATURES` per option. Each option's own reading (its words, number and
typesetting) is a pure function of its text, read once per distinct text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

MAX_MAGNITUDE = 1e100  # a larger number (a 400-digit Python int is inf as a float) is not read as one: the
# distances and means of such values overflow to inf and NaN
POSITIONS = 12  # one-hot positions A..L; later positions share the last column

# ---- option features: each describes an option relative to the other options of its item --------------------

_WORD = re.compile(r"\w+")
_LATEX = re.compile(r"\\[A-Za-z]+")
_UNIT = re.compile(r"\d\s*(?:[a-zA-Z]{1,6}\b|%|°)|\\text|\\mbox|\\circ|\\%|\$")
_PUNCTUATION = re.compile(r"[.,;:!?()\[\]\"']")
_NUMBER = re.compile(r"[-−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
_FRACTION = re.compile(r"(-?)\\[dt]?frac\{?(-?\d+(?:\.\d+)?)\}?\{?(-?\d+(?:\.\d+)?)\}?")
_RATIO = re.compile(r"(-?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")
_KEYWORDS = ("both", "none", "all", "neither", "not")
_FORMS: dict[str, Callable[[str], bool]] = {
    "space": lambda c: " " in c.strip(),
    "latex": lambda c: bool(_LATEX.search(c)),
    "equals": lambda c: "=" in c,
    "unit": lambda c: bool(_UNIT.search(c)),
    "capital": lambda c: c.strip()[:1].isupper(),
    "final_stop": lambda c: c.rstrip().endswith((".", "!", "?")),
    "comma": lambda c: "," in c,
}
_FORM_WORDS = {"space": "a space", "latex": "a LaTeX command", "equals": 'an "="', "unit": "a unit or symbol",
               "capital": "a capital first letter", "final_stop": "a final full stop", "comma": "a comma"}

# feature name -> (what a positive weight favours, what a negative weight favours), in words for the card
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "length": ("longer option", "shorter option"),
    "length_rank": ("higher length rank", "lower length rank"),
    "longest": ("the longest option", "not the longest option"),
    "shortest": ("the shortest option", "not the shortest option"),
    "word_count": ("more words", "fewer words"),
    "numeric_rank": ("larger number", "smaller number"),
    "mean_distance": ("the number farther from the options' mean", "the number nearer the options' mean"),
    "closest_to_mean": ("the number nearest the options' mean", "not the number nearest the options' mean"),
    "farthest_from_mean": ("the number farthest from the options' mean", "not the number farthest from the mean"),
    "median_distance": ("the number farther from the options' median", "the number nearer the options' median"),
    "closest_to_median": ("the number nearest the options' median", "not the number nearest the median"),
    "extreme_number": ("the smallest or largest number", "a number between the others"),
    "integer": ("an integer among non-integers", "a non-integer among integers"),
    "digits": ("more digits", "fewer digits"),
    "punctuation": ("more punctuation", "less punctuation"),
    "overlap": ("shares more words with the others", "shares fewer words with the others"),
    "centroid": ("the option sharing most words with the others", "not the option sharing most words"),
    "odd_one_out": ("the option sharing fewest words with the others", "not the odd one out in words"),
    "names_others": ("an option naming other options", "not an option naming others"),
    "named_by_other": ("an option another option names", "an option no other option names"),
    "first_named": ("the option another option names first", "not the first-named option"),
    "named_by_next": ("the option just before the option that names it", "not just before its naming option"),
    "names_previous": ("an option naming the option just before it", "not naming the option before it"),
    "last": ("the last option", "not the last option"),
    "relative_position": ("a later position", "an earlier position"),
    **{f"position_{i}": (f"position {chr(65 + i)}", f"not position {chr(65 + i)}") for i in range(POSITIONS)},
    **{f"word_{w}": (f'an option with "{w}"', f'an option without "{w}"') for w in _KEYWORDS},
    **{f"{f}_alone": (f"the only option with {w}", f"not the only option with {w}") for f, w in _FORM_WORDS.items()},
    **{f"{f}_alone_without": (f"the only option without {w}", f"not the only option without {w}")
       for f, w in _FORM_WORDS.items()},
}
FEATURES = tuple(DESCRIPTIONS)
_COLUMN = {name: i for i, name in enumerate(FEATURES)}
_KEYWORD_COLUMNS = [_COLUMN[f"word_{word}"] for word in _KEYWORDS]


def number(option: str) -> float | None:
    """The value of an option that is one number (units, $, % and thousands commas aside), else None."""
    text = option.replace("\\$", "").replace("\\%", "").replace("$", "").replace("%", "").replace("\\!", "")
    text = text.replace("−", "-").strip()
    fraction = _FRACTION.fullmatch(text)
    if fraction:
        sign, top, bottom = fraction.groups()
        return (-1 if sign else 1) * float(top) / float(bottom) if float(bottom) else None
    ratio = _RATIO.fullmatch(text)
    if ratio:
        return float(ratio.group(1)) / float(ratio.group(2)) if float(ratio.group(2)) else None
    found = _NUMBER.findall(text)
    if len(found) != 1:
        return None
    try:
        value = float(found[0].replace(",", "").replace("−", "-"))
    except ValueError:
        return None
    return value if abs(value) <= MAX_MAGNITUDE else None


def _ranks(values: Sequence[float]) -> list[float]:
    """Average ranks (ties share theirs) scaled to -0.5..0.5. Plain Python: items have a handful of options,
    where numpy's per-call cost dominates."""
    n = len(values)
    if n < 2:
        return [0.0] * n
    return [(sum(v > w for w in values) + (sum(v == w for w in values) - 1) / 2) / (n - 1) - 0.5 for v in values]


def _centred(values: Sequence[float], scale: float = 1.0) -> list[float]:
    mean = sum(values) / len(values)
    return [(v - mean) / scale for v in values]


def _is(values: Sequence[float], target: float) -> list[bool]:
    return [v == target for v in values]


def _names(container: str, named: str) -> int:
    """Where ``container`` names ``named`` as a whole phrase, or -1."""
    if not named or len(named) >= len(container) or named not in container:
        return -1
    found = re.search(r"(?<!\w)" + re.escape(named) + r"(?!\w)", container)
    return found.start() if found else -1


@dataclass(frozen=True)
class _Reading:
    """What the features read in one option's text alone, once per distinct text (a build's configs share most
    of their options)."""

    length: float
    words: frozenset[str]
    word_count: float
    punctuation: float
    number: float | None
    digits: float
    forms: tuple[bool, ...]  # the marks of _FORMS, in order
    text: str  # as the reference features compare options: spaces collapsed, no final stop, lower case
    keywords: tuple[bool, ...]  # whether its words hold each of _KEYWORDS, in order


@lru_cache(maxsize=1 << 18)
def _reading(option: str) -> _Reading:
    words = frozenset(_WORD.findall(option.lower()))
    return _Reading(float(len(option)), words, float(len(_WORD.findall(option))),
                    float(len(_PUNCTUATION.findall(option))), number(option), float(sum(map(str.isdigit, option))),
                    tuple(has(option) for has in _FORMS.values()),
                    re.sub(r"[\s.]+$", "", " ".join(option.split())).lower(), tuple(word in words for word in _KEYWORDS))


def option_features(choices: Sequence[str]) -> np.ndarray:
    """One row per option, the columns of :data:`FEATURES`."""
    n = len(choices)
    readings = [_reading(c) for c in choices]
    columns: dict[str, list] = {}
    lengths = [r.length for r in readings]
    columns["length"] = _centred(lengths, max(sum(lengths) / n, 1.0))
    columns["length_rank"] = _ranks(lengths)
    if min(lengths) < max(lengths):
        columns["longest"], columns["shortest"] = _is(lengths, max(lengths)), _is(lengths, min(lengths))
    words = [r.words for r in readings]
    counts = [r.word_count for r in readings]
    columns["word_count"] = _centred(counts, max(sum(counts) / n, 1.0))
    columns["punctuation"] = _centred([r.punctuation for r in readings])
    _numeric_features(choices, columns, readings)
    _form_features(readings, columns)
    _overlap_features(words, columns)
    _reference_features([r.text for r in readings], columns)
    out = _positions(n).copy()
    out[:, _KEYWORD_COLUMNS] = [r.keywords for r in readings]
    out[:, [_COLUMN[name] for name in columns]] = np.array(list(columns.values()), dtype=float).T
    return out


@lru_cache(maxsize=None)
def _positions(n: int) -> np.ndarray:
    """The features of ``n`` options that only their places give (the position, the last one, the relative
    position), every other column zero: one block per option count, copied for each item."""
    out = np.zeros((n, len(FEATURES)))
    out[:, _COLUMN["last"]] = [i == n - 1 for i in range(n)]
    out[:, _COLUMN["relative_position"]] = [i / max(n - 1, 1) - 0.5 for i in range(n)]
    out[np.arange(n), [_COLUMN[f"position_{min(i, POSITIONS - 1)}"] for i in range(n)]] = 1
    out.flags.writeable = False
    return out


def _numeric_features(choices: Sequence[str], columns: dict[str, list], readings: Sequence[_Reading]) -> None:
    parsed = [r.number for r in readings]
    values = [v for v in parsed if v is not None]
    if len(values) != len(parsed) or len(set(values)) < 2:
        return
    columns["numeric_rank"] = _ranks(values)
    columns["extreme_number"] = [v in (min(values), max(values)) for v in values]
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    for name, centre in (("mean", sum(values) / len(values)), ("median", median)):
        distance = [abs(v - centre) for v in values]
        if max(distance) > 0:
            columns[f"{name}_distance"] = _centred([d / max(distance) for d in distance])
        if min(distance) < max(distance):
            columns[f"closest_to_{name}"] = _is(distance, min(distance))
            if name == "mean":
                columns["farthest_from_mean"] = _is(distance, max(distance))
    columns["integer"] = _centred([float(float(v).is_integer() and "." not in c) for v, c in zip(values, choices, strict=True)])
    columns["digits"] = _centred([r.digits for r in readings])


def _form_features(readings: Sequence[_Reading], columns: dict[str, list]) -> None:
    n = len(readings)
    for form, name in enumerate(_FORMS):
        marks = [r.forms[form] for r in readings]
        if sum(marks) == 1:
            columns[f"{name}_alone"] = marks
        if n >= 3 and sum(marks) == n - 1:
            columns[f"{name}_alone_without"] = [not m for m in marks]


def _overlap_features(words: Sequence[frozenset[str]], columns: dict[str, list]) -> None:
    n = len(words)
    total = [0.0] * n
    for i in range(n):
        for j in range(i + 1, n):
            common = len(words[i] & words[j])
            union = len(words[i]) + len(words[j]) - common
            shared = common / union if union else 0.0
            total[i] += shared
            total[j] += shared
    overlap = [t / (n - 1) for t in total]
    columns["overlap"] = _centred(overlap)
    if min(overlap) < max(overlap):
        columns["centroid"], columns["odd_one_out"] = _is(overlap, max(overlap)), _is(overlap, min(overlap))


def _reference_features(texts: Sequence[str], columns: dict[str, list]) -> None:
    """Options that name other options ("Both X and Y are correct", "X or Y"): who names whom, and in what
    order and place. ``texts``: the options as :class:`_Reading` compares them."""
    n = len(texts)
    # an option names others only where two other options sit inside its text, which most items have nowhere: the
    # phrase search (a regular expression per pair) is skipped there
    if sum(1 for i in range(n) for j in range(n) if i != j and texts[j] and texts[j] in texts[i]) < 2:
        return
    where = [[_names(texts[i], texts[j]) if i != j else -1 for j in range(n)] for i in range(n)]
    names_others = [sum(p >= 0 for p in row) >= 2 for row in where]
    if not any(names_others):
        return
    columns["names_others"] = names_others
    columns["named_by_other"] = [any(where[i][j] >= 0 for i in range(n) if names_others[i]) for j in range(n)]
    first = [False] * n
    for i in range(n):
        if names_others[i]:
            first[min((p, j) for j, p in enumerate(where[i]) if p >= 0)[1]] = True
    columns["first_named"] = first
    columns["named_by_next"] = [j + 1 < n and names_others[j + 1] and where[j + 1][j] >= 0 for j in range(n)]
    columns["names_previous"] = [i > 0 and names_others[i] and where[i][i - 1] >= 0 for i in range(n)]
