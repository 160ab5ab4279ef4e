"""MATH-MC: boxed golds, math-verify equivalence in workers, pools, sets, invariants, publishing."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import datasets
import pytest

from builders.math_mc import builder as math_mc
from builders.core import cli
from builders.core.errors import ValidationFailed
from builders.core.validate import validate

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
]


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


def test_golds_pools_sets_and_invariants(files, tmp_path):
    args = parse(["--source", str(files["source"]), "--predictions", str(files["predictions"]), "--sets", "2",
                  "--pool", str(tmp_path / "pool.jsonl"), "--equivalence-timeout", "3"])
    result = math_mc.build(cli.load(math_mc.BUILDER, args), args)
    assert sorted((e.id, e.reason) for e in result.exclusions.entries) == [
        ("math/test/2", "ambiguous_gold"), ("math/test/3", "pool_too_small"), ("math/test/4", "no_gold_answer")]
    records = result.configs["set_1"]["test"]
    assert [r.id for r in records] == ["math/test/0", "math/test/1", "math/test/5"]
    half, three, interval = records
    assert sorted(half.choices) == ["1/4", "2", "3", r"\frac{1}{2}"] and half.gold == r"\frac{1}{2}"
    assert dict(zip(half.choices, half.metadata["choice_models"])) == \
        {"1/4": ["d", "e"], "2": ["c"], "3": ["g"], r"\frac{1}{2}": []}
    assert sorted(three.choices) == ["3", "4", "5", "6"]
    assert sorted(interval.choices) == ["(0,1)", "1", "[0, 1)", "[0,1]"] and interval.gold == "[0, 1)"
    assert (half.subject, half.metadata["level"], half.metadata["gold_text"]) == ("Prealgebra", "Level 1", r"\frac{1}{2}")
    report = {r["question_id"]: r for r in map(json.loads, (tmp_path / "pool.jsonl").read_text().splitlines())}
    assert sorted(report) == ["math/test/0", "math/test/1", "math/test/3", "math/test/5"]
    assert report["math/test/0"]["correct"] == {"a": 1, "b": 1} and report["math/test/0"]["invalid"] == {"f": 1}
    assert (report["math/test/0"]["merges"], report["math/test/0"]["gold_merges"]) == (2, 1)
    assert report["math/test/0"]["candidates"][0] == {"text": "1/4", "count": 2, "models": ["d", "e"], "variants": ["0.25"]}
    assert report["math/test/1"]["correct"] == {"a": 1, "b": 1}  # x=3 is the gold 3
    assert result.statistics["Gold answers"].row("test") == {
        "split": "test", "source rows": 6, "no boxed gold": 1, "ambiguous gold": 1, "usable gold": 4,
        "paper (usable / rows)": "4.9K / 5K"}
    validate(result)
    # A distractor equivalent to another option must be caught by the builder's own check.
    choices = list(half.choices)
    choices[choices.index("2")] = "0.25"
    result.configs["set_1"]["test"][0] = half.replace(choices=choices)
    with pytest.raises(ValidationFailed, match="options_not_equivalent"):
        validate(result)


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
