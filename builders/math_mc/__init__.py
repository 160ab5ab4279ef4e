"""MATH-MC: MATH as multiple choice, with real models' wrong answers as distractors."""

from .builder import main

__all__ = ["main"]
