"""WiCkeD: the paper's algorithm, the gold tracked by index, and the bugs of the reference code."""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
from pathlib import Path

import datasets
import pytest

from builders import wicked
from builders.core import cli
from builders.core.benchmarks import BENCHMARKS
from builders.core.sources import load_source
from builders.core.errors import ValidationFailed
from builders.core.options import NOTA_TEXT
from builders.core.validate import validate
from fixtures import ARC, MMLU_TEST, write_benchmark, write_jsonl

REPO = Path(__file__).resolve().parents[1]


def wicked_args(**overrides) -> argparse.Namespace:
    parser = cli.builder_parser(wicked.BUILDER)
    args = parser.parse_args(["--sba-classifier", "none"])
    for key, value in overrides.items():
        setattr(args, key, value)
    return args


def build_fixture(tmp_path, name="mmlu", **overrides):
    source = load_source(BENCHMARKS[name], str(write_benchmark(name, tmp_path)))
    return wicked.build(source, wicked_args(**overrides))


def test_configs_counts_and_skip_reasons(tmp_path):
    build = build_fixture(tmp_path)
    assert list(build.configs) == ["original"] + [f"variant_{k}" for k in range(5)]
    for splits in build.configs.values():
        assert {split: len(records) for split, records in splits.items()} == {"test": 8, "dev": 3}
    skips = [r.metadata["skip_reason"] for r in build.configs["variant_0"]["test"]]
    assert skips == [None, None, None, None, "has_all_of_the_above", "has_none_of_the_above",
                     "has_option_combination", None]
    report = validate(build)
    assert report.passed and report.counts["variant_3"]["test"] == {"in": 8, "out": 8, "excluded": 0}


def test_add_nota_replaces_one_option_and_tracks_the_gold(tmp_path):
    build = build_fixture(tmp_path, variants=40)
    originals = {r.id: r for r in build.configs["original"]["test"]}
    removed_positions, nota_answers = set(), 0
    for k in range(40):
        for record in build.configs[f"variant_{k}"]["test"]:
            original, meta = originals[record.id], record.metadata
            if meta["skip_reason"]:
                assert record == original.with_metadata(**meta)
                continue
            assert len(record.choices) == len(original.choices) and record.choices[-1] == NOTA_TEXT
            removed = meta["removed_index"]
            removed_positions.add(removed)
            expected = [c for i, c in enumerate(original.choices) if i != removed] + [NOTA_TEXT]
            assert list(record.choices) == expected
            if removed == original.answer:
                nota_answers += 1
                assert record.answer == 3 and meta["nota_is_answer"] and original.gold not in record.choices
            else:
                assert record.gold == original.gold and not meta["nota_is_answer"]
    assert removed_positions == {0, 1, 2, 3}
    assert 0.15 < nota_answers / (40 * 5) < 0.35  # 5 altered items, NOTA is the answer ~1/4 of the time


def test_golden_output_is_stable_across_releases(tmp_path):
    # A change of RNG or algorithm would silently change every published dataset: pin one item.
    record = build_fixture(tmp_path, seed=7).configs["variant_2"]["test"][0]
    assert (record.choices, record.answer, record.metadata["removed_index"]) == (("4", "6", "7", NOTA_TEXT), 3, 1)


def test_random_nota_position_keeps_the_gold(tmp_path):
    build = build_fixture(tmp_path, variants=30, nota_position="random")
    originals = {r.id: r for r in build.configs["original"]["test"]}
    positions = set()
    for k in range(30):
        for record in build.configs[f"variant_{k}"]["test"]:
            if record.metadata["skip_reason"]:
                continue
            nota = record.metadata["nota_index"]
            positions.add(nota)
            assert record.choices[nota] == NOTA_TEXT and record.choices.count(NOTA_TEXT) == 1
            if record.metadata["nota_is_answer"]:
                assert record.answer == nota
            else:
                assert record.gold == originals[record.id].gold
    assert positions == {0, 1, 2, 3}
    assert validate(build).passed


def test_regression_arc_gold_is_found_by_label_not_text(tmp_path):
    """The reference code compared ARC's integer index to option texts: every altered item got NOTA."""
    build = build_fixture(tmp_path, name="arc_challenge", variants=20)
    altered = [r for k in range(20) for r in build.configs[f"variant_{k}"]["test"]]
    assert all(r.metadata["removed_index"] is not None for r in altered)
    for record in altered:
        assert record.metadata["nota_is_answer"] == (record.metadata["removed_index"] == record.metadata["original_answer_index"])
    rate = sum(r.metadata["nota_is_answer"] for r in altered) / len(altered)
    assert 0.1 < rate < 0.45
    assert validate(build).passed


def test_regression_gold_is_read_before_any_mutation(tmp_path):
    """The reference code read the gold from a list it had already edited through a shallow copy."""
    folder = write_benchmark("mmlu", tmp_path)
    source = load_source(BENCHMARKS["mmlu"], str(folder))
    before = {split: list(records) for split, records in source.items.items()}
    build = wicked.build(source, wicked_args())
    assert source.items == before == load_source(BENCHMARKS["mmlu"], str(folder)).items
    assert build.configs["original"] == before
    record = before["test"][0]
    with pytest.raises(AttributeError):
        record.choices.remove("4")  # choices are a tuple: no transform can mutate them in place


def test_regression_no_second_nota(tmp_path):
    rows = [dict(MMLU_TEST[0], choices=["4", "5", "6", "none of these"]), MMLU_TEST[1]]
    source = load_source(BENCHMARKS["mmlu"], str(write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows).parent))
    build = wicked.build(source, wicked_args(variants=10))
    for k in range(10):
        first, second = build.configs[f"variant_{k}"]["test"]
        assert first.choices == ("4", "5", "6", "none of these") and first.metadata["skip_reason"] == "has_none_of_the_above"
        assert second.choices.count(NOTA_TEXT) == 1


def test_validation_refuses_a_broken_build(tmp_path):
    build = build_fixture(tmp_path)
    records = build.configs["variant_0"]["test"]
    altered = next(i for i, r in enumerate(records) if r.metadata["removed_index"] is not None and not r.metadata["nota_is_answer"])
    records[altered] = records[altered].replace(answer=(records[altered].answer + 1) % 3)
    with pytest.raises(ValidationFailed, match="gold_tracked"):
        validate(build)
    del records[0]
    with pytest.raises(ValidationFailed, match="rows_accounted"):
        validate(build)


def test_output_does_not_depend_on_order_or_subset(tmp_path):
    full = build_fixture(tmp_path / "a", name="arc_challenge")
    rows = list(reversed(ARC["test"][1:]))  # ARC items carry their own ids
    write_jsonl(tmp_path / "b" / "arc_challenge" / "test.jsonl", rows)
    subset = wicked.build(load_source(BENCHMARKS["arc_challenge"], str(tmp_path / "b" / "arc_challenge")), wicked_args())
    for variant in ("variant_0", "variant_4"):
        expected = {r.id: (r.choices, r.answer, r.metadata) for r in full.configs[variant]["test"][1:]}
        assert {r.id: (r.choices, r.answer, r.metadata) for r in subset.configs[variant]["test"]} == expected


def _parquet_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


def test_cli_build_is_byte_identical_and_loads(tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    for out in ("out1", "out2"):
        assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--output", str(tmp_path / out)]) == 0
    first, second = _parquet_hashes(tmp_path / "out1"), _parquet_hashes(tmp_path / "out2")
    assert first == second and len(first) == 12
    loaded = datasets.load_dataset(str(tmp_path / "out1"), "variant_0")
    assert loaded["test"].num_rows == 8 and loaded["dev"].num_rows == 3
    assert loaded["test"].features["metadata"]["nota_is_answer"] == datasets.Value("bool")
    row = loaded["test"][0]
    assert row["id"] == "mmlu/test/0" and row["choices"][-1] == NOTA_TEXT


def test_build_config_rebuilds_the_same_release(tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    wicked.main(["--source", str(folder), "--sba-classifier", "none", "--seed", "3", "--variants", "2",
                 "--nota-position", "random", "--output", str(tmp_path / "out1")])
    config = str(tmp_path / "out1" / "build_config.yaml")
    # A local source is recorded by base name and content hash, never by path: a rebuild must name it again.
    assert wicked.main(["--config", config, "--output", str(tmp_path / "out2")]) == 2
    assert wicked.main(["--config", config, "--source", str(folder), "--output", str(tmp_path / "out2")]) == 0
    assert _parquet_hashes(tmp_path / "out1") == _parquet_hashes(tmp_path / "out2")
    assert (tmp_path / "out1" / "build_config.yaml").read_text() == (tmp_path / "out2" / "build_config.yaml").read_text()


@pytest.mark.parametrize("name", ["mmlu", "mmlu_pro", "mmlu_redux", "commonsense_qa", "truthful_qa", "arc_challenge"])
def test_every_benchmark_builds(tmp_path, name):
    folder = write_benchmark(name, tmp_path)
    assert wicked.main(["--benchmark", name, "--source", str(folder), "--sba-classifier", "none",
                        "--variants", "2", "--output", str(tmp_path / "out")]) == 0
    card = (tmp_path / "out" / "README.md").read_text()
    assert "NOTA-answer rate" in card and "| gold_tracked |" in card


def test_help_documents_every_option():
    result = subprocess.run([sys.executable, "-m", "builders.wicked", "--help"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0
    for option in ["--benchmark", "--source", "--seed", "--output", "--push", "--version", "--private", "--variants",
                   "--sba-classifier", "--sba-threshold", "--nota-position", "--config", "--strict"]:
        assert option in result.stdout


def test_offline_hub_classifier_gives_a_clear_error(tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "builders.wicked", "--source", str(folder), "--output", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=REPO,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot load SBA classifier 'ahmedselhady/bert-base-uncased-sba-clf'")
    assert "--sba-classifier none" in last and "Traceback" not in result.stderr
