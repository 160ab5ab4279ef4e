"""The per-item transform: the options in an order drawn per item, the gold tracked by index."""

from __future__ import annotations

from builders.core.items.record import MCQRecord
from builders.core.items.referring import position_dependent_reason
from builders.core.items.rng import item_rng

NAME = "toy"


def skip_reason(record: MCQRecord) -> str | None:
    """Why a shuffle would make this item incoherent ("All of the above" moved first), or None."""
    return position_dependent_reason(record.choices)


def shuffled(record: MCQRecord, reason: str | None, seed: int, shuffle: int) -> MCQRecord:
    unchanged = record.with_metadata(skip_reason=reason, original_answer_index=record.answer)
    if reason:
        return unchanged
    order = [int(i) for i in item_rng(seed, record.content_key, NAME, shuffle).permutation(len(record.choices))]
    return unchanged.replace(choices=tuple(record.choices[i] for i in order), answer=order.index(record.answer))
