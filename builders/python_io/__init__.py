"""PythonIO: predict what a program returns, as multiple choice with real models' wrong outputs."""

from .builder import BUILDER, Options, build_dataset, main

__all__ = ["BUILDER", "Options", "build_dataset", "main"]
