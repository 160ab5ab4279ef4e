"""What a builder is: the one declaration of a builder package, which the command line and the Python API run.

    BUILDER = Builder(name="wicked", title="WiCkeD {benchmark}", description=__doc__.split("\\n\\n")[0],
                      citation=CITATION, benchmarks=[...], options=Options, build=build,
                      unchanged_config="original", evaluation_table=evaluation_table)

and in the package's ``__init__.py``: ``main, build_dataset = BUILDER.main, BUILDER.build_dataset``. The core does
the rest: the command line and ``--help`` from the options' fields, the checks before any source is read, loading
the source, the run of the builder's steps (:class:`~builders.core.pipeline.steps.Run`: the configs, the outcome
counts, the exclusion log), the build's params from the recorded options, validation, writing and publishing.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from builders.core.build.result import About, Build, Release
from builders.core.items.tables import Statistics
from builders.core.options.declare import (
    add_option_arguments,
    changed_options,
    declared_options,
    each_class,
    from_arguments,
    option_values,
)
from builders.core.pipeline import api, cli
from builders.core.pipeline.options import BuildOptions, llm_settings, recorded_when_set
from builders.core.pipeline.steps import Run
from builders.core.release.build_config import recorded_value
from builders.core.runtime.models import check_model
from builders.core.sources.loading import Benchmark, LoadedSource


@dataclass(frozen=True, kw_only=True)
class Builder:
    """One builder, declared once.

    ``title``: the release's title, with ``{benchmark}`` for the source's name and ``{options}`` for the options
    (``"GSM-MC{options.title_suffix}"``). ``benchmarks``: the sources it reads (the first is the default).
    ``options``: its frozen options class, which extends :class:`~builders.core.pipeline.options.BuildOptions`.
    ``build(source, options, run)`` makes the configs with ``run`` and returns the rest of the release
    (:class:`~builders.core.build.result.Release`). ``unchanged_config``: the config that holds the source as it is.
    ``card_template``: the card's method section (``cards/<name>.md`` unless named). ``evaluation_table``: the table
    its paper reports, from lm-eval runs on the release's tasks (``python -m builders evaluate``): (runs {model:
    {task: TaskResult}}, lm_eval/manifest.json, options) -> Statistics. ``preview_subset``: whether ``--preview K``
    may build from the first K items only (False for builders that need the whole source, as contrast-set mining).
    ``selection_reasons``: exclusion reasons that are the method's selection, not rows lost (listed and counted as
    any exclusion, but not held against ``--max-excluded``). ``commands``: the builder's other commands
    (``python -m builders.<name> COMMAND ...``), each ``(argv) -> status``, named in ``--help``'s epilog.
    ``sample_options``: what a build from the embedded sample (``--source sample``) needs besides, to run offline on
    any clone (WiCkeD: ``--sba-classifier none``, the classifier's weights being on the Hub); the tests and the
    benchmark scripts build every builder's sample with them.
    """

    name: str
    title: str
    description: str
    citation: str
    benchmarks: Sequence[Benchmark]
    options: type[BuildOptions]
    build: Callable[[LoadedSource, Any, Run], Release]
    unchanged_config: str | None = None
    card_template: str | None = None
    evaluation_table: Callable[..., Statistics] | None = None
    preview_subset: bool = True
    selection_reasons: frozenset[str] = frozenset()
    commands: Mapping[str, Callable[[Sequence[str]], int]] = field(default_factory=dict)
    sample_options: tuple[str, ...] = ()

    @property
    def epilog(self) -> str:
        return f"other commands: {', '.join(self.commands)} (each with --help)" if self.commands else ""

    def main(self, argv: Sequence[str] | None = None) -> int:
        """``python -m builders.<name> ...``: a build, or one of the builder's other commands."""
        argv = list(sys.argv[1:] if argv is None else argv)
        if argv and argv[0] in self.commands:
            logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
            return cli.exit_code(lambda: self.commands[argv[0]](argv[1:]))
        return cli.main(self, argv)

    def build_dataset(self, data: Any, **options: Any) -> api.BuildResult:
        """The build from rows in memory, with keyword options (see :mod:`builders.core.pipeline.api`)."""
        return api.build_dataset(self, data, **options)

    def benchmark(self, name: str) -> Benchmark:
        for benchmark in self.benchmarks:
            if benchmark.name == name:
                return benchmark
        raise KeyError(name)

    # ---- what the command line and the Python API ask of a builder ----------------------------------------

    def add_builder_arguments(self, parser: argparse.ArgumentParser) -> None:
        names = [b.name for b in self.benchmarks]
        add_option_arguments(parser, self.options, choices={"benchmark": names}, defaults={"benchmark": names[0]},
                             first=BuildOptions)

    def not_recorded(self, parser: argparse.ArgumentParser) -> set[str]:
        return {d.name for d in declared_options(self.options) if not d.recorded}

    def options_of(self, args: argparse.Namespace) -> BuildOptions:
        """The options, made once: the rules between them checked, the models they name found, then the derived
        defaults filled in (a classifier's threshold is read from the classifier)."""
        options = from_arguments(self.options, args)
        for check in each_class(options, "check"):
            check(options)
        for model in options.models():
            check_model(model)
        derived = options
        for derive in each_class(options, "derived"):
            derived = derive(derived)
        changed = changed_options(options, derived)
        if changed or type(derived) is not self.options:
            raise TypeError(f"{self.name}: derived() changed options that were set: {changed or type(derived)}")
        return derived

    def check_services(self, options: Any, args: argparse.Namespace) -> None:
        if options.llm_models():
            from builders.core.llm.settings import check_endpoint

            check_endpoint(llm_settings(options))

    def source_options(self, args: argparse.Namespace, options: Any) -> Any:
        return options if options is not None else vars(args)

    def params(self, args: argparse.Namespace, options: Any, parser: argparse.ArgumentParser) -> dict[str, Any]:
        return recorded_params(options)

    def options_from(self, argv: Sequence[str]) -> BuildOptions:
        """The options that these command-line words give, checked and derived, as a build would take them."""
        return self.options_of(cli.builder_parser(self).parse_args(list(argv)))

    def make_build(self, source: LoadedSource, options: Any, params: dict[str, Any] | None = None) -> Build:
        """The build of ``options`` from ``source``: the builder's steps run, the configs, counts and exclusions
        put in it (``params``: the options it records, by default those of ``options``)."""
        run = Run(source.items, source.exclusions)
        release = self.build(source, options, run)
        about = About(self.name, self.title.format(benchmark=source.benchmark.pretty_name, options=options),
                      self.citation, self.card_template, self.unchanged_config)
        return Build(about=about, source=source, params=recorded_params(options) if params is None else params,
                     configs=run.configs, exclusions=run.exclusion_log(),
                     outcomes=run.outcomes, rows_in=release.rows_in or dict(source.rows_in), release=release)



def recorded_params(options: BuildOptions) -> dict[str, Any]:
    """Every recorded option by its name, as the build used it (local files by base name and content hash)."""
    return recorded_when_set({name: recorded_value(value)
                              for name, value in sorted(option_values(options, True).items())})
