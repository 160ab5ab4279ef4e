"""Build, validate and publish every dataset of a release train from one configuration file.

    python scripts/release_train.py train.yaml            # check everything, then build and publish each
    python scripts/release_train.py train.yaml --check    # only the checks (versions, tags, token, endpoints)

The file names one version and the datasets to release with it::

    version: 1.2.0
    private: false
    datasets:
      - builder: wicked
        push: your-org/wicked-mmlu
        options: {benchmark: mmlu, seed: 0}
      - builder: gsm_mc
        push: your-org/gsm-mc
        options: {source: openai/gsm8k, predictions: [preds/gsm8k.jsonl], sets: 10}

Options are the builders' command-line options with underscores; a list gives several values. Every
dataset's checks run before any build starts (an existing tag, a bad repo id, an unreachable Hub or LLM
endpoint stops the whole train in seconds), then each is built, validated and published in order. A
dataset that fails to build stops the train: those published before it keep their tags, and running the
same file again skips them (their tag exists) only with ``--resume``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any, Sequence

import yaml

from builders.core.errors import ReleaseError, UserError
from builders.core.release import build_config
from builders.core.pipeline import cli
from builders.core.runtime import progress
from builders.core.runtime.redact import scrub_log_handlers
from builders.registry import BUILDERS, load_builder

# The options the train sets itself.
TRAIN_OPTIONS = {"push", "version", "private"}


def option_argv(parser: argparse.ArgumentParser, options: dict[str, Any], where: str) -> list[str]:
    """A dataset's options as command-line words, converted as a build config's are (``build_config.option_words``);
    a name that is no option of the builder stays ``--name value``, for argparse to name it."""
    dests = {a.dest for a in parser._actions}
    known = {name: value for name, value in options.items() if name in dests}
    unknown = [word for name, value in options.items() if name not in dests
               for word in ("--" + name.replace("_", "-"), *map(str, value if isinstance(value, list) else [value]))]
    return build_config.option_words(parser, known, where) + unknown


def read_train(path: Path) -> dict[str, Any]:
    try:
        train = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise UserError(f"cannot read {path}: {error}") from None
    if not isinstance(train, dict) or not train.get("version") or not isinstance(train.get("datasets"), list):
        raise UserError(f"{path}: expected 'version' and a list of 'datasets'")
    builders = sorted(BUILDERS)
    for number, entry in enumerate(train["datasets"], 1):
        if not isinstance(entry, dict) or entry.get("builder") not in builders or not entry.get("push"):
            raise UserError(f"{path}: dataset {number} needs 'builder' (one of {builders}) and 'push'")
        options = entry.get("options")
        if options is not None and not isinstance(options, dict):
            raise UserError(f"{path}: dataset {number}: 'options' must be a mapping of option names to values")
        taken = sorted(set(options or {}) & TRAIN_OPTIONS)
        if taken:
            raise UserError(f"{path}: dataset {number}: options {taken} are set by the train itself "
                            "('push' per dataset, 'version' and 'private' for the whole train)")
    return train


def plan(train: dict[str, Any], resume: bool) -> list[tuple[Any, argparse.ArgumentParser, argparse.Namespace, Any, Any]]:
    """Every dataset's parsed options and release checks, before anything is built."""
    steps = []
    for number, entry in enumerate(train["datasets"], 1):
        builder = load_builder(entry["builder"])
        parser = cli.builder_parser(builder)
        where = f"dataset {number} ({entry['builder']} -> {entry['push']})"

        def error(message: str, where: str = where) -> None:  # a bad option names its dataset, in one line
            raise UserError(f"{where}: {message}")

        parser.error = error  # type: ignore[method-assign]
        argv = option_argv(parser, entry.get("options") or {}, where) + ["--push", entry["push"], "--version", str(train["version"])]
        if train.get("private"):
            argv.append("--private")
        args = cli.parse_args(parser, argv)
        try:
            release, options = cli.preflight(builder, args)
        except ReleaseError as error:
            if resume and "already has tag" in str(error):
                print(f"skip {entry['push']}: {error}")
                continue
            if "already has tag" in str(error):  # the train has no --version: its file's `version:` key names it
                raise ReleaseError(str(error).replace("choose a new --version", "choose a new `version:` in the "
                                                      "train's file, or pass --resume to skip released datasets")) from None
            raise
        steps.append((builder, parser, args, options, release))
        print(f"ok   {entry['builder']} -> {entry['push']} v{train['version']}")
    return steps


def run(path: Path, check_only: bool, resume: bool) -> None:
    steps = plan(read_train(path), resume)
    if check_only:
        return
    for builder, parser, args, options, release in steps:
        print(f"\n=== {builder.name} -> {args.push}")
        build, report = cli.build_and_validate(builder, parser, args, options, cli.load(builder, args, options))
        cli.deliver(build, report, args, release)


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", type=Path, help="the release train's YAML file")
    parser.add_argument("--check", action="store_true", help="run every check, build nothing")
    parser.add_argument("--resume", action="store_true", help="skip datasets whose tag already exists")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars, even on a terminal")

    def run_train() -> None:
        args = parser.parse_args(argv)
        # as a builder's command line: its log lines, secrets scrubbed, and progress bars on a terminal only (a log
        # file gets a line at a steady interval, never the upload bars' ANSI cursor codes)
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        scrub_log_handlers()
        progress.configure(False if args.no_progress else None)
        run(args.train, args.check, args.resume)

    return cli.exit_code(run_train)


if __name__ == "__main__":
    sys.exit(main())
