"""The validator's checks of what MATH-MC's options show, with plain regular expressions on the released text.

They share no code with the builder's normal form and kind rules (:mod:`builders.math_mc.forms`): each reads
the options of every released item as written and flags what lets a reader tell the key, or rule a distractor
out, without the problem:

* ``relation_only_in_some``: "=" or an approximation sign in a distractor but not in the key, or the other way;
* ``thousands_separator``: a digit, a comma (or ``{,}``, ``,\\!``) and exactly three digits, inside one number;
* ``words_or_variables``: a run of three or more letters outside LaTeX commands in the key but not in a
  distractor or the other way ("No Solution", "undefined" beside 3); beside a key without words, a letter the
  key lacks (the imaginary unit ``i`` aside) ("x" or "Q + 3P + 20" beside 5);
* ``arithmetic_left_undone``: a product, quotient, bracketed number, bracketed sum, factorial or binomial
  coefficient in a distractor whose key has none;
* ``decimal_beside_exact``: a number with a decimal point in a distractor whose key has none;
* ``number_of_values``: a list (a comma) beside a key that is one value, or one value beside a list;
* ``infinity_beside_finite``: infinity in a distractor and not in the key, or the other way;
* ``lowest_terms``: a numeric fraction in a distractor whose numerator and denominator share a factor;
* ``simplest_radicals``: a square root of a whole number that sympy writes otherwise (``\\sqrt{96}``, which it
  writes 4*sqrt(6)) or of a fraction, in a distractor whose key has none;
* ``letter_option``: an option that is only capital letters, as the release's own option labels ("C", "(B)");
* ``one_spacing``: a space that stands beside a symbol (other than a comma's before three digits) or between a
  command and a digit, outside ``\\text{}``: every option is spelled with MATH's compact spacing;
* ``braced_arguments``: an argument of ``\\frac`` or ``\\sqrt`` without braces ("\\frac34", "\\sqrt3"), MATH's
  habit and not the models'.
"""

from __future__ import annotations

import math
import re
from typing import Callable, Iterable

from builders.core.items.record import MCQRecord
from builders.core.build.result import Build, Check

_RELATION = re.compile(r"=|\\approx(?![A-Za-z])|≈|\\simeq(?![A-Za-z])")
_GROUPED_NUMBER = re.compile(r"[0-9](?:,|\{,\}|,\\!)[0-9]{3}(?![0-9])")
_LATEX_NAME = re.compile(r"\\operatorname\*?\{[^{}]*\}|\\(?:begin|end)\{[^{}]*\}|\\[A-Za-z]+")
_LONG_RUN = re.compile(r"[A-Za-z]{3,}")
_UNDONE = re.compile(r"\\(?:times|cdot|div|[dt]?binom|choose)(?![A-Za-z])|[*×·÷]"
                     r"|\(\s*[-+]?[0-9.]+(?:\s*[-+]\s*[0-9.]+)*\s*\)|[0-9)}]\s*!|\([^(),]*[A-Za-z0-9}]\s*[-+]\s*[^(),]*\)")
_LABELS = re.compile(r"\s*\(?[A-Z]\)?(?:\s*,\s*\(?[A-Z]\)?)*\s*")
# "\frac3", "\sqrt[3]2" (a first argument without braces) or "\frac{3}4" (a second one)
_BARE_ARGUMENT = re.compile(r"\\(?:[dt]?frac|sqrt)(?![A-Za-z])\s*(?:\[[^\]]*\]\s*)?(?=[^{\s\[])"
                            r"|\\[dt]?frac\s*\{(?:[^{}]|\{[^{}]*\})*\}\s*(?=[^{\s])")
_BAD_SPACE = re.compile(r"(?<=[^A-Za-z0-9,]) | (?=[^A-Za-z0-9])|, (?![0-9]{3}(?![0-9.]))|\\[A-Za-z]+ (?=[0-9])")


def _letters(option: str) -> str:
    return " ".join(re.findall(r"[A-Za-z]+", _LATEX_NAME.sub(" ", option)))


def _relation(key: str, option: str) -> str | None:
    if bool(_RELATION.search(key)) != bool(_RELATION.search(option)):
        return "carries a relation (=, \\approx) and the other does not"
    return None


def _thousands(key: str, option: str) -> str | None:
    return "writes a number with a thousands separator" if _GROUPED_NUMBER.search(option) else None


def _words_or_variables(key: str, option: str) -> str | None:
    key_letters, option_letters = _letters(key), _letters(option)
    if bool(_LONG_RUN.search(key_letters)) != bool(_LONG_RUN.search(option_letters)):
        return "holds words where the key holds none, or the other way"
    if not _LONG_RUN.search(key_letters):
        extra = set(option_letters.replace(" ", "")) - set(key_letters.replace(" ", "")) - {"i"}
        if extra:
            return f"holds letters the key lacks ({''.join(sorted(extra))})"
    return None


def _undone(key: str, option: str) -> str | None:
    if _UNDONE.search(option) and not _UNDONE.search(key):
        return "leaves arithmetic undone where the key is simplified"
    return None


def _decimal(key: str, option: str) -> str | None:
    point = re.compile(r"[0-9]\.[0-9]|(?:^|[^0-9])\.[0-9]")
    return "writes a decimal where the key is exact" if point.search(option) and not point.search(key) else None


def _values(key: str, option: str) -> str | None:
    def listed(text: str) -> bool:  # a comma that is not a thousands separator (``thousands_separator`` sees those)
        return "," in _GROUPED_NUMBER.sub("0", text)
    if listed(key) != listed(option):
        return "lists several values where the key is one, or the other way"
    return None


def _infinity(key: str, option: str) -> str | None:
    def infinite(text: str) -> bool:
        return "∞" in text or any(name == "infty" for name in re.findall(r"\\([A-Za-z]+)", text))
    return "holds infinity where the key does not, or the other way" if infinite(key) != infinite(option) else None


def _lowest_terms(key: str, option: str) -> str | None:
    from fractions import Fraction

    for top, bottom in re.findall(r"frac\s*\{\s*([0-9]+)\s*\}\s*\{\s*([0-9]+)\s*\}", option):
        if int(bottom) and Fraction(int(top), int(bottom)).denominator != int(bottom):
            return f"writes \\frac{{{top}}}{{{bottom}}}, not in lowest terms"
    return None


def _radical(key: str, option: str) -> str | None:
    found = _unsimplified_root(option)
    return f"writes {found}, not in simplest radical form" if found and not _unsimplified_root(key) else None


def _unsimplified_root(text: str) -> str | None:
    for argument in re.findall(r"\\sqrt\s*\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}", text):
        plain = argument.replace(" ", "")
        if "frac" in plain or "/" in plain:
            return f"\\sqrt{{{argument}}}"
        if plain.isdigit() and len(plain) <= 8 and not _simplest_root(int(plain)):
            return f"\\sqrt{{{argument}}}"
    return None


def _simplest_root(number: int) -> bool:
    """Whether the square root of ``number`` is in simplest radical form: it has no square factor to take out
    (4*sqrt(6) from sqrt(96)) and is not whole (0 and 1 are). Integer arithmetic, as sympy's sqrt decides it,
    without loading sympy in the validating process."""
    return number >= 2 and all(number % (factor * factor) for factor in range(2, math.isqrt(number) + 1))


def _label(key: str, option: str) -> str | None:
    return "is a bare option letter" if _LABELS.fullmatch(option) else None


def _spacing(key: str, option: str) -> str | None:
    if "\\text" in option:
        return None
    row_break_before_bracket = option.replace("\\\\ [", "")  # "\\ [": "\\[" would be a row-spacing argument
    return "is not in MATH's compact spacing" if _BAD_SPACE.search(row_break_before_bracket) else None


def _braces(key: str, option: str) -> str | None:
    return "gives \\frac or \\sqrt an argument without braces" if _BARE_ARGUMENT.search(option) else None


def _violations(rule: Callable[[str, str], str | None], distractors_only: bool) -> Callable[[Build], Iterable[str]]:
    def find(build: Build) -> Iterable[str]:
        for config, split, records in build.records():
            for record in records:
                yield from _item_violations(config, split, record, rule, distractors_only)
    return find


def _item_violations(config: str, split: str, record: MCQRecord, rule, distractors_only: bool) -> Iterable[str]:
    key = record.choices[record.answer]
    for index, option in enumerate(record.choices):
        if distractors_only and index == record.answer:
            continue
        found = rule(key, option)
        if found:
            yield f"{config}/{split} {record.id}: option {index} {option!r} {found} (key {key!r})"


def option_form_checks() -> list[Check]:
    return [
        Check("relation_only_in_some", "no option carries \"=\" or an approximation sign unless the key does, and "
              "the other way", _violations(_relation, distractors_only=True)),
        Check("thousands_separator", "no option writes a number with a thousands separator",
              _violations(_thousands, distractors_only=False)),
        Check("words_or_variables", "words stand only beside words, and no distractor has a letter the key "
              "lacks", _violations(_words_or_variables, distractors_only=True)),
        Check("arithmetic_left_undone", "no distractor leaves a product, quotient or bracketed number undone "
              "where the key has none", _violations(_undone, distractors_only=True)),
        Check("decimal_beside_exact", "no distractor writes a decimal where the key has none",
              _violations(_decimal, distractors_only=True)),
        Check("number_of_values", "a distractor lists several values only where the key does",
              _violations(_values, distractors_only=True)),
        Check("infinity_beside_finite", "infinity stands only beside infinity",
              _violations(_infinity, distractors_only=True)),
        Check("lowest_terms", "every numeric fraction of a distractor is in lowest terms",
              _violations(_lowest_terms, distractors_only=True)),
        Check("simplest_radicals", "every square root of a distractor is in simplest form where the key's are",
              _violations(_radical, distractors_only=True)),
        Check("letter_option", "no option is a bare letter, as the release's own option labels",
              _violations(_label, distractors_only=False)),
        Check("one_spacing", "every option is in MATH's compact spacing",
              _violations(_spacing, distractors_only=False)),
        Check("braced_arguments", "every argument of \\frac and \\sqrt is in braces",
              _violations(_braces, distractors_only=False)),
    ]
