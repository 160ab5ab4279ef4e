"""One row-field reader: every source adapter, multiple-choice or open-ended, reads its columns through
``builders.core.sources.fields``, so a wrong field is reported the same way whatever the source; and no builder reads rows
with another builder's code (``math_mc`` took ``text_field`` from the GSM-MC builder)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from builders.core.errors import MalformedRow
from builders.core.sources import fields
from builders.core.sources.benchmarks import mmlu_record
from builders.core.sources.loading import RowContext
from builders.gsm_mc.benchmarks import gsm8k_item, platinum_item
from builders.math_mc.benchmarks import math_item
from builders.python_io.problems import humaneval_problem, mbpp_problem

BUILDERS = Path(__file__).resolve().parents[1] / "builders"

ROWS = {
    "mmlu": (mmlu_record, {"question": "Which?", "choices": ["a", "b"], "answer": 1, "subject": "anatomy"}),
    "gsm8k": (gsm8k_item, {"question": "How many?", "answer": "2 + 3 = 5\n#### 5"}),
    "gsm8k_platinum": (platinum_item, {"question": "How many?", "answer": "#### 5", "cleaning_status": "verified"}),
    "math": (math_item, {"problem": "What?", "solution": r"So $\boxed{3}$.", "type": "Algebra", "level": "Level 1"}),
    "humaneval": (humaneval_problem, {"task_id": "HumanEval/0", "prompt": "def f():\n", "canonical_solution": "    "
                                      "return 1\n", "test": "def check(c):\n    assert c() == 1\n", "entry_point": "f"}),
    "mbpp": (mbpp_problem, {"task_id": 2, "code": "def f():\n    return 1", "test_list": ["assert f() == 1"],
                            "test_setup_code": ""}),
}
# (source, field) of every text field the adapters require
REQUIRED_TEXT = [("mmlu", "question"), ("gsm8k", "question"), ("gsm8k", "answer"), ("gsm8k_platinum", "cleaning_status"),
                 ("math", "problem"), ("math", "solution"), ("humaneval", "task_id"), ("humaneval", "prompt"),
                 ("humaneval", "canonical_solution"), ("humaneval", "test"), ("humaneval", "entry_point"),
                 ("mbpp", "code")]
# text fields that must not be blank either: a blank question or solution says nothing
NON_EMPTY_TEXT = [("mmlu", "question"), ("gsm8k", "question"), ("gsm8k", "answer"), ("math", "problem"),
                  ("math", "solution")]


def read(source: str, row: dict):
    adapter, _ = ROWS[source]
    return adapter(row, RowContext(source, "dataset", "default", "test", 7, 0, {}))


def problem(source: str, row: dict) -> tuple[str, str]:
    with pytest.raises(MalformedRow) as error:
        read(source, row)
    return error.value.field, error.value.problem


def test_the_well_formed_rows_are_read():
    assert [type(read(source, row)).__name__ for source, (_, row) in ROWS.items()] == [
        "MCQRecord", "OpenItem", "OpenItem", "OpenItem", "Problem", "Problem"]


@pytest.mark.parametrize("source, name", REQUIRED_TEXT)
def test_a_missing_or_mistyped_text_field_reads_the_same_in_every_adapter(source, name):
    row = ROWS[source][1]
    assert problem(source, {k: v for k, v in row.items() if k != name}) == (name, "missing")
    assert problem(source, {**row, name: None}) == (name, "missing")
    assert problem(source, {**row, name: 3}) == (name, "expected a string, got int")
    assert problem(source, {**row, name: ["text"]}) == (name, "expected a string, got list")


@pytest.mark.parametrize("source, name", NON_EMPTY_TEXT)
def test_a_blank_text_field_is_named_empty(source, name):
    assert problem(source, {**ROWS[source][1], name: " \n"}) == (name, f"empty {name}")


@pytest.mark.parametrize("source, name", [("mmlu", "subject"), ("math", "type"), ("math", "level"),
                                          ("mbpp", "test_setup_code")])
def test_an_optional_text_field_may_be_absent_but_not_mistyped(source, name):
    row = ROWS[source][1]
    read(source, {k: v for k, v in row.items() if k != name})
    read(source, {**row, name: None})
    assert problem(source, {**row, name: 3}) == (name, "expected a string, got int")


def test_a_list_field_names_the_element_that_is_not_text():
    row = ROWS["mbpp"][1]
    assert problem("mbpp", {**row, "test_list": "assert f() == 1"}) == ("test_list", "expected a list of strings, got str")
    assert problem("mbpp", {**row, "test_list": ["assert f() == 1", 2]}) == ("test_list[1]", "expected a string, got int")
    assert read("mbpp", {**row, "test_list": []}).tests == ()  # no assert: excluded later as `no_asserts`
    assert problem("mmlu", {**ROWS["mmlu"][1], "choices": []}) == ("choices", "empty list")


def test_the_readers_name_the_row():
    with pytest.raises(MalformedRow, match=r"^malformed row gsm8k/test/7: field 'answer': missing$"):
        read("gsm8k", {"question": "How many?"})
    assert fields.integer({"n": 4}, "n", "r") == 4
    with pytest.raises(MalformedRow, match=r"^malformed row r: field 'n': expected an integer, got bool$"):
        fields.integer({"n": True}, "n", "r")


def test_no_builder_imports_another_builder():
    """A builder's modules import the core and the shared parts, never another builder's modules."""
    names = sorted(path.parent.name for path in BUILDERS.glob("*/builder.py"))
    crossing = []
    for name in names:
        for path in sorted((BUILDERS / name).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                modules = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                           else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                crossing += [f"{path.relative_to(BUILDERS)}: {module}" for module in modules
                             if module.split(".")[:1] == ["builders"] and module.split(".")[1:2] != [name]
                             and module.split(".")[1:2] and module.split(".")[1] in names]
    assert len(names) == 7 and crossing == []
