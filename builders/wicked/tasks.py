"""The release's lm-eval tasks: lm-eval's MMLU prompt, 5-shot from the config's own few-shot split."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from builders.core.items.record import MCQRecord
from builders.core.build.result import TaskLocation
from builders.core.sources.loading import LoadedSource, evaluation_split
from builders.core.tasks import lm_eval_tasks

from .transform import NAME

SHOTS = 5  # the paper evaluates 5-shot through lm-eval's MMLU prompt


def _subject(record: MCQRecord) -> str:
    return record.subject or record.category or ""


@dataclass(frozen=True)
class TaskPlan:
    """The release's lm-eval tasks, laid out as lm-eval's own ``mmlu``: per config, one task per subject (its
    description, and its first demonstrations through ``fewshot_config: sampler: first_n``) in a group weighted
    by size (the config's accuracy over its items), and a group over the variants."""

    benchmark: str
    configs: tuple[str, ...]
    eval_split: str
    fewshot_split: str | None
    shots: int
    subject_column: str  # the column the subjects are in: "subject", or "category" (MMLU-Pro)
    subjects: tuple[tuple[str, int], ...]  # (subject, its demonstrations: SHOTS, or fewer where it has fewer)

    @classmethod
    def for_source(cls, source: LoadedSource, variants: int) -> "TaskPlan":
        splits = list(source.items)
        eval_split = evaluation_split(source.items, source.benchmark.fewshot_split)
        fewshot = source.benchmark.fewshot_split
        usable = fewshot in splits and fewshot != eval_split
        pool = Counter(_subject(r) for r in source.items[fewshot]) if usable else Counter()
        column = "subject" if any(r.subject for split in source.items.values() for r in split) else "category"
        names = sorted({_subject(r) for r in source.items[eval_split]})
        subjects = tuple((name, min(SHOTS, pool[name])) for name in names)
        return cls(source.benchmark.name, ("original", *[f"variant_{k}" for k in range(variants)]), eval_split,
                   fewshot if usable else None, SHOTS if usable else 0, column, subjects)

    def task(self, config: str) -> str:
        return f"{NAME}_{self.benchmark}_{config}"

    @property
    def group(self) -> str:
        return f"{NAME}_{self.benchmark}_variants"

    def card(self) -> dict[str, Any]:
        return {"original": self.task("original"), "group": self.group, "eval_split": self.eval_split,
                "fewshot_split": self.fewshot_split, "shots": self.shots}

    def files(self, location: TaskLocation) -> dict[str, bytes]:
        folder = lm_eval_tasks.TASKS_DIR
        slugs: dict[str, str] = {}
        for subject, _ in self.subjects:
            slugs[subject] = lm_eval_tasks.slug(subject, slugs.values())
        filters = lm_eval_tasks.value_filters(self.subject_column, slugs)
        files = {lm_eval_tasks.UTILS: lm_eval_tasks.utils_module(filters),
                 f"{folder}/README.md": self.readme(location).encode()}
        tasks: dict[str, tuple[dict[str, Any], str]] = {}
        manifest = []
        for config in self.configs:
            members = []
            for subject, shots in self.subjects:
                member = f"{self.task(config)}_{slugs[subject]}"
                entry = lm_eval_tasks.multiple_choice_task(
                    member, config, location, self.eval_split, description=self.description(subject),
                    fewshot_split=self.fewshot_split if shots else None, num_fewshot=shots,
                    process_docs=f"utils.only_{slugs[subject]}")
                comment = (f"WiCkeD {self.benchmark}, config {config!r}, subject {subject!r}: lm-eval's MMLU prompt, "
                           f"{shots}-shot: the subject's first items of the config's "
                           f"{self.fewshot_split or 'none'} split.")
                tasks[f"{folder}/{member}.yaml"] = (entry, comment)
                members.append(member)
            files[f"{folder}/{self.task(config)}.yaml"] = lm_eval_tasks.to_yaml(
                lm_eval_tasks.group(self.task(config), members, weight_by_size=True),
                f"WiCkeD {self.benchmark}, config {config!r}: the accuracy over every item "
                "(subjects weighted by size).")
            role = {"role": "original"} if config == "original" else {"role": "variant", "variant": int(config.split("_")[1])}
            manifest.append({"task": self.task(config), "config": config, "split": self.eval_split, **role})
        files.update(lm_eval_tasks.templated(tasks))
        variants = [self.task(c) for c in self.configs if c != "original"]
        files[f"{folder}/{self.group}.yaml"] = lm_eval_tasks.to_yaml(
            lm_eval_tasks.group(self.group, variants),
            "The mean accuracy over the WiCkeD variants; `python -m builders.evaluate` adds the std and the drop.")
        # lm-eval's group gives the mean; the std over the variants and the drop from `original` are computed by
        # `python -m builders.evaluate` from the per-task accuracies, as this entry says.
        files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(
            NAME, location, manifest, [{"group": self.group, "tasks": variants, "original": self.task("original"),
                                        "reports": ["mean", "std", "drop"]}])
        return files

    @staticmethod
    def description(subject: str) -> str:
        """lm-eval's MMLU task description for the subject."""
        about = f" about {subject.replace('_', ' ')}" if subject else ""
        return f"The following are multiple choice questions (with answers){about}.\n\n"

    def readme(self, location: TaskLocation) -> str:
        where = (f"the release folder they sit in, else `{location.repo_id}` at `{location.revision}`" if location.repo_id
                 else "the release folder they sit in (this build was not published)")
        shots = (f"the first {self.shots} items of the same subject in the config's `{self.fewshot_split}` split (transformed "
                 "like the rest of the config)" if self.shots else "no demonstrations (the source has no few-shot split)")
        return f"""# lm-evaluation-harness tasks

`{self.task('original')}` evaluates the source unchanged, `{self.task('variant_0')}` ... each WiCkeD variant, and the
group `{self.group}` reports the mean accuracy over the variants. Every task scores the letter after "Answer:"
in lm-eval's MMLU prompt (the subject's description, then {shots}, then the item), on the `{self.eval_split}`
split; the YAML files read the dataset from {where}.

As lm-eval's own `mmlu`, each config is a group of one task per subject: the subject's
demonstrations come from lm-eval's few-shot machinery (`fewshot_split`, `fewshot_config: sampler: first_n`,
`num_fewshot`), so lm-eval reports the n-shot and `--num_fewshot` changes it; a subject with fewer than
{SHOTS} demonstrations shows those it has.

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval \\
  --tasks {self.task('original')},{self.group} --log_samples --output_path results/
```

`python -m builders.evaluate` runs every task of `manifest.json` and reports the accuracy on `original`, on each
variant, the variants' mean and standard deviation, and the drop.
"""
