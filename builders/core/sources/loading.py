"""Source benchmarks and the one loader that turns their rows into items.

A :class:`Benchmark` describes one source: its Hub id, splits, and ``to_item(row, ctx)``, the small adapter
that turns one row into the builder's item (an :class:`~builders.core.items.record.MCQRecord`, an
:class:`~builders.core.items.record.OpenItem`, or a builder's own record). :func:`load_source` reads any
benchmark (where its rows come from: :mod:`.spec`; reading them: :mod:`.reading`), multiple-choice or
open-ended, and returns a :class:`LoadedSource`: the items per split, the rows read, every exclusion with its
reason, and the provenance the card records.
"""

from __future__ import annotations

import dataclasses

import hashlib
import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sized

from builders.core.errors import MalformedRow, SourceError
from builders.core.items.outcomes import Exclude, ExclusionLog
from builders.core.items.record import LETTERS, MAX_CHOICES, MCQRecord, is_blank
from builders.core.items.twins import option_key
from builders.core.options.declare import declared_options
from builders.core.runtime.progress import bar
from builders.core.sources.reading import RawSource, read_hub, read_local
from builders.core.sources.spec import parse_spec

logger = logging.getLogger(__name__)

DEFAULT_MAX_EXCLUDED = 0.5


# ---- benchmarks and the loader -------------------------------------------------------------------------


@dataclass(frozen=True)
class RowContext:
    """Where one source row sits, for its adapter."""

    benchmark: str
    dataset: str
    config: str
    split: str
    index: int
    seed: int
    options: Any  # the benchmark's own options (Benchmark.options), None when it has none
    subconfig: str = ""  # for sources split into configs (mmlu_redux subjects): part of the id
    split_position: int = 0  # the row's place in its split, sub-configs concatenated in name order

    @property
    def default_id(self) -> str:
        parts = [self.benchmark, self.subconfig, self.split, str(self.index)]
        return "/".join(p for p in parts if p)

    def record(self, row_id: str, question: str, choices: tuple[str, ...], answer: int, **extra: Any) -> MCQRecord:
        return MCQRecord(
            id=row_id, question=question, choices=choices, answer=answer, source=self.dataset,
            source_config=self.config, source_split=self.split, source_index=self.index, **extra,
        )


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """A source benchmark: where it lives on the Hub, and how its rows become items.

    ``parts`` makes a benchmark out of several datasets read side by side (PythonIO: HumanEval and MBPP); its
    SPEC is then ``PART=SPEC,PART=SPEC`` or a folder with one sub-folder per part.
    """

    name: str
    hub_id: str
    config: str | None
    splits: tuple[str, ...]
    to_item: Callable[[dict[str, Any], RowContext], Any] | None  # None for a benchmark made of parts
    license: str
    citation: str
    pretty_name: str
    metadata_features: Mapping[str, Any] = field(default_factory=dict)
    subconfigs: tuple[str, ...] = ()
    fewshot_split: str | None = None
    subject_field: str | None = None  # the row field that --subjects selects on
    parts: tuple["Benchmark", ...] = ()
    # the source's own options (MMLU-Redux: keep every item): a frozen dataclass of option fields, which a builder
    # offers by extending it in its options; its adapter reads them as ``ctx.options``
    options: type | None = None
    license_name: str | None = None  # with license "other": the Hub's license_name and license_link
    license_link: str | None = None

    @property
    def default_spec(self) -> str:
        return self.hub_id + (f":{self.config}" if self.config else "")

    def part(self, name: str) -> "Benchmark":
        return next(p for p in self.parts if p.name == name)


@dataclass(frozen=True)
class Provenance:
    """One dataset a build read: what the card's ``source_datasets`` and provenance table say."""

    benchmark: str
    dataset: str  # the Hub id (a local copy stands in for its benchmark's Hub id)
    spec: str | dict[str, str]  # as recorded: a Hub spec, "sample", or {local: base name, content: hash}
    revision: str  # the Hub commit sha, or the local copy's content hash


@dataclass(frozen=True)
class Selection:
    """A subset of the source: ``--splits``, ``--subjects`` and ``--limit`` (rows per evaluation split, and per
    subject when subjects are named)."""

    subjects: tuple[str, ...] = ()
    limit: int | None = None
    splits: tuple[str, ...] = ()
    # the limit counts the items kept, not the rows read (--preview K shows K items even where the source's first
    # rows are excluded, as MMLU-Redux's flagged errors)
    kept: bool = False

    def __bool__(self) -> bool:
        return bool(self.subjects) or self.limit is not None

    def splits_of(self, benchmark: "Benchmark") -> tuple[str, ...]:
        unknown = sorted(set(self.splits) - set(benchmark.splits))
        if unknown:
            raise SourceError(f"{benchmark.name} has no split {unknown}; its splits are {list(benchmark.splits)}")
        return tuple(s for s in benchmark.splits if s in self.splits) if self.splits else benchmark.splits


@dataclass
class LoadedSource:
    """A benchmark's items per split, with the accounting the card and validator need."""

    benchmark: Benchmark
    items: dict[str, list[Any]]
    rows_in: dict[str, int]
    exclusions: ExclusionLog
    provenance: list[Provenance]
    selection: Selection = field(default_factory=Selection)
    # the item-level corrections applied to it (builders.core.sources.corrections.AppliedCorrection), in order
    corrections: tuple[Any, ...] = ()
    errata: Any = None  # the errata applied to it (builders.core.sources.errata.ErrataApplied), or None
    # what the source's own checks found: its duplicates (builders.core.sources.duplicates.SourceDuplicates) and the
    # models' consensus on its keys (builders.core.sources.consensus.KeyConsensus), None where not checked
    duplicates: Any = None
    consensus: Any = None

    @property
    def dataset(self) -> str:
        return self.provenance[0].dataset

    @property
    def revision(self) -> str:
        return self.provenance[0].revision

    @property
    def source_description(self) -> str:
        return ", ".join(dict.fromkeys(_describe(p) for p in self.provenance))  # PythonIO's 3 samples: "sample"

    def records(self) -> list[Any]:
        return [item for items in self.items.values() for item in items]

    @property
    def full_preview(self) -> bool:
        """A preview's load that kept its K items in every split it read: it stopped there, so its share of rows
        excluded says nothing of the source's layout (the first rows of MMLU-Redux are its flagged errors)."""
        limit, fewshot = self.selection.limit, self.benchmark.fewshot_split
        limited = [items for split, items in self.items.items() if split != fewshot]  # the few-shot split is whole
        return self.selection.kept and limit is not None and bool(limited) and all(len(i) >= limit for i in limited)


def _describe(provenance: Provenance) -> str:
    spec = provenance.spec
    return f"local copy '{spec['local']}'" if isinstance(spec, dict) else spec


def load_source(benchmark: Benchmark, source: str | None = None, *, seed: int = 0, strict: bool = False,
                options: Any = None, selection: Selection = Selection(),
                max_excluded: float = DEFAULT_MAX_EXCLUDED) -> LoadedSource:
    """Read ``benchmark`` from ``source`` (default: its Hub id) into items.

    Malformed rows stop the load when ``strict`` and are otherwise excluded with their reason. A load that
    excludes more than ``max_excluded`` of its rows, or leaves a split empty, stops with one line.
    """
    if benchmark.parts:
        loaded = _load_parts(benchmark, source, seed, strict, options, selection)
    else:
        spec = parse_spec(source or benchmark.default_spec, benchmark.name)
        splits = selection.splits_of(benchmark)
        raw = read_local(spec.path, splits, benchmark.subconfigs) if spec.path is not None else \
            read_hub(spec, benchmark.config, splits, benchmark.subconfigs)
        dataset = benchmark.hub_id if spec.is_local else raw.dataset
        loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(),
                              [Provenance(benchmark.name, dataset, spec.recorded(), raw.revision)], selection)
        _convert_rows(loaded, raw, seed, strict, options)
    _check_loaded(loaded, max_excluded)
    logger.info("loaded %s: %s", benchmark.name, {s: len(r) for s, r in loaded.items.items()})
    return loaded


def load_rows(benchmark: Benchmark, rows: Mapping[str, Any], *, seed: int = 0, strict: bool = False,
              options: Any = None, selection: Selection = Selection(),
              max_excluded: float = DEFAULT_MAX_EXCLUDED) -> LoadedSource:
    """Items from rows already in memory (the Python API): ``{split: [row, ...]}`` in the benchmark's Hub
    columns, or for a benchmark with parts ``{part: {split: [row, ...]}}``."""
    if benchmark.parts:
        loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(), [], selection)
        for part in benchmark.parts:
            if part.name in rows:
                _merge(loaded, load_rows(part, rows[part.name], seed=seed, strict=strict, options=options,
                                         selection=selection, max_excluded=1.0))
    else:
        unknown = sorted(set(rows) - set(benchmark.splits))
        if unknown:
            raise SourceError(f"{benchmark.name} has no split {unknown}; its splits are {list(benchmark.splits)}")
        splits = selection.splits_of(benchmark)
        raw = RawSource(benchmark.hub_id, "in-memory", _rows_revision(rows),
                        {("", split): [dict(row) for row in split_rows] for split, split_rows in rows.items()
                         if split in splits})
        loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(),
                              [Provenance(benchmark.name, benchmark.hub_id, "in-memory", raw.revision)], selection)
        _convert_rows(loaded, raw, seed, strict, options)
    _check_loaded(loaded, max_excluded)
    return loaded


def _rows_revision(rows: Mapping[str, Any]) -> str:
    text = json.dumps(rows, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _merge(loaded: LoadedSource, part: LoadedSource) -> None:
    for split, items in part.items.items():
        loaded.items.setdefault(split, []).extend(items)
    for split, count in part.rows_in.items():
        loaded.rows_in[split] = loaded.rows_in.get(split, 0) + count
    loaded.exclusions.extend(part.exclusions)
    loaded.provenance.extend(part.provenance)


def _load_parts(benchmark: Benchmark, source: str | None, seed: int, strict: bool, options: Any,
                selection: Selection) -> LoadedSource:
    specs = _part_specs(benchmark, source)
    loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(), [], selection)
    selection.splits_of(benchmark)
    for part in benchmark.parts:
        if source is not None and part.name not in specs:
            continue  # --source names only some parts
        wanted = tuple(s for s in selection.splits if s in part.splits)
        if selection.splits and not wanted:
            continue
        part_selection = dataclasses.replace(selection, splits=wanted)
        _merge(loaded, load_source(part, specs.get(part.name), seed=seed, strict=strict, options=options,
                                   selection=part_selection, max_excluded=1.0))
    return loaded


def _part_specs(benchmark: Benchmark, source: str | None) -> dict[str, str]:
    """``PART=SPEC,...`` (parts left out read their default), or a folder with one sub-folder per part."""
    names = [p.name for p in benchmark.parts]
    if source is None:
        return {}
    if source != "sample" and Path(source).expanduser().is_dir():
        folder = Path(source).expanduser()
        found = {name: str(folder / name) for name in names if (folder / name).is_dir()}
        if not found:
            raise SourceError(f"{source}: expected sub-folders named {names}")
        return found
    if source == "sample":
        return {name: "sample" for name in names}
    specs = {}
    for entry in source.split(","):
        name, sep, spec = entry.partition("=")
        if not sep or name.strip() not in names:
            raise SourceError(f"--source {source!r}: expected a folder, 'sample', or {'=SPEC,'.join(names)}=SPEC")
        specs[name.strip()] = spec.strip()
    return specs


def _selected(rows: list[dict[str, Any]], subconfig: str, split: str, benchmark: Benchmark, selection: Selection,
              taken: Counter) -> Iterator[tuple[int, dict[str, Any], Any]]:
    """(row index, row, its key in ``taken``) of the rows ``--subjects`` and ``--limit`` keep, indices as in the
    whole source, so that an item keeps its id in any subset. ``--limit`` never cuts the few-shot split, and with
    ``--subjects`` it counts per subject (the first N rows of one subject must not crowd out every other). With
    ``selection.kept`` the reader counts a row in ``taken`` once its item is kept."""
    wanted = set(selection.subjects)
    for index, row in enumerate(rows):
        subject = subconfig if subconfig in wanted else _subject(row, benchmark)
        if wanted and subject not in wanted:
            continue
        key = None
        if selection.limit is not None and split != benchmark.fewshot_split:
            key = (split, subject) if wanted else (split, None)
            if taken[key] >= selection.limit:
                if wanted:
                    continue
                return
            if not selection.kept:
                taken[key] += 1
        yield index, row, key


def _subject(row: Mapping[str, Any], benchmark: Benchmark) -> Any:
    return row.get(benchmark.subject_field) if benchmark.subject_field else None


def source_options(benchmark: Benchmark, options: Any) -> Any:
    """The benchmark's own options (None when it has none), from a builder's options or a mapping of option values:
    an option the builder does not offer keeps its default."""
    if benchmark.options is None:
        return None
    values = options if isinstance(options, Mapping) else vars(options) if options is not None else {}
    return benchmark.options(**{d.name: values[d.name] for d in declared_options(benchmark.options)
                                if d.name in values})


def _convert_rows(loaded: LoadedSource, raw: RawSource, seed: int, strict: bool, options: Any) -> None:
    benchmark = loaded.benchmark
    own_options = source_options(benchmark, options)
    seen_ids: set[str] = set()
    taken: Counter = Counter()
    ordered = sorted(raw.rows.items(), key=lambda kv: (benchmark.splits.index(kv[0][1]), kv[0][0]))
    first: Counter = Counter()  # rows of the split in the sub-configs before this one
    for (subconfig, split), rows in ordered:
        items = loaded.items.setdefault(split, [])
        loaded.rows_in.setdefault(split, 0)
        config = subconfig or benchmark.config or "default"
        selected = _selected(rows, subconfig, split, benchmark, loaded.selection, taken)
        for index, row, key in bar(selected, desc=f"read {benchmark.name}/{subconfig or split}", leave=False):
            loaded.rows_in[split] += 1
            ctx = RowContext(benchmark.name, loaded.dataset, config, split, index, seed, own_options, subconfig,
                             first[split] + index)
            item = None
            try:
                assert benchmark.to_item is not None, "only a benchmark made of parts has no to_item"
                item = benchmark.to_item(row, ctx)
                _check_item(item, seen_ids)
                _check_key_once(item)
            except MalformedRow as error:
                if strict:
                    raise
                loaded.exclusions.add(split, error.row_id, index, "source",
                                      Exclude("malformed_row", error.field, error.problem))
                continue
            except Exclude as error:
                loaded.exclusions.add(split, item.id if item is not None else ctx.default_id, index, "source", error)
                continue
            seen_ids.add(item.id)
            items.append(item)
            if key is not None and loaded.selection.kept:
                taken[key] += 1
        first[split] += len(rows)


DUPLICATED_KEY = "duplicated_key"


def _check_key_once(item: Any) -> None:
    """An item whose key's text is also another option ("687", "687", ...) has two right options, and a model that
    picks the other copy is scored wrong: it is left out of every builder's release, with the reason."""
    if not isinstance(item, MCQRecord):
        return
    key = option_key(item.gold)
    copies = [i for i, choice in enumerate(item.choices) if option_key(choice) == key]
    if len(copies) > 1:
        raise Exclude(DUPLICATED_KEY, "choices",
                      f"the key's text {item.gold!r} is options {', '.join(str(i) for i in copies)} (0-based)")


def _check_item(item: Any, seen_ids: set[str]) -> None:
    """Rules every item meets, whatever its source: a unique id; a multiple-choice item has from two to
    ``MAX_CHOICES`` options, a question, and no empty option (invisible characters are empty). Duplicated options are well-formed: the builders copy such items unchanged."""
    if item.id in seen_ids:
        raise MalformedRow(item.id, "id", "duplicate id")
    if isinstance(item, MCQRecord):
        if len(item.choices) < 2:
            raise MalformedRow(item.id, "choices", f"{len(item.choices)} choices; at least 2 are needed")
        if len(item.choices) > MAX_CHOICES:
            raise MalformedRow(item.id, "choices", f"{len(item.choices)} choices; at most {MAX_CHOICES} can be "
                               f"labelled A to {LETTERS[-1]}")
        if is_blank(item.question):
            raise MalformedRow(item.id, "question", "empty question")
        empty = [i for i, c in enumerate(item.choices) if is_blank(c)]
        if empty:
            raise MalformedRow(item.id, f"choices[{empty[0]}]", "empty option")


def _check_loaded(loaded: LoadedSource, max_excluded: float) -> None:
    """Stop a load that lost most of its rows (another benchmark's layout?) or left a split empty."""
    rows = sum(loaded.rows_in.values())
    excluded = len(loaded.exclusions.entries)
    if rows and excluded > max_excluded * rows and not loaded.full_preview:
        reason, count = Counter((e.reason, e.field, e.detail) for e in loaded.exclusions.entries).most_common(1)[0]
        (why, where, detail) = reason
        raise SourceError(
            f"{excluded} of {rows} source rows ({excluded / rows:.0%}) would be excluded, most often for "
            f"{why} in field {where!r} ({count} rows, e.g. {detail!r}); is this the {loaded.benchmark.name} "
            f"layout? (--max-excluded {max_excluded} allows at most {max_excluded:.0%})")
    empty = [split for split, count in loaded.rows_in.items() if count == 0]
    if empty or not rows:
        subjects = f" of --subjects {' '.join(loaded.selection.subjects)}" if loaded.selection.subjects else ""
        raise SourceError(f"{loaded.source_description}: split {empty[0] if empty else 'any'!r} has no rows{subjects}")


def evaluation_split(splits: Mapping[str, Sized], fewshot_split: str | None = None) -> str:
    """The split a release's tasks score, the one rule of every builder: ``test``, else ``validation``, else the
    first split that is not the few-shot one, among the splits that hold items (in their order); the first split
    when none holds any."""
    names = [name for name, items in splits.items() if len(items)] or list(splits)
    preferred = next((name for name in ("test", "validation") if name in names), None)
    return preferred or next((name for name in names if name != fewshot_split), names[0])
