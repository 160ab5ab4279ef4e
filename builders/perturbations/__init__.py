"""Leaderboard-sensitivity perturbations: choice order, gold position, symbols, prompt wording, context.

``configs`` (what each config changes), ``transforms`` (per-item transforms, demonstrations, prompts),
``prompts`` (the renderer the lm-eval tasks share), ``tasks`` (the lm-eval folder and manifest), ``checks``
(the invariants), ``builder`` (the build and its command line) and ``ranking`` (the paper's leaderboard
sensitivity: its evaluation table, and ``python -m builders.metrics ranking``).
"""

from .builder import BUILDER, Options, build_dataset, main

__all__ = ["BUILDER", "Options", "build_dataset", "main"]
