"""Metrics over model predictions: ``python -m builders.metrics SUBCOMMAND [options]``.

Every subcommand is one row of :data:`SUBCOMMANDS`: its name, one line of help, and the module that
defines ``add_arguments(parser)`` and ``run(args) -> int``. Adding a metric is adding a row.
"""

from __future__ import annotations

import argparse
import importlib
import logging
from pathlib import Path
from typing import Sequence

from builders.core.cli import ArgumentParser, check_writable_folder, exit_code

# name -> (help, module with add_arguments(parser) and run(args))
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "ranking": ("leaderboard sensitivity: accuracy, RStd, ranks and k_τ, original vs perturbed",
                "builders.metrics.ranking"),
    "mmlu-pro-plus": ("MMLU-Pro+: accuracy per group and drop vs MMLU-Pro, SSR_wrong, SSR_partial, CPI",
                      "builders.mmlu_pro_plus.metrics"),
}


def parser() -> argparse.ArgumentParser:
    top = ArgumentParser(prog="python -m builders.metrics", description=__doc__.split("\n\n")[0])
    top.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    commands = top.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for name, (help_text, module) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    def run() -> int:
        args = parser().parse_args(argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        module = importlib.import_module(SUBCOMMANDS[args.command][1])
        if getattr(args, "output", None) is not None:  # every subcommand's --output is a folder: checked first
            check_writable_folder(Path(args.output))
        return module.run(args)

    return exit_code(run)
