"""GSM-MC: a count question gets no non-integer and no negative distractor, and no wrong value is shown at
two roundings in one item; the builder leaves such candidates out of the pool, the validator re-reads both."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from test_gsm_mc import made, parse, write_jsonl

from builders.core.errors import ValidationFailed
from builders.core.items.record import MCQRecord
from builders.core.validation.validate import validate
from builders.gsm_mc import checks, kinds, transform

SOURCE = [
    {"question": "Sam has 2 boxes of 4 pens. How many pens does he have?", "answer": "#### 8"},  # a count
    {"question": "Ann pays $9.50 for lunch. How much did she pay in dollars?", "answer": "#### 9.5"},  # an amount
    {"question": "Bo worked from 9 to 11:30. How many hours did he work?", "answer": "#### 2.5"},  # not whole
]
ANSWERS = [  # per question: (model, answer); two models give the count's key, so that 7.5 is no consensus
    [("a", "7.5"), ("b", "7.5"), ("c", "7.5"), ("d", "-8"), ("e", "6"), ("f", "9"), ("g", "10"), ("h", "8"), ("i", "8")],
    [("a", "8/3"), ("b", "8/3"), ("c", "2.67"), ("d", "2.666"), ("e", "2.7"), ("f", "3"), ("g", "12")],
    [("a", "1.5"), ("b", "-1"), ("c", "3"), ("d", "4")],
]


def kind_build(tmp_path, *extra: str):
    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", SOURCE).parent
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"question_index": i, "model": m, "output": f"#### {a}"}
                                                      for i, answers in enumerate(ANSWERS) for m, a in answers])
    return made(parse(["--source", str(source), "--predictions", str(predictions), "--sets", "10",
                       "--pool", str(tmp_path / "pool.jsonl"), *extra]))


@pytest.mark.parametrize("draw", ["balanced", "weighted"])
def test_a_count_question_gets_whole_distractors_and_one_rounding_per_value(tmp_path, draw):
    result = kind_build(tmp_path, "--draw", draw)
    for name, splits in result.configs.items():
        count, amount, hours = splits["test"]
        assert sorted(count.choices, key=Fraction) == ["6", "8", "9", "10"], name  # 7.5 and -8 left out: 3 remain
        # 2.67 and 2.7 are roundings of 8/3, which two models gave: 3 of the 4 others are drawn
        assert len(amount.choices) == 4 and set(amount.choices) <= {"9.5", "8/3", "12", "2.666", "3"}, name
        assert len(hours.choices) == 4 and set(hours.choices) <= {"2.5", "-1", "1.5", "3", "4"}  # 2.5 is no count
    assert {c for splits in result.configs.values() for c in splits["test"][2].choices} >= {"-1", "1.5"}
    rows = {r["candidate left out"]: (r["candidates"], r["questions"])
            for r in result.release.statistics["Distractors of the question's kind"].records()}
    assert rows == {"not a count: a non-integer, for a count question": (1, 1),
                    "not a count: a negative number, for a count question": (1, 1),
                    "a second rounding of a candidate kept": (2, 1)}
    report = [json.loads(line) for line in (tmp_path / "pool.jsonl").read_text().splitlines()]
    assert [[(left["text"], left["reason"]) for left in row["left_out"]] for row in report] == [
        [("7.5", "not_a_count:non_integer"), ("-8", "not_a_count:negative")],
        [("2.67", "another_rounding"), ("2.7", "another_rounding")], []]
    assert [row["pool_size"] for row in report] == [3, 4, 4]
    assert validate(result).passed


def test_the_validator_refuses_what_the_builder_was_blinded_to(tmp_path, monkeypatch):
    monkeypatch.setattr(transform, "of_the_questions_kind", lambda pool, question: pool)
    result = kind_build(tmp_path, "--draw", "weighted")
    with pytest.raises(ValidationFailed, match="count_question_distractors") as failed:
        validate(result)
    assert "one_rounding_per_value" in str(failed.value)


def record(question: str, choices: tuple[str, ...], answer: int = 0) -> MCQRecord:
    return MCQRecord(id="q", question=question, choices=choices, answer=answer, source="s", source_config="c",
                     source_split="test", source_index=0)


class Released:
    def __init__(self, *records: MCQRecord):
        self._records = list(records)

    def records(self):
        yield "set_0", "test", self._records


def test_the_validators_own_readings_give_exact_violations():
    count = "Tom has 3 bags. How many apples? (Each bag holds 2.)"
    released = Released(record(count, ("6", "5.5", "-6", "7")), record("What is 5 + 3.5?", ("8.5", "8/3", "2.67")),
                        record("What is 5 + 3.5?", ("8.5", "2.666", "2.67", "3", "2.6")),
                        record("He asks how many they think. What is their average guess?", ("6", "5.5")),
                        record("Calculate the total number of legs the tables have.", ("12", "-4", "12.5")),
                        record("If the number of cats is 4, what is the cost?", ("12", "12.5")))
    assert list(checks.COUNT_DISTRACTORS.find_violations(released)) == [
        "set_0/test q: the count question's distractors ['5.5', '-6'] are not whole counts",
        "set_0/test q: the count question's distractors ['-4', '12.5'] are not whole counts"]
    assert list(checks.ONE_ROUNDING.find_violations(released)) == [
        "set_0/test q: '8/3' and '2.67' are one value at two roundings",
        "set_0/test q: '2.666' and '2.67' are one value at two roundings"]  # 2.6 is 2.666 at no rounding


def test_the_builders_rule_of_a_count_question_and_of_two_roundings():
    assert kinds.is_count_question("How many people does he help? (Remember there are 31 days in March.)", Fraction(7))
    assert not kinds.is_count_question("He asks his friends how many they think are in the jar. One says 80. "
                                       "What is their average guess?", Fraction(70))
    assert kinds.is_count_question("What is the maximum number of boxes which can be loaded?", Fraction(83))
    assert not kinds.is_count_question("If the number of cats is 4, what is the cost?", Fraction(12))
    assert not kinds.is_count_question("How many hours did he work?", Fraction(5, 2))
    assert not kinds.is_count_question("How much does she make in dollars?", Fraction(18))
    pairs = [("8/3", "2.67"), ("2.666", "2.67"), ("2.54", "2.5"), ("2.67", "3"), ("2.666", "8/3"), ("2.6", "2.7"),
             ("1/3", "2/3"), ("2.665", "2.67"), ("2.665", "2.66")]
    assert [kinds.two_roundings(a, b) for a, b in pairs] == [True, True, True, False, False, False, False, True, True]


# ---- the consensus check's precision, measured on labels ---------------------------------------------


def test_the_stated_precision_is_the_labels_files():
    """SUSPECT_KEY_MEASURED, which the card states, recomputed from the labels file and the default build's flags
    (every labelled question less the one the count rule no longer flags)."""
    from builders.gsm_mc import suspect_labels

    rows = suspect_labels.labels()
    assert len(rows) == 30 and {r["label"] for r in rows.values()} == set(suspect_labels.LABELS)
    flags = set(rows) - set(suspect_labels.DEFAULT_BUILD_UNFLAGGED)
    assert suspect_labels.precision(flags).as_dict() == suspect_labels.SUSPECT_KEY_MEASURED
    assert [rows[i]["correct"] for i in ("gsm8k/test/403", "gsm8k/test/454", "gsm8k/test/1309")] == ["135", "240", "2180"]
    measured = suspect_labels.precision(["gsm8k/test/403", "gsm8k/test/12", "gsm8k/test/13", "gsm8k/test/5",
                                         "gsm8k/test/403"])
    assert (measured.flagged, measured.wrong_key, measured.ambiguous, measured.key_right, measured.unlabelled) == \
        (4, 1, 1, 1, 1)
    assert (measured.wrong_key_share, measured.defect_share) == (1 / 3, 2 / 3)


def test_the_card_states_the_measured_precision_beside_the_flags(tmp_path):
    from test_gsm_mc import consensus_files

    result = made(parse(consensus_files(tmp_path)))
    note = " ".join(result.release.statistics["Suspect keys"].note.split())
    assert ("Measured on labels: we read and solved each of the 29 questions the rule flags in a default build on "
            "GSM8K test; 7 (24%) have a wrong key, 8 two readings, and 14 (48%) a right key") in note
    assert "Of this build's" not in note  # the fixture's flags (its ids 0-4) are no labelled question
    assert result.release.card_context["suspect_measured"]["wrong_key"] == 7
