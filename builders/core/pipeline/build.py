"""What a builder is, and what it hands to validation, the release writer and the publisher."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from builders.core.items.record import MCQRecord
from builders.core.items.tables import Statistics
from builders.core.pipeline.steps import ExclusionLog, Outcomes
from builders.core.sources.loading import Benchmark, LoadedSource

Configs = dict[str, dict[str, list[MCQRecord]]]


@dataclass(frozen=True)
class Check:
    """A builder invariant: ``find_violations`` yields one message per broken item."""

    name: str
    description: str
    find_violations: Callable[["Build"], Iterable[str]]


@dataclass(frozen=True)
class Baseline:
    """A no-knowledge answering rule for the shortcut audit: ``predict`` picks an option index from what a
    model sees (question and options), or None where the rule does not apply (it abstains: the rule is scored
    over the items it applies to). ``mirror`` names the rule that picks the opposite (shortest for longest)."""

    name: str
    description: str
    predict: Callable[[MCQRecord], int | None]
    mirror: str | None = None


@dataclass(frozen=True)
class TaskLocation:
    """Where the lm-eval tasks of a release read it: the published repo and tag, or (None) the release
    folder the tasks sit in."""

    repo_id: str | None = None
    revision: str | None = None  # the release tag, "vX.Y.Z"


@dataclass(kw_only=True)
class Build:
    """The output of one builder run, before validation and writing.

    ``exclusions`` holds the source's exclusions plus the builder's; an exclusion whose ``config`` is
    None applies to every config. ``rows_in`` defaults to the source's rows per split (a builder whose
    output splits are not the source's sets its own). ``statistics`` are tables of numbers, rendered
    once by the release writer. ``lm_eval_tasks`` renders the release's lm-eval task folder for where
    the release is read from. ``baselines`` are the builder's own shortcut-audit rules, and
    ``inherent_baselines`` names the baselines (or the choices-only model, ``choices_only_model``) that beat
    chance by design, with the reason (keyed ``"<config>/<name>"`` or ``"<name>"``). ``outcomes`` counts the
    items altered and copied unchanged (:func:`.steps.run_steps`), shown with the exclusions in the card's one
    outcome table (:func:`.steps.outcome_table`). ``unchanged_config`` names the
    config that holds the source unchanged (WiCkeD's `original`): a shortcut it carries is the source's, and
    another config no further above chance on that rule is marked as inheriting it (:func:`.audit.inherit_from_source`).
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
    statistics: Statistics = field(default_factory=Statistics)
    extra_files: dict[str, bytes] = field(default_factory=dict)
    # {config: {column: feature}}: top-level columns beyond the base ones, read from ``MCQRecord.columns``.
    extra_columns: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    card_template: str | None = None
    card_context: dict[str, Any] = field(default_factory=dict)
    rows_in: dict[str, int] | None = None
    lm_eval_tasks: Callable[[TaskLocation], dict[str, bytes]] | None = None
    baselines: list[Baseline] = field(default_factory=list)
    inherent_baselines: dict[str, str] = field(default_factory=dict)
    unchanged_config: str | None = None
    # what the builder's steps did with the rows they kept: altered, or copied unchanged with the reason
    # (:func:`.steps.run_steps`); the card's outcome table adds ``exclusions`` to them
    outcomes: Outcomes = field(default_factory=Outcomes)

    def __post_init__(self) -> None:
        if self.rows_in is None:
            self.rows_in = dict(self.source.rows_in)

    def records(self) -> Iterable[tuple[str, str, list[MCQRecord]]]:
        for config, splits in self.configs.items():
            for split, records in splits.items():
                yield config, split, records


@dataclass(frozen=True)
class Builder:
    """One builder, as the command line and the Python API run it.

    ``benchmarks``: the sources it reads (the first is the default). ``check_arguments`` finds bad options
    before any source is loaded or any paid call is made; ``make_options`` then makes, once, the builder's typed
    and frozen options from the arguments (defaults derived from other options included), which ``build``,
    ``llm_models`` and ``models`` take: no builder sees the namespace after that. For an option left unset, a field
    of the options named as the option holds the default derived for it, which ``build_config.yaml`` records
    (``build_config.arguments_as_built``); name a field otherwise when its value must not be recorded. ``llm_models``
    names the models a build will call (their endpoint is checked before loading); ``models`` the models it loads
    here (a classifier, an embedder: checked too). ``selection_reasons``: exclusions that are what the method
    selects, not rows lost. ``preview_subset``: whether ``--preview K`` may build from the first K items only
    (False for builders that need the whole source, such as contrast-set mining).
    """

    name: str
    description: str
    benchmarks: Sequence[Benchmark]
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[LoadedSource, Any], Build]  # (source, the options make_options made)
    check_arguments: Callable[[argparse.Namespace], None] = lambda args: None
    llm_models: Callable[[Any], list[str]] = lambda options: []
    models: Callable[[Any], list[Any]] = lambda options: []  # [core.models.ModelToLoad]
    preview_subset: bool = True
    # exclusion reasons that are the method's selection, not rows lost (contrast sets keep only matched
    # questions): listed and counted as any exclusion, but not held against --max-excluded
    selection_reasons: frozenset[str] = frozenset()
    epilog: str = ""  # shown at the end of --help (other commands of the builder)
    # the table its paper reports, from lm-eval runs on the release's tasks (``python -m builders evaluate``):
    # (runs {model: {task: TaskResult}}, lm_eval/manifest.json, options) -> Statistics
    evaluation_table: Callable[..., Statistics] | None = None
    # the builder's options (a frozen dataclass) from the parsed and checked arguments
    make_options: Callable[[argparse.Namespace], Any] = field(kw_only=True)

    def benchmark(self, name: str) -> Benchmark:
        for benchmark in self.benchmarks:
            if benchmark.name == name:
                return benchmark
        raise KeyError(name)
