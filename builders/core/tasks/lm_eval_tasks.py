"""The lm-evaluation-harness task folder every release carries (``lm_eval/``), in lm-eval's own conventions:
one YAML file per task, the settings its tasks share in one template that each ``include:``s
(:func:`templated`), groups that aggregate, and a ``utils.py``.

Every task reads its config through ``custom_dataset: !function utils.load_release``: the release's own
Parquet files when the task folder sits inside the release folder (a local build, or a downloaded
snapshot), else the published Hub repo at the release tag. So the same folder runs unchanged on a
release folder and on the Hub, and a published release is pinned to its tag::

    lm_eval --model hf --model_args pretrained=MODEL --include_path RELEASE/lm_eval --tasks TASK

The ``utils.py`` every folder carries is :mod:`builders.core.tasks.lm_eval_utils`, a real module read as a resource
(:func:`utils_module`): the loader and the MMLU-style multiple-choice prompts (lm-eval's ``mmlu`` layout, with as
many lettered options as the item has), followed by the release's ``only_<value>`` filters, each written out by
name (:func:`value_filters`).
"""

from __future__ import annotations

import json
import posixpath
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable, Mapping, Sequence

from builders.core.build.result import TaskLocation

TASKS_DIR = "lm_eval"
MANIFEST = f"{TASKS_DIR}/manifest.json"
UTILS = f"{TASKS_DIR}/utils.py"
TEMPLATE = f"{TASKS_DIR}/_default_template_yaml"  # lm-eval's name (mmlu): not a .yaml file, so never a task itself


def utils_module(filters: str = "") -> bytes:
    """``lm_eval/utils.py``: :mod:`builders.core.tasks.lm_eval_utils` as it is in the package, then ``filters``
    (:func:`value_filters`)."""
    return resources.files("builders.core.tasks").joinpath("lm_eval_utils.py").read_bytes() + filters.encode()


class Function(str):
    """A YAML ``!function`` reference, e.g. ``Function("utils.load_release")``."""


@lru_cache(maxsize=None)
def _dumper() -> type:
    """PyYAML's safe dumper with :class:`Function` tags, made when a task file is first written (PyYAML loads then,
    not to parse a command line)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    Dumper.add_representer(Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))
    return Dumper


def to_yaml(mapping: Mapping[str, Any], comment: str = "") -> bytes:
    import yaml

    header = "".join(f"# {line}\n" for line in comment.splitlines())
    return (header + yaml.dump(dict(mapping), Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=110)).encode()


def dataset_settings(location: TaskLocation, config: str) -> dict[str, Any]:
    """The keys that make a task read ``config`` of this release (see the module docstring)."""
    return {"custom_dataset": Function("utils.load_release"),
            "dataset_kwargs": {"config": config, "repo": location.repo_id, "revision": location.revision}}


def multiple_choice_task(task: str, config: str, location: TaskLocation, test_split: str, *,
                         description: str | None = None, fewshot_split: str | None = None, num_fewshot: int = 0,
                         doc_to_text: str = Function("utils.mc_text"), doc_to_choice: str = Function("utils.mc_choices"),
                         process_docs: str | None = None, metrics: Sequence[str] = ("acc",),
                         tag: str | None = None, metadata: Mapping[str, Any] | None = None,
                         **extra: Any) -> dict[str, Any]:
    """A ``multiple_choice`` task, by default in lm-eval's MMLU layout: the letter after "Answer:" is scored.

    ``doc_to_text`` and ``doc_to_choice`` are a column's name, or a :class:`Function` of ``utils.py``;
    ``process_docs`` names a function of ``utils.py``; ``metadata`` adds to ``{"version": 1.0}``."""
    entry: dict[str, Any] = {"task": task, **({"tag": tag} if tag else {}), **dataset_settings(location, config),
                             "test_split": test_split, "output_type": "multiple_choice"}
    if fewshot_split and num_fewshot:
        entry.update({"fewshot_split": fewshot_split, "num_fewshot": num_fewshot,
                      "fewshot_config": {"sampler": "first_n"}})
    else:
        entry["num_fewshot"] = 0
    if description:
        entry["description"] = description
    if process_docs:
        entry["process_docs"] = Function(process_docs)
    entry.update({"doc_to_text": doc_to_text, "doc_to_choice": doc_to_choice, "doc_to_target": "answer",
                  "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in metrics],
                  "metadata": {"version": 1.0, **(metadata or {})}, **extra})
    return entry


def templated(tasks: Mapping[str, tuple[Mapping[str, Any], str]]) -> dict[str, bytes]:
    """The YAML files of ``{path: (task entry, comment)}`` and their template (:data:`TEMPLATE`): the keys every
    task sets to the same value are written once in the template, and each task file ``include:``s it and sets
    only what differs. (lm-eval merges an include key by key: a task's own key replaces the template's whole.)
    A ``!function`` in the template names a function of ``lm_eval/utils.py``, the template's folder."""
    entries = list(tasks.values())
    first = entries[0][0] if entries else {}
    shared = {key: value for key, value in first.items() if key != "task" and all(
        key in entry and type(entry[key]) is type(value) and entry[key] == value for entry, _ in entries)}
    files = {TEMPLATE: to_yaml(shared, "The settings every task of this folder shares: each task's YAML file "
                                       "`include:`s this file and sets what differs.")} if shared else {}
    for path, (entry, comment) in tasks.items():
        include = posixpath.relpath(TEMPLATE, posixpath.dirname(path))
        own = {key: value for key, value in entry.items() if key not in shared}
        files[path] = to_yaml({**({"include": include} if shared else {}), **own}, comment)
    return files


def slug(value: str, taken: Iterable[str] = ()) -> str:
    """A task-name part for a column value (a subject, a category), unlike every slug in ``taken``."""
    taken = set(taken)
    text = re.sub(r"[^a-z0-9]+", "_", value.lower()).strip("_") or "none"
    text = text if text[0].isalpha() else f"s_{text}"
    while text in taken:
        text += "_"
    return text


def value_filters(column: str, slugs: Mapping[str, str]) -> str:
    """``utils.py`` code defining ``only_<slug>(dataset)`` for each ``{value: slug}``, written out by name: a
    task's ``process_docs`` that keeps the docs whose ``column`` is that value (its demonstrations too). The
    value is a string literal (``repr``), so no data text is ever code."""
    functions = [f"\n\ndef only_{slug}(dataset):\n    return keep_value(dataset, {column!r}, {value!r})\n"
                 for value, slug in slugs.items()]
    return "".join(["\n\n# ---- this release's filters (written by mcqforge): one per value of a column ----\n",
                    *functions]) if functions else ""


def group(name: str, tasks: Sequence[str], metrics: Sequence[str] = ("acc",), weight_by_size: bool = False) -> dict[str, Any]:
    """A group whose score is the mean of its tasks' (unweighted by default: each config counts once)."""
    return {"group": name, "task": list(tasks),
            "aggregate_metric_list": [{"metric": m, "aggregation": "mean", "weight_by_size": weight_by_size}
                                      for m in metrics],
            "metadata": {"version": 1.0}}


def manifest(builder: str, location: TaskLocation, tasks: Sequence[Mapping[str, Any]],
             groups: Sequence[Mapping[str, Any]] = (), demonstrations: str | None = None) -> bytes:
    """``lm_eval/manifest.json``: what ``python -m builders.evaluate`` runs and how it reads the results.

    Each task is ``{"task": NAME, "config": CONFIG, "split": SPLIT, "role": ROLE, ...}``: the role says what
    the config is to the paper's table (WiCkeD: ``original`` / ``variant``; the prediction-based builders:
    ``set``; perturbations: ``original`` / ``perturbed``; ...), and builders add what their table needs
    (``variant``, ``set``, ``family``, ``scoring``...); ``held_out`` lists the items of the split that the task
    does not score because they are its demonstrations (``utils.load_release``'s ``demonstrations``). Groups are ``{"group": NAME, "tasks": [...]}``.
    ``demonstrations`` says why, where the tasks hold their demonstrations in the prompt instead of drawing
    them with lm-eval's few-shot machinery (``fewshot_split``, ``fewshot_config``, ``num_fewshot``).
    """
    content = {"builder": builder, "repo": location.repo_id, "revision": location.revision,
               "tasks": [dict(task) for task in tasks], "groups": [dict(group) for group in groups],
               **({"demonstrations": demonstrations} if demonstrations else {})}
    return (json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
