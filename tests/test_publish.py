"""Versioned publishing with the real huggingface_hub and datasets clients, against the local Hub."""

from __future__ import annotations

import json

import datasets
import pytest
from huggingface_hub import DatasetCard, HfApi

from builders import wicked
from builders.core.benchmarks import BENCHMARKS
from builders.core.sources import load_source
from builders.core.release import read_changelog
from fixtures import write_benchmark


def push(folder, repo, version, *extra):
    return wicked.main(["--source", str(folder), "--sba-classifier", "none", "--push", repo, "--version", version, *extra])


def test_publish_tag_and_load_back(local_hub, tmp_path, capsys):
    folder = write_benchmark("mmlu", tmp_path)
    assert push(folder, "mcqforge/wicked-mmlu", "1.0.0", "--output", str(tmp_path / "out")) == 0
    printed = capsys.readouterr().out
    assert f"published {local_hub.url}/datasets/mcqforge/wicked-mmlu tag v1.0.0" in printed
    assert local_hub.token not in printed

    assert local_hub.tags("mcqforge/wicked-mmlu") == ["v1.0.0"]
    remote = datasets.load_dataset("mcqforge/wicked-mmlu", "variant_0", revision="v1.0.0")
    local = datasets.load_dataset(str(tmp_path / "out"), "variant_0")
    assert remote["test"].to_list() == local["test"].to_list() and remote["dev"].num_rows == 3
    card = DatasetCard(local_hub.file_at("mcqforge/wicked-mmlu", "v1.0.0", "README.md").decode())
    assert 'revision="v1.0.0"' in card.text and 'load_dataset("mcqforge/wicked-mmlu", "original"' in card.text
    assert [e.version for e in read_changelog(str(card))] == ["1.0.0"]
    assert card.data.license == "mit" and card.data.source_datasets == ["cais/mmlu"]
    paths = local_hub.paths_at("mcqforge/wicked-mmlu", "v1.0.0")
    assert sorted(path for path in paths if not path.startswith("lm_eval/")) == sorted(
        [".gitattributes", "README.md", "build_config.yaml", "exclusions.jsonl", "validation_report.json"]
        + [f"{config}/{split}-00000-of-00001.parquet" for config in ["original"] + [f"variant_{k}" for k in range(5)]
           for split in ("test", "dev")]
    )
    # the published task folder is pinned to the repo and the tag
    assert {"lm_eval/manifest.json", "lm_eval/utils.py"} <= set(paths)
    manifest = json.loads(local_hub.file_at("mcqforge/wicked-mmlu", "v1.0.0", "lm_eval/manifest.json"))
    assert (manifest["repo"], manifest["revision"]) == ("mcqforge/wicked-mmlu", "v1.0.0")


def test_the_cards_dataset_info_is_read_by_datasets(tmp_path, caplog):
    """Rows and bytes per split in the card's YAML, in the form ``datasets`` accepts (it ignored the splits
    without ``num_bytes``, with a warning on every load)."""
    folder = write_benchmark("mmlu", tmp_path)
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--output", str(tmp_path / "out")]) == 0
    card = DatasetCard.load(tmp_path / "out" / "README.md")
    info = {entry["config_name"]: {split["name"]: split for split in entry["splits"]} for entry in card.data.dataset_info}
    assert {name: split["num_examples"] for name, split in info["variant_0"].items()} == {"test": 8, "dev": 3}
    assert all(split["num_bytes"] > 0 for splits in info.values() for split in splits.values())
    with caplog.at_level("WARNING"):
        loaded = datasets.load_dataset(str(tmp_path / "out"), "variant_0")
    assert loaded["test"].num_rows == 8 and "dataset_info" not in caplog.text


def test_second_version_keeps_the_first_and_carries_the_changelog(local_hub, tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-versions"
    assert push(folder, repo, "1.0.0") == 0
    assert push(folder, repo, "1.1.0", "--seed", "5", "--variants", "2") == 0
    assert local_hub.tags(repo) == ["v1.0.0", "v1.1.0"]
    old = datasets.load_dataset(repo, "variant_0", revision="v1.0.0")["test"]
    new = datasets.load_dataset(repo, "variant_0", revision="v1.1.0")["test"]
    assert old["choices"] != new["choices"]
    with pytest.raises(ValueError):
        datasets.load_dataset(repo, "variant_4", revision="v1.1.0")  # the new release has 2 variants only
    assert datasets.load_dataset(repo, "variant_4", revision="v1.0.0")["test"].num_rows == 8
    card = local_hub.file_at(repo, "v1.1.0", "README.md").decode()
    assert [e.version for e in read_changelog(card)] == ["1.1.0", "1.0.0"]


def test_an_existing_tag_is_refused_before_any_upload(local_hub, tmp_path, capsys):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-refuse"
    assert push(folder, repo, "1.0.0") == 0
    commits = local_hub.commits(repo)
    assert push(folder, repo, "1.0.0", "--seed", "9") == 2
    assert "already has tag v1.0.0" in capsys.readouterr().err
    assert local_hub.commits(repo) == commits


def test_a_failed_upload_leaves_no_tag_and_a_rerun_completes(local_hub, tmp_path, capsys):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-retry"
    local_hub.fail_next("commit", status=500)
    assert push(folder, repo, "2.0.0") == 2
    assert "no tag was created" in capsys.readouterr().err
    assert local_hub.tags(repo) == []
    assert push(folder, repo, "2.0.0") == 0
    assert local_hub.tags(repo) == ["v2.0.0"]


def test_a_failed_tag_leaves_no_tag_and_a_rerun_completes(local_hub, tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-tag-retry"
    local_hub.fail_next("tag", status=500)
    assert push(folder, repo, "1.0.0") == 2
    assert local_hub.tags(repo) == []
    assert push(folder, repo, "1.0.0") == 0
    assert local_hub.tags(repo) == ["v1.0.0"]


def test_private_repo_needs_the_token(local_hub, tmp_path, monkeypatch):
    folder = write_benchmark("mmlu", tmp_path)
    assert push(folder, "mcqforge/wicked-private", "1.0.0", "--private") == 0
    assert HfApi().repo_info("mcqforge/wicked-private", repo_type="dataset").private
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(Exception):
        HfApi(token=False).repo_info("mcqforge/wicked-private", repo_type="dataset")
    assert push(folder, "mcqforge/wicked-private", "1.0.1") == 2  # no token: refused with a clear line


def test_invalid_version_is_refused(local_hub, tmp_path, capsys):
    assert push(write_benchmark("mmlu", tmp_path), "mcqforge/wicked-bad", "1.0") == 2
    assert "X.Y.Z" in capsys.readouterr().err


def test_a_hub_source_records_its_resolved_revision(local_hub, tmp_path):
    """Sources load from the Hub with `datasets`; the card records the commit sha the revision resolved to."""
    folder = write_benchmark("mmlu", tmp_path)
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: all\n  data_files:\n  - split: test\n    path: test.jsonl\n"
        "  - split: dev\n    path: dev.jsonl\n---\n"
    )
    api = HfApi()
    api.create_repo("someone/mmlu-copy", repo_type="dataset")
    commit = api.upload_folder(repo_id="someone/mmlu-copy", repo_type="dataset", folder_path=str(folder))
    api.create_tag("someone/mmlu-copy", tag="v1", repo_type="dataset", revision=commit.oid)
    loaded = load_source(BENCHMARKS["mmlu"], "someone/mmlu-copy:all@v1")
    assert loaded.revision == commit.oid and loaded.dataset == "someone/mmlu-copy"
    assert [r.id for r in loaded.items["test"]][:2] == ["mmlu/test/0", "mmlu/test/1"]
    local = load_source(BENCHMARKS["mmlu"], str(folder))
    content = lambda source: [(r.id, r.question, r.choices, r.answer) for r in source.items["test"]]  # noqa: E731
    assert content(loaded) == content(local) and loaded.items["test"][0].source == "someone/mmlu-copy"
