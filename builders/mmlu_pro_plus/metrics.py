"""MMLU-Pro+ metrics: ``python -m builders.metrics mmlu-pro-plus``, and the tables ``python -m builders.evaluate``
shows for a release (:mod:`.evaluation`): both score with :func:`score_model` and show :func:`metrics_tables`.

From one or more models' predictions on MMLU-Pro ("before") and on an MMLU-Pro+ release ("after"), per model:

- accuracy per modification group on MMLU-Pro+, and its drop against MMLU-Pro on the same questions;
- the shortcut selection ratios of Taghanaki et al. (2024), over the true-positive-pair (TPP) questions:
  SSR_wrong = stayed on the previously chosen wrong option / TPP total, and
  SSR_partial = stayed on the original answer alone / TPP total;
- the correct pair identification ratio CPI = TPP questions answered with the (correct) pair option /
  (PFPP + CFPP questions answered with the (wrong) pair option), with its counts; a zero denominator gives
  no ratio (null), never an infinity.

Predictions are read by the one reader (:mod:`builders.core.sources.predictions`) and joined on MMLU-Pro's
``question_id``: a prediction names its question by ``question_id`` (MMLU-Pro's own result rows and lm-eval
docs), or by ``id``, the release's record id (``mmlu_pro/test/70``) or the question id itself. Letters or indices are read against the options of each side:
MMLU-Pro+ keeps the original options in place and appends its new ones, so a letter means the same
option on both sides, except that a TPP question's added option may sit among the original ones (the default
layout): a letter on MMLU-Pro+ is mapped through ``added_option_index``. A null prediction (no answer extracted)
counts as wrong and is counted. Accuracy is also reported per MMLU-Pro category, as in the paper's Table 1.
Accuracies and drops are fractions (0.25), shown as percentages.

    python -m builders.metrics mmlu-pro-plus --dataset out/ --before mmlu_pro.jsonl --after plus.jsonl --output m/
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS
from builders.core.items.tables import Statistics, Table
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

from .groups import CFPP, CONFIG, GROUPS, PFPP, TPP


@dataclass(frozen=True)
class PlusItem:
    """One MMLU-Pro+ question, as the metrics need it."""

    question_id: str
    record_id: str
    modification: str
    answer: int  # on MMLU-Pro+
    original_answer: int  # on MMLU-Pro
    original_options: int  # options MMLU-Pro had (MMLU-Pro+ appends after them)
    options: int
    pair_option: int | None
    added_option: int | None = None  # where the new TPP option sits on MMLU-Pro+ (None: no option added)
    category: str | None = None

    def after_index(self, original: int | None) -> int | None:
        """The MMLU-Pro+ index of MMLU-Pro's option ``original`` (one further on past the added option)."""
        if original is None:
            return None
        return original + (self.added_option is not None and original >= self.added_option)

    @property
    def original_answer_after(self) -> int:
        return self.after_index(self.original_answer)


def question_of_row(row: Mapping[str, Any]) -> str:
    """The MMLU-Pro question a release row (of either config) holds: its ``question_id``, else its record id."""
    question_id = (row.get("metadata") or {}).get("question_id", row.get("question_id"))
    return str(question_id if question_id is not None else row["id"])


def item_from_row(row: Mapping[str, Any]) -> PlusItem:
    """An item from a release row: ``answer_index`` is the gold where the row carries MMLU-Pro's Hub columns
    (``answer`` is then the letter), else ``answer``."""
    meta = row.get("metadata") or {}
    group = row["modification"]
    added = {TPP: 2, PFPP: 1, CFPP: 1}.get(group, 0)
    gold = row["answer_index"] if row.get("answer_index") is not None else row["answer"]
    return PlusItem(question_of_row(row), str(row["id"]), group, int(gold), int(meta["original_answer_index"]),
                    len(row["choices"]) - added, len(row["choices"]), meta.get("pair_option_index"),
                    meta.get("added_option_index"), row.get("category"))


def load_items(dataset: str, config: str, split: str, revision: str | None) -> dict[str, PlusItem]:
    """question_id -> PlusItem of an MMLU-Pro+ release folder or Hub repo."""
    rows = load_release_split(dataset, config, split, revision)
    if "modification" not in rows.column_names:
        raise UserError(f"{dataset} has no 'modification' column: not an MMLU-Pro+ release")
    return items_by_question(item_from_row(row) for row in rows)


def items_by_question(items: Iterable[PlusItem]) -> dict[str, PlusItem]:
    by_question: dict[str, PlusItem] = {}
    for item in items:
        if item.question_id in by_question:
            raise UserError(f"question_id {item.question_id} appears twice in the dataset")
        by_question[item.question_id] = item
    return by_question


# ---- matching predictions ---------------------------------------------------------------------------------


def question_of(items: Mapping[str, PlusItem]) -> Callable[[Prediction], str | None]:
    """A prediction's MMLU-Pro question: its ``question_id``, else the question of its record ``id``.
    lm-eval's doc_id (a row index) is never a key."""
    record_to_question = {item.record_id: q for q, item in items.items()}

    def question(prediction: Prediction) -> str | None:
        ref = prediction.ref
        if ref.get("question_id") is not None:
            found = str(ref["question_id"])
        elif ref.get("id") is not None:
            found = record_to_question.get(str(ref["id"]), str(ref["id"]))
        else:
            return None
        return found if found in items else None

    return question


def index_predictions(predictions: Sequence[Prediction], items: Mapping[str, PlusItem], side: str) -> dict[str, dict[str, int | None]]:
    """model -> question_id -> option index (None: no answer), letters read against that side's options."""
    question = question_of(items)
    require_matches(predictions, question, f"a question of the dataset by 'question_id' or record 'id' ({side})")
    matched, report = match_predictions(predictions, question)
    if report.duplicates:
        raise UserError(f"{side}: a model has two predictions for one question: {report.examples[DUPLICATE][0]}")
    by_model: dict[str, dict[str, int | None]] = defaultdict(dict)
    for question, question_predictions in matched.items():
        item = items[question]
        size = item.original_options if side == "before" else item.options
        for p in question_predictions:
            by_model[p.model][question] = resolve_prediction(p.output, tuple(LETTERS[:size]))
    return dict(by_model)


# ---- the metrics ----------------------------------------------------------------------------------------------


@dataclass
class GroupAccuracy:
    items: int = 0
    correct_before: int = 0
    correct_after: int = 0

    @property
    def accuracy_before(self) -> float | None:
        return self.correct_before / self.items if self.items else None

    @property
    def accuracy_after(self) -> float | None:
        return self.correct_after / self.items if self.items else None

    @property
    def drop(self) -> float | None:
        """The accuracy lost from MMLU-Pro to MMLU-Pro+ on the same questions."""
        return (self.correct_before - self.correct_after) / self.items if self.items else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "accuracy_before": self.accuracy_before, "accuracy_after": self.accuracy_after,
                "drop": self.drop}


@dataclass
class ModelMetrics:
    model: str
    groups: dict[str, GroupAccuracy] = field(default_factory=lambda: {g: GroupAccuracy() for g in GROUPS})
    overall: GroupAccuracy = field(default_factory=GroupAccuracy)
    tpp_total: int = 0
    tpp_before_wrong: int = 0  # a wrong option (not "no answer") chosen on MMLU-Pro
    tpp_before_correct: int = 0
    tpp_stayed_wrong: int = 0  # the same wrong option chosen again on MMLU-Pro+
    tpp_stayed_partial: int = 0  # the original answer alone chosen on both
    tpp_pair_chosen: int = 0  # the (correct) pair option chosen on a TPP question
    pfpp_pair_chosen: int = 0  # the (wrong) pair option chosen on a PFPP question
    cfpp_pair_chosen: int = 0
    no_answer_before: int = 0
    no_answer_after: int = 0
    categories: dict[str, GroupAccuracy] = field(default_factory=dict)  # per MMLU-Pro category (paper's Table 1)

    @property
    def ssr_wrong(self) -> float | None:
        return self.tpp_stayed_wrong / self.tpp_total if self.tpp_total else None

    @property
    def ssr_partial(self) -> float | None:
        return self.tpp_stayed_partial / self.tpp_total if self.tpp_total else None

    @property
    def cpi_denominator(self) -> int:
        return self.pfpp_pair_chosen + self.cfpp_pair_chosen

    @property
    def cpi(self) -> float | None:
        """None when no wrong pair option was ever chosen: the ratio is undefined, not infinite."""
        return self.tpp_pair_chosen / self.cpi_denominator if self.cpi_denominator else None

    def to_dict(self) -> dict[str, Any]:
        counts = {k: v for k, v in asdict(self).items() if isinstance(v, int)}
        return {
            "model": self.model,
            "overall": self.overall.to_dict(),
            "groups": {g: a.to_dict() for g, a in self.groups.items()},
            "categories": {c: a.to_dict() for c, a in sorted(self.categories.items())},
            "ssr_wrong": self.ssr_wrong, "ssr_partial": self.ssr_partial,
            "cpi": self.cpi, "cpi_numerator": self.tpp_pair_chosen, "cpi_denominator": self.cpi_denominator,
            "cpi_note": None if self.cpi_denominator else
            "undefined: no PFPP or CFPP question was answered with its pair option (denominator 0)",
            "counts": counts,
        }


def score_model(model: str, items: Mapping[str, PlusItem], before: Mapping[str, int | None],
                after: Mapping[str, int | None]) -> ModelMetrics:
    """Metrics over the questions this model answered (a row, possibly null) on both sides."""
    result = ModelMetrics(model)
    for question in sorted(set(before) & set(after)):
        item, old, new = items[question], before[question], after[question]
        right_before, right_after = old == item.original_answer, new == item.answer
        category = result.categories.setdefault(item.category or "(none)", GroupAccuracy())
        for tally in (result.groups[item.modification], result.overall, category):
            tally.items += 1
            tally.correct_before += right_before
            tally.correct_after += right_after
        result.no_answer_before += old is None
        result.no_answer_after += new is None
        pair_chosen = new is not None and new == item.pair_option
        if item.modification == TPP:
            result.tpp_total += 1
            result.tpp_before_correct += right_before
            result.tpp_before_wrong += old is not None and not right_before
            result.tpp_stayed_wrong += old is not None and not right_before and new == item.after_index(old)
            result.tpp_stayed_partial += right_before and new == item.original_answer_after
            result.tpp_pair_chosen += pair_chosen
        elif item.modification == PFPP:
            result.pfpp_pair_chosen += pair_chosen
        elif item.modification == CFPP:
            result.cfpp_pair_chosen += pair_chosen
    return result


@dataclass
class Report:
    dataset: str
    models: list[ModelMetrics]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "models": [m.to_dict() for m in self.models], "notes": self.notes}


def compute(items: Mapping[str, PlusItem], before: Sequence[Prediction], after: Sequence[Prediction],
            dataset: str = "", only: Sequence[str] = ()) -> Report:
    before_by_model = index_predictions(before, items, "before")
    after_by_model = index_predictions(after, items, "after")
    models = sorted(set(before_by_model) & set(after_by_model))
    if only:
        missing = sorted(set(only) - set(models))
        if missing:
            raise UserError(f"models {missing} lack predictions on one side; both sides have {models}")
        models = sorted(only)
    if not models:
        raise UserError(f"no model has predictions on both sides (before: {sorted(before_by_model)}, "
                        f"after: {sorted(after_by_model)})")
    notes = [f"only on the {side} side (left out): {sorted(set(by_model) - set(models))}"
             for side, by_model in (("before", before_by_model), ("after", after_by_model))
             if set(by_model) - set(models)]
    results = []
    for model in models:
        scored = score_model(model, items, before_by_model[model], after_by_model[model])
        unmatched = len(items) - scored.overall.items
        if unmatched:
            notes.append(f"{model}: {unmatched} of {len(items)} questions lack a prediction on one side (left out)")
        results.append(scored)
    return Report(dataset, results, notes)


# ---- the tables ---------------------------------------------------------------------------------------------

ACCURACY = ("MMLU-Pro", "MMLU-Pro+", "drop")


def metrics_tables(models: Sequence[ModelMetrics]) -> Statistics:
    """The paper's tables for these models: accuracy per group (and over all) and per category on both sides, with
    the drop, then the shortcut selection ratios and the correct pair identification ratio with their counts."""
    groups, categories, ratios = [], [], []
    for m in models:
        for group, tally in [("all", m.overall), *m.groups.items()]:
            if tally.items:
                groups.append((m.model, group, tally.items, tally.accuracy_before, tally.accuracy_after, tally.drop))
        categories += [(m.model, category, tally.items, tally.accuracy_before, tally.accuracy_after, tally.drop)
                       for category, tally in sorted(m.categories.items())]
        ratios.append((m.model, m.tpp_total, m.tpp_stayed_wrong, m.ssr_wrong, m.tpp_stayed_partial, m.ssr_partial,
                       m.tpp_pair_chosen, m.pfpp_pair_chosen, m.cfpp_pair_chosen, m.cpi))
    return Statistics([
        Table("Accuracy per group", ("model", "group", "items", *ACCURACY), groups, percent=ACCURACY,
              note="Accuracy on MMLU-Pro and on MMLU-Pro+ over the same questions, per modification group; the drop "
                   "is the first minus the second."),
        Table("Accuracy per category", ("model", "category", "items", *ACCURACY), categories, percent=ACCURACY,
              note="The same per MMLU-Pro category (the paper's Table 1)."),
        Table("Shortcut selection and pair identification",
              ("model", "TPP", "stayed wrong", "SSR_wrong", "stayed on X alone", "SSR_partial", "TPP pair chosen",
               "PFPP pair chosen", "CFPP pair chosen", "CPI"), ratios,
              note="Over the TPP questions: SSR_wrong, the share where the model stays on the wrong option it chose "
                   "on MMLU-Pro; SSR_partial, where it stays on the original answer alone. CPI: TPP questions "
                   "answered with the (correct) pair over PFPP + CFPP questions answered with the (wrong) pair; "
                   "none (–) when that denominator is 0."),
    ])


def to_markdown(report: Report) -> str:
    tables = "\n\n".join(f"### {table.title}\n\n{table.to_markdown()}" for table in metrics_tables(report.models))
    notes = "".join(f"\nNote: {note}.\n" for note in report.notes)
    return f"## MMLU-Pro+ metrics ({report.dataset})\n\n{tables}\n{notes}"


def write_outputs(report: Report, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / "mmlu_pro_plus_metrics.md", "json": out_dir / "mmlu_pro_plus_metrics.json"}
    paths["markdown"].write_text(to_markdown(report), encoding="utf-8")
    paths["json"].write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return paths


# ---- the subcommand ------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", required=True, metavar="DIR|REPO_ID", help="the MMLU-Pro+ release folder or Hub repo")
    parser.add_argument("--revision", help="Hub revision of --dataset, e.g. v1.0.0")
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--split", default="test")
    parser.add_argument("--before", nargs="+", required=True, metavar="[MODEL=]PATH",
                        help="predictions on MMLU-Pro: lm-eval samples_*.jsonl logs or folders, or JSONL "
                             "{model, question_id | id, pred | output} with letters or indices; [MODEL=]PATH names the model")
    parser.add_argument("--after", nargs="+", required=True, metavar="[MODEL=]PATH", help="predictions on MMLU-Pro+")
    parser.add_argument("--model", action="append", default=[], help="only this model (repeatable; default: every "
                                                                     "model with predictions on both sides)")
    parser.add_argument("--before-model-name", help="name for every prediction on the before side (single-model logs)")
    parser.add_argument("--after-model-name", help="name for every prediction on the after side")
    parser.add_argument("--score", choices=SCORES, default="auto", help="lm-eval multiple-choice scoring")
    parser.add_argument("--output", type=Path, help="write mmlu_pro_plus_metrics.md and .json here")


def run(args: argparse.Namespace) -> int:
    before = read_predictions(args.before, model=args.before_model_name, score=args.score, flag="--before")
    after = read_predictions(args.after, model=args.after_model_name, score=args.score, flag="--after")
    items = load_items(args.dataset, args.config, args.split, args.revision)
    report = compute(items, before, after, Path(args.dataset).name if Path(args.dataset).exists() else args.dataset,
                     args.model)
    print(to_markdown(report))
    if args.output:
        paths = write_outputs(report, args.output)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
