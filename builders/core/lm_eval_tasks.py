"""The lm-evaluation-harness task folder every release carries (``lm_eval/``), in lm-eval's own conventions:
one YAML file per task, shared settings through ``include:``, groups that aggregate, and a ``utils.py``.

Every task reads its config through ``custom_dataset: !function utils.load_release``: the release's own
Parquet files when the task folder sits inside the release folder (a local build, or a downloaded
snapshot), else the published Hub repo at the release tag. So the same folder runs unchanged on a
release folder and on the Hub, and a published release is pinned to its tag::

    lm_eval --model hf --model_args pretrained=MODEL --include_path RELEASE/lm_eval --tasks TASK

:data:`UTILS` is the ``utils.py`` every folder starts from: the loader and the MMLU-style
multiple-choice prompt (lm-eval's ``mmlu`` layout, with as many lettered options as the item has). A
builder appends its own functions to it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping, Sequence

import yaml

from .build import TaskLocation

TASKS_DIR = "lm_eval"
MANIFEST = f"{TASKS_DIR}/manifest.json"

UTILS = '''"""lm-eval hooks for this mcqforge release (written by mcqforge; needs only the standard library and
datasets). ``load_release`` reads this release; the prompt functions render lm-eval's MMLU layout."""

from pathlib import Path

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def load_release(config, repo=None, revision=None, **_):
    """The config's Parquet files in the release folder around this file, else the Hub repo at the tag."""
    import datasets

    for folder in Path(__file__).resolve().parents:
        if (folder / "build_config.yaml").is_file():
            files = sorted((folder / config).glob("*.parquet"))
            if files:
                splits = {}
                for file in files:
                    splits.setdefault(file.name.split("-")[0], []).append(str(file))
                return datasets.load_dataset("parquet", data_files=splits)
            break
    if repo is None:
        raise FileNotFoundError(f"no Parquet files of config {config!r} beside this task folder, and no Hub repo")
    return datasets.load_dataset(repo, config, revision=revision)


def mc_text(doc):
    """The question, its lettered options, and "Answer:" (lm-eval's MMLU prompt)."""
    lines = [doc["question"].strip()]
    lines += [f"{LETTERS[i]}. {choice}" for i, choice in enumerate(doc["choices"])]
    return "\\n".join(lines + ["Answer:"])


def mc_choices(doc):
    return list(LETTERS[: len(doc["choices"])])
'''


class Function(str):
    """A YAML ``!function`` reference, e.g. ``Function("utils.load_release")``."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


def to_yaml(mapping: Mapping[str, Any], comment: str = "") -> bytes:
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    return (header + yaml.dump(dict(mapping), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)).encode()


def dataset_settings(location: TaskLocation, config: str) -> dict[str, Any]:
    """The keys that make a task read ``config`` of this release (see the module docstring)."""
    return {"custom_dataset": Function("utils.load_release"),
            "dataset_kwargs": {"config": config, "repo": location.repo_id, "revision": location.revision}}


def multiple_choice_task(task: str, config: str, location: TaskLocation, test_split: str, *,
                         description: str | None = None, fewshot_split: str | None = None, num_fewshot: int = 0,
                         doc_to_text: str = "utils.mc_text", doc_to_choice: str = "utils.mc_choices",
                         process_docs: str | None = None, metrics: Sequence[str] = ("acc",),
                         tag: str | None = None, version: float = 1.0, **extra: Any) -> dict[str, Any]:
    """A ``multiple_choice`` task in lm-eval's MMLU layout: the letter after "Answer:" is scored."""
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
    entry.update({"doc_to_text": Function(doc_to_text), "doc_to_choice": Function(doc_to_choice),
                  "doc_to_target": "answer",
                  "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in metrics],
                  "metadata": {"version": version}, **extra})
    return entry


def slug(value: str, taken: Iterable[str] = ()) -> str:
    """A task-name part for a column value (a subject, a category), unlike every slug in ``taken``."""
    taken = set(taken)
    text = re.sub(r"[^a-z0-9]+", "_", value.lower()).strip("_") or "none"
    text = text if text[0].isalpha() else f"s_{text}"
    while text in taken:
        text += "_"
    return text


def value_filters(column: str, slugs: Mapping[str, str]) -> str:
    """``utils.py`` code defining ``only_<slug>(dataset)`` for each ``{value: slug}``: a task's ``process_docs``
    that keeps the docs whose ``column`` is that value (its demonstrations too). It is made from a literal
    table, so no data text is ever code."""
    if not slugs:
        return ""
    table = {slug: value for value, slug in slugs.items()}
    return f'''

VALUES = {table!r}


def _only(value):
    def keep(dataset):
        return dataset.filter(lambda doc: (doc[{column!r}] or "") == value)
    return keep


for _slug, _value in VALUES.items():
    globals()[f"only_{{_slug}}"] = _only(_value)
'''


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
    (``variant``, ``set``, ``family``, ``scoring``...). Groups are ``{"group": NAME, "tasks": [...]}``.
    ``demonstrations`` says why, where the tasks hold their demonstrations in the prompt instead of drawing
    them with lm-eval's few-shot machinery (``fewshot_split``, ``fewshot_config``, ``num_fewshot``).
    """
    content = {"builder": builder, "repo": location.repo_id, "revision": location.revision,
               "tasks": [dict(task) for task in tasks], "groups": [dict(group) for group in groups],
               **({"demonstrations": demonstrations} if demonstrations else {})}
    return (json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
