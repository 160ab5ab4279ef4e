"""Drawing the questions to label: a stratified sample from source benchmarks, split into train and eval.

Within each benchmark the sample is stratified by subject (or category) with proportional allocation;
the train/eval split is stratified by benchmark. Every draw ranks items by a generator seeded with
(seed, item id, purpose), so an item's fate does not depend on the order or the other items.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import MCQRecord
from builders.core.items.referring import position_dependent_reason
from builders.core.items.rng import item_rng
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import Selection, load_source

from .data import write_jsonl

logger = logging.getLogger(__name__)

SAMPLE_INFO = "sample.json"


@dataclass
class SourceSample:
    benchmark: str
    spec: str
    dataset: str
    revision: str
    splits: list[str]
    candidates: int
    skipped_position_dependent: int
    drawn: list[MCQRecord] = field(default_factory=list)
    dropped: dict[str, Any] = field(default_factory=dict)  # the rows the load left out, per reason (sample.json)


# rows each source's layout is checked on before any source is read whole: its first items, kept or not
LAYOUT_PROBE_ITEMS = 20


def check_layouts(sources: Mapping[str, str | None], seed: int) -> None:
    """Read the first items of every source, so that a source in another benchmark's layout (or a bad spec) is one
    line before the others are read whole (a wrong fourth source was found after three full reads)."""
    for name, spec in sources.items():
        if name not in BENCHMARKS:
            raise UserError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}")
        try:
            load_source(BENCHMARKS[name], spec, seed=seed, selection=Selection(limit=LAYOUT_PROBE_ITEMS, kept=True))
        except UserError as error:
            raise UserError(f"--source {name}{'=' + spec if spec else ''}: {error}") from None


def dropped_at_load(exclusions: Sequence[Any]) -> dict[str, Any]:
    """The rows a load left out, counted per reason and field, each with an example: what sample.json records."""
    reasons: dict[str, dict[str, Any]] = {}
    for entry in exclusions:
        key = f"{entry.reason} ({entry.field})" if entry.field else entry.reason
        found = reasons.setdefault(key, {"rows": 0, "example": entry.id, "detail": entry.detail})
        found["rows"] += 1
    return {"rows": len(exclusions), "reasons": dict(sorted(reasons.items(), key=lambda kv: (-kv[1]["rows"], kv[0])))}


def draw_from_benchmark(name: str, spec: str | None, size: int, seed: int, splits: Sequence[str] | None,
                        keep_position_dependent: bool) -> SourceSample:
    if name not in BENCHMARKS:
        raise UserError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}")
    loaded = load_source(BENCHMARKS[name], spec, seed=seed)
    chosen_splits = _splits(loaded.benchmark.name, list(loaded.items), loaded.benchmark.fewshot_split, splits)
    records = [r for split in chosen_splits for r in loaded.items[split]]
    # Options that refer to each other ("all of the above") make WiCkeD skip the item anyway: no label needed.
    eligible = [r for r in records if keep_position_dependent or position_dependent_reason(r.choices) is None]
    source = SourceSample(name, loaded.source_description, loaded.dataset, loaded.revision, chosen_splits,
                          len(eligible), len(records) - len(eligible))
    source.drawn = stratified_draw(eligible, size, seed)
    source.dropped = dropped_at_load(loaded.exclusions.entries)
    if source.dropped["rows"]:
        logger.warning("%s: %d source rows left out at load: %s", name, source.dropped["rows"],
                       ", ".join(f"{reason} {found['rows']}" for reason, found in source.dropped["reasons"].items()))
    logger.info("%s: drew %d of %d eligible questions from %s", name, len(source.drawn), len(eligible), chosen_splits)
    return source


def _splits(name: str, available: list[str], fewshot: str | None, wanted: Sequence[str] | None) -> list[str]:
    if wanted:
        chosen = [s for s in wanted if s in available]
        if not chosen:
            raise UserError(f"{name} has none of the splits {list(wanted)}; it has {available}")
        return chosen
    chosen = [s for s in available if s != fewshot]
    return chosen or available


def stratum(record: MCQRecord) -> str:
    return record.subject or record.category or ""


def stratified_draw(records: Sequence[MCQRecord], size: int, seed: int) -> list[MCQRecord]:
    """``size`` records, allocated to strata in proportion to their sizes (largest remainders)."""
    if size >= len(records):
        return sorted(records, key=lambda r: r.id)
    groups: dict[str, list[MCQRecord]] = {}
    for record in records:
        groups.setdefault(stratum(record), []).append(record)
    quotas = {name: size * len(members) / len(records) for name, members in groups.items()}
    counts = {name: int(q) for name, q in quotas.items()}
    by_remainder = sorted(groups, key=lambda name: (-(quotas[name] - counts[name]), name))
    for name in by_remainder[: size - sum(counts.values())]:
        counts[name] += 1
    drawn = []
    for name, members in sorted(groups.items()):
        ranked = sorted(members, key=lambda r: (item_rng(seed, r.id, "sba_sample").random(), r.id))
        drawn.extend(ranked[: counts[name]])
    return sorted(drawn, key=lambda r: r.id)


def split_train_eval(records: Sequence[MCQRecord], eval_fraction: float, seed: int
                     ) -> tuple[list[MCQRecord], list[MCQRecord]]:
    ranked = sorted(records, key=lambda r: (item_rng(seed, r.id, "sba_eval_split").random(), r.id))
    held = {r.id for r in ranked[: round(eval_fraction * len(ranked))]}
    return [r for r in records if r.id not in held], [r for r in records if r.id in held]


def question_row(record: MCQRecord, benchmark: str) -> dict[str, Any]:
    row = {"id": record.id, "source": benchmark, "question": record.question, "choices": list(record.choices),
           "answer": record.answer}
    if stratum(record):
        row["stratum"] = stratum(record)
    return row


def write_sample(sources: Sequence[SourceSample], eval_fraction: float, seed: int, output: Path) -> dict[str, Any]:
    """Write ``train.jsonl``, ``eval.jsonl`` and ``sample.json`` (what was drawn from where) to ``output``."""
    train_rows, eval_rows = [], []
    for source in sources:
        train, held = split_train_eval(source.drawn, eval_fraction, seed)
        train_rows += [question_row(r, source.benchmark) for r in train]
        eval_rows += [question_row(r, source.benchmark) for r in held]
    output = Path(output)
    write_jsonl(output / "train.jsonl", train_rows)
    write_jsonl(output / "eval.jsonl", eval_rows)
    info = {
        "seed": seed, "eval_fraction": eval_fraction,
        "train": _per_source(train_rows), "eval": _per_source(eval_rows),
        "sources": [{"benchmark": s.benchmark, "spec": s.spec, "dataset": s.dataset, "revision": s.revision,
                     "splits": s.splits, "eligible": s.candidates, "drawn": len(s.drawn),
                     "skipped_position_dependent": s.skipped_position_dependent, "dropped_at_load": s.dropped}
                    for s in sources],
    }
    (output / SAMPLE_INFO).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return info


def _per_source(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(row["source"] for row in rows).items()))


def parse_source_args(values: Sequence[str]) -> dict[str, str | None]:
    """``NAME`` or ``NAME=SPEC`` (a local copy or Hub id) per benchmark, in the order given."""
    sources: dict[str, str | None] = {}
    for value in values:
        name, _, spec = value.partition("=")
        if name not in BENCHMARKS:
            raise UserError(f"unknown benchmark {name!r}; choose from {sorted(BENCHMARKS)}")
        if name in sources:
            raise UserError(f"benchmark {name} given twice")
        sources[name] = spec or None
    return sources


def parse_sizes(values: Sequence[str], default: int) -> dict[str, int]:
    """``--size 1000`` for every source, or ``--size mmlu=500`` for one."""
    sizes: dict[str, int] = {"*": default}
    for value in values:
        name, _, number = value.rpartition("=")
        try:
            count = int(number)
        except ValueError:
            raise UserError(f"--size expects N or NAME=N, got {value!r}") from None
        if count < 1:
            raise UserError(f"--size must be positive, got {value!r}")
        sizes[name or "*"] = count
    return sizes
