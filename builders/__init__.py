"""mcqforge builders: each submodule is runnable as ``python -m builders.<name>``."""

__version__ = "0.1.0"
