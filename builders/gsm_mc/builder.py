"""GSM-MC: GSM8K as multiple choice, with real models' wrong answers as distractors.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". The gold is
the ``#### N`` line of GSM8K's ``answer``. Models' predictions (read from files and/or generated on an
OpenAI-compatible endpoint with the 8-shot chain-of-thought prompt) give one answer each, extracted
and normalised as a number; the distinct wrong numbers form the question's pool. Each of K sets draws
N-1 of them and shuffles the options. ``--distractors random`` is the paper's ablation: random numbers
near the gold instead of models' answers.

    python -m builders.gsm_mc --source ../shared/data/gsm8k --predictions ../shared/data/predictions/gsm8k_test.jsonl --output out/
"""

from __future__ import annotations

import argparse
import logging
import math
import re
from collections import Counter
from dataclasses import replace
from typing import Sequence

from builders.core import api, cli
from builders.core.build import Build, Builder, Check
from builders.core.errors import MalformedRow
from builders.core.record import OpenItem
from builders.core.sources import Benchmark, LoadedSource, RowContext
from builders.core.steps import Exclude
from builders.core.tables import Statistics, Table
from builders.from_predictions import collect, sets as mc
from builders.from_predictions.tasks import set_tasks, sets_table
from builders.gsm_mc.answers import (
    NUMBER, NumericEquivalence, extract_answer_text, gold_answer, normalize_number, parse_number,
    UNIT_FACTORS, is_random_offset, random_distractors, unit_multiple,
)
from builders.from_predictions.pools import Pool, pool_report, respell
from builders.gsm_mc.prompts import gsm8k_request

logger = logging.getLogger(__name__)

NAME = "gsm_mc"
CITATION = mc.PAPER_CITATION
GSM8K_CITATION = """@article{cobbe2021gsm8k,
  title={Training Verifiers to Solve Math Word Problems},
  author={Cobbe, Karl and Kosaraju, Vineet and Bavarian, Mohammad and Chen, Mark and Jun, Heewoo and Kaiser, Lukasz and Plappert, Matthias and Tworek, Jerry and Hilton, Jacob and Nakano, Reiichiro and Hesse, Christopher and Schulman, John},
  journal={arXiv preprint arXiv:2110.14168},
  year={2021}
}"""
_GOLD_LINE = re.compile(r"####\s*(.+?)\s*$", re.MULTILINE)


def text_field(row: dict, name: str, row_id: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise MalformedRow(row_id, name, "missing or not a non-empty string")
    return value


def gsm8k_item(row: dict, ctx: RowContext) -> OpenItem:
    row_id = f"gsm8k/{ctx.split}/{ctx.index}"
    question = text_field(row, "question", row_id)
    answer = text_field(row, "answer", row_id)
    gold = gold_answer(answer)
    if gold is None:
        raise Exclude("no_gold_answer", "answer", "no '#### N' line with a number")
    gold_text = _GOLD_LINE.findall(answer)[-1]
    return OpenItem(row_id, ctx.split, ctx.index, question, gold, gold_text, answer, ctx.config)


def _number_text(extracted: str) -> str | None:
    """An answer given already extracted: its last number, as written."""
    numbers = re.findall(NUMBER, extracted)
    return numbers[-1] if numbers else None


GSM8K = Benchmark("gsm8k", "openai/gsm8k", "main", ("train", "test"), gsm8k_item, "mit", GSM8K_CITATION, "GSM8K")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = collect.add_distractor_arguments(parser, "GSM-MC distractors", random_allowed=True)
    group.add_argument("--keep-unit-multiples", action="store_true",
                       help="keep distractors that equal the gold times or divided by 100, 1000 or 60 (the gold in "
                            "another unit: 100 cents for 1 dollar); they are left out by default")
    parser.set_defaults(splits=["test"])


def random_ok(gold: str, text: str) -> bool:
    """Whether ``text`` is one of the numbers ``--distractors random`` may draw for ``gold``."""
    value, option = parse_number(gold), parse_number(text)
    return option is not None and normalize_number(text) == text and is_random_offset(value, option - value)


def without_unit_multiples(pool: Pool) -> tuple[Pool, Counter]:
    """The pool without the candidates that are the gold in another unit, and how many per factor."""
    gold = parse_number(pool.gold)
    dropped: Counter = Counter()
    kept = []
    for candidate in pool.candidates:
        factor = unit_multiple(gold, parse_number(candidate.text))
        if factor is None:
            kept.append(candidate)
        else:
            dropped[factor] += 1
    return replace(pool, candidates=kept), dropped


def build(source: LoadedSource, args: argparse.Namespace) -> Build:
    items = {split: list(split_items) for split, split_items in source.items.items()}
    all_items = [item for split_items in items.values() for item in split_items]
    equivalence = NumericEquivalence()
    options = mc.SetOptions(NAME, args.choices, args.sets, args.seed, args.draw)
    pools, collected, statistics = None, None, Statistics()
    if args.distractors == "pool":
        pools, collected, unanswered = model_pools(source, args, all_items, equivalence)
        dropped: Counter = Counter()
        if not args.keep_unit_multiples:
            for item_id, pool in pools.items():
                pools[item_id], counts = without_unit_multiples(pool)
                dropped.update(counts)
        statistics = mc.pool_statistics(list(pools.values()), args.choices)
        statistics.add(unit_table(dropped, args.keep_unit_multiples))
        configs, exclusions = mc.build_sets(items, pools, options, source.dataset, no_predictions=unanswered)
    else:
        configs, exclusions = mc.build_sets(items, None, options, source.dataset,
                                            random_distractors=lambda item, n, rng: random_distractors(item.gold, n, rng))
    exclusions.extend(source.exclusions)
    statistics.add(mc.position_table(configs))
    golds = {item.id: item.gold for item in all_items}
    return Build(
        builder=NAME,
        title="GSM-MC" + (" (random distractors)" if args.distractors == "random" else ""),
        method_citation=CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features={name: mc.METADATA_FEATURES for name in configs},
        exclusions=exclusions,
        checks=[*mc.make_checks(golds, equivalence.equal, pools, random_ok), one_numeric_gold(golds),
                *([] if args.keep_unit_multiples else [NO_UNIT_MULTIPLE])],
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()} if pools is not None else {},
        lm_eval_tasks=lambda location: set_tasks(NAME, "grade school math", configs, location),
        card_context=_card_context(args, collected),
    )


def unit_table(dropped: Counter, kept: bool) -> Table:
    note = ("Kept (`--keep-unit-multiples`): distractors equal to the gold times or divided by these factors stay."
            if kept else "Distractors equal to the gold times or divided by the factor (the correct answer in another "
            "unit: 100 cents for 1 dollar, 0.7 for 70 %) are left out of the pools; these were dropped.")
    return Table("Correct answers in another unit", ("factor", "distractors dropped"),
                 [(factor, 0 if kept else dropped[factor]) for factor in UNIT_FACTORS], note=note)


def _unit_multiple_options(build: Build):
    """Re-checked with floats, apart from the pool filter's exact fractions: no option is the gold ×/÷ 100, 1000, 60."""
    for config, split, records in build.records():
        for record in records:
            values = [float_value(c) for c in record.choices]
            gold = values[record.answer]
            for index, value in enumerate(values):
                if index != record.answer and gold and any(
                        math.isclose(value, gold * f, rel_tol=1e-12) or math.isclose(value * f, gold, rel_tol=1e-12)
                        for f in (100, 1000, 60)):
                    yield f"{config}/{split} {record.id}: option {record.choices[index]!r} is the gold {record.gold!r} in another unit"


def float_value(text: str) -> float:
    """An option's value as a float: the checks' own reading, apart from the builder's exact equivalence."""
    if "/" in text:
        numerator, denominator = text.split("/")
        return float(numerator) / float(denominator)
    return float(text.replace(",", ""))


def one_numeric_gold(golds: dict[str, str]) -> Check:
    return mc.second_reading_check(
        "one_numeric_gold", "with floats, apart from the builder's exact equivalence", golds,
        lambda a, b: math.isclose(float_value(a), float_value(b), rel_tol=1e-12, abs_tol=1e-12))


NO_UNIT_MULTIPLE = Check("no_unit_multiple", "no distractor equals the gold times or divided by 100, 1000 or 60",
                         _unit_multiple_options)


def model_pools(source: LoadedSource, args: argparse.Namespace, items: list[OpenItem],
                equivalence: NumericEquivalence) -> tuple[dict[str, Pool], collect.Collected, set[str]]:
    """The pools from the predictions, and the items no model answered."""
    collected = collect.collect_predictions(source, args, items, lambda doc: doc.get("question"),
                                            lambda q: gsm8k_request(q, args.max_tokens or 512))
    answers = {item.id: collect.answers_for(item, collected, extract_answer_text, _number_text) for item in items}
    # Pools see the spellings models wrote, so "1,000" joining "1000" counts as a merge; options show
    # the canonical number.
    pools = {i: respell(pool, equivalence.spell) for i, pool in collect.make_pools(items, answers, equivalence).items()}
    if args.pool:
        collect.write_pool_report(args.pool, pool_report(pools.values()))
    return pools, collected, {i for i, a in answers.items() if not a}


def _card_context(args: argparse.Namespace, collected: collect.Collected | None) -> dict:
    return {
        "choices": args.choices, "sets": args.sets, "distractors": args.distractors, "draw": args.draw,
        "keep_unit_multiples": args.keep_unit_multiples,
        **collect.card_context(args, collected),
    }


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [GSM8K], add_arguments, build, collect.check_arguments,
                  llm_models=lambda args: list(args.generate_with), evaluation_table=sets_table)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build GSM-MC from GSM8K rows in memory (see :mod:`builders.core.api`)."""
    return api.build_dataset(BUILDER, data, **options)
