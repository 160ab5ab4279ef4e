"""MATH-MC: MATH as multiple choice, with real models' wrong answers as distractors.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". The gold is
the last boxed expression of the solution; a solution whose boxed answers are not all equivalent is an
ambiguous gold and is excluded. Models' predictions (read from files and/or generated with the 4-shot
Minerva prompt) give one boxed answer each; math-verify, in worker processes under a hard time limit,
decides which answers are equivalent (both ways, or one surface key). Every option, the gold included, is
shown in one normal form (:func:`~builders.math_mc.answers.option_form`), so that no typesetting singles out
the gold. The distinct wrong answers form the question's pool, every two of them proven different; each of K
sets draws N-1 of them and shuffles the options. The validator asks plain math-verify about every pair of
options again (:mod:`builders.math_mc.plain`).

    python -m builders.math_mc --source sample    # the embedded sample and its made-up models' predictions

    python -m builders.math_mc --source ../shared/data/math --predictions ../shared/data/predictions/math_test.jsonl --output out/
"""

from __future__ import annotations

import argparse
import logging
import re
from collections import Counter
from dataclasses import replace
from typing import Sequence

from builders.core.record import Value

from builders.core import api, cli
from builders.core.build import Baseline, Build, Builder
from builders.core.errors import MalformedRow
from builders.core.record import MCQRecord, OpenItem
from builders.core.sources import Benchmark, LoadedSource, RowContext
from builders.core.steps import Exclude, ExclusionLog
from builders.core.tables import Statistics, Table
from builders.gsm_mc.builder import text_field
from builders.from_predictions import collect, sets as mc
from builders.from_predictions.tasks import set_tasks, sets_table
from builders.math_mc.answers import MathEquivalence, boxed_contents, extract_answer, non_answer, option_form
from builders.from_predictions.pools import Candidate, Pool, pool_report
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
EXTRA_METADATA = {"level": Value("string")}


def math_item(row: dict, ctx: RowContext) -> OpenItem:
    """Ids and indices count the rows of a split, the Hub's subject configs concatenated in name order."""
    row_id = f"math/{ctx.split}/{ctx.split_position}"
    problem = text_field(row, "problem", row_id)
    solution = text_field(row, "solution", row_id)
    boxed = gold_boxes(solution)
    if not boxed:
        raise Exclude("no_gold_answer", "solution", "no non-empty \\boxed{} in the solution")
    gold = option_form(boxed[-1])
    alternatives = tuple(dict.fromkeys(option_form(b) for b in boxed if option_form(b) != gold))
    for name in ("type", "level"):  # optional, but a present value must be text (the subject, "Level 3")
        if row.get(name) is not None and not isinstance(row.get(name), str):
            raise MalformedRow(row_id, name, f"not a string: {row.get(name)!r:.40}")
    return OpenItem(row_id, ctx.split, ctx.split_position, problem, gold, boxed[-1], solution, ctx.config,
                    subject=row.get("type"), metadata={"level": row.get("level")}, gold_alternatives=alternatives)


MATH = Benchmark("math", "EleutherAI/hendrycks_math", None, ("train", "test"), math_item, "mit", MATH_CITATION, "MATH",
                 subconfigs=MATH_SUBJECTS, subject_field="type")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = collect.add_distractor_arguments(parser, "MATH-MC distractors", random_allowed=False)
    group.add_argument("--equivalence-timeout", type=cli.positive_float, default=10.0,
                       help="hard wall-clock limit (seconds) of one math-verify comparison; a comparison that "
                            "times out proves nothing, so the candidate is left out")
    parser.set_defaults(splits=["test"])
    cli.runtime_group(parser, "math-verify").add_argument(
        "--equivalence-workers", type=cli.positive_int, default=None, help="math-verify worker processes (default: one per CPU)")


def _extract(output: str) -> str | None:
    answer = extract_answer(output)
    text = option_form(answer) if answer is not None else ""
    return text if text and not non_answer(text) else None


def _extracted(output: str) -> str | None:
    """An answer given already extracted: boxed or not, in the options' normal form."""
    boxed = boxed_contents(output)
    text = option_form(boxed[-1] if boxed else output)
    return text if text and not non_answer(text) else None


_PHANTOM = re.compile(r"\\[hv]?phantom\s*\{[^{}]*\}")


def gold_boxes(solution: str) -> list[str]:
    """The solution's boxed answers with content; a box holding only ``\\phantom{}`` is a blank to fill in
    the text ("-3 = -7 + \\boxed{\\phantom{2}}"), not an answer."""
    return [b for b in boxed_contents(solution) if option_form(_PHANTOM.sub("", b))]


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
        pools, collected, unanswered = model_pools(source, args, all_items, equivalence, gold_exclusions)
        pools, dropped = distinct_pools(pools, equivalence)
    finally:
        equivalence.close()  # every pair validation asks was judged above; a miss would restart workers
    options = mc.SetOptions(NAME, args.choices, args.sets, args.seed, args.draw)
    configs, exclusions = mc.build_sets(items, pools, options, source.dataset, no_predictions=unanswered)
    exclusions.extend(source.exclusions)
    exclusions.extend(gold_exclusions)
    statistics = Statistics([gold_table(source, gold_exclusions, items)])
    statistics.extend(mc.pool_statistics(list(pools.values()), args.choices))
    statistics.extend([distinct_table(dropped), engine_table(equivalence), form_table(configs),
                       mc.position_table(configs)])
    return Build(
        builder=NAME,
        title="MATH-MC",
        method_citation=mc.PAPER_CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features={name: {**mc.METADATA_FEATURES, **EXTRA_METADATA} for name in configs},
        exclusions=exclusions,
        checks=[*mc.make_checks({item.id: item.gold for item in all_items}, equivalence.same, pools),
                one_correct_option_check(args.equivalence_workers, max(10.0, args.equivalence_timeout))],
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()},
        lm_eval_tasks=lambda location: set_tasks(NAME, "high school math", configs, location, by_subject=True),
        baselines=[FORM_CUE],
        card_context=_card_context(args, collected),
    )


DROP_REASONS = ("equivalent to the gold", "equivalent to a kept candidate", "undecided against the gold",
                "undecided against a kept candidate")


def distinct_pools(pools: dict[str, Pool], equivalence: MathEquivalence) -> tuple[dict[str, Pool], Counter]:
    """Each pool with only the candidates that differ from the gold and from every candidate kept before them
    (in rank order): one surface key, or math-verify equal either way, or a comparison that timed out, and the
    candidate is left out (a candidate merely equal to a kept one gives its models to it). The pools' classes
    were compared to one member only; this compares every pair that can be shown together."""
    equivalence.prepare([[pool.gold, *pool.texts] for pool in pools.values()])
    dropped: Counter = Counter()
    result = {}
    for item_id, pool in pools.items():
        kept: list[Candidate] = []
        for candidate in pool.candidates:
            if equivalence.same(pool.gold, candidate.text) or equivalence.undecided(pool.gold, candidate.text):
                dropped[DROP_REASONS[0 if equivalence.same(pool.gold, candidate.text) else 2]] += 1
                continue
            clash = next((i for i, k in enumerate(kept) if equivalence.same(k.text, candidate.text)
                          or equivalence.undecided(k.text, candidate.text)), None)
            if clash is None:
                kept.append(candidate)
                continue
            home = kept[clash]
            if equivalence.same(home.text, candidate.text):
                dropped[DROP_REASONS[1]] += 1
                kept[clash] = Candidate(home.text, tuple(sorted({*home.models, *candidate.models})),
                                        tuple(sorted({*home.variants, candidate.text, *candidate.variants})))
            else:
                dropped[DROP_REASONS[3]] += 1
        result[item_id] = replace(pool, candidates=sorted(kept, key=lambda c: (-c.count, c.text)))
    return result, dropped


def distinct_table(dropped: Counter) -> Table:
    return Table("Second correct options left out", ("candidate", "left out"),
                 [(reason, dropped[reason]) for reason in DROP_REASONS],
                 note="A distractor is kept only when math-verify, asked both ways, calls it different from the gold and "
                      "from every other kept candidate, and its surface key (the normal form with case, spaces and "
                      "`name =` folded) differs from theirs. A comparison that timed out proves nothing and leaves "
                      "the candidate out. The validator asks plain math-verify again about every pair of options.")


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
                    "without) `name =`, `\\text{}`/units, `^\\circ`, `%` or `\\$`", _form_odd_one_out)


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


def model_pools(source: LoadedSource, args: argparse.Namespace, items: list[OpenItem], equivalence: MathEquivalence,
                gold_exclusions: ExclusionLog) -> tuple[dict[str, Pool], collect.Collected, set[str]]:
    """The pools from the predictions, and the items no model answered."""
    collected = collect.collect_predictions(source, args, items, lambda doc: doc.get("problem"),
                                            lambda q: math_request(q, args.max_tokens or 1024), gold_exclusions)
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


def multi_value(gold: str) -> bool:
    """A list of values ("6, -2", "1,3,5"): a comma outside every bracket."""
    depth = 0
    for char in gold:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            return True
    return False


def gold_table(source: LoadedSource, gold_exclusions: ExclusionLog, items: dict[str, list[OpenItem]]) -> Table:
    reasons = source.exclusions.reasons()
    ambiguous = gold_exclusions.reasons()
    rows = []
    for split, count in source.rows_in.items():
        paper = PAPER_GOLD_COUNTS.get(split, ("-", "-"))
        usable = items.get(split, [])
        rows.append((split, count, reasons.get(split, {}).get("no_gold_answer", 0),
                     ambiguous.get(split, {}).get("ambiguous_gold", 0), len(usable),
                     sum(1 for item in usable if multi_value(item.gold)), f"{paper[0]} / {paper[1]}"))
    return Table("Gold answers", ("split", "source rows", "no boxed gold", "ambiguous gold", "usable gold",
                                  "of which multi-value", "paper (usable / rows)"), rows,
                 note="`no boxed gold`: no `\\boxed{}` with content in the normal form (an empty box, `\\text{}`). "
                      "`ambiguous gold`: boxed answers that math-verify does not find equivalent. `multi-value`: "
                      "golds that list several values (\"6, -2\", the roots of an equation); they are kept, since "
                      "math-verify compares them as sets (\"-2, 6\" equals \"6, -2\", \"6\" alone does not). The paper's "
                      "4,914 of 5,000 test golds leave them out: on MATH test, 5,000 less 14 ambiguous and 76 "
                      "multi-value golds is 4,910.")


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
                  llm_models=lambda args: list(args.generate_with), evaluation_table=sets_table)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build MATH-MC from MATH rows in memory (see :mod:`builders.core.api`)."""
    return api.build_dataset(BUILDER, data, **options)
