"""lm-eval hooks for this mcqforge release (written by mcqforge; needs only the standard library and datasets).

mcqforge copies this module into every release as ``lm_eval/utils.py`` (:mod:`builders.core.tasks.lm_eval_tasks`),
where the task YAML files name its functions (``!function utils.load_release``). ``load_release`` reads this
release (with the demonstrations a task names moved out of its scored split, :func:`hold_out`); the prompt
functions render lm-eval's MMLU layout, with as many lettered options as the item has.
A release whose tasks keep one value of a column (a subject, a category) has, after this module's text, one
``only_<value>`` filter per value, each a call of :func:`keep_value`.
"""

from pathlib import Path

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def load_release(config, repo=None, revision=None, demonstrations=None, **_):
    """The config's Parquet files in the release folder around this file, else the Hub repo at the tag; with
    ``demonstrations`` (``{"split": SPLIT, "ids": [...]}``), those items of SPLIT held out of it (:func:`hold_out`)."""
    files = _local_files(config)
    key = (config, repo, revision, tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files))
    if key not in _LOADED:
        _LOADED[key] = _release(config, repo, revision, files)
    dataset = type(_LOADED[key])(_LOADED[key])  # a dict of its own over the same (immutable) splits
    return hold_out(dataset, demonstrations["split"], demonstrations["ids"]) if demonstrations else dataset


# Each config is read once per process (again only when its files change): a release's tasks are often one per
# subject of a config (342 for WiCkeD on MMLU), which each read the whole config again.
_LOADED: dict = {}


def _local_files(config):
    for folder in Path(__file__).resolve().parents:
        if (folder / "build_config.yaml").is_file():
            return sorted((folder / config).glob("*.parquet"))
    return []


def _release(config, repo, revision, files):
    import datasets

    if files:
        splits = {}
        for file in files:
            splits.setdefault(file.name.split("-")[0], []).append(str(file))
        return datasets.load_dataset("parquet", data_files=splits)
    if repo is None:
        raise FileNotFoundError(f"no Parquet files of config {config!r} beside this task folder, and no Hub repo")
    return datasets.load_dataset(repo, config, revision=revision)


DEMONSTRATIONS = "demonstrations"  # the split a task's held-out demonstrations are moved to (its fewshot_split)


def hold_out(dataset, split, ids):
    """The items ``ids`` of ``split`` moved to a split of their own, :data:`DEMONSTRATIONS` (in their order in
    ``split``): a release with no unscored split takes its demonstrations from the scored one, and this keeps
    every demonstration out of the scored docs."""
    wanted = set(ids)
    column = dataset[split]["id"]
    shown = [i for i, doc_id in enumerate(column) if doc_id in wanted]
    missing = wanted - {column[i] for i in shown}
    if missing:
        raise ValueError(f"demonstrations {sorted(missing)} are not in split {split!r}")
    dataset[DEMONSTRATIONS] = dataset[split].select(shown)
    dataset[split] = dataset[split].select([i for i, doc_id in enumerate(column) if doc_id not in wanted])
    return dataset


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
    lm-eval applies to its demonstrations too. A selection of rows, from one read of the column per split
    (:func:`rows_by_value`): ``Dataset.filter`` read every row of the split once per task, and wrote a cache file
    each time (3.1 GB of memory for the 342 tasks of WiCkeD on MMLU, against 0.9 GB)."""
    return dataset.select(rows_by_value(dataset, column).get(value, []))


_ROWS: dict = {}


def rows_by_value(dataset, column):
    """``{value: [row, ...]}`` of a split's ``column``, once per split (its fingerprint) and column."""
    key = (dataset._fingerprint, column)
    if key not in _ROWS:
        rows = {}
        for i, found in enumerate(dataset[column]):
            rows.setdefault(found or "", []).append(i)
        _ROWS[key] = rows
    return _ROWS[key]
