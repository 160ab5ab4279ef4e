"""The card's statistics: where the gold sits in each config (what a shuffle changes; the items shuffled and copied
unchanged are counted in the card's outcome table)."""

from __future__ import annotations

from collections import Counter

from builders.core.items.record import LETTERS
from builders.core.items.tables import Statistics, Table


def statistics(configs) -> Statistics:
    letters = sorted({LETTERS[r.answer] for splits in configs.values() for rs in splits.values() for r in rs})
    rows = []
    for config, splits in configs.items():
        positions = Counter(LETTERS[r.answer] for records in splits.values() for r in records)
        total = sum(positions.values()) or 1
        rows.append((config, *(positions[letter] / total for letter in letters)))
    return Statistics([Table("Gold positions", ("config", *letters), rows, percent=tuple(letters),
                             note="Share of each config's items (all splits) whose gold is at each position.")])
