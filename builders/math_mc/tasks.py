"""The release's lm-eval tasks: one per set and subject, in the paper's few-shot MMLU-style layout (the kernel's
:func:`~builders.from_predictions.tasks.set_tasks`)."""

from __future__ import annotations

from collections.abc import Callable

from builders.core.build.result import Configs, TaskLocation
from builders.from_predictions.tasks import set_tasks

from .benchmarks import NAME

TOPIC = "high school math"  # the paper's lm-eval header: "... (with answers) about <topic>."


def lm_eval_tasks(configs: Configs) -> Callable[[TaskLocation], dict[str, bytes]]:
    return lambda location: set_tasks(NAME, TOPIC, configs, location, by_subject=True)
