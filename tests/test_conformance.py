"""What every builder of the registry must do, checked on its sample build: one suite, parametrised over
``builders.registry.BUILDERS``, so that a builder added as CONTRIBUTING.md says is covered without an edit here.

For every builder: the sample build validates; two builds write the same bytes, and so does a build in another
process (another hash seed); the order of the source's items and a subset of them change no item's output; the
release's ``build_config.yaml`` rebuilds it (``--config``); ``--help`` shows every default, once; the rows add up
(rows in = rows out + rows excluded, re-counted from the Parquet files and ``exclusions.jsonl``, and the card's
outcome table says the same); the lm-eval tasks load in lm-eval's own task manager, and the inspect tasks in
inspect_ai. Each builder's sample is built once per session (the ``sample_releases`` fixture), in-process; what is
a method's own (exact counts on fixtures, its regressions) stays in ``tests/test_<name>.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures import mock_model, outcome_rows_per_config
from sample_releases import QUIET, every_builder, sample_argv

from builders.core.pipeline import cli
from builders.core.pipeline.cli import shows_a_default
from builders.core.sources.loading import evaluation_split
from builders.registry import load_builder

REPO = Path(__file__).resolve().parents[1]


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file of a release folder, but the bytecode that loading its task modules (``lm_eval/utils.py``,
    ``inspect/tasks.py``) in this session may have written beside them."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts}


def parquet_ids(release: Path, config: str, split: str) -> list[str]:
    files = sorted((release / config).glob(f"{split}-*.parquet"))
    return [row["id"] for path in files for row in pq.read_table(path, columns=["id"]).to_pylist()]


def report_of(release: Path) -> dict:
    return json.loads((release / "validation_report.json").read_text(encoding="utf-8"))


# ---- the build -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", every_builder())
def test_the_sample_build_validates(name, sample_releases):
    release = sample_releases.release(name)
    report = report_of(release)
    assert report["passed"] is True and [c["name"] for c in report["checks"] if not c["passed"]] == []
    configs = [path.name for path in sorted(release.iterdir()) if list(path.glob("*.parquet"))]
    assert sorted(report["counts"]) == configs and configs


@pytest.mark.parametrize("name", every_builder())
def test_two_builds_write_the_same_bytes(name, sample_releases):
    first, again = files_of(sample_releases.release(name)), files_of(sample_releases.again(name))
    assert sorted(first) == sorted(again) and [path for path in first if first[path] != again[path]] == []
    assert any(path.endswith(".parquet") for path in first)


@pytest.mark.slow
@pytest.mark.parametrize("name", every_builder())
def test_a_build_in_another_process_writes_the_same_bytes(name, sample_releases, tmp_path):
    """``python -m builders NAME``, with another hash seed than this process's: a set's order, or anything else a
    process decides, reaches no file."""
    out = tmp_path / "release"
    env = {**os.environ, "PYTHONHASHSEED": "12345" if os.environ.get("PYTHONHASHSEED") != "12345" else "54321"}
    result = subprocess.run([sys.executable, "-m", "builders", name, *sample_argv(name), "--output", str(out),
                             *QUIET], capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    first, other = files_of(sample_releases.release(name)), files_of(out)
    assert sorted(first) == sorted(other) and [path for path in first if first[path] != other[path]] == []


def sample_build(name: str, change=None):
    """The build of the sample, made as the command line makes it, from the loaded source as ``change`` alters it:
    ``{(config, split, id): record}``."""
    builder = load_builder(name)
    parser = cli.builder_parser(builder)
    args = parser.parse_args([*sample_argv(name), "--no-progress"])
    options = cli.check_options(builder, args)
    source = cli.corrected(cli.load(builder, args, options), options)
    if change is not None:
        source = change(source)
    build = builder.make_build(source, options, builder.params(args, options, parser))
    return {(config, split, record.id): record for config, split, records in build.records() for record in records}


def reversed_items(source):
    return dataclasses.replace(source, items={split: items[::-1] for split, items in source.items.items()})


def every_other_evaluation_item(source):
    """Every other item of the evaluation split (the other splits, few-shot demonstrations among them, whole)."""
    split = evaluation_split(source.items)
    kept = source.items[split][::2]
    dropped = len(source.items[split]) - len(kept)
    return dataclasses.replace(source, items={**source.items, split: kept},
                               rows_in={**source.rows_in, split: source.rows_in[split] - dropped})


@pytest.mark.parametrize("name", every_builder())
def test_the_order_and_a_subset_of_the_items_change_no_items_output(name):
    """Every random choice is drawn per item (``item_rng``): the items in reverse order, or every other item of the
    evaluation split, give each item the same record. A builder that needs its whole source (a matching across
    items: ``preview_subset=False``) is held to the order only."""
    full = sample_build(name)
    assert sample_build(name, reversed_items) == full
    if load_builder(name).preview_subset:
        subset = sample_build(name, every_other_evaluation_item)
        assert 0 < len(subset) < len(full)
        assert {key: record for key, record in subset.items() if full.get(key) != record} == {}


@pytest.mark.parametrize("name", every_builder())
def test_the_build_config_rebuilds_the_release(name, sample_releases):
    """``--config build_config.yaml`` alone (the sample is recorded as ``sample``) writes the same bytes."""
    first, rebuilt = files_of(sample_releases.release(name)), files_of(sample_releases.rebuilt(name))
    assert sorted(first) == sorted(rebuilt) and [path for path in first if first[path] != rebuilt[path]] == []


# ---- the command line ------------------------------------------------------------------------------------------


def help_blocks(text: str) -> dict[str, str]:
    """Each option's lines of a ``--help`` text, joined: ``{"--seed": "--seed SEED the seed ... (default: 0)"}``."""
    blocks = {}
    for block in re.split(r"\n  (?=-)", text)[1:]:
        first, *rest = block.splitlines()
        blocks[first.split()[0].rstrip(",")] = " ".join([first, *(line.strip() for line in rest if line[:1] == " ")])
    return blocks


@pytest.mark.parametrize("name", every_builder())
def test_help_shows_every_default_once(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")
    parser = cli.builder_parser(load_builder(name))
    blocks = help_blocks(parser.format_help())
    wrong = []
    for action in parser._actions:
        if not action.option_strings or action.default is argparse.SUPPRESS:
            continue
        shown = blocks[action.option_strings[0]].count("(default:")  # a default of None may be said in words, once
        if shown > 1 or (shows_a_default(action) and shown != 1):
            wrong.append(f"{action.option_strings[0]} shows its default {shown} times")
    assert wrong == []
    assert blocks["--seed"].endswith("(default: 0)") and "(default: None)" not in parser.format_help()


# ---- every row accounted for -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", every_builder())
def test_the_rows_add_up_in_the_written_files(name, sample_releases):
    """Rows in = rows out + rows excluded for every config and split, each row once: the rows out counted from the
    Parquet files, the excluded from ``exclusions.jsonl`` (an exclusion of no config is every config's); the report
    and the card's outcome table say the same numbers."""
    release = sample_releases.release(name)
    report = report_of(release)
    exclusions = [json.loads(line) for line in (release / "exclusions.jsonl").read_text().splitlines() if line]
    card = outcome_rows_per_config((release / "README.md").read_text(encoding="utf-8"), list(report["counts"]))
    tabled = Counter()
    for config, split, outcome, _, items in card:
        tabled[config, split, "excluded" if outcome == "excluded" else "out"] += items
    rows_in_per_split = {}
    for config, splits in report["counts"].items():
        for split, counts in splits.items():
            out = parquet_ids(release, config, split)
            excluded = [e["id"] for e in exclusions if e["split"] == split and e["config"] in (None, config)]
            where = f"{config}/{split}"
            assert len(set(out)) == len(out) and set(out).isdisjoint(excluded), where
            assert (counts["out"], counts["excluded"], counts["in"]) == (len(out), len(excluded),
                                                                       len(out) + len(excluded)), where
            assert (tabled[config, split, "out"], tabled[config, split, "excluded"]) == (len(out), len(excluded)), where
            rows_in_per_split.setdefault(split, set()).add(counts["in"])
    assert {split: len(counts) for split, counts in rows_in_per_split.items()} == dict.fromkeys(rows_in_per_split, 1)


# ---- the release's tasks ---------------------------------------------------------------------------------------


def manifest_of(release: Path) -> dict:
    return json.loads((release / "lm_eval" / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", every_builder())
def test_the_lm_eval_tasks_load_in_lm_eval_and_read_the_release(name, sample_releases):
    """Every task and group of the manifest loads in lm-eval's own ``TaskManager`` from the release's ``lm_eval/``
    folder; a task's documents (those of its subtasks, where it is a group) are its config's rows, less those the
    manifest says it holds out as its demonstrations, which are never scored; each renders a prompt and a target."""
    from lm_eval.tasks import TaskManager

    release = sample_releases.release(name)
    manifest = manifest_of(release)
    manager = TaskManager(include_path=str(release / "lm_eval"), include_defaults=False)
    loaded = manager.load([task["task"] for task in manifest["tasks"]])
    for task in manifest["tasks"]:
        leaves = loaded["group_map"].get(task["task"], [task["task"]])
        docs = [doc for leaf in leaves for doc in loaded["tasks"][leaf].eval_docs]
        held_out = task.get("held_out", [])
        rows = parquet_ids(release, task["config"], task["split"])
        assert set(held_out) <= set(rows) and len(set(held_out)) == len(held_out), task["task"]
        assert sorted(doc["id"] for doc in docs) == sorted(set(rows) - set(held_out)), task["task"]
        for leaf in leaves if held_out else ():  # demonstrations drawn from the scored split: only the held-out
            assert {doc["id"] for doc in loaded["tasks"][leaf].fewshot_docs()} <= set(held_out), leaf
        for leaf in leaves:
            built = loaded["tasks"][leaf]
            doc = next(iter(built.eval_docs))
            assert isinstance(built.doc_to_text(doc), str) and built.doc_to_target(doc) is not None, leaf
    for group in manifest.get("groups", []):
        assert sorted(manager.load([group["group"]])["group_map"][group["group"]]) == sorted(group["tasks"])


def inspect_tasks(release: Path) -> dict[str, object]:
    """{name: inspect_ai Task} of the release's ``inspect/tasks.py``, each made by its ``@task`` function, as inspect
    loads a task file."""
    import importlib.util

    from inspect_ai import list_tasks

    path = release / "inspect" / "tasks.py"
    spec = importlib.util.spec_from_file_location(f"inspect_tasks_of_{release.parent.name}_{release.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    listed = list_tasks("inspect/tasks.py", root_dir=release)  # its default is the folder inspect_ai was imported in
    return {info.name: getattr(module, info.name)() for info in listed}


@pytest.mark.slow
@pytest.mark.parametrize("name", every_builder())
def test_the_inspect_tasks_load_in_inspect_and_read_the_release(name, sample_releases, tmp_path, monkeypatch):
    """``inspect/tasks.py`` holds one task per config of the manifest, each of its config's rows, the gold a letter
    of the options; the first runs in inspect_ai (one sample, inspect's mock model)."""
    from inspect_ai import eval as inspect_eval

    release = sample_releases.release(name)
    manifest = manifest_of(release)
    configs = dict.fromkeys((task["config"], task["split"]) for task in manifest["tasks"])
    tasks = inspect_tasks(release)
    assert len(tasks) == len(configs)
    assert sorted((t.metadata["config"], t.metadata["split"]) for t in tasks.values()) == sorted(configs)
    for task_name, task in tasks.items():
        config, split = task.metadata["config"], task.metadata["split"]
        # one naming for both harnesses: the inspect task is named as an lm-eval task of its config
        assert task_name in {t["task"] for t in manifest["tasks"] if (t["config"], t["split"]) == (config, split)}
        samples = list(task.dataset)
        assert [sample.id for sample in samples] == parquet_ids(release, config, split), task_name
        assert all(ord(sample.target) - ord("A") < len(sample.choices) for sample in samples), task_name
        assert task.dataset.name == f"{release.name}:{config}/{split}", task_name  # the release's, never "parquet"
    monkeypatch.chdir(release)
    first = next(iter(tasks))
    [log] = inspect_eval(f"inspect/tasks.py@{first}", model=mock_model(), limit=1, display="none",
                         log_dir=str(tmp_path))
    assert log.status == "success" and log.results.total_samples == 1
    where = tasks[first].metadata
    assert log.eval.task == first and log.eval.dataset.name == f"{release.name}:{where['config']}/{where['split']}"
