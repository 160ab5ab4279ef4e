"""The command-line contract every builder shares.

``python -m builders.<name> [--benchmark B] [--source SPEC] [--seed N] [--output DIR]
[--push REPO_ID --version X.Y.Z [--private]] [builder options]``

A builder package declares a :class:`~builders.core.pipeline.builder.Builder`, whose ``main`` is :func:`main`;
everything else is here: parsing (the arguments come from the options' fields; ``--config`` replays a release's
``build_config.yaml``: :mod:`builders.core.release.build_config`), the checks that run before any source is loaded
(version, output folder, Hub, LLM endpoint, models, the rules between the builder's options), loading the source,
the one place where item-level corrections of it are applied, the build, validation, writing or publishing, and the
end-of-run summary.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import gc
import logging
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Protocol, Sequence

from builders.core.build.result import Build
from builders.core.errors import UserError, WorkDone, end_quietly_on_another_interrupt, raised_by_an_interrupt
from builders.core.options.declare import add_option_arguments, declared_options
from builders.core.pipeline.console import print_preview, print_summary
from builders.core.pipeline.options import Delivery
from builders.core.release.build_config import BUILD_CONFIG_FILE, load_build_config, parse_args
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
from builders.core.runtime.cache import DEFAULT_ROOT, check_cache_folder
from builders.core.runtime.redact import scrub_log_handlers, scrub_text
from builders.core.sources.consensus import KeyConsensusOptions, find_suspect_keys
from builders.core.sources.corrections import (
    CORRECTIONS_FILE,
    apply_corrections,
    read_corrections,
    recorded_corrections,
)
from builders.core.sources.duplicates import exclude_conflicts
from builders.core.sources.errata import errata_corrections
from builders.core.sources.loading import Benchmark, LoadedSource, Selection, load_source
from builders.core.validation.validate import ValidationReport, validate

logger = logging.getLogger(__name__)
YOUNG_COLLECTION = 100_000  # allocations between two collections of the cyclic collector's young generation


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default once, and only when there is one worth showing, also for an option without help text."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if not shows_a_default(action) or states_its_default(action.help or ""):
            return action.help or ""
        return super()._get_help_string(action)

    def _format_action(self, action: argparse.Action) -> str:
        if not action.help and shows_a_default(action):  # argparse writes no help line, so no default, without help
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)


def states_its_default(help_text: str) -> bool:
    """Whether a help text already says its default (``%(default)s``, or in words: "(default: the paper's)",
    "(default 1000)"), so that argparse adds no second one."""
    return "%(default)" in help_text or re.search(r"\(default[: ]", help_text) is not None


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
    not_recorded: set[str] = set()  # the dests a build config never records

    def __init__(self, **kwargs: Any):
        # every command's --help shows its defaults, and so do its subcommands' (add_parser makes this class)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        raise UserError(message)


class Runnable(Protocol):
    """What the command line and the Python API ask of a builder (:class:`~builders.core.pipeline.builder.Builder`)."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def benchmarks(self) -> Sequence[Benchmark]: ...
    @property
    def preview_subset(self) -> bool: ...
    @property
    def selection_reasons(self) -> frozenset[str]: ...
    @property
    def epilog(self) -> str: ...
    def benchmark(self, name: str) -> Benchmark: ...
    def add_builder_arguments(self, parser: argparse.ArgumentParser) -> None: ...
    def not_recorded(self, parser: argparse.ArgumentParser) -> set[str]: ...
    def options_of(self, args: argparse.Namespace) -> Any: ...
    def check_services(self, options: Any, args: argparse.Namespace) -> None: ...
    def source_options(self, args: argparse.Namespace, options: Any) -> Any: ...
    def params(self, args: argparse.Namespace, options: Any, parser: argparse.ArgumentParser) -> dict[str, Any]: ...
    def make_build(self, source: LoadedSource, options: Any, params: dict[str, Any]) -> Build: ...


def builder_parser(builder: Runnable) -> ArgumentParser:
    """The builder's arguments (from its options' fields) after the shared ones, and where the build goes. The parser
    knows its builder (``--config`` checks the file is this builder's) and the options it never records."""
    parser = ArgumentParser(prog=f"python -m builders.{builder.name}", description=builder.description,
                            epilog=builder.epilog or None, formatter_class=HelpFormatter)
    builder.add_builder_arguments(parser)
    add_option_arguments(parser, Delivery)
    parser.builder_name = builder.name
    parser.not_recorded = builder.not_recorded(parser) | {d.name for d in declared_options(Delivery)}
    return parser


# ---- running a build -----------------------------------------------------------------------------------


def main(builder: Runnable, argv: Sequence[str] | None = None) -> int:
    """Run one builder end to end; user errors are one ``error:`` line and status 2."""
    parser = builder_parser(builder)

    def run() -> None:
        args = parse_args(parser, argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        scrub_log_handlers()
        progress.configure(False if args.no_progress else None)
        with writer_lock(args), rare_collections():
            release, options = preflight(builder, args)
            source = load(builder, args, options)
            build, report = build_and_validate(builder, parser, args, options, source)
            if args.preview:
                print_preview(build, args.preview)
                return
            deliver(build, report, args, release)

    return exit_code(run)


@contextlib.contextmanager
def rare_collections() -> Iterator[None]:
    """The cyclic collector's young generation collected every :data:`YOUNG_COLLECTION` allocations, not every 700,
    for the whole build. A build allocates tens of millions of objects, nearly none in cycles, and at the default
    threshold the collector visited them over and over (1.9 of a perturbation build's 28 CPU seconds, for 2,600
    objects collected); reference counting frees them as ever, and a cycle is still collected, a little later."""
    before = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def writer_lock(args: argparse.Namespace) -> contextlib.AbstractContextManager:
    """The lock on --output for the whole build, from the first check to the last write: one writer per folder."""
    if not args.output or args.preview:
        return contextlib.nullcontext()
    return output_lock(args.output, wait=args.wait_for_output)


def load(builder: Runnable, args: argparse.Namespace, options: Any = None) -> LoadedSource:
    """The builder's source, read as ``args`` say (``--benchmark``, ``--source``, the subset options); the
    benchmark's own options from the builder's ``options`` (from ``args`` without them)."""
    return load_source(builder.benchmark(args.benchmark), args.source, seed=args.seed, strict=args.strict,
                       options=builder.source_options(args, options), selection=selection(builder, args),
                       max_excluded=args.max_excluded)


def build_and_validate(builder: Runnable, parser: argparse.ArgumentParser, args: argparse.Namespace, options: Any,
                       source: LoadedSource) -> tuple[Build, ValidationReport]:
    """The build from the builder's ``options``, every recorded option in its params, validated. The source the
    builder's steps see is the loaded one with its item-level corrections, applied here for every builder."""
    source = corrected(source, options)
    params = builder.params(args, options, parser)
    if source.errata is not None:
        params["errata"] = source.errata.recorded  # a Hub id with the revision read
    corrections = options.corrections
    if corrections:
        params["corrections"] = recorded_corrections(corrections)  # as the release's copy of it
    # The cyclic collector walks every object it tracks at each full collection, and a build holds hundreds of
    # thousands (3 of WiCkeD MMLU's 17 CPU seconds). What is loaded, and then what is built, is frozen out of its
    # sight: it holds no cycles to collect, and reference counting frees it as ever (the Python API unfreezes).
    gc.freeze()
    build = builder.make_build(source, options, params)
    gc.freeze()
    if corrections:
        build.release.extra_files[CORRECTIONS_FILE] = Path(corrections).expanduser().read_bytes()
    check_excluded_share(build, args.max_excluded, builder.selection_reasons)
    return build, validate(build)


def corrected(source: LoadedSource, options: Any) -> LoadedSource:
    """The source with a person's ``--corrections`` applied, then its ``--errata`` (on the items no person decided)."""
    path, spec = options.corrections, options.errata
    own = read_corrections(path) if path else ()
    source = apply_corrections(source, own)
    if spec:
        errata = errata_corrections(source, spec, options.errata_keep_flagged,
                                    decided=[c.id for c in own])
        source = apply_corrections(source, errata.corrections, origin=f"--errata {errata.source.name}")
        source = dataclasses.replace(source, errata=errata)
    return checked(source, options, [c.id for c in own] + [c.id for c in (source.errata.corrections
                                                                           if source.errata else ())])


def checked(source: LoadedSource, options: Any, decided: Sequence[str]) -> LoadedSource:
    """The source's own checks, on the items no person or errata decided: conflicting duplicates excluded, and
    (with ``--predictions``) the keys the models contradict, corrections by ``consensus``."""
    source = exclude_conflicts(source, decided)
    if isinstance(options, KeyConsensusOptions) and options.predictions:
        found = find_suspect_keys(source, options.predictions, options.keep_suspect_keys, decided)
        source = apply_corrections(source, found.corrections, origin="--predictions (model consensus)")
        source = dataclasses.replace(source, consensus=found)
    return source


def check_excluded_share(build: Build, max_excluded: float, selection_reasons: frozenset[str] = frozenset()) -> None:
    """Stop a build that leaves out more than ``max_excluded`` of its source rows in any config, whatever the
    reasons (malformed rows, no distractors, suspect keys...) but the method's own selection
    (``Builder.selection_reasons``): one line with the most common reason, before anything is written or pushed."""
    if build.source.full_preview:  # it read until its K items were kept: the rows it left out say nothing more
        return
    rows_in = build.rows_in
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


def selection(builder: Runnable, args: argparse.Namespace) -> Selection:
    """The subset to read: ``--preview K`` reads until K items are kept (not K rows: the first rows of MMLU-Redux
    are its flagged errors); with ``--limit``, from the first K rows."""
    limit, kept = args.limit, False
    if args.preview and builder.preview_subset:
        kept = limit is None
        limit = min(limit or args.preview, args.preview)
    return Selection(tuple(args.subjects or ()), limit, tuple(args.splits or ()), kept=kept)


def preflight(builder: Runnable, args: argparse.Namespace) -> tuple[ReleaseInfo, Any]:
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
    if args.no_upload and not (args.push and args.output):
        raise UserError("--no-upload writes --output as --push would publish it: pass --output DIR and --push REPO_ID")
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


def check_options(builder: Runnable, args: argparse.Namespace) -> Any:
    """The rules between options, and the models and LLM endpoint a build will use (each option's own range is its
    type); the builder's options, made once from the checked arguments."""
    if args.version is not None:
        version_tag(args.version)
    cache = getattr(args, "cache_dir", None)  # the LLM replies' and the embeddings' cache, where one is named
    if cache is not None and not str(cache).startswith(DEFAULT_ROOT):  # a default is used only if a build needs it
        check_cache_folder(cache)
    options = builder.options_of(args)
    builder.check_services(options, args)
    return options


def deliver(build: Build, report: ValidationReport, args: argparse.Namespace, release: ReleaseInfo) -> None:
    """Write the folder and/or publish it, then say what was built and where it went."""
    where = []
    if release.previous_tag:
        compare_with_previous(build, release)
    if args.output:
        write_release(build, report, args.output, release)
        where.append(f"wrote {args.output}")
    try:
        if args.push and args.no_upload:
            where.append(f"not uploaded: once reviewed, `python -m builders publish {args.output} --push {args.push} "
                         f"--version {args.version}` publishes it as it is")
        elif args.push:
            with tempfile.TemporaryDirectory(prefix="mcqforge-release-") as tmp:
                folder = args.output or write_release(build, report, Path(tmp) / "release", release, announce=False)
                published = publish_folder(Path(folder), release, private=args.private)
            where.append(f"published {published.url} tag {published.tag}")
        print_summary(build, report, where)
    except KeyboardInterrupt:  # once the tag is there, the work is done
        if release.published is None:
            raise
        raise interrupted_after(release.published) from None


def compare_with_previous(build: Build, release: ReleaseInfo) -> None:
    """What changed since the repo's previous release: the new card's changelog says it, ``diff.json`` lists it."""
    from builders.core.release.diff import RELEASE_FILES, build_content, diff_releases, read_release, summary
    from builders.core.release.reader import open_release

    old = read_release(open_release(f"{release.repo_id}@{release.previous_tag}", RELEASE_FILES))
    release.diff = {"old": f"{release.repo_id}@{release.previous_tag}", "new": f"{release.repo_id}@{release.tag}",
                    **diff_releases(old, build_content(build))}
    release.diff_summary = summary(release.diff, release.previous_tag or "")


def exit_code(command: Callable[[], int | None]) -> int:
    """Run a command-line action: user errors print one line and exit 2, with no traceback; otherwise the
    action's own status (0 when it returns nothing)."""
    try:
        status = command()
    except UserError as error:
        print(f"error: {error_line(scrub_text(str(error)[:4 * MAX_ERROR_CHARS]))}", file=sys.stderr)
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


# An error line is read, not searched: a message that quotes a whole input (a YAML alias bomb expanded to 25
# million characters) is cut, saying how long it was.
MAX_ERROR_CHARS = 600


def error_line(message: str) -> str:
    """``message`` on one line of at most ``MAX_ERROR_CHARS`` characters."""
    line = " ".join(message.split("\n"))
    if len(line) <= MAX_ERROR_CHARS:
        return line
    return f"{line[:MAX_ERROR_CHARS - 40]}... ({len(line):,} characters in all)"


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
