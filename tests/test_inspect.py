"""The inspect_ai tasks every release carries (``inspect/``), run with inspect itself on a sample release of every
builder, and read from the Hub at the release tag once published.

The model answers "ANSWER: A" to every question: each task's accuracy is then the share of its items whose gold is
A, counted here from the release's Parquet files. ``inspect eval`` itself runs against an OpenAI-compatible server
on 127.0.0.1 (llmock, the ``openai-api`` provider); the Python API test uses inspect's built-in ``mockllm/model``.

Why not ``inspect eval ... --model mockllm/model`` from the command line: mockllm's default answers carry no token
usage, so inspect (0.3.285) counts each prompt's tokens itself (``MockLLM._ensure_default_usage`` ->
``Model.count_tokens`` -> ``count_text_tokens``), with tiktoken's ``o200k_base`` vocabulary, which tiktoken downloads
on first use (into ``TIKTOKEN_CACHE_DIR``) and checks against its SHA-256: offline, with no cached copy, the command
fails with a ``ConnectionError``. Nothing on the command line gives mockllm a usage; every provider of a real model
reports one. The README says so, and how to copy tiktoken's cache to an offline machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures import mock_model
from llm_server import start_llmock

from builders.core.build.result import TaskLocation
from builders.core.tasks.inspect_tasks import task_files
from builders.registry import BUILDERS

# find_spec, not importorskip: importing inspect_ai costs 4 s in every worker's collection; the tests import it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None, reason="inspect_ai is not installed")

REPO = Path(__file__).resolve().parents[1]
LIMIT = 2


@pytest.fixture(scope="module")
def releases(sample_releases) -> Path:
    """A sample release of every builder, side by side under one folder (the session's sample builds)."""
    for builder in BUILDERS:
        sample_releases.release(builder)
    return sample_releases.release(next(iter(BUILDERS))).parent


def expected_tasks(release: Path) -> dict[str, tuple[str, str]]:
    """{inspect task: (config, split)}: one per config of the lm-eval manifest, named as its lm-eval task (the one
    that scores the letter, where a config has one per scoring method)."""
    manifest = json.loads((release / "lm_eval" / "manifest.json").read_text())
    expected = {}
    for task in manifest["tasks"]:
        where = (task["config"], task["split"])
        if where not in expected.values() or task.get("scoring") == "symbol":
            expected = {name: key for name, key in expected.items() if key != where}
            expected[task["task"]] = where
    return expected


def share_of_gold_a(release: Path, config: str, split: str) -> float:
    rows = pq.read_table(sorted((release / config).glob(f"{split}-*.parquet"))).to_pylist()[:LIMIT]
    golds = [row["answer_index"] if row.get("answer_index") is not None else row["answer"] for row in rows]
    return sum(int(gold) == 0 for gold in golds) / len(golds)


@pytest.mark.slow
def test_the_inspect_eval_command_runs_every_builders_release_offline(releases, tmp_path):
    """The README's command, `inspect eval inspect/tasks.py --model MODEL`, run as a user runs it, offline, on a sample
    release of every builder. The model is an OpenAI-compatible server on 127.0.0.1 (llmock) answering "ANSWER: A":
    inspect's `mockllm/model` cannot run offline from the command line (see the module docstring)."""
    from inspect_ai.log import read_eval_log

    logs_dir = tmp_path / "logs"
    with start_llmock(responder=lambda call: "ANSWER: A") as server:
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "LLMOCK_BASE_URL":
               server.openai_base_url, "LLMOCK_API_KEY": "none",
               "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty")}  # no vocabulary a developer's machine has cached
        result = subprocess.run(["inspect", "eval", *[f"{builder}/inspect/tasks.py" for builder in BUILDERS],
                                 "--model", "openai-api/llmock/model", "--limit", str(LIMIT), "--display", "none",
                                 "--log-format", "json", "--log-dir", str(logs_dir)],
                                capture_output=True, text=True, cwd=releases, env=env, timeout=900)
        asked = len(server.chat_requests)
    assert result.returncode == 0, result.stderr[-3000:]
    logs = [read_eval_log(str(path)) for path in sorted(logs_dir.glob("*.json"))]
    expected = {task: (builder, *where) for builder in BUILDERS
                for task, where in expected_tasks(releases / builder).items()}
    assert sorted(log.eval.task for log in logs) == sorted(expected) and len(logs) == len(expected) > len(BUILDERS)
    assert asked == len(logs) * LIMIT
    for log in logs:
        builder, config, split = expected[log.eval.task]
        assert log.status == "success", (log.eval.task, log.error)
        assert log.results.total_samples == LIMIT
        accuracy = log.results.scores[0].metrics["accuracy"].value
        assert accuracy == share_of_gold_a(releases / builder, config, split), log.eval.task


@pytest.mark.slow
def test_inspect_lists_one_task_per_config_from_the_command_line(releases):
    """`inspect list tasks` finds the tasks as `inspect eval` does: @task functions, written out by name."""
    release = releases / "wicked"
    result = subprocess.run(["inspect", "list", "tasks", "inspect/tasks.py"], capture_output=True, text=True,
                            cwd=release)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted(f"inspect/tasks.py@{task}" for task in expected_tasks(release))


@pytest.mark.slow
def test_a_published_release_runs_its_inspect_tasks_from_the_hub_at_its_tag(local_hub, tmp_path, monkeypatch):
    """Outside the release folder, the tasks read the published repo at the release tag, as lm_eval/ does."""
    from huggingface_hub import snapshot_download
    from inspect_ai import eval as inspect_eval

    from builders.core.pipeline import cli
    from builders import gsm_mc

    repo = "mcqforge/gsm-mc-inspect"
    assert cli.main(gsm_mc.BUILDER, ["--source", "sample", "--sets", "2", "--push", repo, "--version", "1.0.0",
                                     "--output", str(tmp_path / "release"), "--log-level", "WARNING"]) == 0
    tasks = (tmp_path / "release" / "inspect" / "tasks.py").read_text()
    assert "REPO = 'mcqforge/gsm-mc-inspect'\nREVISION = 'v1.0.0'\n" in tasks
    card = (tmp_path / "release" / "README.md").read_text()
    assert (f'hf download {repo} --repo-type dataset --revision v1.0.0 --include "inspect/*" '
            "--local-dir gsm-mc-inspect\n"
            "cd gsm-mc-inspect && inspect eval inspect/tasks.py --model MODEL\n") in card
    # only the task folder, as the card's command downloads it: no Parquet file beside it
    snapshot_download(repo, repo_type="dataset", revision="v1.0.0", local_dir=tmp_path / "tasks-only",
                      allow_patterns=["inspect/*"])
    assert not list((tmp_path / "tasks-only").rglob("*.parquet"))
    monkeypatch.chdir(tmp_path / "tasks-only")
    [log] = inspect_eval("inspect/tasks.py@gsm_mc_set_1", model=mock_model(), limit=LIMIT, display="none",
                         log_dir=str(tmp_path / "logs"))
    assert log.status == "success" and log.results.total_samples == LIMIT
    assert log.results.scores[0].metrics["accuracy"].value == share_of_gold_a(tmp_path / "release", "set_1", "test")
    assert log.eval.dataset.name == "mcqforge/gsm-mc-inspect:set_1/test@v1.0.0"  # not "mcqforge/gsm-mc-inspect"


def test_the_task_file_names_every_config_and_is_pinned_like_the_lm_eval_tasks():
    manifest = {"builder": "perturbations", "tasks": [
        {"task": "p_original_cloze", "config": "original", "split": "test", "scoring": "cloze"},
        {"task": "p_original_symbol", "config": "original", "split": "test", "scoring": "symbol"},
        {"task": "p_gold_at_A_symbol", "config": "gold_at_A", "split": "test", "scoring": "symbol"},
        {"task": "p-odd.name", "config": "odd", "split": "test"}]}
    files = task_files(json.dumps(manifest).encode(), TaskLocation("org/perturbed", "v2.0.0"))
    assert sorted(files) == ["inspect/README.md", "inspect/mcqforge_inspect.py", "inspect/tasks.py"]
    assert files["inspect/mcqforge_inspect.py"] == (REPO / "builders" / "core" / "tasks" / "inspect_release.py").read_bytes()
    tasks = files["inspect/tasks.py"].decode()
    assert "REPO = 'org/perturbed'\nREVISION = 'v2.0.0'\n" in tasks
    # named as the lm-eval task that scores the letter (wicked_variant_0 was lm-eval's wicked_mmlu_variant_0)
    assert tasks.count("@task\n") == 2 and tasks.count("@task(name='p-odd.name')\ndef p_odd_name() -> Task:\n") == 1
    assert "def p_original_symbol() -> Task:\n" in tasks and "def p_gold_at_A_symbol() -> Task:\n" in tasks
    assert "return release_task(HERE, 'gold_at_A', 'test', REPO, REVISION)" in tasks
    compile(tasks, "tasks.py", "exec")
    readme = files["inspect/README.md"].decode()
    assert "inspect eval inspect/tasks.py@p_original_symbol --model MODEL --limit 100" in readme
    assert "| `p_gold_at_A_symbol` | `gold_at_A` | `test` |" in readme


def test_the_readme_shows_the_inspect_command_and_what_it_needs_offline():
    readme = (REPO / "README.md").read_text()
    assert "inspect eval inspect/tasks.py --model" in readme
    assert "`openai-api/NAME/MODEL`, with `NAME_BASE_URL` and `NAME_API_KEY` set), which run offline" in readme
    assert "tiktoken's `o200k_base` vocabulary" in readme and "export TIKTOKEN_CACHE_DIR=" in readme
