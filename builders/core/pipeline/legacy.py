"""TEMPORARY compatibility path for the builders not yet in the one builder shape (CONTRIBUTING.md): delete this
module once no builder imports it.

A legacy builder declares its arguments with argparse (``add_arguments``, ``cli.runtime_group`` for the runtime
ones), checks them (``check_arguments``), makes its options from the namespace (``make_options``) and returns the
old 20-field :class:`Build`, with its own configs, exclusions and outcome counts (:func:`run_steps`, whose counts
may name ``every config``). :class:`Builder` runs it through the same command line, API and validation as a
builder of the new shape: its parameters are recorded from the namespace as before, and :meth:`Build.converted`
turns what it returns into the core's :class:`~builders.core.build.result.Build`, its counts per real config.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from builders.core.build.result import About, Baseline, Check, Configs, Release, TaskLocation
from builders.core.build.result import Build as CoreBuild
from builders.core.items.outcomes import EVERY_CONFIG, Exclude, ExclusionLog, Outcomes, Skip
from builders.core.items.tables import Statistics
from builders.core.options.declare import add_option_arguments, declared_options
from builders.core.pipeline.options import BuildOptions, recorded_when_set
from builders.core.pipeline.steps import SOURCE_UNCHANGED, item_location
from builders.core.release.build_config import recorded_value
from builders.core.runtime.models import check_model
from builders.core.sources.loading import Benchmark, LoadedSource

Item = TypeVar("Item")


def runtime_group(parser: argparse.ArgumentParser, title: str) -> argparse._ArgumentGroup:
    """An argument group for options about where and how fast a build runs: never recorded."""
    group = parser.add_argument_group(f"{title} (runtime: not recorded in build_config.yaml)")
    group.runtime = True  # type: ignore[attr-defined]
    return group


@dataclass(kw_only=True)
class Build:
    """What a legacy builder returns (the old ``Build``)."""

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
    extra_columns: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    card_template: str | None = None
    card_context: dict[str, Any] = field(default_factory=dict)
    rows_in: dict[str, int] | None = None
    lm_eval_tasks: Callable[[TaskLocation], dict[str, bytes]] | None = None
    baselines: list[Baseline] = field(default_factory=list)
    inherent_baselines: dict[str, str] = field(default_factory=dict)
    unchanged_config: str | None = None
    outcomes: Outcomes = field(default_factory=Outcomes)

    def __post_init__(self) -> None:
        if self.rows_in is None:
            self.rows_in = dict(self.source.rows_in)

    def records(self) -> Iterable[tuple[str, str, list]]:
        for config, splits in self.configs.items():
            for split, records in splits.items():
                yield config, split, records

    def converted(self, params: dict[str, Any]) -> CoreBuild:
        rows_in = self.rows_in if self.rows_in is not None else dict(self.source.rows_in)
        release = Release(metadata_features=self.metadata_features, extra_columns=self.extra_columns,
                          checks=self.checks, statistics=self.statistics, extra_files=self.extra_files,
                          card_context=self.card_context, lm_eval_tasks=self.lm_eval_tasks, baselines=self.baselines,
                          inherent_baselines=self.inherent_baselines, rows_in=rows_in)
        about = About(self.builder, self.title, self.method_citation, self.card_template, self.unchanged_config)
        return CoreBuild(about=about, source=self.source, params={**params, **self.params}, configs=self.configs,
                         exclusions=self.exclusions, outcomes=self.per_config(rows_in), rows_in=rows_in,
                         release=release)

    def per_config(self, rows_in: Mapping[str, int]) -> Outcomes:
        """The counts per real config: ``every config`` is each of them, and the unchanged config, which legacy
        builders did not count, holds every item it has copied unchanged."""
        outcomes = Outcomes()
        for (label, split, outcome, reason), n in self.outcomes.counts.items():
            if label != EVERY_CONFIG and label not in self.configs:
                raise ValueError(f"{self.builder}: outcome counts for {label!r}, which is no config")
            for config in self.configs if label == EVERY_CONFIG else [label]:
                outcomes.counts[config, split, outcome, reason] += n
                outcomes.ran.add((config, split))
        # a config with no record at all (every row excluded) has nothing to count: it is accounted for
        counted = {config for config, _ in outcomes.ran} | {
            config for config, splits in self.configs.items() if not any(splits.values())}
        if self.unchanged_config in self.configs and self.unchanged_config not in counted:
            for split, records in self.configs[self.unchanged_config].items():
                outcomes.copied(split, SOURCE_UNCHANGED, self.unchanged_config, len(records))
        for config in counted:
            outcomes.ran.update((config, split) for split in rows_in)
        return outcomes


def run_steps(items: Mapping[str, Sequence[Item]], steps: Sequence[tuple[str, Callable[[Any], Any]]], *,
              exclusions: ExclusionLog | None = None, copy: Callable[[Item, str], Any] | None = None,
              configs: str = EVERY_CONFIG) -> tuple[dict[str, list[Any]], Outcomes]:
    """The old per-item loop: the steps in turn on every item (Skip: copied, Exclude: logged in ``exclusions``,
    which without a log propagates); the outputs per split and the counts under the label ``configs``."""
    outputs: dict[str, list[Any]] = {}
    outcomes = Outcomes()
    for split, split_items in items.items():
        kept: list[Any] = []
        outputs[split] = kept
        for item in split_items:
            output: Any = item
            for name, step in steps:
                try:
                    output = step(output)
                except Skip as skip:
                    kept.append(copy(item, skip.reason) if copy is not None else item)
                    outcomes.copied(split, skip.reason, configs)
                    break
                except Exclude as error:
                    if exclusions is None:
                        raise
                    item_id, index = item_location(item)
                    exclusions.add(split, item_id, index, name, error)
                    break
            else:
                kept.append(output)
                outcomes.altered(split, configs)
    return outputs, outcomes


@dataclass(frozen=True)
class Builder:
    """A legacy builder: its argparse arguments, checks and options maker, and a build that returns :class:`Build`."""

    name: str
    description: str
    benchmarks: Sequence[Benchmark]
    add_arguments: Callable[[argparse.ArgumentParser], None]
    build: Callable[[LoadedSource, Any], Build]
    check_arguments: Callable[[argparse.Namespace], None] = lambda args: None
    llm_models: Callable[[Any], list[str]] = lambda options: []
    models: Callable[[Any], list[Any]] = lambda options: []
    preview_subset: bool = True
    selection_reasons: frozenset[str] = frozenset()
    epilog: str = ""
    evaluation_table: Callable[..., Statistics] | None = None
    sample_options: tuple[str, ...] = ()
    make_options: Callable[[argparse.Namespace], Any] = field(kw_only=True)

    def benchmark(self, name: str) -> Benchmark:
        for benchmark in self.benchmarks:
            if benchmark.name == name:
                return benchmark
        raise KeyError(name)

    def add_builder_arguments(self, parser: argparse.ArgumentParser) -> None:
        names = [b.name for b in self.benchmarks]
        add_option_arguments(parser, BuildOptions, choices={"benchmark": names}, defaults={"benchmark": names[0]},
                             first=BuildOptions)
        self.add_arguments(parser)

    def not_recorded(self, parser: argparse.ArgumentParser) -> set[str]:
        runtime = {a.dest for g in parser._action_groups if getattr(g, "runtime", False) for a in g._group_actions}
        return runtime | {d.name for d in declared_options(BuildOptions) if not d.recorded}

    def options_of(self, args: argparse.Namespace) -> Any:
        self.check_arguments(args)
        options = self.make_options(args)
        dataclass_params = getattr(type(options), "__dataclass_params__", None)  # set on every dataclass
        if dataclass_params is None or not dataclass_params.frozen:
            raise TypeError(f"{self.name}: make_options gave a {type(options).__name__}, not a frozen dataclass")
        return options

    def check_services(self, options: Any, args: argparse.Namespace) -> None:
        for model in self.models(options):
            check_model(model)
        if self.llm_models(options):
            from builders.core.llm.settings import LLMSettings, check_endpoint

            check_endpoint(LLMSettings.from_args(args))

    def source_options(self, args: argparse.Namespace, options: Any) -> Any:
        return vars(args)

    def params(self, args: argparse.Namespace, options: Any, parser: argparse.ArgumentParser) -> dict[str, Any]:
        """Every option that is not runtime or delivery, from the namespace, with the default the options derived
        for an option left unset, in the field named as the option."""
        derived = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
                   if f.name in vars(args) and getattr(args, f.name) in (None, [])}
        skipped: set[str] = getattr(parser, "not_recorded", set())
        return recorded_when_set({k: recorded_value(v) for k, v in sorted({**vars(args), **derived}.items())
                                  if k not in skipped})

    def make_build(self, source: LoadedSource, options: Any, params: dict[str, Any]) -> CoreBuild:
        return self.build(source, options).converted(params)
