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
import re
from typing import Sequence

from builders.core import cli
from builders.core.build import Build
from builders.core.adapters import RowContext
from builders.core.steps import Exclude
from builders.from_predictions import collect, sets as mc
from builders.gsm_mc.answers import (
    NUMBER, NumericEquivalence, extract_answer_text, gold_answer, normalize_number, parse_number,
    random_distractors, random_offsets,
)
from builders.from_predictions.pools import Pool, pool_report, respell
from builders.gsm_mc.prompts import gsm8k_request
from builders.from_predictions.sources import OpenEndedSource, OpenItem, load_open_ended, open_benchmark, text_field

logger = logging.getLogger(__name__)

NAME = "gsm_mc"
CITATION = mc.PAPER_CITATION
GSM8K_CITATION = """@article{cobbe2021gsm8k,
  title={Training Verifiers to Solve Math Word Problems},
  author={Cobbe, Karl and Kosaraju, Vineet and Bavarian, Mohammad and Chen, Mark and Jun, Heewoo and Kaiser, Lukasz and Plappert, Matthias and Tworek, Jerry and Hilton, Jacob and Nakano, Reiichiro and Hesse, Christopher and Schulman, John},
  journal={arXiv preprint arXiv:2110.14168},
  year={2021}
}"""
GSM8K = open_benchmark("gsm8k", "openai/gsm8k", "main", ("train", "test"), "mit", GSM8K_CITATION, "GSM8K")
_GOLD_LINE = re.compile(r"####\s*(.+?)\s*$", re.MULTILINE)


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


def load_source(args: argparse.Namespace) -> OpenEndedSource:
    return load_open_ended(GSM8K, gsm8k_item, args.source, args.splits, "question", strict=args.strict)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    collect.add_distractor_arguments(parser, "GSM-MC distractors", random_allowed=True)


def random_ok(gold: str, text: str) -> bool:
    """Whether ``text`` is one of the numbers ``--distractors random`` may draw for ``gold``."""
    value, option = parse_number(gold), parse_number(text)
    return option is not None and normalize_number(text) == text and (option - value) in random_offsets(value)


def build(source: OpenEndedSource, args: argparse.Namespace) -> Build:
    collect.check_arguments(args)
    items = {split: list(split_items) for split, split_items in source.items.items()}
    all_items = [item for split_items in items.values() for item in split_items]
    equivalence = NumericEquivalence()
    options = mc.SetOptions(NAME, args.choices, args.sets, args.seed, args.draw)
    pools, collected, statistics = None, None, {}
    if args.distractors == "pool":
        pools, collected, unanswered = model_pools(source, args, all_items, equivalence)
        statistics = mc.pool_statistics(list(pools.values()), args.choices)
        configs, exclusions = mc.build_sets(items, pools, options, source.dataset, no_predictions=unanswered)
    else:
        configs, exclusions = mc.build_sets(items, None, options, source.dataset,
                                            random_distractors=lambda item, n, rng: random_distractors(item.gold, n, rng))
    exclusions.extend(source.exclusions)
    statistics["Answer positions over all sets"] = mc.position_table(configs)
    return Build(
        builder=NAME,
        title="GSM-MC" + (" (random distractors)" if args.distractors == "random" else ""),
        method_citation=CITATION,
        source=source,
        params=collect.recorded(cli.recorded_params(args)),
        configs=configs,
        metadata_features={name: mc.METADATA_FEATURES for name in configs},
        exclusions=exclusions,
        checks=mc.make_checks({item.id: item.gold for item in all_items}, equivalence.equal, pools, random_ok),
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()} if pools is not None else {},
        card_context=_card_context(args, collected),
    )


def model_pools(source: OpenEndedSource, args: argparse.Namespace, items: list[OpenItem],
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
        **collect.card_context(args, collected),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.builder_parser("python -m builders.gsm_mc", __doc__.split("\n\n")[0], ["gsm8k"], "gsm8k")
    add_arguments(parser)
    return cli.main(parser, build, argv, load_source=load_source)

