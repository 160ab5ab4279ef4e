"""MATH answers as text: the last ``\\boxed{}``, and the one normal form every option is shown in.

Extraction takes the last ``\\boxed{...}`` or ``\\fbox{...}`` with balanced braces (``\\boxed 5`` too);
an output without one falls back to Minerva's "The final answer is $X$" line, the format of the
standard 4-shot Minerva prompt. A solution whose boxed answers differ is an ambiguous gold.

:func:`option_form` is the spelling shown for every option, the gold included (no ``\\text{}``, units,
degrees, percent or dollar signs, ``x =`` before a value); :func:`surface_key` folds case and spaces too:
equal keys are the same answer without asking anyone. :func:`kind_mismatch` says when a wrong answer is not an
answer of the gold's kind, so that a reader would rule it out unread. Equivalence beyond the surface key is
:mod:`builders.math_mc.equivalence`.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from builders.from_predictions.extract import MAX_BOXED_CHARS, brace_pairs

_BOX = re.compile(r"\\(?:boxed|fbox)\b")
_SPACES = re.compile(r"\s*+")
_TOKEN = re.compile(r"\s*+([^\s$]{1,%d})(?![^\s$])" % MAX_BOXED_CHARS)
_FINAL_ANSWER = re.compile(r"final answer is\s*\$((?:\\\$|[^$])+?)\$", re.IGNORECASE | re.DOTALL)  # "\$3.25" inside


# ---- extraction ------------------------------------------------------------------------------------


def boxed_contents(text: str) -> list[str]:
    """Every ``\\boxed{...}`` / ``\\fbox{...}`` content in order, braces balanced; unclosed ones skipped, and so
    are contents longer than :data:`~builders.from_predictions.extract.MAX_BOXED_CHARS`. Linear in the text's
    length: the braces are matched once for the whole text (``brace_pairs``)."""
    found: list[str] = []
    pairs: dict[int, int] | None = None
    for match in _BOX.finditer(text):
        brace = _SPACES.match(text, match.end()).end()
        if text.startswith("{", brace):
            pairs = brace_pairs(text, escapes=True) if pairs is None else pairs
            end = pairs.get(brace)
            if end is not None and end - brace <= MAX_BOXED_CHARS:
                found.append(text[brace + 1:end].strip())
        elif text.startswith(" ", match.end()):  # "\boxed 5": the argument is the next token
            token = _TOKEN.match(text, match.end())
            if token:
                found.append(token.group(1))
    return found


def _balanced(text: str) -> str | None:
    depth = 0
    for index, char in enumerate(text):
        if char == "{" and (index == 0 or text[index - 1] != "\\"):
            depth += 1
        elif char == "}" and text[index - 1] != "\\":
            depth -= 1
            if depth == 0:
                return text[1:index]
    return None


def extract_answer(output: str) -> str | None:
    """The last boxed answer, else Minerva's final-answer line; None when neither gives text."""
    boxed = [b for b in boxed_contents(output) if b]
    if boxed:
        return boxed[-1]
    finals = _FINAL_ANSWER.findall(output)
    if finals and finals[-1].strip():
        return finals[-1].strip()
    return None


# ---- spelling ----------------------------------------------------------------------------------------

_THIN_SPACES = re.compile(r"\\[,;:! ]")
_SPACING = re.compile(r"(?<!\\)\\[,;: ]")  # "\," but not the row break "\\" before a space
_LEFT_RIGHT = re.compile(r"\\(?:left|right)(?![A-Za-z])")
_DISPLAY = re.compile(r"\\(?:displaystyle|textstyle)(?![A-Za-z])")
_SMALL_FRAC = re.compile(r"\\[dt]frac(?![A-Za-z])")


def display_form(answer: str) -> str:
    """The spelling shown as an option. Every option goes through it, the gold included, so that
    typesetting habits (``\\dfrac`` in MATH's solutions, ``\\frac`` in models') do not give the gold away."""
    text = _strip_outer_braces(_strip_ends(answer))
    text = _DISPLAY.sub("", text)
    text = _SMALL_FRAC.sub(r"\\frac", text)
    return _strip_ends(" ".join(text.split()))


def _strip_ends(text: str) -> str:
    """Without surrounding spaces, ``$`` and a final period ("$\\frac{9}{7}$." is \\frac{9}{7})."""
    while True:
        stripped = text.strip().strip("$").rstrip(".")
        if stripped == text:
            return text
        text = stripped


def _strip_outer_braces(text: str) -> str:
    """``{x}`` is LaTeX grouping around the whole answer (``\\{x\\}`` would be a set): drop it."""
    while text.startswith("{") and _balanced(text) == text[1:-1]:
        text = text[1:-1].strip()
    return text


def answer_key(answer: str) -> str | None:
    """Canonical spelling: no spaces, no ``\\left``/``\\right``, thin spaces or trailing period."""
    text = display_form(answer)
    text = _THIN_SPACES.sub("", text)
    text = _LEFT_RIGHT.sub("", text)
    text = "".join(text.split())
    return text or None


# ---- one normal form for every option ------------------------------------------------------------------
# MATH golds carry typesetting that models' answers mostly lack (and the other way round): "\text{odd}",
# "5\text{ cm}", "30^\circ", "25\%", "\$15", "x = 3". Shown as is, such a mark singles out the gold, and
# two spellings of one answer ("\text{east}" and "East", "4" and "h = 4\, in") are kept as two options.
# ``option_form`` removes the marks from every option, the gold included; ``surface_key`` also folds case,
# spaces and any remaining "name =" prefix, and two options with one surface key are one answer.

_TEXT_COMMAND = re.compile(r"\\(?:text|textbf|textrm|textit|textnormal|textup|mbox|mathrm|hbox)\s*\{")
_DEGREES = re.compile(r"\s*(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\^\s*\{\s*\\degree\s*\}|\\degree|°)")
_PERCENT = re.compile(r"\s*\\?%")
_DOLLAR = re.compile(r"\\\$\s*")
_THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_BRACED_THOUSANDS = re.compile(r"(?<=\{)-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?=\})")  # "\frac{12}{5,525}"
_SEPARATOR = re.compile(r"(\d),\s*\\!\s*(?=\d{3})")  # "14,\!400", "111, \! 111": a thousands separator
_BRACED_SEPARATOR = re.compile(r"(\d)\{,\}(?=\d{3})")  # "10{,}000": a thousands separator
_ANSWER_IS = re.compile(r"^(?:the\s+)?(?:final\s+)?answer\s+is\s*:?\s*", re.IGNORECASE)
_INLINE_DOLLAR = re.compile(r"(?<!\\)\$")
# A model's refusal or an unfinished sentence is no answer to the question, and an option that says so is
# eliminated without reading the problem: such an output is invalid, not a distractor.
_NON_ANSWER = re.compile(r"\b(?:cannot|can't|can not|not possible to|impossible to)\s+(?:be\s+)?(?:determined?|found|"
                         r"find|computed?|calculated?|solved?)\b|\binsufficient\b|\bnot enough information\b|"
                         r"\badditional (?:constraints|information)\b|\b(?:is|are)\s*$", re.IGNORECASE)
_AND = re.compile(r"\s*,?\s*\band\s+")
UNITS = ("square units", "sq units", "cubic units", "units", "unit", "square inches", "square feet", "square meters",
         "square centimeters", "square yards", "square miles", "sq ft", "cubic inches", "cubic feet",
         "cubic centimeters", "cubic meters", "cubic yards", "inches", "inch", "in", "feet", "foot", "ft", "yards",
         "yard", "yd", "miles", "mile", "mi", "mph", "meters", "meter", "m", "centimeters", "centimeter", "cm",
         "millimeters", "mm", "kilometers", "km", "degrees", "degree", "dollars", "dollar", "cents", "cent",
         "seconds", "second", "sec", "minutes", "minute", "min", "hours", "hour", "hrs", "hr", "days", "day",
         "weeks", "week", "months", "years", "year", "pounds", "pound", "lbs", "lb", "ounces", "ounce", "oz",
         "gallons", "gallon", "liters", "liter", "ml", "kg", "grams", "gram", "g", "students", "people",
         "ways", "integers", "edges", "digits", "meals", "teachers", "children tickets", "tickets", "calories",
         "marbles", "coins", "handshakes", "games", "pages", "points", "books", "cookies", "apples", "boxes",
         "rows", "seats", "words", "numbers", "times", "steps", "sides", "vertices", "faces", "squares",
         "triangles", "outfits", "combinations", "arrangements", "sequences", "groups", "committees", "paths",
         "miles per hour", "feet per second", "meters per second", "percent")
_UNIT = re.compile(r"^(?P<value>.*?(?:[\d}\)\]]|\\pi))\s+(?:" + "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
                   + r")\.?(?:\s*\^\s*\{?[23]\}?)?$", re.IGNORECASE)
_LETTER_LABEL = re.compile(r"^\(([A-Z])\)(?:\s.*)?$", re.DOTALL)
_WORD = re.compile(r"^[A-Z][a-z]{2,}(?: [a-z]+)*$")
_COMMANDS = re.compile(r"\\(?:begin|end)\s*\{[a-zA-Z*]*\}|\\[a-zA-Z]+")


def _unwrap_text(text: str) -> str:
    """``\\text{X}`` (and ``\\mbox``, ``\\mathrm``...) written as X; braces balanced."""
    while True:
        match = _TEXT_COMMAND.search(text)
        if match is None:
            return text
        inner = _balanced(text[match.end() - 1:])
        if inner is None:
            return text
        text = text[:match.start()] + " " + inner + " " + text[match.end() + len(inner) + 1:]


_RELATION = re.compile(r"[<>]|\\(?:le|ge|leq|geq|ne|neq|approx|lt|gt|in|subset|subseteq|equiv)(?![a-zA-Z])")
_NAME = re.compile(r"^(?:[A-Za-z]|\\[a-zA-Z]+)(?:_\{?[A-Za-z0-9]+\}?)?(?:\s*\([^()=]*\))?$")


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` outside every bracket."""
    depth, parts, start = 0, [], 0
    for index, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    return parts + [text[start:]]


def _top_level_equals(text: str) -> int | None:
    """The position of the one ``=`` outside any bracket (None when there are none or several)."""
    parts = _split_top(text, "=")
    return len(parts[0]) if len(parts) == 2 else None


def _without_name(text: str) -> str:
    """"x = 3" is 3; "k(x) = x + 1" is x + 1; "C(30, 3) = ... = 4060" is 4060 (the last value of a chain); a
    list "x = 1, x = 2" is 1, 2. An equation such as "5x - 7y + 4 = 0" or "x^2 + y^2 = 25" is the answer itself,
    and a relation outside brackets (\\le, <, \\in...) keeps the text whole."""
    items = _split_top(text, ",")
    if len(items) > 1 and all(len(_split_top(item, "=")) == 2 for item in items):
        return ", ".join(_without_name(item.strip()) for item in items)
    parts = _split_top(text, "=")
    if len(parts) < 2 or any(_RELATION.search(_depth_zero(part)) for part in parts):
        return text
    first, last = parts[0].strip(), parts[-1].strip()
    if len(parts) > 2 and _is_value(last):  # a derivation ending in its value
        return last
    if len(parts) == 2 and last and (_NAME.match(first) or (first.startswith("\\") and _is_value(last))):
        return last  # "k(x) = x^2", "\\operatorname{proj}_{\\mathbf{w}} \\mathbf{v} = (pmatrix)"; not "x + y = 0"
    return text


def _depth_zero(text: str) -> str:
    """The characters of ``text`` outside every bracket."""
    depth, kept = 0, []
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0:
            kept.append(char)
    return "".join(kept)


def _is_value(text: str) -> bool:
    """No variable in it: no letter once LaTeX commands and environment names are removed."""
    return bool(text.strip()) and not re.search(r"[a-zA-Z]", _COMMANDS.sub("", text))


@lru_cache(maxsize=1 << 16)  # the pools, the draws, the checks and the card ask for the same answers again
def option_form(answer: str, key: str | None = None) -> str:
    """The one spelling shown for an option: :func:`display_form` without ``\\text{}`` wrappers, units,
    degrees, percent and dollar signs, thousands separators, a ``name =`` before a value, ``\\left``/``\\right``,
    or the words after a lettered choice ("(E) Cylinder" is "(E)"); a capitalised word is written in lower case,
    and spaces as :func:`compact_spacing` says. Beside a ``key`` (in its normal form) that states no relation, an
    answer "lhs = value" or "lhs \\approx value" is its value."""
    relation_allowed = key is None or states_relation(key)
    text = display_form(answer)
    if "\\begin{cases}" not in text:  # "p & \\text{if } p \\neq r" in cases: the words stay words
        text = _unwrap_text(text)
    text = _BRACED_SEPARATOR.sub(r"\1,", text)
    text = _SEPARATOR.sub(r"\1,", text)
    text = re.sub(r"(?<!\\)\\!", "", text)
    text = _SPACING.sub(" ", text)
    text = " ".join(text.split())
    for _ in range(3):  # "\$15\text{ dollars}", "30^\circ\text{ degrees}": marks may stack
        before = text
        text = _DOLLAR.sub("", text)
        text = _DEGREES.sub("", text)
        text = _PERCENT.sub("", text).strip()
        unit = _UNIT.match(text)
        if unit and unit.group("value").strip():
            text = unit.group("value").strip()
        text = _without_name(_ANSWER_IS.sub("", text))
        text = text if relation_allowed else _last_side(text)
        text = _strip_ends(" ".join(text.split()))
        if text == before:
            break
    text = " ".join(_INLINE_DOLLAR.sub("", text).split())  # "no real values of $k": math delimiters in a text answer
    if _THOUSANDS.match(text):
        text = text.replace(",", "")
    text = _BRACED_THOUSANDS.sub(lambda number: number.group().replace(",", ""), text)
    if " and " in text and _is_value(_AND.sub(", ", text)):  # "19 and 43", "7, -2, and -5": a list
        text = _AND.sub(", ", text)
    label = _LETTER_LABEL.match(text)
    if label:
        text = f"({label.group(1)})"
    if _WORD.match(text):
        text = text[0].lower() + text[1:]
    return brace_arguments(compact_spacing(_LEFT_RIGHT.sub("", _INVISIBLE_DELIMITER.sub("", text))))


_FRAC_OR_SQRT = re.compile(r"\\(frac|sqrt)(?![A-Za-z])\s*")
_ONE_TOKEN = re.compile(r"\s*(\\[A-Za-z]+|[0-9A-Za-z])")


def brace_arguments(text: str) -> str:
    """Every argument of ``\\frac`` and ``\\sqrt`` in braces: ``\\frac34`` is ``\\frac{3}{4}``, ``\\sqrt3`` is
    ``\\sqrt{3}`` and ``\\frac\\pi2`` is ``\\frac{\\pi}{2}``. MATH's golds use TeX's one-token arguments and models'
    answers the braces, so that in a full build 70 of the 80 options with a bare argument were the key."""
    out, start = [], 0
    for match in _FRAC_OR_SQRT.finditer(text):
        if match.start() < start:  # inside an argument already copied
            continue
        out.append(text[start:match.start()] + "\\" + match.group(1))
        position = match.end()
        if match.group(1) == "sqrt" and text.startswith("[", position) and "]" in text[position:]:
            end = text.index("]", position) + 1  # the root's index: "\\sqrt[3]2"
            out.append(text[position:end])
            position = end
        for _ in range(2 if match.group(1) == "frac" else 1):
            argument, position = _argument(text, position)
            if argument is None:
                break
            out.append("{" + brace_arguments(argument) + "}")
        start = position
    return "".join(out) + text[start:]


def _argument(text: str, position: int) -> tuple[str | None, int]:
    """The argument at ``position`` (a braced group or one token) and where it ends; (None, position) if none."""
    while text.startswith(" ", position):
        position += 1
    if text.startswith("{", position):
        inner = _balanced(text[position:])
        return (inner, position + len(inner) + 2) if inner is not None else (None, position)
    token = _ONE_TOKEN.match(text, position)
    return (token.group(1), token.end()) if token else (None, position)


_CONTROL_WORD_END = re.compile(r"\\[A-Za-z]+$")
_LIST_BEFORE_THREE_DIGITS = re.compile(r",(?=-?\d{3}(?![\d.]))")
_INVISIBLE_DELIMITER = re.compile(r"\\(?:left|right)\.")


def compact_spacing(text: str) -> str:
    """MATH's compact spelling, for every option: a space stays only between two words or numbers ("no real values
    of k", "4:30 p.m", "\\pi r"), never beside a symbol nor between a command and a digit ("\\frac{1}{2} + 3" is
    "\\frac{1}{2}+3", "\\sqrt 2" is "\\sqrt2", "(0, 1)" is "(0,1)"), except after a comma before three digits:
    "45,135" would read as one number, to a reader and to math-verify. MATH's golds and models' answers were spaced
    differently, so that a space alone told the distractor. Words inside ``\\text{}`` (left only in a ``cases``
    environment) keep their spaces."""
    if "\\text{" in text:
        return text
    out, *rest = text.split(" ")
    for part in rest:
        if not part:
            continue
        keep = out[-1:].isalnum() and part[0].isalnum() and not (part[0].isdigit() and _CONTROL_WORD_END.search(out))
        keep = keep or (out.endswith("\\\\") and part[0] == "[")  # "\\[2pt]" would be a row-spacing argument
        out += (" " if keep else "") + part
    return _LIST_BEFORE_THREE_DIGITS.sub(", ", out)


_COLUMN_VECTOR = re.compile(r"^\\begin\{([pb])matrix\}(.*)\\end\{\1matrix\}$", re.DOTALL)


def non_answer(text: str) -> bool:
    """A refusal ("cannot be determined", "Insufficient information") or an unfinished sentence ("the remainder
    is"): no answer to the question, so not a distractor."""
    return bool(_NON_ANSWER.search(text)) or not re.sub(r"[\\\s.,;:]", "", text)  # "\\": a cut-off answer


@lru_cache(maxsize=1 << 16)  # asked for both sides of every pair the equivalence meets
def surface_key(answer: str) -> str | None:
    """The option's form with case, spaces, ``\\left``/``\\right`` and a leading ``name =`` folded away,
    and a lettered choice with or without parentheses, and a column vector written as the tuple of its entries
    (``\\begin{pmatrix} -3 \\\\ 9 \\end{pmatrix}`` is ``(-3, 9)``, one point): options with one surface key
    are one answer."""
    form = option_form(answer)
    vector = _COLUMN_VECTOR.match(form)
    if vector and "&" not in vector.group(2):
        form = "(" + ", ".join(part.strip() for part in re.split(r"\\\\", vector.group(2))) + ")"
    text = answer_key(form)
    if text is None:
        return None
    equals = _top_level_equals(text)
    if equals is not None and _NAME.match(text[:equals]) and text[equals + 1:]:
        text = text[equals + 1:]  # "y=2x+3" is "2x+3"; "x+y=0" stays an equation
    text = text.lower()
    label = re.match(r"^\(([a-z])\)$", text)
    return label.group(1) if label else text


# ---- an answer of the key's kind -----------------------------------------------------------------------
# A distractor that a reader rules out without the problem is no distractor: a free variable beside a number
# ("x", "Q + 3P + 20"), words beside a value ("No Solution", "undefined", "infinite"), an equation beside an
# expression ("AB = \sqrt{65}"), a bare letter where the release letters its options. Each is compared with the
# key: "odd" may stand beside "even", and "y = 2x + 3" beside another line.

_EQUALS = re.compile(r"(?<![<>!=\\])=(?!=)")
_APPROX = re.compile(r"\\approx(?![a-zA-Z])|≈")
_SIDE_RELATION = re.compile(r"[<>]|\\(?:le|ge|leq|geq|ne|neq|lt|gt|in|subset|subseteq|equiv)(?![a-zA-Z])")
_LETTER_ANSWER = re.compile(r"^\(?[A-Z]\)?(?:, ?\(?[A-Z]\)?)*$")
_OPERATOR_NAME = re.compile(r"\\operatorname\*?\{[^{}]*\}")
_WORD_RUN = re.compile(r"[A-Za-z]{3,}")
KIND_REASONS = {
    "letter": "a bare letter, as the release's option labels",
    "equation": "an equation where the key is none, or the other way round",
    "words": "words where the key is a value, or the other way round",
    "variable": "a variable the key does not have",
    "undone": "arithmetic left undone (a product, a quotient, a bracketed number or sum, a factorial) where the key has "
              "none",
    "decimal": "a decimal approximation where the key is exact",
    "infinite": "infinity where the key is finite, or the other way round",
    "unreduced": "a fraction not in lowest terms",
    "radical": "a square root not in simplest form (a square factor or a fraction under it)",
    "values": "several values where the key is one, or the other way round",
}
# MATH's answers are simplified: "202\\times499", "2(123456790)^3+7" or "\\frac{(120-45)^2}{120^2}" beside a plain
# key is ruled out unread, as a sum left in brackets ("2(\\sqrt{5}+1)" beside "2\\sqrt{5}", "2(x-1)+2(x-2)^2" beside
# "3x^2-7x+4"), a factorial or a binomial coefficient ("\\binom{6}{1}\\binom{8}{4}+..." beside 1940). Powers and roots
# ("2^{2004}", "(\\frac23)^{15}") are answers in their own right.
_UNDONE = re.compile(r"\\(?:times|cdot|div|binom|dbinom|tbinom|choose)(?![a-zA-Z])|\*"
                     r"|\(-?\d+(?:\.\d+)?(?:[-+]\d+(?:\.\d+)?)*\)"
                     r"|[\d)}]!|\([^(),]*[^(,\s+-]\s*[-+][^(),]*\)")  # a factorial, a bracketed sum: "2(\sqrt{5}+1)"
# MATH's keys are exact: a model's decimal ("73.26", "0.381", "23.38\pi") beside a key with none is an
# approximation a reader rules out unread (with these and lists beside single values, the 2-option
# build's choices-only model read "less punctuation" and "the only option with a comma").
_DECIMAL_NUMBER = re.compile(r"(?<![\d.])\d*\.\d+")
_INFINITY = re.compile(r"\\infty(?![a-zA-Z])|∞")
_NUMERIC_FRACTION = re.compile(r"\\[dt]?frac\{(\d+)\}\{(\d+)\}")
# MATH's radicals are in simplest form: "\\frac{\\sqrt{96}}{2}" beside 3\\sqrt{5}, "\\sqrt{34}+\\sqrt{369}" beside 28,
# "\\sqrt{\\frac{2}{3}}" beside 2 are ruled out unread.
_SQUARE_ROOT_OF = re.compile(r"\\sqrt\{(\d{1,8})\}")  # a longer number is not tried
_ROOT_OF_FRACTION = re.compile(r"\\sqrt\{[^{}]*(?:\\[dt]?frac(?![a-zA-Z])|/)")


def letter_answer(text: str) -> bool:
    """Option labels ("C", "(B)", "A, D"): under letter scoring, an option that reads "C" at label B is
    ambiguous, so no such option is released."""
    return bool(_LETTER_ANSWER.match(text))


def states_relation(key: str) -> bool:
    """Whether ``key`` is an equation or an approximation (then its options may be too)."""
    return bool(_EQUALS.search(key) or _APPROX.search(key))


def _last_side(text: str) -> str:
    """A model's "AB = \\sqrt{65}", "p + q = \\frac{356}{121}" or "7,928.67\\approx 7,929" is the value it ends
    with; an equation set to zero ("x^2 - 10x + 9 = 0") or a chain with an inequality stays whole: its answer is
    the relation."""
    sides = _split_top(_APPROX.sub("=", text), "=")
    last = sides[-1].strip()
    if len(sides) < 2 or not last or last == "0" or any(_SIDE_RELATION.search(_depth_zero(s)) for s in sides):
        return text
    return last


def kind_mismatch(answer: str, key: str) -> str | None:
    """The :data:`KIND_REASONS` key why ``answer`` is not an answer of ``key``'s kind, or None."""
    if letter_answer(answer):
        return "letter"
    if states_relation(answer) != states_relation(key):
        return "equation"
    answer_words, key_words = _plain_letters(answer), _plain_letters(key)
    if bool(_WORD_RUN.search(answer_words)) != bool(_WORD_RUN.search(key_words)):
        return "words"
    if not _WORD_RUN.search(key_words) and set(answer_words) - set(key_words) - {"i", " "}:
        return "variable"  # the imaginary unit is a number
    if _UNDONE.search(answer) and not _UNDONE.search(key):
        return "undone"
    if _DECIMAL_NUMBER.search(answer) and not _DECIMAL_NUMBER.search(key):
        return "decimal"
    if ("," in answer) != ("," in key):  # thousands separators are gone from the normal form
        return "values"
    if bool(_INFINITY.search(answer)) != bool(_INFINITY.search(key)):
        return "infinite"
    if any(math.gcd(int(top), int(bottom)) > 1 for top, bottom in _NUMERIC_FRACTION.findall(answer)):
        return "unreduced"  # MATH's keys are in lowest terms: "-\frac{240}{9}" beside "\frac{80}{3}"
    if _unsimplified_radical(answer) and not _unsimplified_radical(key):
        return "radical"
    return None


def _unsimplified_radical(text: str) -> bool:
    """A square root of a fraction, or of a whole number with a square factor (``\\sqrt{96}``: 16 divides it) or
    below 2."""
    return bool(_ROOT_OF_FRACTION.search(text)) or any(
        int(n) < 2 or any(int(n) % (k * k) == 0 for k in range(2, math.isqrt(int(n)) + 1))
        for n in _SQUARE_ROOT_OF.findall(text))


def _plain_letters(text: str) -> str:
    """The letters of ``text`` outside LaTeX commands and operator names, each run of them kept whole."""
    return " ".join(re.findall(r"[A-Za-z]+", _COMMANDS.sub(" ", _OPERATOR_NAME.sub(" ", text))))


_DECIMAL = re.compile(r"^-?\d*\.(\d+)$")


def decimal_places(text: str) -> int | None:
    """The shown precision of a plain decimal ("0.377": 3), None for any other answer."""
    match = _DECIMAL.match(text)
    return len(match.group(1)) if match else None
