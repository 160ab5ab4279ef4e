"""Python values as answers: PythonIO's predicted outputs, parsed, compared and written out.

A predicted output is untrusted text, and a value, not a program: it is only read, by :func:`parse_literal`,
which walks the syntax tree (length and nesting capped before anything is built) and accepts Python's literal
grammar plus a short list of constructors for values with no literal spelling (``set()``, ``frozenset(...)``,
``float('inf')``, ``complex(1, 2)``). Anything else (``[0] * 3``, ``open(...).read()``, a sentence) is
``not_a_literal``; nothing a model wrote ever runs, in the sandbox or elsewhere.

Two answers are the same when their *values* are equal under Python's ``==``: ``[1,2]`` and ``[1, 2]``,
``'a'`` and ``"a"``, ``{1, 2}`` and ``{2, 1}``, ``1`` and ``1.0`` are each one answer. :func:`value_key`
is a hashable canonical key with exactly that equality, so pools can group answers by key. Every
answer is shown as :func:`format_value` of its value (``repr`` with sets sorted), so an option's
spelling never tells the gold (written by ``repr``) from the models' answers (written by hand).
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from builders.from_predictions.pools import rounds_to

MAX_LITERAL_CHARS = 10_000  # longer texts are not parsed at all
MAX_LITERAL_DEPTH = 32  # syntax-tree depth: [[[...]]] deeper than this is refused
DEFAULT_MAX_OUTPUT_CHARS = 1_000  # longest formatted value kept as an answer option


class NotALiteral(ValueError):
    """The text is not a (bounded) Python literal, or the value is not one PythonIO can compare."""


# ---- parsing ---------------------------------------------------------------------------------------


def parse_expression(text: str) -> ast.Expression:
    """Parse (never run) ``text`` as one Python expression, within the length and depth caps."""
    text = text.strip()
    if not text:
        raise NotALiteral("empty")
    if len(text) > MAX_LITERAL_CHARS:
        raise NotALiteral(f"longer than {MAX_LITERAL_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise NotALiteral(f"not a Python expression: {type(error).__name__}") from None
    if _depth(tree.body) > MAX_LITERAL_DEPTH:
        raise NotALiteral(f"nested deeper than {MAX_LITERAL_DEPTH}")
    return tree


def _depth(node: ast.AST) -> int:
    """Depth of the tree, without recursion (a hostile text must not blow the stack)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        current, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(current))
    return deepest


def parse_literal(text: str, *, from_repr: bool = False) -> Any:
    """The value of a Python literal text; NotALiteral for anything else. Nothing is executed: the syntax
    tree is walked (:func:`read_value`). ``from_repr``: the text is ``repr`` of a plain value written by the
    trusted evaluator, where infinities and NaN read ``inf`` and ``nan``."""
    tree = parse_expression(text)
    try:
        value = read_value(tree.body, from_repr)
    except (ValueError, TypeError, RecursionError, MemoryError) as error:
        if isinstance(error, NotALiteral):
            raise
        raise NotALiteral(f"not a literal: {type(error).__name__}") from None
    value_key(value)  # refuses NaN, which equals nothing, not even itself
    return value


# The constructors a predicted output may use besides the literal grammar: values that have no literal
# spelling. Each is applied by the reader below, never called by name.
NON_FINITE = {"inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "infinity": math.inf,
              "+infinity": math.inf, "-infinity": -math.inf, "nan": math.nan, "+nan": math.nan, "-nan": math.nan}
CONSTANT_TYPES = (str, bytes, bool, int, float, complex, type(None))


def read_value(node: ast.AST, from_repr: bool = False) -> Any:
    """The value of one expression node made only of literals (as ``ast.literal_eval`` reads them) and the
    constructors ``set(...)``, ``frozenset(...)``, ``float('inf' | '-inf' | 'nan')`` and ``complex(re[, im])``;
    NotALiteral for any other node (a name, an attribute, an operator, any other call)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, CONSTANT_TYPES):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [read_value(item, from_repr) for item in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict) and None not in node.keys:  # no ``**mapping``
        return dict(zip((read_value(k, from_repr) for k in node.keys),  # type: ignore[arg-type]
                        (read_value(v, from_repr) for v in node.values), strict=True))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        number = _number(node.operand, from_repr, signed=False)
        return -number if isinstance(node.op, ast.USub) else +number
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):  # 1+2j, -1-2j, as literal_eval
        real, imag = _number(node.left, from_repr, signed=True), _number(node.right, from_repr, signed=False)
        if isinstance(real, (int, float)) and isinstance(imag, complex) and not isinstance(real, bool):
            return real + imag if isinstance(node.op, ast.Add) else real - imag
    if isinstance(node, ast.Call):
        return _constructed(node, from_repr)
    if from_repr and isinstance(node, ast.Name) and node.id in ("inf", "nan"):
        return NON_FINITE[node.id]
    raise NotALiteral(f"not a literal: {type(node).__name__}")


def _number(node: ast.AST, from_repr: bool, signed: bool) -> int | float | complex:
    """A number, or (``signed``) a number with one sign: ``--1`` and ``1+2j+3j`` are no literals."""
    nested = ast.BinOp if signed else (ast.UnaryOp, ast.BinOp)
    value = None if isinstance(node, nested) else read_value(node, from_repr)
    if isinstance(value, (int, float, complex)) and not isinstance(value, bool):
        return value
    raise NotALiteral("not a literal: a sign or sum of something other than a number")


def _constructed(node: ast.Call, from_repr: bool) -> Any:
    """``set()``, ``frozenset(...)``, ``float('inf')``, ``complex(1, 2)``: the constructors on the list, with
    literal arguments, applied here; any other call is no literal."""
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name not in ("set", "frozenset", "float", "complex"):
        raise NotALiteral(f"not a literal: a call of {name or 'an expression'}")
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        raise NotALiteral("not a literal: a call with keyword or starred arguments")
    args = [read_value(arg, from_repr) for arg in node.args]
    if name in ("set", "frozenset") and len(args) <= 1:
        if args and not isinstance(args[0], (str, bytes, list, tuple, set, frozenset, dict)):
            raise NotALiteral(f"not a literal: {name}() of a {type(args[0]).__name__}")
        return (set if name == "set" else frozenset)(*args)
    if name == "float" and len(args) == 1 and isinstance(args[0], str) and args[0].strip().lower() in NON_FINITE:
        return NON_FINITE[args[0].strip().lower()]
    if name == "complex" and 1 <= len(args) <= 2 and all(
            isinstance(arg, (int, float)) and not isinstance(arg, bool) for arg in args):
        return complex(*args)
    raise NotALiteral(f"not a literal: {name}() of these arguments")


# ---- equality and spelling --------------------------------------------------------------------------


def value_key(value: Any) -> Hashable:
    """A hashable key with Python's ``==`` on literal values: equal keys iff equal values.

    Numbers keep their own value (``1``, ``1.0`` and ``True`` are equal and hash alike in Python);
    lists and tuples stay apart (``[1] != (1,)``); sets and dicts ignore order.
    """
    if value is None:
        return ("none",)
    if isinstance(value, (bool, int, float, complex)):
        real, imag = (value.real, value.imag) if isinstance(value, complex) else (value, 0)
        if any(isinstance(part, float) and math.isnan(part) for part in (real, imag)):
            raise NotALiteral("NaN equals nothing, not even itself")
        return ("number", real, imag)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, bytes):
        return ("bytes", value)
    if isinstance(value, list):
        return ("list", tuple(value_key(item) for item in value))
    if isinstance(value, tuple):
        return ("tuple", tuple(value_key(item) for item in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(value_key(item) for item in value))
    if isinstance(value, dict):
        return ("dict", frozenset((value_key(k), value_key(v)) for k, v in value.items()))
    raise NotALiteral(f"values of type {type(value).__name__} are not compared")


NEAR_REL_TOL = 1e-6  # relative difference below which two unequal floats differ only in rounding


def nearly_equal(a: Any, b: Any, rel_tol: float = NEAR_REL_TOL) -> bool:
    """Unequal values that differ only in float digits: numbers (one of them a float) within ``rel_tol`` of
    each other (``204.2035`` for ``204.20352248333654``; ``10.63014581273463`` for ``10.63014581273465``), or
    lists and tuples of one shape whose elements are equal or nearly so. Telling such an option from the gold
    tests float rounding, not reading the program."""
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return False
        return ((isinstance(a, float) or isinstance(b, float)) and math.isclose(a, b, rel_tol=rel_tol)
                or shows_rounded(a, b))
    if type(a) is type(b) and isinstance(a, (list, tuple)) and len(a) == len(b) and a != b:
        return all(x == y or nearly_equal(x, y, rel_tol) for x, y in zip(a, b, strict=True))
    return False


def shows_rounded(exact: int | float, shown: int | float) -> bool:
    """``shown``, a float, is ``exact`` rounded to the decimals ``shown`` is written with: ``15.588`` beside
    ``15.588457268119894`` (mbpp/742) is a second correct option, though 2.9e-5 apart in relative terms."""
    if not isinstance(shown, float) or not math.isfinite(shown) or not math.isfinite(exact):
        return False
    text = repr(shown)
    if "e" in text or "." not in text:
        return False
    return rounds_to(Fraction(exact), Fraction(text), len(text.split(".")[1]))


def format_value(value: Any) -> str:
    """``repr``, except that set elements are sorted, so the text never depends on hash order."""
    if isinstance(value, (set, frozenset)):
        if not value:
            return "set()" if isinstance(value, set) else "frozenset()"
        body = "{" + ", ".join(format_value(item) for item in _sorted_elements(value)) + "}"
        return body if isinstance(value, set) else f"frozenset({body})"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(item) for item in value) + "]"
    if isinstance(value, tuple):
        if len(value) == 1:
            return f"({format_value(value[0])},)"
        return "(" + ", ".join(format_value(item) for item in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({repr(value)!r})"  # float('inf'): what the reader reads back; repr's inf is a name
    if isinstance(value, complex) and not all(map(math.isfinite, (value.real, value.imag))):
        return f"complex({format_value(value.real)}, {format_value(value.imag)})"
    return repr(value)


def _sorted_elements(values: Iterable[Any]) -> list[Any]:
    items = list(values)
    try:
        return sorted(items)
    except TypeError:  # mixed types: order by their text, which is deterministic too
        return sorted(items, key=format_value)


def canonical_text(text: str, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """The formatted value of a literal text; NotALiteral if it is not one or is too long."""
    formatted = format_value(parse_literal(text))
    if len(formatted) > max_chars:
        raise NotALiteral(f"value longer than {max_chars} characters")
    return formatted


@dataclass(frozen=True)
class PythonValueEquivalence:
    """The pool's :class:`~builders.from_predictions.pools.Equivalence` for PythonIO.

    ``spellings`` maps answer texts to their canonical text (or None), as :func:`normalize_predictions`
    made them; any other text is parsed as a bounded literal. So a key
    is never more than a parse: no answer runs here. Keys depend on values only: 2 == 2.0, [1,2] == [1, 2].
    """

    max_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    spellings: Mapping[str, str | None] = field(default_factory=dict)

    def spell(self, answer: str) -> str | None:
        """The canonical text of an answer (``repr`` of its value, sets sorted), or None."""
        if answer in self.spellings:
            return self.spellings[answer]
        try:
            return canonical_text(answer, self.max_chars)
        except NotALiteral:
            return None

    def key(self, answer: str) -> Hashable | None:
        text = self.spellings.get(answer) if answer in self.spellings else answer
        return _cached_key(text, self.max_chars) if text is not None else None

    def same(self, a: str, b: str) -> bool:
        key_a, key_b = self.key(a), self.key(b)
        return key_a is not None and key_a == key_b


@lru_cache(maxsize=65536)
def _cached_key(answer: str, max_chars: int) -> Hashable | None:
    try:
        value = parse_literal(answer)
        if len(format_value(value)) > max_chars:
            return None  # too long to be an option: the same rule as canonical_text
        return value_key(value)
    except NotALiteral:
        return None


# ---- predicted outputs: read, never run ---------------------------------------------------------------------

def normalize_predictions(texts: Iterable[str], max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> dict[str, str | None]:
    """{predicted text (stripped): canonical text of its value, or None when it is not a literal}.

    A model's answer to "what does this call return" is a value: it is read (:func:`parse_literal`), never
    run. ``[0] * 3``, ``open(...).read()`` and sentences alike have no value (``not_a_literal``)."""
    results: dict[str, str | None] = {}
    for text in dict.fromkeys(t.strip() for t in texts):
        try:
            results[text] = canonical_text(text, max_chars)
        except NotALiteral:
            results[text] = None
    return results


# ---- the answer in a model's reply ------------------------------------------------------------------

_ANSWER_TAG = re.compile(r"\[ANSWER\](.*?)(?:\[/ANSWER\]|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_]*\n?(.*?)```", re.DOTALL)


def extract_predicted_output(reply: str, call: str | None = None) -> str | None:
    """The predicted output in a reply to the output-prediction prompt, or None.

    Takes the last ``[ANSWER] ... [/ANSWER]`` block (else the last code fence, else the whole reply);
    when that block is ``assert CALL == VALUE`` or ``CALL == VALUE``, the VALUE part.
    """
    tagged = _ANSWER_TAG.findall(reply)
    fenced = _FENCE.findall(reply)
    answer = (tagged or fenced or [reply])[-1].strip()
    answer = _strip_wrapping_backticks(answer)
    value = _right_of_equality(answer, call)
    return value if value else None


def _strip_wrapping_backticks(text: str) -> str:
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`" and "`" not in text[1:-1]:
        return text[1:-1].strip()
    return text


def _right_of_equality(answer: str, call: str | None) -> str:
    body = answer[len("assert"):].strip() if answer.startswith("assert ") else answer
    try:
        tree = ast.parse(body, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return answer if body is answer else body
    node = tree.body
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        left = ast.get_source_segment(body, node.left) or ""
        if call is None or _same_syntax(left, call) or isinstance(node.left, ast.Call):
            return (ast.get_source_segment(body, node.comparators[0]) or "").strip()
    return body


def _same_syntax(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a, mode="eval")) == ast.dump(ast.parse(b, mode="eval"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
