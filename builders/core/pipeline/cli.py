"""The command-line contract every builder shares.

``python -m builders.<name> [--benchmark B] [--source SPEC] [--seed N] [--output DIR]
[--push REPO_ID --version X.Y.Z [--private]] [builder options]``

A builder module defines a :class:`~builders.core.pipeline.build.Builder` and ``main(argv) = cli.main(BUILDER, argv)``;
everything else is here: parsing (``--config`` replays a release's ``build_config.yaml``: :mod:`.build_config`),
the checks that run before any source is loaded (version, output folder, Hub, LLM endpoint, the builder's own options),
the build, validation, writing or publishing, and the end-of-run summary.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import logging
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from builders.core.errors import UserError, WorkDone, end_quietly_on_another_interrupt, raised_by_an_interrupt
from builders.core.items.tables import Table
from builders.core.pipeline.argtypes import positive_int, share
from builders.core.pipeline.build import Build, Builder
from builders.core.pipeline.build_config import (
    BUILD_CONFIG_FILE,
    arguments_as_built,
    load_build_config,
    parse_args,
    recorded_params,
)

# builders put their runtime options in ``cli.runtime_group(parser, title)``: the build config defines it (what it
# holds is never recorded), the command line is where a builder reaches for it
from builders.core.pipeline.build_config import runtime_group as runtime_group
from builders.core.pipeline.models import check_model
from builders.core.release.card import ReleaseInfo
from builders.core.release.publish import (
    check_repo_id,
    interrupted_after,
    prepare_release,
    publish_folder,
    version_tag,
)
from builders.core.release.writer import check_output_folder, output_lock, write_release
from builders.core.runtime import progress
from builders.core.runtime.redact import scrub_log_handlers, scrub_text
from builders.core.sources.loading import DEFAULT_MAX_EXCLUDED, LoadedSource, Selection, load_source
from builders.core.validation.validate import ValidationReport, validate

logger = logging.getLogger(__name__)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default once, and only when there is one worth showing, also for an option without help text."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if not shows_a_default(action) or "%(default)" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action)

    def _format_action(self, action: argparse.Action) -> str:
        if not action.help and shows_a_default(action):  # argparse writes no help line, so no default, without help
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)


def shows_a_default(action: argparse.Action) -> bool:
    # by identity: 0 == False, so `in (None, False, ...)` hid every default of 0 (--seed among them)
    return not (action.default is None or action.default is False or action.default is argparse.SUPPRESS
                or action.default == [])


class RawDescriptionHelpFormatter(argparse.RawDescriptionHelpFormatter, HelpFormatter):
    """:class:`HelpFormatter` that keeps the description's and the epilog's own line breaks."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the project's contract for bad input: a bad flag is a :class:`UserError`, which
    :func:`exit_code` prints as one ``error:`` line with status 2 (no usage block: ``--help`` shows it).
    Parse inside ``exit_code``."""

    builder_name: str | None = None  # a builder's parser: --config checks the file is this builder's

    def __init__(self, **kwargs: Any):
        # every command's --help shows its defaults, and so do its subcommands' (add_parser makes this class)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


def builder_parser(builder: Builder) -> ArgumentParser:
    parser = ArgumentParser(prog=f"python -m builders.{builder.name}", description=builder.description,
                                     epilog=builder.epilog or None, formatter_class=HelpFormatter)
    names = [b.name for b in builder.benchmarks]
    common = parser.add_argument_group("source and release (shared by every builder)")
    common.add_argument("--benchmark", choices=names, default=names[0], help="source benchmark; each has a default Hub source")
    common.add_argument("--source", metavar="SPEC", default=None,
                        help="HUB_ID[:CONFIG][@REVISION], a local file or folder in the Hub dataset's columns "
                             "(json/jsonl/csv/parquet, one file per split named after the split), or 'sample' "
                             "for the small sample shipped in the package; default: the benchmark's Hub id")
    common.add_argument("--seed", type=int, default=0, help="build seed; every random choice derives from (seed, item content)")
    common.add_argument("--strict", action="store_true",
                        help="stop at the first malformed source row instead of excluding it with its reason")
    common.add_argument("--max-excluded", type=share, default=DEFAULT_MAX_EXCLUDED, metavar="SHARE",
                        help="stop when more than this share of the source rows would be excluded")
    common.add_argument("--splits", nargs="+", metavar="SPLIT", help="build only these splits of the source")
    common.add_argument("--subjects", nargs="+", metavar="SUBJECT",
                        help="build only these subjects (MMLU subjects, MMLU-Pro categories, MATH types, sub-configs)")
    common.add_argument("--limit", type=positive_int, metavar="N",
                        help="build only the first N rows of each evaluation split (of each subject, with --subjects)")
    common.add_argument("--output", metavar="DIR", type=Path, help="write the release folder here")
    common.add_argument("--wait-for-output", action="store_true",
                        help="when another build is writing --output, wait for it instead of stopping")
    common.add_argument("--force", action="store_true",
                        help="let --output replace a release folder that another builder wrote")
    common.add_argument("--push", metavar="REPO_ID", help="validate, publish to this Hub dataset repo and tag the version")
    common.add_argument("--version", metavar="X.Y.Z", help="release version, required with --push; tagged vX.Y.Z")
    common.add_argument("--private", action="store_true", help="create the Hub repo as private")
    common.add_argument("--message", metavar="TEXT", help="what changed in this release, for the card's changelog")
    common.add_argument("--config", metavar="FILE", type=Path,
                        help="build_config.yaml of an earlier release: its options become the defaults")
    common.add_argument("--preview", type=positive_int, metavar="K",
                        help="print K transformed items and write nothing (built from the first K items where the "
                             "builder allows, so that a preview costs few LLM calls)")
    common.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    common.add_argument("--no-progress", action="store_true",
                        help="no progress bars (they show only when stderr is a terminal)")
    builder.add_arguments(parser)
    parser.builder_name = builder.name
    return parser


# ---- running a build -----------------------------------------------------------------------------------


def main(builder: Builder, argv: Sequence[str] | None = None) -> int:
    """Run one builder end to end; user errors are one ``error:`` line and status 2."""
    parser = builder_parser(builder)

    def run() -> None:
        args = parse_args(parser, argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        scrub_log_handlers()
        progress.configure(False if args.no_progress else None)
        with writer_lock(args):
            release, options = preflight(builder, args)
            source = load(builder, args)
            build, report = build_and_validate(builder, parser, args, options, source)
            if args.preview:
                print_preview(build, args.preview)
                return
            deliver(build, report, args, release)

    return exit_code(run)


def writer_lock(args: argparse.Namespace) -> contextlib.AbstractContextManager:
    """The lock on --output for the whole build, from the first check to the last write: one writer per folder."""
    if not args.output or args.preview:
        return contextlib.nullcontext()
    return output_lock(args.output, wait=args.wait_for_output)


def load(builder: Builder, args: argparse.Namespace) -> LoadedSource:
    """The builder's source, read as ``args`` say (``--benchmark``, ``--source``, the subset options)."""
    return load_source(builder.benchmark(args.benchmark), args.source, seed=args.seed, strict=args.strict,
                       options=vars(args), selection=selection(builder, args), max_excluded=args.max_excluded)


def build_and_validate(builder: Builder, parser: argparse.ArgumentParser, args: argparse.Namespace, options: Any,
                       source: LoadedSource) -> tuple[Build, ValidationReport]:
    """The build from the builder's ``options``, with every recorded option in its params (as the build used it:
    :func:`.build_config.arguments_as_built`; the builder adds only derived ones), validated."""
    build = builder.build(source, options)
    build.params = {**recorded_params(arguments_as_built(args, options), parser), **build.params}
    check_excluded_share(build, args.max_excluded, builder.selection_reasons)
    return build, validate(build)


def check_excluded_share(build: Build, max_excluded: float, selection_reasons: frozenset[str] = frozenset()) -> None:
    """Stop a build that leaves out more than ``max_excluded`` of its source rows in any config, whatever the
    reasons (malformed rows, no distractors, suspect keys...) but the method's own selection
    (``Builder.selection_reasons``): one line with the most common reason, before anything is written or pushed."""
    rows_in = build.rows_in
    assert rows_in is not None, "Build.__post_init__ sets it"
    rows = sum(rows_in.values())  # the build's own accounting (PythonIO: one row per assert)
    for config in build.configs:
        excluded = [e for e in build.exclusions.entries
                    if e.config in (None, config) and e.split in rows_in and e.reason not in selection_reasons]
        if rows and len(excluded) > max_excluded * rows:
            (reason, count), = Counter(e.reason for e in excluded).most_common(1)
            example = next(e for e in excluded if e.reason == reason)
            raise UserError(f"{len(excluded)} of {rows} rows ({len(excluded) / rows:.0%}) would be left out of "
                            f"config {config!r}, most often for {reason} ({count} rows, e.g. {example.id}"
                            f"{': ' + example.detail if example.detail else ''}); --max-excluded {max_excluded} allows at most {max_excluded:.0%}, "
                            f"pass a higher share to build it anyway")


def selection(builder: Builder, args: argparse.Namespace) -> Selection:
    limit = args.limit
    if args.preview and builder.preview_subset:
        limit = min(limit or args.preview, args.preview)
    return Selection(tuple(args.subjects or ()), limit, tuple(args.splits or ()))


def preflight(builder: Builder, args: argparse.Namespace) -> tuple[ReleaseInfo, Any]:
    """Every check that can refuse a build, before any source is loaded or any paid call is made; the release
    and the builder's options."""
    if not args.preview and not args.output and not args.push:
        raise UserError("nothing to do: pass --output DIR and/or --push REPO_ID --version X.Y.Z (or --preview K)")
    options = check_options(builder, args)
    release = ReleaseInfo(version=args.version)
    if args.preview:
        return release, options
    if args.output:
        check_output_folder(args.output)
        check_source_and_output(args.source, args.output)
        check_same_builder(args.output, builder.name, args.force)
    if args.push:
        if not args.version:
            raise UserError("--push needs --version X.Y.Z")
        check_repo_id(args.push)
        release = prepare_release(args.push, args.version)
    release.message = args.message
    return release, options


def check_same_builder(output: Path, builder: str, force: bool) -> None:
    """A release folder of another builder (another dataset) is replaced only with --force; a rebuild of the same
    builder's release replaces it as always."""
    recorded = Path(output).expanduser() / BUILD_CONFIG_FILE
    if force or not recorded.is_file():
        return
    written_by = load_build_config(recorded).get("builder")
    if written_by != builder:
        raise UserError(f"--output {output} holds a {written_by} release; a {builder} build would replace it: "
                        "choose another folder, or pass --force")


def check_source_and_output(source: Any, output: Path) -> None:
    """A release written inside a local source folder changes the source's content hash (folders are hashed
    recursively) on every rebuild; a source inside --output is deleted when the release replaces it."""
    if not isinstance(source, (str, Path)) or str(source) == "sample" or not Path(source).expanduser().exists():
        return
    src, out = Path(source).expanduser().resolve(), Path(output).expanduser().resolve()
    if src.is_dir() and (out == src or src in out.parents):
        raise UserError(f"--output {output} is inside the source folder {source}: write the release elsewhere")
    if src == out or out in src.parents:
        raise UserError(f"--source {source} is inside --output {output}, which the release replaces: "
                        "write the release elsewhere")


def check_options(builder: Builder, args: argparse.Namespace) -> Any:
    """The rules between options, and the LLM endpoint a build will call (each option's own range is its type);
    the builder's options, made once from the checked arguments."""
    if args.version is not None:
        version_tag(args.version)
    builder.check_arguments(args)
    options = builder.make_options(args)
    dataclass_params = getattr(type(options), "__dataclass_params__", None)  # set on every dataclass
    if dataclass_params is None or not dataclass_params.frozen:
        raise TypeError(f"{builder.name}: make_options gave a {type(options).__name__}, not a frozen dataclass")
    for model in builder.models(options):
        check_model(model)
    if builder.llm_models(options):
        from builders.core.llm.settings import LLMSettings, check_endpoint

        check_endpoint(LLMSettings.from_args(args))
    return options


def deliver(build: Build, report: ValidationReport, args: argparse.Namespace, release: ReleaseInfo) -> None:
    """Write the folder and/or publish it, then say what was built and where it went."""
    where = []
    if args.output:
        write_release(build, report, args.output, release)
        where.append(f"wrote {args.output}")
    try:
        if args.push:
            with tempfile.TemporaryDirectory(prefix="mcqforge-release-") as tmp:
                folder = args.output or write_release(build, report, Path(tmp) / "release", release)
                published = publish_folder(Path(folder), release, private=args.private)
            where.append(f"published {published.url} tag {published.tag}")
        print_summary(build, report, where)
    except KeyboardInterrupt:  # once the tag is there, the work is done
        if release.published is None:
            raise
        raise interrupted_after(release.published) from None


def exit_code(command: Callable[[], int | None]) -> int:
    """Run a command-line action: user errors print one line and exit 2, with no traceback; otherwise the
    action's own status (0 when it returns nothing)."""
    try:
        status = command()
    except UserError as error:
        print(f"error: {scrub_text(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interruption:  # its message, if any, says what was left (WorkDone: what was done)
        end_quietly_on_another_interrupt()
        print(f"interrupted{': ' if str(interruption) else ''}{scrub_text(str(interruption))}", file=sys.stderr)
        return 0 if isinstance(interruption, WorkDone) else 130
    except Exception as error:
        if not raised_by_an_interrupt(error):
            raise
        end_quietly_on_another_interrupt()
        print("interrupted", file=sys.stderr)  # e.g. an import that Ctrl-C broke half-way
        return 130
    return status or 0


def run_metric(metric: Any, args: argparse.Namespace) -> int:
    """Run a metric (a module with ``add_arguments(parser)`` and ``run(args)``) on its parsed arguments: its
    ``--output``, a folder, is checked before any work."""
    if getattr(args, "output", None) is not None:
        check_writable_folder(Path(args.output))
    return metric.run(args)


def check_writable_folder(path: Path, flag: str = "--output") -> None:
    """A folder a command will write into (it may not exist yet), checked before any work: not a file, and
    under a folder that can hold it."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path} is a file, not a folder")
    _require_writable_parent(path, flag)


def check_writable_file(path: Path, flag: str = "--output") -> None:
    """A file a command will write (it may exist: it is replaced), checked before any work."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise UserError(f"{flag} {path} is a folder, not a file")
    _require_writable_parent(path.parent, flag, path)


def _require_writable_parent(folder: Path, flag: str, shown: Path | None = None) -> None:
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"{flag} {shown or folder}: cannot create it there ({existing} is a file)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {shown or folder}: {existing} is not writable")


# ---- what the console shows ------------------------------------------------------------------------------


def print_summary(build: Build, report: ValidationReport, where: Sequence[str], out=None) -> None:
    out = out or sys.stdout
    print(f"\n{build.title}: {len(build.configs)} configs from {build.source.source_description}", file=out)
    print(rows_summary(report).to_markdown(), file=out)
    reasons: dict[str, int] = {}
    for split_reasons in report.exclusion_reasons.values():
        for reason, count in split_reasons.items():
            reasons[reason] = reasons.get(reason, 0) + count
    if reasons:
        top = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        print("top exclusion reasons: " + ", ".join(f"{r} ({n})" for r, n in top), file=out)
    print(f"shortcut audit: {len(report.warnings)} warning(s)", file=out)
    for warning in report.warnings:
        print(f"  WARNING {warning}", file=out)
    for line in where:
        print(line, file=out)


def rows_summary(report: ValidationReport) -> Table:
    """Rows in, out and excluded per split, one row per group of configs whose counts are the same (a
    perturbations build listed 58 rows of the same three numbers); the card and the report keep every config."""
    groups: dict[tuple, list[str]] = {}
    for config, splits in report.counts.items():
        key = tuple((split, n["in"], n["out"], n["excluded"]) for split, n in splits.items())
        groups.setdefault(key, []).append(config)
    rows = tuple((_configs_label(configs, len(report.counts)), *counts) for key, configs in groups.items()
                 for counts in key)
    return Table("Rows per config", ("config", "split", "rows in", "rows out", "excluded"), rows)


def _configs_label(configs: list[str], total: int) -> str:
    if len(configs) <= 3:
        return ", ".join(configs)
    if len(configs) == total:
        return f"all {total} configs"
    return f"{len(configs)} configs ({configs[0]}, {configs[1]}, ..., {configs[-1]})"


def print_preview(build: Build, count: int, out=None) -> None:
    """K items of the first transformed config (the first config when there is only one); nothing is written."""
    out = out or sys.stdout
    names = list(build.configs)
    config = next((n for n in names if n not in ("original", "default")), names[0])
    shown = 0
    for split, records in build.configs[config].items():
        for record in records[: count - shown]:
            print(f"--- {config}/{split} {record.id}", file=out)
            print(record.question, file=out)
            for index, choice in enumerate(record.choices):
                mark = "*" if index == record.answer else " "
                print(f" {mark} {chr(65 + index) if index < 26 else index}. {choice}", file=out)
            shown += 1
        if shown >= count:
            break
    print(f"(preview: {shown} items of config {config!r}; {len(names)} configs: {', '.join(names)}; nothing written)",
          file=out)
