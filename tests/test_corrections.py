"""Item-level corrections: the one record (``--corrections FILE``), checked before any work, applied before the
transform for every builder, released as ``corrections.jsonl`` and counted in the card."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import write_benchmark, write_jsonl

from builders import wicked
from builders.core.errors import UserError
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.corrections import (
    Correction,
    apply_corrections,
    read_corrections,
    write_corrections,
)
from builders.core.sources.loading import load_source


def mmlu(tmp_path: Path):
    return load_source(BENCHMARKS["mmlu"], str(write_benchmark("mmlu", tmp_path)))


def test_a_corrections_file_round_trips_and_skips_undecided_entries(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [
        {"id": "mmlu/test/0", "action": "set_answer", "answer": 2, "reason": "key", "by": "jo"},
        {"id": "mmlu/test/1", "action": "exclude", "reason": "ambiguous", "by": "mmlu-redux-2.0"},
        {"id": "mmlu/test/2", "action": "", "answer": 1, "reason": "", "by": "", "evidence": {"votes": {"1": 20}}},
        {"id": "mmlu/test/3", "action": "set_answer", "answer": "Milan", "reason": "", "by": "ann"},
    ])
    corrections = read_corrections(path)
    assert [c.id for c in corrections] == ["mmlu/test/0", "mmlu/test/1", "mmlu/test/3"]
    assert corrections[1] == Correction(id="mmlu/test/1", action="exclude", reason="ambiguous", by="mmlu-redux-2.0")
    write_corrections(corrections, tmp_path / "again.jsonl")
    assert read_corrections(tmp_path / "again.jsonl") == corrections
    assert json.loads((tmp_path / "again.jsonl").read_text().splitlines()[1]) == {
        "id": "mmlu/test/1", "action": "exclude", "reason": "ambiguous", "by": "mmlu-redux-2.0"}


@pytest.mark.parametrize("entries, message", [
    ([{"id": "a", "action": "exclude"}, {"id": "a", "action": "exclude"}], "line 2: a second entry for a (the first is on line 1)"),
    ([{"id": "a", "action": "delete"}], "action must be one of set_answer, exclude"),
    ([{"id": "a", "action": "set_answer"}], "set_answer needs an answer"),
    ([{"id": "a", "action": "set_answer", "answer": True}], "set_answer needs an answer"),
    ([{"id": "a", "action": "exclude", "anwser": 1}], "unknown fields ['anwser']"),
    ([{"action": "exclude"}], "'id' must be an item id"),
])
def test_a_bad_entry_is_one_error_naming_its_line(tmp_path, entries, message):
    path = write_jsonl(tmp_path / "c.jsonl", entries)
    with pytest.raises(UserError, match=None) as error:
        read_corrections(path)
    assert message in str(error.value)


def test_set_answer_moves_the_key_and_keeps_the_original_exclude_logs_the_reason(tmp_path):
    source = mmlu(tmp_path)
    corrected = apply_corrections(source, (
        Correction(id="mmlu/test/0", action="set_answer", answer="6", reason="checked", by="jo"),
        Correction(id="mmlu/test/3", action="set_answer", answer=1, reason="", by="ann"),
        Correction(id="mmlu/test/7", action="exclude", reason="ambiguous", by="jo"),
    ))
    test = {item.id: item for item in corrected.items["test"]}
    assert (test["mmlu/test/0"].answer, test["mmlu/test/0"].metadata) == (2, {
        "original_answer": 1, "answer_corrected_by": "jo", "correction_reason": "checked"})
    assert test["mmlu/test/3"].answer == 1 and test["mmlu/test/3"].metadata["original_answer"] == 0
    assert "mmlu/test/7" not in test and len(test) == 7
    (entry,) = [e for e in corrected.exclusions.entries if e.id == "mmlu/test/7"]
    assert (entry.reason, entry.step, entry.detail, entry.source_index) == ("ambiguous", "corrections", "by jo", 7)
    assert [a.original_answer for a in corrected.corrections] == [1, 0, None]
    assert source.items["test"][0].answer == 1  # the loaded source itself is left as it was
    assert "original_answer" in corrected.benchmark.metadata_features


@pytest.mark.parametrize("correction, message", [
    (Correction(id="mmlu/test/99", action="exclude"), "1 ids are no item of"),
    (Correction(id="mmlu/test/0", action="set_answer", answer=4), "answer 4 is out of range: the item has 4 options"),
    (Correction(id="mmlu/test/0", action="set_answer", answer="8"), "answer '8' is none of the item's options"),
])
def test_an_unknown_id_or_an_answer_that_is_no_option_is_refused(tmp_path, correction, message):
    with pytest.raises(UserError) as error:
        apply_corrections(mmlu(tmp_path), (correction,))
    assert message in str(error.value)


def test_wicked_keeps_a_corrected_key_in_every_variant(tmp_path, capsys):
    corrections = write_jsonl(tmp_path / "fixes.jsonl", [
        {"id": "mmlu/test/0", "action": "set_answer", "answer": 2, "reason": "checked", "by": "jo"},
        {"id": "mmlu/test/3", "action": "exclude", "reason": "ambiguous", "by": "jo"},
    ])
    out = tmp_path / "release"
    status = wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                          "--corrections", str(corrections), "--output", str(out), "--no-progress"])
    assert status == 0, capsys.readouterr().err
    import datasets

    for config in ["original"] + [f"variant_{k}" for k in range(5)]:
        rows = datasets.load_dataset(str(out), config, split="test")
        by_id = {row["id"]: row for row in rows}
        assert "mmlu/test/3" not in by_id and len(by_id) == 7
        item = by_id["mmlu/test/0"]
        shown = item["choices"][item["answer"]]
        assert shown == "6" or (shown == "None of the above" and "6" not in item["choices"]), (config, item)
        assert item["metadata"]["original_answer"] == 1 and item["metadata"]["answer_corrected_by"] == "jo"


def release_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_the_release_carries_the_file_and_config_rebuilds_it_byte_for_byte(tmp_path, capsys):
    fixes = tmp_path / "fixes.jsonl"
    fixes.write_text(json.dumps({"id": "mmlu/test/7", "action": "set_answer", "answer": "10", "reason": "typo",
                                 "by": "jo"}) + "\n\n" +
                     json.dumps({"id": "mmlu/test/1", "action": "exclude", "reason": "two gases", "by": "ann"}) + "\n",
                     encoding="utf-8")
    source = str(write_benchmark("mmlu", tmp_path))
    first, again = tmp_path / "v1.1.0", tmp_path / "rebuilt"
    assert wicked.main(["--source", source, "--sba-classifier", "none", "--corrections", str(fixes),
                        "--output", str(first), "--no-progress"]) == 0, capsys.readouterr().err
    assert (first / "corrections.jsonl").read_bytes() == fixes.read_bytes()
    config = (first / "build_config.yaml").read_text()
    assert "corrections:\n    content: sha256:" in config and "local: corrections.jsonl" in config
    card = (first / "README.md").read_text()
    assert "| ann | exclude | two gases | 1 |" in card and "| jo | set_answer | typo | 1 |" in card
    assert wicked.main(["--config", str(first / "build_config.yaml"), "--source", source, "--output", str(again),
                        "--no-progress"]) == 0, capsys.readouterr().err
    assert release_files(again) == release_files(first)


def test_a_bad_corrections_file_stops_the_build_before_the_source_is_read(tmp_path, capsys):
    fixes = write_jsonl(tmp_path / "fixes.jsonl", [{"id": "mmlu/test/1", "action": "remove"}])
    status = wicked.main(["--source", str(tmp_path / "no-such-source"), "--sba-classifier", "none",
                          "--corrections", str(fixes), "--output", str(tmp_path / "out")])
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --corrections fixes.jsonl line 1: mmlu/test/1: action must be one of") and \
        err.count("\n") == 1


@pytest.mark.parametrize("entry, message", [
    ({"id": "mmlu/test/70", "action": "exclude", "reason": "x"}, "1 ids are no item of local copy 'mmlu', e.g. mmlu/test/70"),
    ({"id": "mmlu/test/1", "action": "set_answer", "answer": 9}, "answer 9 is out of range"),
])
def test_an_unknown_id_or_answer_is_one_error_line_before_the_transform(tmp_path, capsys, entry, message):
    fixes = write_jsonl(tmp_path / "fixes.jsonl", [entry])
    status = wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                          "--corrections", str(fixes), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_subset_build_takes_the_corrections_of_the_items_it_read(tmp_path, capsys):
    fixes = write_jsonl(tmp_path / "fixes.jsonl", [{"id": "mmlu/test/0", "action": "exclude", "reason": "x"},
                                                   {"id": "mmlu/test/6", "action": "exclude", "reason": "x"}])
    out = tmp_path / "out"
    assert wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                        "--corrections", str(fixes), "--limit", "3", "--output", str(out), "--no-progress"]) == 0
    report = json.loads((out / "validation_report.json").read_text())
    assert report["counts"]["original"]["test"] == {"in": 3, "out": 2, "excluded": 1}
