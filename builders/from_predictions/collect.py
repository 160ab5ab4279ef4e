"""What the GSM-MC and MATH-MC builders share before the options: their command-line options, the
predictions (read and/or generated), the extracted answers and the pools."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.llm import ChatRequest

from .generate import EndpointSettings, GenerationRun, generate_predictions, write_predictions
from .pools import Equivalence, Pool, build_pool, comparison_group
from .predictions import MatchReport, Prediction, match_predictions, read_predictions
from .sources import OpenEndedSource, OpenItem

logger = logging.getLogger(__name__)

CHOICES_RANGE = range(2, 9)
# Options that say where things go or how fast, not what the dataset holds: kept out of the build config.
LOCAL_OPTIONS = ("pool", "cache_dir", "save_predictions", "concurrency", "api_key_env", "equivalence_workers")


def add_distractor_arguments(parser: argparse.ArgumentParser, title: str, random_allowed: bool) -> argparse._ArgumentGroup:
    group = parser.add_argument_group(title)
    group.add_argument("--splits", nargs="+", default=["test"], metavar="SPLIT",
                       help="source splits to convert (predictions by question_index need a 'split' field "
                            "when there are several)")
    group.add_argument("--predictions", nargs="+", action="extend", default=[], metavar="[MODEL=]PATH",
                       help="predictions: lm-evaluation-harness samples_<task>_*.jsonl (the model is the "
                            "folder name, or MODEL=) or plain JSON lines {question_index|question, model, output}; "
                            "a folder is read recursively")
    group.add_argument("--generate-with", nargs="+", action="extend", default=[], metavar="MODEL",
                       help="ask these models for predictions (greedy, the benchmark's standard few-shot prompt)")
    group.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint for --generate-with")
    group.add_argument("--api-key-env", metavar="NAME", default=None,
                       help="environment variable holding the endpoint's API key (default: none, a keyless local server)")
    group.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "mcqforge" / "replies",
                       help="reply cache for --generate-with: a killed run resumes from it")
    group.add_argument("--concurrency", type=int, default=8, help="requests in flight per model")
    group.add_argument("--max-tokens", type=int, default=None, help="longest generation (default: the prompt's)")
    group.add_argument("--save-predictions", type=Path, metavar="PATH",
                       help="also write the generated predictions here, as plain JSON lines")
    group.add_argument("--choices", type=int, default=4, help="options per question, 2 to 8")
    group.add_argument("--sets", type=int, default=10, help="independent draws of distractors and order (configs set_0...)")
    group.add_argument("--distractors", choices=["pool", "random"] if random_allowed else ["pool"], default="pool",
                       help="'pool': models' wrong answers" + ("; 'random': random numbers near the gold "
                                                              "(the paper's ablation)" if random_allowed else ""))
    group.add_argument("--draw", choices=["weighted", "uniform"], default="weighted",
                       help="how a set draws from the pool: 'weighted' by how many models gave each wrong answer "
                            "(frequent ones are the plausible ones), 'uniform' as the paper")
    group.add_argument("--pool", type=Path, metavar="REPORT_PATH",
                       help="write the per-question pool report (JSON lines) here")
    return group


def check_arguments(args: argparse.Namespace) -> None:
    if args.choices not in CHOICES_RANGE:
        raise UserError(f"--choices must be between {CHOICES_RANGE.start} and {CHOICES_RANGE.stop - 1}")
    if args.sets < 1:
        raise UserError("--sets must be at least 1")
    if args.distractors == "pool" and not (args.predictions or args.generate_with):
        raise UserError("distractor pools need --predictions PATH... and/or --generate-with MODEL... --base-url URL")
    if args.generate_with and not args.base_url:
        raise UserError("--generate-with needs --base-url URL (an OpenAI-compatible endpoint)")


def recorded(params: dict) -> dict:
    return {k: v for k, v in params.items() if k not in LOCAL_OPTIONS}


@dataclass
class Collected:
    predictions: list[Prediction]
    matched: dict[tuple[str, int], list[Prediction]]
    report: MatchReport
    generation: GenerationRun | None = None


def card_context(args: argparse.Namespace, collected: Collected | None) -> dict:
    """What a card says about the predictions behind the pools (all zero when none were read)."""
    report = collected.report if collected else MatchReport()
    return {"prediction_files": len(args.predictions), "generated_models": list(args.generate_with),
            "predictions_read": report.read, "predictions_matched": report.matched,
            "predictions_unmatched": report.unmatched, "predictions_duplicate": report.duplicates}


def collect_predictions(source: OpenEndedSource, args: argparse.Namespace, items: Sequence[OpenItem],
                        doc_question: Callable[[Mapping], str | None],
                        request_for: Callable[[str], ChatRequest]) -> Collected:
    """Predictions from files and/or generated for ``items`` (excluded rows are never asked about)."""
    predictions: list[Prediction] = []
    for spec in args.predictions:
        predictions.extend(read_predictions(spec, doc_question))
    generation = None
    if args.generate_with:
        settings = EndpointSettings(args.base_url, args.api_key_env, args.cache_dir, args.concurrency)
        questions: dict[str, dict[int, str]] = {}
        for item in items:
            questions.setdefault(item.split, {})[item.index] = item.question
        generation = generate_predictions(args.generate_with, questions, request_for, settings)
        predictions.extend(generation.predictions)
        if args.save_predictions:
            write_predictions(generation.predictions, args.save_predictions)
    matched, report = match_predictions(predictions, source.texts)
    if predictions and not report.matched:
        raise UserError(f"none of the {report.read} predictions matches a question of {sorted(source.texts)}")
    return Collected(predictions, matched, report, generation)


def answers_for(item: OpenItem, collected: Collected, extract: Callable[[str], str | None],
                normalize: Callable[[str], str | None]) -> list[tuple[str, str | None]]:
    """(model, answer) per prediction of the item; an already-extracted answer is only normalised."""
    return [(p.model, normalize(p.output) if p.extracted else extract(p.output))
            for p in collected.matched.get((item.split, item.index), [])]


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
