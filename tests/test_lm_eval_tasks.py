"""The ``lm_eval/`` folder every release carries: its ``utils.py`` is a real module of the package
(``builders.core.tasks.lm_eval_utils``), its tasks share one ``include:`` template, and every filter is a function
written out by name. Checked with lm-eval's own loader (``TaskManager``) on sample releases."""

from __future__ import annotations

import ast
import json
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from datasets import Dataset
from fixtures import read_lm_eval_task

from builders.core.build.result import TaskLocation
from builders.core.tasks import lm_eval_tasks, lm_eval_utils

REPO = Path(__file__).resolve().parents[1]
LOCATION = TaskLocation("org/release", "v1.0.0")


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"release_utils_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pyflakes(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", "F",
                           str(path)], capture_output=True, text=True)


def test_utils_py_is_the_package_module_and_its_prompts_render_the_mmlu_layout():
    assert lm_eval_tasks.utils_module() == (REPO / "builders" / "core" / "tasks" / "lm_eval_utils.py").read_bytes()
    doc = {"question": " Capital of Italy? ", "choices": ["Rome", "Milan", "Turin"], "answer": 0}
    assert lm_eval_utils.mc_text(doc) == "Capital of Italy?\nA. Rome\nB. Milan\nC. Turin\nAnswer:"
    assert lm_eval_utils.choices_only_text(doc) == "A. Rome\nB. Milan\nC. Turin\nAnswer:"
    assert lm_eval_utils.mc_choices(doc) == ["A", "B", "C"]
    docs = Dataset.from_dict({"subject": ["law", None, "math", "law"], "id": ["a", "b", "c", "d"]})
    assert lm_eval_utils.keep_value(docs, "subject", "law")["id"] == ["a", "d"]
    assert lm_eval_utils.keep_value(docs, "subject", "")["id"] == ["b"]  # a missing value counts as ""


def test_filters_are_functions_written_out_by_name_with_the_value_a_literal():
    """Regression: the filters were made in a loop with ``globals()[f"only_{slug}"]``, so ``only_algebra`` could not
    be found by reading utils.py, and no linter saw them."""
    tricky = 'it\'s "quoted"\n{x}'
    code = lm_eval_tasks.value_filters("category", {"Algebra": "algebra", tricky: "it_s_quoted_x"})
    utils = lm_eval_tasks.utils_module(code).decode()
    assert "globals()" not in utils
    tree = ast.parse(utils)
    functions = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert functions[-2:] == ["only_algebra", "only_it_s_quoted_x"]
    assert "def only_algebra(dataset):\n    return keep_value(dataset, 'category', 'Algebra')\n" in utils
    namespace: dict = {}
    exec(compile(utils, "utils.py", "exec"), namespace)  # noqa: S102 (the module mcqforge writes, not data)
    docs = Dataset.from_dict({"category": ["Algebra", tricky, "Geometry"]})
    assert namespace["only_it_s_quoted_x"](docs)["category"] == [tricky]
    assert namespace["only_algebra"](docs)["category"] == ["Algebra"]
    assert lm_eval_tasks.value_filters("subject", {}) == ""


def test_tasks_include_one_template_holding_what_they_share_and_set_only_what_differs():
    def task(name, config, text, shots):
        return lm_eval_tasks.multiple_choice_task(name, config, LOCATION, "test", doc_to_text=text,
                                                  fewshot_split="dev" if shots else None, num_fewshot=shots)

    files = lm_eval_tasks.templated({
        "lm_eval/a/t1.yaml": (task("t1", "a", lm_eval_tasks.Function("utils.prompt"), 5), "one"),
        "lm_eval/b/t2.yaml": (task("t2", "b", "prompt", 5), "two"),  # a column named like the function
        "lm_eval/t3.yaml": (task("t3", "c", lm_eval_tasks.Function("utils.prompt"), 0), "three")})
    assert sorted(files) == ["lm_eval/_default_template_yaml", "lm_eval/a/t1.yaml", "lm_eval/b/t2.yaml",
                             "lm_eval/t3.yaml"]
    template = yaml.safe_load(files["lm_eval/_default_template_yaml"].replace(b"!function", b""))
    assert list(template) == ["custom_dataset", "test_split", "output_type", "doc_to_choice", "doc_to_target",
                              "metric_list", "metadata"]
    t1 = yaml.load(files["lm_eval/a/t1.yaml"].decode(), Loader=yaml.BaseLoader)
    assert t1["include"] == "../_default_template_yaml"
    assert sorted(t1) == ["dataset_kwargs", "doc_to_text", "fewshot_config", "fewshot_split", "include", "num_fewshot",
                          "task"]
    t3 = yaml.load(files["lm_eval/t3.yaml"].decode(), Loader=yaml.BaseLoader)
    assert t3["include"] == "_default_template_yaml" and "fewshot_split" not in t3  # nor in the template
    assert files["lm_eval/b/t2.yaml"].startswith(b"# two\ninclude: ../_default_template_yaml\ntask: t2\n")


@pytest.fixture(scope="module")
def math_mc_release(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("math_mc") / "release"
    result = subprocess.run([sys.executable, "-m", "builders", "math_mc", "--source", "sample", "--sets", "2",
                             "--output", str(out), "--log-level", "WARNING"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


@pytest.mark.slow
def test_lm_evals_task_manager_loads_the_templated_tasks_and_their_named_filters(math_mc_release):
    from lm_eval.tasks import TaskManager

    folder = math_mc_release / "lm_eval"
    members = sorted(p.name for p in folder.glob("math_mc_set_*_*.yaml"))
    assert members == [f"math_mc_set_{k}_{s}.yaml" for k in range(2) for s in ("algebra", "prealgebra")]
    for member in members:  # each task file holds only what differs from the template
        own = yaml.load((folder / member).read_text(), Loader=yaml.BaseLoader)
        assert sorted(own) == ["dataset_kwargs", "include", "process_docs", "task"]
        assert own["include"] == "_default_template_yaml"
    utils = (folder / "utils.py").read_text()
    defined = {node.name for node in ast.parse(utils).body if isinstance(node, ast.FunctionDef)}
    assert {"only_algebra", "only_prealgebra", "load_release", "mc_text", "mc_choices"} <= defined
    assert "globals()" not in utils
    assert pyflakes(folder / "utils.py").returncode == 0

    loaded = TaskManager(include_path=str(folder), include_defaults=False).load(["math_mc_set_0", "math_mc_set_1"])
    assert loaded["group_map"] == {f"math_mc_set_{k}": [f"math_mc_set_{k}_algebra", f"math_mc_set_{k}_prealgebra"]
                                   for k in range(2)}
    for name, task in loaded["tasks"].items():
        subject = name.rsplit("_", 1)[1]
        merged = read_lm_eval_task(folder / f"{name}.yaml")
        assert merged["process_docs"] == f"utils.only_{subject}"
        assert task.config.process_docs.__name__ == f"only_{subject}"  # found by name in utils.py
        assert task.config.description == merged["description"] == (
            "The following are multiple choice questions (with answers) about high school math.\n\n")
        assert (task.config.num_fewshot, task.config.fewshot_split) == (5, "demonstrations")
        assert task.config.doc_to_text.__name__ == "mc_text"
        docs, shown = list(task.test_docs()), list(task.fewshot_docs())
        assert len(docs) == 1 and {doc["subject"].lower() for doc in docs} == {subject}  # 6 items, 5 demonstrations
        assert len(shown) == 5 and {doc["subject"].lower() for doc in shown} == {subject}


def scored_and_shown(folder: Path, names: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """lm-eval's own view of each task: the ids of the docs it scores, and of the demonstrations of each
    (``fewshot_context`` of the first scored doc, matched by question)."""
    from lm_eval.tasks import TaskManager

    views = {}
    for name, task in TaskManager(include_path=str(folder), include_defaults=False).load(names)["tasks"].items():
        docs, pool = list(task.test_docs()), list(task.fewshot_docs())
        context = task.fewshot_context(docs[0], task.config.num_fewshot)
        shown = [doc["id"] for doc in pool if doc["question"].strip() in context]
        assert len(shown) == task.config.num_fewshot, name
        views[name] = ([doc["id"] for doc in docs], shown)
    return views


@pytest.mark.slow
@pytest.mark.parametrize(("builder", "task", "scored", "shown"), [
    ("gsm_mc", "gsm_mc_set_0", 7, {"": [f"gsm8k/test/{i}" for i in range(5)]}),
    ("math_mc", "math_mc_set_1", 1, {"algebra": [f"math/test/{i}" for i in range(5)],
                                     "prealgebra": [f"math/test/{i}" for i in range(6, 11)]}),
    ("python_io", "python_io_set_0", 33, {"": ["mbpp/601/0", "mbpp/601/1", "mbpp/601/2", "mbpp/602/0",
                                               "mbpp/602/1"]})])
def test_no_demonstration_is_a_scored_item(sample_releases, builder, task, scored, shown):
    """GSM-MC's 5-shot demonstrations were the first 5 test items, which were scored too (``fewshot_split: test``):
    a release without ``train`` now holds them out of the scored split, and the card and the README name them."""
    release = sample_releases.release(builder)
    views = scored_and_shown(release / "lm_eval", [task])
    assert {name.removeprefix(task).lstrip("_"): ids for name, (_, ids) in views.items()} == shown
    for name, (docs, ids) in views.items():
        assert len(docs) == scored and not set(docs) & set(ids), name
    named = ", ".join(f"`{i}`" for i in [*shown.values()][0])
    for text in ((release / "README.md").read_text(), (release / "lm_eval" / "README.md").read_text()):
        assert named in text
        assert ("leave them out of the scored items" in text) == (builder != "python_io")


def test_held_out_demonstrations_move_to_their_own_split():
    from datasets import DatasetDict

    dataset = DatasetDict({"test": Dataset.from_dict({"id": ["a", "b", "c", "d"], "n": [0, 1, 2, 3]})})
    held = lm_eval_utils.hold_out(dataset, "test", ["c", "a"])
    assert held["demonstrations"]["id"] == ["a", "c"] and held["test"]["id"] == ["b", "d"]
    with pytest.raises(ValueError, match=r"demonstrations \['x'\] are not in split 'test'"):
        lm_eval_utils.hold_out(DatasetDict({"test": Dataset.from_dict({"id": ["a"]})}), "test", ["x"])


@pytest.mark.slow
def test_perturbations_config_utils_lint_and_load_demonstrations_through_the_release_loader(tmp_path):
    """Regression: the prompts module called ``load_release``, which existed only once the builder had pasted the
    shared utils after it (ruff F821, silenced with ``noqa``). Each config folder's ``utils.py`` now lints clean
    and finds the loader of ``lm_eval/utils.py`` itself."""
    from lm_eval.tasks import TaskManager

    out = tmp_path / "release"
    result = subprocess.run([sys.executable, "-m", "builders", "perturbations", "--source", "sample", "--only",
                             "shuffle", "--output", str(out), "--log-level", "WARNING"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "noqa" not in (REPO / "builders" / "perturbations" / "prompts.py").read_text()
    for utils in sorted((out / "lm_eval").rglob("utils.py")):
        assert pyflakes(utils).returncode == 0, pyflakes(utils).stdout
    loaded = TaskManager(include_path=str(out / "lm_eval" / "shuffle"), include_defaults=False).load(
        ["perturbations_mmlu_shuffle_hybrid"])
    [task] = loaded["tasks"].values()
    doc = task.test_docs()[0]
    assert task.config.custom_dataset.__name__ == "load_release"  # from the template, in lm_eval/utils.py
    demonstrations = load_module(out / "lm_eval" / "shuffle" / "utils.py")._fewshot_documents()
    assert [d for d in doc["fewshot"] if d != doc["id"]] and all(d in demonstrations for d in doc["fewshot"]
                                                                   if d != doc["id"])
    assert task.doc_to_text(doc).count("\nAnswer: ") == len(doc["fewshot"])


def test_a_config_is_read_once_for_all_its_subject_tasks_and_again_when_rewritten(sample_releases, tmp_path):
    """WiCkeD on MMLU has 342 tasks, one per config and subject: each read its whole config again and ran
    ``Dataset.filter`` over it, 3.1 GB of memory at ``--limit 2`` with no model. The tasks of one config now share
    one read of it, and each subject is a selection of its rows."""
    import shutil

    from lm_eval.tasks import TaskManager

    release = tmp_path / "wicked"
    shutil.copytree(sample_releases.release("wicked"), release)
    manifest = json.loads((release / "lm_eval" / "manifest.json").read_text())
    loaded = TaskManager(include_path=str(release / "lm_eval"), include_defaults=False).load(
        [task["task"] for task in manifest["tasks"]])["tasks"]
    assert len(loaded) == 36  # 6 configs x 6 subjects
    by_config: dict[str, list] = {}
    for task in loaded.values():
        by_config.setdefault(task.config.dataset_kwargs["config"], []).append(task)
    assert len(by_config) == 6
    for config, tasks in by_config.items():
        assert len({id(task.dataset["test"]) for task in tasks}) == 1, config  # one read of the config
        subjects = [doc["subject"] for task in tasks for doc in task.test_docs()]
        assert sorted(subjects) == sorted(parquet_column(release, config, "test", "subject")), config
    # a rebuilt release in the same folder is read again, not served from the first read
    utils = load_module(release / "lm_eval" / "utils.py")
    first = utils.load_release("original")
    path = next((release / "original").glob("test-*.parquet"))
    import pyarrow.parquet as pq

    pq.write_table(pq.read_table(path).slice(0, 3), path)
    assert len(first["test"]) > 3 and len(utils.load_release("original")["test"]) == 3


def parquet_column(release: Path, config: str, split: str, column: str) -> list:
    import pyarrow.parquet as pq

    return [value for path in sorted((release / config).glob(f"{split}-*.parquet"))
            for value in pq.read_table(path, columns=[column]).column(column).to_pylist()]


def test_keep_value_selects_the_rows_of_a_value_a_missing_one_counting_as_empty():
    dataset = Dataset.from_dict({"id": list("abcde"), "subject": ["x", None, "y", "x", ""]})
    assert lm_eval_utils.keep_value(dataset, "subject", "x")["id"] == ["a", "d"]
    assert lm_eval_utils.keep_value(dataset, "subject", "")["id"] == ["b", "e"]
    assert len(lm_eval_utils.keep_value(dataset, "subject", "z")) == 0
