"""The steps of the builders whose distractors are models' answers to open questions (GSM-MC, MATH-MC), which the
core runs (:class:`~builders.core.pipeline.steps.Run`):

1. ``pools``, across the items (the predictions are read, generated and matched for all of them at once): every
   item's pool of wrong answers, and the items whose key the models contradict (:mod:`.consensus`);
2. ``key``: an item whose key is suspect is excluded with the value the models agree on (kept with
   ``--keep-suspect-keys``);
3. ``distractors``: the item's record in every set (:func:`.sets.item_sets`), or excluded when its pool has too
   few distractors.

Without pools (``--distractors random``) only the last step runs, with random distractors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from builders.core.items.record import MCQRecord, OpenItem
from builders.core.pipeline.steps import Across, Step

from . import consensus
from .collect import Collected
from .pools import Pool
from .sets import RandomDistractors, SetOptions, config_names, item_sets

# the pools of the items, the predictions behind them, and the ids of the items no model answered
MadePools = tuple[dict[str, Pool], Collected, set[str]]


class Pools:
    """The ``pools`` step (``make(items)`` makes them, for the items in the order given) and the ``key`` step; then
    the ``pools``, the predictions ``collected``, the ``unanswered`` items, the ``suspects`` and the number of
    ``items`` the pools were made for."""

    def __init__(self, make: Callable[[list[OpenItem]], MadePools], keep_suspect_keys: bool):
        self.make, self.keep_suspect_keys = make, keep_suspect_keys
        self.pools: dict[str, Pool] = {}
        self.collected: Collected | None = None
        self.unanswered: set[str] = set()
        self.suspects: dict[str, consensus.Suspect] = {}
        self.items = 0

    def __call__(self, items: Mapping[str, Sequence[OpenItem]]) -> dict[str, list[tuple[Any, Any]]]:
        every = [item for split_items in items.values() for item in split_items]
        self.items = len(every)
        self.pools, self.collected, self.unanswered = self.make(every)
        self.suspects = consensus.suspects(self.pools)
        return {split: [(item, item) for item in split_items] for split, split_items in items.items()}

    def check_key(self, item: OpenItem) -> OpenItem:
        if not self.keep_suspect_keys and item.id in self.suspects:
            raise self.suspects[item.id].exclusion()
        return item


def set_steps(pools: Pools | None, options: SetOptions, dataset: str,
              random_distractors: RandomDistractors | None = None) -> list[Step | Across]:
    """The steps from the source's items to their records in every config (``default`` and the sets); random
    distractors where ``pools`` is None."""
    names = config_names(options.sets)

    def make_sets(item: OpenItem) -> dict[str, MCQRecord]:
        records = item_sets(item, pools.pools if pools else None, options, dataset, random_distractors,
                            pools.unanswered if pools else frozenset())
        return dict(zip(names, [records[0], *records], strict=True))

    if pools is None:
        return [Step("distractors", make_sets)]
    return [Across("pools", pools), Step("key", pools.check_key), Step("distractors", make_sets)]
