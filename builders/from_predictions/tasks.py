"""The lm-eval tasks of the releases made from models' predictions (GSM-MC, MATH-MC, PythonIO).

Zhang et al. (2024) evaluate these datasets 5-shot in MMLU's layout: the header "The following are multiple
choice questions (with answers) about <topic>.", five answered demonstrations, then the question, its lettered
options and "Answer:"; the letter is scored. One task per set (``set_0`` ... ; ``default`` is ``set_0``), the
demonstrations being the first five items of the release's ``train`` split, which is not scored. A release with
no ``train`` (GSM-MC and MATH-MC build ``test`` alone by default) takes them from the first items of ``test`` and
leaves them out of the scored docs (``utils.load_release`` moves them to a split of their own): no demonstration
is ever a scored item (:func:`demonstrations`). With ``by_subject`` (MATH-MC: demonstrations of the same
``Type``) each set is a group of one task per subject, weighted by size, so that the group's accuracy is the
set's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import MCQRecord
from builders.core.items.tables import Statistics, Table
from builders.core.build.result import TaskLocation
from builders.core.sources.loading import evaluation_split
from builders.core.tasks import lm_eval_tasks
from builders.core.tasks.lm_eval_utils import DEMONSTRATIONS
from builders.core.tasks.results import Runs, TableOptions, by_role, mean_std

SHOTS = 5


@dataclass(frozen=True)
class Demonstrations:
    """Where one set's demonstrations come from: ``split``, the first ``len(ids[subject])`` items of each subject
    (``""`` for all, without subjects); ``held_out`` when ``split`` is the scored split, which then leaves them out."""

    split: str
    ids: dict[str, list[str]]
    held_out: bool
    scored: str

    def dataset_kwargs(self, subject: str = "") -> dict[str, Any]:
        """``load_release``'s ``demonstrations`` argument for a task of ``subject``: the items to hold out."""
        return {"demonstrations": {"split": self.split, "ids": self.ids[subject]}} if self.held_out else {}


def demonstrations(splits: Mapping[str, Sequence[MCQRecord]], by_subject: bool = False) -> Demonstrations:
    """The first :data:`SHOTS` items (of each subject, with ``by_subject``) of ``train`` where the release has it,
    else of the scored split, of which at least one item per subject is left to score (so a subject of n <= 5
    items has n - 1 demonstrations)."""
    test = evaluation_split(splits, "train")
    split = "train" if "train" in splits and splits["train"] and test != "train" else test
    held_out = split == test
    subject = (lambda r: r.subject or "") if by_subject else (lambda r: "")
    scored = {subject(r) for r in splits[test]}
    members: dict[str, list[str]] = {key: [] for key in sorted(scored)}
    for record in splits[split]:
        if subject(record) in members:
            members[subject(record)].append(record.id)
    ids = {key: found[:min(SHOTS, len(found) - 1 if held_out else len(found))] for key, found in members.items()}
    return Demonstrations(split, ids, held_out, test)


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
        shown = demonstrations(splits, by_subject)
        task = f"{builder}_{name}"
        if by_subject:
            members = []
            for subject in sorted({r.subject or "" for r in splits[test]}):
                slug = subjects.setdefault(subject, lm_eval_tasks.slug(subject, subjects.values()))
                member = f"{task}_{slug}"
                tasks[f"{lm_eval_tasks.TASKS_DIR}/{member}.yaml"] = (
                    _task(member, name, location, shown, description, subject, process_docs=f"utils.only_{slug}"),
                    f"{builder}, config {name!r}, subject {subject!r}")
                members.append(member)
            groups[f"{lm_eval_tasks.TASKS_DIR}/{task}.yaml"] = lm_eval_tasks.to_yaml(
                lm_eval_tasks.group(task, members, weight_by_size=True))
        else:
            tasks[f"{lm_eval_tasks.TASKS_DIR}/{task}.yaml"] = (_task(task, name, location, shown, description),
                                                                f"{builder}, config {name!r}")
        manifest.append({"task": task, "config": name, "split": test, "role": "set", "set": int(name.split("_")[1]),
                         **({"held_out": [i for ids in shown.ids.values() for i in ids]} if shown.held_out else {})})
    files = {**lm_eval_tasks.templated(tasks), **groups,
             lm_eval_tasks.UTILS: lm_eval_tasks.utils_module(lm_eval_tasks.value_filters("subject", subjects))}
    files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(builder, location, manifest)
    files[f"{lm_eval_tasks.TASKS_DIR}/README.md"] = _readme(builder, sets, by_subject, configs).encode()
    return files


def _task(task: str, config: str, location: TaskLocation, shown: Demonstrations, description: str, subject: str = "",
          **extra: Any) -> dict[str, Any]:
    """One task of a set: its demonstrations from ``shown`` (held out of the scored split, where they come from it)."""
    shots = len(shown.ids[subject])
    entry = lm_eval_tasks.multiple_choice_task(
        task, config, location, shown.scored, description=description, num_fewshot=shots,
        fewshot_split=(DEMONSTRATIONS if shown.held_out else shown.split) if shots else None, **extra)
    entry["dataset_kwargs"].update(shown.dataset_kwargs(subject))
    return entry


def demonstrations_text(configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]], by_subject: bool = False) -> str:
    """What the card and the tasks' README say of the demonstrations: where they come from, and which items."""
    sets = sorted((name for name in configs if name.startswith("set_")), key=lambda n: int(n.split("_")[1]))
    if not sets:
        return ""
    chosen = {name: demonstrations(configs[name], by_subject) for name in sets}
    first = chosen[sets[0]]
    same = all(d == first for d in chosen.values())
    shots = sorted({len(ids) for ids in first.ids.values()})
    count = " to ".join(map(str, dict.fromkeys([shots[0], shots[-1]]))) if shots else "0"
    per = " of the same subject" if by_subject else ""
    if first.held_out:
        where = (f"The release has no `train` split, so the lm-eval tasks take their {count} demonstrations{per} from "
                 f"the first items of `{first.split}` and **leave them out of the scored items**: each set scores "
                 f"`{first.split}` without them, through lm-eval's `fewshot_split: {DEMONSTRATIONS}` (inspect's tasks are zero-shot and score every item).")
    else:
        where = (f"The lm-eval tasks take their {count} demonstrations{per} from the first items of `{first.split}`, "
                 f"which is not scored: every item of `{first.scored}` is scored.")
    named = "; ".join(f"{subject + ': ' if by_subject else ''}{', '.join(f'`{i}`' for i in ids) or 'none'}"
                      for subject, ids in first.ids.items())
    scope = "the same items in every set" if same else f"in `{sets[0]}`; each set holds out its own first items"
    return f"**Demonstrations.** {where} The demonstrations ({scope}): {named}."


def _readme(builder: str, sets: Sequence[str], by_subject: bool,
            configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]]) -> str:
    first = f"{builder}_{sets[0]}" if sets else builder
    return f"""# lm-evaluation-harness tasks

One task per set ({", ".join(f"`{builder}_{s}`" for s in sets)}), in the paper's 5-shot MMLU-style format; the
letter after "Answer:" is scored (`acc`).{" Each set is a group of one task per MATH type, whose demonstrations are of the same type." if by_subject else ""}
The tasks read this release folder's Parquet files, or the published repo at its tag:

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval --tasks {first}
python -m builders.evaluate RELEASE --model hf:MODEL   # accuracy per set, and the correlation with open-ended scores
```

{demonstrations_text(configs, by_subject)}
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
