"""The core's runner of a builder's steps (`steps.Run`), what it counts, and the outcome table every card shows."""

from __future__ import annotations

import pytest

from builders.core.items.outcomes import ALTERED, COPIED, EXCLUDED, Exclude, ExclusionLog, Skip, outcome_table
from builders.core.items.record import MCQRecord, OpenItem
from builders.core.pipeline.steps import SOURCE_UNCHANGED, Across, Run, Step


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
STEPS = [Step("flip", first_step), Step("mark", second_step)]


def marked(item: MCQRecord, reason: str) -> MCQRecord:
    return item.with_metadata(skip_reason=reason)


def test_skip_and_exclude_are_counted_and_nothing_is_lost():
    run = Run(ITEMS, ExclusionLog())
    outputs = run.make("variant_0", STEPS, copy=marked)["variant_0"]
    # test 1..20: excluded 5, 10, 15, 20 (flip) and 7 (mark); copied 4, 8, 12, 16 (flip) and 3, 6, 9, 18 (mark)
    assert [r.source_index for r in outputs["test"]] == [1, 2, 3, 4, 6, 8, 9, 11, 12, 13, 14, 16, 17, 18, 19]
    outcomes, log = run.outcomes, run.exclusion_log()
    assert outcomes.total(ALTERED, split="test") == 7 and outcomes.total(COPIED, split="test") == 8
    assert outcomes.reasons("test", "variant_0") == {"duplicate_choices": 4, "refers_to_options": 4}
    assert sorted((e.split, e.source_index, e.step, e.reason, e.field, e.config) for e in log.entries) == [
        ("dev", 5, "flip", "blank", "question", None), ("test", 5, "flip", "blank", "question", None),
        ("test", 7, "mark", "too_long", "choices", None), ("test", 10, "flip", "blank", "question", None),
        ("test", 15, "flip", "blank", "question", None), ("test", 20, "flip", "blank", "question", None)]
    for split, items in ITEMS.items():  # rows in = rows out + rows excluded, and out = altered + copied
        assert len(items) == len(outputs[split]) + log.count(split, "variant_0")
        assert len(outputs[split]) == outcomes.total(split=split, config="variant_0")
    # a copy is the item itself, marked by `copy`, even when an earlier step had changed it
    copied = {r.source_index: r for r in outputs["test"] if "skip_reason" in r.metadata}
    assert copied[3].choices == ("a", "b", "c") and copied[3].metadata == {"skip_reason": "duplicate_choices"}
    assert outputs["test"][0].choices == ("c", "b", "a") and outputs["test"][0].metadata == {"altered": True}


def test_without_copy_the_item_itself_is_kept():
    run = Run({"test": [record(4)]}, ExclusionLog())
    assert run.make("shuffle", [Step("flip", first_step)]) == {"shuffle": {"test": [record(4)]}}
    assert run.outcomes.counts == {("shuffle", "test", COPIED, "refers_to_options"): 1}


def test_configs_made_together_get_one_record_each_and_the_same_counts():
    """GSM-MC's sets: one step makes every set of an item; a skip copies the item into every config."""
    run = Run(ITEMS, ExclusionLog())

    def sets(item: MCQRecord) -> dict[str, MCQRecord]:
        first_step(item)
        return {"default": item, "set_0": item, "set_1": item.replace(answer=1)}

    made = run.make(["default", "set_0", "set_1"], [Step("sets", sets)])
    assert made["set_1"]["test"][0].answer == 1 and made["default"]["test"] == made["set_0"]["test"]
    assert {config: run.outcomes.total(split="test", config=config) for config in made} == {
        "default": 16, "set_0": 16, "set_1": 16}
    with pytest.raises(ValueError, match=r"several configs made together need \{config: record\}"):
        run.make(["a", "b"], [Step("one", lambda item: item)])


def test_a_step_across_the_items_gives_one_outcome_each_and_may_reorder_them():
    """A matching pairs items across the split: it is given them all at once, and says for each what became of it."""
    run = Run(ITEMS, ExclusionLog())

    def pair(items):
        test = items["test"]  # the items the first step kept: 1-3, 6, 7, 9, 11, 13, 14, 17-19, swapped in pairs
        ordered = [item for a, b in zip(test[0::2], test[1::2], strict=False) for item in (b, a)]
        outcomes = {"test": [(item, item.with_metadata(paired=True)) for item in ordered]}
        outcomes["test"] += [(item, Exclude("no_partner")) for item in test[len(ordered):]]
        outcomes["dev"] = [(item, Skip("not_paired")) for item in items["dev"]]
        return outcomes

    made = run.make("pairs", [Step("flip", first_step), Across("pair", pair)], copy=marked)["pairs"]
    # the 12 it was given take its order among their places; 4, 8, 12, 16 (copied by flip) keep theirs
    assert [r.source_index for r in made["test"]] == [2, 1, 6, 4, 3, 9, 8, 7, 13, 12, 11, 17, 16, 14, 19, 18]
    assert [r.metadata for r in made["test"]].count({"paired": True}) == 12
    assert [r.metadata for r in made["dev"]] == [{"skip_reason": "not_paired"}] * 3 + [
        {"skip_reason": "refers_to_options"}]
    assert run.outcomes.total(ALTERED, split="test") == 12 and run.outcomes.reasons("dev", "pairs") == {
        "not_paired": 3, "refers_to_options": 1}
    assert not [e for e in run.exclusion_log().entries if e.step == "pair"]  # an even number of items left
    with pytest.raises(ValueError, match="step 'lose' gave no outcome for 1 item"):
        run.make("lost", [Across("lose", lambda items: {"test": [(i, i) for i in items["test"][1:]],
                                                        "dev": [(i, i) for i in items["dev"]]})])


def test_an_exclusion_from_some_configs_is_logged_per_config_and_the_source_s_from_every_one():
    """An item that runs exclude from every config of the build is one exclusion from every config; from some of
    them, one per config."""
    source_log = ExclusionLog()
    source_log.add("test", "src/test/0", 0, "source", Exclude("malformed_row", "answer"))
    run = Run({"test": [record(5), record(6)]}, source_log)
    run.unchanged("original")
    run.make("flipped", [Step("flip", first_step)])
    log = run.exclusion_log()
    assert [(e.id, e.reason, e.config) for e in log.entries] == [
        ("src/test/0", "malformed_row", None), ("src/test/5", "blank", "flipped")]
    assert run.configs["original"]["test"] == [record(5), record(6)]
    assert run.outcomes.reasons("test", "original") == {SOURCE_UNCHANGED: 2}
    with pytest.raises(ValueError, match=r"configs \['original'\] are made twice"):
        run.unchanged("original")
    everywhere = Run({"test": [record(5)]}, ExclusionLog())
    for variant in range(2):
        everywhere.make(f"variant_{variant}", [Step("flip", first_step)])
    assert [(e.id, e.config) for e in everywhere.exclusion_log().entries] == [("src/test/5", None)]


def test_the_source_s_exclusions_count_in_the_split_their_rows_feed():
    """A builder whose splits are not the source's (PythonIO's train holds MBPP's train, validation and prompt
    rows) feeds its own rows to the run: a malformed source row is one row excluded from the split it would have
    fed, so that rows in = rows out + excluded holds per split."""
    source_log = ExclusionLog()
    source_log.add("validation", "src/validation/0", 0, "source", Exclude("malformed_row", "answer"))
    source_log.add("test", "src/test/9", 9, "source", Exclude("malformed_row", "answer"))
    run = Run({}, source_log)
    run.feed_splits({"validation": "train", "prompt": "train"})
    run.make("default", [Step("flip", first_step)], items={"train": [record(1, "train")], "test": [record(2)]})
    log = run.exclusion_log()
    assert sorted((e.split, e.id) for e in log.entries) == [("test", "src/test/9"), ("train", "src/validation/0")]
    assert log.count("train", "default") == 1 and len(run.configs["default"]["train"]) == 1


def test_open_items_are_logged_with_their_row_index():
    item = OpenItem("gsm8k/test/3", "test", 3, "How many?", "4", "4", "", "main")
    run = Run({"test": [item]}, ExclusionLog())
    run.make("default", [Step("gold", lambda _: (_ for _ in ()).throw(Exclude("no_gold_answer")))])
    assert [(e.id, e.source_index, e.step) for e in run.exclusion_log().entries] == [("gsm8k/test/3", 3, "gold")]
    assert run.configs == {"default": {"test": []}} and run.outcomes.covers("default", "test")


def test_the_outcome_table_lists_every_config_and_groups_those_with_the_same_rows():
    run = Run(ITEMS, ExclusionLog())
    for variant in range(3):
        run.make(f"variant_{variant}", [Step("flip", first_step)])
    run.unchanged("original")
    log = run.exclusion_log()
    log.add("test", "src/test/99", 99, "pair", Exclude("no_partner"), config="variant_1")
    table = outcome_table(run.outcomes, log, list(run.configs))
    variants = "variant_0, variant_2"
    assert table.records() == [
        {"configs": variants, "split": "test", "outcome": ALTERED, "reason": None, "items": 12},
        {"configs": variants, "split": "test", "outcome": COPIED, "reason": "refers_to_options", "items": 4},
        {"configs": variants, "split": "test", "outcome": EXCLUDED, "reason": "blank", "items": 4},
        {"configs": variants, "split": "dev", "outcome": ALTERED, "reason": None, "items": 3},
        {"configs": variants, "split": "dev", "outcome": COPIED, "reason": "refers_to_options", "items": 1},
        {"configs": variants, "split": "dev", "outcome": EXCLUDED, "reason": "blank", "items": 1},
        {"configs": "variant_1", "split": "test", "outcome": ALTERED, "reason": None, "items": 12},
        {"configs": "variant_1", "split": "test", "outcome": COPIED, "reason": "refers_to_options", "items": 4},
        {"configs": "variant_1", "split": "test", "outcome": EXCLUDED, "reason": "blank", "items": 4},
        {"configs": "variant_1", "split": "test", "outcome": EXCLUDED, "reason": "no_partner", "items": 1},
        {"configs": "variant_1", "split": "dev", "outcome": ALTERED, "reason": None, "items": 3},
        {"configs": "variant_1", "split": "dev", "outcome": COPIED, "reason": "refers_to_options", "items": 1},
        {"configs": "variant_1", "split": "dev", "outcome": EXCLUDED, "reason": "blank", "items": 1},
        {"configs": "original", "split": "test", "outcome": COPIED, "reason": SOURCE_UNCHANGED, "items": 20},
        {"configs": "original", "split": "dev", "outcome": COPIED, "reason": SOURCE_UNCHANGED, "items": 5},
    ]
    assert "| variant_1 | test | excluded | no_partner | 1 |" in table.to_markdown()


def test_a_build_whose_configs_the_core_did_not_make_fails_validation(tmp_path):
    """Regression: the outcome check looped only over the configs that had counts, so a builder that made its configs
    without the runner (no counts at all) was validated, and its card's outcome table had 0 rows."""
    from fixtures import MMLU_TEST

    from builders import wicked
    from builders.core.errors import ValidationFailed
    from builders.core.items.outcomes import Outcomes
    from builders.core.sources.loading import load_rows
    from builders.core.validation.validate import validate

    source = load_rows(wicked.BUILDER.benchmark("mmlu"), {"test": MMLU_TEST})
    build = wicked.BUILDER.make_build(source, wicked.BUILDER.options_from(["--sba-classifier", "none"]))
    assert validate(build).passed
    build.outcomes = Outcomes()  # the same configs, made by hand
    with pytest.raises(ValidationFailed, match=r"outcomes_accounted \(6: original/test: no outcome counts \(a config "
                                               r"made without the core's runner of steps\)\)"):
        validate(build)
    build = wicked.BUILDER.make_build(source, wicked.BUILDER.options_from(["--sba-classifier", "none"]))
    build.outcomes.counts = {key: n for key, n in build.outcomes.counts.items() if key[0] != "variant_4"}
    build.outcomes.ran = {key for key in build.outcomes.ran if key[0] != "variant_4"}  # one config made by hand
    with pytest.raises(ValidationFailed, match=r"outcomes_accounted \(1: variant_4/test: no outcome counts"):
        validate(build)


def test_a_build_with_one_split_made_without_the_runner_fails_validation():
    """Outcome counts are required of every split too: a config whose `dev` split was made by hand (its `test` by
    the runner) is refused, naming that split."""
    from fixtures import MMLU_DEV, MMLU_TEST

    from builders import wicked
    from builders.core.errors import ValidationFailed
    from builders.core.sources.loading import load_rows
    from builders.core.validation.validate import validate

    source = load_rows(wicked.BUILDER.benchmark("mmlu"), {"test": MMLU_TEST, "dev": MMLU_DEV})
    build = wicked.BUILDER.make_build(source, wicked.BUILDER.options_from(["--sba-classifier", "none"]))
    assert validate(build).passed
    build.outcomes.counts = {key: n for key, n in build.outcomes.counts.items() if key[:2] != ("variant_1", "dev")}
    build.outcomes.ran = {key for key in build.outcomes.ran if key != ("variant_1", "dev")}
    with pytest.raises(ValidationFailed, match=r"outcomes_accounted \(1: variant_1/dev: no outcome counts"):
        validate(build)


def test_a_record_replaced_is_the_dataclass_replaced():
    # MCQRecord.replace and with_metadata copy the record without dataclasses.replace's per-field init: the same record
    import dataclasses

    record = MCQRecord("a", "q", ("x", "y"), 1, "s", "c", "test", 3, metadata={"k": 1}, columns={"c": 0})
    changed = record.replace(choices=["u", "v"], answer=0).with_metadata(z=2).with_columns(c=1)
    assert changed == dataclasses.replace(record, choices=("u", "v"), answer=0, metadata={"k": 1, "z": 2},
                                          columns={"c": 1})
    assert record.choices == ("x", "y") and record.metadata == {"k": 1} and isinstance(changed.choices, tuple)
    with pytest.raises(TypeError, match="no field 'bogus'"):
        record.replace(bogus=1)
