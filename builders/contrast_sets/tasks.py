"""The lm-eval tasks of a contrast-set release: the question-and-choices task and the choices-only task.

Balepur and Rudinger (2024) compare a model's accuracy on the two-option contrast questions with and without
the question: within a pair both questions have the same two options and different golds, so a model that
answers from the options alone gets at most one of the two right, and the gap between the two tasks is the
paper's measure. Both tasks are zero-shot, in lm-eval's MMLU layout (lettered options, then "Answer:", the
letter scored); the choices-only task shows the same options without the question line.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from builders.core.items.record import MCQRecord
from builders.core.build.result import TaskLocation
from builders.core.sources.loading import evaluation_split
from builders.core.tasks import lm_eval_tasks

from .transform import NAME

# task -> (config, manifest role, prompt function in utils.py)
TASKS = {
    f"{NAME}_question_and_choices": ("contrast", "question_and_choices", lm_eval_tasks.Function("utils.mc_text")),
    f"{NAME}_choices_only": ("choices_only", "choices_only", lm_eval_tasks.Function("utils.choices_only_text")),
}
DESCRIPTION = "The following are multiple choice questions (with answers).\n\n"
CHOICES_ONLY_DESCRIPTION = "The following are the options of multiple choice questions (with answers).\n\n"


def contrast_tasks(configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]], location: TaskLocation) -> dict[str, bytes]:
    tasks: dict[str, tuple[dict[str, Any], str]] = {}
    manifest = []
    split = evaluation_split(configs["contrast"])
    for task, (config, role, prompt) in TASKS.items():
        description = CHOICES_ONLY_DESCRIPTION if role == "choices_only" else DESCRIPTION
        tasks[f"{lm_eval_tasks.TASKS_DIR}/{task}.yaml"] = (
            lm_eval_tasks.multiple_choice_task(task, config, location, split, description=description,
                                               doc_to_text=prompt),
            f"{role.replace('_', ' ')}: config {config!r}, split {split!r} of this release")
        manifest.append({"task": task, "config": config, "split": split, "role": role})
    files = {**lm_eval_tasks.templated(tasks),
             f"{lm_eval_tasks.TASKS_DIR}/{NAME}.yaml": lm_eval_tasks.to_yaml(lm_eval_tasks.group(NAME, list(TASKS))),
             lm_eval_tasks.UTILS: lm_eval_tasks.utils_module()}
    files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(NAME, location, manifest)
    files[f"{lm_eval_tasks.TASKS_DIR}/README.md"] = _readme(split).encode()
    return files


def _readme(split: str) -> str:
    full, only = list(TASKS)
    return f"""# lm-evaluation-harness tasks

- `{full}`: the two-option contrast questions (config `contrast`, split `{split}`), question and options.
- `{only}`: the same items without the question (config `choices_only`).
- `{NAME}`: a group running both.

Both are zero-shot, in lm-eval's MMLU layout; the letter after "Answer:" is scored (`acc`). The two questions
of a pair share their two options and have different golds, so the choices-only task cannot be answered above
50% per pair: the gap between the two accuracies is what the release measures (Balepur and Rudinger, 2024).
The tasks read this release folder's Parquet files, or the published repo at its tag:

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval --tasks {NAME}
python -m builders.evaluate RELEASE --model hf:MODEL   # accuracy with and without the question, and the gap
```
"""
