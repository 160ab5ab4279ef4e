"""A new user's first hour, replayed: a new virtual environment (made with ``--system-site-packages`` so that it
stays offline and fast, and without a pip of its own, whose old setuptools cannot read the project's metadata), mcqforge installed into it from this checkout as the README says, then the README's
sample build, ``load_dataset`` on it, a push to the local Hub, a reviewed folder published, and an export.

Every command's output is read as that user reads it, from streams that are not terminals: no traceback, no
line printed twice, no ANSI code; and no file it wrote carries this machine's paths.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parent.parent
LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ [\w.]+: ")


def lines_printed_twice(text: str) -> list[str]:
    lines = [LOG_PREFIX.sub("", line) for line in text.splitlines() if line.strip()]
    return [line for line, n in Counter(lines).items() if n > 1 and not line.startswith(("|", "```"))]


@pytest.mark.slow
def test_the_first_hour_in_a_new_virtual_environment(local_hub, tmp_path):
    venv, home = tmp_path / "venv", tmp_path / "project"
    home.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["MCQFORGE_CACHE"] = str(tmp_path / "cache")
    outputs: list[tuple[str, subprocess.CompletedProcess]] = []

    def run(*argv: str, offline: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([python, *argv], capture_output=True, text=True, cwd=home, timeout=900,
                                env={**env, "HF_HUB_OFFLINE": "1" if offline else "0"})
        assert result.returncode == 0, f"{argv}: {result.stderr[-3000:]}"
        outputs.append((" ".join(argv), result))
        return result

    run("-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index", "-e", str(REPO))
    where = run("-c", "import builders; print(builders.__file__)").stdout.strip()
    assert Path(where).resolve().is_relative_to(REPO)  # this checkout, not another install
    run("-m", BUILDERS["wicked"], "--source", "sample", "--sba-classifier", "none", "--output", "release/wicked-sample")
    loaded = run("-c", "import datasets; d = datasets.load_dataset('release/wicked-sample'); "
                       "print(d['test'].info.config_name)")
    assert loaded.stdout.strip().splitlines()[-1] == "variant_0"
    run("-m", BUILDERS["wicked"], "--source", "sample", "--sba-classifier", "none", "--push", "you/wicked-sample",
        "--version", "1.0.0", offline=False)
    run("-m", BUILDERS["wicked"], "--source", "sample", "--sba-classifier", "none", "--output", "reviewed",
        "--push", "you/wicked-sample", "--version", "1.1.0", "--no-upload", offline=False)
    run("-m", "builders", "publish", "reviewed", "--push", "you/wicked-sample", "--version", "1.1.0", offline=False)
    assert local_hub.tags("you/wicked-sample") == ["v1.0.0", "v1.1.0"]
    run("-m", "builders.export", "release/wicked-sample", "--layout", "mc-evaluation", "--output", "exported")

    for command, result in outputs:
        for stream in (result.stdout, result.stderr):
            assert "Traceback" not in stream, command
            assert "\x1b[" not in stream, command  # neither stream is a terminal
            assert lines_printed_twice(stream) == [], command
    machine_paths = (str(tmp_path), str(REPO), str(Path.home()))
    for path in home.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".json", ".jsonl", ".yaml", ".py", ".txt"):
            text = path.read_text(encoding="utf-8", errors="replace")
            assert not [p for p in machine_paths if p in text], path.relative_to(home)
