"""Leaderboard-sensitivity perturbations: configs, invariants, prompts, task folders, lm-eval."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import datasets
import pytest
import yaml
from fixtures import outcome_rows_per_config, read_lm_eval_task, write_benchmark, write_jsonl

from builders.core.errors import ValidationFailed
from builders.core.items.record import LETTERS
from builders.core.items.rng import permutations
from builders.core.pipeline import cli
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import load_source
from builders.core.sources.predictions import read_predictions
from builders.core.validation.validate import validate
from builders import perturbations
from builders.perturbations import configs, prompts, transform
from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parents[1]

# Five test items (4-7, 13) and one dev item (3) have options that depend on each other or on their
# positions; test item 10 has six options, so the gold positions run A-F and the symbol sets need their
# extension. Test item 11 has options that differ in case only (alleles: not duplicates); test item 12 has a
# truly duplicated option (as MMLU-Pro test/8584); test item 13 refers to options in lower case
# ("Both a and c", as MMLU virology).
TEST_ROWS = [
    {"question": "What is 2 + 3?", "subject": "elementary_mathematics", "choices": ["4", "5", "6", "7"], "answer": 1},
    {"question": "Which gas do plants absorb?", "subject": "high_school_biology",
     "choices": ["Oxygen", "Nitrogen", "Carbon dioxide", "Helium"], "answer": 2},
    {"question": "Which is a mammal?", "subject": "high_school_biology", "choices": ["Shark", "Dolphin", "Trout", "Eel"], "answer": 1},
    {"question": "Capital of Italy?", "subject": "high_school_geography", "choices": ["Rome", "Milan", "Turin", "Naples"], "answer": 0},
    {"question": "Which are primes?", "subject": "elementary_mathematics", "choices": ["2", "3", "5", "All of the above"], "answer": 3},
    {"question": "Which is a noble gas?", "subject": "high_school_chemistry",
     "choices": ["Neon", "Iron", "Carbon", "None of these"], "answer": 0},
    {"question": "Which are fruits?", "subject": "high_school_biology", "choices": ["Apple", "Pear", "Both A and B", "Carrot"], "answer": 2},
    {"question": "Which step is wrong?", "subject": "elementary_mathematics",
     "choices": ["Step 1", "Step 2", "The same as option A", "Step 4"], "answer": 2},
    {"question": "What is 10 / 2?", "subject": "elementary_mathematics", "choices": ["2", "5", "10", "20"], "answer": 1},
    {"question": "Largest ocean?", "subject": "high_school_geography", "choices": ["Atlantic", "Indian", "Pacific", "Arctic"], "answer": 2},
    {"question": "Which number is even?", "subject": "elementary_mathematics",
     "choices": ["1", "3", "5", "8", "9", "11"], "answer": 3},
    {"question": "Which cross gives only heterozygous offspring?", "subject": "high_school_biology",
     "choices": ["BB Bb", "Bb Bb", "BB bb", "bb bb"], "answer": 2},
    {"question": "Which value is the largest of 1, 2, 2, 3?", "subject": "elementary_mathematics",
     "choices": ["2", "3", "2 ", "1"], "answer": 1},  # a repeated distractor (a repeated key is excluded at load)
    {"question": "Which of these are viruses?", "subject": "high_school_biology",
     "choices": ["HIV", "E. coli", "Influenza", "Both a and c"], "answer": 3},
]
DEV_ROWS = [
    {"question": "What is 1 + 1?", "subject": "elementary_mathematics", "choices": ["1", "2", "3", "4"], "answer": 1},
    {"question": "What is 3 x 3?", "subject": "elementary_mathematics", "choices": ["6", "9", "12", "33"], "answer": 1},
    {"question": "Which organ pumps blood?", "subject": "high_school_biology", "choices": ["Lung", "Heart", "Liver", "Kidney"], "answer": 1},
    {"question": "Which are living things?", "subject": "high_school_biology",
     "choices": ["Cats", "Trees", "Fungi", "All of the above"], "answer": 3},
    {"question": "Longest river?", "subject": "high_school_geography", "choices": ["Nile", "Thames", "Seine", "Rhine"], "answer": 0},
    {"question": "Water boils at sea level at", "subject": "high_school_chemistry",
     "choices": ["50 C", "90 C", "100 C", "120 C"], "answer": 2},
]
POSITION_DEPENDENT_TEST = {"mmlu/test/4": "has_all_of_the_above", "mmlu/test/5": "has_none_of_the_above",
                           "mmlu/test/6": "has_option_combination", "mmlu/test/7": "has_letter_reference",
                           "mmlu/test/13": "has_option_combination"}
DUPLICATE_TEST = "mmlu/test/12"
SIX = "ABCDEF"
CONFIGS = (["original", "swap_fixed", "derangement", "shuffle", "original_zero_shot"]
           + [f"gold_at_{L}" for L in SIX] + [f"fewshot_gold_at_{L}" for L in SIX]
           + [f"fewshot_and_test_gold_at_{L}" for L in SIX]
           + [f"symbols_{s}{v}" for s in ("common", "rare") for v in ("", "_shuffled_symbols", "_shuffled_content")]
           + ["no_subject", "correct_answer", "answer_in_context", "wrong_answer_in_context", "ood_fewshot", "trivial_fewshot"])


def write_source(root: Path, test=TEST_ROWS, dev=DEV_ROWS) -> Path:
    write_jsonl(root / "mmlu" / "test.jsonl", test)
    write_jsonl(root / "mmlu" / "dev.jsonl", dev)
    return root / "mmlu"


def make_build(source, *argv: str):
    """The build of these command-line words from ``source``, as the command line makes it (the core runs the
    builder's steps)."""
    return perturbations.BUILDER.make_build(source, perturbations.BUILDER.options_from(argv))


def build_fixture(tmp_path: Path, *argv: str):
    source = load_source(BENCHMARKS["mmlu"], str(write_source(tmp_path)))
    return make_build(source, *argv)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return build_fixture(tmp_path_factory.mktemp("perturbations"))


def originals(build):
    return {r.id: r for records in build.source.items.values() for r in records}


def counts(build, config):
    return {split: len(records) for split, records in build.configs[config].items()}


# ---- configs and accounting ----------------------------------------------------------------------------


def test_every_config_keeps_every_item_with_exact_counts(built):
    assert list(built.configs) == CONFIGS
    assert {config: counts(built, config) for config in CONFIGS} == {config: {"test": 14, "dev": 6} for config in CONFIGS}
    assert not built.exclusions.entries
    report = validate(built)
    assert report.passed
    assert all(n["in"] == n["out"] + n["excluded"] for splits in report.counts.values() for n in splits.values())
    assert report.counts["shuffle"] == {"test": {"in": 14, "out": 14, "excluded": 0}, "dev": {"in": 6, "out": 6, "excluded": 0}}


def skip_counts(build, config):
    return Counter((split, r.metadata["skip_reason"]) for split, records in build.configs[config].items()
                   for r in records if r.metadata["skip_reason"])


def test_items_that_cannot_move_are_copied_unchanged_with_their_reason(built):
    """Regression: such items were excluded from the order-changing configs."""
    source = originals(built)
    shuffle = {r.id: r for rs in built.configs["shuffle"].values() for r in rs}
    assert {i: r.metadata["skip_reason"] for i, r in shuffle.items() if r.metadata["skip_reason"]} == {
        **POSITION_DEPENDENT_TEST, DUPLICATE_TEST: "duplicate_choices", "mmlu/dev/3": "has_all_of_the_above"}
    for item_id in [*POSITION_DEPENDENT_TEST, DUPLICATE_TEST, "mmlu/dev/3"]:
        record = shuffle[item_id]
        assert (record.choices, record.answer, record.columns["labels"]) == (
            source[item_id].choices, source[item_id].answer, ["A", "B", "C", "D"])
        assert record.metadata["permutation"] == [0, 1, 2, 3]
    assert skip_counts(built, "gold_at_E") == {
        ("test", "has_all_of_the_above"): 1, ("test", "has_none_of_the_above"): 1, ("test", "has_option_combination"): 2,
        ("test", "has_letter_reference"): 1, ("test", "duplicate_choices"): 1,
        ("test", "fewer_options_than_gold_position"): 7, ("dev", "has_all_of_the_above"): 1,
        ("dev", "fewer_options_than_gold_position"): 5}
    # every order-changing config and split copies the six items, with the same reasons; a config that only
    # relabels copies the items whose options name a label, and relabels "All of the above" (test/4)
    # and "None of the above" (test/5)
    for config in CONFIGS:
        spec = next(s for s in configs.config_specs(6) if s.name == config)
        reasons = {r.id: r.metadata["skip_reason"] for r in built.configs[config]["test"]
                   if r.metadata["skip_reason"] not in (None, "fewer_options_than_gold_position")}
        if spec.relabels_only:
            assert reasons == {"mmlu/test/6": "has_option_combination", "mmlu/test/7": "has_letter_reference",
                               "mmlu/test/13": "has_option_combination", DUPLICATE_TEST: "duplicate_choices"}, config
        elif spec.transforms("test", "dev"):
            assert reasons == {**POSITION_DEPENDENT_TEST, DUPLICATE_TEST: "duplicate_choices"}, config
        else:  # the options are the source's anyway: only the duplicate is flagged, in every config
            assert reasons == {DUPLICATE_TEST: "duplicate_choices"}, config


def test_real_mmlu_references_are_copied_unchanged_and_real_content_is_moved(tmp_path):
    """The real MMLU items the first detector missed ("Both a and c", "a. and b. above", bare
    "None"...), and on real look-alikes that are content (roots "1 and 2", alleles, variables)."""
    from fixtures_mmlu_references import CONTENT, REFERENCES

    rows = {"test": [], "dev": []}
    expected = {}
    for item in [*REFERENCES, *CONTENT]:
        expected[f"mmlu/{item['split']}/{len(rows[item['split']])}"] = item["reason"]
        rows[item["split"]].append({k: item[k] for k in ("question", "subject", "choices", "answer")})
    write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows["test"])
    write_jsonl(tmp_path / "mmlu" / "dev.jsonl", rows["dev"])
    build = make_build(load_source(BENCHMARKS["mmlu"], str(tmp_path / "mmlu")),
                       "--only", "shuffle", "gold_at_A", "symbols_rare", "wrong_answer_in_context")
    assert validate(build).passed  # the checks' own narrow detector agrees
    source = originals(build)
    labels_only = {i: reason if reason in ("has_option_combination", "has_letter_reference") else None
                   for i, reason in expected.items()}  # every item with a label reason has that reason first
    assert Counter(labels_only.values()) == {"has_option_combination": 43, None: 48}
    for config in ("shuffle", "gold_at_A", "symbols_rare"):
        records = {r.id: r for rs in build.configs[config].values() for r in rs}
        assert len(records) == len(REFERENCES) + len(CONTENT)
        wanted = labels_only if config == "symbols_rare" else expected
        assert {i: r.metadata["skip_reason"] for i, r in records.items()} == wanted, config
        for item_id, reason in wanted.items():
            if reason:
                assert (records[item_id].choices, records[item_id].answer) == (source[item_id].choices,
                                                                               source[item_id].answer)
    moved = [r for r in build.configs["shuffle"]["test"] if expected[r.id] is None]
    assert len(moved) == len(CONTENT) and all(r.metadata["permutation"] != [0, 1, 2, 3] for r in moved)
    assert {r.metadata["skip_reason"] for rs in build.configs["wrong_answer_in_context"].values() for r in rs} == {None}


def test_prose_references_are_not_moved_and_none_like_options_are(tmp_path):
    """The real prose references (mmlu/test 216, 9419, 9677, 6288) and the forms of the issue are copied
    unchanged, with their reason, in every config that reorders; a config that only relabels copies only the
    forms that name a label ("Only A", "(b) is correct"). An option that means "none" (1646, 11109, 13740) does
    not depend on the order: those items are moved (only WiCkeD, which adds NOTA, copies them)."""
    from fixtures_mmlu_references import FORMS, NONE_LIKE, PROSE_REFERENCES

    rows = [{k: item[k] for k in ("question", "subject", "choices", "answer")} for item in PROSE_REFERENCES + NONE_LIKE]
    rows += [{"question": f"Question {i}?", "subject": "biology", "answer": 0,
              "choices": ["Mitochondria make ATP", "Ribosomes make lipids", "The nucleus digests food", form]}
             for i, form in enumerate(FORMS)]
    write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows)
    write_jsonl(tmp_path / "mmlu" / "dev.jsonl", DEV_ROWS)
    build = make_build(load_source(BENCHMARKS["mmlu"], str(tmp_path / "mmlu")),
                       "--only", "shuffle", "fewshot_and_test_gold_at_B", "symbols_common")
    position = [item["reason"] for item in PROSE_REFERENCES] + [None] * len(NONE_LIKE) + [
        None if reason == "none_like_option" else reason for reason in FORMS.values()]
    labels = [reason if reason == "has_letter_reference" else None for reason in position]
    assert Counter(labels) == {None: 24, "has_letter_reference": 10}
    for config, expected in (("shuffle", position), ("fewshot_and_test_gold_at_B", position), ("symbols_common", labels)):
        records = build.configs[config]["test"]
        assert [r.metadata["skip_reason"] for r in records] == expected, config
        assert all(r.metadata["permutation"] == [0, 1, 2, 3] and r.columns["labels"] == ["A", "B", "C", "D"]
                   for r, reason in zip(records, expected, strict=True) if reason)
    assert validate(build).passed


def test_validator_refuses_moved_references_when_the_builder_is_blinded(tmp_path, monkeypatch):
    """With the builder's detector blinded, the checks' own reading refuses the build: in `shuffle`, the
    six items whose options plainly name others (test 4-7, 13, dev 3); in `symbols_common`, which only relabels,
    the three that name a label (test 6 "Both A and B", 7 "option A", 13 "Both a and c")."""
    monkeypatch.setattr(transform, "position_dependent_reason", lambda choices, among=None: None)
    transform.content_skip_reason.cache_clear()
    try:
        build = build_fixture(tmp_path, "--only", "shuffle", "symbols_common")
    finally:
        transform.content_skip_reason.cache_clear()
    with pytest.raises(ValidationFailed, match=r"references_not_moved \(9: "):
        validate(build)


def test_options_that_differ_in_case_are_not_duplicates(built):
    """Regression: alleles "BB Bb" / "Bb Bb" are different options; whitespace alone is not."""
    assert transform.content_skip_reason(("BB Bb", "Bb Bb", "BB bb", "bb bb")) is None
    assert transform.content_skip_reason(("2", "3", "2 ", "1")) == "duplicate_choices"
    assert transform.content_skip_reason(("Sc ≡ Ej", "sC ≡ eJ", "ii", "II")) is None
    shuffled = by_id(built, "shuffle")["mmlu/test/11"]
    assert shuffled.metadata["skip_reason"] is None and shuffled.metadata["permutation"] != [0, 1, 2, 3]
    assert shuffled.gold == "BB bb"


def test_a_duplicated_item_shows_a_wrong_answer_that_differs_from_the_gold(tmp_path):
    """The item's own wrong-answer demonstration is a wrong option (options 0 and 2 read "2", the gold is "3")."""
    shown = set()
    for seed in range(12):
        build = build_fixture(tmp_path / str(seed), "--seed", str(seed), "--only", "wrong_answer_in_context")
        record = by_id(build, "wrong_answer_in_context")[DUPLICATE_TEST]
        assert record.metadata["skip_reason"] == "duplicate_choices" and record.choices == ("2", "3", "2 ", "1")
        shown.add(record.metadata["context_answer"])
    assert shown and 1 not in shown and shown <= {0, 2, 3}


# ---- the invariants ----------------------------------------------------------------------------------


def test_gold_text_is_preserved_under_every_permutation(built):
    source = originals(built)
    for config, _split, records in built.records():
        for record in records:
            original = source[record.id]
            permutation = record.metadata["permutation"]
            assert sorted(record.choices) == sorted(original.choices), (config, record.id)
            assert list(record.choices) == [original.choices[p] for p in permutation]
            assert record.gold == original.gold and record.metadata["original_answer"] == original.answer


def test_gold_at_every_position(built):
    source = originals(built)
    for i, letter in enumerate(SIX):
        for config in (f"gold_at_{letter}", f"fewshot_and_test_gold_at_{letter}"):
            for record in (r for rs in built.configs[config].values() for r in rs):
                if record.metadata["skip_reason"] is None:
                    assert record.answer == i
                else:
                    assert (record.choices, record.answer) == (source[record.id].choices, source[record.id].answer)
            moved = sum(r.metadata["skip_reason"] is None for r in built.configs[config]["test"])
            assert moved == (8 if i < 4 else 1)  # 14 - 6 that cannot move; E and F: the six-option item only
        setting_i = built.configs[f"fewshot_gold_at_{letter}"]
        assert {r.answer for r in setting_i["dev"] if r.metadata["skip_reason"] is None} <= {i}
        assert [(r.choices, r.answer) for r in setting_i["test"]] == [(source[r.id].choices, source[r.id].answer)
                                                                       for r in setting_i["test"]]
    # gold_at moves the gold by one swap: the other options keep their places
    record = next(r for r in built.configs["gold_at_D"]["test"] if r.id == "mmlu/test/0")
    assert record.choices == ("4", "7", "6", "5") and record.answer == 3
    assert built.configs["gold_at_D"]["test"][0].columns["fewshot"] == []


def test_derangement_moves_every_option(built, tmp_path):
    source = originals(built)
    for seed in range(8):
        build = built if seed == 0 else build_fixture(tmp_path / str(seed), "--seed", str(seed), "--only", "derangement")
        moved = 0
        for records in build.configs["derangement"].values():
            for record in (r for r in records if r.metadata["skip_reason"] is None):
                assert all(a != b for a, b in zip(record.choices, source[record.id].choices, strict=True))
                moved += 1
        assert moved == 8 + 5  # 14 - 6 test items, 6 - 1 dev items
    drawn = {tuple(order) for order in permutations(0, [str(i) for i in range(400)], [4] * 400, derangements=True)}
    every = {p for p in itertools.permutations(range(4)) if all(i != v for i, v in enumerate(p))}
    assert drawn == every and len(every) == 9  # uniform over all 9 derangements of 4, none left out


def test_swap_fixed_applies_the_same_swaps_to_every_item(built, tmp_path):
    permutations = Counter(tuple(r.metadata["permutation"]) for r in built.configs["swap_fixed"]["test"])
    assert permutations == {(1, 0, 3, 2): 7, (1, 0, 3, 2, 5, 4): 1, (0, 1, 2, 3): 6}  # 6 copied unchanged
    custom = build_fixture(tmp_path, "--swaps", "AC", "--only", "swap_fixed")
    assert Counter(tuple(r.metadata["permutation"]) for r in custom.configs["swap_fixed"]["test"]) == {
        (2, 1, 0, 3): 7, (2, 1, 0, 3, 4, 5): 1, (0, 1, 2, 3): 6}
    with pytest.raises(cli.UserError, match="disjoint"):
        configs.parse_swaps("AB,BC")


def test_labels_are_unique_and_from_the_symbol_sets(built):
    shuffle = {r.id: r for r in built.configs["shuffle"]["test"]}
    source = originals(built)
    for config, _split, records in built.records():
        for record in records:
            labels = record.columns["labels"]
            assert len(set(labels)) == len(labels) == len(record.choices)
            if not config.startswith("symbols_") or record.metadata["skip_reason"]:
                assert labels == list(LETTERS[: len(labels)])
    six = {c: next(r for r in built.configs[c]["test"] if r.id == "mmlu/test/10") for c in CONFIGS if c.startswith("symbols")}
    assert six["symbols_common"].columns["labels"] == ["$", "&", "#", "@", "%", "*"]
    assert six["symbols_rare"].columns["labels"] == ["œ", "§", "З", "ü", "ß", "Ж"]
    for name in ("common", "rare"):
        for record in built.configs[f"symbols_{name}_shuffled_symbols"]["test"]:
            assert record.choices == source[record.id].choices  # content order kept
            shown = configs.symbols(name) if record.metadata["skip_reason"] is None else LETTERS
            assert sorted(record.columns["labels"]) == sorted(shown[: len(record.choices)])
        for record in built.configs[f"symbols_{name}_shuffled_content"]["test"]:
            assert record.choices == shuffle[record.id].choices  # the `shuffle` permutation, symbols in order
            shown = configs.symbols(name) if record.metadata["skip_reason"] is None else LETTERS
            assert record.columns["labels"] == list(shown[: len(record.choices)])
    assert by_id(built, "symbols_rare")["mmlu/test/6"].columns["labels"] == ["A", "B", "C", "D"]  # "Both A and B"
    orders = {tuple(r.columns["labels"]) for r in built.configs["symbols_common_shuffled_symbols"]["test"]}
    assert len(orders) > 1  # shuffled per item, not once


def test_validation_refuses_broken_invariants(tmp_path):
    build = build_fixture(tmp_path, "--only", "derangement", "gold_at_B", "symbols_rare")
    records = build.configs["gold_at_B"]["test"]
    records[0] = records[0].replace(answer=0, choices=records[0].choices)
    with pytest.raises(ValidationFailed, match="gold_at_position"):
        validate(build)
    build = build_fixture(tmp_path / "b", "--only", "symbols_rare")
    records = build.configs["symbols_rare"]["test"]
    records[0] = records[0].with_columns(labels=["œ", "œ", "З", "ü"])
    with pytest.raises(ValidationFailed, match="labels_unique"):
        validate(build)
    build = build_fixture(tmp_path / "c", "--only", "derangement")
    records = build.configs["derangement"]["test"]
    original = originals(build)[records[0].id]
    records[0] = records[0].replace(choices=original.choices, answer=original.answer,
                                    metadata={**records[0].metadata, "permutation": [0, 1, 2, 3]})
    with pytest.raises(ValidationFailed, match="derangement_moves_every_option"):
        validate(build)


def test_validation_refuses_a_moved_reference_or_a_dropped_demonstration(tmp_path):
    """The checks re-derive both from the records and the source, with their own reference detector."""
    from builders.perturbations.checks import plain_reference

    for text in ("Both a and c", "a. and b. above", "both a and b.", "neither a nor b.", "All of the above",
                 "None of these", "The same as option A", "(a) & (b)", "Neither"):
        assert plain_reference(text), text
    for text in ("vitamin A and B12", "A", "R", "Bb Bb", "All of these stars", "Option Bravo", "1 and 2", "Dora",
                 "Band", "A&E"):
        assert not plain_reference(text), text
    build = build_fixture(tmp_path, "--only", "shuffle")
    records = build.configs["shuffle"]["test"]
    i = next(k for k, r in enumerate(records) if r.id == "mmlu/test/13")  # "Both a and c", copied unchanged
    permutation = [3, 0, 1, 2]
    original = originals(build)["mmlu/test/13"]
    records[i] = records[i].replace(choices=tuple(original.choices[p] for p in permutation), answer=0,
                                    metadata={**records[i].metadata, "permutation": permutation, "skip_reason": None})
    with pytest.raises(ValidationFailed, match="references_not_moved"):
        validate(build)
    build = build_fixture(tmp_path / "b", "--only", "shuffle")
    records = build.configs["shuffle"]["test"]
    records[1] = records[1].with_columns(fewshot=records[1].columns["fewshot"][:1])  # dev/3 dropped
    with pytest.raises(ValidationFailed, match="demonstrations_valid.*same_demonstrations_as_original"):
        validate(build)


# ---- demonstrations and prompts -------------------------------------------------------------------------


def by_id(build, config, split="test"):
    return {r.id: r for r in build.configs[config][split]}


def test_demonstrations_are_the_subjects_first_few_shot_items(built):
    original, shuffle = by_id(built, "original"), by_id(built, "shuffle")
    assert original["mmlu/test/0"].columns["fewshot"] == ["mmlu/dev/0", "mmlu/dev/1"]  # lm-eval's: first k, in order
    assert original["mmlu/test/1"].columns["fewshot"] == ["mmlu/dev/2", "mmlu/dev/3"]
    assert shuffle["mmlu/test/1"].columns["fewshot"] == ["mmlu/dev/2", "mmlu/dev/3"]  # dev/3 shown unchanged, not dropped
    assert by_id(built, "shuffle", "dev")["mmlu/dev/3"].metadata["skip_reason"] == "has_all_of_the_above"
    assert original["mmlu/test/3"].columns["fewshot"] == ["mmlu/dev/4"]
    assert by_id(built, "original", "dev")["mmlu/dev/0"].columns["fewshot"] == ["mmlu/dev/1"]  # never itself
    assert Counter(len(r.columns["fewshot"]) for r in built.configs["original"]["test"]) == {2: 11, 1: 3}
    assert Counter(len(r.columns["fewshot"]) for r in built.configs["original"]["dev"]) == {1: 4, 0: 2}
    dev_subjects = {r.id: r.subject for r in built.source.items["dev"]}
    for record in built.configs["ood_fewshot"]["test"]:
        demos = record.columns["fewshot"]
        assert demos and len({dev_subjects[i] for i in demos}) == 1 and dev_subjects[demos[0]] != record.subject
    assert by_id(built, "ood_fewshot")["mmlu/test/1"].columns["fewshot"] == ["mmlu/dev/0", "mmlu/dev/1"]  # the one other subject with 2
    trivial_ids = [row["id"] for row in transform.trivial_questions()]
    for record in built.configs["trivial_fewshot"]["test"]:
        assert record.columns["fewshot"] == trivial_ids[: len(original[record.id].columns["fewshot"])]
    for record in built.configs["answer_in_context"]["test"]:
        assert record.columns["fewshot"][-1] == record.id and record.metadata["context_answer"] == record.answer
    for record in built.configs["wrong_answer_in_context"]["test"]:
        assert record.columns["fewshot"][-1] == record.id and record.metadata["context_answer"] != record.answer


def test_every_config_shows_as_many_demonstrations_as_original(built):
    """Regression: a demonstration that could not be shuffled was dropped, so six MMLU subjects
    had 4 demonstrations in the shuffled configs and 5 in `original`."""
    original = {r.id: r.columns["fewshot"] for rs in built.configs["original"].values() for r in rs}
    assert sum(map(len, original.values())) == 25 + 4
    for config in CONFIGS:
        spec = next(s for s in configs.config_specs(6) if s.name == config)
        for _split, records in built.configs[config].items():
            for record in records:
                shown = record.columns["fewshot"][:-1] if spec.context_answer else record.columns["fewshot"]
                if spec.demonstrations == "none":
                    assert shown == [], config
                elif spec.promises_demonstration_answers("dev"):  # only the few-shot items it moves
                    moved = {r.id: r for rs in built.configs[config].values() for r in rs}
                    assert shown == [i for i in original[record.id] if moved[i].metadata["skip_reason"] is None]
                elif spec.demonstrations == "same_subject":
                    assert shown == original[record.id], (config, record.id)
                else:
                    assert len(shown) == len(original[record.id]), (config, record.id)
    zero_shot = [c for c in CONFIGS if next(s for s in configs.config_specs(6) if s.name == c).demonstrations == "none"]
    assert zero_shot == ["original_zero_shot", *[f"gold_at_{L}" for L in SIX]]
    assert by_id(built, "original_zero_shot")["mmlu/test/0"].columns["prompt"] == (
        "The following are multiple choice questions (with answers) about elementary mathematics.\n\n"
        "What is 2 + 3?\nA. 4\nB. 5\nC. 6\nD. 7\nAnswer:")


def test_gold_position_configs_show_only_demonstrations_that_answer_the_position(built):
    """`fewshot_gold_at_<L>` and `fewshot_and_test_gold_at_<L>` promise that every demonstration answers
    L; dev/3 ("All of the above") cannot move, so biology shows dev/2 alone there (and dev/2, dev/3 in `original`),
    and no 4-option dev item can answer E or F, so those configs show none."""
    biology = ["mmlu/test/1", "mmlu/test/2", "mmlu/test/6", "mmlu/test/11", "mmlu/test/13"]
    assert [by_id(built, "original")[i].columns["fewshot"] for i in biology] == [["mmlu/dev/2", "mmlu/dev/3"]] * 5
    for family in ("fewshot_gold_at", "fewshot_and_test_gold_at"):
        for position, letter in enumerate(SIX):
            config = {r.id: r for rs in built.configs[f"{family}_{letter}"].values() for r in rs}
            shown = [i for record in config.values() for i in record.columns["fewshot"]]
            assert all(config[i].answer == position for i in shown), (family, letter)
            # test: 6 arithmetic items x 2, 5 biology x 1, 2 geography x 1, 1 chemistry x 1; dev: dev/0, dev/1, dev/3 x 1
            assert len(shown) == (0 if letter in "EF" else 12 + 5 + 2 + 1 + 3), (family, letter)
            assert [config[i].columns["fewshot"] for i in biology] == [[] if letter in "EF" else ["mmlu/dev/2"]] * 5
    assert validate(built).passed


def test_the_random_sampler_draws_a_gold_position_configs_demonstrations_from_those_it_moves(tmp_path):
    """Regression: with ``--fewshot-sampler random`` an item's random order of its subject's few-shot items was kept
    by purpose alone, so a gold-position config, whose candidates are fewer (those it moves), was given `original`'s
    order of all of them: biology showed dev/3, which cannot answer A, and the build failed its validation."""
    build = build_fixture(tmp_path, "--fewshot-sampler", "random", "--only", "original", "fewshot_gold_at_A")
    assert validate(build).passed
    original = by_id(build, "original")
    gold_at_a = {r.id: r for rs in build.configs["fewshot_gold_at_A"].values() for r in rs}
    biology = ["mmlu/test/1", "mmlu/test/2", "mmlu/test/6", "mmlu/test/11", "mmlu/test/13"]
    assert {tuple(original[i].columns["fewshot"]) for i in biology} == {("mmlu/dev/2", "mmlu/dev/3"),
                                                                          ("mmlu/dev/3", "mmlu/dev/2")}
    assert [gold_at_a[i].columns["fewshot"] for i in biology] == [["mmlu/dev/2"]] * 5
    assert all(gold_at_a[i].answer == 0 for r in gold_at_a.values() for i in r.columns["fewshot"])
    orders = [tuple(r.columns["fewshot"]) for r in build.configs["original"]["test"] if len(r.columns["fewshot"]) == 2]
    assert len(set(orders)) > 2  # a random order per item: not lm-eval's first k in source order for every item


def test_validator_refuses_a_gold_position_demonstration_that_does_not_answer_the_position(tmp_path, monkeypatch):
    """With the builder's choice of demonstrations blinded (any few-shot item), the checks refuse."""
    monkeypatch.setattr(configs.ConfigSpec, "promises_demonstration_answers", lambda self, fewshot_split: False)
    build = build_fixture(tmp_path, "--only", "fewshot_gold_at_A")
    monkeypatch.undo()
    with pytest.raises(ValidationFailed, match="demonstrations_answer_the_position"):
        validate(build)


def test_trivial_questions_file_is_well_formed():
    rows = transform.trivial_questions()
    assert len(rows) == 20 and len({r["id"] for r in rows}) == 20
    assert Counter(r["answer"] for r in rows) == {0: 5, 1: 5, 2: 5, 3: 5}
    for row in rows:
        assert len(row["choices"]) == 4 and len({c.casefold() for c in row["choices"]}) == 4


def test_prompt_is_the_rendered_mmlu_prompt(built):
    record = by_id(built, "original")["mmlu/test/0"]
    first, second = [by_id(built, "original", "dev")[i] for i in record.columns["fewshot"]]
    assert record.columns["prompt"] == (
        "The following are multiple choice questions (with answers) about elementary mathematics.\n\n"
        f"{first.question}\nA. {first.choices[0]}\nB. {first.choices[1]}\nC. {first.choices[2]}\nD. {first.choices[3]}\n"
        f"Answer: {LETTERS[first.answer]}\n\n"
        f"{second.question}\nA. {second.choices[0]}\nB. {second.choices[1]}\nC. {second.choices[2]}\nD. {second.choices[3]}\n"
        f"Answer: {LETTERS[second.answer]}\n\n"
        "What is 2 + 3?\nA. 4\nB. 5\nC. 6\nD. 7\nAnswer:"
    )
    assert by_id(built, "gold_at_B")["mmlu/test/3"].columns["prompt"] == (
        "The following are multiple choice questions (with answers) about high school geography.\n\n"
        "Capital of Italy?\nA. Milan\nB. Rome\nC. Turin\nD. Naples\nAnswer:")
    no_subject = by_id(built, "no_subject")["mmlu/test/3"].columns["prompt"]
    assert no_subject == ("The following are multiple choice questions (with answers).\n\n"
                          "Longest river?\nA. Nile\nB. Thames\nC. Seine\nD. Rhine\nAnswer: A\n\n"
                          "Capital of Italy?\nA. Rome\nB. Milan\nC. Turin\nD. Naples\nAnswer:")
    correct = by_id(built, "correct_answer")["mmlu/test/3"].columns["prompt"]
    assert correct.count("Correct answer:") == 2 and correct.endswith("D. Naples\nCorrect answer:")
    wrong = by_id(built, "wrong_answer_in_context")["mmlu/test/3"]
    shown = LETTERS[wrong.metadata["context_answer"]]
    assert wrong.columns["prompt"].endswith(f"D. Naples\nAnswer: {shown}\n\nCapital of Italy?\nA. Rome\nB. Milan\n"
                                            "C. Turin\nD. Naples\nAnswer:") and shown != "A"
    dev = by_id(built, "original", "dev")
    for record in built.configs["fewshot_gold_at_C"]["test"]:  # setting i: only the demonstrations answer C
        answers = [line for line in record.columns["prompt"].splitlines() if line.startswith("Answer:")]
        # dev/3 ("All of the above", gold D) cannot move: it is not shown, so every demonstration answers C
        assert answers == ["Answer: C"] * len(record.columns["fewshot"]) + ["Answer:"]
    biology = by_id(built, "fewshot_gold_at_C")["mmlu/test/1"]
    assert biology.columns["fewshot"] == ["mmlu/dev/2"] and biology.columns["prompt"].count("Answer: D") == 0
    assert dev["mmlu/dev/3"].answer == 3
    rare = by_id(built, "symbols_rare")["mmlu/test/10"].columns["prompt"]
    assert rare.endswith("Which number is even?\nœ. 1\n§. 3\nЗ. 5\nü. 8\nß. 9\nЖ. 11\nAnswer:")


def test_the_task_renderer_reproduces_every_prompt(built, tmp_path):
    """utils.py renders from dataset rows exactly what the builder wrote, demonstrations included."""
    for config in CONFIGS:
        rows = {}
        for _split, records in built.configs[config].items():
            rows.update({r.id: r.to_row() for r in records})
        rows.update({row["id"]: row for row in transform.trivial_questions()})
        spec = next(s for s in configs.config_specs(6) if s.name == config)
        for record in built.configs[config]["test"]:
            row = rows[record.id]
            demos = [row if i == row["id"] else rows[i] for i in row["fewshot"]]
            assert prompts.render(row, demos, "symbol", spec.with_subject, spec.answer_prefix) == row["prompt"], config


def test_shared_fields_are_what_each_config_makes_on_its_own(tmp_path, monkeypatch):
    """Configs of one variant share their records' fields: the build is the one that makes every config's own."""
    shared = build_fixture(tmp_path)
    monkeypatch.setattr(transform.SharedFields, "split_fields",
                        lambda self, perturbation, split, records: [perturbation.fields(r, split) for r in records])
    own = build_fixture(tmp_path / "own")
    for config in CONFIGS:
        for split, records in own.configs[config].items():
            assert [r.to_row() for r in shared.configs[config][split]] == [r.to_row() for r in records], config


def test_the_checks_plain_renderer_is_the_task_renderer_on_every_record(built):
    """The check's renderer joins a shared head once per demonstrations shown: every record's prompt is still what
    prompts.render writes from its rows, and a changed list of demonstrations is rendered anew."""
    from builders.perturbations.checks import PlainRenderer, prompt_row

    trivial = {row["id"]: row for row in transform.trivial_questions()}
    for config in CONFIGS:
        spec = next(s for s in configs.config_specs(6) if s.name == config)
        rows = {r.id: prompt_row(r) for r in built.configs[config]["dev"]}
        render = PlainRenderer(spec, rows, trivial)
        for split, records in built.configs[config].items():
            for record in records:
                row = prompt_row(record)
                demos = [row if i == record.id else rows.get(i) or trivial[i] for i in record.columns["fewshot"]]
                expected = prompts.render(row, demos, "symbol", spec.with_subject, spec.answer_prefix)
                assert render(record) == expected, (config, split, record.id)
                if len(record.columns["fewshot"]) > 1:
                    fewer = record.with_columns(fewshot=record.columns["fewshot"][1:])
                    assert render(fewer) == prompts.render(row, demos[1:], "symbol", spec.with_subject,
                                                           spec.answer_prefix) != expected


def test_demonstrations_out_of_order_or_from_elsewhere_are_refused(built):
    """The first ids of the candidates pass without a set; any other list is still read id by id."""
    from builders.perturbations.checks import ExpectedDemonstrations

    spec = next(s for s in configs.config_specs(6) if s.name == "original")
    expected = ExpectedDemonstrations(built.source.items["dev"], 5, "first_n")
    record = by_id(built, "original")["mmlu/test/0"]
    assert list(expected.problems(spec, "test", record)) == []
    for fewshot, problem in ((["mmlu/dev/1", "mmlu/dev/0"], "not the first 2 in source order"),
                             (["mmlu/dev/0", "mmlu/dev/2"], "are not same subject demonstrations"),
                             (["mmlu/dev/0"], "1 demonstrations, expected 2")):
        found = list(expected.problems(spec, "test", record.with_columns(fewshot=fewshot)))
        assert len(found) == 1 and problem in found[0], (fewshot, found)
    random = ExpectedDemonstrations(built.source.items["dev"], 5, "random")
    assert list(random.problems(spec, "test", record.with_columns(fewshot=["mmlu/dev/1", "mmlu/dev/0"]))) == []


# ---- the release as datasets loads it ---------------------------------------------------------------


@pytest.mark.slow
def test_cli_build_loads_with_its_labels_and_counts_every_config(tmp_path):
    folder = write_source(tmp_path)
    assert perturbations.main(["--source", str(folder), "--output", str(tmp_path / "out1")]) == 0
    assert len(list((tmp_path / "out1").rglob("*.parquet"))) == 2 * len(CONFIGS)
    loaded = datasets.load_dataset(str(tmp_path / "out1"), "symbols_rare")
    assert loaded["test"].num_rows == 14 and loaded["dev"].num_rows == 6
    assert loaded["test"].column_names[-4:] == ["labels", "fewshot", "prompt", "metadata"]
    assert loaded["test"].features["labels"].feature == datasets.Value("string")
    row = next(r for r in loaded["test"] if r["id"] == "mmlu/test/10")
    assert row["labels"] == ["œ", "§", "З", "ü", "ß", "Ж"] and row["metadata"]["permutation"] == [0, 1, 2, 3, 4, 5]
    card = (tmp_path / "out1" / "README.md").read_text()
    assert "| derangement_moves_every_option |" in card and "`ß Ж ø ¶ Ð þ`" in card
    rows = outcome_rows_per_config(card, CONFIGS)  # the one outcome table: per config and split, rows in = altered
    # + copied unchanged
    for config in CONFIGS:
        assert sum(n for c, split, _, _, n in rows if c == config and split == "test") == 14, config
        assert sum(n for c, split, _, _, n in rows if c == config and split == "dev") == 6, config
    assert [row[1:] for row in rows if row[0] == "original"] == [
        ("test", "copied unchanged", "baseline_config", 13), ("test", "copied unchanged", "duplicate_choices", 1),
        ("dev", "copied unchanged", "baseline_config", 6)]
    assert [row[1:] for row in rows if row[0] == "gold_at_E"] == [
        ("test", "altered", "–", 1), ("test", "copied unchanged", "duplicate_choices", 1),
        ("test", "copied unchanged", "fewer_options_than_gold_position", 7),
        ("test", "copied unchanged", "has_all_of_the_above", 1), ("test", "copied unchanged", "has_letter_reference", 1),
        ("test", "copied unchanged", "has_none_of_the_above", 1),
        ("test", "copied unchanged", "has_option_combination", 2),
        ("dev", "copied unchanged", "fewer_options_than_gold_position", 5),
        ("dev", "copied unchanged", "has_all_of_the_above", 1)]
    assert [row[1:] for row in rows if row[0] == "symbols_rare"] == [  # relabelling breaks only references to a label
        ("test", "altered", "–", 10), ("test", "copied unchanged", "duplicate_choices", 1),
        ("test", "copied unchanged", "has_letter_reference", 1), ("test", "copied unchanged", "has_option_combination", 2),
        ("dev", "altered", "–", 6)]


def test_golden_item_is_stable_across_releases(built):
    # A change of RNG or algorithm would silently change every published dataset: pin a few items.
    assert by_id(built, "shuffle")["mmlu/test/0"].metadata["permutation"] == [0, 2, 1, 3]
    assert by_id(built, "derangement")["mmlu/test/0"].metadata["permutation"] == [2, 0, 3, 1]
    assert by_id(built, "symbols_common_shuffled_symbols")["mmlu/test/0"].columns["labels"] == ["&", "#", "@", "$"]
    assert by_id(built, "original")["mmlu/test/0"].columns["fewshot"] == ["mmlu/dev/0", "mmlu/dev/1"]


# ---- command line, other benchmarks ----------------------------------------------------------------------

DEMONSTRATION_ONLY = [f"fewshot_gold_at_{L}" for L in SIX] + ["ood_fewshot", "trivial_fewshot"]


@pytest.mark.parametrize("how", ["shots_0", "no_fewshot_split"])
def test_without_demonstrations_the_demonstration_only_configs_are_left_out(tmp_path, how):
    """Regression: with --shots 0, or a source without its few-shot split (the local MMLU-Pro copy),
    `fewshot_gold_at_<L>`, `ood_fewshot` and `trivial_fewshot` were published as byte-for-byte copies of
    `original` (a perturbation "without effect")."""
    if how == "shots_0":
        source, argv = load_source(BENCHMARKS["mmlu"], str(write_source(tmp_path))), ["--shots", "0"]
    else:
        write_jsonl(tmp_path / "nodev" / "test.jsonl", TEST_ROWS)
        source, argv = load_source(BENCHMARKS["mmlu"], str(tmp_path / "nodev")), []
    build = make_build(source, *argv)
    assert list(build.configs) == [c for c in CONFIGS if c not in DEMONSTRATION_ONLY]
    assert len(build.configs) == 27
    for config, split, records in build.records():
        assert len(records) == (14 if split == "test" else 6)
        in_context = config in ("answer_in_context", "wrong_answer_in_context")
        assert all(r.columns["fewshot"] == ([r.id] if in_context else []) for r in records)
    reason = "--shots 0" if how == "shots_0" else "the source has no few-shot split 'dev'"
    assert build.release.card_context["left_out"] == {"reason": reason, "families": ["fewshot_gold_at_<L>", "ood_fewshot",
                                                                              "trivial_fewshot"]}
    assert validate(build).passed


def test_demonstration_only_configs_are_refused_without_demonstrations(tmp_path, capsys):
    folder = write_source(tmp_path)
    assert perturbations.main(["--source", str(folder), "--output", str(tmp_path / "o"), "--shots", "0",
                               "--only", "trivial_fewshot", "fewshot_gold_at_B"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == ["error: --only: ['fewshot_gold_at_B', 'trivial_fewshot'] change only the demonstrations, and "
                      "this build shows none (--shots 0)"]
    assert not (tmp_path / "o").exists()
    assert perturbations.main(["--source", str(folder), "--output", str(tmp_path / "o"), "--shots", "0",
                               "--only", "shuffle"]) == 0
    card = (tmp_path / "o" / "README.md").read_text()
    assert "This build shows no demonstrations (--shots 0)" in card and "`trivial_fewshot`" in card


def test_swaps_past_the_last_option_of_every_item_are_refused(tmp_path, capsys):
    """Regression: `--swaps AG` (the fixture's items have at most six options) made `swap_fixed` a silent
    copy of `original`, every item marked as transformed."""
    folder = write_source(tmp_path)
    assert perturbations.main(["--source", str(folder), "--output", str(tmp_path / "o"), "--only", "swap_fixed",
                               "--swaps", "AG,BC"]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == ["error: --swaps: AG names a position past the last option of every item (at most 6 options, A-F)"]
    assert not (tmp_path / "o").exists()
    build = make_build(load_source(BENCHMARKS["mmlu"], str(folder)), "--only", "swap_fixed", "--swaps", "AF")
    moved = [r for r in build.configs["swap_fixed"]["test"] if r.metadata["permutation"] != list(range(len(r.choices)))]
    assert [r.id for r in moved] == ["mmlu/test/10"]  # the one item with six options


def test_cli_errors_are_one_line(tmp_path, capsys):
    folder = write_source(tmp_path)
    assert perturbations.main(["--source", str(folder), "--output", str(tmp_path / "o"), "--only", "nope"]) == 2
    assert "--only: unknown configs ['nope']" in capsys.readouterr().err
    assert perturbations.main(["--source", str(folder), "--output", str(tmp_path / "o"), "--swaps", "AA"]) == 2
    assert "--swaps" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mmlu_pro", "commonsense_qa", "arc_challenge"])
def test_other_benchmarks_build(tmp_path, name):
    folder = write_benchmark(name, tmp_path)
    assert perturbations.main(["--benchmark", name, "--source", str(folder), "--output", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "validation_report.json").read_text())
    assert report["passed"]


def test_push_to_an_unreachable_hub_stops_before_loading(tmp_path):
    """One `error:` line, status 2, in seconds, before the source is read or anything is built."""
    import socket
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", BUILDERS["perturbations"], "--source", str(write_source(tmp_path)),
                             "--push", "someone/perturbations", "--version", "1.0.0", "--output", str(tmp_path / "o")],
                            capture_output=True, text=True, cwd=REPO, timeout=60,
                            env={**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_TOKEN": "hf_x"})
    assert time.monotonic() - started < 15
    assert result.returncode == 2 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "cannot reach the Hub" in errors[0], result.stderr[-2000:]
    assert "read mmlu" not in result.stderr and not (tmp_path / "o").exists()


# ---- lm-eval task folders, publishing -----------------------------------------------------------------


class TaskLoader(yaml.SafeLoader):
    """Reads lm-eval YAML, keeping ``!function`` references as text."""


TaskLoader.add_constructor("!function", lambda loader, node: "!function " + loader.construct_scalar(node))


def read_task(folder: Path, name: str) -> dict:
    return read_lm_eval_task(folder / f"{name}.yaml", "!function ")


def load_utils(path: Path):
    spec = importlib.util.spec_from_file_location(f"utils_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_task_folders_for_every_config_and_method(tmp_path):
    out = tmp_path / "out"
    assert perturbations.main(["--source", str(write_source(tmp_path)), "--output", str(out)]) == 0
    tasks = out / "lm_eval"
    assert sorted(p.name for p in tasks.iterdir()) == sorted(
        CONFIGS + ["README.md", "manifest.json", "utils.py", "_default_template_yaml"])
    for config in CONFIGS:
        folder = tasks / config
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            [f"perturbations_mmlu_{config}_{m}.yaml" for m in ("symbol", "hybrid", "cloze")] + ["utils.py"])
        for method in ("symbol", "hybrid", "cloze"):
            task = read_task(folder, f"perturbations_mmlu_{config}_{method}")
            assert task["custom_dataset"] == "!function utils.load_release"  # the release folder the tasks sit in
            assert task["dataset_kwargs"] == {"config": config, "repo": None, "revision": None}  # --output only
            assert (task["test_split"], task["num_fewshot"]) == ("test", 0)
    symbol = read_task(tasks / "shuffle", "perturbations_mmlu_shuffle_symbol")
    assert (symbol["doc_to_text"], symbol["doc_to_choice"], symbol["doc_to_target"]) == ("prompt", "labels", "answer")
    assert [m["metric"] for m in symbol["metric_list"]] == ["acc"]
    hybrid = read_task(tasks / "shuffle", "perturbations_mmlu_shuffle_hybrid")
    assert (hybrid["doc_to_text"], hybrid["doc_to_choice"]) == ("!function utils.hybrid_text", "choices")
    assert [m["metric"] for m in hybrid["metric_list"]] == ["acc", "acc_norm"]

    # utils.py renders hybrid and cloze prompts from the dataset, demonstrations looked up in its dev split
    utils = load_utils(tasks / "shuffle" / "utils.py")
    doc = next(r for r in datasets.load_dataset(str(out), "shuffle", split="test") if r["id"] == "mmlu/test/3")
    assert utils.TASK["fewshot_split"] == "dev" and utils.TASK["revision"] is None
    assert utils.symbol_text(doc) == doc["prompt"]
    demo = next(r for r in datasets.load_dataset(str(out), "shuffle", split="dev") if r["id"] == "mmlu/dev/4")
    head = "The following are multiple choice questions (with answers) about high school geography.\n\n"
    demo_options = "\n".join(f"{label}. {choice}" for label, choice in zip(demo["labels"], demo["choices"], strict=True))
    options = "\n".join(f"{label}. {choice}" for label, choice in zip(doc["labels"], doc["choices"], strict=True))
    assert utils.hybrid_text(doc) == (f"{head}Longest river?\n{demo_options}\nAnswer: Nile\n\n"
                                      f"Capital of Italy?\n{options}\nAnswer:")
    assert utils.cloze_text(doc) == f"{head}Longest river?\nAnswer: Nile\n\nCapital of Italy?\nAnswer:"
    trivial = load_utils(tasks / "trivial_fewshot" / "utils.py")
    doc = datasets.load_dataset(str(out), "trivial_fewshot", split="test")[0]
    assert len(trivial.TASK["trivial"]) == 20 and trivial.TASK["fewshot_split"] is None
    assert trivial.symbol_text(doc) == doc["prompt"] and trivial.cloze_text(doc).count("\nAnswer: ") == 2  # as `original`
    zero = load_utils(tasks / "original_zero_shot" / "utils.py")
    doc = datasets.load_dataset(str(out), "original_zero_shot", split="test")[0]
    assert zero.TASK["fewshot_split"] is None and zero.hybrid_text(doc).count("Answer:") == 1
    manifest = json.loads((tasks / "manifest.json").read_text())
    roles = {(t["config"], t["role"], t["baseline"]) for t in manifest["tasks"]}
    assert ("original_zero_shot", "original", None) in roles and ("gold_at_A", "perturbed", "original_zero_shot") in roles
    assert ("shuffle", "perturbed", "original") in roles and len(manifest["tasks"]) == 3 * len(CONFIGS)


def test_publish_with_task_folders_and_load_back(local_hub, tmp_path):
    repo = "mcqforge/perturbations-mmlu"
    folder = write_source(tmp_path)
    assert perturbations.main(["--source", str(folder), "--only", "shuffle", "symbols_rare", "--push", repo,
                               "--version", "1.0.0"]) == 0
    assert local_hub.tags(repo) == ["v1.0.0"]
    paths = set(local_hub.paths_at(repo, "v1.0.0"))
    for config in ("original", "shuffle", "symbols_rare"):
        assert {f"lm_eval/{config}/perturbations_mmlu_{config}_{m}.yaml" for m in ("symbol", "hybrid", "cloze")} <= paths
        assert f"lm_eval/{config}/utils.py" in paths and f"{config}/test-00000-of-00001.parquet" in paths
    task = yaml.load(local_hub.file_at(repo, "v1.0.0", "lm_eval/shuffle/perturbations_mmlu_shuffle_cloze.yaml").decode(),
                     Loader=TaskLoader)
    assert task["dataset_kwargs"] == {"config": "shuffle", "repo": repo, "revision": "v1.0.0"}
    loaded = datasets.load_dataset(repo, "symbols_rare", revision="v1.0.0")
    assert loaded["test"].num_rows == 14 and loaded["dev"].num_rows == 6
    assert loaded["test"][0]["labels"] == ["œ", "§", "З", "ü"]
    assert loaded["test"][0]["prompt"].endswith("Answer:")


# ---- the lm-eval integration test ----------------------------------------------------------------------

LM_EVAL_ITEMS = 20
def lm_eval_source(root: Path) -> Path:
    """24 short arithmetic and capital questions and 4 demonstrations: short prompts keep CPU time low."""
    capitals = [("France", "Paris"), ("Spain", "Madrid"), ("Japan", "Tokyo"), ("Egypt", "Cairo"), ("Peru", "Lima"),
                ("Kenya", "Nairobi"), ("Chile", "Santiago"), ("Norway", "Oslo"), ("Cuba", "Havana"), ("Iran", "Tehran"),
                ("Greece", "Athens"), ("Poland", "Warsaw")]
    cities = [city for _, city in capitals]
    test = []
    for i in range(12):
        a, b = i + 2, 2 * i + 1
        options = [str(a + b), str(a + b + 1), str(a + b + 2), str(a + b - 1)]
        test.append({"question": f"What is {a} + {b}?", "subject": "elementary_mathematics",
                     "choices": options[i % 4:] + options[: i % 4], "answer": (4 - i % 4) % 4})
        country, city = capitals[i]
        others = [c for c in cities if c != city][i % 8: i % 8 + 3]
        choices = others[: i % 4] + [city] + others[i % 4:]
        test.append({"question": f"What is the capital of {country}?", "subject": "high_school_geography",
                     "choices": choices, "answer": i % 4})
    dev = [
        {"question": "What is 1 + 1?", "subject": "elementary_mathematics", "choices": ["1", "2", "3", "4"], "answer": 1},
        {"question": "What is 2 + 2?", "subject": "elementary_mathematics", "choices": ["4", "3", "5", "6"], "answer": 0},
        {"question": "What is the capital of Italy?", "subject": "high_school_geography",
         "choices": ["Milan", "Rome", "Turin", "Naples"], "answer": 1},
        {"question": "What is the capital of Germany?", "subject": "high_school_geography",
         "choices": ["Bonn", "Munich", "Berlin", "Hamburg"], "answer": 2},
    ]
    return write_source(root, test, dev)


@pytest.mark.slow
def test_lm_eval_runs_every_scoring_method_on_the_published_tasks(local_hub, tiny_lm, tmp_path):
    """The real lm-eval, on the task folders of a release published to the test Hub, with a tiny Llama (SmolLM2's tokenizer)."""
    repo, config = "mcqforge/perturbations-lm-eval", "shuffle"
    out = tmp_path / "release"
    assert perturbations.main(["--source", str(lm_eval_source(tmp_path)), "--only", config, "--shots", "1",
                               "--push", repo, "--version", "1.0.0", "--output", str(out)]) == 0
    tasks = [f"perturbations_mmlu_{config}_{method}" for method in ("symbol", "hybrid", "cloze")]
    command = [sys.executable, "-m", "lm_eval", "--model", "hf",
               "--model_args", f"pretrained={tiny_lm},dtype=float32", "--device", "cpu", "--batch_size", "16",
               "--include_path", str(out / "lm_eval" / config), "--tasks", ",".join(tasks),
               "--limit", str(LM_EVAL_ITEMS), "--log_samples", "--output_path", str(tmp_path / "results")]
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}  # public repo
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=900,
                            env={**env, "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"})
    assert result.returncode == 0, result.stderr[-3000:]

    dataset = datasets.load_dataset(repo, config, split="test", revision="v1.0.0")
    expected_ids = dataset["id"][:LM_EVAL_ITEMS]
    gold = dict(zip(dataset["id"], dataset["answer"], strict=True))
    predictions = read_predictions([tmp_path / "results"])
    assert Counter(p.task for p in predictions) == {task: LM_EVAL_ITEMS for task in tasks}
    assert {p.model for p in predictions} == {tiny_lm.name}
    for task in tasks:
        mine = [p for p in predictions if p.task == task]
        assert sorted(p.ref["id"] for p in mine) == sorted(expected_ids)
        assert all(isinstance(p.output, int) and 0 <= p.output < 4 and p.gold == gold[p.ref["id"]] for p in mine)
    logged = json.loads(next((tmp_path / "results").rglob("results_*.json")).read_text())["results"]
    for task in tasks:  # the logged accuracy is the mean of the per-sample predictions read back
        metric = "acc" if task.endswith("symbol") else "acc_norm"
        mine = [p for p in predictions if p.task == task]
        assert logged[task][f"{metric},none"] == pytest.approx(sum(p.output == p.gold for p in mine) / LM_EVAL_ITEMS)
