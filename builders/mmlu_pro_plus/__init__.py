"""MMLU-Pro+: add a "Both X and Y are correct" option to MMLU-Pro questions."""

from .builder import BUILDER, Options, build_dataset, main

__all__ = ["BUILDER", "Options", "build_dataset", "main"]
