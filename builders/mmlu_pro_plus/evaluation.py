"""The paper's tables, for ``python -m builders.evaluate``: lm-eval's answers on the release's own tasks (roles
``plus`` and ``original``) scored as the metrics command scores predictions (:func:`.metrics.score_model`)."""

from __future__ import annotations

from typing import Any, Mapping

from builders.core.items.tables import Statistics
from builders.core.tasks.results import Runs, TableOptions, TaskResult, by_role

from .metrics import item_from_row, items_by_question, metrics_tables, question_of_row, score_model


def evaluation_table(runs: Runs, manifest: Mapping[str, Any], options: TableOptions) -> Statistics:
    [plus] = by_role(manifest, "plus")
    [original] = by_role(manifest, "original")
    scored = []
    for model, tasks in runs.items():
        after = tasks[plus["task"]]
        items = items_by_question(item_from_row(doc) for doc in after.docs.values())
        scored.append(score_model(model, items, answers(tasks[original["task"]]), answers(after)))
    return metrics_tables(scored)


def answers(result: TaskResult) -> dict[str, int | None]:
    """question_id -> the option the model chose, over one task's items."""
    return {question_of_row(result.docs[rid]): chosen for rid, (_, chosen) in result.items.items()}
