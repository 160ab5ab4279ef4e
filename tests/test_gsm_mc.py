"""GSM-MC: gold extraction, pools from real-format predictions, sets, invariants, publishing."""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from pathlib import Path

import datasets
import pytest
from fixtures import outcome_rows

from builders.core.errors import ValidationFailed
from builders.core.pipeline import cli
from builders.core.validation.validate import validate
from builders import gsm_mc
from builders.gsm_mc import checks as gsm_checks

GSM8K_TEST = [
    {"question": "Tom has 3 apples and buys 2 more. How many apples does he have?",
     "answer": "3 + 2 = <<3+2=5>>5\n#### 5"},
    {"question": "A bike costs $1,000 plus $200 of tax. What does it cost in dollars?",
     "answer": "1000 + 200 = <<1000+200=1200>>1200\n#### 1,200"},
    {"question": "Ann reads 7 pages a day for 1 day. How many pages?", "answer": "7 * 1 = 7\n#### 7"},
    {"question": "What is 5 + 5?", "answer": "#### 10"},
    {"question": "A question whose answer has no final line.", "answer": "It is 4."},
    {"question": "Nobody answered this one: 6 * 7?", "answer": "#### 42"},
]
PREDICTIONS = [  # question_index, model, output
    (0, "a", "3 + 2 = 5.\n#### 5"), (0, "b", "The answer is 6."), (0, "c", "#### 6.0"),
    (0, "d", "He has 4 apples. The answer is 4"), (0, "e", "I think 7"),
    (1, "a", "#### 1,200"), (1, "b", "The answer is $1,100."), (1, "c", "1300"), (1, "d", "no idea"),
    (1, "e", "It costs 1200.00"),
    (2, "a", "8"), (2, "b", "9"), (2, "c", "10"), (2, "d", "11"), (2, "e", "#### 8"),
    (3, "a", "10"), (3, "b", "#### 10"),
]


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    source = tmp_path / "gsm8k"
    write_jsonl(source / "test.jsonl", GSM8K_TEST)
    write_jsonl(source / "train.jsonl", GSM8K_TEST[:2])
    predictions = write_jsonl(tmp_path / "preds.jsonl",
                              [{"question_index": i, "model": m, "output": o} for i, m, o in PREDICTIONS])
    return {"source": source, "predictions": predictions}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = cli.builder_parser(gsm_mc.BUILDER)
    return parser.parse_args(argv)


def made(args: argparse.Namespace, options_args: argparse.Namespace | None = None):
    """The build of ``args``'s source with the options of ``options_args`` (``args``'s by default), unvalidated."""
    options = gsm_mc.BUILDER.options_of(options_args or args)
    return gsm_mc.BUILDER.make_build(cli.load(gsm_mc.BUILDER, args, options), options)


def build(files, *extra: str):
    args = parse(["--source", str(files["source"]), "--predictions", str(files["predictions"]), *extra])
    return made(args)


def test_sets_pools_and_exclusions(files, tmp_path):
    result = build(files, "--sets", "3", "--pool", str(tmp_path / "pool.jsonl"))
    assert list(result.configs) == ["default", "set_0", "set_1", "set_2"]
    assert {config: [r.id for r in splits["test"]] for config, splits in result.configs.items()} == \
        {config: ["gsm8k/test/0", "gsm8k/test/2"] for config in result.configs}
    assert result.configs["default"]["test"] == result.configs["set_0"]["test"]
    assert result.source.rows_in == {"test": 6}  # only --splits test is read
    assert sorted((e.id, e.reason, e.detail) for e in result.exclusions.entries) == [
        ("gsm8k/test/1", "pool_too_small", "2 distractors, 3 needed"),
        ("gsm8k/test/3", "pool_too_small", "0 distractors, 3 needed"),
        ("gsm8k/test/4", "no_gold_answer", "no '#### N' line with a number"),
        ("gsm8k/test/5", "no_predictions", "0 distractors, 3 needed"),
    ]
    for config in ["set_0", "set_1", "set_2"]:
        first, third = result.configs[config]["test"]
        assert sorted(first.choices) == ["4", "5", "6", "7"] and first.gold == "5"
        models = dict(zip(first.choices, first.metadata["choice_models"], strict=True))
        assert models == {"4": ["d"], "5": [], "6": ["b", "c"], "7": ["e"]}
        assert dict(zip(first.choices, first.metadata["choice_origins"], strict=True))["5"] == "gold"
        assert third.gold == "7" and len(third.choices) == 4 and set(third.choices) <= {"7", "8", "9", "10", "11"}
        assert first.metadata["pool_size"] == 3 and third.metadata["pool_size"] == 4
        assert first.metadata["set_index"] == int(config[-1]) and first.metadata["gold_text"] == "5"
    report = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [(r["question_id"], r["pool_size"], r["merges"], r["gold_merges"], r["invalid"]) for r in report] == [
        ("gsm8k/test/0", 3, 1, 0, {}), ("gsm8k/test/1", 2, 2, 2, {"d": 1}), ("gsm8k/test/2", 4, 0, 0, {}),
        ("gsm8k/test/3", 0, 0, 0, {}), ("gsm8k/test/5", 0, 0, 0, {})]
    assert report[0]["candidates"][0] == {"text": "6", "count": 2, "models": ["b", "c"], "variants": ["6.0"]}
    # a pool of exactly 3 distractors has one draw: the card says the sets are not independent for that item
    assert result.release.card_context["same_in_every_set"] == {"total": 2, "same_options": 1, "same_order": 0}
    validate(result)


def test_fewer_choices_keep_more_questions(files):
    result = build(files, "--choices", "3", "--sets", "1")
    kept = [r for r in result.configs["set_0"]["test"]]
    assert [r.id for r in kept] == ["gsm8k/test/0", "gsm8k/test/1", "gsm8k/test/2"]
    assert sorted(kept[1].choices) == ["1100", "1200", "1300"] and kept[1].metadata["gold_text"] == "1,200"
    assert result.release.statistics["Distractor pools"].row(3) == {"N options": 3, "questions kept": 3, "questions excluded": 2}


def test_draws_depend_only_on_the_seed(files):
    first, again = build(files, "--sets", "4"), build(files, "--sets", "4")
    assert first.configs == again.configs
    other = build(files, "--sets", "4", "--seed", "1")
    assert [r.choices for r in other.configs["set_0"]["test"]] != [r.choices for r in first.configs["set_0"]["test"]] or \
        [r.choices for r in other.configs["set_1"]["test"]] != [r.choices for r in first.configs["set_1"]["test"]]


def test_random_distractors_need_no_predictions(files):
    args = parse(["--source", str(files["source"]), "--distractors", "random", "--sets", "2", "--choices", "5"])
    result = made(args)
    records = result.configs["set_1"]["test"]
    assert [r.id for r in records] == ["gsm8k/test/0", "gsm8k/test/1", "gsm8k/test/2", "gsm8k/test/3", "gsm8k/test/5"]
    bike = records[1]
    assert bike.gold == "1200" and all(600 <= int(c) <= 1800 for c in bike.choices)
    assert bike.metadata["choice_origins"].count("random") == 4
    validate(result)


def test_a_distractor_equal_to_the_gold_breaks_validation(files):
    result = build(files, "--sets", "1")
    record = result.configs["set_0"]["test"][0]
    wrong = 0 if record.answer else 1
    choices = list(record.choices)
    choices[wrong] = "5.0"  # numerically the gold
    result.configs["set_0"]["test"][0] = record.replace(choices=choices)
    with pytest.raises(ValidationFailed, match="key_text_once"):  # the key's text twice: the common check sees it
        validate(result)


def test_harness_logs_and_generated_predictions(files, tmp_path, llm_server):
    folder = tmp_path / "harness" / "org__tiny"
    write_jsonl(folder / "samples_gsm8k_2024-01-01T00-00-00.jsonl", [
        {"doc_id": i, "doc": row, "resps": [[f"The answer is {answer}."]], "filtered_resps": [str(answer)]}
        for i, (row, answer) in enumerate(zip(GSM8K_TEST, [6, 1100, 12, 11, 0, 41], strict=True))])
    wrong = {0: "8", 1: "1250", 2: "13", 3: "12", 5: "40"}
    llm_server.respond_with(lambda call: f"The answer is {int(wrong[_index(call)]) + 3 * (call.body['model'] == 'm2')}.")
    result = build(files, "--predictions", str(tmp_path / "harness"), "--generate-with", "m1", "m2",
                   "--base-url", llm_server.openai_base_url, "--api-key-env", "none", "--cache-dir", str(tmp_path / "cache"),
                   "--sets", "1", "--keep-suspect-keys",  # 3 models agree on 6 for question 0, 1 on its key
                   "--save-predictions", str(tmp_path / "generated.jsonl"))
    assert len(llm_server.chat_requests) == 10  # 2 models x 5 questions with a gold
    ids = [r.id for r in result.configs["set_0"]["test"]]
    assert ids == ["gsm8k/test/0", "gsm8k/test/1", "gsm8k/test/2", "gsm8k/test/3", "gsm8k/test/5"]
    last = result.configs["set_0"]["test"][-1]
    assert sorted(last.choices) == ["40", "41", "42", "43"]
    assert dict(zip(last.choices, last.metadata["choice_models"], strict=True)) == {"40": ["m1"], "41": ["org__tiny"], "42": [], "43": ["m2"]}
    assert len((tmp_path / "generated.jsonl").read_text().splitlines()) == 10


def _index(call) -> int:
    question = call.user_text.removeprefix("Q: ").removesuffix("\nA:")
    return next(i for i, row in enumerate(GSM8K_TEST) if row["question"] == question)


def parquet_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.parquet")):
        digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def test_cli_writes_identical_releases_and_refuses_bad_options(files, tmp_path, capsys):
    common = ["--source", str(files["source"]), "--predictions", str(files["predictions"]), "--sets", "2",
              "--log-level", "WARNING"]
    # 4 of the 6 rows are left out (3 for want of distractors): more than the default --max-excluded 0.5
    assert gsm_mc.main([*common, "--output", str(tmp_path / "one")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: 4 of 6 rows (67%) would be left out of config 'default', most often for pool_too_small (2 rows, "
        "e.g. gsm8k/test/1: 2 distractors, 3 needed); --max-excluded 0.5 allows at most 50%, pass a higher share to "
        "build it anyway")
    assert not (tmp_path / "one").exists()
    common += ["--max-excluded", "0.7"]
    assert gsm_mc.main([*common, "--output", str(tmp_path / "one")]) == 0
    assert gsm_mc.main([*common, "--output", str(tmp_path / "two")]) == 0
    assert parquet_digest(tmp_path / "one") == parquet_digest(tmp_path / "two")
    assert (tmp_path / "one" / "pools.jsonl").read_text().count("\n") == 5
    card = (tmp_path / "one" / "README.md").read_text()
    assert "pool_too_small" in card and "| e | 3 | 1 | 0 | 2 |" in card
    # gsm8k/test/0's pool holds exactly the 3 distractors a set shows: the sets are no independent draws for it
    text = " ".join(card.split())
    assert "1 of 2 items (50.0%) have the same options in every set (0 of them in the same order too)" in text and "for the other 1, the options differ between sets" in text
    assert outcome_rows(card) == [  # the one outcome table: 6 rows in = 2 altered (made into sets) + 4 excluded
        ("all 3 configs", "test", "altered", "–", 2), ("all 3 configs", "test", "excluded", "no_gold_answer", 1),
        ("all 3 configs", "test", "excluded", "no_predictions", 1), ("all 3 configs", "test", "excluded", "pool_too_small", 2)]
    loaded = datasets.load_dataset(str(tmp_path / "one"), "set_1")["test"]
    assert loaded.num_rows == 2 and loaded[0]["metadata"]["choice_models"][0] is not None
    assert gsm_mc.main([*common, "--choices", "9", "--output", str(tmp_path / "x")]) == 2
    assert gsm_mc.main(["--source", str(files["source"]), "--output", str(tmp_path / "y")]) == 2
    assert "need --predictions" in capsys.readouterr().err


@pytest.mark.slow
def test_publish_and_load_back(local_hub, files, tmp_path):
    repo = "mcqforge/gsm-mc-test"
    assert gsm_mc.main(["--source", str(files["source"]), "--predictions", str(files["predictions"]), "--sets", "2",
                        "--max-excluded", "0.7", "--push", repo, "--version", "1.0.0", "--log-level", "WARNING"]) == 0
    assert local_hub.tags(repo) == ["v1.0.0"]
    remote = datasets.load_dataset(repo, "set_1", revision="v1.0.0")["test"]
    assert remote["id"] == ["gsm8k/test/0", "gsm8k/test/2"]
    assert datasets.load_dataset(repo, "default", revision="v1.0.0")["test"]["choices"] == \
        datasets.load_dataset(repo, "set_0", revision="v1.0.0")["test"]["choices"]


# ---- correct answers in another unit; random distractors drawn in O(1) -----------------------------------

UNIT_SOURCE = [{"question": "A pen costs 1 dollar. What does it cost in dollars?", "answer": "#### 1"},
               {"question": "A bag holds 245 grams. How many grams?", "answer": "#### 245"}]
UNIT_PREDICTIONS = [(0, "a", "100"), (0, "b", "100"), (0, "c", "2"), (0, "d", "3"), (0, "e", "0.01"), (0, "f", "5"),
                    (1, "a", "245000"), (1, "b", "0.245"), (1, "c", "4.0833"), (1, "d", "14700"), (1, "e", "250"),
                    (1, "f", "240"), (1, "g", "255")]


def test_correct_answers_in_another_unit_are_left_out_and_counted(tmp_path):
    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", UNIT_SOURCE).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"question_index": i, "model": m, "output": o}
                                                     for i, m, o in UNIT_PREDICTIONS])
    base = ["--source", str(source), "--predictions", str(predictions), "--sets", "3"]
    result = made(parse(base))
    for records in result.configs.values():
        pen, bag = records["test"]
        assert not {"100", "0.01"} & set(pen.choices) and not {"245000", "0.245", "14700"} & set(bag.choices)
    assert result.release.statistics["Correct answers in another form"].records() == [
        {"candidate left out": "unit: x or / 100", "candidates": 2},
        {"candidate left out": "unit: x or / 1000", "candidates": 2},
        {"candidate left out": "unit: x or / 60", "candidates": 1},
        {"candidate left out": "the gold rounded to the option's decimals", "candidates": 0}]
    assert validate(result).passed

    kept = made(parse(base), parse([*base, "--keep-unit-multiples"]))
    assert any("100" in r.choices for r in kept.configs["set_0"]["test"] + kept.configs["set_1"]["test"]
               + kept.configs["set_2"]["test"])
    # the independent check refuses a unit multiple where the default build promised none
    record = result.configs["set_0"]["test"][0]
    wrong = next(i for i in range(len(record.choices)) if i != record.answer)
    choices = list(record.choices)
    choices[wrong] = "100"
    result.configs["set_0"]["test"][0] = record.replace(choices=choices)
    with pytest.raises(ValidationFailed, match="no_unit_multiple"):
        validate(result)


def test_conversions_of_one_factor_are_listed_in_the_same_order_under_any_hash_seed():
    """Labels that share a factor were ordered by the factor alone, so their order followed the set's hash order."""
    from types import SimpleNamespace

    from builders.gsm_mc.card_statistics import unit_table
    from builders.gsm_mc.transform import UNIT_MULTIPLE

    tied = ["12 (months per year)", "12 (items per dozen)", "12 (inches per foot)", "12 (eggs per carton)"]
    for order in (tied, tied[::-1]):
        pools = [SimpleNamespace(left_out=[SimpleNamespace(reason=f"{UNIT_MULTIPLE}:{label}") for label in order])]
        rows = [row["candidate left out"] for row in unit_table(pools, kept=False).records()]
        assert rows[3:7] == [f"unit: x or / {label}" for label in sorted(tied)]


def test_random_distractors_of_a_large_gold_are_drawn_without_listing_the_interval():
    import numpy as np

    from builders.gsm_mc.answers import random_distractors, random_interval

    # a list of the 2.9 million offsets took 25 s per check; benchmarks/gsm_mc.py times a full random build
    drawn = [random_distractors("2880000", 7, np.random.default_rng(seed)) for seed in range(1000)]
    low, high = random_interval("2880000")
    assert (low, high) == ("1440000", "4320000")
    assert all(len(set(d)) == 7 and all(1440000 <= int(x) <= 4320000 and x != "2880000" for x in d) for d in drawn)


def test_predictions_on_a_split_not_built_are_no_warning(tmp_path, caplog):
    """The sample's predictions cover train and test; a test-only build uses the 60 test ones and says nothing
    of the 30 train ones beyond an info line (they used to warn as 'no_item_at_question_index')."""
    with caplog.at_level("INFO", logger="builders.core.sources.predictions"):
        assert cli.main(gsm_mc.BUILDER, ["--source", "sample", "--output", str(tmp_path / "out")]) == 0
    [line] = [r for r in caplog.records if "matched" in r.getMessage()]
    assert (line.levelname, line.getMessage()) == (
        "INFO", "90 predictions read, 60 matched, 30 on splits this build does not make")  # no "unmatched", no file:line


def test_the_float_recheck_catches_a_second_correct_option_the_builder_let_through():
    """The validator reads the options as floats itself: "1,000.0" beside a gold of 1000 is a second correct
    option whatever the builder's equivalence said."""
    from builders.core.items.record import MCQRecord

    class Released:  # what the check reads of a build: its records
        def __init__(self, records):
            self._records = records

        def records(self):
            yield "set_0", "test", self._records

    where = dict(question="q", source="gsm8k", source_config="main", source_split="test")
    good = MCQRecord(id="gsm8k/test/0", choices=("1000", "999", "1/2"), answer=0, source_index=0, **where)
    bad = MCQRecord(id="gsm8k/test/1", choices=("7", "1,000.0", "1000"), answer=2, source_index=1, **where)
    check = gsm_checks.one_numeric_gold({"gsm8k/test/0": "1,000", "gsm8k/test/1": "1000"})
    assert list(check.find_violations(Released([good]))) == []
    assert list(check.find_violations(Released([good, bad]))) == [
        "set_0/test gsm8k/test/1: options [1, 2] equal the gold, answer is 2",
        "set_0/test gsm8k/test/1: options 1 and 2 are equal"]


BOXED_SOURCE = [{"question": "Sam has 4 bags of 3 apples. What does he have in all?", "answer": "4 * 3 = 12\n#### 12"}]  # no count question: its distractors may be fractions
BOXED_PREDICTIONS = [  # (model, output): real shapes of zero-shot GPT-3.5/GPT-4/Claude 2 answers on GSM8K
    ("a", "So he has $\\boxed{12x + 4}$ apples."),  # an expression: invalid, not 4
    ("b", "The latest time is \\boxed{2:00 pm}"),  # a time: invalid, not 0
    ("c", "In total \\boxed{85{,}000}"),  # 85000, not 0
    ("d", "He lost \\boxed{-\\$2.50}"),  # -2.5, not 2.5
    ("e", "Each gets \\boxed{2\\frac{2}{3}} apples"),  # a mixed number: 8/3, not 3
    ("f", "So x = -90/13.\nThe data must be wrong."),  # a fraction ending a sentence: -90/13, not 13
    ("g", "\\boxed{\\text{undefined}} because 5 is not 7"),  # no number in the box: invalid, not 7
    ("h", "\\boxed{60 \\times 20 = 1200} and 5 more"),  # the value after the last "=", not 5
    ("i", "He has \\boxed{140 apples} in 3 bags"),  # a unit after the one number
]


def test_a_boxed_answer_decides_and_an_unreadable_one_is_invalid(tmp_path):
    """Regression: a boxed answer that was not a bare number fell back to the last number of the text, so
    "12x + 4" gave the distractor 4 and "85{,}000" gave 0: answers no model gave (5 of 925 real items)."""
    from builders.gsm_mc.answers import extract_answer

    assert [extract_answer(output) for _, output in BOXED_PREDICTIONS] == [
        None, None, "85000", "-2.5", "8/3", "-90/13", None, "1200", "140"]
    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", BOXED_SOURCE).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"question_index": 0, "model": m, "output": o}
                                                     for m, o in BOXED_PREDICTIONS])
    argv = ["--source", str(source), "--predictions", str(predictions), "--sets", "2", "--pool", str(tmp_path / "p")]
    result = made(parse(argv))
    [row] = [json.loads(line) for line in (tmp_path / "p").read_text().splitlines()]
    assert row["invalid"] == {"a": 1, "b": 1, "g": 1}
    assert sorted(c["text"] for c in row["candidates"]) == ["-2.5", "-90/13", "140", "8/3", "85000"]
    assert row["left_out"] == [{"text": "1200", "count": 1, "models": ["h"], "reason": "unit_multiple:100"}]
    assert all(not {"4", "0", "2.5", "3", "13", "7", "5"} & set(r.choices) for c in result.configs.values()
               for r in c["test"])
    assert validate(result).passed


# ---- wrong source keys (consensus check), the gold in another form, GSM8K-Platinum ---------------

def real_item(question: str, key: str) -> dict:
    return {"question": question, "answer": f"#### {key}"}


# Real GSM8K test items (ids in the comments) with the answers the 14 full-coverage systems of the shared
# predictions gave them; the first five keys are wrong, the sixth is one GSM8K-Platinum relabels
# although 42 models answer with the key, the last is sound.
CONSENSUS_SOURCE = [
    real_item("The girls are trying to raise money for a carnival. Kim raises $320 more than Alexandra, who raises "
              "$430, and Maryam raises $400 more than Sarah, who raises $300. How much money, in dollars, did they all "
              "raise in total?", "2280"),  # 1309: true 2180
    real_item("Johnny's dad brought him to watch some horse racing and his dad bet money. On the first race, he lost "
              "$5. On the second race, he won $1 more than twice the amount he previously lost. On the third race, he "
              "lost 1.5 times as much as he won in the second race. How much did he lose on average that day?", "3"),  # 1042
    real_item("Mel uses a 900-watt air conditioner for 8 hours a day. This means that each hour the AC uses 900 watts "
              "of energy. If he reduces the time he uses the air conditioner by 5 hours a day, how many kilowatts of "
              "electric energy will he save in 30 days?", "81"),  # 403: true 135
    real_item("In a school activity, fifty-four students are to be separated into six groups of equal size. If the "
              "activity requires 12 groups, how many more groups are needed to form?", "3"),  # 749: true 6
    real_item("Sasha and Julie are best friends playing on opposing basketball teams. The teams have two practice "
              "games scheduled. In the first game, Sasha had the home court advantage and scored 14 points. Julie "
              "scored 4 fewer points than Sasha in the same game. Sasha always struggles during away games and their "
              "second match was at Julie's home court. Sasha scored 6 fewer points in the second game than Julie's "
              "score in the first game. How many total points did Sasha score during both games?", "14"),  # 823: true 18
    real_item("A landscaping company is delivering flagstones to a customer's yard. Each flagstone weighs 75 pounds. If "
              "the delivery trucks can carry a total weight of 2000 pounds, how many trucks will be needed to "
              "transport 80 flagstones in one trip?", "3"),  # 288: Platinum relabels 4
    real_item("Tom has 3 apples and buys 2 more. How many apples does he have?", "5"),
]
CONSENSUS_ANSWERS = [
    ["2180"] * 8 + ["2350"] * 2 + ["1880", "1750", "3200", "1770"],
    ["10.83"] * 3 + ["3.5"] * 3 + ["7"] * 2 + ["-4", "32.5", "10", "30.5", "-0.5", "7.17"],
    ["135"] * 6 + ["0", "2.25", "675", "216", "6", "1", "2", "3"],
    ["6"] * 7 + ["54"] * 2 + ["44", "3", "18", "63", "5"],
    ["18"] * 8 + ["28"] * 2 + ["20", "36", "32"],
    ["3"] * 42 + ["25", "4", "80"],
    ["5"] * 10 + ["6", "6", "7", "8"],
]


def consensus_files(tmp_path) -> list[str]:
    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", CONSENSUS_SOURCE).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [
        {"question_index": i, "model": f"m{k:02d}", "output": f"#### {answer}"}
        for i, answers in enumerate(CONSENSUS_ANSWERS) for k, answer in enumerate(answers)])
    return ["--source", str(source), "--predictions", str(predictions), "--sets", "2"]


def test_items_whose_key_the_models_contradict_are_excluded_as_suspect(tmp_path):
    argv = consensus_files(tmp_path)
    result = made(parse(argv))
    assert sorted((e.id, e.reason, e.detail) for e in result.exclusions.entries) == [
        ("gsm8k/test/0", "suspect_key", "8 of 14 models answer 2180, 0 the key 2280"),
        ("gsm8k/test/1", "suspect_key", "3 of 14 models answer 10.83 or 3.5, 0 the key 3"),
        ("gsm8k/test/2", "suspect_key", "6 of 14 models answer 135, 0 the key 81"),
        ("gsm8k/test/3", "suspect_key", "7 of 14 models answer 6, 1 the key 3"),
        ("gsm8k/test/4", "suspect_key", "8 of 13 models answer 18, 0 the key 14"),
    ]
    assert [r.id for r in result.configs["set_0"]["test"]] == ["gsm8k/test/5", "gsm8k/test/6"]
    table = result.release.statistics["Suspect keys"]
    assert [row["item"] for row in table.records()] == [f"gsm8k/test/{i}" for i in range(5)]
    assert "5 of 7 items (71.4%) are suspect; they are excluded with the reason `suspect_key`" in table.note
    assert validate(result).passed

    kept = made(parse(argv), parse([*argv, "--keep-suspect-keys"]))
    assert [r.id for r in kept.configs["set_0"]["test"]] == [f"gsm8k/test/{i}" for i in range(7)]
    assert {row["status"] for row in kept.release.statistics["Suspect keys"].records()} == {"kept (--keep-suspect-keys)"}


def test_the_validator_refuses_a_suspect_key_the_builder_let_through(tmp_path, monkeypatch):
    from builders.from_predictions import consensus

    monkeypatch.setattr(consensus, "suspects", lambda pools, rule=consensus.RULE: {})  # blind the builder's rule
    argv = consensus_files(tmp_path)
    result = made(parse(argv))
    assert len(result.configs["set_0"]["test"]) == 7
    with pytest.raises(ValidationFailed, match="no_suspect_key"):
        validate(result)


# Real GSM8K test items whose models' answers include the key in another unit the question names.
OTHER_UNIT_SOURCE = [
    real_item("Each person in a certain household consumes 0.2 kg of rice every meal. Supposing 5 members of the "
              "household eat rice every lunch and dinner, how many weeks will a 42 kg bag of rice last?", "3"),  # 296
    real_item("Shannon makes her own madeleine cookies and eats 2 a night as a treat.  She wants to make enough "
              "cookies to last her for 30 days by storing them in the freezer. Her recipe makes 1 dozen madeleine "
              "cookies.  How many dozens of cookies will she need to make so she has enough for 30 days?", "5"),  # 412
    real_item("Nik has 200 crayons. He wants to separate them into groups of 8 and put them into boxes.  Each box "
              "weighs 8 ounces. Each crayon weighs 1 ounce. If he puts all of his crayons into boxes, what is the "
              "total weight, in pounds, of the crayons and the boxes, when there are 16 ounces to a pound?", "25"),  # 1130
    real_item("If one person can paint half a house in 5 days, how many hours would it take for 5 people to paint a "
              "whole house?", "48"),  # 527
    real_item("Nate's dog can dig six holes a day. He digs for 14 days while Nate is on vacation. When Nate gets home, "
              "he starts filling in 9 holes a day, but the dog keeps digging 6 new holes every night. How many weeks "
              "does it take him to fill in all the holes?", "4"),  # 1303
    real_item("A pie costs $19 and is cut into 8 slices. What does one slice cost in dollars?", "2.375"),
]
OTHER_UNIT_ANSWERS = [  # models a..f; b and c give the other form
    ["3", "21", "21", "6", "4", "2"], ["5", "60", "60", "15", "4", "6"], ["25", "400", "400", "24", "26", "20"],
    ["48", "2", "2", "96", "24", "120"], ["4", "28", "28", "3", "5", "6"], ["2.375", "2.38", "2.4", "2", "3", "1.9"],
]


def test_the_gold_in_another_unit_or_rounded_is_left_out_and_every_prediction_counted(tmp_path):
    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", OTHER_UNIT_SOURCE).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [
        {"question_index": i, "model": "abcdef"[k], "output": f"#### {answer}"}
        for i, answers in enumerate(OTHER_UNIT_ANSWERS) for k, answer in enumerate(answers)])
    argv = ["--source", str(source), "--predictions", str(predictions), "--sets", "3", "--pool", str(tmp_path / "pool")]
    result = made(parse(argv))
    other = ["21", "60", "400", "2", "28", "2.38"]
    for records in result.configs.values():
        assert [r.id for r in records["test"]] == [f"gsm8k/test/{i}" for i in range(6)]
        assert all(value not in r.choices for r, value in zip(records["test"], other, strict=False))
        assert "2.4" not in records["test"][5].choices
    rows = {r["candidate left out"]: r["candidates"] for r in result.release.statistics["Correct answers in another form"].records()}
    assert {label: n for label, n in rows.items() if n} == {
        "unit: x or / 7 (days per week)": 2, "unit: x or / 12 (items per dozen)": 1,
        "unit: x or / 16 (ounces per pound)": 1, "unit: x or / 24 (hours per day)": 1,
        "the gold rounded to the option's decimals": 2}
    report = [json.loads(line) for line in (tmp_path / "pool").read_text().splitlines()]
    assert report[0]["left_out"] == [{"text": "21", "count": 2, "models": ["b", "c"],
                                      "reason": "unit_multiple:7 (days per week)"}]
    assert [left["text"] for left in report[5]["left_out"]] == ["2.38", "2.4"]
    models = {row["model"]: row for row in result.release.statistics["Models"].records()}
    assert {m: (row["answers"], row["correct"], row["pool candidates it gave"],
                row["left out (not shown as an option)"]) for m, row in models.items()} == {
        "a": (6, 6, 0, 0), "b": (6, 0, 0, 6), "c": (6, 0, 0, 6), "d": (6, 0, 6, 0), "e": (6, 0, 6, 0), "f": (6, 0, 6, 0)}
    assert validate(result).passed
    # the validator's own readings refuse the forms the builder's rule was blinded to
    for index, value, check in ((0, "21", "no_unit_multiple"), (5, "2.38", "no_rounded_gold")):
        record = result.configs["set_0"]["test"][index]
        choices = list(record.choices)
        choices[next(i for i in range(len(choices)) if i != record.answer)] = value
        broken = list(result.configs["set_0"]["test"])
        broken[index] = record.replace(choices=choices)
        original = result.configs["set_0"]["test"]
        result.configs["set_0"]["test"] = broken
        with pytest.raises(ValidationFailed, match=check):
            validate(result)
        result.configs["set_0"]["test"] = original



def test_the_validator_reads_the_questions_units_itself(tmp_path, monkeypatch):
    """The validator's unit check shares no code with the pool filter's unit reading: with the builder's reading
    of the question's units blinded, "21" (days, for 3 weeks), "60" (items, for 5 dozen), "400" (ounces, for 25
    pounds), "2" (days, for 48 hours) and "28" stay among the options, and the validator refuses every one."""
    from builders.gsm_mc import answers

    monkeypatch.setattr(answers, "question_conversions", lambda question: ())
    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", OTHER_UNIT_SOURCE).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [
        {"question_index": i, "model": "abcdef"[k], "output": f"#### {answer}"}
        for i, answers in enumerate(OTHER_UNIT_ANSWERS) for k, answer in enumerate(answers)])
    argv = ["--source", str(source), "--predictions", str(predictions), "--sets", "3"]
    result = made(parse(argv))
    other_unit = {f"gsm8k/test/{i}": value for i, value in enumerate(["21", "60", "400", "2", "28"])}
    shown = [(r.id, c) for records in result.configs.values() for r in records["test"] for c in r.choices
             if other_unit.get(r.id) == c]
    assert {c for _, c in shown} == {"21", "60", "400", "2", "28"}
    with pytest.raises(ValidationFailed) as failure:
        validate(result)
    assert dict(re.findall(r"(\w+) \((\d+): ", str(failure.value))) == {"no_unit_multiple": str(len(shown))}

def test_float_artefacts_read_as_the_number_meant():
    from builders.gsm_mc.answers import normalize_number

    assert [normalize_number(t) for t in ("201.89999999999998", "0.04999999999999999", "-64.99999999999999",
                                          "5.999999999999999", "10.833333333333332", "3.25", "1234.5678")] == [
        "201.9", "0.05", "-65", "6", "10.83", "3.25", "1234.5678"]


PLATINUM_ROWS = [  # GSM8K_TEST's rows 0-3 as GSM8K-Platinum gives them: 1 relabelled, 2 removed (listed), 3 unknown
    {**GSM8K_TEST[0], "cleaning_status": "consensus"},
    {**GSM8K_TEST[1], "answer": "#### 1,300", "cleaning_status": "revised"},
    {**GSM8K_TEST[2], "cleaning_status": "removed"},
    {**GSM8K_TEST[3], "cleaning_status": "looked at"},
    {**GSM8K_TEST[5], "cleaning_status": "verified"},
]


def test_gsm8k_platinum_with_predictions_made_on_gsm8k(files, tmp_path):
    platinum = write_jsonl(tmp_path / "platinum" / "test.jsonl", PLATINUM_ROWS).parent
    argv = ["--benchmark", "gsm8k_platinum", "--source", str(platinum), "--gsm8k-questions", str(files["source"]),
            "--predictions", str(files["predictions"]), "--sets", "1", "--choices", "3"]
    result = made(parse(argv))
    assert sorted((e.id, e.reason) for e in result.exclusions.entries) == [
        ("gsm8k_platinum/test/2", "removed_by_platinum"), ("gsm8k_platinum/test/3", "malformed_row"),
        ("gsm8k_platinum/test/4", "no_predictions")]
    records = result.configs["set_0"]["test"]
    assert [(r.id, r.gold, r.metadata["cleaning_status"]) for r in records] == [
        ("gsm8k_platinum/test/0", "5", "consensus"), ("gsm8k_platinum/test/1", "1300", "revised")]
    # GSM8K row 1's predictions reach Platinum row 1 by its text; GSM8K's old key 1200 is now a distractor
    assert sorted(records[1].choices) == ["1100", "1200", "1300"] and records[1].choices[records[1].answer] == "1300"
    assert result.release.card_context["predictions_matched"] == 10 and result.release.card_context["platinum"]
    assert result.release.card_context["predictions_unmatched_reasons"] == {"question_not_found": 7}
    assert validate(result).passed
    assert gsm_mc.main(["--source", str(files["source"]), "--gsm8k-questions", str(files["source"]),
                        "--predictions", str(files["predictions"]), "--output", str(tmp_path / "x")]) == 2


def test_a_5_mb_adversarial_prediction_adds_under_2_seconds(files, tmp_path):
    """Regression: a 140 KB output of unclosed ``\\boxed{`` took a build from 6 s to 112 s. An output
    beyond MAX_OUTPUT_CHARS is not read (an invalid answer, counted in the card); shorter ones are read in
    linear time."""
    import time

    from builders.from_predictions.extract import MAX_OUTPUT_CHARS

    rows = [{"question_index": i, "model": m, "output": o} for i, m, o in PREDICTIONS]
    hostile = [{"question_index": 0, "model": "x", "output": "\\boxed{" * 750_000},  # 5.25 MB
               {"question_index": 2, "model": "x", "output": "\\boxed{" * (MAX_OUTPUT_CHARS // 7 - 2) + "#### 12"}]
    plain = write_jsonl(tmp_path / "plain.jsonl", rows)
    attacked = write_jsonl(tmp_path / "attacked.jsonl", rows + hostile)
    seconds = {}
    for name, path in (("plain", plain), ("attacked", attacked)):
        argv = ["--source", str(files["source"]), "--predictions", str(path), "--sets", "2"]
        start = time.perf_counter()
        result = made(parse(argv))
        seconds[name] = time.perf_counter() - start
    assert seconds["attacked"] - seconds["plain"] < 2.0, seconds
    assert result.release.card_context["predictions_too_long"] == 1
    assert result.release.statistics["Models"].row("x") == {
        "model": "x", "answers": 2, "correct": 0, "invalid (no extractable answer)": 1, "pool candidates it gave": 1,
        "left out (not shown as an option)": 0}


def test_gsm8k_platinum_sample_builds_offline(tmp_path):
    assert gsm_mc.main(["--benchmark", "gsm8k_platinum", "--source", "sample", "--output", str(tmp_path / "out"),
                        "--log-level", "WARNING"]) == 0
    card = (tmp_path / "out" / "README.md").read_text()
    assert "**Source: GSM8K-Platinum**" in card and "55 matched" in card and "`question_not_found`: 5" in card
    loaded = datasets.load_dataset(str(tmp_path / "out"), "set_0")["test"]
    assert loaded.num_rows == 11 and loaded[5]["metadata"]["cleaning_status"] == "revised"


@pytest.mark.slow
def test_a_release_built_with_the_former_default_rank_draw_rebuilds_from_its_config(tmp_path):
    """Releases made before the balanced draw record `draw: rank`; their build_config.yaml must still rebuild them
    (the draw was once removed, which made such a config an error)."""
    import yaml

    first = tmp_path / "a" / "build_config.yaml"
    assert gsm_mc.main(["--source", "sample", "--draw", "rank", "--output", str(tmp_path / "a"), "--no-progress"]) == 0
    assert yaml.safe_load(first.read_text())["params"]["draw"] == "rank"
    assert gsm_mc.main(["--config", str(first), "--source", "sample", "--output", str(tmp_path / "b"),
                        "--no-progress"]) == 0
    assert (tmp_path / "b" / "build_config.yaml").read_text() == first.read_text()
    parquet = sorted((tmp_path / "a").rglob("*.parquet"))
    assert len(parquet) == 11
    assert [p.read_bytes() for p in parquet] == [(tmp_path / "b" / p.relative_to(tmp_path / "a")).read_bytes()
                                                 for p in parquet]


def test_the_validator_refuses_a_distractor_of_another_kind_the_balanced_draw_let_through(tmp_path, monkeypatch):
    """The balanced draw takes distractors of the key's kind (an integer or not, its sign) where the
    pool holds enough of them, so that "the only integer" or "the only positive number" is no cue. The validator
    re-reads every option with exact fractions; with the draw's rule blinded, "5.5" and "-4" stand beside the
    integer key 5 and validation fails."""
    from builders.from_predictions import sets as mc

    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", [
        real_item("Tom has 3 apples and buys 2 more. What is his total?", "5")]).parent  # no count question
    answers = ["5", "5", "5", "6", "6", "4", "7", "8", "5.5", "-4"]
    predictions = write_jsonl(tmp_path / "p.jsonl", [
        {"question_index": 0, "model": f"m{k}", "output": f"#### {a}"} for k, a in enumerate(answers)])
    argv = ["--source", str(source), "--predictions", str(predictions)]
    result = made(parse(argv))
    drawn = {c for k in range(10) for c in result.configs[f"set_{k}"]["test"][0].choices}
    assert drawn == {"4", "5", "6", "7", "8"}
    validate(result)
    monkeypatch.setattr(mc, "of_the_keys_kind", lambda pool, count, value: list(pool.candidates))
    blinded = made(parse(argv))
    assert {"5.5", "-4"} & {c for k in range(10) for c in blinded.configs[f"set_{k}"]["test"][0].choices}
    with pytest.raises(ValidationFailed, match="distractors_of_the_keys_kind"):
        validate(blinded)


@pytest.mark.parametrize("key, gold", [
    ("1e999", None), ("1,5", None), ("2.5e3", None), ("12 or 13", None), ("12.5.3", None), ("5%", None),
    ("\u0661\u0662", "12"), ("1,500", "1500"), ("$18", "18"), ("-3", "-3"), ("18.0", "18"), ("3.5", "3.5"),
])
def test_a_key_that_is_not_one_plain_number_is_excluded_with_its_reason(key, gold):
    from builders.core.sources.loading import load_rows
    from builders.gsm_mc.benchmarks import GSM8K as GSM8K_SOURCE

    row = {"question": "How many?", "answer": f"It is a lot.\n#### {key}"}
    loaded = load_rows(GSM8K_SOURCE, {"test": [row, GSM8K_TEST[0]]}, max_excluded=1.0)
    kept = {item.id: item.gold for item in loaded.items["test"]}
    excluded = [(e.id, e.reason, e.detail) for e in loaded.exclusions.entries]
    if gold is None:
        assert kept == {"gsm8k/test/1": "5"}
        assert excluded == [("gsm8k/test/0", "gold_not_a_number", f"'#### {key}' is not one plain number")]
    else:
        assert kept == {"gsm8k/test/0": gold, "gsm8k/test/1": "5"} and excluded == []
