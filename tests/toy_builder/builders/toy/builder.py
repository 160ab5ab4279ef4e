"""Toy: shuffle each item's options, one config per shuffle.

The builder ``tests/test_contributing.py`` adds exactly as CONTRIBUTING.md's "Adding a builder" says, so that
the section is checked against the code. Items whose options refer to each other or to their positions ("All
of the above") are copied unchanged with the reason: a shuffle would make them incoherent.

    python -m builders toy --source PATH --shuffles 2 --output out/
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.errors import UserError
from builders.core.items.record import Value
from builders.core.options.argtypes import whole_number
from builders.core.options.declare import option
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.options import BuildOptions
from builders.core.pipeline.steps import Run
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import LoadedSource, evaluation_split

from .card_statistics import statistics
from .checks import CHECKS
from .evaluation import evaluation_table
from .tasks import TaskPlan
from .transform import NAME, copied, shuffle_step

MAX_SHUFFLES = 3
METADATA_FEATURES = {"skip_reason": Value("string"), "original_answer_index": Value("int32")}


@dataclass(frozen=True, kw_only=True)
class Options(BuildOptions):
    """The toy's options."""

    GROUP: ClassVar[str] = "Toy"

    shuffles: int = option(2, type=whole_number(1, MAX_SHUFFLES), help="number of shuffled configs")
    config_prefix: str = option("shuffle", help="the shuffled configs are PREFIX_0, PREFIX_1...")

    def check(self) -> None:
        if not re.fullmatch(r"[a-z]+", self.config_prefix) or self.config_prefix == "original":
            raise UserError(f"--config-prefix must be lowercase letters other than 'original', "
                            f"not {self.config_prefix!r}")


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    run.unchanged("original")
    for shuffle in range(options.shuffles):
        run.make(f"{options.config_prefix}_{shuffle}", [shuffle_step(options.seed, shuffle)], copy=copied)
    features = dict(source.benchmark.metadata_features)
    return Release(
        metadata_features={name: features if name == "original" else {**features, **METADATA_FEATURES}
                           for name in run.configs},
        checks=CHECKS, statistics=statistics(run.configs), card_context={"shuffles": options.shuffles},
        lm_eval_tasks=TaskPlan(tuple(run.configs), evaluation_split(source.items)).files,
    )


BUILDER = Builder(name=NAME, title="Toy {benchmark}", description=__doc__.split("\n\n")[0], citation="",
                  benchmarks=[BENCHMARKS["mmlu"]], options=Options, build=build,
                  default_config="{options.config_prefix}_0", unchanged_config="original",
                  evaluation_table=evaluation_table)
