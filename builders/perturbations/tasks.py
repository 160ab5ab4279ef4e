"""The release's lm-eval folder: per config, one task per scoring method, a ``utils.py``, and the manifest.

Every task reads its config of the release (:func:`builders.core.tasks.lm_eval_tasks.dataset_settings`) and is
evaluated zero-shot: the demonstrations are already in each prompt. ``symbol`` scores the label after the
``prompt`` column; ``hybrid`` and ``cloze`` score each option's text after a prompt that the config folder's
``utils.py`` renders with the builder's own renderer (:mod:`.prompts`, copied into the file), from the ``fewshot``
ids. What the tasks share is in ``lm_eval/_default_template_yaml``, whose loader is ``lm_eval/utils.py``
(:mod:`builders.core.tasks.lm_eval_utils`). ``manifest.json`` gives ``python -m builders.evaluate`` each task's config, split, role (`original` for the
baselines, `perturbed` otherwise), family, scoring method and baseline config.
"""

from __future__ import annotations

import argparse
import pprint
import re
from importlib import resources
from typing import Any, Sequence

from builders.core.build.result import TaskLocation
from builders.core.sources.loading import LoadedSource, evaluation_split
from builders.core.tasks import lm_eval_tasks
from builders.perturbations import prompts
from builders.perturbations.configs import NAME, ConfigSpec
from builders.perturbations.transform import trivial_questions

# Why these tasks cannot use lm-eval's few-shot machinery (fewshot_split, fewshot_config, num_fewshot), as the
# other builders' tasks do: shown in the manifest, the tasks' README and the card.
IN_PROMPT_DEMONSTRATIONS = (
    "The demonstrations are in each prompt, not drawn by lm-eval: they are what several configs perturb, and they "
    "differ per item (another subject drawn per item in ood_fewshot, the item itself answered last in the in-context "
    "configs, a shipped set of trivial questions, gold-swapped demonstrations before an unchanged item), which "
    "lm-eval's samplers, the same first demonstrations for every item of a task, cannot give. So every task runs "
    "zero-shot: lm-eval reports n-shot 0, and --num_fewshot must not be given.")

# The metric each scoring method is read by: hybrid and cloze are length-normalised (the paper's setting).
METRICS = {"symbol": "acc", "hybrid": "acc_norm", "cloze": "acc_norm"}


def task_prefix(text: str) -> str:
    """An argparse type: lm-eval task names are one word (a space or a comma would break ``--tasks a,b``)."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", text):
        raise argparse.ArgumentTypeError(f"letters, digits, '_' and '-', starting with a letter; got {text!r}")
    return text


def task_name(prefix: str, config: str, method: str) -> str:
    return f"{prefix}_{config}_{method}"


def task_entry(task: str, config: str, method: str, location: TaskLocation, split: str) -> dict[str, Any]:
    if method == "symbol":  # the options are shown; the label tokens are scored
        text, choice, metrics = "prompt", "labels", ("acc",)
    else:  # hybrid shows the options, cloze hides them; both score each option's text
        text, choice, metrics = lm_eval_tasks.Function(f"utils.{method}_text"), "choices", ("acc", "acc_norm")
    return lm_eval_tasks.multiple_choice_task(task, config, location, split, doc_to_text=text, doc_to_choice=choice,
                                              metrics=metrics, metadata={"scoring": method})


def task_utils(prompts_source: str, spec: ConfigSpec, location: TaskLocation, fewshot_split: str | None) -> bytes:
    """The config folder's ``utils.py``: ``prompts_source`` (the text of :mod:`.prompts` as it is in the package),
    then the config's ``TASK``."""
    constants = {
        "dataset_name": spec.name,
        "repo": location.repo_id,
        "revision": location.revision,
        "fewshot_split": fewshot_split if spec.demonstrations in ("same_subject", "other_subject") else None,
        "with_subject": spec.with_subject,
        "answer_prefix": spec.answer_prefix,
        "trivial": list(trivial_questions()) if spec.demonstrations == "trivial" else [],
    }
    return (prompts_source + "\n\n# ---- this task (written by mcqforge's perturbations builder) ----\n\n"
            + f"TASK = {pprint.pformat(constants, width=110, sort_dicts=False)}\n").encode()


def task_files(specs: Sequence[ConfigSpec], source: LoadedSource, prefix: str,
               location: TaskLocation) -> dict[str, bytes]:
    split = evaluation_split(source.items, source.benchmark.fewshot_split)
    tasks: dict[str, tuple[dict[str, Any], str]] = {}
    files = {f"{lm_eval_tasks.TASKS_DIR}/README.md": tasks_readme(specs, prefix, location).encode(),
             lm_eval_tasks.UTILS: lm_eval_tasks.utils_module()}  # the loader the template names
    entries = []
    # read once, not once per config
    prompts_source = resources.files(__package__).joinpath("prompts.py").read_text(encoding="utf-8")
    for spec in specs:
        folder = f"{lm_eval_tasks.TASKS_DIR}/{spec.name}"
        files[f"{folder}/utils.py"] = task_utils(prompts_source, spec, location, source.benchmark.fewshot_split)
        for method in prompts.METHODS:
            task = task_name(prefix, spec.name, method)
            tasks[f"{folder}/{task}.yaml"] = (task_entry(task, spec.name, method, location, split),
                                              f"mcqforge perturbations, config {spec.name!r}, {method} scoring.\n"
                                              "The demonstrations are already in every prompt: evaluate it zero-shot "
                                              "(no --num_fewshot).")
            entries.append({"task": task, "config": spec.name, "split": split,
                            "role": "perturbed" if spec.baseline else "original", "family": spec.family,
                            "scoring": method, "metric": METRICS[method], "baseline": spec.baseline})
    files.update(lm_eval_tasks.templated(tasks))
    files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(NAME, location, entries,
                                                           demonstrations=IN_PROMPT_DEMONSTRATIONS)
    return files


def tasks_readme(specs: Sequence[ConfigSpec], prefix: str, location: TaskLocation) -> str:
    where = (f"the release folder they sit in, else `{location.repo_id}` at `{location.revision}`" if location.repo_id
             else "the release folder they sit in (this build was not published)")
    first = specs[-1].name if len(specs) > 1 else specs[0].name
    tasks = ",".join(task_name(prefix, first, method) for method in prompts.METHODS)
    return f"""# lm-evaluation-harness tasks

One folder per config, each with three tasks: `{prefix}_<config>_symbol` (options shown, the label is
scored: `acc`), `{prefix}_<config>_hybrid` (options shown, each option's text is scored: `acc_norm` is
the length-normalised score) and `{prefix}_<config>_cloze` (options hidden, each option's text is
scored). The YAML files read the dataset from {where}. {IN_PROMPT_DEMONSTRATIONS}

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval/{first} \\
  --tasks {tasks} --log_samples --output_path results/
```

`utils.py` renders the hybrid and cloze prompts (the same renderer that wrote the `prompt` column).
`manifest.json` lists every task with its config, role (`original` for the baselines `original` and
`original_zero_shot`, `perturbed` otherwise), family, scoring method and baseline config:
`python -m builders.evaluate RELEASE --model ...` runs them and reports k_τ, RStd and the slope chart of
each perturbed config against its baseline.
"""
