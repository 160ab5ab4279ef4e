"""GSM-MC: GSM8K as multiple choice, with real models' wrong answers as distractors."""

from .builder import BUILDER, Options, build_dataset, main

__all__ = ["BUILDER", "Options", "build_dataset", "main"]
