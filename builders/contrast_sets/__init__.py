"""Contrast sets mined from existing multiple-choice data, without generating any text."""

from .builder import main

__all__ = ["main"]
