"""The maintainer's scripts: a release train checked whole before anything is built, then published."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def train(tmp_path: Path, version: str, datasets: list[dict]) -> Path:
    path = tmp_path / f"train-{version}.yaml"
    path.write_text(yaml.safe_dump({"version": version, "datasets": datasets}))
    return path


def run_train(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "release_train.py"), str(path), *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=600)


def test_a_release_train_is_checked_whole_then_published(local_hub, tmp_path):
    datasets = [
        {"builder": "wicked", "push": "mcqforge/train-wicked", "options": {"source": "sample", "sba_classifier": "none",
                                                                            "variants": 2}},
        {"builder": "perturbations", "push": "mcqforge/train-perturbations",
         "options": {"source": "sample", "only": ["shuffle"]}},
    ]
    result = run_train(train(tmp_path, "1.0.0", datasets))
    assert result.returncode == 0, result.stderr[-3000:]
    assert local_hub.tags("mcqforge/train-wicked") == ["v1.0.0"] == local_hub.tags("mcqforge/train-perturbations")

    # A second train whose last dataset's tag exists stops before building anything.
    again = datasets[:1] + [{**datasets[0], "push": "mcqforge/train-new"}]
    later = train(tmp_path, "1.0.0", list(reversed(again)))
    result = run_train(later)
    assert result.returncode == 2 and "already has tag v1.0.0" in result.stderr
    with pytest.raises(KeyError):  # nothing was built or published
        local_hub.tags("mcqforge/train-new")
    # --resume skips what was released and publishes the rest.
    result = run_train(later, "--resume")
    assert result.returncode == 0, result.stderr[-3000:]
    assert local_hub.tags("mcqforge/train-new") == ["v1.0.0"] and "skip mcqforge/train-wicked" in result.stdout


def test_a_bad_train_file_is_one_line(tmp_path):
    result = run_train(train(tmp_path, "1.0.0", [{"builder": "nope", "push": "a/b"}]))
    assert result.returncode == 2 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr
