"""The per-item runner every builder uses, what it counts, and the exclusion log.

A builder's step takes one item and returns it altered, or raises :class:`Skip` (a well-formed item the
transform cannot apply to: it is copied unchanged, with the reason) or :class:`Exclude` (the item is left out,
with the reason). :func:`run_steps` applies a builder's steps to every item of every split, in order, and counts each
outcome in :class:`Outcomes`; every excluded row lands in the :class:`ExclusionLog`, which the release writes
to ``exclusions.jsonl``. Nothing is dropped silently: rows in = altered + copied unchanged + excluded, per
config and split, and :func:`outcome_table` is the one table of it that every card shows.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

from builders.core.items.tables import Table

Item = TypeVar("Item")
Output = TypeVar("Output")
EVERY_CONFIG = "every config"
ALTERED, COPIED, EXCLUDED = "altered", "copied unchanged", "excluded"
OUTCOME_TABLE = "Items altered, copied unchanged and excluded"


class Skip(Exception):
    """Raised by a step: the item is well-formed but the transform cannot apply to it; it is copied unchanged,
    with the reason."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class Exclude(Exception):
    """Raised by a step to drop the current item with a reason."""

    def __init__(self, reason: str, field: str | None = None, detail: str = ""):
        super().__init__(reason)
        self.reason, self.field, self.detail = reason, field, detail


@dataclass(frozen=True)
class Exclusion:
    split: str
    id: str
    source_index: int
    step: str
    reason: str
    field: str | None = None
    detail: str = ""
    config: str | None = None  # None: excluded from every config of the release


class ExclusionLog:
    def __init__(self) -> None:
        self.entries: list[Exclusion] = []

    def add(self, split: str, item_id: str, source_index: int, step: str, error: Exclude,
            config: str | None = None) -> None:
        self.entries.append(
            Exclusion(split, item_id, source_index, step, error.reason, error.field, error.detail, config)
        )

    def extend(self, other: "ExclusionLog") -> None:
        self.entries.extend(other.entries)

    def count(self, split: str, config: str | None = None) -> int:
        """Rows of ``split`` missing from ``config``: excluded everywhere, or from that config."""
        return sum(1 for e in self.entries if e.split == split and e.config in (None, config))

    def reasons(self) -> dict[str, dict[str, int]]:
        """{split: {reason (and config, when config-specific): count}}, sorted for stable cards."""
        by_split: dict[str, Counter] = defaultdict(Counter)
        for entry in self.entries:
            key = entry.reason if entry.config is None else f"{entry.reason} ({entry.config})"
            by_split[entry.split][key] += 1
        return {split: dict(sorted(c.items())) for split, c in sorted(by_split.items())}

    def write_jsonl(self, path: Path) -> None:
        ordered = sorted(self.entries, key=lambda e: (e.split, e.source_index, e.id, e.step, e.config or ""))
        with open(path, "w", encoding="utf-8") as f:
            for entry in ordered:
                f.write(json.dumps(asdict(entry), ensure_ascii=False, sort_keys=True) + "\n")


# ---- the runner and its outcomes ---------------------------------------------------------------------------


@dataclass
class Outcomes:
    """What a builder did with each item it kept, per configs and split: altered, or copied unchanged with the
    reason. Excluded items are counted from the :class:`ExclusionLog`, the one record of them.

    ``configs`` names the configs an outcome holds in: :data:`EVERY_CONFIG` for a builder whose configs all
    show the same items the same way, else a config's name (or a name for a family: ``"every variant"``)."""

    counts: Counter = field(default_factory=Counter)  # (configs, split, outcome, reason) -> items

    def altered(self, split: str, configs: str = EVERY_CONFIG, items: int = 1) -> None:
        self.counts[configs, split, ALTERED, ""] += items

    def copied(self, split: str, reason: str, configs: str = EVERY_CONFIG, items: int = 1) -> None:
        self.counts[configs, split, COPIED, reason] += items

    def update(self, *others: "Outcomes") -> "Outcomes":
        for other in others:
            self.counts.update(other.counts)
        return self

    def total(self, outcome: str | None = None, *, split: str | None = None, configs: str | None = None) -> int:
        """Items with this outcome (None: any) in this split and configs (None: any)."""
        return sum(n for _, n in self._select(outcome, split, configs))

    def reasons(self, split: str | None = None, configs: str | None = None) -> dict[str, int]:
        """{reason: items copied unchanged}, sorted."""
        found: Counter = Counter()
        for (_, _, _, reason), n in self._select(COPIED, split, configs):
            found[reason] += n
        return dict(sorted(found.items()))

    def _select(self, outcome: str | None, split: str | None, configs: str | None):
        wanted = (configs, split, outcome)
        return ((key, n) for key, n in self.counts.items()
                if all(want is None or want == have for want, have in zip(wanted, key[:3], strict=True)))


def item_location(item: Any) -> tuple[str, int]:
    """(id, source index) of an item: an :class:`~.record.MCQRecord` or an :class:`~.record.OpenItem`."""
    index = item.source_index if hasattr(item, "source_index") else item.index
    return item.id, index


Step = tuple[str, Callable[[Any], Any]]  # (name, function): the name is an exclusion's ``step``


def run_steps(items: Mapping[str, Sequence[Item]], steps: Sequence[Step], *, exclusions: ExclusionLog | None = None,
              copy: Callable[[Item, str], Any] | None = None, configs: str = EVERY_CONFIG,
              locate: Callable[[Item], tuple[str, int]] = item_location) -> tuple[dict[str, list[Any]], Outcomes]:
    """The steps applied in turn to every item of every split, in order (each to the previous one's output).
    An item's output is the last step's (altered); ``copy(item, reason)`` where a step raises :class:`Skip`
    (the item itself without ``copy``); none where a step raises :class:`Exclude` (logged in ``exclusions``
    under that step's name; without a log, the steps exclude nothing and an :class:`Exclude` propagates).
    Returns the outputs per split and what became of the items."""
    outputs: dict[str, list[Any]] = {}
    outcomes = Outcomes()
    for split, split_items in items.items():
        kept: list[Any] = []
        outputs[split] = kept
        for item in split_items:
            output: Any = item
            for name, step in steps:
                try:
                    output = step(output)
                except Skip as skip:
                    kept.append(copy(item, skip.reason) if copy is not None else item)
                    outcomes.copied(split, skip.reason, configs)
                    break
                except Exclude as error:
                    if exclusions is None:
                        raise
                    item_id, index = locate(item)
                    exclusions.add(split, item_id, index, name, error)
                    break
            else:
                kept.append(output)
                outcomes.altered(split, configs)
    return outputs, outcomes


def outcome_table(outcomes: Outcomes, exclusions: ExclusionLog) -> Table:
    """The one table of what became of every source row, per configs and split: altered, copied unchanged (per
    reason), excluded (per reason, from the exclusion log; ``every config`` for a row left out of all of them)."""
    counts = Counter(outcomes.counts)
    for entry in exclusions.entries:
        counts[entry.config or EVERY_CONFIG, entry.split, EXCLUDED, entry.reason] += 1
    first_seen = {configs: i for i, configs in enumerate(dict.fromkeys(key[0] for key in counts))}
    splits = {split: i for i, split in enumerate(dict.fromkeys(key[1] for key in counts))}
    rank = {ALTERED: 0, COPIED: 1, EXCLUDED: 2}
    ordered = sorted(counts.items(), key=lambda kv: (first_seen[kv[0][0]], splits[kv[0][1]], rank[kv[0][2]],
                                                     kv[0][3]))
    rows = [(configs, split, outcome, reason or None, n) for (configs, split, outcome, reason), n in ordered if n]
    return Table(OUTCOME_TABLE, ("configs", "split", "outcome", "reason", "items"), rows,
                 note="What became of every source row: altered by the builder; copied unchanged, a well-formed "
                      "item the transform cannot apply to, with the reason; or excluded, with the reason (listed "
                      "in `exclusions.jsonl`). Per config and split, rows in = altered + copied unchanged + "
                      "excluded.")
