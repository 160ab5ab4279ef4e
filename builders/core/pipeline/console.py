"""What a build prints on the console: the end-of-run summary and ``--preview``'s items with what changed in each."""

from __future__ import annotations

import sys
from typing import Any, Sequence

from builders.core.build.result import Build
from builders.core.items.outcomes import configs_label
from builders.core.items.record import LETTERS, MCQRecord
from builders.core.items.tables import Table
from builders.core.validation.validate import ValidationReport


def print_summary(build: Build, report: ValidationReport, where: Sequence[str], out=None) -> None:
    out = out or sys.stdout
    print(f"\n{build.about.title}: {len(build.configs)} configs from {build.source.source_description}", file=out)
    print(rows_summary(report).to_markdown(), file=out)
    reasons: dict[str, int] = {}
    for split_reasons in report.exclusion_reasons.values():
        for reason, count in split_reasons.items():
            reasons[reason] = reasons.get(reason, 0) + count
    if reasons:
        top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        print("top exclusion reasons: " + ", ".join(f"{r} ({n})" for r, n in top), file=out)
    print(f"shortcut audit: {len(report.warnings)} warning(s)", file=out)
    for warning in report.warnings:
        print(f"  WARNING {warning}", file=out)
    for line in where:
        print(line, file=out)


def rows_summary(report: ValidationReport) -> Table:
    """Rows in, out and excluded per split, one row per group of configs whose counts are the same (a
    perturbations build listed 58 rows of the same three numbers); the card and the report keep every config."""
    groups: dict[tuple, list[str]] = {}
    for config, splits in report.counts.items():
        key = tuple((split, n["in"], n["out"], n["excluded"]) for split, n in splits.items())
        groups.setdefault(key, []).append(config)
    rows = tuple((configs_label(configs, len(report.counts)), *counts) for key, configs in groups.items()
                 for counts in key)
    return Table("Rows per config", ("config", "split", "rows in", "rows out", "excluded"), rows)


def print_preview(build: Build, count: int, out=None) -> None:
    """K items of the first transformed config (the first config when there is only one), each with what changed
    from its source item; nothing is written."""
    out = out or sys.stdout
    names = list(build.configs)
    config = next((n for n in names if n not in ("original", "default")), names[0])
    sources = {item.id: item for items in build.source.items.values() for item in items}
    shown = 0
    for split, records in build.configs[config].items():
        for record in records[: count - shown]:
            print(f"--- {config}/{split} {record.id}", file=out)
            print(record.question, file=out)
            for index, choice in enumerate(record.choices):
                mark = "*" if index == record.answer else " "
                print(f" {mark} {letter(index)}. {choice}", file=out)
            print(f"changed: {item_changes(sources.get(record.id), record)}", file=out)
            shown += 1
        if shown >= count:
            break
    print(f"(preview: {shown} items of config {config!r}; {len(names)} configs: {', '.join(names)}; nothing written)",
          file=out)


def letter(index: int) -> str:
    return LETTERS[index] if index < len(LETTERS) else str(index)


def item_changes(before: Any, after: MCQRecord) -> str:
    """What a builder did to one item, as ``--preview`` says it: ``removed C 'Mars'; added D 'None of the above';
    gold stays A``. Options are compared by their text; the gold by its text and its letter."""
    if not isinstance(before, MCQRecord):
        made = "made from the source's open question" if before is not None else "a new item (no source item of its id)"
        return f"{made}: {len(after.choices)} options, gold {letter(after.answer)} {after.gold!r}"
    parts = []
    if after.question != before.question:
        parts.append("question rewritten")
    removed = [(i, c) for i, c in enumerate(before.choices) if c not in after.choices]
    added = [(i, c) for i, c in enumerate(after.choices) if c not in before.choices]
    parts += [f"removed {letter(i)} {c!r}" for i, c in removed]
    parts += [f"added {letter(i)} {c!r}" for i, c in added]
    kept_before = [c for c in before.choices if c in after.choices]
    kept_after = [c for c in after.choices if c in before.choices]
    if kept_before != kept_after:
        parts.append("options reordered")
    if after.gold != before.gold:
        parts.append(f"gold changes from {letter(before.answer)} {before.gold!r} to {letter(after.answer)} "
                     f"{after.gold!r}")
    elif after.answer != before.answer:
        parts.append(f"gold moves {letter(before.answer)} -> {letter(after.answer)}")
    else:
        parts.append(f"gold stays {letter(after.answer)}")
    if len(parts) == 1 and parts[0].startswith("gold stays"):
        return f"nothing (copied as the source has it); gold stays {letter(after.answer)}"
    return "; ".join(parts)
