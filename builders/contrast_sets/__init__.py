"""Contrast sets mined from existing multiple-choice data, without generating any text (the builder is :mod:`.builder`)."""

from .builder import BUILDER, Options, build

main, build_dataset = BUILDER.main, BUILDER.build_dataset

__all__ = ["BUILDER", "Options", "build", "build_dataset", "main"]
