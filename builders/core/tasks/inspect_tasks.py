"""The inspect_ai task folder every release carries (``inspect/``), beside ``lm_eval/``: one ``@task`` per config
of the release's lm-eval manifest, on the split its lm-eval tasks score, pinned to the published repo and tag
(or reading the release folder it sits in), as the lm-eval tasks are::

    inspect eval RELEASE/inspect/tasks.py --model MODEL
    inspect eval RELEASE/inspect/tasks.py@<builder>_<config> --model MODEL --limit 100

What the tasks do lives in :mod:`builders.core.tasks.inspect_release`, a real module copied into the folder as
``mcqforge_inspect.py``; ``tasks.py`` only names the configs. inspect's own multiple-choice prompt asks every
task zero-shot, with the options lettered A, B, ... in the release's order: the papers' prompt formats,
demonstrations and scoring methods are the ``lm_eval/`` tasks'.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Mapping

from builders.core.build.result import TaskLocation
from builders.core.tasks.lm_eval_tasks import slug

INSPECT_DIR = "inspect"
HELPER = "mcqforge_inspect"  # the module name of inspect_release.py inside a release


def task_files(lm_eval_manifest: bytes, location: TaskLocation) -> dict[str, bytes]:
    """``inspect/tasks.py``, ``inspect/mcqforge_inspect.py`` and ``inspect/README.md``, from the lm-eval manifest."""
    manifest = json.loads(lm_eval_manifest)
    configs = dict.fromkeys((task["config"], task["split"]) for task in manifest["tasks"])
    slugs: dict[tuple[str, str], str] = {}
    for config, split in configs:
        slugs[config, split] = slug(config, slugs.values())
    names = {key: f"{manifest['builder']}_{value}" for key, value in slugs.items()}
    helper = resources.files("builders.core.tasks").joinpath("inspect_release.py").read_bytes()
    return {f"{INSPECT_DIR}/{HELPER}.py": helper,
            f"{INSPECT_DIR}/tasks.py": tasks_module(manifest["builder"], names, location).encode(),
            f"{INSPECT_DIR}/README.md": readme(manifest["builder"], names, location).encode()}


def tasks_module(builder: str, names: Mapping[tuple[str, str], str], location: TaskLocation) -> str:
    """One ``@task`` function per config, each a call of ``mcqforge_inspect.release_task`` with literal arguments."""
    head = (f'"""inspect_ai tasks of this mcqforge {builder} release (written by mcqforge): one per config.\n\n'
            f"    inspect eval inspect/tasks.py --model MODEL\n"
            f"    inspect eval inspect/tasks.py@{next(iter(names.values()))} --model MODEL --limit 100\n"
            '"""\n\nimport sys\nfrom pathlib import Path\n\nfrom inspect_ai import Task, task\n\n'
            "HERE = Path(__file__).resolve().parent\nsys.path.insert(0, str(HERE))\n\n"
            f"from {HELPER} import release_task  # noqa: E402\n\n"
            f"REPO = {location.repo_id!r}\nREVISION = {location.revision!r}\n")
    functions = [f'\n\n@task\ndef {name}() -> Task:\n    """Config {config!r}, split {split!r}."""\n'
                 f"    return release_task(HERE, {config!r}, {split!r}, REPO, REVISION)\n"
                 for (config, split), name in names.items()]
    return head + "".join(functions)


def readme(builder: str, names: Mapping[tuple[str, str], str], location: TaskLocation) -> str:
    where = (f"the release folder they sit in, else `{location.repo_id}` at `{location.revision}`" if location.repo_id
             else "the release folder they sit in (this build was not published)")
    rows = "\n".join(f"| `{name}` | `{config}` | `{split}` |" for (config, split), name in names.items())
    first = next(iter(names.values()))
    return f"""# inspect_ai tasks

One task per config of this release, for [inspect_ai](https://inspect.aisi.org.uk/): each reads its config from
{where}, asks every item with inspect's `multiple_choice()` solver (the options lettered A, B, ... in the
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
