"""Open-ended source benchmarks (GSM8K, MATH): rows with a question and a gold answer, not options.

They are read with :mod:`builders.core.sources` like every other source (a Hub id or a local copy in
the Hub dataset's columns) and keep the same accounting: every row read is either an
:class:`OpenItem` or an exclusion with its reason. :class:`OpenEndedSource` is a
:class:`~builders.core.adapters.LoadedSource` (what ``Build.source`` needs: provenance, rows in per
split, exclusions) that also carries the items; its ``splits`` of multiple-choice records stay empty.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from builders.core.adapters import Benchmark, LoadedSource, RowContext
from builders.core.errors import MalformedRow, SourceError, UserError
from builders.core.sources import parse_spec, read_hub, read_local
from builders.core.steps import Exclude, ExclusionLog

logger = logging.getLogger(__name__)

MATH_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                 "prealgebra", "precalculus")


@dataclass(frozen=True)
class OpenItem:
    """One open-ended question with its gold answer, as every option will spell it."""

    id: str
    split: str
    index: int  # row in the split, in source order (subject configs concatenated in name order)
    question: str
    gold: str  # the answer as shown among the options
    gold_text: str  # the answer as written in the source
    solution: str
    config: str = "default"
    subject: str | None = None
    category: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)  # extra record metadata (MATH: level)
    # Other answers the source gives for this question (MATH: further boxed answers spelled differently);
    # the builder keeps the item only if they are all equivalent to the gold.
    gold_alternatives: tuple[str, ...] = ()


@dataclass
class OpenEndedSource(LoadedSource):
    items: dict[str, list[OpenItem]] = field(default_factory=dict)
    # Each split's question texts by row, excluded rows included, so that an index is a row number.
    texts: dict[str, list[str]] = field(default_factory=dict)


ItemReader = Callable[[dict[str, Any], RowContext], OpenItem]


def _not_multiple_choice(row: dict[str, Any], ctx: RowContext):
    raise TypeError(f"{ctx.benchmark} is open-ended: read it with builders.from_predictions.sources.load_open_ended")


def open_benchmark(name: str, hub_id: str, config: str | None, splits: tuple[str, ...], license: str,
                   citation: str, pretty_name: str, subconfigs: tuple[str, ...] = ()) -> Benchmark:
    """A :class:`Benchmark` entry for provenance and the card; its rows never become records directly."""
    return Benchmark(name, hub_id, config, splits, _not_multiple_choice, license, citation, pretty_name,
                     subconfigs=subconfigs)


def load_open_ended(benchmark: Benchmark, read_item: ItemReader, source: str | None, splits: Sequence[str],
                    question_field: str, strict: bool = False) -> OpenEndedSource:
    """Read ``splits`` of an open-ended benchmark; rows ``read_item`` rejects become exclusions."""
    unknown = sorted(set(splits) - set(benchmark.splits))
    if unknown:
        raise UserError(f"{benchmark.name} has no split {unknown}; splits: {list(benchmark.splits)}")
    default = benchmark.hub_id + (f":{benchmark.config}" if benchmark.config else "")
    spec = parse_spec(source or default, benchmark.name)
    wanted = tuple(s for s in benchmark.splits if s in splits)
    if spec.is_local:
        raw = read_local(spec.path, wanted, benchmark.subconfigs)
    else:
        raw = read_hub(spec, benchmark.config, wanted, benchmark.subconfigs)
    loaded = OpenEndedSource(benchmark, spec, benchmark.hub_id if spec.is_local else raw.dataset, raw.revision,
                             {}, {}, ExclusionLog())
    for split in wanted:
        parts = sorted((sub, rows) for (sub, s), rows in raw.rows.items() if s == split)
        rows = [(sub, row) for sub, part in parts for row in part]
        if not parts:
            continue
        loaded.rows_in[split] = len(rows)
        loaded.items[split] = _read_items(loaded, benchmark, read_item, split, rows, strict)
        loaded.texts[split] = [row.get(question_field) if isinstance(row.get(question_field), str) else ""
                               for _, row in rows]
    if not loaded.rows_in:
        raise SourceError(f"{spec.describe()} has none of the splits {list(wanted)}")
    logger.info("loaded %s from %s: %s", benchmark.name, spec.describe(),
                {s: len(items) for s, items in loaded.items.items()})
    return loaded


def _read_items(loaded: OpenEndedSource, benchmark: Benchmark, read_item: ItemReader, split: str,
                rows: list[tuple[str, dict]], strict: bool) -> list[OpenItem]:
    items = []
    for index, (subconfig, row) in enumerate(rows):
        config = subconfig or benchmark.config or "default"
        ctx = RowContext(benchmark.name, loaded.dataset, config, split, index, 0, {}, "")
        try:
            items.append(read_item(row, ctx))
        except MalformedRow as error:
            if strict:
                raise
            loaded.exclusions.add(split, error.row_id, index, "source", Exclude("malformed_row", error.field, error.problem))
        except Exclude as error:
            loaded.exclusions.add(split, ctx.default_id, index, "source", error)
    return items


def text_field(row: Mapping[str, Any], name: str, row_id: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise MalformedRow(row_id, name, "missing or not a non-empty string")
    return value
