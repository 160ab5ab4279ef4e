"""The paper's table, for `python -m builders evaluate`."""

from __future__ import annotations

from statistics import fmean
from typing import Any, Mapping

from builders.core.items.tables import Statistics, Table
from builders.core.tasks.results import Runs, TableOptions, by_role, mean_std


def evaluation_table(runs: Runs, manifest: Mapping[str, Any], options: TableOptions) -> Statistics:
    originals, variants = by_role(manifest, "original"), by_role(manifest, "variant")
    rows = []
    for model, tasks in runs.items():
        original = fmean(tasks[t["task"]].accuracy for t in originals)
        scores = [tasks[t["task"]].accuracy for t in variants]
        mean, std = mean_std(scores)
        rows.append((model, original, *scores, mean, std, original - mean))
    columns = ("model", "original", *[f"variant {t.get('variant', i)}" for i, t in enumerate(variants)],
               "variants mean", "variants std", "drop")
    return Statistics([Table("WiCkeD accuracy", columns, rows, percent=tuple(c for c in columns if c != "model"),
                             note="Accuracy on the original benchmark and on each WiCkeD variant; the drop is the "
                                  "original's accuracy minus the variants' mean.")])
