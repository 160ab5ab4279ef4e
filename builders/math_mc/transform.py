"""MATH-MC's steps, which the core runs over MATH's items:

1. ``gold``, across the items (math-verify reads every boxed answer at once): a solution whose boxed answers are
   not all equivalent is an ambiguous gold, and its problem is excluded;
2. the kernel's (:mod:`builders.from_predictions.steps`): the ``pools`` of models' wrong answers, each candidate
   proven different from the gold and from every other kept candidate (:func:`distinct_pools`), the ``key``
   consensus check and the ``distractors`` of every set.

Each step object keeps what the card reports of it.
"""

from __future__ import annotations

import cmath
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from builders.core.items.outcomes import Exclude, ExclusionLog
from builders.core.items.record import OpenItem
from builders.core.pipeline.steps import Across, Step
from builders.core.sources.loading import LoadedSource
from builders.from_predictions import collect
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import Candidate, Pool, pool_report
from builders.from_predictions.steps import MadePools, Pools, set_steps

from .benchmarks import NAME
from .equivalence import MathEquivalence
from .forms import KIND_REASONS, boxed_contents, decimal_places, extract_answer, kind_mismatch, non_answer, option_form
from .prompts import math_request


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


class Golds:
    """The ``gold`` step: an item whose boxed answers are not all equivalent to its gold is excluded; then the
    ``excluded`` (a log of them) and the items ``kept`` per split."""

    def __init__(self, equivalence: MathEquivalence):
        self.equivalence = equivalence
        self.excluded = ExclusionLog()
        self.kept: dict[str, list[OpenItem]] = {}

    def __call__(self, items: Mapping[str, Sequence[OpenItem]]) -> dict[str, list[tuple[Any, Any]]]:
        self.equivalence.prepare([[i.gold, *i.gold_alternatives] for split_items in items.values()
                                  for i in split_items if i.gold_alternatives])
        outcomes: dict[str, list[tuple[Any, Any]]] = {}
        for split, split_items in items.items():
            outcomes[split] = []
            self.kept[split] = []
            for item in split_items:
                differing = [a for a in item.gold_alternatives if not self.equivalence.same(item.gold, a)]
                if differing:
                    excluded = Exclude("ambiguous_gold", "solution", f"boxed {differing[0]!r} and {item.gold!r}")
                    self.excluded.add(split, item.id, item.index, "gold", excluded)
                    outcomes[split].append((item, excluded))
                else:
                    self.kept[split].append(item)
                    outcomes[split].append((item, item))
        return outcomes


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


def model_pools(source: LoadedSource, options: Any, items: list[OpenItem], equivalence: MathEquivalence,
                gold_exclusions: ExclusionLog) -> MadePools:
    """The pools from the predictions, and the items no model answered."""
    collected = collect.collect_predictions(source, options, items, lambda doc: doc.get("problem"),
                                            lambda q: math_request(q, options.max_tokens or 1024), gold_exclusions)
    answers = {item.id: collect.answers_for(item, collected, partial(_extract, key=item.gold),
                                            partial(_extracted, key=item.gold)) for item in items}
    pools = collect.make_pools(items, answers, equivalence)
    if options.pool:
        collect.write_pool_report(options.pool, pool_report(pools.values()))
    return pools, collected, {i for i, a in answers.items() if not a}


class Steps:
    """Every step, in order (``steps``), and the objects that keep what the card reports: the ``golds``, the
    ``pools`` and the candidates ``dropped`` from them."""

    def __init__(self, source: LoadedSource, options: Any, equivalence: MathEquivalence):
        self.source, self.options, self.equivalence = source, options, equivalence
        self.golds = Golds(equivalence)
        self.pools = Pools(self._pools, options.keep_suspect_keys)
        self.dropped: Counter = Counter()
        set_options = mc.SetOptions(NAME, options.choices, options.sets, options.seed, options.draw)
        self.steps: list[Step | Across] = [Across("gold", self.golds), *set_steps(self.pools, set_options,
                                                                                   source.dataset)]

    def _pools(self, items: list[OpenItem]) -> MadePools:
        pools, collected, unanswered = model_pools(self.source, self.options, items, self.equivalence,
                                                   self.golds.excluded)
        distinct, self.dropped = distinct_pools(pools, self.equivalence)
        return distinct, collected, unanswered
