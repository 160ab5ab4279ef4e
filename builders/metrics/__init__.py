"""Metrics over model predictions: ``python -m builders.metrics SUBCOMMAND [options]``.

Every subcommand is one row of :data:`builders.registry.METRICS`: its name, one line of help, and the module
that defines ``add_arguments(parser)`` and ``run(args) -> int``. Adding a metric is adding a row.
"""

from __future__ import annotations

import argparse
import logging
from typing import Sequence

from builders.core.pipeline.cli import ArgumentParser, exit_code, run_metric
from builders.registry import METRICS, metric_module

SUBCOMMANDS = METRICS  # name -> (help, module with add_arguments(parser) and run(args))


def parser() -> argparse.ArgumentParser:
    top = ArgumentParser(prog="python -m builders.metrics", description=__doc__.split("\n\n")[0])
    top.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    commands = top.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    for name, (help_text, _) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        metric_module(name).add_arguments(sub)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    def run() -> int:
        args = parser().parse_args(argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return run_metric(metric_module(args.command), args)

    return exit_code(run)
