"""The per-item steps: which items NOTA would make incoherent, and the replacement of one option by it."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from builders.core.items.outcomes import Skip
from builders.core.items.record import MCQRecord
from builders.core.items.referring import NOTA_TEXT, none_like_option, position_dependent_reason
from builders.core.items.rng import first_integers, item_rng
from builders.core.pipeline.steps import Step
from builders.core.items.twins import duplicate_option

from .sba import SBADecisions, SBAVerdict

NAME = "wicked"  # the builder's name, and the purpose its items' generators are drawn for
SBA_SKIP = "single_best_answer"
DUPLICATE_SKIP = "duplicate_choices"
JUDGE_FAILED_SKIP = "sba_judge_failed"
NONE_LIKE_SKIP = "none_like_option"


def add_nota(record: MCQRecord, seed: int, variant: int, nota_position: str, removed: int | None = None,
             metadata: Mapping[str, Any] | None = None) -> MCQRecord:
    """Remove one uniformly drawn option and add NOTA; the gold is tracked by index. ``removed``: the item's first
    draw where it was drawn already (:func:`removed_draws`); ``metadata``: the record's, where the caller adds to it."""
    size = len(record.choices)
    if removed is None or nota_position != "last":
        rng = item_rng(seed, record.content_key, NAME, variant)
        removed = int(rng.integers(size))
        nota_index = size - 1 if nota_position == "last" else int(rng.integers(size))
    else:
        nota_index = size - 1
    kept = [i for i in range(size) if i != removed]
    choices = [record.choices[i] for i in kept]
    choices.insert(nota_index, NOTA_TEXT)
    if removed == record.answer:
        answer = nota_index
    else:
        position = kept.index(record.answer)
        answer = position + (position >= nota_index)
    # one new record, its metadata in the order with_verdict and then the draw wrote it
    return record.replace(choices=choices, answer=answer, metadata={
        **(record.metadata if metadata is None else metadata), "removed_index": removed, "nota_index": nota_index,
        "nota_is_answer": removed == record.answer})


def removed_draws(records: Sequence[MCQRecord], seed: int, variant: int) -> dict[str, int]:
    """Each item's first draw in ``variant`` (the option NOTA replaces), by content key, drawn for all at once:
    :func:`add_nota`'s own draw, without a generator per item."""
    sizes = {record.content_key: len(record.choices) for record in records}
    return dict(zip(sizes, first_integers(seed, list(sizes), list(sizes.values()), NAME, variant), strict=True))


def skip_reason(record: MCQRecord) -> str | None:
    """Why adding NOTA to this item would be incoherent, or None."""
    if duplicate_option(record.choices) is not None:
        return DUPLICATE_SKIP
    reason = position_dependent_reason(record.choices)
    if reason is None and none_like_option(record.choices) is not None:
        return NONE_LIKE_SKIP  # "None, because ...", "I have no comment.": NOTA would be a second "no answer"
    return reason


def why_unchanged(reason: str | None, verdict: SBAVerdict) -> str | None:
    """Why the item is copied unchanged: NOTA would make it incoherent, or it is SBA, or its judgement failed."""
    if reason is None and verdict.judge_failed:
        return JUDGE_FAILED_SKIP
    if reason is None and verdict.is_sba:
        return SBA_SKIP
    return reason


def _verdict_metadata(record: MCQRecord, verdict: SBAVerdict, reason: str | None) -> dict[str, Any]:
    return {**record.metadata, "is_sba": verdict.is_sba, "sba_score": verdict.score, "sba_judge": verdict.judge,
            "removed_index": None, "nota_index": None, "nota_is_answer": False, "original_answer_index": record.answer,
            "skip_reason": reason}


def with_verdict(record: MCQRecord, verdict: SBAVerdict, reason: str | None) -> MCQRecord:
    """The record with WiCkeD's metadata, as an item copied unchanged for ``reason`` (None: before NOTA)."""
    return record.replace(metadata=_verdict_metadata(record, verdict, reason))


def wicked_variant(record: MCQRecord, verdict: SBAVerdict, reason: str | None, seed: int, variant: int,
                   nota_position: str, removed: int | None = None) -> MCQRecord:
    """The item with NOTA added; :class:`Skip` with the reason where it is copied unchanged. ``removed``: its draw,
    where :func:`removed_draws` made it."""
    reason = why_unchanged(reason, verdict)
    if reason:
        raise Skip(reason)
    return add_nota(record, seed, variant, nota_position, removed, _verdict_metadata(record, verdict, None))


def variant_step(sba: SBADecisions, reasons: Mapping[str, str | None], seed: int, variant: int,
                 nota_position: str, draws: Mapping[str, int] | None = None) -> Step:
    """One variant's step: every item the same verdicts and reasons (they are the item's), the variant draws only
    which option NOTA replaces (``draws``: those draws made for every item at once, by content key)."""
    draws = draws or {}
    return Step(NAME, lambda record: wicked_variant(record, sba.verdict(record), reasons[record.id], seed, variant,
                                                    nota_position, draws.get(record.content_key)))


def copied(sba: SBADecisions, record: MCQRecord, reason: str) -> MCQRecord:
    """An item copied unchanged into a variant, with WiCkeD's metadata and the reason."""
    return with_verdict(record, sba.verdict(record), reason)
