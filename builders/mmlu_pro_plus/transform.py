"""The steps that make the ``default`` config: the group assignment, which spans a split's items, then each item's
group applied to it.

The assignment (:meth:`Groups.assign`, an :class:`~builders.core.pipeline.steps.Across`) ranks a modified split's
items against each other by a per-item hash, cuts the groups from the ranking at exact counts and asks for the new
TPP options in batches (a rejected candidate falls back, and the next one in the ranking is asked); an item that no
group takes is copied unchanged with the reason. :meth:`Groups.modify` then applies each item's group on its own.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from builders.core.items.outcomes import Skip
from builders.core.items.record import LETTERS, MCQRecord
from builders.core.pipeline.steps import Across, Items, Outcome, Step

from .generation import Proposal, select_tpp
from .groups import CFPP, GROUPS, PFPP, TPP, UNCHANGED, apportion, rank_key, with_group
from .layout import can_take, ineligible_reason, make_cfpp, make_pfpp, make_tpp

logger = logging.getLogger(__name__)
SPLIT_NOT_MODIFIED = "split_not_modified"  # the unchanged_reason of every item of a split --modify-splits leaves out
Propose = Callable[[Sequence[MCQRecord]], list[Proposal]]


@dataclass
class SplitGroups:
    """A split's groups: the counts requested and built, and every TPP candidate asked (accepted or not)."""

    requested: dict[str, int]
    built: dict[str, int]
    tried: list[Proposal] = field(default_factory=list)


class Groups:
    """The group of every item of the modified splits, and the steps that apply them (``steps``, ``copied``).

    ``propose`` asks for new TPP options (None: no TPP option can be made), ``model`` names who wrote them. After
    the run, ``splits`` holds each split's :class:`SplitGroups`, in the source's order.
    """

    def __init__(self, shares: Mapping[str, float], modified_splits: Iterable[str], seed: int, layout: str,
                 propose: Propose | None = None, model: str | None = None) -> None:
        self.shares, self.modified_splits, self.seed, self.layout = shares, frozenset(modified_splits), seed, layout
        self.propose, self.model = propose, model
        self.splits: dict[str, SplitGroups] = {}
        self._group: dict[str, str] = {}
        self._accepted: dict[str, Proposal] = {}
        self._rejected: dict[str, str] = {}  # item id -> why its TPP option was rejected
        self._ineligible: dict[str, str | None] = {}

    @property
    def steps(self) -> list[Step | Across]:
        return [Across("groups", self.assign), Step("modify", self.modify)]

    def assign(self, items: Items) -> dict[str, list[tuple[MCQRecord, Outcome]]]:
        """Every split's items: those of a modified split given their groups (an item no group takes is copied
        unchanged, with the reason), those of the other splits copied unchanged."""
        outcomes = {}
        for split, records in items.items():
            if split in self.modified_splits:
                self.splits[split] = self._assign_split(records)
                outcomes[split] = [(r, r if r.id in self._group else Skip(self._unchanged_reason(r))) for r in records]
            else:
                self.splits[split] = SplitGroups({}, {UNCHANGED: len(records)})
                outcomes[split] = [(r, Skip(SPLIT_NOT_MODIFIED)) for r in records]
        return outcomes

    def _assign_split(self, records: Sequence[MCQRecord]) -> SplitGroups:
        requested = apportion(len(records), self.shares)
        self._ineligible.update((r.id, ineligible_reason(r)) for r in records)
        ranked = sorted(records, key=lambda r: rank_key(self.seed, r))
        open_ = [r for r in ranked if self._ineligible[r.id] is None]
        tried: list[Proposal] = []
        if requested[TPP]:
            if self.propose is None:
                raise RuntimeError("a TPP share without a generator: the options' check lets no such build start")
            accepted, tried = select_tpp([r for r in open_ if can_take(TPP, r)], requested[TPP], self.propose)
            self._accepted.update(accepted)
            self._rejected.update((p.item_id, p.reason) for p in tried if p.reason is not None)
            self._group.update((r.id, TPP) for r in open_ if r.id in accepted)
        for group in (PFPP, CFPP):
            takers = [r for r in open_ if r.id not in self._group and can_take(group, r)][: requested[group]]
            self._group.update((r.id, group) for r in takers)
        built = Counter(self._group.get(r.id, UNCHANGED) for r in records)
        split_groups = SplitGroups(requested, {g: built[g] for g in GROUPS}, tried)
        if split_groups.built != requested:
            logger.warning("group counts %s differ from the requested %s: too few eligible items or accepted TPP "
                           "options", split_groups.built, requested)
        return split_groups

    def _unchanged_reason(self, record: MCQRecord) -> str:
        """Why an item of a modified split kept its options: it is ineligible, no group can take it, its TPP option
        was rejected, or the per-item ranking put it in the unchanged share."""
        ineligible = self._ineligible[record.id]
        if ineligible:
            return ineligible
        if not any(can_take(group, record) for group in (TPP, PFPP, CFPP)):
            return "no_pairable_option"
        if record.id in self._rejected:
            return f"tpp_rejected_{self._rejected[record.id]}"
        return "ranked_unchanged"

    def _noted(self, record: MCQRecord) -> dict[str, Any]:
        return {"tpp_rejection": self._rejected.get(record.id), "ineligible_reason": self._ineligible.get(record.id)}

    def modify(self, record: MCQRecord) -> MCQRecord:
        """The item with its group's options added, in MMLU-Pro's Hub columns."""
        group = self._group[record.id]
        if group == TPP:
            modified = make_tpp(record, self._accepted[record.id], self.model, self.seed, self.layout,
                                **self._noted(record))
        elif group == PFPP:
            modified = make_pfpp(record, self.seed, self.layout, **self._noted(record))
        else:
            modified = make_cfpp(record, self.seed, **self._noted(record))
        return with_hub_columns(modified)

    def copied(self, record: MCQRecord, reason: str) -> MCQRecord:
        """An item copied unchanged into ``default``, labelled ``unchanged`` with the reason."""
        return with_hub_columns(with_group(record, UNCHANGED, **self._noted(record), unchanged_reason=reason))

    @property
    def tried(self) -> list[Proposal]:
        return [p for split in self.splits.values() for p in split.tried]


def with_hub_columns(record: MCQRecord) -> MCQRecord:
    """MMLU-Pro's Hub columns, from the record as released (``cot_content`` moves out of the metadata)."""
    metadata = {k: v for k, v in record.metadata.items() if k != "cot_content"}
    return record.replace(metadata=metadata).with_columns(
        question_id=metadata.get("question_id"), options=list(record.choices), answer=LETTERS[record.answer],
        answer_index=record.answer, cot_content=record.metadata.get("cot_content") or "", src=metadata.get("src"))
