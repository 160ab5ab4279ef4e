"""Curated errata (``--errata SPEC``): MMLU-Redux 2.0 applied to a build from plain MMLU, matched by subject and
content, each finding a correction by ``mmlu-redux-2.0``; the validator re-reads the errata itself."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import datasets
import pytest
import yaml
from fixtures import MMLU_TEST, write_benchmark, write_jsonl

from builders import gsm_mc, perturbations, wicked
from builders.core.errors import UserError, ValidationFailed
from builders.core.items.outcomes import ExclusionLog
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.errata import errata_corrections, read_option
from builders.core.sources.loading import load_source
from builders.core.validation.validate import validate

VARIANTS = ["original"] + [f"variant_{k}" for k in range(5)]


def redux_row(question: str, choices: list[str], answer: int, error_type: str = "ok",
              correct_answer: str | None = None) -> dict:
    """A row in MMLU-Redux 2.0's columns."""
    return {"question": question, "choices": choices, "answer": answer, "error_type": error_type,
            "source": None, "correct_answer": correct_answer, "potential_reason": None}


def mmlu_row(index: int, **changes) -> dict:
    row = MMLU_TEST[index]
    return {**redux_row(row["question"], row["choices"], row["answer"]), **changes}


# Redux's verdicts on the fixture's MMLU test rows, written in another order than MMLU's (matched by content)
REDUX_2 = {
    "elementary_mathematics": [
        mmlu_row(7),  # ok
        mmlu_row(0, error_type="wrong_groundtruth", correct_answer="C"),  # a letter: "6"
        redux_row("What is 3 + 3?", ["5", "6", "7", "8"], 1, "wrong_groundtruth", "2"),  # in no build: unmatched
    ],
    "high_school_biology": [
        mmlu_row(2, error_type="wrong_groundtruth", correct_answer="a whale"),  # names no option: excluded
        mmlu_row(1, error_type="no_correct_answer"),
    ],
    "global_facts": [mmlu_row(3, error_type="wrong_groundtruth", correct_answer="Milan")],  # an option's text
    "high_school_chemistry": [mmlu_row(5, error_type="multiple_correct_answers")],
    "nutrition": [mmlu_row(6, error_type="wrong_groundtruth", correct_answer="0")],  # an index as text: "Apple"
}
REPAIRED = {"mmlu/test/0": ("6", 1), "mmlu/test/3": ("Milan", 0), "mmlu/test/6": ("Apple", 2)}
EXCLUDED = {"mmlu/test/1": "no_correct_answer", "mmlu/test/2": "wrong_groundtruth",
            "mmlu/test/5": "multiple_correct_answers"}


def write_redux(root: Path, subjects: dict[str, list[dict]] = REDUX_2) -> Path:
    """A local copy of MMLU-Redux 2.0 in its Hub layout: one folder per subject (config), one file per split."""
    folder = root / "mmlu-redux-2.0"
    for subject, rows in subjects.items():
        write_jsonl(folder / subject / "test.jsonl", rows)
    return folder


def build_wicked(tmp_path: Path, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "release"
    status = wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                          "--errata", str(write_redux(tmp_path)), "--output", str(out), "--no-progress", *extra])
    return status, out


def released(out: Path, config: str) -> dict[str, dict]:
    return {row["id"]: row for row in datasets.load_dataset(str(out), config, split="test")}


@pytest.mark.parametrize("written, option", [("B", "b"), ("1", "b"), ("b", "b"), ("  b ", "b"), ("E", None),
                                             ("7", None), ("", None), (None, None)])
def test_a_correction_is_read_as_a_letter_an_index_or_an_options_text(written, option):
    assert read_option(["a", "b", "c", "d"], written) == option


def test_a_correction_whose_readings_name_different_options_is_unreadable():
    assert read_option(["4", "3", "6", "7"], "3") is None  # index 3 is "7", the option "3" is index 1
    assert read_option(["4", "3", "6", "7"], "1") == "3"


def test_redux_repairs_wrong_keys_in_every_variant_and_excludes_the_rest(tmp_path, capsys):
    status, out = build_wicked(tmp_path)
    assert status == 0, capsys.readouterr().err
    for config in VARIANTS:
        rows = released(out, config)
        assert len(rows) == 5 and not set(EXCLUDED) & set(rows)
        for item_id, (correct, original) in REPAIRED.items():
            row = rows[item_id]
            gold = row["choices"][row["answer"]]
            assert gold == correct or (gold == "None of the above" and correct not in row["choices"]), (config, row)
            assert MMLU_TEST[int(item_id.split("/")[-1])]["choices"][original] != correct
            assert (row["metadata"]["original_answer"], row["metadata"]["answer_corrected_by"],
                    row["metadata"]["correction_reason"]) == (original, "mmlu-redux-2.0", "wrong_groundtruth")
        assert rows["mmlu/test/7"]["metadata"]["original_answer"] is None
    exclusions = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    assert {e["id"]: e["reason"] for e in exclusions if e["step"] == "corrections"} == EXCLUDED
    report = json.loads((out / "validation_report.json").read_text())
    assert report["counts"]["variant_0"]["test"] == {"in": 8, "out": 5, "excluded": 3}
    config = yaml.safe_load((out / "build_config.yaml").read_text())
    assert config["params"]["errata"]["local"] == "mmlu-redux-2.0"
    assert "errata_keep_flagged" not in config["params"] and "corrections" not in config["params"]
    card = (out / "README.md").read_text()
    assert "| mmlu-redux-2.0 | set_answer | wrong_groundtruth | 3 |" in card
    assert "| mmlu-redux-2.0 | exclude | no_correct_answer | 1 |" in card


def test_with_the_flag_flagged_items_are_kept_unchanged_and_listed(tmp_path, capsys):
    status, out = build_wicked(tmp_path, "--errata-keep-flagged")
    assert status == 0, capsys.readouterr().err
    rows = released(out, "original")
    assert len(rows) == 8
    assert [rows[i]["answer"] for i in sorted(rows)] == [MMLU_TEST[int(i.split("/")[-1])]["answer"] for i in sorted(rows)]
    card = (out / "README.md").read_text()
    assert "| mmlu/test/5 | multiple_correct_answers |" in card


def test_the_errata_of_a_subset_match_by_content_and_count_the_rows_they_did_not_match(tmp_path):
    source = load_source(BENCHMARKS["mmlu"], str(write_benchmark("mmlu", tmp_path)))
    applied = errata_corrections(source, str(write_redux(tmp_path)))
    assert applied.rows == 8 and applied.unmatched_rows == 1
    assert applied.matched == {"multiple_correct_answers": 1, "no_correct_answer": 1, "ok": 1, "wrong_groundtruth": 4}
    assert {c.id: (c.action, c.answer) for c in applied.corrections} == {
        "mmlu/test/0": ("set_answer", "6"), "mmlu/test/1": ("exclude", None), "mmlu/test/2": ("exclude", None),
        "mmlu/test/3": ("set_answer", "Milan"), "mmlu/test/5": ("exclude", None), "mmlu/test/6": ("set_answer", "Apple")}


@pytest.mark.slow
def test_perturbations_from_mmlu_take_the_same_errata(tmp_path, capsys):
    out = tmp_path / "release"
    status = perturbations.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--errata",
                                 str(write_redux(tmp_path)), "--output", str(out), "--no-progress"])
    assert status == 0, capsys.readouterr().err
    configs = [p.name for p in out.iterdir() if p.is_dir() and any(p.glob("test-*.parquet"))]
    assert configs
    for config in configs:
        rows = released(out, config)
        assert not set(EXCLUDED) & set(rows)
        for item_id in REPAIRED:
            assert rows[item_id]["metadata"]["answer_corrected_by"] == "mmlu-redux-2.0"


def test_errata_for_a_benchmark_without_any_is_refused_before_loading(tmp_path, capsys):
    status = wicked.main(["--benchmark", "mmlu_pro", "--source", str(tmp_path / "missing"), "--sba-classifier",
                          "none", "--errata", str(write_redux(tmp_path)), "--output", str(tmp_path / "r")])
    assert status == 2
    assert "error: --errata: benchmark mmlu_pro has no errata source" in capsys.readouterr().err
    assert wicked.main(["--sba-classifier", "none", "--errata-keep-flagged", "--output", str(tmp_path / "r")]) == 2


def test_the_validator_reads_the_errata_itself_and_refuses_a_release_that_contradicts_them(tmp_path):
    source = load_source(BENCHMARKS["mmlu"], str(write_benchmark("mmlu", tmp_path)))
    options = wicked.BUILDER.options_from(["--sba-classifier", "none", "--errata", str(write_redux(tmp_path))])
    from builders.core.pipeline.cli import corrected

    fixed = corrected(source, options)
    assert validate(wicked.BUILDER.make_build(fixed, options)).passed
    # the same build as if the repairs had not been made: the items keep MMLU's keys, which Redux calls wrong
    kept = {item.id for item in fixed.records()}
    unrepaired = dataclasses.replace(fixed, items={split: [item for item in items if item.id in kept]
                                                   for split, items in source.items.items()})
    with pytest.raises(ValidationFailed) as error:
        validate(wicked.BUILDER.make_build(unrepaired, options))
    assert "errata_respected (18: original/test mmlu/test/0: mmlu-redux-2.0 calls the key '5' wrong" in str(error.value)
    # and as if an item Redux flags had been released
    flagged = dataclasses.replace(fixed, items={"test": fixed.items["test"] + [source.items["test"][5]],
                                                "dev": fixed.items["dev"]},
                                  exclusions=ExclusionLog())
    with pytest.raises(ValidationFailed) as error:
        validate(wicked.BUILDER.make_build(flagged, options))
    assert "mmlu/test/5: mmlu-redux-2.0 flags it multiple_correct_answers, and it is released" in str(error.value)
    with pytest.raises(UserError):
        errata_corrections(source, str(tmp_path / "nowhere"))


def write_platinum(root: Path) -> Path:
    """A local copy of GSM8K-Platinum in its Hub layout (config main: one file per split), from GSM-MC's sample:
    its first question revised to another answer, its second removed, the rest kept by consensus, in reverse order."""
    sample = Path(gsm_mc.__file__).resolve().parents[1] / "data" / "samples" / "gsm8k" / "test.jsonl"
    rows = [json.loads(line) for line in sample.read_text(encoding="utf-8").splitlines()]
    platinum = [{**row, "cleaning_status": "consensus"} for row in rows]
    platinum[0] = {**platinum[0], "cleaning_status": "revised",
                   "answer": platinum[0]["answer"].rsplit("####", 1)[0] + "#### 20"}
    platinum[1] = {**platinum[1], "cleaning_status": "removed"}
    return write_jsonl(root / "gsm8k-platinum" / "test.jsonl", platinum[::-1]).parent


def test_gsm8k_platinum_repairs_and_withdraws_the_questions_of_a_plain_gsm8k_build(tmp_path, capsys):
    out = tmp_path / "release"
    status = gsm_mc.main(["--source", "sample", "--errata", str(write_platinum(tmp_path)), "--output", str(out),
                          "--no-progress"])
    assert status == 0, capsys.readouterr().err
    rows = {row["id"]: row for row in datasets.load_dataset(str(out), "default", split="test")}
    assert len(rows) == 11 and "gsm8k/test/1" not in rows
    repaired = rows["gsm8k/test/0"]
    assert repaired["choices"][repaired["answer"]] == "20"
    assert (repaired["metadata"]["original_gold"], repaired["metadata"]["answer_corrected_by"]) == ("19", "gsm8k-platinum")
    exclusions = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    assert [(e["id"], e["reason"]) for e in exclusions] == [("gsm8k/test/1", "removed")]
    card = (out / "README.md").read_text()
    assert "| gsm8k-platinum | set_answer | revised | 1 |" in card and "| consensus | 10 | 0 | 0 | 0 |" in card


def test_the_validator_refuses_a_gsm_mc_release_that_keeps_an_answer_platinum_revised(tmp_path):
    from builders.core.pipeline import cli

    builder = gsm_mc.BUILDER
    args = cli.builder_parser(builder).parse_args(["--source", "sample", "--errata", str(write_platinum(tmp_path)),
                                                   "--output", str(tmp_path / "out")])
    options = builder.options_of(args)
    build, report = cli.build_and_validate(builder, cli.builder_parser(builder), args, options,
                                           cli.load(builder, args, options))
    assert report.passed
    records = build.configs["default"]["test"]
    index = next(i for i, r in enumerate(records) if r.id == "gsm8k/test/0")
    records[index] = records[index].replace(answer=records[index].choices.index("19"))
    with pytest.raises(ValidationFailed) as error:
        validate(build)
    assert "default/test gsm8k/test/0: gsm8k-platinum revised its answer to '20', and the key is '19'" in str(error.value)


def test_a_persons_correction_wins_over_the_errata_for_its_item(tmp_path, capsys):
    fixes = write_jsonl(tmp_path / "fixes.jsonl", [
        {"id": "mmlu/test/5", "action": "set_answer", "answer": "Neon", "reason": "reviewed: one noble gas", "by": "jo"},
        {"id": "mmlu/test/0", "action": "exclude", "reason": "reviewed: out of scope", "by": "jo"}])
    status, out = build_wicked(tmp_path, "--corrections", str(fixes))
    assert status == 0, capsys.readouterr().err
    rows = released(out, "original")
    assert "mmlu/test/0" not in rows and rows["mmlu/test/5"]["metadata"]["answer_corrected_by"] == "jo"
    card = (out / "README.md").read_text()
    assert "| jo | exclude | reviewed: out of scope | 1 |" in card
    assert "| mmlu-redux-2.0 | set_answer | wrong_groundtruth | 2 |" in card


@pytest.mark.slow
def test_errata_from_the_hub_read_the_selected_subjects_and_record_the_revision(local_hub, tmp_path, capsys):
    from huggingface_hub import HfApi

    folder = write_redux(tmp_path)
    configs = "".join(f"- config_name: {subject}\n  data_files:\n  - split: test\n    path: {subject}/test.jsonl\n"
                      for subject in REDUX_2)
    (folder / "README.md").write_text(f"---\nconfigs:\n{configs}---\n")
    api = HfApi()
    api.create_repo("someone/redux-copy", repo_type="dataset")
    commit = api.upload_folder(repo_id="someone/redux-copy", repo_type="dataset", folder_path=str(folder))
    out = tmp_path / "release"
    status = wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                          "--subjects", "elementary_mathematics", "global_facts", "--errata", "someone/redux-copy",
                          "--output", str(out), "--no-progress"])
    assert status == 0, capsys.readouterr().err
    rows = released(out, "variant_0")
    assert sorted(rows) == ["mmlu/test/0", "mmlu/test/3", "mmlu/test/4", "mmlu/test/7"]
    assert rows["mmlu/test/3"]["metadata"]["answer_corrected_by"] == "mmlu-redux-2.0"
    config = yaml.safe_load((out / "build_config.yaml").read_text())
    assert config["params"]["errata"] == f"someone/redux-copy@{commit.oid}"
    assert f"revision `{commit.oid}`): 4 rows, 3 matched" in (out / "README.md").read_text()
