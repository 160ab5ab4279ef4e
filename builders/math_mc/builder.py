"""MATH-MC: MATH as multiple choice, with real models' wrong answers as distractors.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". The gold is
the last boxed expression of the solution; a solution whose boxed answers are not all equivalent is an
ambiguous gold and is excluded. Models' predictions (read from files and/or generated with the 4-shot
Minerva prompt) give one boxed answer each; math-verify, in worker processes under a hard time limit,
decides which answers are equivalent (both ways, or one surface key). Every option, the gold included, is
shown in one normal form (:func:`~builders.math_mc.forms.option_form`), so that no typesetting singles out
the gold; a wrong answer that is not of the gold's kind (:func:`~builders.math_mc.forms.kind_mismatch`) or is
the gold rounded is left out, and a gold that names lettered choices excludes its problem. The distinct wrong
answers form the question's pool, every two of them proven different; each of K sets draws N-1 of them and
shuffles the options. The validator asks plain math-verify about every pair of options again
(:mod:`builders.math_mc.plain`) and checks the options' form with plain regular expressions
(:mod:`builders.math_mc.option_checks`).

    python -m builders.math_mc --source sample    # the embedded sample and its made-up models' predictions

    python -m builders.math_mc --source ../shared/data/math --predictions ../shared/data/predictions/math_test.jsonl --output out/
"""

from __future__ import annotations

import argparse
import cmath
import logging
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from typing import Sequence

from builders.core.items.record import MCQRecord, OpenItem, Value
from builders.core.items.tables import Statistics, Table
from builders.core.pipeline import api, cli, legacy
from builders.core.options import argtypes
from builders.core.build.result import Baseline
from builders.core.pipeline.legacy import Build, Builder, run_steps
from builders.core.items.outcomes import Exclude, ExclusionLog
from builders.core.sources import fields
from builders.core.sources.loading import Benchmark, LoadedSource, RowContext
from builders.core.validation.audit import only_two_options
from builders.from_predictions import collect, consensus, sets as mc
from builders.from_predictions.pools import Candidate, Pool, pool_report, pool_rows
from builders.from_predictions.tasks import set_tasks, sets_table
from builders.math_mc.equivalence import MathEquivalence
from builders.math_mc.forms import (
    KIND_REASONS,
    boxed_contents,
    decimal_places,
    extract_answer,
    kind_mismatch,
    letter_answer,
    non_answer,
    option_form,
)
from builders.math_mc.option_checks import option_form_checks
from builders.math_mc.plain import one_correct_option_check
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
PAPER_TEST_GOLDS = (4914, 5000)  # the paper's exact count for MATH test: usable golds, rows
EXTRA_METADATA = {"level": Value("string")}


def math_item(row: dict, ctx: RowContext) -> OpenItem:
    """Ids and indices count the rows of a split, the Hub's subject configs concatenated in name order."""
    row_id = f"math/{ctx.split}/{ctx.split_position}"
    problem = fields.text(row, "problem", row_id, non_empty=True)
    solution = fields.text(row, "solution", row_id, non_empty=True)
    boxed = gold_boxes(solution)
    if not boxed:
        raise Exclude("no_gold_answer", "solution", "no non-empty \\boxed{} in the solution")
    gold = option_form(boxed[-1])
    if letter_answer(gold):
        raise Exclude("letter_answer", "solution", f"the answer {gold!r} names lettered choices, which the release's "
                      "own option letters would confuse")
    alternatives = tuple(dict.fromkeys(option_form(b) for b in boxed if option_form(b) != gold))
    for name in ("type", "level"):  # optional, but a present value must be text (the subject, "Level 3")
        fields.optional_text(row, name, row_id)
    return OpenItem(row_id, ctx.split, ctx.split_position, problem, gold, boxed[-1], solution, ctx.config,
                    subject=row.get("type"), metadata={"level": row.get("level")}, gold_alternatives=alternatives)


MATH = Benchmark(name="math", hub_id="EleutherAI/hendrycks_math", config=None, splits=("train", "test"),
                 to_item=math_item, license="mit", citation=MATH_CITATION, pretty_name="MATH",
                 subconfigs=MATH_SUBJECTS, subject_field="type")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = collect.add_distractor_arguments(parser, "MATH-MC distractors", random_allowed=False)
    group.add_argument("--equivalence-timeout", type=argtypes.seconds, default=10.0,
                       help="hard wall-clock limit (seconds) of one math-verify comparison; a comparison that "
                            "times out proves nothing, so the candidate is left out")
    consensus.add_arguments(group)
    parser.set_defaults(splits=["test"])
    legacy.runtime_group(parser, "math-verify").add_argument(
        "--equivalence-workers", type=argtypes.positive_int, default=None, help="math-verify worker processes (default: one per CPU)")


@dataclass(frozen=True)
class Options(collect.DistractorOptions):
    """MATH-MC's options, made once from the parsed arguments."""

    keep_suspect_keys: bool
    equivalence_timeout: float  # seconds math-verify may take on one comparison
    equivalence_workers: int | None  # math-verify's worker processes (None: as many as CPUs)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(**cls.fields_from(args), keep_suspect_keys=args.keep_suspect_keys,
                   equivalence_timeout=args.equivalence_timeout, equivalence_workers=args.equivalence_workers)


def _extract(output: str, key: str | None = None) -> str | None:
    """A model's answer in the options' normal form beside ``key``; None for no answer."""
    answer = extract_answer(output)
    text = option_form(answer, key) if answer is not None else ""
    return text if text and not non_answer(text) else None


def _extracted(output: str, key: str | None = None) -> str | None:
    """An answer given already extracted: boxed or not, in the options' normal form beside ``key``."""
    boxed = boxed_contents(output)
    text = option_form(boxed[-1] if boxed else output, key)
    return text if text and not non_answer(text) else None


_PHANTOM = re.compile(r"\\[hv]?phantom\s*\{[^{}]*\}")


def gold_boxes(solution: str) -> list[str]:
    """The solution's boxed answers with content; a box holding only ``\\phantom{}`` is a blank to fill in
    the text ("-3 = -7 + \\boxed{\\phantom{2}}"), not an answer."""
    return [b for b in boxed_contents(solution) if option_form(_PHANTOM.sub("", b))]


def drop_ambiguous_golds(items: dict[str, list[OpenItem]], equivalence: MathEquivalence) -> ExclusionLog:
    """Remove (in place) items whose boxed answers are not all equivalent to the gold. What becomes of the
    others is counted once, by the sets' steps (:func:`~builders.from_predictions.sets.build_sets`)."""
    exclusions = ExclusionLog()
    equivalence.prepare([[i.gold, *i.gold_alternatives] for s in items.values() for i in s if i.gold_alternatives])

    def unambiguous_gold(item: OpenItem) -> OpenItem:
        differing = [a for a in item.gold_alternatives if not equivalence.same(item.gold, a)]
        if differing:
            raise Exclude("ambiguous_gold", "solution", f"boxed {differing[0]!r} and {item.gold!r}")
        return item

    kept, _ = run_steps(items, [("gold", unambiguous_gold)], exclusions=exclusions)
    items.update(kept)
    return exclusions


def build(source: LoadedSource, options: Options) -> Build:
    items = {split: list(split_items) for split, split_items in source.items.items()}
    equivalence = MathEquivalence(options.equivalence_workers, options.equivalence_timeout)
    try:
        gold_exclusions = drop_ambiguous_golds(items, equivalence)
        all_items = [item for split_items in items.values() for item in split_items]
        pools, collected, unanswered = model_pools(source, options, all_items, equivalence, gold_exclusions)
        pools, dropped = distinct_pools(pools, equivalence)
    finally:
        equivalence.close()  # every pair validation asks was judged above; a miss would restart workers
    set_options = mc.SetOptions(NAME, options.choices, options.sets, options.seed, options.draw)
    suspects = consensus.suspects(pools)
    configs, exclusions, outcomes = mc.build_sets(items, pools, set_options, source.dataset, no_predictions=unanswered,
                                        excluded_items=consensus.excluded_items(suspects, options.keep_suspect_keys))
    exclusions.extend(source.exclusions)
    exclusions.extend(gold_exclusions)
    golds = gold_counts(source, gold_exclusions, items)
    statistics = Statistics([gold_table(golds)])
    statistics.extend(mc.pool_statistics(list(pools.values()), options.choices))
    statistics.extend([distinct_table(dropped), engine_table(equivalence), form_table(configs),
                       mc.position_table(configs),
                       consensus.suspect_table(suspects, len(all_items), options.keep_suspect_keys)])
    return Build(
        builder=NAME,
        title="MATH-MC",
        method_citation=mc.PAPER_CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features={name: {**mc.METADATA_FEATURES, **EXTRA_METADATA} for name in configs},
        exclusions=exclusions,
        outcomes=outcomes,
        checks=[*mc.make_checks({item.id: item.gold for item in all_items}, equivalence.same, pools),
                one_correct_option_check(options.equivalence_workers, max(10.0, options.equivalence_timeout)),
                *option_form_checks(),
                *([] if options.keep_suspect_keys else [consensus.no_suspect_check(pool_rows(pools.values()))])],
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()},
        lm_eval_tasks=lambda location: set_tasks(NAME, "high school math", configs, location, by_subject=True),
        baselines=[FORM_CUE, FORM_CUE_MIRROR],
        card_context={**_card_context(options, collected), "gold_counts": golds},
    )


ROUNDED = "the gold rounded to its decimals (or the gold a rounding of it)"
DROP_REASONS = (*KIND_REASONS.values(), "equivalent to the gold", "undecided against the gold", ROUNDED,
                "equivalent to a kept candidate", "undecided against a kept candidate")


def distinct_pools(pools: dict[str, Pool], equivalence: MathEquivalence) -> tuple[dict[str, Pool], Counter]:
    """Each pool with only the candidates that can stand beside the gold (:func:`unfit_beside_gold`) and differ
    from every candidate kept before them (in rank order): one surface key, or math-verify equal either way, or a
    comparison that timed out, and the candidate is left out (a candidate merely equal to a kept one gives its
    models to it). The pools' classes were compared to one member only; this compares every pair that can be
    shown together."""
    equivalence.prepare([[pool.gold, *pool.texts] for pool in pools.values()])
    dropped: Counter = Counter()
    result = {}
    for item_id, pool in pools.items():
        kept: list[Candidate] = []
        for candidate in pool.candidates:
            unfit = unfit_beside_gold(pool.gold, candidate.text, equivalence)
            if unfit:
                dropped[unfit] += 1
                continue
            clash = next((i for i, k in enumerate(kept) if equivalence.same(k.text, candidate.text)
                          or equivalence.undecided(k.text, candidate.text)), None)
            if clash is None:
                kept.append(candidate)
                continue
            home = kept[clash]
            if equivalence.same(home.text, candidate.text):
                dropped[DROP_REASONS[-2]] += 1
                kept[clash] = Candidate(home.text, tuple(sorted({*home.models, *candidate.models})),
                                        tuple(sorted({*home.variants, candidate.text, *candidate.variants})))
            else:
                dropped[DROP_REASONS[-1]] += 1
        result[item_id] = replace(pool, candidates=sorted(kept, key=lambda c: (-c.count, c.text)))
    return result, dropped


def unfit_beside_gold(gold: str, text: str, equivalence: MathEquivalence) -> str | None:
    """Why ``text`` can be no distractor of ``gold``, whatever else is shown: not an answer of the gold's kind
    (:func:`~builders.math_mc.forms.kind_mismatch`), the gold itself or not shown to differ from it, or the
    gold rounded; None when it can."""
    kind = kind_mismatch(text, gold)
    if kind is not None:
        return KIND_REASONS[kind]
    if equivalence.same(gold, text):
        return "equivalent to the gold"
    if equivalence.undecided(gold, text):
        return "undecided against the gold"
    return ROUNDED if rounds_to_gold(gold, text, equivalence) else None


def rounds_to_gold(gold: str, text: str, equivalence: MathEquivalence) -> bool:
    """One of the two is a plain decimal and the other's value rounded to its decimals (``0.377`` beside
    ``\\frac{193}{512}``): a reader who computed either would call both correct."""
    for decimal, other in ((text, gold), (gold, text)):
        places, value = decimal_places(decimal), equivalence.value(other)
        if places is None or value is None or cmath.isinf(value) or abs(value.imag) > 1e-12:
            continue
        if abs(float(decimal) - value.real) <= 0.5 * 10 ** -places * (1 + 1e-9):
            return True
    return False


def distinct_table(dropped: Counter) -> Table:
    return Table("Candidates left out", ("candidate", "left out"),
                 [(reason, dropped[reason]) for reason in DROP_REASONS],
                 note="A model's wrong answer is a distractor only when it is an answer of the gold's kind (no bare "
                      "letter; an equation or words only beside a gold that is one; no variable the gold lacks), when "
                      "math-verify, asked both ways, calls it different from the gold and from every other kept "
                      "candidate, when its surface key (the normal form with case, spaces and `name =` folded) "
                      "differs from theirs, and when it is not the gold rounded to its own decimals. A comparison "
                      "that timed out proves nothing and leaves the candidate out. The validator asks plain "
                      "math-verify again about every pair of options.")


# ---- surface form: what singles out an option without reading the problem --------------------------

FORM_FEATURES = {
    "equation": re.compile(r"(?<![<>\\!])=(?!=)"),
    "text or units": re.compile(r"\\(?:text|mbox|mathrm|textbf)\b|\d\s*(?:cm|m|km|in|ft|feet|inches|units|"
                                       r"degrees|dollars|cents|meters|miles|hours|minutes|seconds)\b"),
    "degrees": re.compile(r"\\circ|\\degree|°"),
    "percent": re.compile(r"%"),
    "dollar": re.compile(r"\\\$|^\$"),
}


def form_marks(text: str) -> frozenset[str]:
    return frozenset(name for name, pattern in FORM_FEATURES.items() if pattern.search(text))


def form_cue(record: MCQRecord) -> str | None:
    """The mark that sets the gold apart from every distractor (it alone has it, or it alone lacks it)."""
    marks = [form_marks(c) for c in record.choices]
    gold = marks[record.answer]
    others = [m for i, m in enumerate(marks) if i != record.answer]
    for name in FORM_FEATURES:
        if others and all((name in gold) != (name in m) for m in others):
            return name
    return None


def _form_odd_one_out(record: MCQRecord) -> int | None:
    """Pick the one option that carries a mark no other option has, or (3 options or more) the one option
    that lacks a mark all others have."""
    marks = [form_marks(c) for c in record.choices]
    for name in FORM_FEATURES:
        having = [i for i, m in enumerate(marks) if name in m]
        if len(having) == 1:
            return having[0]
        if len(marks) >= 3 and len(having) == len(marks) - 1:
            return next(i for i, m in enumerate(marks) if name not in m)
    return None


FORM_CUE = Baseline("form_cue", "the one option whose typesetting differs: alone with (or, from 3 options, alone "
                    "without) `name =`, `\\text{}`/units, `^\\circ`, `%` or `\\$`", _form_odd_one_out,
                    mirror="form_cue_mirror")
FORM_CUE_MIRROR = Baseline("form_cue_mirror", "in a 2-option item where `form_cue` applies, the other option",
                           only_two_options(_form_odd_one_out), mirror="form_cue")


def form_table(configs) -> Table:
    rows = []
    for config, splits in configs.items():
        if config == "default":
            continue
        for split, records in splits.items():
            cues = Counter(form_cue(r) for r in records)
            with_cue = sum(n for name, n in cues.items() if name is not None)
            rows.append((config, split, len(records), *(cues[name] for name in FORM_FEATURES), with_cue,
                         with_cue / len(records) if records else 0.0))
    return Table("Surface-form cues", ("config", "split", "items", *FORM_FEATURES, "items with a cue", "share"), rows,
                 note="Items whose gold alone carries (or alone lacks) a typesetting mark, per mark. Every option, the "
                      "gold included, is shown in one normal form (no `\\text{}`, units, `^\\circ`, `%`, `\\$`, or "
                      "`name =` before a value), so what remains is part of the answer itself (an equation, an "
                      "angle inside an expression). The shortcut audit reports the `form_cue` baseline.",
                 percent=("share",))


def model_pools(source: LoadedSource, options: Options, items: list[OpenItem], equivalence: MathEquivalence,
                gold_exclusions: ExclusionLog) -> tuple[dict[str, Pool], collect.Collected, set[str]]:
    """The pools from the predictions, and the items no model answered."""
    collected = collect.collect_predictions(source, options, items, lambda doc: doc.get("problem"),
                                            lambda q: math_request(q, options.max_tokens or 1024), gold_exclusions)
    answers = {item.id: collect.answers_for(item, collected, partial(_extract, key=item.gold),
                                            partial(_extracted, key=item.gold)) for item in items}
    pools = collect.make_pools(items, answers, equivalence)
    if options.pool:
        collect.write_pool_report(options.pool, pool_report(pools.values()))
    return pools, collected, {i for i, a in answers.items() if not a}


def _card_context(options: Options, collected: collect.Collected) -> dict:
    return {
        "choices": options.choices, "sets": options.sets, "draw": options.draw, "timeout": options.equivalence_timeout,
        "paper_test_golds": PAPER_TEST_GOLDS, **collect.card_context(options, collected),
    }


def multi_value(gold: str) -> bool:
    """A list of values ("6, -2", "1,3,5"): a comma outside every bracket."""
    depth = 0
    for char in gold:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            return True
    return False


def gold_counts(source: LoadedSource, gold_exclusions: ExclusionLog, items: dict[str, list[OpenItem]]) -> list[dict]:
    """Per split of this build: source rows, and the golds missing, lettered, ambiguous, usable and multi-value."""
    reasons = source.exclusions.reasons()
    ambiguous = gold_exclusions.reasons()
    counts = []
    for split, rows in source.rows_in.items():
        usable = items.get(split, [])
        multi = sum(1 for item in usable if multi_value(item.gold))
        ambiguous_golds = ambiguous.get(split, {}).get("ambiguous_gold", 0)
        counts.append({"split": split, "rows": rows, "no_gold": reasons.get(split, {}).get("no_gold_answer", 0),
                       "letter": reasons.get(split, {}).get("letter_answer", 0), "ambiguous": ambiguous_golds,
                       "usable": len(usable), "multi_value": multi, "single_value": rows - ambiguous_golds - multi})
    return counts


def gold_table(counts: list[dict]) -> Table:
    rows = [(c["split"], c["rows"], c["no_gold"], c["letter"], c["ambiguous"], c["usable"], c["multi_value"],
             "{} / {}".format(*PAPER_GOLD_COUNTS.get(c["split"], ("-", "-")))) for c in counts]
    without_lists = "; ".join(f"{c['split']}: {c['rows']:,} rows less {c['ambiguous']:,} ambiguous and "
                              f"{c['multi_value']:,} multi-value golds is {c['single_value']:,}" for c in counts)
    return Table("Gold answers", ("split", "source rows", "no boxed gold", "letter answer", "ambiguous gold",
                                  "usable gold", "of which multi-value", "paper (usable / rows)"), rows,
                 note="`no boxed gold`: no `\\boxed{}` with content in the normal form (an empty box, `\\text{}`). "
                      "`letter answer`: the answer names lettered choices of the problem (\"(C)\", \"A, D\"), which "
                      "the release's own option letters would confuse. `ambiguous gold`: boxed answers that "
                      "math-verify does not find equivalent. `multi-value`: golds that list several values (\"6, -2\", "
                      "the roots of an equation); they are kept, since math-verify compares them as sets (\"-2, 6\" "
                      "equals \"6, -2\", \"6\" alone does not). Leaving them out, as the paper may have: "
                      f"{without_lists}.")


def engine_table(equivalence: MathEquivalence) -> Table:
    stats = equivalence.stats
    note = ("math-verify reads every distinct answer in worker processes (plain numbers need no reading); pairs are "
            "judged from the readings alone where two symbol-free values differ, else by math-verify (both ways). "
            "Comparisons that hit the time limit or failed prove nothing: such a candidate is never shown beside "
            "the answer it could not be compared with.")
    if stats.hanging:
        note += " Answers that could not be read or compared in time: " + ", ".join(f"`{a}`" for a in stats.hanging[:10]) + "."
    return Table("Equivalence engine", ("quantity", "count"),
                 [("distinct answers read", stats.answers), ("pairs judged", stats.pairs),
                  ("pairs settled from the readings", stats.prejudged), ("timeouts", stats.timeouts),
                  ("errors", stats.errors), ("pairs skipped (an answer hangs)", stats.skipped)], note=note)


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [MATH], add_arguments, build, collect.check_arguments,
                  llm_models=lambda options: list(options.generate_with), evaluation_table=sets_table,
                  make_options=Options.from_args)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build MATH-MC from MATH rows in memory (see :mod:`builders.core.pipeline.api`)."""
    return api.build_dataset(BUILDER, data, **options)
