"""What a new user meets in the first hour (issue 24): honest card metadata, options that do what they say,
a quick and quiet command line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from huggingface_hub import DatasetCard

from builders import wicked
from builders.contrast_sets import builder as contrast_sets
from builders.core import cli
from builders.core.sources import SAMPLES_DIR
from fixtures import write_benchmark

REPO = Path(__file__).resolve().parents[1]


def card(folder: Path) -> DatasetCard:
    return DatasetCard((folder / "README.md").read_text(encoding="utf-8"))


# ---- honest metadata -------------------------------------------------------------------------------------


def test_a_card_built_from_the_sample_claims_no_benchmark_license_or_source(tmp_path):
    """A card built from `--source sample` said `license: mit` and `source_datasets: [cais/mmlu]`, although the
    samples were written for mcqforge; a card built from a copy of the benchmark still says both."""
    sample, copy = tmp_path / "sample", tmp_path / "copy"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(sample)]) == 0
    assert wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                        "--output", str(copy)]) == 0
    built = card(sample)
    assert (built.data.license, built.data.source_datasets) == ("apache-2.0", None)
    assert "mcqforge's own sample in the `cais/mmlu` layout (written for mcqforge, Apache-2.0: not the " \
           "benchmark's data)" in built.text
    assert (card(copy).data.license, card(copy).data.source_datasets) == ("mit", ["cais/mmlu"])


def test_a_card_with_license_other_names_it(tmp_path):
    """The contrast-sets card said `license: other` with no `license_name`, which the Hub asks for."""
    source = shutil.copytree(SAMPLES_DIR / "unifiedqa", tmp_path / "unifiedqa")
    assert cli.main(contrast_sets.BUILDER, ["--source", str(source), "--output", str(tmp_path / "out"),
                                            "--log-level", "WARNING"]) == 0
    data = card(tmp_path / "out").data
    assert (data.license, data.license_name, data.license_link) == (
        "other", "unifiedqa-source-licenses", "https://github.com/allenai/unifiedqa")
