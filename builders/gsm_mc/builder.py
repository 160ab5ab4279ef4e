"""GSM-MC: GSM8K as multiple choice, with real models' wrong answers as distractors.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". The gold is
the ``#### N`` line of GSM8K's ``answer``. Models' predictions (read from files and/or generated on an
OpenAI-compatible endpoint with the 8-shot chain-of-thought prompt) give one answer each, extracted
and normalised as a number; the distinct wrong numbers form the question's pool. Each of K sets draws
N-1 of them and shuffles the options. ``--distractors random`` is the paper's ablation: random numbers
near the gold instead of models' answers. Wrong answers that are the gold in another unit or rounded are left
out (counted in ``left_out``); items whose key most models contradict are ``suspect_key``
(:mod:`builders.from_predictions.consensus`). ``--benchmark gsm8k_platinum`` reads GSM8K-Platinum, with
predictions made on GSM8K matched by question text.

    python -m builders.gsm_mc --source ../shared/data/gsm8k --predictions ../shared/data/predictions/gsm8k_test.jsonl --output out/
"""

from __future__ import annotations

import argparse
import logging
import math
import re
from collections import Counter
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Sequence

from builders.core.errors import MalformedRow, UserError
from builders.core.items.record import OpenItem, Value
from builders.core.items.tables import Statistics, Table
from builders.core.pipeline import api, cli
from builders.core.build.result import Check
from builders.core.pipeline.legacy import Build, Builder
from builders.core.items.outcomes import Exclude
from builders.core.sources import fields
from builders.core.sources.loading import (
    Benchmark,
    LoadedSource,
    RowContext,
    Selection,
    load_source,
)
from builders.from_predictions import collect, consensus
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import (
    Pool,
    leave_out,
    left_out_counts,
    pool_report,
    pool_rows,
    respell,
)
from builders.from_predictions.tasks import set_tasks, sets_table
from builders.gsm_mc.answers import (
    FLOAT_DIGITS,
    NUMBER,
    UNIT_FACTORS,
    NumericEquivalence,
    extract_answer_text,
    gold_answer,
    is_random_offset,
    is_rounded_gold,
    normalize_number,
    other_unit_values,
    parse_number,
    random_distractors,
    unit_conversions,
    unit_multiple,
)
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
PLATINUM_CITATION = """@article{vendrow2025platinum,
  title={Do Large Language Model Benchmarks Test Reliability?},
  author={Vendrow, Joshua and Vendrow, Edward and Beery, Sara and Madry, Aleksander},
  journal={arXiv preprint arXiv:2502.03461},
  year={2025}
}"""
_GOLD_LINE = re.compile(r"####\s*(.+?)\s*$", re.MULTILINE)
# The whole key line is one number as GSM8K writes it ("1,500", "-3", "$18", "3.5"): "1e999", "1,5" or "12 or 13"
# would otherwise be read by their first number.
_PLAIN_KEY = re.compile(r"\$?\s*(?:" + NUMBER + ")")


def gsm8k_item(row: dict, ctx: RowContext, metadata: dict | None = None) -> OpenItem:
    row_id = f"{ctx.benchmark}/{ctx.split}/{ctx.index}"
    question = fields.text(row, "question", row_id, non_empty=True)
    answer = fields.text(row, "answer", row_id, non_empty=True)
    gold = gold_answer(answer)
    if gold is None:
        raise Exclude("no_gold_answer", "answer", "no '#### N' line with a number")
    gold_text = _GOLD_LINE.findall(answer)[-1]
    if not _PLAIN_KEY.fullmatch(gold_text):
        raise Exclude("gold_not_a_number", "answer", f"'#### {gold_text:.40}' is not one plain number")
    return OpenItem(row_id, ctx.split, ctx.index, question, gold, gold_text, answer, ctx.config,
                    metadata=metadata or {})


# GSM8K-Platinum's ``cleaning_status``, as its dataset card describes it: "consensus" (every model of the
# authors' panel gave the key, so nobody re-read it), "verified" (re-read by hand and kept), "revised" (re-read
# and relabelled or reworded). Questions the authors judged poorly written were removed from the dataset; a
# row that still carries such a status is excluded with it.
PLATINUM_KEPT = ("consensus", "verified", "revised")
PLATINUM_REMOVED = ("removed", "rejected")


def platinum_item(row: dict, ctx: RowContext) -> OpenItem:
    row_id = f"{ctx.benchmark}/{ctx.split}/{ctx.index}"
    status = fields.text(row, "cleaning_status", row_id, non_empty=True).strip().lower()
    if status in PLATINUM_REMOVED:
        raise Exclude("removed_by_platinum", "cleaning_status", f"GSM8K-Platinum marks the question {status!r}")
    if status not in PLATINUM_KEPT:
        raise MalformedRow(row_id, "cleaning_status", f"unknown status {status!r:.40} (expected one of "
                           f"{', '.join(PLATINUM_KEPT + PLATINUM_REMOVED)})")
    return gsm8k_item(row, ctx, {"cleaning_status": status})


def _number_text(extracted: str) -> str | None:
    """An answer given already extracted: its last number, as written."""
    numbers = re.findall(NUMBER, extracted)
    return numbers[-1] if numbers else None


GSM8K = Benchmark(name="gsm8k", hub_id="openai/gsm8k", config="main", splits=("train", "test"), to_item=gsm8k_item,
                  license="mit", citation=GSM8K_CITATION, pretty_name="GSM8K")
GSM8K_PLATINUM = Benchmark(name="gsm8k_platinum", hub_id="madrylab/gsm8k-platinum", config="main", splits=("test",),
                           to_item=platinum_item, license="mit", citation=PLATINUM_CITATION + "\n\n" + GSM8K_CITATION,
                           pretty_name="GSM8K-Platinum",
                           metadata_features={"cleaning_status": Value("string")})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = collect.add_distractor_arguments(parser, "GSM-MC distractors", random_allowed=True, numeric=True)
    group.add_argument("--keep-unit-multiples", action="store_true",
                       help="keep distractors that equal the gold times or divided by 100, 1000, 60 or a conversion "
                            "between units the question names (7 days per week, 12 per dozen, 16 ounces per pound): "
                            "the gold in another unit; they are left out by default")
    consensus.add_arguments(group)
    group.add_argument("--gsm8k-questions", metavar="SPEC", default=None,
                       help="with --benchmark gsm8k_platinum: the GSM8K copy whose test rows the predictions' "
                            "question_index names (default: openai/gsm8k:main); a prediction is matched to "
                            "GSM8K-Platinum by that row's question text")
    parser.set_defaults(splits=["test"])


def check_arguments(args: argparse.Namespace) -> None:
    collect.check_arguments(args)
    if args.gsm8k_questions and args.benchmark != GSM8K_PLATINUM.name:
        raise UserError("--gsm8k-questions is for --benchmark gsm8k_platinum (predictions made on GSM8K)")


@dataclass(frozen=True)
class Options(collect.DistractorOptions):
    """GSM-MC's options, made once from the parsed arguments."""

    keep_unit_multiples: bool
    keep_suspect_keys: bool
    gsm8k_questions: str | None  # the GSM8K copy a GSM8K-Platinum build's predictions name rows of

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(**cls.fields_from(args), keep_unit_multiples=args.keep_unit_multiples,
                   keep_suspect_keys=args.keep_suspect_keys, gsm8k_questions=args.gsm8k_questions)


def random_ok(gold: str, text: str) -> bool:
    """Whether ``text`` is one of the numbers ``--distractors random`` may draw for ``gold``."""
    value, option = parse_number(gold), parse_number(text)
    return option is not None and normalize_number(text) == text and is_random_offset(value, option - value)


UNIT_MULTIPLE, ROUNDED_GOLD = "unit_multiple", "rounded_gold"


def other_form_of_gold(item: OpenItem, keep_unit_multiples: bool):
    """The reason a candidate is the item's gold in another form (``unit_multiple:<conversion>``, or
    ``rounded_gold``: the gold rounded to the candidate's shown decimals), or None."""
    gold = parse_number(item.gold)
    conversions = unit_conversions(item.question)

    def reason(candidate) -> str | None:
        value = parse_number(candidate.text)
        label = None if keep_unit_multiples else unit_multiple(gold, value, conversions)
        if label is not None:
            return f"{UNIT_MULTIPLE}:{label}"
        return ROUNDED_GOLD if is_rounded_gold(gold, candidate.text) else None

    return reason


def build(source: LoadedSource, options: Options) -> Build:
    items = {split: list(split_items) for split, split_items in source.items.items()}
    all_items = [item for split_items in items.values() for item in split_items]
    equivalence = NumericEquivalence()
    set_options = mc.SetOptions(NAME, options.choices, options.sets, options.seed, options.draw, value=float_value)
    pools, collected, statistics, checks = None, None, Statistics(), []
    if options.distractors == "pool":
        pools, collected, unanswered = model_pools(source, options, all_items, equivalence)
        suspects = consensus.suspects(pools)
        statistics = mc.pool_statistics(list(pools.values()), options.choices)
        statistics.add(unit_table(pools.values(), options.keep_unit_multiples))
        statistics.add(consensus.suspect_table(suspects, len(all_items), options.keep_suspect_keys))
        configs, exclusions, outcomes = mc.build_sets(items, pools, set_options, source.dataset, no_predictions=unanswered,
                                            excluded_items=consensus.excluded_items(suspects, options.keep_suspect_keys))
        if not options.keep_suspect_keys:
            checks.append(consensus.no_suspect_check(pool_rows(pools.values())))
    else:
        configs, exclusions, outcomes = mc.build_sets(items, None, set_options, source.dataset,
                                            random_distractors=random_options(options.keep_unit_multiples))
    exclusions.extend(source.exclusions)
    statistics.add(mc.position_table(configs))
    statistics.add(rank_table(configs, options.choices))
    golds = {item.id: item.gold for item in all_items}
    return Build(
        builder=NAME,
        title="GSM-MC" + (" (random distractors)" if options.distractors == "random" else ""),
        method_citation=CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features={name: {**mc.METADATA_FEATURES, **source.benchmark.metadata_features} for name in configs},
        exclusions=exclusions,
        outcomes=outcomes,
        checks=[*mc.make_checks(golds, equivalence.equal, pools, random_ok), one_numeric_gold(golds),
                *([] if options.keep_unit_multiples else [NO_UNIT_MULTIPLE]), NO_ROUNDED_GOLD,
                *([keys_kind_check(pools)] if pools is not None and options.draw == "balanced" else []), *checks],
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()} if pools is not None else {},
        lm_eval_tasks=lambda location: set_tasks(NAME, "grade school math", configs, location),
        card_context=_card_context(options, collected),
    )


def rank_table(configs, choices: int) -> Table:
    """Where the gold sits among its options' values, over all sets: its rank, and how often two no-knowledge
    rules find it ("the option closest to the mean", "an integer option", each tie split evenly)."""
    ranks: Counter = Counter()
    closest = integer = total = 0.0
    for name, splits in configs.items():
        if name == "default":
            continue
        for records in splits.values():
            for record in records:
                values = [float_value(c) for c in record.choices]
                gold = values[record.answer]
                ranks[sum(v < gold for v in values)] += 1
                mean = sum(values) / len(values)
                distances = [abs(v - mean) for v in values]
                nearest = [i for i, d in enumerate(distances) if d == min(distances)]
                closest += (record.answer in nearest) / len(nearest)
                integers = [i for i, v in enumerate(values) if v == int(v)]
                integer += (record.answer in integers) / len(integers) if integers else 1 / len(values)
                total += 1
    total = total or 1
    columns = tuple(f"rank {r + 1}" for r in range(choices))
    return Table("Answer ranks", (*columns, "closest to the mean", "an integer option", "chance"),
                 [(*(ranks[r] / total for r in range(choices)), closest / total, integer / total, 1 / choices)],
                 percent=(*columns, "closest to the mean", "an integer option", "chance"),
                 note="The gold's rank among its options' values (rank 1: the smallest), over all sets, and the accuracy "
                      "of two rules that need no knowledge: pick the option closest to the options' mean; pick one of "
                      "the integer options at random. Beside chance, they show whether the values alone give the gold away.")


def random_options(keep_unit_multiples: bool):
    """``--distractors random``: random numbers near the gold, never the gold in another unit of the question."""
    def draw(item: OpenItem, count: int, rng):
        conversions = [] if keep_unit_multiples else unit_conversions(item.question)
        return random_distractors(item.gold, count, rng, other_unit_values(parse_number(item.gold), conversions))
    return draw


def unit_table(pools, kept: bool) -> Table:
    """Candidates left out as the gold in another form, per conversion (and rounding)."""
    counts = left_out_counts(pools)
    labels = [label for label, _ in unit_conversions("")] + sorted(
        {r.split(":", 1)[1] for r in counts if r.startswith(UNIT_MULTIPLE + ":")} - {str(f) for f in UNIT_FACTORS},
        key=lambda label: int(label.split()[0]))
    rows = [(f"unit: x or / {label}", counts[f"{UNIT_MULTIPLE}:{label}"]) for label in labels]
    rows.append(("the gold rounded to the option's decimals", counts[ROUNDED_GOLD]))
    note = ("Kept (`--keep-unit-multiples`): distractors equal to the gold in another unit stay; only roundings of "
            "the gold are left out." if kept else
            "Distractors equal to the gold times or divided by 100, 1000 or 60 (100 cents for 1 dollar, 0.7 for 70 %), "
            "or by a conversion between units the question names (21 days for 3 weeks, 60 for 5 dozen, 400 ounces "
            "for 25 pounds), are the correct answer in another unit")
    note += ("; a decimal distractor that is the gold rounded to its own decimals (15.59 beside 15.588) is a second "
             "correct answer. These candidates are left out of the options; `pools.jsonl` lists them under "
             "`left_out`, and their models are counted in the Models table.")
    return Table("Correct answers in another form", ("candidate left out", "candidates"), rows, note=note)


# The validator's own reading of the units a question names (apart from answers.question_conversions): each
# unit's words, and the factors of its conversions to the other units of the builder's documented list.
_CHECKED_UNITS = (
    (r"years?|yearly|annual(?:ly)?", (12, 52, 365)), (r"months?|monthly", (12,)), (r"weeks?|weekly", (52, 7, 168)),
    (r"days?|daily", (365, 7, 24, 1440)), (r"hours?|hourly|hrs?", (168, 24, 3600)), (r"minutes?|mins?", (1440,)),
    (r"seconds|secs?", (3600,)), (r"dozens?", (12,)), (r"pounds?|lbs?", (16,)), (r"ounces?|oz", (16,)),
    (r"yards?", (3, 36)), (r"feet|foot|ft", (3, 12)), (r"inch(?:es)?", (36, 12)), (r"gallons?", (4, 8, 16)),
    (r"quarts?", (4,)), (r"pints?", (8,)), (r"cups?", (16, 4)),
)


def _checked_factors(question: str) -> set[int]:
    return {100, 1000, 60} | {factor for words, factors in _CHECKED_UNITS
                              if re.search(rf"\b(?:{words})\b", question, re.IGNORECASE) for factor in factors}


def _other_form_options(build: Build):
    """Re-checked with floats and the validator's own unit reading, apart from the pool filter's exact fractions
    and unit list: no option is the gold ×/÷ a unit factor (the general ones and those of the units the question
    names)."""
    for config, split, records in build.records():
        for record in records:
            factors = _checked_factors(record.question)
            values = [float_value(c) for c in record.choices]
            gold = values[record.answer]
            for index, value in enumerate(values):
                if index != record.answer and gold and any(
                        math.isclose(value, gold * f, rel_tol=1e-12) or math.isclose(value * f, gold, rel_tol=1e-12)
                        for f in factors):
                    yield f"{config}/{split} {record.id}: option {record.choices[index]!r} is the gold {record.gold!r} in another unit"


def _rounded_gold_options(build: Build):
    """With Decimal quantize, apart from the builder's fractions: no decimal option is the gold rounded to the
    option's own decimals (half up or half even)."""
    for config, split, records in build.records():
        for record in records:
            gold = record.choices[record.answer]
            for index, option in enumerate(record.choices):
                if index == record.answer or "." not in option or "/" in option or "/" in gold:
                    continue
                exponent = Decimal(1).scaleb(-len(option.split(".")[1]))
                exact = Decimal(gold)
                if exact != exact.quantize(exponent) and any(
                        exact.quantize(exponent, rounding=mode) == Decimal(option) for mode in (ROUND_HALF_UP, ROUND_HALF_EVEN)):
                    yield f"{config}/{split} {record.id}: option {option!r} is the gold {gold!r} rounded"


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


NO_UNIT_MULTIPLE = Check("no_unit_multiple", "no distractor equals the gold times or divided by 100, 1000, 60 or a "
                         "conversion between units the question names", _other_form_options)
NO_ROUNDED_GOLD = Check("no_rounded_gold", "no decimal distractor is the gold rounded to the distractor's own decimals",
                        _rounded_gold_options)


def keys_kind_check(pools: dict[str, Pool]) -> Check:
    return Check("distractors_of_the_keys_kind", "the balanced draw: every distractor is of the key's kind (an "
                 "integer or not, its sign) where the pool holds enough of that kind",
                 lambda build: _kind_violations(build, pools))


def _kind_violations(build: Build, pools: dict[str, Pool]):
    """With exact fractions, apart from the draw's floats: a distractor of another kind than the key (an integer
    among fractions, a sign) is drawn only when the pool holds too few candidates of the key's kind."""
    def kind(text: str) -> tuple[bool, bool]:
        number = Fraction(text.replace(",", ""))
        return number.denominator == 1, number < 0

    for config, split, records in build.records():
        for record in records:
            key = kind(record.gold)
            alike = sum(kind(c.text) == key for c in pools[record.id].candidates)
            odd = [c for i, c in enumerate(record.choices) if i != record.answer and kind(c) != key]
            if odd and alike >= len(record.choices) - 1:
                yield (f"{config}/{split} {record.id}: {odd} are not of the key {record.gold!r}'s kind, and the pool "
                       f"holds {alike} candidates that are")


def model_pools(source: LoadedSource, options: Options, items: list[OpenItem],
                equivalence: NumericEquivalence) -> tuple[dict[str, Pool], collect.Collected, set[str]]:
    """The pools from the predictions, and the items no model answered."""
    made_on = None
    if source.benchmark.name == GSM8K_PLATINUM.name and options.predictions:
        made_on = (GSM8K.name, lambda: gsm8k_questions(options))
    collected = collect.collect_predictions(source, options, items, lambda doc: doc.get("question"),
                                            lambda q: gsm8k_request(q, options.max_tokens or 512), made_on=made_on)
    answers = {item.id: collect.answers_for(item, collected, extract_answer_text, _number_text) for item in items}
    # Pools see the spellings models wrote, so "1,000" joining "1000" counts as a merge; options show
    # the canonical number. Candidates that are the gold in another form move to the pool's left_out.
    pools = collect.make_pools(items, answers, equivalence)
    pools = {item.id: leave_out(respell(pools[item.id], equivalence.spell),
                                other_form_of_gold(item, options.keep_unit_multiples)) for item in items}
    if options.pool:
        collect.write_pool_report(options.pool, pool_report(pools.values()))
    return pools, collected, {i for i, a in answers.items() if not a}


def gsm8k_questions(options: Options) -> dict[tuple[str, int], str]:
    """GSM8K's test questions by (split, row): what a GSM8K prediction's ``question_index`` names."""
    loaded = load_source(GSM8K, options.gsm8k_questions, seed=options.seed, selection=Selection(splits=("test",)),
                         max_excluded=1.0)
    return {(item.split, item.index): item.question for item in loaded.records()}


def _card_context(options: Options, collected: collect.Collected | None) -> dict:
    return {
        "choices": options.choices, "sets": options.sets, "distractors": options.distractors, "draw": options.draw,
        "keep_unit_multiples": options.keep_unit_multiples, "keep_suspect_keys": options.keep_suspect_keys,
        "float_digits": FLOAT_DIGITS, "platinum": options.benchmark == GSM8K_PLATINUM.name, "gsm8k_questions": options.gsm8k_questions or GSM8K.default_spec,
        **collect.card_context(options, collected),
    }


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [GSM8K, GSM8K_PLATINUM], add_arguments, build, check_arguments,
                  llm_models=lambda options: list(options.generate_with), evaluation_table=sets_table,
                  make_options=Options.from_args)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build GSM-MC from GSM8K rows in memory (see :mod:`builders.core.pipeline.api`)."""
    return api.build_dataset(BUILDER, data, **options)
