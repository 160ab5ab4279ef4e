"""What the GSM-MC and MATH-MC builders share before the sets: the predictions (read and/or generated), the
extracted answers and the pools."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import OpenItem
from builders.core.llm.settings import ChatRequest
from builders.core.items.outcomes import ExclusionLog
from builders.core.sources.loading import LoadedSource
from builders.core.sources.predictions import (
    DUPLICATE,
    SPLIT_NOT_BUILT,
    MatchReport,
    Prediction,
    Unmatched,
    match_predictions,
    read_predictions,
    require_matches,
    require_texts,
    write_predictions,
)

from .extract import MAX_OUTPUT_CHARS
from .generate import GenerationRun, generate_predictions
from .options import PredictionOptions
from .pools import Equivalence, Pool, build_pool, comparison_group

logger = logging.getLogger(__name__)


@dataclass
class Collected:
    predictions: list[Prediction]
    matched: dict[str, list[Prediction]]  # item id -> its predictions
    report: MatchReport
    generation: GenerationRun | None = None
    too_long: Counter = field(default_factory=Counter)  # outputs over MAX_OUTPUT_CHARS, per model (not read)


def card_context(options: PredictionOptions, collected: Collected | None) -> dict:
    """What a card says about the predictions behind the pools (all zero when none were read)."""
    report = collected.report if collected else MatchReport()
    return {"prediction_files": len(options.predictions), "generated_models": list(options.generate_with),
            "predictions_read": report.read.total(), "predictions_matched": report.matched.total(),
            "predictions_unmatched": report.unmatched.total(), "predictions_duplicate": report.duplicates.total(),
            "predictions_unmatched_reasons": {reason: n for reason, n in sorted(report.reasons.items())
                                              if reason != DUPLICATE},
            "predictions_too_long": collected.too_long.total() if collected else 0,
            "max_output_chars": MAX_OUTPUT_CHARS}


def question_key(text: str) -> str:
    """Whitespace-insensitive form used to match a prediction's question to an item's."""
    return " ".join(text.split())


def item_of(items: Sequence[OpenItem], doc_question: Callable[[Mapping], str | None],
            excluded: Iterable[tuple[str, int]] = (),
            index_questions: Mapping[tuple[str, int], str] | None = None) -> Callable[[Prediction], str | Unmatched]:
    """A prediction's item: by ``question_index`` (with ``split``, needed when several splits are built; a
    question text given too must agree), else by its question text, whitespace-insensitive (an lm-eval doc's
    by ``doc_question``; the harness may shuffle or subsample docs, so ``doc_id`` is not trusted).

    ``index_questions`` ((split, row) -> question text): ``question_index`` names a row of the benchmark the
    predictions were made on (GSM8K), not of this source (GSM8K-Platinum, a revision of it): that row's
    question text is matched instead."""
    by_place = {(item.split, item.index): item for item in items}
    excluded_places = set(excluded)  # (split, row index) of source rows the build excluded
    by_text: dict[str, OpenItem] = {}
    for item in items:
        by_text.setdefault(question_key(item.question), item)
    splits = sorted({item.split for item in items})

    def item_id(prediction: Prediction) -> str | Unmatched:
        ref = prediction.ref
        text = ref["question"] if isinstance(ref.get("question"), str) else doc_question(ref)
        split = ref.get("split")
        if split is not None and split not in splits:
            return SPLIT_NOT_BUILT
        if ref.get("question_index") is not None and index_questions is not None:
            original = index_questions.get((split or "test", ref["question_index"]))
            if original is None:
                return Unmatched("no_item_at_question_index")
            if isinstance(text, str) and question_key(text) != question_key(original):
                return Unmatched("question_index_and_text_disagree")
            text = original
        elif ref.get("question_index") is not None:
            if split is None and len(splits) > 1:
                raise UserError(f"{prediction.origin}: a prediction by question_index needs a \"split\" when "
                                f"several splits are built ({splits})")
            item = by_place.get((split or next(iter(splits), None), ref["question_index"]))
            if item is None:
                place = (split or next(iter(splits), None), ref["question_index"])
                return Unmatched("item_excluded" if place in excluded_places else "no_item_at_question_index")
            if isinstance(text, str) and question_key(text) != question_key(item.question):
                return Unmatched("question_index_and_text_disagree")  # trust neither
            return item.id
        if not isinstance(text, str):
            return Unmatched("no_question_index_or_question")
        item = by_text.get(question_key(text))
        if item is None or (split is not None and split != item.split):
            return Unmatched("question_not_found")
        return item.id

    return item_id


def collect_predictions(source: LoadedSource, options: PredictionOptions, items: Sequence[OpenItem],
                        doc_question: Callable[[Mapping], str | None],
                        request_for: Callable[[str], ChatRequest], excluded: ExclusionLog | None = None,
                        made_on: tuple[str, Callable[[], Mapping[tuple[str, int], str]]] | None = None) -> Collected:
    """Predictions from files and/or generated for ``items`` (excluded rows are never asked about; a prediction
    for one, in the source's or the builder's ``excluded``, is counted as ``item_excluded``). ``made_on``: (the
    benchmark the files' predictions were made on, a loader of its questions by (split, row), called only when a
    prediction names its row by ``question_index``), for a source that revises it."""
    names = (source.benchmark.name, made_on[0]) if made_on else source.benchmark.name
    predictions = read_predictions(options.predictions, benchmark=names)
    require_texts(predictions, source.benchmark.name)
    entries = [*source.exclusions.entries, *(excluded.entries if excluded else ())]
    by_index = made_on is not None and any(p.ref.get("question_index") is not None for p in predictions)
    item_id = item_of(items, doc_question, [(e.split, e.source_index) for e in entries],
                      made_on[1]() if by_index else None)
    require_matches(predictions, item_id, f"a question of {sorted({item.split for item in items})}")
    generation = None
    if options.generate_with:
        questions: dict[str, dict[int, str]] = {}
        for item in items:
            questions.setdefault(item.split, {})[item.index] = item.question
        generation = generate_predictions(options.generate_with, questions, request_for, options.llm)
        predictions.extend(generation.predictions)
        if options.save_predictions:
            write_predictions(generation.predictions, options.save_predictions)
    if made_on and generation:  # generated predictions name rows of this source, not of the one revised
        own_rows = item_of(items, doc_question)
        generated = {id(p) for p in generation.predictions}
        item_id = (lambda file_item: lambda p: own_rows(p) if id(p) in generated else file_item(p))(item_id)
    matched, report = match_predictions(predictions, item_id)
    return Collected(predictions, matched, report, generation)


def answers_for(item: OpenItem, collected: Collected, extract: Callable[[str], str | None],
                normalize: Callable[[str], str | None]) -> list[tuple[str, str | None]]:
    """(model, answer) per prediction of the item; an already-extracted answer is only normalised. An output
    longer than ``MAX_OUTPUT_CHARS`` is not read: it is an invalid answer, counted in ``collected.too_long``."""
    answers = []
    for p in collected.matched.get(item.id, []):
        if p.output is not None and len(p.output) > MAX_OUTPUT_CHARS:
            collected.too_long[p.model] += 1
            answers.append((p.model, None))
        else:
            answers.append((p.model, None if p.output is None else normalize(p.output) if p.extracted
                            else extract(p.output)))
    return answers


def make_pools(items: Sequence[OpenItem], answers: Mapping[str, list[tuple[str, str | None]]],
               equivalence: Equivalence) -> dict[str, Pool]:
    prepare = getattr(equivalence, "prepare", None)
    if callable(prepare):
        prepare([comparison_group(item.gold, answers[item.id], equivalence) for item in items])
    return {item.id: build_pool(item.id, item.gold, answers[item.id], equivalence) for item in items}


def write_pool_report(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    logger.info("wrote the pool report %s", path)
