"""The builder's invariants: written independently of the code that built the items."""

from __future__ import annotations

from builders.core.build.result import Build, Check


def _pairs(build: Build):
    originals = {r.id: r for records in build.configs["original"].values() for r in records}
    for config, split, records in build.records():
        if config != "original":
            for record in records:
                yield f"{config}/{split} {record.id}", record, originals[record.id]


def _same_options_same_gold(build: Build):
    for where, record, original in _pairs(build):
        if sorted(record.choices) != sorted(original.choices):
            yield f"{where}: the options are not the original's"
        elif record.choices[record.answer] != original.choices[original.answer]:
            yield f"{where}: the gold text changed from {original.choices[original.answer]!r}"


def _copied_unchanged(build: Build):
    for where, record, original in _pairs(build):
        if record.metadata["skip_reason"] and record.choices != original.choices:
            yield f"{where}: copied unchanged, but its options moved"


CHECKS = [
    Check("same_options_same_gold", "every item has the original's options, and its gold is the original's text",
          _same_options_same_gold),
    Check("skipped_unchanged", "an item copied with a reason has its options in the original order", _copied_unchanged),
]
