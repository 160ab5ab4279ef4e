"""inspect_ai tasks for an mcqforge release: mcqforge copies this module into every release, as
``inspect/mcqforge_inspect.py``, beside the ``inspect/tasks.py`` that holds one ``@task`` per config.

A task reads one config and split of the release: the release's own Parquet files when the ``inspect/`` folder
sits inside the release folder (a local build, or a downloaded snapshot), else the published Hub repo at the
release tag, as the ``lm_eval/`` tasks do. Each record becomes a :class:`Sample` (its question, its options in
the release's order, the gold letter); inspect's ``multiple_choice()`` solver asks, and ``choice()`` scores.
The dataset is named after the release, config, split and version (:func:`dataset_name`). Needs inspect_ai and
datasets only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import Dataset, MemoryDataset, Sample
from inspect_ai.scorer import choice
from inspect_ai.solver import multiple_choice

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
METADATA = ("subject", "category", "source", "source_split", "source_index")


def record_to_sample(record: dict[str, Any]) -> Sample:
    """One release row: the gold is an index (``answer_index`` where the release carries MMLU-Pro's columns, whose
    ``answer`` is a letter)."""
    gold = record.get("answer_index")
    gold = int(gold if gold is not None else record["answer"])
    return Sample(id=record["id"], input=record["question"], choices=[str(c) for c in record["choices"]],
                  target=LETTERS[gold], metadata={k: record[k] for k in METADATA if record.get(k) is not None})


def release_folder(tasks_folder: Path) -> Path | None:
    """The release folder around the task folder (the one holding ``build_config.yaml``), if any."""
    for folder in Path(tasks_folder).resolve().parents:
        if (folder / "build_config.yaml").is_file():
            return folder
    return None


def release_dataset(tasks_folder: Path, config: str, split: str, repo: str | None = None,
                    revision: str | None = None) -> Dataset:
    """The config's split: the Parquet files of the release folder around ``tasks_folder``, else ``repo`` at
    ``revision``, named by :func:`dataset_name`. (The task file passes its own folder: one process may run the
    tasks of several releases, and this module is imported once.)"""
    folder = release_folder(tasks_folder)
    files = sorted((folder / config).glob(f"{split}-*.parquet")) if folder else []
    if folder and files:  # read afresh, with no cache: a rebuilt release in the same folder must not be served from one
        import pyarrow.parquet as pq

        rows = [row for file in files for row in pq.read_table(file).to_pylist()]
        location = str(folder / config)
    elif repo is None:
        raise FileNotFoundError(f"no Parquet files of config {config!r}, split {split!r} beside this task folder, "
                                "and no Hub repo (this release was not published)")
    else:
        import datasets

        rows = datasets.load_dataset(repo, config, split=split, revision=revision)
        location = f"hf://datasets/{repo}@{revision}/{config}" if revision else f"hf://datasets/{repo}/{config}"
    name = dataset_name(repo or (folder.name if folder else config), config, split, revision)
    return MemoryDataset([record_to_sample(row) for row in rows], name=name, location=location)


def dataset_name(release: str, config: str, split: str, revision: str | None) -> str:
    """What inspect shows as the dataset: the release (its Hub repo, or its folder's name when it was not
    published), the config and split, and the version: ``org/name:set_1/test@v1.0.0``."""
    return f"{release}:{config}/{split}" + (f"@{revision}" if revision else "")


def release_task(tasks_folder: Path, config: str, split: str, repo: str | None = None,
                 revision: str | None = None) -> Task:
    """A multiple-choice task on one config of the release, scored by the letter the model chooses."""
    return Task(dataset=release_dataset(tasks_folder, config, split, repo, revision), solver=multiple_choice(),
                scorer=choice(),
                metadata={"config": config, "split": split, "repo": repo, "revision": revision})
