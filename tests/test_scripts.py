"""The maintainer's scripts: a release train checked whole before anything is built, then published."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fixtures import with_default_ctrl_c

from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parents[1]


def train(tmp_path: Path, version: str, datasets: list[dict]) -> Path:
    path = tmp_path / f"train-{version}.yaml"
    path.write_text(yaml.safe_dump({"version": version, "datasets": datasets}))
    return path


def run_train(path: Path, *extra: str) -> subprocess.CompletedProcess:
    """The train in another process, its stderr a pipe, with none of the switches the suite turns the libraries'
    progress bars off with (the train turns them off itself, as a user runs it)."""
    from builders.core.runtime.progress import LIBRARY_SWITCHES

    environment = {name: value for name, value in os.environ.items() if name not in LIBRARY_SWITCHES}
    return subprocess.run([sys.executable, str(REPO / "scripts" / "release_train.py"), str(path), *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=600, env=environment)


@pytest.mark.slow
def test_a_release_train_is_checked_whole_then_published(local_hub, tmp_path):
    datasets = [
        {"builder": "wicked", "push": "mcqforge/train-wicked", "options": {"source": "sample", "sba_classifier": "none",
                                                                            "variants": 2}},
        {"builder": "perturbations", "push": "mcqforge/train-perturbations",
         "options": {"source": "sample", "only": ["shuffle"]}},
    ]
    result = run_train(train(tmp_path, "1.0.0", datasets))
    assert result.returncode == 0, result.stderr[-3000:]
    # stderr is no terminal: no upload bars, their ANSI cursor codes and \r frames (progress.configure, as builders)
    assert "\x1b[" not in result.stderr and "\r" not in result.stderr and "it/s" not in result.stderr
    assert local_hub.tags("mcqforge/train-wicked") == ["v1.0.0"] == local_hub.tags("mcqforge/train-perturbations")

    # A second train whose last dataset's tag exists stops before building anything.
    again = datasets[:1] + [{**datasets[0], "push": "mcqforge/train-new"}]
    later = train(tmp_path, "1.0.0", list(reversed(again)))
    result = run_train(later)
    assert result.returncode == 2 and "already has tag v1.0.0" in result.stderr
    # the train has no --version to choose: its file's key, or --resume
    assert "choose a new `version:` in the train's file, or pass --resume" in result.stderr
    with pytest.raises(KeyError):  # nothing was built or published
        local_hub.tags("mcqforge/train-new")
    # --resume skips what was released and publishes the rest.
    result = run_train(later, "--resume")
    assert result.returncode == 0, result.stderr[-3000:]
    assert local_hub.tags("mcqforge/train-new") == ["v1.0.0"] and "skip mcqforge/train-wicked" in result.stdout


def test_a_bad_train_file_is_one_line(tmp_path):
    result = run_train(train(tmp_path, "1.0.0", [{"builder": "nope", "push": "a/b"}]))
    assert result.returncode == 2 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("datasets, expected", [
    ([{"builder": "wicked", "push": "a/b", "options": [1]}], "dataset 1: 'options' must be a mapping"),
    ([{"builder": "metrics", "push": "a/b"}], "dataset 1 needs 'builder' (one of ['contrast_sets'"),
    ([{"builder": "evaluate", "push": "a/b"}], "dataset 1 needs 'builder'"),
    ([{"builder": "wicked", "push": "a/b", "options": {"version": "9.9.9"}}], "options ['version'] are set by the train"),
    ([{"builder": "wicked", "push": "a/b", "options": {"push": "other/repo"}}], "options ['push'] are set by the train"),
    ([{"builder": "wicked", "push": "a/b", "options": {"seed": "x"}}],
     "error: dataset 1 (wicked -> a/b): argument --seed: expected a whole number, got 'x'"),
    ([{"builder": "perturbations", "push": "a/b", "options": {"source": "sample", "only": ["shuffle"]}},
      {"builder": "wicked", "push": "c/d", "options": {"bogus": 1}}],
     "error: dataset 2 (wicked -> c/d): unrecognized arguments: --bogus 1"),
])
def test_a_train_file_that_is_not_a_list_of_builds_is_one_line(tmp_path, datasets, expected):
    """A non-mapping 'options' and a command that is not a builder (metrics, evaluate) were tracebacks."""
    result = run_train(train(tmp_path, "1.0.0", datasets), "--check")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
    assert expected in result.stderr


@pytest.mark.parametrize("output", ["a_file", "a_file/below"])
def test_run_benchmarks_refuses_an_output_it_cannot_create(tmp_path, output):
    (tmp_path / "a_file").write_text("x")
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "run_benchmarks.py"), "--data", str(tmp_path),
                             "--only", "sandbox", "--output", str(tmp_path / output)],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and result.stderr.startswith("error: --output ")


def test_a_train_s_options_become_the_words_a_build_config_s_would():
    """Regression: `cross_source: false` was dropped, so the default (true) was built and published."""
    import importlib.util

    from builders.contrast_sets import builder as contrast_sets
    from builders.core.pipeline import cli

    spec = importlib.util.spec_from_file_location("release_train", REPO / "scripts" / "release_train.py")
    release_train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(release_train)
    parser = cli.builder_parser(contrast_sets.BUILDER)
    argv = release_train.option_argv(parser, {"cross_source": False, "cross_split": True, "threshold": 0.8}, "dataset 1")
    assert argv == ["--no-cross-source", "--cross-split", "--threshold=0.8"]
    args = cli.parse_args(parser, argv + ["--output", "out"])
    assert (args.cross_source, args.cross_split, args.threshold) == (False, True, 0.8)


@pytest.mark.slow  # a build and a push in other processes
def test_the_local_hub_script_serves_a_push_from_the_command_line(tmp_path):
    """The README's way to try publishing offline: start the local Hub, export the variables it prints, push."""
    import os
    import signal

    server = subprocess.Popen([sys.executable, str(REPO / "scripts" / "local_hub.py"), "--port", "0", "--token",
                               "hf_script"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=with_default_ctrl_c)
    try:
        assert server.stdout.readline().startswith("local Hub at http://127.0.0.1:")
        exported = server.stdout.readline().split()
        assert exported[0] == "export"
        variables = dict(word.split("=", 1) for word in exported[1:])
        assert set(variables) == {"HF_ENDPOINT", "HF_TOKEN", "HF_HUB_DISABLE_XET"}
        env = {**os.environ, **variables, "HF_HOME": str(tmp_path / "hf")}
        command = [sys.executable, "-m", BUILDERS["wicked"], "--source", "sample", "--sba-classifier", "none",
                   "--push", "you/wicked-sample", "--version", "1.0.0", "--log-level", "WARNING"]
        pushed = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        assert pushed.returncode == 0, pushed.stderr[-2000:]
        assert f"published {variables['HF_ENDPOINT']}/datasets/you/wicked-sample tag v1.0.0" in pushed.stdout
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
