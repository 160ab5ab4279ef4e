"""PythonIO's source and its rows: the problems of HumanEval and MBPP, and one row per ``assert`` of their tests.

* the two sources, HumanEval and MBPP, as parts of one benchmark (read by :func:`builders.core.sources.loading.load_source`);
* the program shown: the reference solution, newlines normalised, docstrings removed;
* one row per ``assert``: a :class:`CallPair` when it reads ``assert f(args) == LITERAL`` with a self-contained
  call, else a :class:`Rejected` with the reason (:func:`extract_rows`). The pairs are verified in the sandbox
  next (:mod:`.verify`).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from builders.core.errors import MalformedRow
from builders.core.items.outcomes import Exclude
from builders.core.sources import fields
from builders.core.sources.loading import Benchmark, RowContext

from .values import NotALiteral, parse_literal

NAME = "python_io"

SOURCE_CITATIONS = """@article{chen2021codex,
  title={Evaluating Large Language Models Trained on Code},
  author={Chen, Mark and Tworek, Jerry and Jun, Heewoo and others},
  journal={arXiv preprint arXiv:2107.03374},
  year={2021}
}

@article{austin2021program,
  title={Program Synthesis with Large Language Models},
  author={Austin, Jacob and Odena, Augustus and Nye, Maxwell and others},
  journal={arXiv preprint arXiv:2108.07732},
  year={2021}
}"""
OUTPUT_SPLITS = ("test", "train")
# Which PythonIO split each source split feeds: all of HumanEval and MBPP's test split form ``test``.
OUTPUT_SPLIT = {("humaneval", "test"): "test", ("mbpp", "test"): "test", ("mbpp", "train"): "train",
                ("mbpp", "validation"): "train", ("mbpp", "prompt"): "train"}


# ---- reading the sources ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One source problem: its reference program and the assert statements of its tests."""

    benchmark: str
    task_id: str
    source_split: str
    source_index: int
    program: str
    tests: tuple[str, ...]  # HumanEval: the whole test module (one text); MBPP: one text per assert
    entry_point: str | None = None  # HumanEval: the function `candidate` stands for
    source_config: str = "default"

    @property
    def id(self) -> str:
        return f"{self.benchmark}/{self.source_split}/{self.source_index}"

    @property
    def split(self) -> str:
        return OUTPUT_SPLIT[(self.benchmark, self.source_split)]

    @property
    def key(self) -> tuple[str, str]:
        return self.benchmark, self.task_id


def humaneval_problem(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    where = ctx.default_id
    program = fields.text(row, "prompt", where) + fields.text(row, "canonical_solution", where)
    return Problem("humaneval", fields.text(row, "task_id", where), ctx.split, ctx.index, program,
                   (fields.text(row, "test", where),), fields.text(row, "entry_point", where), "openai_humaneval")


def mbpp_problem(row: Mapping[str, Any], ctx: RowContext) -> Problem:
    where = ctx.default_id
    task_id = row.get("task_id")
    if isinstance(task_id, bool) or not isinstance(task_id, (int, str)):
        raise MalformedRow(where, "task_id", "expected an integer")
    # an empty list is well-formed: such a problem is excluded later as `no_asserts`
    tests = fields.string_list(fields.required(row, "test_list", where), "test_list", where, allow_empty=True)
    program = fields.text(row, "code", where)
    setup = fields.optional_text(row, "test_setup_code", where) or ""
    # The setup code builds objects the asserts use (MBPP 367: a tree): it is part of what is shown.
    return Problem("mbpp", str(task_id), ctx.split, ctx.index, program + ("\n\n" + setup if setup.strip() else ""),
                   tuple(tests), source_config=ctx.config)


HUMANEVAL = Benchmark(name="humaneval", hub_id="openai/openai_humaneval", config=None, splits=("test",),
                      to_item=humaneval_problem, license="mit", citation=SOURCE_CITATIONS, pretty_name="HumanEval")
MBPP = Benchmark(name="mbpp", hub_id="google-research-datasets/mbpp", config="full",
                 splits=("train", "test", "validation", "prompt"), to_item=mbpp_problem, license="cc-by-4.0",
                 citation=SOURCE_CITATIONS, pretty_name="MBPP")
BENCHMARK = Benchmark(name="python_io", hub_id=HUMANEVAL.hub_id, config=None,
                      splits=("test", "train", "validation", "prompt"), to_item=None, license="cc-by-4.0", citation=SOURCE_CITATIONS,
                      pretty_name="PythonIO (HumanEval + MBPP)", parts=(HUMANEVAL, MBPP))


# ---- the program shown --------------------------------------------------------------------------------


def clean_program(program: str, keep_docstrings: bool = False) -> str:
    """Unix newlines, no trailing blanks, and (by default) no docstrings.

    HumanEval's docstrings hold worked examples, often the very calls its tests make: shown with the
    program they would give the answer away. A docstring is removed only where it fills whole lines
    and its function keeps a body; if the result does not compile, the docstrings stay.
    """
    text = program.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip("\n") + "\n"
    if keep_docstrings:
        return text
    stripped = _without_docstrings(text)
    return stripped if stripped is not None else text


def _without_docstrings(text: str) -> str | None:
    """The program without its docstrings: every string statement of a module, class or function body (not
    only the first: HumanEval 115 puts its examples after ``import math``), and the blank lines right after
    each, so that no gap is left under a ``def``. A body keeps at least one statement."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    lines = text.split("\n")
    drop: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not body:
            continue
        strings = [statement for statement in body if _is_string_statement(statement)
                   and _fills_whole_lines(statement, lines)]
        if len(strings) == len(body):
            continue
        for statement in strings:
            drop.update(range(statement.lineno - 1, statement.end_lineno))
            after = statement.end_lineno  # blank lines between statements are never inside a literal
            while after < len(lines) and not lines[after].strip():
                drop.add(after)
                after += 1
    if not drop:
        return text
    kept = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    kept = re.sub(r"\n{4,}", "\n\n\n", kept).strip("\n") + "\n"
    try:
        compile(kept, "<program>", "exec")
    except (SyntaxError, ValueError):
        return None
    return kept


def _is_string_statement(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _fills_whole_lines(node: ast.stmt, lines: list[str]) -> bool:
    before = lines[node.lineno - 1][: node.col_offset]
    after = lines[node.end_lineno - 1][node.end_col_offset:]
    return not before.strip() and not after.strip()


# ---- (program, call, expected) pairs from the asserts ----------------------------------------------------


@dataclass(frozen=True)
class CallPair:
    """An assert that reads ``assert f(args) == LITERAL``: the call and the value the test expects of it."""

    id: str
    problem: Problem
    assert_index: int
    call: str
    expected_text: str  # the expected value as the test writes it ("True"/"False" for a truth test)
    truth_test: bool = False  # `assert f(x)` / `assert not f(x)`: kept only when f returns a bool

    @property
    def source_index(self) -> int:
        return self.problem.source_index


@dataclass(frozen=True)
class Rejected:
    """An assert that is no such pair, and why (the extract step excludes it)."""

    id: str
    problem: Problem
    error: Exclude

    @property
    def source_index(self) -> int:
        return self.problem.source_index


Row = CallPair | Rejected


def item_id(problem: Problem, assert_index: int) -> str:
    number = problem.task_id.split("/")[-1]
    return f"{problem.benchmark}/{number}/{assert_index}"


def extract_pairs(problem: Problem, keep_docstrings: bool = False) -> tuple[Problem, list[Row]]:
    """The problem with its program cleaned, and one CallPair or Rejected per assert statement."""
    problem = replace(problem, program=clean_program(problem.program, keep_docstrings))
    defined = _defined_names(problem.program)
    asserts = _humaneval_asserts(problem) if problem.benchmark == "humaneval" else _mbpp_asserts(problem)
    if not asserts:  # still one row in, so that no source row goes missing from the accounting
        field = "test" if problem.benchmark == "humaneval" else "test_list"
        return problem, [Rejected(item_id(problem, 0), problem, Exclude("no_asserts", field))]
    results: list[Row] = []
    seen_calls: set[str] = set()
    for index, (node, source, error) in enumerate(asserts):
        pair_id = item_id(problem, index)
        if error is None:
            try:
                call, expected, truth_test = _pair_from_assert(node, source, problem, defined)
                signature = call_signature(call)
                if signature in seen_calls:
                    raise Exclude("duplicate_call", "test", call)
                seen_calls.add(signature)
                results.append(CallPair(pair_id, problem, index, call, expected, truth_test))
                continue
            except Exclude as rejection:
                error = rejection
        results.append(Rejected(pair_id, problem, error))
    return problem, results


AssertRow = tuple[ast.Assert | None, str, Exclude | None]


def _humaneval_asserts(problem: Problem) -> list[AssertRow]:
    """Every assert inside ``check``; only those directly in its body can stand on their own."""
    source = problem.tests[0]
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as error:
        return [(None, source, Exclude("test_unparseable", "test", str(error)))]
    check = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None)
    if check is None:
        return [(None, source, Exclude("no_check_function", "test"))]
    top_level = {id(statement) for statement in check.body}
    nodes = sorted((n for n in ast.walk(check) if isinstance(n, ast.Assert)), key=lambda n: (n.lineno, n.col_offset))
    return [(node, source, None if id(node) in top_level else
             Exclude("assert_in_loop_or_branch", "test", _segment(source, node)[:200])) for node in nodes]


def _mbpp_asserts(problem: Problem) -> list[AssertRow]:
    rows: list[AssertRow] = []
    for text in problem.tests:
        try:
            tree = ast.parse(text.strip())
        except (SyntaxError, ValueError) as error:
            rows.append((None, text, Exclude("test_unparseable", "test_list", str(error))))
            continue
        if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
            rows.append((None, text, Exclude("not_an_assert", "test_list", text[:200])))
            continue
        rows.append((tree.body[0], text.strip(), None))
    return rows


def _pair_from_assert(node: ast.Assert, source: str, problem: Problem,
                      defined: frozenset[str]) -> tuple[str, str, bool]:
    """(call, expected literal text, whether it is a truth test) or Exclude."""
    test = node.test
    shown = _segment(source, node)[:200]
    callee = "candidate" if problem.benchmark == "humaneval" else None
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if _is_direct_call(test.operand if negated else test, callee, defined):
        # `assert f(x)` / `assert not f(x)`: the value is True / False when f returns a bool (checked when run).
        return _call_text(test.operand if negated else test, source, problem, defined, callee), str(not negated), True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and _is_equality(test.ops[0], test.comparators[0])):
        raise Exclude("not_an_equality_assert", "test", shown)
    left, right = test.left, test.comparators[0]
    if _is_direct_call(left, callee, defined):
        call_node, expected_node = left, right
    elif _is_direct_call(right, callee, defined):
        call_node, expected_node = right, left
    else:
        raise Exclude("not_a_direct_call", "test", shown)
    expected = _segment(source, expected_node)
    try:
        parse_literal(expected)
    except NotALiteral:
        raise Exclude("expected_not_a_literal", "test", expected[:200]) from None
    return _call_text(call_node, source, problem, defined, callee), expected, False


def _call_text(call_node: ast.Call, source: str, problem: Problem, defined: frozenset[str], callee: str | None) -> str:
    """The call as the test writes it, `candidate` renamed to the entry point; Exclude if it needs the test."""
    free = _free_names(call_node) - defined - set(dir(builtins)) - {callee}
    if free and "*" not in defined:
        raise Exclude("call_uses_test_variables", "test", ", ".join(sorted(free)))
    call = _segment(source, call_node)
    if problem.entry_point and callee:
        call = problem.entry_point + call[len(_segment(source, call_node.func)):]
    return call


def _is_equality(op: ast.cmpop, right: ast.expr) -> bool:
    # `is True/False/None` is as strict as ==, and stricter.
    return isinstance(op, ast.Eq) or (isinstance(op, ast.Is) and isinstance(right, ast.Constant)
                                      and right.value in (True, False, None))


def _is_direct_call(node: ast.expr, callee: str | None, defined: frozenset[str]) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    name = node.func.id
    # MBPP: a function the program defines, even one that shadows a builtin (MBPP 448 defines `sum`).
    return name == callee if callee else name in defined


def _segment(source: str, node: ast.AST) -> str:
    return _source_segment(source, node) or ast.unparse(node)


def _source_segment(source: str, node: ast.AST) -> str | None:
    """``ast.get_source_segment(source, node)``, with the source split into lines once per source: ast splits it
    again at every call, character by character, which cost more than the rest of reading HumanEval's tests."""
    lineno, end_lineno = node.lineno - 1, node.end_lineno  # type: ignore[attr-defined]
    col_offset, end_col_offset = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    if end_lineno is None or end_col_offset is None:
        return None
    lines = _source_lines(source)
    end_lineno -= 1
    if end_lineno == lineno:
        return lines[lineno].encode()[col_offset:end_col_offset].decode()
    first = lines[lineno].encode()[col_offset:].decode()
    last = lines[end_lineno].encode()[:end_col_offset].decode()
    return "".join([first, *lines[lineno + 1:end_lineno], last])


@lru_cache(maxsize=64)
def _source_lines(source: str) -> tuple[str, ...]:
    # ast's own split (only \r\n, \r and \n end a line), as get_source_segment makes it
    return tuple(ast._splitlines_no_ff(source))  # type: ignore[attr-defined]


def _free_names(node: ast.AST) -> set[str]:
    """Names a call reads, less those it binds itself (comprehension targets, lambda arguments)."""
    loaded, bound = set(), set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            (loaded if isinstance(child.ctx, ast.Load) else bound).add(child.id)
        elif isinstance(child, ast.arg):
            bound.add(child.arg)
    return loaded - bound


def _defined_names(program: str) -> frozenset[str]:
    """Names the program binds anywhere (an over-approximation; the sandbox has the last word)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add("*" if node.name == "*" else (node.asname or node.name).split(".")[0])
    return frozenset(names)


@lru_cache(maxsize=1 << 16)  # asked for every assert, and for every prediction (models repeat the calls)
def call_signature(call: str) -> str:
    """The call's syntax tree: equal for ``f([1,2])`` and ``f([1, 2])``, different for another call."""
    return ast.dump(ast.parse(call.strip(), mode="eval"))


def extract_rows(problems: Iterable[Problem], keep_docstrings: bool = False) -> dict[str, list[Row]]:
    """One row per assert of every problem (:func:`extract_pairs`), by the split it feeds, in source order."""
    rows: dict[str, list[Row]] = {}
    for problem in problems:
        rows.setdefault(problem.split, []).extend(extract_pairs(problem, keep_docstrings)[1])
    return {split: rows[split] for split in OUTPUT_SPLITS if split in rows}
