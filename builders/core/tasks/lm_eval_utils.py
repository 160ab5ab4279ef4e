"""lm-eval hooks for this mcqforge release (written by mcqforge; needs only the standard library and datasets).

mcqforge copies this module into every release as ``lm_eval/utils.py`` (:mod:`builders.core.tasks.lm_eval_tasks`),
where the task YAML files name its functions (``!function utils.load_release``). ``load_release`` reads this
release; the prompt functions render lm-eval's MMLU layout, with as many lettered options as the item has.
A release whose tasks keep one value of a column (a subject, a category) has, after this module's text, one
``only_<value>`` filter per value, each a call of :func:`keep_value`.
"""

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
    return "\n".join([doc["question"].strip(), *lettered_options(doc), "Answer:"])


def choices_only_text(doc):
    """The lettered options and "Answer:", without the question (the choices-only prompt)."""
    return "\n".join([*lettered_options(doc), "Answer:"])


def lettered_options(doc):
    return [f"{LETTERS[i]}. {choice}" for i, choice in enumerate(doc["choices"])]


def mc_choices(doc):
    return list(LETTERS[: len(doc["choices"])])


def keep_value(dataset, column, value):
    """The docs whose ``column`` is ``value`` (a missing value counts as ""): a task's ``process_docs``, which
    lm-eval applies to its demonstrations too."""
    return dataset.filter(lambda doc: (doc[column] or "") == value)
