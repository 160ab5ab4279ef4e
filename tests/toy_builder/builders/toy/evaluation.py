"""The table `python -m builders evaluate` reports: each model's accuracy on each config."""

from __future__ import annotations

from typing import Any, Mapping

from builders.core.items.tables import Statistics, Table
from builders.core.tasks.results import TableOptions


def evaluation_table(runs: Mapping[str, Mapping[str, Any]], manifest: Mapping[str, Any],
                     options: TableOptions) -> Statistics:
    tasks = manifest["tasks"]
    columns = ("model", *[task["config"] for task in tasks])
    rows = [(model, *[results[task["task"]].accuracy for task in tasks]) for model, results in runs.items()]
    return Statistics([Table("Toy accuracy", columns, rows, percent=columns[1:])])
