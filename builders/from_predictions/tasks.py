"""The lm-eval tasks of the releases made from models' predictions (GSM-MC, MATH-MC, PythonIO).

Zhang et al. (2024) evaluate these datasets 5-shot in MMLU's layout: the header "The following are multiple
choice questions (with answers) about <topic>.", five answered demonstrations, then the question, its lettered
options and "Answer:"; the letter is scored. One task per set (``set_0`` ... ; ``default`` is ``set_0``), the
demonstrations being the first five items of the release's ``train`` split (of the ``test`` split, the item
itself left out, when the release has no ``train``). With ``by_subject`` (MATH-MC: demonstrations of the same
``Type``) each set is a group of one task per subject, weighted by size, so that the group's accuracy is the
set's.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from builders.core import lm_eval_tasks
from builders.core.build import TaskLocation
from builders.core.record import MCQRecord

SHOTS = 5


def set_tasks(builder: str, topic: str, configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]],
              location: TaskLocation, by_subject: bool = False) -> dict[str, bytes]:
    """``lm_eval/`` for a release whose configs are ``set_0`` ... ``set_{K-1}`` (and ``default``)."""
    description = f"The following are multiple choice questions (with answers) about {topic}.\n\n"
    sets = sorted((name for name in configs if name.startswith("set_")), key=lambda n: int(n.split("_")[1]))
    files: dict[str, bytes] = {}
    manifest, subjects = [], {}
    for name in sets:
        splits = configs[name]
        test = "test" if "test" in splits else next(iter(splits))
        fewshot = "train" if "train" in splits and splits["train"] else test
        common = dict(description=description, fewshot_split=fewshot, num_fewshot=SHOTS)
        task = f"{builder}_{name}"
        if by_subject:
            members = []
            for subject in sorted({r.subject or "" for r in splits[test]}):
                slug = subjects.setdefault(subject, _slug(subject, subjects))
                member = f"{task}_{slug}"
                files[f"{lm_eval_tasks.TASKS_DIR}/{member}.yaml"] = lm_eval_tasks.to_yaml(
                    lm_eval_tasks.multiple_choice_task(member, name, location, test, process_docs=f"utils.only_{slug}",
                                                       **common))
                members.append(member)
            files[f"{lm_eval_tasks.TASKS_DIR}/{task}.yaml"] = lm_eval_tasks.to_yaml(
                lm_eval_tasks.group(task, members, weight_by_size=True))
        else:
            files[f"{lm_eval_tasks.TASKS_DIR}/{task}.yaml"] = lm_eval_tasks.to_yaml(
                lm_eval_tasks.multiple_choice_task(task, name, location, test, **common))
        manifest.append({"task": task, "config": name, "split": test, "role": "set", "set": int(name.split("_")[1])})
    files[f"{lm_eval_tasks.TASKS_DIR}/utils.py"] = (lm_eval_tasks.UTILS + _subject_filters(subjects)).encode()
    files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(builder, location, manifest)
    files[f"{lm_eval_tasks.TASKS_DIR}/README.md"] = _readme(builder, sets, by_subject).encode()
    return files


def _slug(subject: str, taken: Mapping[str, str]) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", subject.lower()).strip("_") or "none"
    slug = slug if slug[0].isalpha() else f"s_{slug}"
    while slug in taken.values():
        slug += "_"
    return slug


def _subject_filters(subjects: Mapping[str, str]) -> str:
    """``only_<slug>(dataset)`` per subject, made from a literal table (no data text is ever code)."""
    if not subjects:
        return ""
    table = {slug: subject for subject, slug in subjects.items()}
    return f'''

SUBJECTS = {table!r}


def _only(subject):
    def keep(dataset):
        return dataset.filter(lambda doc: (doc["subject"] or "") == subject)
    return keep


for _slug, _subject in SUBJECTS.items():
    globals()[f"only_{{_slug}}"] = _only(_subject)
'''


def _readme(builder: str, sets: Sequence[str], by_subject: bool) -> str:
    first = f"{builder}_{sets[0]}" if sets else builder
    return f"""# lm-evaluation-harness tasks

One task per set ({", ".join(f"`{builder}_{s}`" for s in sets)}), in the paper's 5-shot MMLU-style format; the
letter after "Answer:" is scored (`acc`).{" Each set is a group of one task per MATH type, whose demonstrations are of the same type." if by_subject else ""}
The tasks read this release folder's Parquet files, or the published repo at its tag:

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval --tasks {first}
python -m builders.evaluate RELEASE --model hf:MODEL   # accuracy per set, and the correlation with open-ended scores
```
"""
