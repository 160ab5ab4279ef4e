"""MATH-MC: boxed golds, math-verify equivalence in workers, pools, sets, invariants, publishing."""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

import datasets
import pytest
from fixtures import outcome_rows, read_lm_eval_task

from builders.core.errors import ValidationFailed
from builders.core.items.record import MCQRecord
from builders.core.pipeline import cli
from builders.core.validation.validate import validate
from builders import math_mc
from builders.math_mc import benchmarks, cues, equivalence, forms, parses, plain
from builders.math_mc import transform as math_transform

MATH_TEST = [
    {"problem": r"Compute $\frac{2}{4}$.", "level": "Level 1", "type": "Prealgebra",
     "solution": r"Divide: $\frac{2}{4} = \boxed{\frac{1}{2}}$."},
    {"problem": r"Solve $x + 1 = 4$.", "level": "Level 1", "type": "Algebra", "solution": r"So $x = \boxed{3}$."},
    {"problem": "An ambiguous one.", "level": "Level 2", "type": "Algebra",
     "solution": r"Either $\boxed{3}$ or $\boxed{4}$."},
    {"problem": r"Compute $3/2$.", "level": "Level 1", "type": "Prealgebra",
     "solution": r"It is $\boxed{\frac32}$, that is $\boxed{\frac{3}{2}}$."},
    {"problem": "No box at all.", "level": "Level 1", "type": "Algebra", "solution": "The answer is 5."},
    {"problem": r"Where is $f(x) = \sqrt{x} / \sqrt{1 - x}$ defined?", "level": "Level 3", "type": "Algebra",
     "solution": r"The domain is $\boxed{[0, 1)}$."},
]
PREDICTIONS = [  # question_index, model, output
    (0, "a", r"So $\boxed{0.5}$."), (0, "b", r"$\boxed{\dfrac{1}{2}}$"), (0, "c", r"$\boxed{2}$"),
    (0, "d", r"$\boxed{1/4}$"), (0, "e", r"$\boxed{0.25}$"), (0, "f", "I give up."),
    (0, "g", "Final Answer: The final answer is $3$. I hope it is correct."),
    (1, "a", r"$\boxed{3}$"), (1, "b", r"$\boxed{x=3}$"), (1, "c", r"$\boxed{4}$"), (1, "d", r"$\boxed{5}$"),
    (1, "e", r"$\boxed{6}$"),
    (3, "a", r"$\boxed{1.5}$"), (3, "b", r"$\boxed{2}$"),
    (5, "a", r"$\boxed{[0,1]}$"), (5, "b", r"$\boxed{(0,1)}$"), (5, "c", r"$\boxed{1}$"), (5, "d", r"$\boxed{[0, 1)}$"),
    (5, "e", r"$\boxed{[1,2)}$"),  # "1", one value beside an interval, is left out
]


@pytest.fixture(autouse=True)
def own_math_verify_answers(monkeypatch, tmp_path):
    """Each test's math-verify tasks run: the answers another test's tasks kept in the cache would answer them."""
    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "cache"))


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    return {"source": write_jsonl(tmp_path / "math" / "test.jsonl", MATH_TEST).parent,
            "predictions": write_jsonl(tmp_path / "preds.jsonl",
                                       [{"question_index": i, "model": m, "output": o} for i, m, o in PREDICTIONS])}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = cli.builder_parser(math_mc.BUILDER)
    return parser.parse_args(argv)


def made(args: argparse.Namespace, options_args: argparse.Namespace | None = None):
    """The build of ``args``'s source with the options of ``options_args`` (``args``'s by default), unvalidated."""
    options = math_mc.BUILDER.options_of(options_args or args)
    return math_mc.BUILDER.make_build(cli.load(math_mc.BUILDER, args, options), options)


def test_golds_pools_sets_and_invariants(files, tmp_path):
    args = parse(["--source", str(files["source"]), "--predictions", str(files["predictions"]), "--sets", "2",
                  "--pool", str(tmp_path / "pool.jsonl"), "--equivalence-timeout", "20", "--equivalence-workers", "2"])
    result = made(args)
    assert sorted((e.id, e.reason) for e in result.exclusions.entries) == [
        ("math/test/2", "ambiguous_gold"), ("math/test/3", "pool_too_small"), ("math/test/4", "no_gold_answer")]
    records = result.configs["set_1"]["test"]
    assert [r.id for r in records] == ["math/test/0", "math/test/1", "math/test/5"]
    half, three, interval = records
    assert sorted(half.choices) == ["1/4", "2", "3", r"\frac{1}{2}"] and half.gold == r"\frac{1}{2}"
    assert dict(zip(half.choices, half.metadata["choice_models"], strict=True)) == \
        {"1/4": ["d", "e"], "2": ["c"], "3": ["g"], r"\frac{1}{2}": []}
    assert sorted(three.choices) == ["3", "4", "5", "6"]
    assert sorted(interval.choices) == ["(0,1)", "[0,1)", "[0,1]", "[1,2)"] and interval.gold == "[0,1)"  # one spacing
    assert (half.subject, half.metadata["level"], half.metadata["gold_text"]) == ("Prealgebra", "Level 1", r"\frac{1}{2}")
    report = {r["question_id"]: r for r in map(json.loads, (tmp_path / "pool.jsonl").read_text().splitlines())}
    assert sorted(report) == ["math/test/0", "math/test/1", "math/test/3", "math/test/5"]
    assert report["math/test/0"]["correct"] == {"a": 1, "b": 1} and report["math/test/0"]["invalid"] == {"f": 1}
    assert (report["math/test/0"]["merges"], report["math/test/0"]["gold_merges"]) == (2, 1)
    assert report["math/test/0"]["candidates"][0] == {"text": "1/4", "count": 2, "models": ["d", "e"], "variants": ["0.25"]}
    assert report["math/test/1"]["correct"] == {"a": 1, "b": 1}  # x=3 is the gold 3
    assert result.release.statistics["Gold answers"].row("test") == {
        "split": "test", "source rows": 6, "no boxed gold": 1, "letter answer": 0, "ambiguous gold": 1,
        "usable gold": 4, "of which multi-value": 0, "paper (usable / rows)": "4.9K / 5K"}
    validate(result)
    # A distractor equivalent to another option must be caught by the builder's own check.
    choices = list(half.choices)
    choices[choices.index("2")] = "0.25"
    result.configs["set_1"]["test"][0] = half.replace(choices=choices)
    with pytest.raises(ValidationFailed, match="options_not_equivalent"):
        validate(result)


@pytest.mark.slow
def test_publish_and_load_back(local_hub, files, tmp_path):
    repo = "mcqforge/math-mc-test"
    assert math_mc.main(["--source", str(files["source"]), "--predictions", str(files["predictions"]), "--sets", "2",
                         "--output", str(tmp_path / "out"), "--push", repo, "--version", "1.0.0",
                         "--log-level", "WARNING"]) == 0
    remote = datasets.load_dataset(repo, "set_0", revision="v1.0.0")["test"]
    local = datasets.load_dataset(str(tmp_path / "out"), "set_0")["test"]
    assert remote["id"] == local["id"] == ["math/test/0", "math/test/1", "math/test/5"]
    assert remote["choices"] == local["choices"]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "ambiguous_gold" in card and "math-verify" in card
    # every pool holds exactly the 3 distractors a set shows: the sets are no independent draws for any item
    text = " ".join(card.split())
    assert "3 of 3 items (100.0%) have the same options in every set (0 of them in the same order too)" in text and "the options differ between sets" not in text
    assert outcome_rows(card) == [  # 6 rows in = 3 altered + 3 excluded, each by the step that left it out
        ("all 3 configs", "test", "altered", "–", 3), ("all 3 configs", "test", "excluded", "ambiguous_gold", 1),
        ("all 3 configs", "test", "excluded", "no_gold_answer", 1), ("all 3 configs", "test", "excluded", "pool_too_small", 1)]



# ---- no second correct option, no typesetting tell ------------------------------------------

# Each released defect: the gold as MATH boxes it, and a model's answer that is the same answer spelled
# otherwise (released as a second option), plus two answers that really differ.
DEFECTS = [
    (r"\text{odd}", "odd", [r"\text{even}", r"\text{neither}"]),
    (r"\text{east}", "East", [r"\text{west}", r"\text{north}"]),
    (r"\text{4:30 p.m.}", r"4:30 \text{ p.m.}", [r"\text{5:30 p.m.}", "6"]),
    (r"\text{(E)}", r"\text{(E) Cylinder}", [r"\text{(A)}", r"\text{(C) Cone}"]),
    ("4", r"h = 4\, in", ["5", r"h = 8\, in"]),
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}",
     r"\operatorname{proj}_{\mathbf{w}} \mathbf{v} = \begin{pmatrix} 1 \\ 2 \end{pmatrix}",
     [r"\begin{pmatrix} 2 \\ 1 \end{pmatrix}", r"\begin{pmatrix} 1 \\ 3 \end{pmatrix}"]),
]


@pytest.mark.parametrize("gold, same, _", DEFECTS)
def test_released_duplicates_have_one_surface_key_and_one_normal_form(gold, same, _):
    assert forms.surface_key(gold) == forms.surface_key(same)
    assert forms.option_form(gold) == forms.option_form(same)


def test_normal_form_drops_the_marks_that_singled_out_the_gold():
    spellings = {r"5\text{ cm}": "5", r"440\text{ cm}^2": "440", r"30^\circ": "30", r"25\%": "25", r"\$15,\!000": "15000",
             "x = 3": "3", r"k(x) = x^2": "x^2", r"\theta = 30^\circ": "30", "a = 2, b = 3": "2,3",
             r"C(5, 2) = \frac{5!}{2!3!} = 10": "10", r"19 \text{ and }43": "19,43", r"\text{Sunday}": "sunday",
             r"x \le 3": r"x\le3", "6, -2": "6,-2", "y = 2x + 3": "2x+3", r"\frac{3}{4}\pi\text{ inches}": r"\frac{3}{4}\pi",
             "2m": "2m", r"45^\circ, 135^\circ": "45, 135", r"14,\!400": "14400",
             "5x - 7y + 4 = 0": "5x-7y+4=0", "x^2 + y^2 = 25": "x^2+y^2=25"}
    assert {text: forms.option_form(text) for text in spellings} == spellings
    assert forms.surface_key("(C)") == forms.surface_key("C") == "c"
    assert forms.surface_key("x") != forms.surface_key("y")
    assert forms.surface_key("5x - 7y + 4 = 0") != forms.surface_key("10x - 6y - 17 = 0")  # not both "0"


def test_the_fast_path_never_settles_symbolic_pairs():
    """The fingerprint valued o*d*d and \text{odd} differently, yet math-verify calls them equal."""
    from math_verify import parse, verify

    for a, b in [("odd", r"\text{odd}"), (r"\text{east}", "East")]:
        left, right = parse(f"${a}$"), parse(f"${b}$")
        assert verify(left, right) and verify(right, left)
        assert equivalence._fingerprint(left) is None or equivalence._fingerprint(right) is None
        assert not equivalence.clearly_different(equivalence._fingerprint(left), equivalence._fingerprint(right))
    assert equivalence._fingerprint(parse("$2^{10}$")) == 1024


@pytest.fixture
def defect_files(tmp_path) -> dict[str, Path]:
    rows = [{"problem": f"Defect {i}?", "level": "Level 3", "type": "Precalculus",
             "solution": f"So the answer is $\\boxed{{{gold}}}$."} for i, (gold, _, _) in enumerate(DEFECTS)]
    predictions = []
    for i, (_, same, others) in enumerate(DEFECTS):
        for model, answer in zip("abc", [same, *others], strict=True):
            predictions.append({"question_index": i, "model": model, "output": f"$\\boxed{{{answer}}}$"})
    return {"source": write_jsonl(tmp_path / "math" / "test.jsonl", rows).parent,
            "predictions": write_jsonl(tmp_path / "preds.jsonl", predictions)}


def test_no_released_item_holds_a_second_correct_option(defect_files, tmp_path):
    args = parse(["--source", str(defect_files["source"]), "--predictions", str(defect_files["predictions"]),
                  "--choices", "3", "--sets", "2", "--pool", str(tmp_path / "pool.jsonl"),
                  "--equivalence-timeout", "20", "--equivalence-workers", "2"])
    result = made(args)
    records = result.configs["set_0"]["test"]
    # The lettered answer "(E)" is no item of a release that letters its options.
    assert [(e.id, e.reason) for e in result.exclusions.entries] == [("math/test/3", "letter_answer")]
    assert [r.id for r in records] == [f"math/test/{i}" for i in (0, 1, 2, 4, 5)]
    assert [sorted(r.choices) for r in records] == [
        ["even", "neither", "odd"], ["east", "north", "west"], ["4:30 p.m", "5:30 p.m", "6"],
        ["4", "5", "8"], [r"\begin{pmatrix}1\\2\end{pmatrix}", r"\begin{pmatrix}1\\3\end{pmatrix}",
                          r"\begin{pmatrix}2\\1\end{pmatrix}"]]
    report = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [r["correct"] for r in report] == [{"a": 1}] * 5  # each released duplicate counts as correct
    assert result.release.statistics["Surface-form cues"].row("set_0")["items with a cue"] == 0
    validate(result)
    # The plain math-verify check, which shares no code with the builder's decision, finds a planted duplicate.
    planted = records[0].replace(choices=tuple(r"\text{odd}" if c == "even" else c for c in records[0].choices))
    result.configs["set_0"]["test"][0] = planted
    with pytest.raises(ValidationFailed, match="plain_math_verify_distinct"):
        validate(result)


def test_plain_check_judges_every_shown_pair_both_ways():
    pairs = [("odd", r"\text{odd}"), ("x = 3", "3"), ("3", "x = 3"), ("4", "5"), (r"\frac{1}{2}", "0.5"),
             ("0.377", r"\frac{193}{512}"), (r"\sqrt{2}", "1.41"), ("0.38", "0.377"), ("0.4", r"\frac{1}{3}")]
    verdicts = plain.judge_pairs(pairs, workers=2, timeout=20)
    assert [verdicts[p] for p in pairs] == ["equal", "equal", "equal", "different", "equal",
                                            "rounded", "rounded", "rounded", "different"]


SHARED_READING_PAIRS = [("odd", r"\text{odd}"), ("x = 3", "3"), (r"\frac{1}{2}", "0.5"), ("0.377", r"\frac{193}{512}"),
                        (r"\sqrt{2}", "1.41"), ("[0, 1)", "(0, 1)"), ("6, -2", "-2, 6"), ("y = 2x + 3", "2x + 3"),
                        (r"\begin{pmatrix}1\\2\end{pmatrix}", "(1, 2)"), (r"2\pi", r"\pi + \pi"), ("4", "5"),
                        (r"\frac{3}{4}", "0.75"), ("x^2 + 1", "1 + x^2"), (r"\{1, 2\}", r"\{2, 1\}")]


def test_the_plain_check_on_the_builders_workers_judges_as_on_its_own(monkeypatch, tmp_path):
    """The validator reads its options from the parses the builder's workers made (one memo per worker, the same
    math-verify call): its verdicts are those of a pool of its own, that parses everything afresh."""
    alone = plain.judge_pairs(SHARED_READING_PAIRS, workers=2, timeout=20)
    engine = equivalence.MathEquivalence(workers=2, timeout=20)
    engine.prepare([list(pair) for pair in SHARED_READING_PAIRS])
    assert engine.stats.answers > 10  # the builder's workers parsed the options before the check asks about them
    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "shared"))  # not the answers the check kept alone
    shared = plain.judge_pairs(SHARED_READING_PAIRS, timeout=20, pool=engine.pool)
    assert shared == alone
    assert sorted(set(alone.values())) == ["different", "equal", "rounded"]
    assert engine.pool._workers == []  # the check, the last to need them, closed the build's workers


def test_a_memoised_parse_is_math_verifys_own():
    from math_verify import parse
    from builders.math_mc import parses

    for text in {text for pair in SHARED_READING_PAIRS for text in pair}:
        assert parses.parsed(text, 5) == (parse(f"${text}$", parsing_timeout=5), False)
        assert parses.parsed(text, 5)[0] is parses.parsed(text, 5)[0]


def _record(choices, answer) -> MCQRecord:
    return MCQRecord(id="q", question="?", choices=tuple(choices), answer=answer, source="s", source_config=None,
                     source_split="test", source_index=0)


def test_form_cue_baseline_and_count():
    assert cues.FORM_CUE.predict(_record(["x = 3", "4"], 1)) == 0
    assert cues.FORM_CUE.predict(_record(["3", "4"], 1)) is None
    assert cues.FORM_CUE.predict(_record([r"30^\circ", "40", "50"], 0)) == 0
    assert cues.FORM_CUE.predict(_record([r"30\%", r"40\%", "50"], 0)) == 2
    assert cues.form_cue(_record(["x = 3", "4"], 0)) == "equation"
    assert cues.form_cue(_record(["x = 3", "y = 4"], 0)) is None


def test_multi_value_golds_are_kept_and_counted_empty_boxes_are_not(tmp_path):
    rows = [{"problem": "Roots?", "level": "Level 2", "type": "Algebra", "solution": r"$\boxed{6, -2}$"},
            {"problem": "Empty?", "level": "Level 2", "type": "Algebra", "solution": r"$\boxed{\text{}}$"},
            {"problem": "Pair?", "level": "Level 2", "type": "Algebra", "solution": r"$\boxed{(1, 2)}$"}]
    predictions = [{"question_index": 0, "model": m, "output": f"$\\boxed{{{a}}}$"}
                   for m, a in [("a", "-2, 6"), ("b", "6, 2"), ("c", "x = 6, x = -2"), ("d", "2, -6"), ("e", "6")]]
    source = write_jsonl(tmp_path / "math" / "test.jsonl", rows).parent
    args = parse(["--source", str(source), "--predictions", str(write_jsonl(tmp_path / "p.jsonl", predictions)),
                  "--choices", "3", "--sets", "1", "--equivalence-timeout", "20", "--equivalence-workers", "2"])
    result = made(args)
    assert sorted((e.id, e.reason) for e in result.exclusions.entries) == [
        ("math/test/1", "no_gold_answer"), ("math/test/2", "no_predictions")]
    # "6", one value beside the two roots, is no distractor
    assert sorted(result.configs["set_0"]["test"][0].choices) == ["2,-6", "6,-2", "6,2"]
    assert result.release.statistics["Gold answers"].row("test")["of which multi-value"] == 1


def test_sample_builds_offline_with_lm_eval_tasks_by_type(sample_releases):
    out = sample_releases.release("math_mc")
    test = datasets.load_dataset(str(out), "set_0")["test"]
    assert len(test) == 12 and sorted(set(test["subject"])) == ["Algebra", "Prealgebra"]
    gold_of = {r["id"]: r["choices"][r["answer"]] for r in test}
    assert (gold_of["math/test/3"], gold_of["math/test/6"], gold_of["math/test/10"]) == ("odd", "36", "12")
    tasks = sorted(p.name for p in (out / "lm_eval").glob("math_mc_set_0*.yaml"))
    assert tasks == ["math_mc_set_0.yaml", "math_mc_set_0_algebra.yaml", "math_mc_set_0_prealgebra.yaml"]
    task = read_lm_eval_task(out / "lm_eval" / "math_mc_set_0_algebra.yaml")
    assert "about high school math." in task["description"] and task["process_docs"] == "utils.only_algebra"
    card = (out / "README.md").read_text()
    assert "Surface-form cues" in card and "form_cue" in card
    # The card's counts are this 12-row build's, never MATH test's "14 ambiguous and 76 multi-value".
    assert "In this build's `test` split, 0 of 12 golds are ambiguous and 1 of the usable golds list several\n" \
           "values; leaving out both gives 11." in card
    assert "test: 12 rows less 0 ambiguous and 1 multi-value golds is 11." in card
    assert not re.search(r"4,910|\b76\b|\b14 ambiguous|within 4 of", card)


def test_review_defects_thousands_braces_phantom_boxes_and_refusals(tmp_path):
    """Regressions from the real-data review: the gold "10{,}000" kept its braced separator beside models'
    "9999" (the one option with `{,}`, 1 of the 7 real 4-option items); a solution's `\\boxed{\\phantom{2}}`
    blank made its gold "4" ambiguous; refusals ("Insufficient Information", "can't be determined") and an
    unfinished "The remainder is" became distractors; "no real values of $k$" kept a lone `$`."""
    rows = [{"problem": "Compute 49994/7 + 20006/7.", "level": "Level 1", "type": "Prealgebra",
             "solution": r"It is $\boxed{10{,}000}$."},
            {"problem": "What number goes in the box?", "level": "Level 2", "type": "Algebra",
             "solution": r"So \[-3 = -7 + \boxed{\phantom{2}}.\] The number is $\boxed{4}$."}]
    outputs = [(0, "a", r"$\boxed{9999}$"), (0, "b", r"$\boxed{9998}$"), (0, "c", r"$\boxed{10,000}$"),
               (0, "d", r"$\boxed{\text{Insufficient Information}}$"), (0, "e", r"$\boxed{9{,}999}$"),
               (0, "f", r"$\boxed{9999 \frac{6}{7}}$"),
               (1, "a", r"$\boxed{3}$"), (1, "b", r"$\boxed{\text{The remainder is }} 5$"),
               (1, "c", r"\boxed{no real values of $k$}"), (1, "d", r"$\boxed{\text{It can't be determined.}}$"),
               (1, "e", r"$\boxed{5}$")]
    assert forms.option_form(r"90{,}900{,}909") == "90900909"
    assert forms.option_form("no real values of $k$") == "no real values of k"
    assert forms.option_form("the answer is 900000000") == "900000000"
    cases = r"x = \begin{cases} p & \text{if } p \neq r \\ q & \text{if } q \neq r \end{cases}"
    assert forms.option_form(cases) == cases  # unwrapped, "p & if p" was read as the product i*f*p
    assert [forms.non_answer(forms.option_form(t)) for t in
            [r"\text{Insufficient Information}", "The maximum angle can't be determined.", r"\text{The remainder is }",
             "No Solution", "undefined", "odd"]] == [True, True, True, False, False, False]
    source = write_jsonl(tmp_path / "math" / "test.jsonl", rows).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"question_index": i, "model": m, "output": o}
                                                     for i, m, o in outputs])
    args = parse(["--source", str(source), "--predictions", str(predictions), "--sets", "2", "--choices", "3",
                  "--pool", str(tmp_path / "pool.jsonl"), "--equivalence-timeout", "20", "--equivalence-workers", "2"])
    result = made(args)
    assert result.exclusions.entries == []
    big, box = result.configs["set_0"]["test"]
    assert big.gold == "10000" and box.gold == "4"
    report = {r["question_id"]: r for r in map(json.loads, (tmp_path / "pool.jsonl").read_text().splitlines())}
    assert report["math/test/0"]["invalid"] == {"d": 1} and report["math/test/0"]["correct"] == {"c": 1}
    assert sorted(c["text"] for c in report["math/test/0"]["candidates"]) == ["9998", "9999", r"9999\frac{6}{7}"]
    assert report["math/test/1"]["invalid"] == {"b": 1, "d": 1}
    assert sorted(c["text"] for c in report["math/test/1"]["candidates"]) == ["3", "5", "no real values of k"]
    assert all("{,}" not in c and "$" not in c for r in result.configs["set_1"]["test"] for c in r.choices)
    validate(result)


def test_a_point_as_a_tuple_is_the_column_vector_gold(tmp_path):
    """Regression (MATH test 4662): the gold \\begin{pmatrix} -3 \\\\ -2 \\\\ 9 \\end{pmatrix} and a model's
    (-3, -2, 9) were shown as two options; math-verify calls a matrix and a tuple different, so the surface key
    now reads a column vector as the tuple of its entries."""
    vector = r"\begin{pmatrix} -3 \\ -2 \\ 9 \end{pmatrix}"
    assert forms.surface_key(vector) == forms.surface_key("(-3, -2, 9)") == forms.surface_key(
        r"\left( -3, -2, 9 \right)") == "(-3,-2,9)"
    assert forms.surface_key(r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}") != forms.surface_key("(1, 2, 3, 4)")
    rows = [{"problem": "Find the point of intersection.", "level": "Level 4", "type": "Precalculus",
             "solution": rf"The point is $\boxed{{{vector}}}.$"}]
    outputs = [("a", r"$\boxed{(-3, -2, 9)}$"), ("b", r"$\boxed{(3, 2, 9)}$"),
               ("c", r"$\boxed{\begin{pmatrix} -3 \\ -2 \\ 8 \end{pmatrix}}$"), ("d", r"$\boxed{(0, 0, 0)}$")]
    source = write_jsonl(tmp_path / "math" / "test.jsonl", rows).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"question_index": 0, "model": m, "output": o} for m, o in outputs])
    args = parse(["--source", str(source), "--predictions", str(predictions), "--sets", "3", "--choices", "3",
                  "--pool", str(tmp_path / "pool.jsonl"), "--equivalence-timeout", "20", "--equivalence-workers", "2"])
    result = made(args)
    [row] = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert row["correct"] == {"a": 1} and row["pool_size"] == 3
    assert all("(-3, -2, 9)" not in r.choices for c in result.configs.values() for r in c["test"])
    validate(result)


def test_an_escaped_dollar_in_minervas_final_answer_line():
    """Regression (MATH test 3823, minerva-540b): "The final answer is $\\$3.25$" was read up to the escaped
    dollar, giving the option "\\" beside the gold 3.25 (the model was right)."""
    output = "so it costs $25\\\n\nFinal Answer: The final answer is $\\$3.25$. I hope it is correct."
    assert forms.extract_answer(output) == r"\$3.25"
    assert forms.option_form(forms.extract_answer(output)) == "3.25"
    assert [forms.non_answer(t) for t in ["\\", " . ", r"\{\}", r"\emptyset", "0"]] == [True, True, False, False, False]
    assert forms.option_form(";") == ";" and math_transform._extract("The final answer is $;$.") is None


def test_a_source_row_with_a_non_text_type_or_level_is_excluded_with_its_field(tmp_path):
    """Regression: a row whose `type` was a list kept the item with no subject (so in no per-type lm-eval
    task) and said nothing; it is a malformed row now, named by field, or one error line with --strict."""
    rows = [{"problem": "P?", "level": "Level 1", "type": "Algebra", "solution": r"$\boxed{3}$"},
            {"problem": "P2?", "level": "Level 1", "type": ["Algebra"], "solution": r"$\boxed{3}$"},
            {"problem": "P3?", "level": 3, "type": "Algebra", "solution": r"$\boxed{3}$"},
            {"problem": "P4?", "solution": r"$\boxed{3}$"}]  # both optional
    source = write_jsonl(tmp_path / "math" / "test.jsonl", rows).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"question_index": i, "model": "a", "output": r"$\boxed{4}$"}
                                                     for i in range(4)])
    argv = ["--source", str(source), "--predictions", str(predictions), "--sets", "1", "--choices", "2",
            "--max-excluded", "0.9", "--equivalence-workers", "1"]
    result = made(parse(argv))
    assert sorted((e.id, e.reason, e.field) for e in result.exclusions.entries) == [
        ("math/test/1", "malformed_row", "type"), ("math/test/2", "malformed_row", "level")]
    assert [(r.id, r.subject) for r in result.configs["set_0"]["test"]] == [("math/test/0", "Algebra"),
                                                                            ("math/test/3", None)]
    assert math_mc.main([*argv, "--strict", "--output", str(tmp_path / "out")]) == 2



def _forget_forms() -> None:
    """The forms are memoised per text: a test that blinds one of their rules must not be answered from forms made
    before (nor leave its blinded forms to the tests after it, :func:`_fresh_forms`)."""
    forms.option_form.cache_clear()
    forms.surface_key.cache_clear()


@pytest.fixture(autouse=True)
def _fresh_forms():
    _forget_forms()
    yield
    _forget_forms()


# ---- one normal form, answers of the key's kind, no rounded key, no lettered answers --------

# Real MATH test items (original row in the comment) with a real model's answer that gave the distractor away or
# was a second correct option. Problems are cut to their first 160 characters; where the real model's answer is
# left out, a made-up model "z" gives a plain wrong answer so that the item is still released with 2 options.
REAL_ITEMS = [  # (problem, boxed golds, [(model, boxed answer)])
    ("We have a triangle $\\triangle ABC$ and a point $K$ on $BC$ such that $AK$ is an altitude to $\\triangle ABC$.",
     [r"\sqrt{70}"], [("gpt-4-0314", r"AB = \sqrt{65}")]),  # 1740
    ("Let\n\\[f(x) = \\frac{-px - 3}{-qx + 3},\\]and let $g(x)$ be the inverse of $f(x).$",
     [r"\frac{36}{11}"], [("gpt-4-0314", r"p + q = \frac{356}{121}")]),  # 2837
    ("The $XYZ$ company has to pay $\\$5,000$ for rent each month.", ["7945"],
     [("minerva-540b", r"7,928.67\approx 7,929")]),  # 758
    ("Square $ABCD$ has side lengths of 13 units.", [r"\frac{25}{13}", r"1\frac{12}{13}"],
     [("gpt-4-0314", "ED = 8")]),  # 1984
    ("How many five-digit zip codes exist such that each of the first three digits is greater than 4?", ["12500"],
     [("gpt-4-0314", r"5^3 * 10^2 = 125000")]),  # 1331
    ("A sphere is inscribed inside a hemisphere of radius 2.  What is the volume of this sphere?", [r"\frac{4}{3}\pi"],
     [("gpt-4-0314", r"V = \frac{32}{3} \pi")]),  # 2043
    ("Find $\\frac{1}{a-1}+\\frac{1}{b-1},$ where $a$ and $b$ are the roots of the quadratic equation $2x^2-7x+2 = 0.$",
     ["-1"], [("gpt-4-0314", r"-1 + \frac{\sqrt{33}}{3}")]),  # 151
    ("At which point do the lines $s=9-2t$ and $t=3s+1$ intersect?", ["(1,4)"],
     [("gpt-4-0314", r"(\frac{7}{5}, \frac{12}{5})")]),  # 944
    ("Find all the integer roots of\n\\[x^4 + 5x^3 + 9x^2 - x - 14 = 0.\\]", ["-2,1"],
     [("minerva-540b", "-1, -2, 1")]),  # 2186
    ("Find a quadratic with real coefficients and quadratic term $x^2$ that has $5-4i$ as a root.", ["x^2-10x+41"],
     [("gpt-4-0314", "x^2 - 10x + 9 = 0"), ("minerva-540b", "x^2-10x+41"), ("z", "x^2-10x+29")]),  # 2787
    ("Let $P(x)$ and $Q(x)$ be distinct, non-constant polynomials such that\n\\[P(Q(x)) = P(x) Q(x)\\]for all $x.$",
     ["x^2"], [("gpt-4-0314", "Q(x) = c"), ("z", "x^3")]),  # 2783
    ("The complex numbers $z$ and $w$ satisfy $z^{13} = w,$ $w^{11} = z,$", ["71"],
     [("minerva-540b", "n"), ("z", "47")]),  # 4821
    ("The roots of $x^3 + Px^2 + Qx - 19 = 0$ are each one more than the roots of $x^3 - Ax^2 + Bx - C = 0.$", ["18"],
     [("gpt-4-0314", "Q + 3P + 20"), ("z", "20")]),  # 2361
    ("Let $f(x) = x^3 + 3x^2 + 1.$  Enter the ordered pair $(a,b).$", ["(-2,1)"],
     [("gpt-4-0314", r"\text{No Solution}"), ("z", "(2,1)")]),  # 2816
    ("How many ordered triplets $(a,b,c)$ of rational numbers are there where $a,b,c$ are the roots of "
     "$x^3 + ax^2 + bx + c = 0?$", ["3"], [("gpt-4-0314", r"\text{Infinite}"), ("z", "1")]),  # 2973
    ("Let $0, a, b, c$ be the vertices of a square in counterclockwise order.  Compute\n\\[\\frac{ac + b^2}{ab}.\\]",
     [r"\frac{3}{2} + \frac{3}{2} i"],
     [("gpt-4-0314", r"\text{Undefined}"), ("z", r"\frac{3}{2} - \frac{3}{2} i")]),  # 4669
    ("200 points are equally spaced on the circumference of a circle.  How many squares can be formed with 4 of the "
     "200 points as vertices?", ["50"], [("gpt-4-0314", r"\frac{200 \times 198 \times 196}{4}"), ("z", "100")]),  # 1279
    ("Let\n\\[\\sum_{n = 0}^{123456789} \\frac{3n^2 + 9n + 7}{(n^2 + 3n + 2)^3} = \\frac{a}{b},\\]Find $b - a.$", ["1"],
     [("gpt-4-0314", "2(123456790)^3 + 7"), ("gpt-4-0613", "1"), ("z", "2")]),  # 2243
    ("We flip a fair coin 10 times.  What is the probability that we get heads in at least 6 of the 10 flips?",
     [r"\frac{193}{512}"], [("gpt-4-0314", r"P(\geq 6; 10, 0.5) = 0.377"), ("z", r"\frac{193}{1024}")]),  # 1291
    ("A birdbath is designed to overflow so that it will be self-cleaning.  Provide the correct letter (A, B, C, D, "
     "or E) answer.", ["A"], [(f"qwen2.5-math-instruct#{k}", "C" if k == 3 else "A") for k in range(8)] + [("z", "B")]),
]  # 4203
NORMALISED, KINDS = slice(0, 9), slice(9, None)  # the items whose distractor is respelled; those whose is dropped
RELEASED = [  # (gold, the one distractor) per released item, in order; item 19 (a letter answer) is excluded
    (r"\sqrt{70}", r"\sqrt{65}"), (r"\frac{36}{11}", r"\frac{356}{121}"), ("7945", "7929"), (r"1\frac{12}{13}", "8"),
    ("12500", "125000"), (r"\frac{4}{3}\pi", r"\frac{32}{3}\pi"), ("-1", r"-1+\frac{\sqrt{33}}{3}"),
    ("(1,4)", r"(\frac{7}{5},\frac{12}{5})"), ("-2,1", "-1,-2,1"), ("x^2-10x+41", "x^2-10x+29"), ("x^2", "x^3"),
    ("71", "47"), ("18", "20"), ("(-2,1)", "(2,1)"), ("3", "1"),
    (r"\frac{3}{2}+\frac{3}{2}i", r"\frac{3}{2}-\frac{3}{2}i"),
    ("50", "100"), ("1", "2"), (r"\frac{193}{512}", r"\frac{193}{1024}"),
]


def build_real_items(tmp_path: Path, items: slice = slice(None), choices: int = 2, chosen: list | None = None):
    chosen = REAL_ITEMS[items] if chosen is None else chosen
    rows = [{"problem": problem, "level": "Level 4", "type": "Algebra",
             "solution": " ".join(f"So $\\boxed{{{gold}}}$." for gold in golds)} for problem, golds, _ in chosen]
    predictions = [{"question_index": i, "model": model, "output": f"The answer is $\\boxed{{{answer}}}$."}
                   for i, (_, _, answers) in enumerate(chosen) for model, answer in answers]
    source = write_jsonl(tmp_path / "math" / "test.jsonl", rows).parent
    args = parse(["--source", str(source), "--predictions", str(write_jsonl(tmp_path / "p.jsonl", predictions)),
                  "--choices", str(choices), "--sets", "1", "--equivalence-timeout", "20",
                  "--equivalence-workers", "2"])
    return made(args)


def test_real_items_are_shown_in_one_normal_form_with_answers_of_the_keys_kind(tmp_path):
    """Regressions on real items: distractors carried "=" ("AB = \\sqrt{65}"), "\\approx" and a thousands comma,
    a space that the compact gold lacked, free variables ("c", "n", "Q + 3P + 20"), words ("No Solution",
    "Infinite", "Undefined"), arithmetic left undone, the gold rounded ("0.377" beside 193/512); a lettered answer
    ("A" beside "C") was released under letter scoring."""
    result = build_real_items(tmp_path)
    assert [(e.id, e.reason) for e in result.exclusions.entries] == [("math/test/19", "letter_answer")]
    records = result.configs["set_0"]["test"]
    assert [(r.choices[r.answer], r.choices[1 - r.answer]) for r in records] == RELEASED
    left_out = {row["candidate"]: row["left out"] for row in result.release.statistics["Candidates left out"].records()}
    assert {reason: n for reason, n in left_out.items() if n} == {
        forms.KIND_REASONS["equation"]: 1, forms.KIND_REASONS["variable"]: 3, forms.KIND_REASONS["words"]: 3,
        forms.KIND_REASONS["undone"]: 2, forms.KIND_REASONS["decimal"]: 1}  # "0.377", also the gold rounded
    options = [c for r in records for c in r.choices]
    assert not [c for c in options if re.search(r"=|\\approx| |[0-9],[0-9]{3}(?![0-9])", c)]
    report = validate(result)
    assert {c.name for c in report.checks} >= {"relation_only_in_some", "thousands_separator", "words_or_variables",
                                               "arithmetic_left_undone", "letter_option", "one_spacing"}


BLINDED = {  # the builder's rules switched off, on which items, with how many options -> the checks that refuse
    # 3 options: each item shows its gold, its dropped real answer and the made-up one.
    "kind and rounding": ({"kind_mismatch": lambda answer, key: None, "rounds_to_gold": lambda gold, text, eq: False,
                           "letter_answer": lambda text: False}, KINDS, 3,
                          ["arithmetic_left_undone", "decimal_beside_exact", "letter_option", "number_of_values",
                           "plain_math_verify_distinct", "relation_only_in_some", "words_or_variables"]),
    "normal form": ({"kind_mismatch": lambda answer, key: None, "compact_spacing": lambda text: text,
                     "_last_side": lambda text: text}, NORMALISED, 2,
                    ["arithmetic_left_undone", "decimal_beside_exact", "one_spacing", "relation_only_in_some",
                     "thousands_separator", "words_or_variables"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("blinded", BLINDED)
def test_the_validator_refuses_each_kind_when_the_builders_rules_are_blinded(tmp_path, monkeypatch, blinded):
    """The validator's checks are written apart from the builder's rules (plain regular expressions, plain
    math-verify): with the builder's rules switched off, each defect is refused by its own check."""
    rules, items, choices, refused = BLINDED[blinded]
    for name, blind in rules.items():
        module = forms if name in ("compact_spacing", "_last_side") else benchmarks if name == "letter_answer" \
            else math_transform
        monkeypatch.setattr(module, name, blind)
    _forget_forms()
    result = build_real_items(tmp_path, items, choices)
    with pytest.raises(ValidationFailed) as failure:
        validate(result)
    assert sorted(dict(re.findall(r"(\w+) \((\d+): ", str(failure.value)))) == refused
    if "plain_math_verify_distinct" in refused:
        assert "('0.377', '\\\\frac{193}{512}') are rounded for plain math-verify" in str(failure.value)


def test_kinds_and_spacing_beyond_the_fixtures():
    """Forms that appear in no fixture: the rules generalise."""
    mismatch = {("C", "5"): "letter", ("(B), (D)", "12"): "letter", ("x+y=3", "7"): "equation",
                ("5", "x^2+y^2=4"): "equation", ("none", "0"): "words", ("12", "even"): "words",
                ("t^2", "x^2"): "variable", (r"\alpha+1", "2"): None, ("3i", "4"): None, ("east", "north"): None,
                (r"4\cdot 6", "24"): "undone", (r"4\cdot6", r"2\cdot12"): None, ("2^{10}", "1000"): None,
                # the 2-option build's last cues: decimals beside exact keys, a list beside one value,
                # infinity beside a number, a factorial left undone, a fraction not in lowest terms
                ("73.26", "145"): "decimal", (r"23.38\pi", r"25\pi"): "decimal", ("0", "87.5"): None,
                ("1.5", "2.5"): None, ("1", "(0,1)"): "values", ("-5,1,4", "2"): "values", ("-1,-2,1", "-2,1"): None,
                (r"\infty", "3"): "infinite", (r"(-\infty,\infty)", r"(-\infty,5)\cup(5,\infty)"): None,
                (r"\frac{6!}{3!2!1!}", "120"): "undone", (r"-\frac{240}{9}", r"\frac{80}{3}"): "unreduced",
                (r"\frac{3}{4}", r"\frac{2}{3}"): None,
                # radicals not in simplest form, binomial coefficients left unevaluated
                (r"\frac{\sqrt{96}}{2}", r"3\sqrt{5}"): "radical", (r"\sqrt{\frac{2}{3}}", "2"): "radical",
                (r"\sqrt{1}", "2"): "radical", (r"\sqrt{8}", r"\sqrt{12}"): None, (r"2\sqrt{6}", r"3\sqrt{5}"): None,
                (r"\sqrt[3]{16}", "2"): None, (r"\binom{6}{1}\binom{8}{4}", "1940"): "undone"}
    found = {(answer, key): forms.kind_mismatch(forms.option_form(answer), forms.option_form(key))
             for answer, key in mismatch}
    assert found == mismatch
    spellings = {r"\left( 3, \frac{1}{2} \right)": r"(3,\frac{1}{2})", r"2 \sqrt 3": r"2\sqrt{3}", "45, 135": "45, 135",
                 r"\pi r^2": r"\pi r^2", "no real values of k": "no real values of k", r"x \in [2, 5)": r"x\in[2,5)",
                 r"1,\!000,\!000 \text{ dollars}": "1000000"}
    assert {text: forms.option_form(text) for text in spellings} == spellings
    assert forms.option_form(r"h \approx 12{,}345", key="12346") == "12345"
    assert forms.option_form(r"h \approx 12{,}345", key=r"h \approx 12000") == r"h\approx12, 345"


LAST_CUE_ITEMS = [  # (key, a real model's answer in the shared 2-option build that gave the key away); the problems
    # are placeholders, and a made-up model "z" gives a plain wrong answer so that each item is still released
    (f"Problem {k}.", [key], [("m1", given), ("z", plain)]) for k, (key, given, plain) in enumerate([
        ("145", "73.26", "144"), ("(0,1)", "1", "(0,2)"), ("3", r"\infty", "2"), ("120", r"\frac{6!}{3!2!1!}", "90"),
        (r"\frac{80}{3}", r"-\frac{240}{9}", r"\frac{70}{3}"), (r"3\sqrt{5}", r"\frac{\sqrt{96}}{2}", r"2\sqrt{5}"),
        ("1940", r"\binom{6}{1}\binom{8}{4}+\binom{6}{2}\binom{8}{3}", "1904")])
]


def test_decimals_lists_infinity_and_unreduced_answers_are_not_distractors(tmp_path, monkeypatch):
    """After the first fixes, the 2-option build's choices-only model still read "less punctuation"
    and "the only option with a comma" (56-59% in 5 of 11 sets against 50%): models' decimals beside MATH's exact
    keys ("73.26" beside 145), one value beside a list, infinity beside a count, "6!/(3!2!1!)", "-240/9"; then
    radicals not in simplest form ("\\sqrt{96}/2" beside 3\\sqrt{5}) and binomial coefficients left unevaluated beside
    1940. Each is left out now, with its reason; with the builder's rule blinded, the validator's own checks
    refuse each."""
    result = build_real_items(tmp_path, chosen=LAST_CUE_ITEMS)
    assert [(r.choices[r.answer], r.choices[1 - r.answer]) for r in result.configs["set_0"]["test"]] == [
        ("145", "144"), ("(0,1)", "(0,2)"), ("3", "2"), ("120", "90"), (r"\frac{80}{3}", r"\frac{70}{3}"),
        (r"3\sqrt{5}", r"2\sqrt{5}"), ("1940", "1904")]
    left_out = {row["candidate"]: row["left out"] for row in result.release.statistics["Candidates left out"].records()}
    assert {reason: n for reason, n in left_out.items() if n} == {
        **{forms.KIND_REASONS[kind]: 1 for kind in ("decimal", "values", "infinite", "unreduced", "radical")},
        forms.KIND_REASONS["undone"]: 2}
    validate(result)
    monkeypatch.setattr(math_transform, "kind_mismatch", lambda answer, key: None)
    blinded = build_real_items(tmp_path / "blind", choices=3, chosen=LAST_CUE_ITEMS)
    with pytest.raises(ValidationFailed) as failure:
        validate(blinded)
    assert sorted(dict(re.findall(r"(\w+) \((\d+): ", str(failure.value)))) == [
        "arithmetic_left_undone", "decimal_beside_exact", "infinity_beside_finite", "lowest_terms", "number_of_values",
        "simplest_radicals"]


BARE_ARGUMENT_ITEMS = [  # MATH's golds with TeX's one-token arguments, models' answers with braces (full build)
    ("In right triangle $ABC$, $\\cos{B}=\\frac{6}{10}$.  What is $\\tan{C}$?", [r"\frac34"],
     [("gpt-4-0314", r"\frac{4}{3}")]),  # 1661
    ("Equilateral triangle $DEF$ is inscribed in equilateral triangle $ABC$.  What is the ratio of the area of "
     "$\\triangle DEF$ to the area of $\\triangle ABC$?", [r"\frac13"], [("gpt-4-0314", r"\frac{1}{6}")]),  # 1746
    ("Compute the smallest real number $x$ which satisfies the equation "
     "\\[\\sqrt{x^2 - 2x + 2} + \\sqrt{-x^2 + 6x - 2} = 2\\sqrt{x}.\\]", [r"3-\sqrt7"],
     [("gpt-4-0613", r"x = 1"), ("gpt-4-0314", r"3 - \sqrt{5}")]),  # 2605
]


def test_arguments_of_frac_and_sqrt_are_braced_in_every_option(tmp_path, monkeypatch):
    """In the full 2-option build, 70 of the 80 options with a bare \\frac or \\sqrt argument ("\\frac34" beside
    "\\frac{4}{3}") were the key: MATH's spelling, not the models'. Every option is braced now, and the validator's
    own check refuses a build whose normaliser leaves a bare argument."""
    assert {t: forms.option_form(t) for t in [r"\frac34", r"\dfrac{3}4", r"\frac\pi2", r"\sqrt[3]2", r"(\frac23)^{15}",
                                               r"\sqrt{\frac34}", r"2 \sqrt 3"]} == {
        r"\frac34": r"\frac{3}{4}", r"\dfrac{3}4": r"\frac{3}{4}", r"\frac\pi2": r"\frac{\pi}{2}",
        r"\sqrt[3]2": r"\sqrt[3]{2}", r"(\frac23)^{15}": r"(\frac{2}{3})^{15}", r"\sqrt{\frac34}": r"\sqrt{\frac{3}{4}}",
        r"2 \sqrt 3": r"2\sqrt{3}"}
    result = build_real_items(tmp_path / "braced", chosen=BARE_ARGUMENT_ITEMS)
    records = result.configs["set_0"]["test"]
    assert [r.choices[r.answer] for r in records] == [r"\frac{3}{4}", r"\frac{1}{3}", r"3-\sqrt{7}"]
    assert [r.choices[1 - r.answer] for r in records][:2] == [r"\frac{4}{3}", r"\frac{1}{6}"]
    assert records[2].choices[1 - records[2].answer] in ("1", r"3-\sqrt{5}")
    assert "braced_arguments" in {c.name for c in validate(result).checks}
    monkeypatch.setattr(forms, "brace_arguments", lambda text: text)
    _forget_forms()
    blinded = build_real_items(tmp_path / "blinded", chosen=BARE_ARGUMENT_ITEMS)
    with pytest.raises(ValidationFailed, match=r"braced_arguments \(6: "):
        validate(blinded)


def test_the_consensus_counts_models_not_their_samples(tmp_path):
    """MATH-MC's 3 suspect keys each rested on 8 samples of one model (``qwen2.5-math-instruct#0`` ...
    ``#7``) counted as 8 models. Eight samples agreeing on 4 are one model against two that give the key: no flag;
    three distinct models agreeing on 4 are a consensus."""
    source = write_jsonl(tmp_path / "math" / "test.jsonl", [MATH_TEST[1], {**MATH_TEST[1], "problem": r"Solve $x + 2 = 5$."}]).parent
    samples = [(0, f"qwen2.5-math-instruct#{k}", r"$\boxed{4}$") for k in range(8)]
    models = [(1, name, r"$\boxed{4}$") for name in ("p", "q", "r")]
    others = [(i, name, box) for i in (0, 1) for name, box in (("a", r"$\boxed{3}$"), ("b", r"$\boxed{5}$"),
                                                               ("c", r"$\boxed{6}$"), ("d", r"$\boxed{7}$"))]
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"question_index": i, "model": m, "output": o}
                                                     for i, m, o in [*samples, *models, *others]])
    result = made(parse(["--source", str(source), "--predictions", str(predictions), "--sets", "1",
                         "--max-excluded", "1", "--equivalence-workers", "1"]))
    assert [(e.id, e.reason, e.detail) for e in result.exclusions.entries] == [
        ("math/test/1", "suspect_key", "3 of 7 models answer 4, 1 the key 3")]
    assert [r.id for r in result.configs["set_0"]["test"]] == ["math/test/0"]


def test_the_simplest_radical_form_is_sympys():
    """The validator's check of unsimplified roots decides with integers what sympy's sqrt does (a square factor
    taken out, or a whole root), on every number below 5,000 and on large ones."""
    import random

    import sympy

    from builders.math_mc import option_checks

    numbers = [*range(5000), *random.Random(7).sample(range(10**7, 10**8), 300), 99_999_999, 2 * 3 * 5 * 7 * 11 * 13 * 17]
    assert [option_checks._simplest_root(n) for n in numbers] == [sympy.sqrt(n).is_Pow is True for n in numbers]


def test_the_workers_a_build_starts_follow_its_work_and_change_no_verdict(monkeypatch, tmp_path):
    """One worker unless the work is large (each worker parses and warms up on its own): the same verdicts as two."""
    from builders.core.runtime.workers import cpu_workers
    from builders.math_mc import parses

    assert parses.workers_for(10, 3) == 3 and parses.workers_for(10, None) == 1
    assert parses.workers_for(parses.WORK_PER_WORKER + 1, None) == min(2, cpu_workers())
    groups = [[pair[0], *pair[1:], "7", r"\frac{1}{2}"] for pair in SHARED_READING_PAIRS]
    verdicts = []
    for workers in (None, 2):
        monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / str(workers)))  # each asks math-verify itself
        with equivalence.MathEquivalence(workers=workers, timeout=20) as engine:
            engine.prepare(groups)
            verdicts.append(({pair: engine.same(*pair) for group in groups for pair in equivalence._pairs(group)},
                             engine.pool.size))
    assert verdicts[0][0] == verdicts[1][0] and [size for _, size in verdicts] == [1, 2]


def test_a_rebuild_reads_math_verifys_answers_back_and_starts_no_worker(monkeypatch):
    """The builder's and the validator's math-verify tasks keep their answers in the mcqforge cache, each its own:
    judged again, the same pairs give the same verdicts and statistics without a worker; the builder's kept answers
    do not answer the validator's tasks; a damaged answer is asked again, and an answer its judge calls unfit to
    keep (a time limit fired) is never kept."""
    from builders.core.runtime.workers import HardTimeoutPool

    spawned = []
    spawn = HardTimeoutPool._spawn
    monkeypatch.setattr(HardTimeoutPool, "_spawn", lambda pool: spawned.append(1) or spawn(pool))
    groups = [list(pair) for pair in SHARED_READING_PAIRS]

    def engine_verdicts():
        with equivalence.MathEquivalence(workers=1, timeout=20) as engine:
            engine.prepare(groups)
            return {pair: engine.same(*pair) for group in groups for pair in equivalence._pairs(group)}, engine.stats

    first = engine_verdicts()
    assert spawned and first[1].answers > 10
    spawned.clear()
    assert engine_verdicts() == first and not spawned
    alone = plain.judge_pairs(SHARED_READING_PAIRS, workers=1, timeout=20)
    assert spawned  # the builder's answers are not the check's
    spawned.clear()
    assert plain.judge_pairs(SHARED_READING_PAIRS, workers=1, timeout=20) == alone and not spawned
    kept = sorted((Path(os.environ["MCQFORGE_CACHE"]) / parses.CACHE_FOLDER).rglob("*"))
    damaged = next(path for path in kept if path.is_file())
    damaged.write_bytes(damaged.read_bytes()[:-1] + b"#")
    assert engine_verdicts() == first and plain.judge_pairs(SHARED_READING_PAIRS, workers=1, timeout=20) == alone
    assert len(spawned) == 1  # the damaged answer's task alone ran again
    spawned.clear()
    with parses.math_verify_pool(1, 20) as pool:
        tasks = [([("x + 1", "1 + x")], 10)]
        unkept = [parses.kept_map(pool, plain.JUDGE, tasks, lambda task, answer: False)[0] for _ in range(2)]
    assert unkept[0] == unkept[1] and unkept[0].value == [(True, False, False)] and len(spawned) == 1
