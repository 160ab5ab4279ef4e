"""Contrast sets mined from existing multiple-choice data, without generating any text."""

from .builder import BUILDER, Options, build_dataset, main

__all__ = ["BUILDER", "Options", "build_dataset", "main"]
