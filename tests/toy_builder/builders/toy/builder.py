"""Toy: shuffle each item's options, one config per shuffle.

The builder ``tests/test_contributing.py`` adds exactly as CONTRIBUTING.md's "Adding a builder" says, so that
the section is checked against the code. Items whose options refer to each other or to their positions ("All
of the above") are copied unchanged with the reason: a shuffle would make them incoherent.

    python -m builders toy --source PATH --shuffles 2 --output out/
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Sequence

from builders.core.errors import UserError
from builders.core.items.record import Value
from builders.core.pipeline import api, argtypes, cli
from builders.core.pipeline.build import Build, Builder
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import LoadedSource

from .card_statistics import statistics
from .checks import CHECKS
from .evaluation import evaluation_table
from .tasks import TaskPlan
from .transform import NAME, shuffled, skip_reason

MAX_SHUFFLES = 3
METADATA_FEATURES = {"skip_reason": Value("string"), "original_answer_index": Value("int32")}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Toy")
    group.add_argument("--shuffles", type=argtypes.whole_number(1, MAX_SHUFFLES), default=2,
                       help="number of shuffled configs")
    group.add_argument("--config-prefix", default="shuffle", help="the shuffled configs are PREFIX_0, PREFIX_1...")


def check_arguments(args: argparse.Namespace) -> None:
    if not re.fullmatch(r"[a-z]+", args.config_prefix) or args.config_prefix == "original":
        raise UserError(f"--config-prefix must be lowercase letters other than 'original', not {args.config_prefix!r}")


@dataclass(frozen=True)
class Options:
    """The toy's options, made once from the checked arguments."""

    seed: int
    shuffles: int
    config_prefix: str

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(seed=args.seed, shuffles=args.shuffles, config_prefix=args.config_prefix)


def build(source: LoadedSource, options: Options) -> Build:
    originals = source.items
    reasons = {r.id: skip_reason(r) for records in originals.values() for r in records}
    configs = {"original": dict(originals)}
    for shuffle in range(options.shuffles):
        configs[f"{options.config_prefix}_{shuffle}"] = {
            split: [shuffled(r, reasons[r.id], options.seed, shuffle) for r in records]
            for split, records in originals.items()}
    features = dict(source.benchmark.metadata_features)
    eval_split = "test" if "test" in originals else next(iter(originals))
    return Build(
        builder=NAME, title=f"Toy {source.benchmark.pretty_name}", method_citation="", source=source,
        params={}, configs=configs,
        metadata_features={name: features if name == "original" else {**features, **METADATA_FEATURES}
                           for name in configs},
        exclusions=source.exclusions, checks=CHECKS, statistics=statistics(configs),
        card_context={"shuffles": options.shuffles}, lm_eval_tasks=TaskPlan(tuple(configs), eval_split).files,
        unchanged_config="original",
    )


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [BENCHMARKS["mmlu"]], add_arguments, build, check_arguments,
                  make_options=Options.from_args, evaluation_table=evaluation_table)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    return api.build_dataset(BUILDER, data, **options)
