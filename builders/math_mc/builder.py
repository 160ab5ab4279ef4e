"""MATH-MC: MATH as multiple choice, with real models' wrong answers as distractors.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". The gold is
the last boxed expression of the solution; a solution whose boxed answers are not all equivalent is an
ambiguous gold and is excluded. Models' predictions (read from files and/or generated with the 4-shot
Minerva prompt) give one boxed answer each; math-verify, in worker processes under a hard time limit,
decides which answers are equivalent. The distinct wrong answers form the question's pool; each of K
sets draws N-1 of them and shuffles the options.

    python -m builders.math_mc --source ../shared/data/math --predictions ../shared/data/predictions/math_test.jsonl --output out/
"""

from __future__ import annotations

import argparse
import logging
from typing import Sequence

from datasets import Value

from builders.core import api, cli
from builders.core.build import Build, Builder
from builders.core.record import OpenItem
from builders.core.sources import Benchmark, LoadedSource, RowContext
from builders.core.steps import Exclude, ExclusionLog
from builders.core.tables import Statistics, Table
from builders.gsm_mc.builder import text_field
from builders.from_predictions import collect, sets as mc
from builders.math_mc.answers import MathEquivalence, answer_key, boxed_contents, display_form, extract_answer
from builders.from_predictions.pools import Pool, pool_report
from builders.math_mc.prompts import math_request


logger = logging.getLogger(__name__)

NAME = "math_mc"
MATH_CITATION = """@inproceedings{hendrycks2021math,
  title={Measuring Mathematical Problem Solving With the {MATH} Dataset},
  author={Hendrycks, Dan and Burns, Collin and Kadavath, Saurav and Arora, Akul and Basart, Steven and Tang, Eric and Song, Dawn and Steinhardt, Jacob},
  booktitle={NeurIPS Datasets and Benchmarks},
  year={2021}
}"""
MATH_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                 "prealgebra", "precalculus")
# Questions with a usable gold in the paper (Zhang et al., 2024): kept / source rows.
PAPER_GOLD_COUNTS = {"train": ("7.3K", "7.5K"), "test": ("4.9K", "5K")}
EXTRA_METADATA = {"level": Value("string")}


def math_item(row: dict, ctx: RowContext) -> OpenItem:
    """Ids and indices count the rows of a split, the Hub's subject configs concatenated in name order."""
    row_id = f"math/{ctx.split}/{ctx.split_position}"
    problem = text_field(row, "problem", row_id)
    solution = text_field(row, "solution", row_id)
    boxed = [b for b in boxed_contents(solution) if answer_key(b)]
    if not boxed:
        raise Exclude("no_gold_answer", "solution", "no non-empty \\boxed{} in the solution")
    gold = display_form(boxed[-1])
    alternatives = tuple(dict.fromkeys(display_form(b) for b in boxed if answer_key(b) != answer_key(gold)))
    return OpenItem(row_id, ctx.split, ctx.split_position, problem, gold, boxed[-1], solution, ctx.config,
                    subject=row.get("type") if isinstance(row.get("type"), str) else None,
                    metadata={"level": row.get("level") if isinstance(row.get("level"), str) else None},
                    gold_alternatives=alternatives)


MATH = Benchmark("math", "EleutherAI/hendrycks_math", None, ("train", "test"), math_item, "mit", MATH_CITATION, "MATH",
                 subconfigs=MATH_SUBJECTS, subject_field="type")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = collect.add_distractor_arguments(parser, "MATH-MC distractors", random_allowed=False)
    group.add_argument("--equivalence-timeout", type=float, default=5.0,
                       help="hard wall-clock limit (seconds) of one math-verify comparison; a timeout means "
                            "'not equivalent'")
    parser.set_defaults(splits=["test"])
    cli.runtime_group(parser, "math-verify").add_argument(
        "--equivalence-workers", type=int, default=None, help="math-verify worker processes (default: one per CPU)")


def _extract(output: str) -> str | None:
    answer = extract_answer(output)
    return display_form(answer) if answer is not None else None


def _extracted(output: str) -> str | None:
    """An answer given already extracted: boxed or not, in the options' spelling."""
    boxed = boxed_contents(output)
    text = display_form(boxed[-1] if boxed else output)
    return text or None


def drop_ambiguous_golds(items: dict[str, list[OpenItem]], equivalence: MathEquivalence) -> ExclusionLog:
    """Remove (in place) items whose boxed answers are not all equivalent to the gold."""
    exclusions = ExclusionLog()
    equivalence.prepare([[i.gold, *i.gold_alternatives] for s in items.values() for i in s if i.gold_alternatives])
    for split, split_items in items.items():
        kept = []
        for item in split_items:
            differing = [a for a in item.gold_alternatives if not equivalence.same(item.gold, a)]
            if differing:
                exclusions.add(split, item.id, item.index, "gold",
                               Exclude("ambiguous_gold", "solution", f"boxed {differing[0]!r} and {item.gold!r}"))
            else:
                kept.append(item)
        items[split] = kept
    return exclusions


def build(source: LoadedSource, args: argparse.Namespace) -> Build:
    items = {split: list(split_items) for split, split_items in source.items.items()}
    equivalence = MathEquivalence(args.equivalence_workers, args.equivalence_timeout)
    try:
        gold_exclusions = drop_ambiguous_golds(items, equivalence)
        all_items = [item for split_items in items.values() for item in split_items]
        pools, collected, unanswered = model_pools(source, args, all_items, equivalence)
    finally:
        equivalence.close()  # every pair validation asks was judged above; a miss would restart workers
    options = mc.SetOptions(NAME, args.choices, args.sets, args.seed, args.draw)
    configs, exclusions = mc.build_sets(items, pools, options, source.dataset, no_predictions=unanswered)
    exclusions.extend(source.exclusions)
    exclusions.extend(gold_exclusions)
    statistics = Statistics([gold_table(source, gold_exclusions, items)])
    statistics.extend(mc.pool_statistics(list(pools.values()), args.choices))
    statistics.extend([engine_table(equivalence), mc.position_table(configs)])
    return Build(
        builder=NAME,
        title="MATH-MC",
        method_citation=mc.PAPER_CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features={name: {**mc.METADATA_FEATURES, **EXTRA_METADATA} for name in configs},
        exclusions=exclusions,
        checks=mc.make_checks({item.id: item.gold for item in all_items}, equivalence.same, pools),
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()},
        card_context=_card_context(args, collected),
    )


def model_pools(source: LoadedSource, args: argparse.Namespace, items: list[OpenItem],
                equivalence: MathEquivalence) -> tuple[dict[str, Pool], collect.Collected, set[str]]:
    """The pools from the predictions, and the items no model answered."""
    collected = collect.collect_predictions(source, args, items, lambda doc: doc.get("problem"),
                                            lambda q: math_request(q, args.max_tokens or 1024))
    answers = {item.id: collect.answers_for(item, collected, _extract, _extracted) for item in items}
    pools = collect.make_pools(items, answers, equivalence)
    if args.pool:
        collect.write_pool_report(args.pool, pool_report(pools.values()))
    return pools, collected, {i for i, a in answers.items() if not a}


def _card_context(args: argparse.Namespace, collected: collect.Collected) -> dict:
    return {
        "choices": args.choices, "sets": args.sets, "draw": args.draw, "timeout": args.equivalence_timeout,
        **collect.card_context(args, collected),
    }


def gold_table(source: LoadedSource, gold_exclusions: ExclusionLog, items: dict[str, list[OpenItem]]) -> Table:
    reasons = source.exclusions.reasons()
    ambiguous = gold_exclusions.reasons()
    rows = []
    for split, count in source.rows_in.items():
        paper = PAPER_GOLD_COUNTS.get(split, ("-", "-"))
        rows.append((split, count, reasons.get(split, {}).get("no_gold_answer", 0),
                     ambiguous.get(split, {}).get("ambiguous_gold", 0), len(items.get(split, [])),
                     f"{paper[0]} / {paper[1]}"))
    return Table("Gold answers", ("split", "source rows", "no boxed gold", "ambiguous gold", "usable gold",
                                  "paper (usable / rows)"), rows)


def engine_table(equivalence: MathEquivalence) -> Table:
    stats = equivalence.stats
    note = ("math-verify reads every distinct answer in worker processes (plain numbers need no reading); pairs are "
            "judged from the readings alone where the values differ, else by math-verify. Comparisons that hit the "
            "time limit or failed count as not equivalent.")
    if stats.hanging:
        note += " Answers that could not be read or compared in time: " + ", ".join(f"`{a}`" for a in stats.hanging[:10]) + "."
    return Table("Equivalence engine", ("quantity", "count"),
                 [("distinct answers read", stats.answers), ("pairs judged", stats.pairs),
                  ("pairs settled from the readings", stats.prejudged), ("timeouts", stats.timeouts),
                  ("errors", stats.errors), ("pairs skipped (an answer hangs)", stats.skipped)], note=note)


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [MATH], add_arguments, build, collect.check_arguments,
                  llm_models=lambda args: list(args.generate_with))


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build MATH-MC from MATH rows in memory (see :mod:`builders.core.api`)."""
    return api.build_dataset(BUILDER, data, **options)
