"""MMLU-Pro+: add a "Both X and Y are correct" option to MMLU-Pro questions (the builder is :mod:`.builder`)."""

from .builder import BUILDER, Options, build
from .checks import CHECKS
from .evaluation import evaluation_table
from .transform import Groups

main, build_dataset = BUILDER.main, BUILDER.build_dataset

__all__ = ["BUILDER", "CHECKS", "Groups", "Options", "build", "build_dataset", "evaluation_table", "main"]
