"""The inspect_ai task folder every release carries (``inspect/``), beside ``lm_eval/``: one ``@task`` per config
of the release's lm-eval manifest, on the split its lm-eval tasks score, pinned to the published repo and tag
(or reading the release folder it sits in), as the lm-eval tasks are::

    inspect eval RELEASE/inspect/tasks.py --model MODEL
    inspect eval RELEASE/inspect/tasks.py@<task> --model MODEL --limit 100

Each task has the name of the config's lm-eval task (:func:`task_names`), and its dataset the release's, config's
and version's names.

What the tasks do lives in :mod:`builders.core.tasks.inspect_release`, a real module copied into the folder as
``mcqforge_inspect.py``; ``tasks.py`` only names the configs. inspect's own multiple-choice prompt asks every
task zero-shot, with the options lettered A, B, ... in the release's order: the papers' prompt formats,
demonstrations and scoring methods are the ``lm_eval/`` tasks'.
"""

from __future__ import annotations

import json
import keyword
from importlib import resources
from typing import Any, Iterable, Mapping

from builders.core.build.result import TaskLocation
from builders.core.tasks.lm_eval_tasks import slug

INSPECT_DIR = "inspect"
HELPER = "mcqforge_inspect"  # the module name of inspect_release.py inside a release


def task_files(lm_eval_manifest: bytes, location: TaskLocation) -> dict[str, bytes]:
    """``inspect/tasks.py``, ``inspect/mcqforge_inspect.py`` and ``inspect/README.md``, from the lm-eval manifest."""
    manifest = json.loads(lm_eval_manifest)
    names = task_names(manifest)
    helper = resources.files("builders.core.tasks").joinpath("inspect_release.py").read_bytes()
    return {f"{INSPECT_DIR}/{HELPER}.py": helper,
            f"{INSPECT_DIR}/tasks.py": tasks_module(manifest["builder"], names, location).encode(),
            f"{INSPECT_DIR}/README.md": readme(manifest["builder"], names, location).encode()}


def task_names(manifest: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """``{(config, split): name}``: each config's task is named as its lm-eval task, so that one name means one
    config in both harnesses; where a config has several lm-eval tasks (one per scoring method), the one that
    scores the letter (``symbol``), as inspect's ``choice()`` does, else the first."""
    tasks: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for task in manifest["tasks"]:
        tasks.setdefault((task["config"], task["split"]), []).append(task)
    return {key: next((t for t in found if t.get("scoring") == "symbol"), found[0])["task"]
            for key, found in tasks.items()}


def function_name(task: str, taken: Iterable[str]) -> str:
    """A Python name for the ``@task`` function of ``task``: the task's name itself where it is one."""
    return task if task.isidentifier() and not keyword.iskeyword(task) else slug(task, taken)


def tasks_module(builder: str, names: Mapping[tuple[str, str], str], location: TaskLocation) -> str:
    """One ``@task`` function per config, each a call of ``mcqforge_inspect.release_task`` with literal arguments."""
    head = (f'"""inspect_ai tasks of this mcqforge {builder} release (written by mcqforge): one per config.\n\n'
            f"    inspect eval inspect/tasks.py --model MODEL\n"
            f"    inspect eval inspect/tasks.py@{next(iter(names.values()))} --model MODEL --limit 100\n"
            '"""\n\nimport sys\nfrom pathlib import Path\n\nfrom inspect_ai import Task, task\n\n'
            "HERE = Path(__file__).resolve().parent\nsys.path.insert(0, str(HERE))\n\n"
            f"from {HELPER} import release_task  # noqa: E402\n\n"
            f"REPO = {location.repo_id!r}\nREVISION = {location.revision!r}\n")
    functions: list[str] = []
    taken: set[str] = set()
    for (config, split), name in names.items():
        function = function_name(name, taken)
        taken.add(function)
        decorator = "@task" if function == name else f"@task(name={name!r})"
        functions.append(f'\n\n{decorator}\ndef {function}() -> Task:\n    """Config {config!r}, split {split!r}."""\n'
                         f"    return release_task(HERE, {config!r}, {split!r}, REPO, REVISION)\n")
    return head + "".join(functions)


def readme(builder: str, names: Mapping[tuple[str, str], str], location: TaskLocation) -> str:
    where = (f"the release folder they sit in, else `{location.repo_id}` at `{location.revision}`" if location.repo_id
             else "the release folder they sit in (this build was not published)")
    rows = "\n".join(f"| `{name}` | `{config}` | `{split}` |" for (config, split), name in names.items())
    first = next(iter(names.values()))
    return f"""# inspect_ai tasks

One task per config of this release, for [inspect_ai](https://inspect.aisi.org.uk/), named as the config's lm-eval
task in `lm_eval/` (the one that scores the letter, where there is one per scoring method): each reads its config
from {where} (inspect names the dataset `RELEASE:CONFIG/SPLIT@VERSION`), asks every item with inspect's `multiple_choice()` solver (the options lettered A, B, ... in the
release's order, zero-shot) and scores the chosen letter with `choice()`.

```
inspect eval inspect/tasks.py --model MODEL                     # every config
inspect eval inspect/tasks.py@{first} --model MODEL --limit 100
```

| task | config | split |
|---|---|---|
{rows}

`MODEL` is any inspect model (`hf/PATH`, `vllm/PATH`, `openai-api/NAME/MODEL`, ...). inspect's `mockllm/model` counts
tokens with tiktoken's `o200k_base` vocabulary, which tiktoken downloads on first use: offline, point
`TIKTOKEN_CACHE_DIR` at a copy of tiktoken's cache from a connected machine.

The papers' own prompt formats, demonstrations and scoring methods are those of the `lm_eval/` tasks, which
`python -m builders evaluate` runs to write each paper's table.
"""
