"""The per-item steps: the options in an order drawn per item, the gold tracked by index."""

from __future__ import annotations

from builders.core.items.outcomes import Skip
from builders.core.items.record import MCQRecord
from builders.core.items.referring import position_dependent_reason
from builders.core.items.rng import item_rng
from builders.core.pipeline.steps import Step

NAME = "toy"


def shuffled(record: MCQRecord, seed: int, shuffle: int) -> MCQRecord:
    """The options in the order of one permutation drawn for the item; :class:`Skip` where a shuffle would make the
    item incoherent ("All of the above" moved first)."""
    reason = position_dependent_reason(record.choices)
    if reason:
        raise Skip(reason)
    order = [int(i) for i in item_rng(seed, record.content_key, NAME, shuffle).permutation(len(record.choices))]
    return record.replace(choices=tuple(record.choices[i] for i in order), answer=order.index(record.answer)) \
        .with_metadata(skip_reason=None, original_answer_index=record.answer)


def shuffle_step(seed: int, shuffle: int) -> Step:
    return Step(NAME, lambda record: shuffled(record, seed, shuffle))


def copied(record: MCQRecord, reason: str) -> MCQRecord:
    """An item copied unchanged into a shuffled config, with the reason."""
    return record.with_metadata(skip_reason=reason, original_answer_index=record.answer)
