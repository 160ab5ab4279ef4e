"""Source adapters: every benchmark's Hub layout becomes records, and bad rows are never lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import FIXTURE_SIZES, MMLU_TEST, TRUTHFUL_QA, write_benchmark, write_jsonl

from builders.core.errors import MalformedRow, SourceError
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.items.twins import duplicate_option
from builders.core.sources.loading import Selection, load_source
from builders.core.sources.spec import parse_spec
from builders.registry import BUILDERS


@pytest.mark.parametrize("name", sorted(FIXTURE_SIZES))
def test_every_benchmark_reads_its_hub_layout(tmp_path, name):
    loaded = load_source(BENCHMARKS[name], str(write_benchmark(name, tmp_path)))
    assert loaded.rows_in == FIXTURE_SIZES[name]
    kept = {split: len(records) for split, records in loaded.items.items()}
    excluded = {split: loaded.exclusions.count(split) for split in loaded.rows_in}
    assert {s: kept.get(s, 0) + excluded[s] for s in loaded.rows_in} == FIXTURE_SIZES[name]
    for records in loaded.items.values():
        for record in records:
            assert record.source == BENCHMARKS[name].hub_id
            assert 0 <= record.answer < len(record.choices)


def test_mmlu_ids_and_provenance(tmp_path):
    loaded = load_source(BENCHMARKS["mmlu"], str(write_benchmark("mmlu", tmp_path)))
    first = loaded.items["test"][0]
    assert (first.id, first.source_config, first.source_split, first.source_index) == ("mmlu/test/0", "all", "test", 0)
    assert first.subject == "elementary_mathematics" and first.gold == "5"
    assert [r.id for r in loaded.items["dev"]] == ["mmlu/dev/0", "mmlu/dev/1", "mmlu/dev/2"]


def test_mmlu_pro_drops_na_options_and_remaps_the_answer(tmp_path):
    loaded = load_source(BENCHMARKS["mmlu_pro"], str(write_benchmark("mmlu_pro", tmp_path)))
    by_id = {r.id: r for r in loaded.items["test"]}
    assert by_id["mmlu_pro/test/70"].choices == ("1", "10", "100") and by_id["mmlu_pro/test/70"].answer == 2
    assert by_id["mmlu_pro/test/72"].choices == ("3", "5", "8") and by_id["mmlu_pro/test/72"].gold == "8"
    assert by_id["mmlu_pro/test/71"].category == "other"
    assert by_id["mmlu_pro/test/71"].metadata == {"question_id": 71, "src": "stemez-x"}


def test_mmlu_redux_keeps_only_ok_items_by_default(tmp_path):
    folder = write_benchmark("mmlu_redux", tmp_path)
    default = load_source(BENCHMARKS["mmlu_redux"], str(folder))
    assert [r.id for r in default.items["test"]] == ["mmlu_redux/anatomy/test/0", "mmlu_redux/virology/test/0"]
    assert default.items["test"][0].subject == "anatomy" and default.items["test"][0].source_config == "anatomy"
    assert [(e.id, e.reason, e.detail) for e in default.exclusions.entries] == [
        ("mmlu_redux/anatomy/test/1", "redux_error_type", "wrong_groundtruth")]
    everything = load_source(BENCHMARKS["mmlu_redux"], str(folder), options={"redux_keep_all": True})
    assert len(everything.items["test"]) == 3 and not everything.exclusions.entries


def test_commonsense_qa_uses_its_ids_and_answer_keys(tmp_path):
    loaded = load_source(BENCHMARKS["commonsense_qa"], str(write_benchmark("commonsense_qa", tmp_path)))
    assert [(r.id, r.gold) for r in loaded.items["train"]] == [
        ("commonsense_qa/cqa-1", "fridge"), ("commonsense_qa/cqa-2", "scissors")]


def test_arc_numeric_and_letter_labels_map_to_indices(tmp_path):
    loaded = load_source(BENCHMARKS["arc_challenge"], str(write_benchmark("arc_challenge", tmp_path)))
    golds = {r.id: (r.answer, r.gold, len(r.choices)) for r in loaded.items["test"]}
    assert golds == {
        "arc_challenge/Mercury_1": (1, "copper", 4),
        "arc_challenge/Mercury_2": (0, "light blocked", 3),
        "arc_challenge/Mercury_3": (1, "oxygen", 5),
        "arc_challenge/Mercury_4": (2, "Mercury", 4),
    }
    # the train split comes from a CSV whose dict column holds JSON
    assert loaded.items["train"][0].gold == "photosynthesis"


def test_truthful_qa_shuffles_with_the_per_item_generator(tmp_path):
    folder = str(write_benchmark("truthful_qa", tmp_path))
    loaded = load_source(BENCHMARKS["truthful_qa"], folder, seed=0)
    for i, record in enumerate(loaded.items["validation"]):
        original = TRUTHFUL_QA[i]["mc1_targets"]["choices"]
        permutation = record.metadata["source_permutation"]
        assert record.gold == f"true {i}"
        assert list(record.choices) == [original[p] for p in permutation]
    positions = [r.answer for r in loaded.items["validation"]]
    assert len(set(positions)) > 1, "the gold must not stay first"
    again = load_source(BENCHMARKS["truthful_qa"], folder, seed=0)
    assert again.items == loaded.items
    other_seed = load_source(BENCHMARKS["truthful_qa"], folder, seed=1)
    assert [r.choices for r in other_seed.items["validation"]] != [r.choices for r in loaded.items["validation"]]


def test_spec_parsing(tmp_path):
    spec = parse_spec("cais/mmlu:all@v1.0")
    assert (spec.hub_id, spec.config, spec.revision, spec.path) == ("cais/mmlu", "all", "v1.0", None)
    assert parse_spec("TIGER-Lab/MMLU-Pro").config is None
    assert parse_spec(str(tmp_path)).path == tmp_path
    assert parse_spec("sample", "mmlu").path.name == "mmlu"
    with pytest.raises(SourceError, match="does not exist"):
        parse_spec("./missing/test.jsonl")
    with pytest.raises(SourceError, match="no embedded sample"):
        parse_spec("sample", "truthful_qa")


MALFORMED = [
    ({"question": "q", "subject": "s", "choices": ["a", "b"]}, "malformed_row", "answer", "missing"),
    ({"question": "q", "subject": "s", "choices": ["a", "b"], "answer": 2}, "malformed_row", "answer", "out of range"),
    ({"question": "q", "subject": "s", "choices": ["a", "b"], "answer": "B"}, "malformed_row", "answer", "integer"),
    ({"question": "q", "subject": "s", "choices": "a b", "answer": 0}, "malformed_row", "choices", "list"),
    ({"question": 3, "subject": "s", "choices": ["a", "b"], "answer": 0}, "malformed_row", "question", "string"),
    ({"question": "q", "subject": "s", "choices": ["a", 1], "answer": 0}, "malformed_row", "choices[1]", "string"),
    ({"question": "q", "subject": "s", "choices": ["a", " "], "answer": 0}, "malformed_row", "choices[1]", "empty"),
    ({"question": "q", "subject": "s", "choices": ["a"], "answer": 0}, "malformed_row", "choices", "1 choices"),
    ({"question": "q", "subject": "s", "choices": [], "answer": 0}, "malformed_row", "choices", "empty list"),
    ({"question": "q", "subject": 7, "choices": ["a", "b"], "answer": 0}, "malformed_row", "subject", "string"),
    ({"question": " \n", "subject": "s", "choices": ["a", "b"], "answer": 0}, "malformed_row", "question", "empty question"),
]


@pytest.mark.parametrize("name, row", [
    ("mmlu_pro", {"question_id": 5, "question": "", "options": ["a", "b"], "answer": "A", "answer_index": 0,
                  "category": "other", "src": "x"}),
    ("unifiedqa", {"question": "  ", "choices": ["a", "b"], "answer": "A"}),
    ("commonsense_qa", {"id": "x1", "question": "", "question_concept": "c",
                        "choices": {"label": ["A", "B"], "text": ["a", "b"]}, "answerKey": "A"}),
    ("arc_challenge", {"id": "x1", "question": "\t", "choices": {"label": ["A", "B"], "text": ["a", "b"]}, "answerKey": "B"}),
    ("truthful_qa", {"question": " ", "mc1_targets": {"choices": ["a", "b"], "labels": [1, 0]}}),
])
def test_every_adapter_refuses_a_blank_question(tmp_path, name, row):
    """Regression: the shared MMLU-Pro and UnifiedQA adapters read a blank question, which WiCkeD and the
    perturbations then copied into a release (MMLU-Pro+ and the contrast sets each refused it their own way)."""
    split = BENCHMARKS[name].splits[0]
    folder = write_jsonl(tmp_path / name / f"{split}.jsonl", [row]).parent
    loaded = load_source(BENCHMARKS[name], str(folder), max_excluded=1)
    [exclusion] = loaded.exclusions.entries
    assert (exclusion.reason, exclusion.field, exclusion.detail) == ("malformed_row", "question", "empty question")
    assert not loaded.items.get(split)


def test_truthful_qa_labels_must_be_integers(tmp_path):
    """Regression: [True, False] passed as mc1 labels (True == 1 in Python)."""
    rows = [{"question": "q?", "mc1_targets": {"choices": ["a", "b"], "labels": [True, False]}},
            {"question": "r?", "mc1_targets": {"choices": ["a", "b"], "labels": [1, 0]}}]
    folder = write_jsonl(tmp_path / "truthful_qa" / "validation.jsonl", rows).parent
    loaded = load_source(BENCHMARKS["truthful_qa"], str(folder), max_excluded=1)
    [exclusion] = loaded.exclusions.entries
    assert (exclusion.id, exclusion.field) == ("truthful_qa/validation/0", "mc1_targets.labels")
    assert [r.question for r in loaded.items["validation"]] == ["r?"]


def test_an_mmlu_pro_row_left_with_one_option_names_its_own_column(tmp_path):
    row = {"question_id": 5, "question": "q", "options": ["yes", "N/A", "N/A"], "answer": "A", "answer_index": 0,
           "category": "other", "src": "x"}
    with pytest.raises(MalformedRow, match="malformed row mmlu_pro/test/5: field 'options': 1 option"):
        load_source(BENCHMARKS["mmlu_pro"], str(write_jsonl(tmp_path / "mmlu_pro" / "test.jsonl", [row]).parent),
                    strict=True)


def test_duplicated_options_are_well_formed_and_case_matters(tmp_path):
    """Items with repeated options are source items like any other (the builders copy them unchanged), and
    options that differ only in case are different options: alleles, logic formulas, Roman numerals. (A repeated key
    is not: tests/test_duplicated_key.py.)"""
    rows = [MMLU_TEST[0],
            {"question": "q", "subject": "s", "choices": ["Paris", " Paris  ", "Rome"], "answer": 2},
            {"question": "genotype?", "subject": "s", "choices": ["Bb Bb", "BB Bb", "bb bb", "BB BB"], "answer": 0},
            {"question": "numerals", "subject": "s", "choices": ["ii", "II", "iii", "III"], "answer": 1}]
    loaded = load_source(BENCHMARKS["mmlu"], str(write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows).parent))
    assert len(loaded.items["test"]) == 4 and not loaded.exclusions.entries
    assert [duplicate_option(r.choices) for r in loaded.items["test"]] == [None, 1, None, None]


def _write_with_bad_row(tmp_path, bad_row):
    rows = [MMLU_TEST[0], bad_row, MMLU_TEST[1]]
    return write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows).parent


@pytest.mark.parametrize("bad_row,reason,field,detail", MALFORMED)
def test_malformed_rows_are_excluded_with_their_reason(tmp_path, bad_row, reason, field, detail):
    loaded = load_source(BENCHMARKS["mmlu"], str(_write_with_bad_row(tmp_path, bad_row)))
    assert [r.id for r in loaded.items["test"]] == ["mmlu/test/0", "mmlu/test/2"]
    [exclusion] = loaded.exclusions.entries
    assert (exclusion.id, exclusion.source_index, exclusion.reason, exclusion.field) == ("mmlu/test/1", 1, reason, field)
    assert detail in exclusion.detail
    assert loaded.rows_in["test"] == 3 == len(loaded.items["test"]) + loaded.exclusions.count("test")


@pytest.mark.parametrize("bad_row,reason,field,detail", [m for m in MALFORMED if m[1] == "malformed_row"])
def test_strict_mode_stops_and_names_the_row_and_field(tmp_path, bad_row, reason, field, detail):
    with pytest.raises(MalformedRow) as error:
        load_source(BENCHMARKS["mmlu"], str(_write_with_bad_row(tmp_path, bad_row)), strict=True)
    assert f"malformed row mmlu/test/1: field {field!r}" in str(error.value)


def test_cli_reports_a_bad_row_in_one_line_without_traceback(tmp_path):
    folder = _write_with_bad_row(tmp_path, MALFORMED[1][0])
    result = subprocess.run(
        [sys.executable, "-m", BUILDERS["wicked"], "--source", str(folder), "--sba-classifier", "none",
         "--strict", "--output", str(tmp_path / "out")], capture_output=True, text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "error: malformed row mmlu/test/1: field 'answer': index 2 out of range for 2 choices")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_invalid_json_names_file_and_line(tmp_path):
    path = tmp_path / "mmlu" / "test.jsonl"
    path.parent.mkdir()
    path.write_text('{"question": "q", "subject": "s", "choices": ["a", "b"], "answer": 0}\n{oops\n')
    with pytest.raises(SourceError, match=r"test.jsonl:2: invalid JSON"):
        load_source(BENCHMARKS["mmlu"], str(path.parent))


def test_unreachable_hub_gives_one_actionable_line():
    # HF_ENDPOINT points at the local test Hub, which has no such dataset
    with pytest.raises(SourceError, match="pass --source PATH"):
        load_source(BENCHMARKS["mmlu"], "nobody/no-such-dataset")


def test_subjects_that_match_no_row_are_named(tmp_path):
    with pytest.raises(SourceError, match="split 'test' has no rows of --subjects nosuch other$"):
        load_source(BENCHMARKS["mmlu"], str(write_benchmark("mmlu", tmp_path)), selection=Selection(("nosuch", "other")))


def test_one_evaluation_split_rule_for_every_builder():
    """Four builders chose the split their tasks score in four ways: a release with a train and a validation split
    scored train in GSM-MC's and MATH-MC's tasks but validation in WiCkeD's, and an empty test split was scored by
    WiCkeD and the perturbations but passed over by the contrast sets."""
    from builders.core.sources.loading import evaluation_split

    assert evaluation_split({"train": [1], "test": [1], "validation": [1]}) == "test"
    assert evaluation_split({"train": [1], "validation": [1]}, "train") == "validation"
    assert evaluation_split({"dev": [1], "train": [1]}, "dev") == "train"
    assert evaluation_split({"dev": [1]}, "dev") == "dev"  # the few-shot split alone: scored all the same
    assert evaluation_split({"test": [], "validation": [1]}) == "validation"  # a split that holds no item
    assert evaluation_split({"train": [], "test": []}) == "test"


def test_a_benchmark_and_a_build_take_keywords_only():
    """`Benchmark("gsm8k", "openai/gsm8k", "main", ...)` read eight positional fields in declaration order: adding a
    field, or reordering two strings, silently gave another benchmark."""
    import dataclasses

    from builders.core.build.result import Build
    from builders.core.sources.loading import Benchmark

    with pytest.raises(TypeError):
        Benchmark("b", "org/b", None, ("test",), None, "mit", "", "B")  # type: ignore[misc]
    assert all(field.kw_only for cls in (Benchmark, Build) for field in dataclasses.fields(cls))
