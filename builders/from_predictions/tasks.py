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

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import MCQRecord
from builders.core.items.tables import Statistics, Table
from builders.core.build.result import TaskLocation
from builders.core.sources.loading import evaluation_split
from builders.core.tasks import lm_eval_tasks
from builders.core.tasks.results import Runs, TableOptions, by_role, mean_std

SHOTS = 5


def set_tasks(builder: str, topic: str, configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]],
              location: TaskLocation, by_subject: bool = False) -> dict[str, bytes]:
    """``lm_eval/`` for a release whose configs are ``set_0`` ... ``set_{K-1}`` (and ``default``)."""
    description = f"The following are multiple choice questions (with answers) about {topic}.\n\n"
    sets = sorted((name for name in configs if name.startswith("set_")), key=lambda n: int(n.split("_")[1]))
    tasks: dict[str, tuple[dict[str, Any], str]] = {}
    groups: dict[str, bytes] = {}
    manifest, subjects = [], {}
    for name in sets:
        splits = configs[name]
        test = evaluation_split(splits, "train")
        fewshot = "train" if "train" in splits and splits["train"] else test
        common = dict(description=description, fewshot_split=fewshot, num_fewshot=SHOTS)
        task = f"{builder}_{name}"
        if by_subject:
            members = []
            for subject in sorted({r.subject or "" for r in splits[test]}):
                slug = subjects.setdefault(subject, lm_eval_tasks.slug(subject, subjects.values()))
                member = f"{task}_{slug}"
                tasks[f"{lm_eval_tasks.TASKS_DIR}/{member}.yaml"] = (lm_eval_tasks.multiple_choice_task(
                    member, name, location, test, process_docs=f"utils.only_{slug}", **common),
                    f"{builder}, config {name!r}, subject {subject!r}")
                members.append(member)
            groups[f"{lm_eval_tasks.TASKS_DIR}/{task}.yaml"] = lm_eval_tasks.to_yaml(
                lm_eval_tasks.group(task, members, weight_by_size=True))
        else:
            tasks[f"{lm_eval_tasks.TASKS_DIR}/{task}.yaml"] = (
                lm_eval_tasks.multiple_choice_task(task, name, location, test, **common), f"{builder}, config {name!r}")
        manifest.append({"task": task, "config": name, "split": test, "role": "set", "set": int(name.split("_")[1])})
    files = {**lm_eval_tasks.templated(tasks), **groups,
             lm_eval_tasks.UTILS: lm_eval_tasks.utils_module(lm_eval_tasks.value_filters("subject", subjects))}
    files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(builder, location, manifest)
    files[f"{lm_eval_tasks.TASKS_DIR}/README.md"] = _readme(builder, sets, by_subject).encode()
    return files


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


# ---- the paper's table, for `python -m builders evaluate` ----------------------------------------------


def sets_table(runs: Runs, manifest: Mapping[str, Any], options: TableOptions) -> Statistics:
    sets = by_role(manifest, "set")
    rows, means = [], {}
    for model, tasks in runs.items():
        scores = [tasks[t["task"]].accuracy for t in sets]
        means[model], std = mean_std(scores)
        rows.append((model, *scores, means[model], std))
    columns = ("model", *[f"set {t.get('set', i)}" for i, t in enumerate(sets)], "mean", "std")
    tables = [Table("Multiple-choice accuracy per set", columns, rows, percent=tuple(columns[1:]))]
    if options.open_ended_scores:
        tables.append(correlation_table(means, read_scores(options.open_ended_scores)))
    return Statistics(tables)


def read_scores(path: Path) -> dict[str, float]:
    try:
        scores = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"--open-ended-scores {path}: {error}") from None
    if not isinstance(scores, dict) or not all(isinstance(v, (int, float)) for v in scores.values()):
        raise UserError(f"--open-ended-scores {path}: expected a JSON object {{model: accuracy}}")
    return {str(k): float(v) for k, v in scores.items()}


def correlation_table(mc: Mapping[str, float], open_ended: Mapping[str, float]) -> Table:
    """Pearson and Spearman correlation between the models' MC and open-ended accuracy (Zhang et al., 2024)."""
    from scipy.stats import pearsonr, spearmanr

    models = sorted(set(mc) & set(open_ended))
    if len(models) < 3:
        return Table("Correlation with open-ended scores", ("models", "pearson r", "spearman rho"), [(len(models), None, None)],
                     note="Fewer than 3 models have both scores: no correlation.")
    x, y = [mc[m] for m in models], [open_ended[m] for m in models]
    return Table("Correlation with open-ended scores", ("models", "pearson r", "spearman rho"),
                 [(len(models), float(pearsonr(x, y)[0]), float(spearmanr(x, y)[0]))])
