"""Every builder of mcqforge, by name: the one table that ``mcqforge <command>``, ``evaluate``, ``metrics``, the
release train and the tests read.

A builder is a module (or package) with ``BUILDER``, ``main(argv)`` and ``build_dataset(data, **options)``; it is
imported only when it is used, so that a command parses its arguments before any builder loads. Metrics that a
builder's paper defines live in its package and are listed here, as ``python -m builders.metrics`` subcommands.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from builders.core.pipeline.builder import Builder

# builder name -> its module
BUILDERS: dict[str, str] = {
    "wicked": "builders.wicked",
    "gsm_mc": "builders.gsm_mc",
    "math_mc": "builders.math_mc",
    "python_io": "builders.python_io",
    "mmlu_pro_plus": "builders.mmlu_pro_plus",
    "contrast_sets": "builders.contrast_sets",
    "perturbations": "builders.perturbations",
}

# `python -m builders.metrics NAME` -> (one line of help, the module with add_arguments(parser) and run(args))
METRICS: dict[str, tuple[str, str]] = {
    "ranking": ("leaderboard sensitivity: accuracy, RStd, ranks and k_τ, original vs perturbed",
                "builders.perturbations.ranking"),
    "mmlu-pro-plus": ("MMLU-Pro+: accuracy per group and drop vs MMLU-Pro, SSR_wrong, SSR_partial, CPI",
                      "builders.mmlu_pro_plus.metrics"),
}


def builder_module(name: str) -> ModuleType:
    """The module of the builder ``name`` (a key of :data:`BUILDERS`)."""
    return importlib.import_module(BUILDERS[name])


def load_builder(name: str) -> Builder:
    """The :class:`~builders.core.pipeline.builder.Builder` of the builder ``name`` (a key of :data:`BUILDERS`)."""
    return builder_module(name).BUILDER


def metric_module(name: str) -> ModuleType:
    """The module of the metric ``name`` (a key of :data:`METRICS`)."""
    return importlib.import_module(METRICS[name][1])
