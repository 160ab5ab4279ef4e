"""What a builder hands to validation, the release writer and the publisher."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from .adapters import LoadedSource
from .record import MCQRecord
from .steps import ExclusionLog

Configs = dict[str, dict[str, list[MCQRecord]]]


@dataclass(frozen=True)
class Check:
    """A builder invariant: ``find_violations`` yields one message per broken item."""

    name: str
    description: str
    find_violations: Callable[["Build"], Iterable[str]]


@dataclass
class Build:
    """The output of one builder run, before validation and writing.

    ``exclusions`` holds the source's exclusions plus the builder's; an exclusion whose ``config`` is
    None applies to every config. ``statistics`` is rendered into the card as Markdown sections.
    """

    builder: str
    title: str
    method_citation: str
    source: LoadedSource
    params: dict[str, Any]
    configs: Configs
    metadata_features: Mapping[str, Mapping[str, Any]]
    exclusions: ExclusionLog
    checks: list[Check] = field(default_factory=list)
    statistics: dict[str, str] = field(default_factory=dict)
    extra_files: dict[str, bytes] = field(default_factory=dict)
    # {config: {column: feature}}: top-level columns beyond the base ones, read from ``MCQRecord.columns``.
    extra_columns: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    card_template: str | None = None
    card_context: dict[str, Any] = field(default_factory=dict)

    def records(self) -> Iterable[tuple[str, str, list[MCQRecord]]]:
        for config, splits in self.configs.items():
            for split, records in splits.items():
                yield config, split, records
