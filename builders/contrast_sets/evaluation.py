"""The paper's table, for `python -m builders evaluate`: each model's accuracy with and without the question, and
the gap (Balepur and Rudinger, 2024)."""

from __future__ import annotations

import statistics
from typing import Any, Mapping

from builders.core.items.tables import Statistics, Table
from builders.core.tasks.results import Runs, TableOptions, by_role


def evaluation_table(runs: Runs, manifest: Mapping[str, Any], options: TableOptions) -> Statistics:
    full, only = by_role(manifest, "question_and_choices"), by_role(manifest, "choices_only")
    rows = []
    for model, tasks in runs.items():
        with_question = statistics.fmean(tasks[t["task"]].accuracy for t in full)
        without = statistics.fmean(tasks[t["task"]].accuracy for t in only)
        rows.append((model, with_question, without, with_question - without))
    columns = ("model", "question and choices", "choices only", "gap")
    return Statistics([Table("Contrast-set accuracy", columns, rows, percent=columns[1:],
                             note="A model that answers the choices-only task as well as the full one is not using "
                                  "the question (Balepur and Rudinger, 2024).")])
