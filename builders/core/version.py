"""mcqforge's version and where its package lies: what a release records about the software that built it."""

from pathlib import Path

__version__ = "0.1.0"

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the `builders` package
