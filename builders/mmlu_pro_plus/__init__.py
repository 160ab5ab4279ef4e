"""MMLU-Pro+: add a "Both X and Y are correct" option to MMLU-Pro questions."""

from .builder import main

__all__ = ["main"]
