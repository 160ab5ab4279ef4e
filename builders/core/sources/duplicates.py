"""The same question twice in a source: exact duplicates (counted and listed) and conflicts (excluded).

Two items ask the same question when their questions are equal but for case, whitespace and punctuation
(:func:`builders.core.items.twins.question_key`). They are exact duplicates when their options are the same too (as
a set, spelling aside: :func:`~builders.core.items.twins.option_key`) and so is their key: MMLU-Pro's test set holds
159 such pairs, 318 items that are 159 questions, which a reader of its scores must know. They conflict when one's
key is among the other's options but is not its key: at most one of the two keys is right, so both items are
excluded, each with a reason that names the other, and queued for review. Items a person or an errata source
decided are left as decided.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from builders.core.items.outcomes import Exclude, ExclusionLog
from builders.core.items.record import MCQRecord
from builders.core.items.tables import Table
from builders.core.items.twins import option_key, question_key
from builders.core.sources.loading import LoadedSource

CONFLICT = "conflicting_duplicate"
STEP = "duplicates"


@dataclass(frozen=True)
class Conflict:
    """Two items that ask the same question with keys that contradict each other."""

    first: MCQRecord
    second: MCQRecord

    def detail(self, item: MCQRecord) -> str:
        other = self.second if item is self.first else self.first
        return (f"the same question as {other.id}, which keys {other.gold!r}; {item.id} keys {item.gold!r}")

    def evidence(self, item: MCQRecord) -> dict[str, Any]:
        other = self.second if item is self.first else self.first
        return {"same_question_as": other.id, "other_key": other.gold, "other_choices": list(other.choices),
                "key": item.gold}


@dataclass(frozen=True)
class SourceDuplicates:
    """The source's groups of exact duplicates (ids, in source order) and its conflicts."""

    exact: tuple[tuple[str, ...], ...]
    conflicts: tuple[Conflict, ...]
    excluded: tuple[str, ...]  # the ids the conflicts excluded

    @property
    def exact_items(self) -> int:
        return sum(len(group) for group in self.exact)

    def tables(self) -> list[Table]:
        tables = []
        if self.exact:
            note = (f"{self.exact_items} items are {len(self.exact)} questions asked more than once, with the same "
                    "options and key (case, whitespace, punctuation and the spelling of numbers aside). They are "
                    "kept: a score on this release counts each such question once per copy.")
            tables.append(Table("Exact duplicates in the source", ("items", "copies"),
                                tuple((", ".join(group), len(group)) for group in self.exact), note=note))
        if self.conflicts:
            note = (f"{len(self.conflicts)} pairs of items ask the same question with keys that contradict each "
                    f"other; both items of each pair are excluded ({CONFLICT}) and queued for review.")
            tables.append(Table("Conflicting duplicates in the source", ("item", "key", "same question as", "its key"),
                                tuple((c.first.id, c.first.gold, c.second.id, c.second.gold) for c in self.conflicts),
                                note=note))
        return tables


def find_duplicates(items: Sequence[Any]) -> tuple[tuple[tuple[str, ...], ...], tuple[Conflict, ...]]:
    """(groups of exact duplicates, conflicting pairs) among the multiple-choice ``items``, in source order."""
    by_question: dict[str, list[MCQRecord]] = defaultdict(list)
    for item in items:
        if isinstance(item, MCQRecord):
            by_question[question_key(item.question)].append(item)
    exact: list[tuple[str, ...]] = []
    conflicts: list[Conflict] = []
    for group in by_question.values():
        if len(group) < 2:
            continue
        same: dict[tuple, list[str]] = defaultdict(list)
        for item in group:
            same[(tuple(sorted(option_key(c) for c in item.choices)), option_key(item.gold))].append(item.id)
        exact.extend(tuple(ids) for ids in same.values() if len(ids) > 1)
        conflicts.extend(Conflict(a, b) for i, a in enumerate(group) for b in group[i + 1:] if _contradict(a, b))
    return tuple(exact), tuple(conflicts)


def _contradict(a: MCQRecord, b: MCQRecord) -> bool:
    key_a, key_b = option_key(a.gold), option_key(b.gold)
    if key_a == key_b:
        return False
    return key_a in {option_key(c) for c in b.choices} or key_b in {option_key(c) for c in a.choices}


def exclude_conflicts(source: LoadedSource, decided: Iterable[str] = ()) -> LoadedSource:
    """The source without the items of its conflicting pairs (each excluded with a reason naming the other), and
    with what was found (:attr:`LoadedSource.duplicates`). A pair one of whose items was decided is left alone."""
    exact, conflicts = find_duplicates(source.records())
    skip = set(decided)
    conflicts = tuple(c for c in conflicts if c.first.id not in skip and c.second.id not in skip)
    reasons: dict[str, str] = {}
    for conflict in conflicts:
        for item in (conflict.first, conflict.second):
            reasons.setdefault(item.id, conflict.detail(item))
    found = SourceDuplicates(exact, conflicts, tuple(reasons))
    if not reasons:
        return dataclasses.replace(source, duplicates=found)
    exclusions = ExclusionLog()
    exclusions.extend(source.exclusions)
    items: dict[str, list[Any]] = {}
    for split, split_items in source.items.items():
        items[split] = [item for item in split_items if item.id not in reasons]
        for item in split_items:
            if item.id in reasons:
                exclusions.add(split, item.id, item.source_index, STEP, Exclude(CONFLICT, "answer", reasons[item.id]))
    return dataclasses.replace(source, items=items, exclusions=exclusions, duplicates=found)

