"""Leaderboard sensitivity: ``python -m builders.metrics ranking`` [options].

It compares a leaderboard on an original and a perturbed config (Alzahrani et al., 2024):
per-model accuracy, ΔAcc, RStd (the standard deviation of the recall per gold position, Zheng et al.,
2024) and ΔRStd, each model's rank before and after, Kendall's k_τ = 1 − 2·discordant/(n(n−1)/2), how
many models moved and the largest move; as Markdown, CSV, JSON and a PNG slope chart.

    python -m builders.metrics ranking --original results/original/ --perturbed results/shuffle/ --output out/

Predictions are read by the one reader (:mod:`builders.core.sources.predictions`): lm-eval sample logs, or plain
JSONL ``{model, id | question_id, output | pred}``; plain JSONL needs ``--dataset`` for the gold answers. A
prediction names its item by ``id`` (the release's record id, or an lm-eval doc's ``id``), else by MMLU-Pro's
``question_id`` (mapped to the record carrying it in its metadata), else by lm-eval's ``doc_id``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS
from builders.core.pipeline.cli import check_writable_folder
from builders.core.release.reader import load_release_split
from builders.core.sources.predictions import (
    DUPLICATE,
    SCORES,
    Prediction,
    match_predictions,
    read_predictions,
    require_matches,
    resolve_prediction,
)

logger = logging.getLogger(__name__)
MAJOR_SHIFT = 0.75  # k_τ at or below which a ranking shift is major (Alzahrani et al., 2024)


# ---- accuracy, RStd, ranks and k_τ ---------------------------------------------------------------------


@dataclass(frozen=True)
class ModelScore:
    """One model on one side, over the compared items. Percentages, as the paper reports them."""

    correct: int
    items: int
    recall_by_position: dict[int, float]  # gold position -> share of those items answered correctly (%)

    @property
    def accuracy(self) -> float:
        return 100.0 * self.correct / self.items if self.items else float("nan")

    @property
    def rstd(self) -> float:
        """Population standard deviation of the per-position recall, over positions that hold a gold."""
        recalls = list(self.recall_by_position.values())
        if not recalls:
            return float("nan")
        mean = sum(recalls) / len(recalls)
        return math.sqrt(sum((r - mean) ** 2 for r in recalls) / len(recalls))


def score_model(predictions: Mapping[str, int | None], gold: Mapping[str, int], ids: Iterable[str]) -> ModelScore:
    by_position: dict[int, list[bool]] = {}
    for item_id in ids:
        by_position.setdefault(gold[item_id], []).append(predictions.get(item_id) == gold[item_id])
    correct = sum(sum(hits) for hits in by_position.values())
    recalls = {position: 100.0 * sum(hits) / len(hits) for position, hits in sorted(by_position.items())}
    return ModelScore(correct, sum(len(h) for h in by_position.values()), recalls)


def competition_ranks(values: Mapping[str, float]) -> dict[str, int]:
    """1 = best; tied models share the best rank of their group ("1224" ranking)."""
    return {model: 1 + sum(other > value for other in values.values()) for model, value in values.items()}


def discordant_pairs(before: Sequence[float], after: Sequence[float]) -> int:
    """Pairs ordered one way before and the other way after; a pair tied on either side is not discordant."""
    n = len(before)
    return sum(1 for i in range(n) for j in range(i + 1, n) if (before[i] - before[j]) * (after[i] - after[j]) < 0)


def kendall_k_tau(before: Sequence[float], after: Sequence[float]) -> float:
    """k_τ = 1 − 2·discordant/(n(n−1)/2), the paper's formula; NaN for fewer than 2 models.

    Without ties it equals Kendall's tau-a = tau-b. Tied pairs count as not discordant, so with ties it
    is tau-a plus the share of tied pairs (see tests/test_metrics.py).
    """
    n = len(before)
    if n != len(after):
        raise ValueError("both rankings must score the same models")
    pairs = n * (n - 1) // 2
    return 1 - 2 * discordant_pairs(before, after) / pairs if pairs else float("nan")


@dataclass(frozen=True)
class RankingRow:
    model: str
    before: ModelScore
    after: ModelScore
    rank_before: int
    rank_after: int

    @property
    def move(self) -> int:
        """Places gained (positive) or lost (negative)."""
        return self.rank_before - self.rank_after


@dataclass(frozen=True)
class Ranking:
    original: str
    perturbed: str
    items: int
    rows: list[RankingRow]
    discordant: int
    k_tau: float
    notes: list[str] = field(default_factory=list)

    @property
    def moved(self) -> list[RankingRow]:
        return [row for row in self.rows if row.move != 0]

    @property
    def largest_move(self) -> int:
        return max((abs(row.move) for row in self.rows), default=0)

    @property
    def largest_movers(self) -> list[str]:
        return [row.model for row in self.rows if self.largest_move and abs(row.move) == self.largest_move]


def rank_models(original: "Side", perturbed: "Side") -> Ranking:
    """Compare every model on the items that both sides know and every model answered on both."""
    models = sorted(original.predictions)
    if not models:
        raise UserError("no predictions to rank")
    if set(models) != set(perturbed.predictions):
        raise UserError(f"the two sides have different models: only original {sorted(set(models) - set(perturbed.predictions))}, "
                        f"only perturbed {sorted(set(perturbed.predictions) - set(models))}")
    ids = set(original.gold) & set(perturbed.gold)
    for side in (original, perturbed):
        for predictions in side.predictions.values():
            ids &= set(predictions)
    ids_sorted = sorted(ids)
    if not ids_sorted:
        raise UserError("no item has a gold answer and a prediction from every model on both sides")
    before = {m: score_model(original.predictions[m], original.gold, ids_sorted) for m in models}
    after = {m: score_model(perturbed.predictions[m], perturbed.gold, ids_sorted) for m in models}
    ranks_before = competition_ranks({m: s.correct for m, s in before.items()})
    ranks_after = competition_ranks({m: s.correct for m, s in after.items()})
    rows = sorted((RankingRow(m, before[m], after[m], ranks_before[m], ranks_after[m]) for m in models),
                  key=lambda row: (row.rank_before, row.rank_after, row.model))
    x, y = [float(-r.rank_before) for r in rows], [float(-r.rank_after) for r in rows]
    notes = [f"{side.name}: {len(set(side.gold) - ids)} items with a gold answer left out (not answered by every "
             f"model on both sides, or absent from the other side)" for side in (original, perturbed)
             if set(side.gold) - ids]
    return Ranking(original.name, perturbed.name, len(ids_sorted), rows, discordant_pairs(x, y), kendall_k_tau(x, y), notes)


# ---- reading the two sides ----------------------------------------------------------------------------


@dataclass
class Side:
    """One side of the comparison: gold answers by item, and each model's predicted option index."""

    name: str
    gold: dict[str, int]
    predictions: dict[str, dict[str, int | None]]


@dataclass(frozen=True)
class DatasetItem:
    answer: int
    labels: tuple[str, ...]
    question_id: str | None = None  # MMLU-Pro's question id, when the record's metadata carries it


def item_id_function(items: Mapping[str, DatasetItem] | None) -> Callable[[Prediction], str | None]:
    """A prediction's item: its ``id``, else its ``question_id``, else lm-eval's ``doc_id``; with a dataset, only
    the dataset's items (a ``question_id`` is mapped to the record that carries it)."""
    by_question = {item.question_id: item_id for item_id, item in (items or {}).items() if item.question_id is not None}

    def item_id(prediction: Prediction) -> str | None:
        ref = prediction.ref
        if ref.get("id") is not None:
            found = str(ref["id"])
        elif ref.get("question_id") is not None:
            found = by_question.get(str(ref["question_id"]), str(ref["question_id"]))
        elif ref.get("doc_id") is not None:
            found = str(ref["doc_id"])
        else:
            return None
        return found if items is None or found in items else None

    return item_id


def build_side(name: str, predictions: Sequence[Prediction], items: Mapping[str, DatasetItem] | None) -> Side:
    """Gold answers from the dataset when given, else from the logs; labels resolved to indices."""
    find_item = item_id_function(items)
    require_matches(predictions, find_item, f"an item {'of the dataset' if items else '(id, question_id or doc_id)'} "
                                            f"on the {name} side")
    matched, report = match_predictions(predictions, find_item)
    if report.duplicates:
        raise UserError(f"{name}: a model has two predictions for one item: {report.examples[DUPLICATE][0]}")
    gold: dict[str, int] = {item_id: item.answer for item_id, item in (items or {}).items()}
    by_model: dict[str, dict[str, int | None]] = {}
    for item_id, item_predictions in matched.items():
        labels = items[item_id].labels if items else tuple(LETTERS)
        for p in item_predictions:
            if p.gold is not None:
                known = gold.setdefault(item_id, p.gold)
                if known != p.gold:
                    raise UserError(f"{name}: item {item_id} has gold {known} in "
                                    f"{'the dataset' if items else 'another log'} but {p.gold} in {p.model}'s "
                                    "predictions: are they from the same config?")
            by_model.setdefault(p.model, {})[item_id] = resolve_prediction(p.output, labels)
    if not gold:
        raise UserError(f"{name}: no gold answers: plain JSONL predictions need --dataset")
    return Side(name, gold, by_model)


def load_dataset_items(dataset: str, config: str, split: str, revision: str | None) -> dict[str, DatasetItem]:
    """``id -> (answer, labels, question id)`` of one config's split, from a release folder or a Hub repo."""
    rows = load_release_split(dataset, config, split, revision)
    items = {}
    for row in rows:
        labels = row.get("labels") or list(LETTERS[: len(row["choices"])])
        question_id = (row.get("metadata") or {}).get("question_id")
        items[str(row["id"])] = DatasetItem(int(row["answer"]), tuple(labels),
                                            None if question_id is None else str(question_id))
    return items


# ---- output ------------------------------------------------------------------------------------------


COLUMNS = ["model", "rank_before", "rank_after", "rank_change", "accuracy_before", "accuracy_after", "delta_accuracy",
           "rstd_before", "rstd_after", "delta_rstd", "items"]


def table_rows(ranking: Ranking) -> list[dict[str, Any]]:
    return [{
        "model": row.model, "rank_before": row.rank_before, "rank_after": row.rank_after, "rank_change": row.move,
        "accuracy_before": row.before.accuracy, "accuracy_after": row.after.accuracy,
        "delta_accuracy": row.after.accuracy - row.before.accuracy, "rstd_before": row.before.rstd,
        "rstd_after": row.after.rstd, "delta_rstd": row.after.rstd - row.before.rstd, "items": row.before.items,
    } for row in ranking.rows]


def summary_line(ranking: Ranking) -> str:
    pairs = len(ranking.rows) * (len(ranking.rows) - 1) // 2
    tau = "n/a (fewer than 2 models)" if math.isnan(ranking.k_tau) else f"{ranking.k_tau:.4f}"
    movers = f" ({', '.join(ranking.largest_movers)})" if ranking.largest_movers else ""
    return (f"k_τ = {tau} ({ranking.discordant} discordant of {pairs} pairs); {len(ranking.moved)} of "
            f"{len(ranking.rows)} models changed rank; largest move: {ranking.largest_move} places{movers}.")


def to_markdown(ranking: Ranking) -> str:
    lines = [f"## Ranking: {ranking.original} → {ranking.perturbed}", "",
             f"{ranking.items} items compared. {summary_line(ranking)}", "",
             "Accuracy and RStd (standard deviation of the recall per gold position) in percentage points.", "",
             "| model | rank before | rank after | change | accuracy before | accuracy after | ΔAcc | RStd before | RStd after | ΔRStd |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in table_rows(ranking):
        lines.append(f"| {r['model']} | {r['rank_before']} | {r['rank_after']} | {r['rank_change']:+d} | "
                     f"{r['accuracy_before']:.2f} | {r['accuracy_after']:.2f} | {r['delta_accuracy']:+.2f} | "
                     f"{r['rstd_before']:.2f} | {r['rstd_after']:.2f} | {r['delta_rstd']:+.2f} |")
    lines += [""] + [f"Note: {note}." for note in ranking.notes]
    return "\n".join(lines).rstrip() + "\n"


def to_csv(ranking: Ranking) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in table_rows(ranking):
        writer.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in row.items()})
    return out.getvalue()


def to_json(ranking: Ranking) -> str:
    data = {"original": ranking.original, "perturbed": ranking.perturbed, "items": ranking.items,
            "k_tau": None if math.isnan(ranking.k_tau) else ranking.k_tau, "discordant_pairs": ranking.discordant,
            "models_moved": len(ranking.moved), "largest_move": ranking.largest_move,
            "largest_movers": ranking.largest_movers, "notes": ranking.notes,
            "models": [{**r, "recall_by_position_before": _recalls(row.before), "recall_by_position_after": _recalls(row.after)}
                       for r, row in zip(table_rows(ranking), ranking.rows, strict=True)]}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _recalls(score: ModelScore) -> dict[str, float]:
    return {LETTERS[p] if p < len(LETTERS) else str(p): v for p, v in score.recall_by_position.items()}


def slope_chart(ranking: Ranking, path: Path) -> Path:
    """The paper's Figure 1 (:func:`slope_figure`), written as a PNG."""
    import matplotlib.pyplot as plt

    fig = slope_figure(ranking)
    path.parent.mkdir(parents=True, exist_ok=True)  # evaluate draws the charts before it writes its tables
    fig.savefig(path)
    plt.close(fig)
    return path


def slope_figure(ranking: Ranking):
    """The paper's Figure 1: each model's rank on the original (left) and the perturbed (right) config.

    Every model gets its own row on each side (tied models are ordered by name and their shared rank
    is marked "="), so that no two labels overlap. The figure grows to hold its longest texts.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(ranking.rows)
    left = _slots(ranking.rows, lambda row: row.rank_before)
    right = _slots(ranking.rows, lambda row: row.rank_after)
    tied_before = _tied([row.rank_before for row in ranking.rows])
    tied_after = _tied([row.rank_after for row in ranking.rows])
    fig, ax = plt.subplots(figsize=(8, max(3.0, 0.42 * n + 1.6)), dpi=120)
    for row in ranking.rows:
        color = "#2a9d3f" if row.move > 0 else "#d1495b" if row.move < 0 else "#8a8a8a"
        ax.plot([0, 1], [left[row.model], right[row.model]], color=color, linewidth=2, marker="o", markersize=6)
        before = ("=" if row.rank_before in tied_before else "") + str(row.rank_before)
        after = ("=" if row.rank_after in tied_after else "") + str(row.rank_after)
        ax.text(-0.05, left[row.model], f"{before}. {row.model}  {row.before.accuracy:.1f}%", ha="right",
                va="center", fontsize=9)
        ax.text(1.05, right[row.model], f"{after}. {row.model}  {row.after.accuracy:.1f}%", ha="left",
                va="center", fontsize=9)
    ax.set_xlim(-1.0, 2.0)
    ax.set_ylim(n + 0.6, 0.4)
    # column headers aligned away from each other, so that long config names never overlap
    ax.text(0.02, 0.25, ranking.original, ha="right", va="bottom", fontsize=10, fontweight="bold")
    ax.text(0.98, 0.25, ranking.perturbed, ha="left", va="bottom", fontsize=10, fontweight="bold")
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ("top", "right", "bottom", "left"):
        ax.spines[spine].set_visible(False)
    tau = "n/a" if math.isnan(ranking.k_tau) else f"{ranking.k_tau:.3f}"
    ax.set_title(f"Ranking by accuracy ({ranking.items} items): k_τ = {tau}; {len(ranking.moved)} of {n} models "
                 f"changed rank, largest move {ranking.largest_move}", fontsize=10, pad=26)
    fig.tight_layout()
    _grow_to_fit(fig)
    return fig


def _grow_to_fit(fig, pad: float = 0.1) -> None:
    """Widen and heighten the figure by what its texts stick out (``pad`` inches to spare), keeping every axes
    at its size and place in inches: labels placed in data coordinates, the title and the headers keep their
    places beside the lines, and nothing is cut at the image's edge."""
    fig.canvas.draw()  # the texts' extents exist only once drawn
    width, height = fig.get_size_inches()
    drawn = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
    grow_left, grow_right = max(0.0, pad - drawn.x0), max(0.0, drawn.x1 - width + pad)
    grow_bottom, grow_top = max(0.0, pad - drawn.y0), max(0.0, drawn.y1 - height + pad)
    if not any((grow_left, grow_right, grow_bottom, grow_top)):
        return
    new_width, new_height = width + grow_left + grow_right, height + grow_bottom + grow_top
    boxes = [(ax, ax.get_position()) for ax in fig.axes]
    fig.set_size_inches(new_width, new_height)
    for ax, box in boxes:
        ax.set_position([(box.x0 * width + grow_left) / new_width, (box.y0 * height + grow_bottom) / new_height,
                         box.width * width / new_width, box.height * height / new_height])


def _slots(rows: Sequence[RankingRow], rank: Callable[[RankingRow], int]) -> dict[str, int]:
    ordered = sorted(rows, key=lambda row: (rank(row), row.model))
    return {row.model: slot for slot, row in enumerate(ordered, 1)}


def _tied(ranks: Sequence[int]) -> set[int]:
    return {r for r in ranks if ranks.count(r) > 1}


def write_outputs(ranking: Ranking, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / "ranking.md", "csv": out_dir / "ranking.csv", "json": out_dir / "ranking.json"}
    paths["markdown"].write_text(to_markdown(ranking), encoding="utf-8")
    paths["csv"].write_text(to_csv(ranking), encoding="utf-8")
    paths["json"].write_text(to_json(ranking), encoding="utf-8")
    paths["png"] = slope_chart(ranking, out_dir / "ranking.png")
    return paths


# ---- the `ranking` subcommand ----------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--original", nargs="+", required=True, metavar="[MODEL=]PATH",
                        help="predictions on the original config: lm-eval samples_*.jsonl logs or --output_path "
                             "folders, or JSONL {model, id | question_id, output | pred}; [MODEL=]PATH names the model")
    parser.add_argument("--perturbed", nargs="+", required=True, metavar="[MODEL=]PATH",
                        help="predictions on the perturbed config")
    parser.add_argument("--output", type=Path, required=True, metavar="DIR",
                        help="write ranking.md, ranking.csv, ranking.json and ranking.png here")
    parser.add_argument("--dataset", metavar="DIR|REPO_ID",
                        help="release folder or Hub repo with the gold answers and labels (required for plain JSONL)")
    parser.add_argument("--revision", help="Hub revision of --dataset, e.g. v1.0.0")
    parser.add_argument("--original-config", default="original", help="--dataset config of the original predictions")
    parser.add_argument("--perturbed-config", help="--dataset config of the perturbed predictions")
    parser.add_argument("--split", default="test", help="--dataset split the predictions are on")
    parser.add_argument("--score", choices=SCORES, default="auto",
                        help="lm-eval multiple-choice prediction: acc (highest log-likelihood), acc_norm (per character), "
                             "auto (acc_norm when the task logs it)")
    parser.add_argument("--original-name", default=None, help="label of the original side (default: its config)")
    parser.add_argument("--perturbed-name", default=None, help="label of the perturbed side (default: its config)")


def run(args: argparse.Namespace) -> int:
    if args.dataset and not args.perturbed_config:
        raise UserError("--dataset needs --perturbed-config (the config the perturbed predictions are on)")
    check_writable_folder(args.output)  # before any reading: a bad --output costs nothing
    specs = [(args.original_name or args.original_config, args.original, args.original_config, "--original"),
             (args.perturbed_name or args.perturbed_config or "perturbed", args.perturbed, args.perturbed_config,
              "--perturbed")]
    predictions = [read_predictions(paths, score=args.score, flag=flag) for _, paths, _, flag in specs]
    items = [load_dataset_items(args.dataset, config, args.split, args.revision) if args.dataset else None
             for _, _, config, _ in specs]  # both configs load before any matching
    sides = [build_side(name, found, side_items) for (name, _, _, _), found, side_items in zip(specs, predictions, items, strict=True)]
    ranking = rank_models(*sides)
    paths = write_outputs(ranking, args.output)
    print(to_markdown(ranking))
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
