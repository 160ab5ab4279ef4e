"""What a model run on a release's lm-eval tasks gives the paper's tables: per-item results, read by role.

``python -m builders evaluate`` fills these; every builder's ``evaluation_table(runs, manifest, options)`` reads
them (``options``: the :class:`TableOptions` of the command), so that the builders and the command share types without importing each other.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence


@dataclass
class TaskResult:
    accuracy: float
    items: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (gold, predicted option)
    docs: dict[str, Mapping[str, Any]] = field(default_factory=dict)


Runs = Mapping[str, Mapping[str, TaskResult]]  # model -> task -> result


@dataclass(frozen=True)
class TableOptions:
    """What a builder's evaluation table may use of the ``evaluate`` command's options: the folder its outputs
    (charts) go to, and the models' open-ended scores (GSM-MC, MATH-MC, PythonIO: correlated with accuracy)."""

    output: Path | None = None
    open_ended_scores: Path | None = None


def by_role(manifest: Mapping[str, Any], role: str) -> list[Mapping[str, Any]]:
    """The manifest's tasks of one role (``original``, ``variant``, ``perturbed``, ``set``...), in its order."""
    return [task for task in manifest["tasks"] if task.get("role") == role]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation; NaN for no values."""
    return (statistics.fmean(values), statistics.pstdev(values)) if values else (math.nan, math.nan)
