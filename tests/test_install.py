"""A normal (non-editable) install works: the wheel carries the card templates and the samples, and every
builder builds its embedded sample from an unrelated folder through the ``mcqforge`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sample_releases import sample_argv

from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel, installed without its dependencies into an empty target folder (they are on sys.path)."""
    root = tmp_path_factory.mktemp("install")
    wheels, target = root / "wheels", root / "target"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
                    str(REPO)], check=True, cwd=root, capture_output=True)
    [wheel] = wheels.glob("mcqforge-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, cwd=root, capture_output=True)
    return target


def _run(target: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    """The installed package only: the clone is not on the path, the current folder is unrelated."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["PYTHONPATH"] = str(target)
    return subprocess.run([sys.executable, "-c", "from builders.__main__ import main; raise SystemExit(main())", *argv],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


@pytest.mark.slow
def test_the_wheel_carries_the_cards_and_samples(installed):
    assert (installed / "builders" / "cards" / "dataset.md").is_file()
    assert (installed / "builders" / "data" / "samples" / "mmlu" / "test.jsonl").is_file()
    assert not (installed / "builders" / "cards").is_symlink()
    scripts = list((installed / "bin").glob("mcqforge")) if (installed / "bin").exists() else []
    assert scripts, "the wheel declares the mcqforge console command"


@pytest.mark.slow
@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_every_builder_builds_its_sample_from_an_installed_wheel(installed, tmp_path, builder):
    result = _run(installed, tmp_path, builder, *sample_argv(builder), "--output",
                  str(tmp_path / "release"), "--log-level", "WARNING")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "builders/__init__.py" not in result.stderr
    card = (tmp_path / "release" / "README.md").read_text()
    assert str(REPO) not in card and (tmp_path / "release" / "build_config.yaml").exists()
