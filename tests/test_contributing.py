"""CONTRIBUTING.md's "Adding a builder" matches the code: a toy builder added exactly as it says runs.

The toy (``tests/toy_builder/``) is what the section says a build needs, and nothing else: the package
``builders/toy/`` (the layout of ``builders/wicked/``: ``builder.py`` with its options and its build, ``transform.py``,
``tasks.py``, ``card_statistics.py``, ``checks.py``, ``evaluation.py``), its card ``cards/toy.md``, and its line in
``builders/registry.BUILDERS``. The test puts the package beside the real builders (on ``builders.__path__``), the
card beside the real cards, and the line in the table, then builds from a small source through the command line
and the Python API, and loads the release's tasks in lm-eval and inspect_ai. The last test checks that every file
and name the section mentions exists.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import re
import runpy
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
from fixtures import mock_model, write_jsonl

import builders
from builders import __main__ as commands
from builders import registry
from builders.core.build.result import TaskLocation
from builders.core.items.outcomes import outcome_table
from builders.core.release import card

TOY = Path(__file__).resolve().parent / "toy_builder"
ROWS = [
    {"question": "What is 2 + 2?", "choices": ["3", "4", "5", "6"], "answer": 1, "subject": "elementary_mathematics"},
    {"question": "The capital of France?", "choices": ["Paris", "Rome", "Berlin", "Madrid"], "answer": 0,
     "subject": "geography"},
    {"question": "Which are even?", "choices": ["2", "4", "6", "All of the above"], "answer": 3,
     "subject": "elementary_mathematics"},
    {"question": "Broken row?", "choices": ["a", "b"], "answer": 7, "subject": "geography"},  # answer out of range
    {"question": "The largest planet?", "choices": ["Mars", "Jupiter", "Venus", "Earth"], "answer": 1,
     "subject": "astronomy"},
]
DEV = [{"question": "1 + 1?", "choices": ["2", "3"], "answer": 0, "subject": "elementary_mathematics"}]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy builder added as CONTRIBUTING says: package, card, and one line in the registry."""
    monkeypatch.setattr(builders, "__path__", [*builders.__path__, str(TOY / "builders")])
    cards = tmp_path / "cards"  # the repository's cards/ with the toy's card added
    shutil.copytree(card.CARDS_DIR, cards)
    shutil.copy(TOY / "cards" / "toy.md", cards / "toy.md")
    monkeypatch.setattr(card, "CARDS_DIR", cards)
    monkeypatch.setitem(registry.BUILDERS, "toy", "builders.toy")
    yield importlib.import_module("builders.toy")
    for name in [name for name in sys.modules if name == "builders.toy" or name.startswith("builders.toy.")]:
        del sys.modules[name]


def source(tmp_path: Path) -> Path:
    folder = tmp_path / "src" / "mmlu"
    write_jsonl(folder / "test.jsonl", ROWS)
    write_jsonl(folder / "dev.jsonl", DEV)
    return folder


def parquet_rows(folder: Path, config: str, split: str) -> list[dict]:
    return pq.read_table(sorted((folder / config).glob(f"{split}-*.parquet"))).to_pylist()


def test_the_toy_builder_builds_a_valid_release_from_the_command_line(toy, tmp_path, capsys):
    out = tmp_path / "out"
    assert commands.main(["toy", "--source", str(source(tmp_path)), "--output", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["inspect", "lm_eval", "original", "shuffle_0",
                                                                  "shuffle_1"]
    report = json.loads((out / "validation_report.json").read_text())
    assert report["passed"] is True
    assert {check["name"] for check in report["checks"]} >= {"same_options_same_gold", "skipped_unchanged"}
    for config in ("original", "shuffle_0", "shuffle_1"):
        assert report["counts"][config] == {"test": {"in": 5, "out": 4, "excluded": 1},
                                            "dev": {"in": 1, "out": 1, "excluded": 0}}
    [exclusion] = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    assert (exclusion["split"], exclusion["id"], exclusion["reason"], exclusion["field"]) == (
        "test", "mmlu/test/3", "malformed_row", "answer")
    shuffled = parquet_rows(out, "shuffle_0", "test")
    assert [(row["id"], row["metadata"]["skip_reason"]) for row in shuffled] == [
        ("mmlu/test/0", None), ("mmlu/test/1", None), ("mmlu/test/2", "has_all_of_the_above"), ("mmlu/test/4", None)]
    originals = {row["id"]: row for row in parquet_rows(out, "original", "test")}
    for row in shuffled:
        original = originals[row["id"]]
        assert row["choices"][row["answer"]] == original["choices"][original["answer"]]
        assert sorted(row["choices"]) == sorted(original["choices"])
    assert shuffled[2]["choices"] == originals["mmlu/test/2"]["choices"]
    card = (out / "README.md").read_text()
    assert "This dataset shuffles the options of every item of MMLU, 2 times" in card
    manifest = json.loads((out / "lm_eval" / "manifest.json").read_text())
    assert [(t["task"], t["role"]) for t in manifest["tasks"]] == [
        ("toy_original", "original"), ("toy_shuffle_0", "shuffled"), ("toy_shuffle_1", "shuffled")]


def test_the_toy_builder_checks_its_options_before_reading_the_source(toy, tmp_path, capsys):
    assert commands.main(["toy", "--source", str(tmp_path / "no-such-source"), "--config-prefix", "Original",
                          "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --config-prefix must be lowercase letters other than 'original', not 'Original'"]
    assert not (tmp_path / "out").exists()


def test_the_toy_builder_runs_from_the_python_api_and_evaluate_finds_its_table(toy, tmp_path):
    result = toy.build_dataset({"test": ROWS, "dev": DEV}, shuffles=1, seed=3)
    assert result.report.passed and list(result.configs) == ["original", "shuffle_0"]
    assert [row["id"] for row in result.configs["shuffle_0"]["test"]] == ["mmlu/test/0", "mmlu/test/1",
                                                                          "mmlu/test/2", "mmlu/test/4"]
    build = result.build
    table = outcome_table(build.outcomes, build.exclusions, list(build.configs))  # the core's, from the runner
    assert table.rows == (
        ("original", "test", "copied unchanged", "source_unchanged", 4),
        ("original", "test", "excluded", "malformed_row", 1),
        ("original", "dev", "copied unchanged", "source_unchanged", 1),
        ("shuffle_0", "test", "altered", None, 3),
        ("shuffle_0", "test", "copied unchanged", "has_all_of_the_above", 1),
        ("shuffle_0", "test", "excluded", "malformed_row", 1),
        ("shuffle_0", "dev", "altered", None, 1))
    assert [t.title for t in result.statistics.tables] == ["Gold positions"]  # no outcome table of its own
    from builders.evaluate import paper_table

    evaluation = paper_table("toy")
    assert evaluation is toy.BUILDER.evaluation_table
    manifest = json.loads(build.release.lm_eval_tasks(TaskLocation())["lm_eval/manifest.json"])
    runs = {"m": {"toy_original": SimpleNamespace(accuracy=0.75), "toy_shuffle_0": SimpleNamespace(accuracy=0.5)}}
    [accuracy] = evaluation(runs, manifest, None).tables
    assert accuracy.rows == (("m", 0.75, 0.5),)


def test_the_toy_releases_tasks_load_in_lm_eval_and_inspect(toy, tmp_path, monkeypatch):
    """The release's ``lm_eval/`` folder (its ``utils.py`` the real task module) loads in lm-eval's own task
    manager and reads the release; its ``inspect/`` tasks run in inspect_ai."""
    from inspect_ai import eval as inspect_eval
    from lm_eval.tasks import TaskManager

    out = tmp_path / "out"
    assert commands.main(["toy", "--source", str(source(tmp_path)), "--shuffles", "1", "--output", str(out)]) == 0
    assert (out / "lm_eval" / "utils.py").read_bytes().startswith((REPO / "builders" / "core" / "tasks" /
                                                                    "lm_eval_utils.py").read_bytes())
    loaded = TaskManager(include_path=str(out / "lm_eval"), include_defaults=False).load(["toy_original",
                                                                                        "toy_shuffle_0"])
    shuffled = {row["id"]: row for row in parquet_rows(out, "shuffle_0", "test")}
    for task in loaded["tasks"].values():
        docs = list(task.test_docs())
        assert [doc["id"] for doc in docs] == ["mmlu/test/0", "mmlu/test/1", "mmlu/test/2", "mmlu/test/4"]
        assert task.doc_to_text(docs[0]).endswith("Answer:") and task.doc_to_target(docs[0]) == docs[0]["answer"]
    assert [doc["choices"] for doc in loaded["tasks"]["toy_shuffle_0"].test_docs()] == [
        row["choices"] for row in shuffled.values()]
    monkeypatch.chdir(out)
    [log] = inspect_eval("inspect/tasks.py@toy_shuffle_0", model=mock_model(), limit=2, display="none",
                         log_dir=str(tmp_path / "logs"))
    assert log.status == "success" and log.results.total_samples == 2
    golds_at_a = sum(row["answer"] == 0 for row in list(shuffled.values())[:2]) / 2
    assert log.results.scores[0].metrics["accuracy"].value == golds_at_a


def in_process_conformance_checks():
    """The conformance suite's checks that run in this process (those of the slow layer start other processes, in
    which the toy is not in the registry)."""
    import test_conformance

    checks = [getattr(test_conformance, name) for name in dir(test_conformance) if name.startswith("test_")]
    return [pytest.param(check, id=check.__name__) for check in checks
            if not any(mark.name == "slow" for mark in getattr(check, "pytestmark", []))]


@pytest.mark.parametrize("check", in_process_conformance_checks())
def test_the_toy_passes_the_conformance_suite_unedited(check, toy, request):
    """The builder added by following the guide is held to what every builder of the registry is
    (``tests/test_conformance.py``), by the suite's own test functions, called as pytest calls them."""
    import inspect

    arguments = {name: "toy" if name == "name" else request.getfixturevalue(name)
                 for name in inspect.signature(check).parameters}
    check(**arguments)


def test_python_m_runs_the_toy_builder(toy, monkeypatch, capsys):
    """`python -m builders.<name>` runs the package's `__main__.py`."""
    monkeypatch.setattr(sys, "argv", ["builders.toy", "--help"])
    with pytest.raises(SystemExit) as exit:
        runpy.run_module("builders.toy", run_name="__main__", alter_sys=True)
    assert exit.value.code == 0 and "--config-prefix" in capsys.readouterr().out


# ---- every file and name the section mentions exists ------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]
RELEASE_FILES = ("lm_eval", "inspect/", "lm_eval/manifest.json", "build_config.yaml")  # in a release, not the tree
NOT_NAMES = ("python", "from", "raise")  # the start of a command or a line of code, whose names are checked apart


def adding_a_builder() -> str:
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return text[text.index("## Adding a builder"):text.index("## Rules")]


def file_exists(path: str) -> bool:
    path = path.replace("<name>", "wicked").replace("<benchmark>", "mmlu")
    return any((folder / path).exists() for folder in (REPO, REPO / "builders", REPO / "builders" / "wicked"))


def module_spec(name: str):
    try:
        return importlib.util.find_spec(name)
    except ModuleNotFoundError:  # a parent that is a module, not a package
        return None


def resolves(value, parts: list[str]) -> bool:
    for part in parts:
        fields = {f.name for f in dataclasses.fields(value)} if dataclasses.is_dataclass(value) else set()
        if part in fields:
            return part == parts[-1]
        if not hasattr(value, part):
            return False
        value = getattr(value, part)
    return True


def name_exists(name: str) -> bool:
    """A name of the template builder, of `builders.core` or of a dataclass a builder fills, a module or a dotted
    path from the package (`builders.core.tasks.results.by_role`, `perturbations.evaluation.evaluation_table`), or a test helper."""
    from builders.core.build import result
    from builders.core.items import outcomes, record, rng, tables
    from builders.core.options import declare
    from builders.core.pipeline import builder, options, steps
    from builders.core.sources import loading as sources
    from builders.wicked import builder as template

    parts = name.split(".")
    owners = [template, result, record, rng, sources, steps, outcomes, declare, options, tables, commands, registry,
              result.Release, builder.Builder, result.Baseline, steps.Run, sources.Benchmark, record.MCQRecord,
              options.BuildOptions, template.Options]
    owners += [record.MCQRecord] if parts[0] == "record" else []  # `record.replace(...)`: a record's method
    if any(resolves(owner, parts[1:] if parts[0] == "record" else parts) for owner in owners):
        return True
    core_packages = [f"builders.core.{p.name}." for p in (REPO / "builders" / "core").iterdir() if (p / "__init__.py").exists()]
    for prefix in ("", "builders.", "builders.core.", *core_packages):
        for cut in range(len(parts), 0, -1):
            module = prefix + ".".join(parts[:cut])
            if module_spec(module) is not None:
                rest = parts[cut:]
                return not rest or (module.startswith("builders") and resolves(importlib.import_module(module), rest))
    helpers = "\n".join(path.read_text(encoding="utf-8") for path in (REPO / "tests").glob("*.py"))
    return len(parts) == 1 and re.search(rf"^(?:def )?{re.escape(name)}\b\s*[=(]", helpers, re.MULTILINE) is not None


def test_every_file_and_name_the_section_mentions_exists():
    """The "Adding a builder" section of CONTRIBUTING.md names only files of the template and names the code has."""
    missing, checked = [], 0
    for span in re.findall(r"`([^`]+)`", adding_a_builder()):
        token = re.match(r"[\w.<>/-]*", span).group()
        if not token or token.startswith("-") or token in NOT_NAMES or span in RELEASE_FILES:
            continue
        checked += 1
        if "/" in token or token.endswith((".py", ".md")):
            missing += [] if file_exists(token) else [span]
        elif not name_exists(token):
            missing.append(span)
    assert checked > 40 and missing == []
