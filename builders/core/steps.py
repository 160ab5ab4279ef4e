"""Builder steps: small, pure, per-item transforms and the exclusion log.

A step takes one item and returns one item, or raises :class:`Exclude` with a reason. Nothing is
dropped silently: every excluded row lands in the :class:`ExclusionLog`, which the release writes to
``exclusions.jsonl`` and the card counts, so that rows in = rows out + rows excluded, per split.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path


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
