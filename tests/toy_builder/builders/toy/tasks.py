"""The release's lm-eval tasks: one zero-shot multiple-choice task per config."""

from __future__ import annotations

from dataclasses import dataclass

from builders.core.build.result import TaskLocation
from builders.core.tasks import lm_eval_tasks

from .transform import NAME


@dataclass(frozen=True)
class TaskPlan:
    configs: tuple[str, ...]
    eval_split: str

    def files(self, location: TaskLocation) -> dict[str, bytes]:
        folder = lm_eval_tasks.TASKS_DIR
        files = {lm_eval_tasks.UTILS: lm_eval_tasks.utils_module()}
        manifest = []
        for config in self.configs:
            task = f"{NAME}_{config}"
            files[f"{folder}/{task}.yaml"] = lm_eval_tasks.to_yaml(
                lm_eval_tasks.multiple_choice_task(task, config, location, self.eval_split))
            manifest.append({"task": task, "config": config, "split": self.eval_split,
                             "role": "original" if config == "original" else "shuffled"})
        files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(NAME, location, manifest)
        return files
