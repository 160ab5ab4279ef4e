"""The one per-item runner (`steps.run_steps`), what it counts, and the outcome table every card shows."""

from __future__ import annotations

import pytest

from builders.core.items.record import MCQRecord, OpenItem
from builders.core.items.outcomes import (
    ALTERED,
    COPIED,
    EVERY_CONFIG,
    EXCLUDED,
    Exclude,
    ExclusionLog,
    Outcomes,
    Skip,
    outcome_table,
)
from builders.core.pipeline.steps import run_steps


def record(index: int, split: str = "test", question: str = "q") -> MCQRecord:
    return MCQRecord(id=f"src/{split}/{index}", question=f"{question} {index}", choices=("a", "b", "c"), answer=0,
                     source="src", source_config="default", source_split=split, source_index=index)


def first_step(item: MCQRecord) -> MCQRecord:
    if item.source_index % 5 == 0:
        raise Exclude("blank", "question", "no text")
    if item.source_index % 4 == 0:
        raise Skip("refers_to_options")
    return item.replace(choices=item.choices[::-1], answer=len(item.choices) - 1 - item.answer)


def second_step(item: MCQRecord) -> MCQRecord:
    if item.source_index % 3 == 0:
        raise Skip("duplicate_choices")
    if item.source_index == 7:
        raise Exclude("too_long", "choices", "7 is too long")
    return item.with_metadata(altered=True)


ITEMS = {"test": [record(i) for i in range(1, 21)], "dev": [record(i, "dev") for i in range(1, 6)]}


def test_skip_and_exclude_are_counted_and_nothing_is_lost():
    log = ExclusionLog()
    outputs, outcomes = run_steps(ITEMS, [("flip", first_step), ("mark", second_step)], exclusions=log,
                                  copy=lambda item, reason: item.with_metadata(skip_reason=reason))
    # test 1..20: excluded 5, 10, 15, 20 (flip) and 7 (mark); copied 4, 8, 12, 16 (flip) and 3, 6, 9, 18 (mark)
    assert [r.source_index for r in outputs["test"]] == [1, 2, 3, 4, 6, 8, 9, 11, 12, 13, 14, 16, 17, 18, 19]
    assert outcomes.total(ALTERED, split="test") == 7 and outcomes.total(COPIED, split="test") == 8
    assert outcomes.reasons("test") == {"duplicate_choices": 4, "refers_to_options": 4}
    assert [(e.split, e.source_index, e.step, e.reason, e.field) for e in log.entries] == [
        ("test", 5, "flip", "blank", "question"), ("test", 7, "mark", "too_long", "choices"),
        ("test", 10, "flip", "blank", "question"), ("test", 15, "flip", "blank", "question"),
        ("test", 20, "flip", "blank", "question"), ("dev", 5, "flip", "blank", "question")]
    for split, items in ITEMS.items():  # rows in = rows out + rows excluded, and out = altered + copied
        assert len(items) == len(outputs[split]) + log.count(split)
        assert len(outputs[split]) == outcomes.total(split=split)
    # a copy is the item itself, marked by `copy`, even when an earlier step had changed it
    copied = {r.source_index: r for r in outputs["test"] if "skip_reason" in r.metadata}
    assert copied[3].choices == ("a", "b", "c") and copied[3].metadata == {"skip_reason": "duplicate_choices"}
    assert outputs["test"][0].choices == ("c", "b", "a") and outputs["test"][0].metadata == {"altered": True}


def test_without_copy_the_item_itself_is_kept_and_without_a_log_an_exclusion_propagates():
    outputs, outcomes = run_steps({"test": [record(4)]}, [("flip", first_step)], configs="shuffle")
    assert outputs == {"test": [record(4)]}
    assert outcomes.counts == {("shuffle", "test", COPIED, "refers_to_options"): 1}
    with pytest.raises(Exclude):
        run_steps({"test": [record(5)]}, [("flip", first_step)])


def test_open_items_are_logged_with_their_row_index():
    item = OpenItem("gsm8k/test/3", "test", 3, "How many?", "4", "4", "", "main")
    log = ExclusionLog()
    run_steps({"test": [item]}, [("gold", lambda _: (_ for _ in ()).throw(Exclude("no_gold_answer")))],
              exclusions=log)
    assert [(e.id, e.source_index, e.step) for e in log.entries] == [("gsm8k/test/3", 3, "gold")]


def test_the_outcome_table_lists_altered_copied_and_excluded_per_configs_and_split():
    log = ExclusionLog()
    _, outcomes = run_steps(ITEMS, [("flip", first_step)], exclusions=log, configs="variant_0")
    outcomes.update(Outcomes())  # another builder part with nothing to count adds no row
    log.add("test", "src/test/99", 99, "pair", Exclude("no_partner"), config="variant_1")
    table = outcome_table(outcomes, log)
    assert table.records() == [
        {"configs": "variant_0", "split": "test", "outcome": ALTERED, "reason": None, "items": 12},
        {"configs": "variant_0", "split": "test", "outcome": COPIED, "reason": "refers_to_options", "items": 4},
        {"configs": "variant_0", "split": "dev", "outcome": ALTERED, "reason": None, "items": 3},
        {"configs": "variant_0", "split": "dev", "outcome": COPIED, "reason": "refers_to_options", "items": 1},
        {"configs": EVERY_CONFIG, "split": "test", "outcome": EXCLUDED, "reason": "blank", "items": 4},
        {"configs": EVERY_CONFIG, "split": "dev", "outcome": EXCLUDED, "reason": "blank", "items": 1},
        {"configs": "variant_1", "split": "test", "outcome": EXCLUDED, "reason": "no_partner", "items": 1},
    ]
    assert "| variant_0 | test | copied unchanged | refers_to_options | 4 |" in table.to_markdown()
