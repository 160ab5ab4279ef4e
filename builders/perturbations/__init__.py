"""Leaderboard-sensitivity perturbations: choice order, gold position, symbols, prompt wording, context (the builder
is :mod:`.builder`; ``ranking`` is also ``python -m builders.metrics ranking``)."""

from .builder import BUILDER, Options, build

main, build_dataset = BUILDER.main, BUILDER.build_dataset

__all__ = ["BUILDER", "Options", "build", "build_dataset", "main"]
