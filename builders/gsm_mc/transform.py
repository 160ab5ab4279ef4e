"""GSM-MC's steps (the kernel's, :mod:`builders.from_predictions.steps`), which the core runs over GSM8K's items:
the ``pools`` of models' wrong numbers (a candidate that is the gold in another unit of the question, or the gold
rounded, is left out of its pool, and so is one of another kind than the question's answer or a second rounding of
one value, :mod:`.kinds`), the ``key`` consensus check and the ``distractors`` of every set; with
``--distractors random``, random numbers near the gold instead."""

from __future__ import annotations

import re
from typing import Protocol

from builders.core.items.record import OpenItem
from builders.core.sources.loading import LoadedSource, Selection, load_source
from builders.from_predictions import collect
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import leave_out, pool_report, respell
from builders.from_predictions.steps import MadePools, Pools, set_steps

from .answers import (
    NUMBER,
    NumericEquivalence,
    extract_answer_text,
    is_rounded_gold,
    other_unit_values,
    parse_number,
    random_distractors,
    unit_conversions,
    unit_multiple,
)
from .benchmarks import GSM8K, GSM8K_PLATINUM, NAME
from .kinds import of_the_questions_kind
from .prompts import gsm8k_request


class Settings(Protocol):
    """What the steps read of GSM-MC's options (beside those of :class:`PredictionOptions`)."""

    benchmark: str | None
    predictions: tuple[str, ...]
    seed: int
    choices: int
    sets: int
    draw: str
    distractors: str
    max_tokens: int | None
    pool: object
    keep_unit_multiples: bool
    keep_suspect_keys: bool
    gsm8k_questions: str | None


def _number_text(extracted: str) -> str | None:
    """An answer given already extracted: its last number, as written."""
    numbers = re.findall(NUMBER, extracted)
    return numbers[-1] if numbers else None


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


def random_options(keep_unit_multiples: bool):
    """``--distractors random``: random numbers near the gold, never the gold in another unit of the question."""
    def draw(item: OpenItem, count: int, rng):
        conversions = [] if keep_unit_multiples else unit_conversions(item.question)
        return random_distractors(item.gold, count, rng, other_unit_values(parse_number(item.gold), conversions))
    return draw


def model_pools(source: LoadedSource, options: Settings, items: list[OpenItem],
                equivalence: NumericEquivalence) -> MadePools:
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
    # Then candidates of another kind than the question's answer, or a second rounding of one value (:mod:`.kinds`).
    pools = {item.id: of_the_questions_kind(leave_out(respell(pools[item.id], equivalence.spell),
                                                      other_form_of_gold(item, options.keep_unit_multiples)),
                                            item.question) for item in items}
    if options.pool:
        collect.write_pool_report(options.pool, pool_report(pools.values()))
    return pools, collected, {i for i, a in answers.items() if not a}


def gsm8k_questions(options: Settings) -> dict[tuple[str, int], str]:
    """GSM8K's test questions by (split, row): what a GSM8K prediction's ``question_index`` names."""
    loaded = load_source(GSM8K, options.gsm8k_questions, seed=options.seed, selection=Selection(splits=("test",)),
                         max_excluded=1.0)
    return {(item.split, item.index): item.question for item in loaded.records()}


def steps(source: LoadedSource, options: Settings, equivalence: NumericEquivalence, value) -> tuple[Pools | None, list]:
    """The pools step (None with ``--distractors random``) and every step, in order."""
    set_options = mc.SetOptions(NAME, options.choices, options.sets, options.seed, options.draw, value=value)
    if options.distractors != "pool":
        return None, set_steps(None, set_options, source.dataset, random_options(options.keep_unit_multiples))
    pools = Pools(lambda items: model_pools(source, options, items, equivalence), options.keep_suspect_keys)
    return pools, set_steps(pools, set_options, source.dataset)
