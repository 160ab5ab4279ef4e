"""The core's runner of a builder's steps: it makes the configs, and counts what became of every item.

A builder's ``build(source, options, run)`` declares, for each config (or group of configs made together), the
steps that make it from the source's items, and the run applies them::

    run.unchanged("original")
    run.make("variant_0", [Step("wicked", add_nota)], copy=copied)
    run.make(["default", "set_0", "set_1"], [Step("key", check_key), Step("distractors", two_sets)])

A :class:`Step` takes one item and returns it altered, or raises :class:`~builders.core.items.outcomes.Skip`
(well-formed, but the transform cannot apply to it: copied unchanged, ``copy(item, reason)`` marks the copy) or
:class:`~builders.core.items.outcomes.Exclude` (left out, with the reason, in the exclusion log). A step that
spans the items (a matching, a ranking, a batch sent to a model) is an :class:`Across`: it is given the items of
every split at once and still gives one outcome per item. The steps run in turn over every item (each over the
outputs of the one before); an item's output is the last step's: the record of its config, or with several configs
made together, ``{config: record}`` for each of them. Whatever the steps do, the run keeps the counts per config
and split (altered, copied unchanged per reason), and the exclusions, which the core puts in the build.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Sequence

from builders.core.items.outcomes import ALTERED, COPIED, Exclude, Exclusion, ExclusionLog, Outcomes, Skip

SOURCE_UNCHANGED = "source_unchanged"  # the reason of every item of a config that holds the source as it is
Items = Mapping[str, Sequence[Any]]
Outcome = Any  # an item (altered so far), or a Skip or an Exclude


@dataclass(frozen=True)
class Step:
    """A per-item step: ``apply(item)`` returns the item altered, or raises Skip or Exclude. ``name`` is what an
    exclusion records as its step."""

    name: str
    apply: Callable[[Any], Any]


@dataclass(frozen=True)
class Across:
    """A step that spans the items: ``apply({split: [item, ...]})`` returns, per split, ``(item, outcome)`` for
    every item it was given, each once; an outcome is the item altered, or a :class:`Skip` or :class:`Exclude`
    (not raised: returned). The order it returns them in is their order from then on (a matching lists its
    pairs together)."""

    name: str
    apply: Callable[[Items], Mapping[str, Iterable[tuple[Any, Outcome]]]]


@dataclass(eq=False)
class _Entry:
    """One item on its way through the steps: its input, its value so far, and (once final) how it ended."""

    item: Any
    value: Any
    skipped: str | None = None  # the reason it is copied unchanged
    excluded: bool = False

    @property
    def live(self) -> bool:
        return self.skipped is None and not self.excluded


class Run:
    """One build's run of its steps over the source's items. It holds the configs they made, in the order they
    were made, the outcome counts and the exclusion log (the source's exclusions first)."""

    def __init__(self, items: Items, exclusions: ExclusionLog):
        self.items = items
        self.configs: dict[str, dict[str, list[Any]]] = {}
        self.outcomes = Outcomes()
        self._source_exclusions = list(exclusions.entries)
        self._excluded: list[tuple[Exclusion, tuple[str, ...]]] = []  # an exclusion, and the configs of its run

    def make(self, configs: str | Sequence[str], steps: Sequence[Step | Across], *,
             copy: Callable[[Any, str], Any] | None = None, items: Items | None = None) -> dict[str, dict[str, list]]:
        """The configs ``configs`` (one name, or several made together) from ``items`` (the source's) by ``steps``;
        ``copy(item, reason)`` is what a skipped item becomes (the item itself without it). Returns them as
        ``{config: {split: [record, ...]}}``."""
        if not steps:
            raise ValueError("no steps: a config that holds the source's items as they are is run.unchanged(config)")
        names = (configs,) if isinstance(configs, str) else tuple(configs)
        self._claim(names)
        made: dict[str, dict[str, list]] = {name: {} for name in names}
        source = self.items if items is None else items
        entries = {split: [_Entry(item, item) for item in split_items] for split, split_items in source.items()}
        for step in steps:
            if isinstance(step, Across):
                self._across(step, entries, names)
            else:
                for split, split_entries in entries.items():
                    for entry in split_entries:
                        if entry.live:
                            self._settle(entry, split, step.name, names, partial(step.apply, entry.value))
        for split, split_entries in entries.items():
            self._collect(split, split_entries, names, isinstance(configs, str), copy, made)
        self.configs.update(made)
        # The records made hold no cycles: frozen out of the cyclic collector's sight as soon as they are made, so
        # that its full passes do not walk every config made before (perturbations make 29 configs of 14,000 MMLU
        # records one by one: a third of that build's time); the command unfreezes them where a notebook goes on
        gc.freeze()
        return made

    def unchanged(self, config: str, items: Items | None = None) -> dict[str, list]:
        """A config that holds the items as they are (the source's: ``original``): every item copied unchanged,
        with the reason :data:`SOURCE_UNCHANGED`."""
        self._claim((config,))
        source = self.items if items is None else items
        for split, split_items in source.items():
            self.outcomes.copied(split, SOURCE_UNCHANGED, config, len(split_items))
        self.configs[config] = {split: list(split_items) for split, split_items in source.items()}
        return self.configs[config]

    def feed_splits(self, split_of: Mapping[str, str]) -> None:
        """Where a builder's splits are not the source's (PythonIO's ``train`` is MBPP's train, validation and prompt
        splits, fed to ``run.make(items=...)``): the source's exclusions count in the split their rows would have
        fed (``split_of``: source split -> the builder's; a split it does not name stays as it is)."""
        self._source_exclusions = [replace(entry, split=split_of.get(entry.split, entry.split))
                                   for entry in self._source_exclusions]

    def leave_out_empty_splits(self) -> None:
        """Leave out of every config the splits that hold no record: where the method keeps only some items (contrast
        mining pairs some), a split where it kept none is no split of the release (a Parquet file of 0 rows cannot be
        loaded); its rows stay counted, as excluded. Elsewhere an empty split stops the release from being written."""
        for config, splits in self.configs.items():
            self.configs[config] = {split: records for split, records in splits.items() if records}

    def exclusion_log(self) -> ExclusionLog:
        """Every exclusion: the source's (from every config), then the steps'. An item that the runs exclude, for the
        same reason, from every config of the build is one exclusion from every config; else it is one per config
        it is missing from."""
        log = ExclusionLog()
        log.entries.extend(self._source_exclusions)
        configs_of: dict[Exclusion, list[str]] = {}
        for entry, names in self._excluded:
            configs_of.setdefault(entry, []).extend(names)
        for entry, missing_from in configs_of.items():
            if set(missing_from) == set(self.configs):
                log.entries.append(entry)
            else:
                log.entries.extend(Exclusion(**{**vars(entry), "config": name}) for name in missing_from)
        return log

    def _claim(self, names: Sequence[str]) -> None:
        taken = sorted(set(names) & set(self.configs)) or sorted({n for n in names if names.count(n) > 1})
        if taken:
            raise ValueError(f"configs {taken} are made twice")

    def _settle(self, entry: _Entry, split: str, step: str, names: Sequence[str], outcome: Callable[[], Any]) -> None:
        """The entry after one step: its new value, or copied unchanged, or excluded (logged under ``step``)."""
        try:
            value = outcome()
        except Skip as skip:
            value = skip
        except Exclude as error:
            value = error
        if isinstance(value, Skip):
            entry.skipped = value.reason
        elif isinstance(value, Exclude):
            entry.excluded = True
            item_id, index = item_location(entry.item)
            self._excluded.append((Exclusion(split, item_id, index, step, value.reason, value.field, value.detail),
                                   tuple(names)))
        else:
            entry.value = value

    def _across(self, step: Across, entries: dict[str, list[_Entry]], names: Sequence[str]) -> None:
        """A step over every live item at once; the items it is given take the order it returns them in, among
        their places."""
        live = {split: [e for e in split_entries if e.live] for split, split_entries in entries.items()}
        returned = step.apply({split: [e.value for e in split_live] for split, split_live in live.items()})
        for split, split_entries in entries.items():
            by_value = {id(e.value): e for e in live[split]}
            ordered = []
            for value, outcome in returned.get(split, ()):
                entry = by_value.pop(id(value), None)
                if entry is None:
                    raise ValueError(f"step {step.name!r}: an item of {split!r} it was not given, or given back twice")
                self._settle(entry, split, step.name, names, partial(_given, outcome))
                ordered.append(entry)
            if by_value:
                raise ValueError(f"step {step.name!r} gave no outcome for {len(by_value)} item(s) of {split!r}")
            given = {id(e) for e in live[split]}
            places = [i for i, e in enumerate(split_entries) if id(e) in given]
            for place, entry in zip(places, ordered, strict=True):
                split_entries[place] = entry

    def _collect(self, split: str, entries: Sequence[_Entry], names: Sequence[str], single: bool,
                 copy: Callable[[Any, str], Any] | None, made: dict[str, dict[str, list]]) -> None:
        outputs: dict[str, list] = {name: [] for name in names}
        tally: dict[tuple[str, str], int] = {}  # (altered or the copy's reason) -> items, in the order first met
        for entry in entries:
            if entry.excluded:
                continue
            if entry.skipped is not None:
                record = copy(entry.item, entry.skipped) if copy is not None else entry.item
                for name in names:
                    outputs[name].append(record)
                outcome = (COPIED, entry.skipped)
            elif single:
                outputs[names[0]].append(entry.value)
                outcome = (ALTERED, "")
            else:
                by_config = entry.value
                if not isinstance(by_config, Mapping) or set(by_config) != set(names):
                    raise ValueError(f"the last step made {type(by_config).__name__} for configs {list(names)}: "
                                     "several configs made together need {config: record} for each")
                for name in names:
                    outputs[name].append(by_config[name])
                outcome = (ALTERED, "")
            tally[outcome] = tally.get(outcome, 0) + 1
        for (kind, reason), items in tally.items():  # counted as item after item would count them, in that order
            for name in names:
                if kind == ALTERED:
                    self.outcomes.altered(split, name, items)
                else:
                    self.outcomes.copied(split, reason, name, items)
        for name in names:
            self.outcomes.ran.add((name, split))
            made[name][split] = outputs[name]


def _given(outcome: Outcome) -> Outcome:
    return outcome


def item_location(item: Any) -> tuple[str, int]:
    """(id, source index) of an item: an :class:`~.record.MCQRecord` or an :class:`~.record.OpenItem`."""
    index = item.source_index if hasattr(item, "source_index") else item.index
    return item.id, index
