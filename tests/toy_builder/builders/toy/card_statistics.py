"""The card's statistics: items shuffled and copied unchanged, by reason."""

from __future__ import annotations

from collections import Counter

from builders.core.items.tables import Statistics, counts_table


def statistics(configs) -> Statistics:
    first = configs[next(name for name in configs if name != "original")]
    outcomes = Counter(r.metadata["skip_reason"] or "shuffled" for records in first.values() for r in records)
    return Statistics([counts_table("Items shuffled and copied unchanged", outcomes, "outcome", "items (all splits)")])
