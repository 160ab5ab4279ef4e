"""The command-line contract every builder shares.

``python -m builders.<name> [--benchmark B] [--source SPEC] [--seed N] [--output DIR]
[--push REPO_ID --version X.Y.Z [--private]] [builder options]``

A builder module defines ``add_arguments(parser)`` and ``build(source, args) -> Build`` and ends with
``if __name__ == "__main__": raise SystemExit(cli.main(...))``; everything else is here.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from .adapters import LoadedSource, load_benchmark
from .build import Build
from .errors import UserError
from .publish import prepare_release, publish_folder
from .release import ReleaseInfo, load_build_config, write_release
from .validate import validate

logger = logging.getLogger(__name__)
# Options about where a build goes, not what it contains: they stay out of the recorded build config.
DELIVERY_OPTIONS = {"output", "push", "version", "private", "config", "log_level", "benchmark", "source"}


def builder_parser(prog: str, description: str, benchmarks: Sequence[str], default_benchmark: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    common = parser.add_argument_group("source and release (shared by every builder)")
    common.add_argument("--benchmark", choices=list(benchmarks), default=default_benchmark,
                        help="source benchmark; each has a default Hub source")
    common.add_argument("--source", metavar="SPEC", default=None,
                        help="HUB_ID[:CONFIG][@REVISION], a local file or folder in the Hub dataset's columns "
                             "(json/jsonl/csv/parquet, one file per split named after the split), or 'sample' "
                             "for the small sample shipped in the package (default: the benchmark's Hub id)")
    common.add_argument("--seed", type=int, default=0, help="build seed; every random choice derives from (seed, item id)")
    common.add_argument("--strict", action="store_true",
                        help="stop at the first malformed source row instead of excluding it with its reason")
    common.add_argument("--output", metavar="DIR", type=Path, help="write the release folder here")
    common.add_argument("--push", metavar="REPO_ID", help="validate, publish to this Hub dataset repo and tag the version")
    common.add_argument("--version", metavar="X.Y.Z", help="release version, required with --push; tagged vX.Y.Z")
    common.add_argument("--private", action="store_true", help="create the Hub repo as private")
    common.add_argument("--config", metavar="FILE", type=Path,
                        help="build_config.yaml of an earlier release: its options become the defaults")
    common.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse twice: a --config file sets the defaults, explicit flags still win."""
    args = parser.parse_args(argv)
    if args.config:
        recorded = load_build_config(args.config)
        defaults = dict(recorded.get("params") or {})
        source = recorded.get("source") or {}
        defaults.update({k: v for k, v in [("benchmark", source.get("benchmark")), ("source", source.get("spec"))] if v})
        known = {action.dest for action in parser._actions}
        unknown = sorted(set(defaults) - known)
        if unknown:
            raise UserError(f"{args.config}: options {unknown} are not options of {parser.prog}")
        parser.set_defaults(**defaults)
        args = parser.parse_args(argv)
    return args


def recorded_params(args: argparse.Namespace) -> dict:
    """Every build option, for the build config and the card."""
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in sorted(vars(args).items()) if k not in DELIVERY_OPTIONS}


def main(
    parser: argparse.ArgumentParser,
    build: Callable[[LoadedSource, argparse.Namespace], Build],
    argv: Sequence[str] | None = None,
    source_options: Callable[[argparse.Namespace], dict] = lambda args: {},
    load_source: Callable[[argparse.Namespace], LoadedSource] | None = None,
) -> int:
    """Run one builder end to end."""

    def run() -> None:
        args = parse_args(parser, argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        if not args.output and not args.push:
            raise UserError("nothing to do: pass --output DIR and/or --push REPO_ID --version X.Y.Z")
        if args.push and not args.version:
            raise UserError("--push needs --version X.Y.Z")
        if load_source is not None:  # sources that are not multiple choice (GSM8K, MATH) read their own rows
            source = load_source(args)
        else:
            source = load_benchmark(args.benchmark, args.source, seed=args.seed, strict=args.strict,
                                    options=source_options(args))
        release_build(build(source, args), args)

    return exit_code(run)


def exit_code(command: Callable[[], None]) -> int:
    """Run a command-line action: user errors print one line and exit 2, with no traceback."""
    try:
        command()
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0


def release_build(build: Build, args: argparse.Namespace) -> None:
    """Validate, then write the folder and/or publish it. Publishing checks the tag before any upload."""
    report = validate(build)
    release = prepare_release(args.push, args.version) if args.push else ReleaseInfo(version=args.version)
    if args.output:
        write_release(build, report, args.output, release)
        print(f"wrote {args.output}")
    if args.push:
        with tempfile.TemporaryDirectory(prefix="mcqforge-release-") as tmp:
            folder = args.output or write_release(build, report, Path(tmp) / "release", release)
            published = publish_folder(Path(folder), release, private=args.private)
        print(f"published {published.url} tag {published.tag}")
