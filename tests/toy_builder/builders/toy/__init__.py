"""Toy: shuffle each item's options (the builder is :mod:`.builder`)."""

from .builder import BUILDER, build, build_dataset, main

__all__ = ["BUILDER", "build", "build_dataset", "main"]
