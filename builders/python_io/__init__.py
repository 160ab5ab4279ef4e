"""PythonIO: predict what a program returns, as multiple choice with real models' wrong outputs."""

from .builder import main

__all__ = ["main"]
