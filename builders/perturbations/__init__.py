"""Leaderboard-sensitivity perturbations: choice order, gold position, symbols, prompt wording, context."""

from .builder import main

__all__ = ["main"]
