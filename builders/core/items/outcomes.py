"""What becomes of every item: altered, copied unchanged with a reason, or excluded with a reason.

A step raises :class:`Skip` for a well-formed item the transform cannot apply to (it is copied unchanged, with the
reason) and :class:`Exclude` for one it must leave out (a source adapter raises it too, or
:class:`~builders.core.errors.MalformedRow`). The core's runner (:mod:`builders.core.pipeline.steps`) counts each
outcome in :class:`Outcomes`, per config and split; every excluded row lands in the :class:`ExclusionLog`, which the
release writes to ``exclusions.jsonl``. Nothing is dropped silently: rows in = altered + copied unchanged +
excluded, per config and split, and :func:`outcome_table` is the one table of it that every card shows.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from builders.core.items.tables import Table

EVERY_CONFIG = "every config"  # an exclusion from every config, and the label of a group of all configs
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


# ---- the outcomes of the items kept --------------------------------------------------------------------------


@dataclass
class Outcomes:
    """What the steps did with each item they kept, per config and split: altered, or copied unchanged with the
    reason. Excluded items are counted from the :class:`ExclusionLog`, the one record of them. ``ran`` holds every
    (config, split) the steps went over, so that a config whose every item was excluded still has its counts."""

    counts: Counter = field(default_factory=Counter)  # (config, split, outcome, reason) -> items
    ran: set[tuple[str, str]] = field(default_factory=set)

    def altered(self, split: str, config: str, items: int = 1) -> None:
        self.counts[config, split, ALTERED, ""] += items
        self.ran.add((config, split))

    def copied(self, split: str, reason: str, config: str, items: int = 1) -> None:
        self.counts[config, split, COPIED, reason] += items
        self.ran.add((config, split))

    def update(self, *others: "Outcomes") -> "Outcomes":
        for other in others:
            self.counts.update(other.counts)
            self.ran.update(other.ran)
        return self

    def covers(self, config: str, split: str) -> bool:
        return (config, split) in self.ran

    def total(self, outcome: str | None = None, *, split: str | None = None, config: str | None = None) -> int:
        """Items with this outcome (None: any) in this split and config (None: any)."""
        return sum(n for _, n in self._select(outcome, split, config))

    def reasons(self, split: str | None = None, config: str | None = None) -> dict[str, int]:
        """{reason: items copied unchanged}, sorted."""
        found: Counter = Counter()
        for (_, _, _, reason), n in self._select(COPIED, split, config):
            found[reason] += n
        return dict(sorted(found.items()))

    def _select(self, outcome: str | None, split: str | None, config: str | None):
        wanted = (config, split, outcome)
        return ((key, n) for key, n in self.counts.items()
                if all(want is None or want == have for want, have in zip(wanted, key[:3], strict=True)))


def outcome_table(outcomes: Outcomes, exclusions: ExclusionLog, configs: Sequence[str]) -> Table:
    """The one table of what became of every source row, per config and split: altered, copied unchanged (per
    reason), excluded (per reason, from the exclusion log). Configs whose rows are the same share one group of rows,
    named by all its configs (``variant_0, variant_1``), or ``all 6 configs``."""
    rank = {ALTERED: 0, COPIED: 1, EXCLUDED: 2}
    groups: dict[tuple, list[str]] = {}
    for config in configs:
        counts = Counter({(split, outcome, reason): n for (name, split, outcome, reason), n in outcomes.counts.items()
                          if name == config and n})
        for entry in exclusions.entries:
            if entry.config in (None, config):
                counts[entry.split, EXCLUDED, entry.reason] += 1
        splits = {split: i for i, split in enumerate(dict.fromkeys(key[0] for key in counts))}
        rows = tuple(sorted(counts.items(), key=lambda kv: (splits[kv[0][0]], rank[kv[0][1]], kv[0][2])))
        groups.setdefault(rows, []).append(config)
    table = [(f"all {len(configs)} configs" if len(names) == len(configs) > 1 else ", ".join(names), split, outcome,
              reason or None, n)
             for rows, names in groups.items() for (split, outcome, reason), n in rows]
    return Table(OUTCOME_TABLE, ("configs", "split", "outcome", "reason", "items"), table,
                 note="What became of every source row: altered by the builder; copied unchanged, a well-formed "
                      "item the transform cannot apply to, with the reason; or excluded, with the reason (listed "
                      "in `exclusions.jsonl`). Per config and split, rows in = altered + copied unchanged + "
                      "excluded.")


def configs_label(configs: Sequence[str], total: int) -> str:
    """How the console names a group of configs: up to three by name, else all of them or the first and last."""
    if len(configs) <= 3:
        return ", ".join(configs)
    if len(configs) == total:
        return f"all {total} configs"
    return f"{len(configs)} configs ({configs[0]}, {configs[1]}, ..., {configs[-1]})"
