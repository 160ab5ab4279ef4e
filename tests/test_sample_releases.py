"""Every builder's embedded sample, built as the README says, as a new user meets it: the build prints each line
once and no warning, the card opens with a short summary and a picture, and ``load_dataset`` with no config
name returns the config the builder's paper evaluates."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from builders.registry import BUILDERS, load_builder

REPO = Path(__file__).resolve().parent.parent
# The shortcuts the choices-only model finds in two samples' own distractors (the samples' predictions, written
# for mcqforge, make PythonIO's wrong outputs longer than the right ones): real, so printed, once each.
SAMPLE_WARNINGS = {"python_io": 11, "gsm_mc": 1}


def sample_build(name: str, out: Path) -> subprocess.CompletedProcess:
    builder = load_builder(name)
    return subprocess.run([sys.executable, "-m", BUILDERS[name], "--source", "sample", *builder.sample_options,
                           "--output", str(out)], capture_output=True, text=True, cwd=REPO, timeout=600)


@pytest.fixture(scope="module", params=list(BUILDERS))
def built(request, tmp_path_factory) -> tuple[str, Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp(request.param) / "release"
    return request.param, out, sample_build(request.param, out)


def test_a_sample_build_prints_each_line_once_and_no_warning(built):
    """PythonIO's sample printed 11 shortcut warnings, each twice (the log and the summary), GSM-MC's one, and
    GSM-MC's log said "30 unmatched" of the predictions on a split it does not build; PythonIO's title said
    "from sample, sample"."""
    name, out, build = built
    assert build.returncode == 0, build.stderr[-3000:]
    lines = [line.split(": ", 1)[-1] if " INFO " in line or " WARNING " in line else line
             for line in (build.stderr + build.stdout).splitlines() if line.strip()]
    repeated = [line for line, n in Counter(lines).items() if n > 1 and not line.startswith("|")]
    assert repeated == []
    printed = (build.stderr + build.stdout).count("WARNING")
    assert printed == SAMPLE_WARNINGS.get(name, 0) and f"shortcut audit: {printed} warning(s)" in build.stdout
    assert "unmatched" not in build.stderr and "sample, sample" not in build.stdout
    assert "\x1b[" not in build.stderr + build.stdout  # neither stream is a terminal


def test_load_dataset_with_no_config_returns_the_config_the_paper_evaluates(built):
    """`default: true` sat on `original`, the source unchanged, and the card's snippet loaded it: a user who named
    no config evaluated plain MMLU as WiCkeD. The default is the builder's declared config, and the snippet loads
    it with no config name."""
    import datasets
    import pandas as pd

    name, out, build = built
    assert build.returncode == 0, build.stderr[-3000:]
    builder = load_builder(name)
    expected = builder.default_config  # "{options.default_config}": the options name it
    if "{" in expected:
        expected = expected.format(options=builder.options_from(["--source", "sample", *builder.sample_options]))
    assert expected != getattr(builder, "unchanged_config", None)
    loaded = datasets.load_dataset(str(out))
    split = next(iter(loaded))
    assert loaded[split].info.config_name == expected
    written = pd.concat(pd.read_parquet(path) for path in sorted((out / expected).glob(f"{split}-*.parquet")))
    assert loaded[split]["id"] == written["id"].tolist()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f'ds = load_dataset("path/to/this/folder")  # the `{expected}` config' in card
    assert card.count("default: true") == 1
