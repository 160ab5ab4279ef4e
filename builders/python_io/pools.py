"""Each verified item's pool of distractors: the distinct wrong values models predicted for its call.

Answers are Python values, compared as values (:class:`~.values.PythonValueEquivalence`), never as strings; a
predicted text is read, never run. Candidates that the shared validator would refuse beside the gold (the same
text up to whitespace) or that working the program out cannot tell from the gold (float rounding) are dropped,
and counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from builders.core.items.record import normalize_text
from builders.core.sources.predictions import Prediction
from builders.from_predictions.pools import Pool, build_pool, respell

from .predictions import predicted_output
from .values import NotALiteral, PythonValueEquivalence, nearly_equal, normalize_predictions, parse_literal
from .verify import Verified

def make_pools(verified: Sequence[Verified], matched: Mapping[str, Sequence[Prediction]],
               max_chars: int) -> tuple[dict[str, Pool], dict[str, Any]]:
    """One pool per verified item, from its predictions (item id -> predictions); and counts for the card.

    The pool sees the spellings models wrote (so ``[1,2]`` joining ``[1, 2]`` counts as a merge and stays
    in ``variants``); each option shows the canonical spelling of its value. A predicted text that is no
    literal (:func:`normalize_predictions`: read, never run) is invalid for its model and counted as
    ``not_a_literal``."""
    calls = {v.pair.id: v.pair.call for v in verified}
    by_item = {item: [(p.model, predicted_output(p, calls[item])) for p in predictions]
               for item, predictions in matched.items()}
    texts = [text for answers in by_item.values() for _, text in answers if text]
    canonical = normalize_predictions(texts, max_chars)
    equivalence = PythonValueEquivalence(max_chars, canonical)
    pools, clashes, near = {}, 0, 0
    for v in verified:
        pool = respell(build_pool(v.pair.id, v.gold, by_item.get(v.pair.id, []), equivalence), equivalence.spell)
        pool, dropped = without_text_clashes(pool)
        pool, rounded = without_near_gold(pool)
        pools[v.pair.id] = pool
        clashes += dropped
        near += rounded
    counts = {"distinct_outputs": len(canonical), "valid_values": sum(1 for c in canonical.values() if c),
              "not_a_literal": sum(1 for text in texts if canonical[text.strip()] is None),
              "case_clashes_dropped": clashes, "near_gold_dropped": near,
              "items_with_predictions": sum(1 for v in verified if by_item.get(v.pair.id))}
    return pools, counts



def without_text_clashes(pool: Pool) -> tuple[Pool, int]:
    """Drop candidates whose text equals the gold's or a more frequent candidate's up to whitespace
    (``'a  b'`` vs ``'a b'``): different values, but the shared validator refuses options that differ only
    so. Case matters there (:func:`builders.core.items.record.normalize_text`), so ``'HEO'`` and ``'heo'`` both stay.
    Returns the pool and how many were dropped."""
    seen = {normalize_text(pool.gold)}
    kept = []
    for candidate in pool.candidates:  # most frequent first
        text = normalize_text(candidate.text)
        if text not in seen:
            seen.add(text)
            kept.append(candidate)
    return replace(pool, candidates=kept), len(pool.candidates) - len(kept)


def without_near_gold(pool: Pool) -> tuple[Pool, int]:
    """Drop candidates whose value differs from the gold's only in float rounding (:func:`nearly_equal`):
    a reader who works the program out right cannot tell them from the gold. Returns the pool and how many
    were dropped."""
    try:
        gold = parse_literal(pool.gold)
    except NotALiteral:
        return pool, 0
    kept = []
    for candidate in pool.candidates:
        try:
            near = nearly_equal(gold, parse_literal(candidate.text))
        except NotALiteral:
            near = False
        if not near:
            kept.append(candidate)
    return replace(pool, candidates=kept), len(pool.candidates) - len(kept)

