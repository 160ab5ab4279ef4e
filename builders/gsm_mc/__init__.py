"""GSM-MC: GSM8K as multiple choice, with real models' wrong answers as distractors (the builder is :mod:`.builder`)."""

from .builder import BUILDER, Options, build

main, build_dataset = BUILDER.main, BUILDER.build_dataset

__all__ = ["BUILDER", "Options", "build", "build_dataset", "main"]
