"""The paper's table, for ``python -m builders evaluate``: each perturbed config's leaderboard against its
baseline config's (accuracy, RStd, ranks and k_τ, :mod:`.ranking`), and its slope chart."""

from __future__ import annotations

from typing import Any, Mapping

from builders.core.items.tables import Statistics, Table
from builders.core.tasks.results import Runs, TableOptions, by_role

from .ranking import MAJOR_SHIFT, Side, rank_models, slope_chart


def evaluation_table(runs: Runs, manifest: Mapping[str, Any], options: TableOptions) -> Statistics:
    # each perturbed config names its baseline config (original, or original_zero_shot for the zero-shot ones)
    originals = {(t["config"], t.get("scoring", "")): t for t in by_role(manifest, "original")}
    rows = []
    for task in by_role(manifest, "perturbed"):
        base = originals.get((task.get("baseline", "original"), task.get("scoring", "")))
        if base is None:
            continue
        sides = [Side(t["task"], {i: g for r in runs.values() for i, (g, _) in r[t["task"]].items.items()},
                      {m: {i: p for i, (_, p) in r[t["task"]].items.items()} for m, r in runs.items()})
                 for t in (base, task)]
        ranking = rank_models(*sides)
        if options.output:
            slope_chart(ranking, options.output / f"slope_{task['task']}.png")
        for row in ranking.rows:
            rows.append((task["config"], task.get("scoring", ""), row.model, row.before.accuracy / 100,
                         row.after.accuracy / 100, row.before.rstd / 100, row.after.rstd / 100, row.rank_before,
                         row.rank_after, ranking.k_tau, "yes" if ranking.k_tau <= MAJOR_SHIFT else "no"))
    columns = ("config", "scoring", "model", "accuracy original", "accuracy perturbed", "RStd original",
               "RStd perturbed", "rank original", "rank perturbed", "k_tau", "major shift")
    return Statistics([Table("Leaderboard sensitivity", columns, rows,
                             percent=("accuracy original", "accuracy perturbed", "RStd original", "RStd perturbed"),
                             note=f"k_τ ≤ {MAJOR_SHIFT} is a major shift of the ranking (Alzahrani et al., 2024).")])
