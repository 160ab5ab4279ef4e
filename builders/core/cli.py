"""The command-line contract every builder shares.

``python -m builders.<name> [--benchmark B] [--source SPEC] [--seed N] [--output DIR]
[--push REPO_ID --version X.Y.Z [--private]] [builder options]``

A builder module defines a :class:`~builders.core.build.Builder` and ``main(argv) = cli.main(BUILDER, argv)``;
everything else is here: parsing (``--config`` reads a release's ``build_config.yaml`` back), the checks that
run before any source is loaded (version, output folder, Hub, LLM endpoint, the builder's own options),
the build, validation, writing or publishing, and the end-of-run summary.
"""

from __future__ import annotations

import argparse
import copy
import contextlib
import logging
import math
import os
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from . import progress
from .build import Build, Builder
from .errors import UserError, raised_by_an_interrupt
from .models import check_model
from .publish import check_repo_id, prepare_release, publish_folder, version_tag
from .redact import scrub_log_handlers, scrub_text
from .release import BUILD_CONFIG_FILE, ReleaseInfo, check_output_folder, load_build_config, output_lock, write_release
from .sources import DEFAULT_MAX_EXCLUDED, LoadedSource, Selection, content_revision, load_source
from .tables import Table
from .validate import ValidationReport, validate

logger = logging.getLogger(__name__)
# Options about where a build goes, not what it holds: never recorded (with the runtime groups' options).
DELIVERY_OPTIONS = {"output", "push", "version", "private", "config", "log_level", "benchmark", "source", "preview",
                    "wait_for_output", "force", "message", "no_progress"}


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


# Range checks of a single option are argparse types, so that the command line, a --config file and the Python
# API refuse a bad value the same way (check_arguments keeps the rules between options).


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low`` (and at most ``high``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {value}")
        return value

    return parse


def number(low: float, high: float = math.inf, *, low_included: bool = False,
           high_included: bool = True) -> Callable[[str], float]:
    """An argparse type: a finite number above ``low`` and at most ``high`` (the ``*_included`` flags say
    whether each bound itself is allowed)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        above_low = value >= low if low_included else value > low
        below_high = value <= high if high_included else value < high
        if not (math.isfinite(value) and above_low and below_high):
            bounds = f"at least {low:g}" if low_included else f"above {low:g}"
            if high != math.inf:
                bounds += f" and {'at most' if high_included else 'below'} {high:g}"
            raise argparse.ArgumentTypeError(f"must be a finite number {bounds}, got {text}")
        return value

    return parse


positive_int = whole_number(1)  # workers, tokens, batch sizes, counts
nonnegative_int = whole_number(0)  # shots, retries, characters of slack
positive_float = number(0)  # ratios, epochs, rates (a timeout is `seconds`)
# The longest wait a timeout option takes: a day, and never beyond what the platform's waits take
# (threading.TIMEOUT_MAX; a larger value fails every wait as an overflow, blamed on whatever was waited for).
MAX_TIMEOUT_S = min(86_400.0, threading.TIMEOUT_MAX)
seconds = number(0, MAX_TIMEOUT_S)  # every timeout option
share = number(0, 1, low_included=True)  # [0, 1]: shares and probabilities
unit_interval = number(0, 1)  # (0, 1]: similarity cut-offs, recall targets


def runtime_group(parser: argparse.ArgumentParser, title: str) -> argparse._ArgumentGroup:
    """An argument group for options about where and how fast a build runs, not what it holds:
    they stay out of build_config.yaml and the card."""
    group = parser.add_argument_group(f"{title} (runtime: not recorded in build_config.yaml)")
    group.runtime = True  # type: ignore[attr-defined]
    return group


def runtime_dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for g in parser._action_groups if getattr(g, "runtime", False) for a in g._group_actions}


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


# ---- parsing -------------------------------------------------------------------------------------------


def parse_args(parser: ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse twice: a --config file sets the defaults, explicit flags still win."""
    args = parser.parse_args(argv)
    if args.config:
        defaults, local = config_defaults(parser, args.config)
        given = args  # the command line alone
        parser.set_defaults(**defaults)
        args = parser.parse_args(argv)
        for action in parser._actions:  # append/extend options add to their default: a list given on the
            # command line replaces the config's instead (it would be merged into it)
            if isinstance(action, (argparse._AppendAction, argparse._ExtendAction)) and action.dest in defaults \
                    and getattr(given, action.dest) not in (None, []):
                setattr(args, action.dest, getattr(given, action.dest))
        _require_local_files_again(args, parser, local)
        _require_the_recorded_source(args.config, given.source)
    return args


def _require_the_recorded_source(path: Path, given: str | None) -> None:
    """A rebuild reads the source the release was built from: ``--source`` with ``--config`` must name it again
    (the same Hub spec, ``sample``, or a local copy with the recorded content hash); another source would give
    another dataset under the old release's configuration without a word."""
    source = load_build_config(path).get("source") or {}
    recorded = source.get("spec")
    if given is None or recorded is None or source.get("parts"):  # a source of parts records each part
        return
    if isinstance(recorded, dict):
        local = _local_path(given)
        if local is not None and content_revision(local) == recorded.get("content"):
            return
        described = f"local copy {recorded.get('local')!r} ({recorded.get('content')})"
    elif str(given) == str(recorded):
        return
    else:
        described = repr(recorded)
    raise UserError(f"{path} was built from {described}; --source {given} is another source. Rebuild from the "
                    "recorded source, or build from the new one without --config (passing its options)")


def config_defaults(parser: ArgumentParser, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A build_config.yaml's options as parser defaults, each checked as if it had been typed (type, choices,
    the builder's own parsers), and the recorded local files a rebuild must be given again.

    A config file may come from anyone (it travels with a release on the Hub): options that are never
    recorded (where the build goes, the LLM endpoint and its key, caches) are refused, not applied."""
    recorded = load_build_config(path)
    builder = parser.builder_name
    if builder and recorded.get("builder") not in (None, builder):
        raise UserError(f"{path} is the build config of {recorded.get('builder')!r}, not of {builder}")
    params, source = recorded.get("params") or {}, recorded.get("source") or {}
    if not isinstance(params, dict) or not isinstance(source, dict):
        raise UserError(f"{path} is not an mcqforge build_config.yaml: 'params' and 'source' must be mappings")
    not_recorded = sorted(k for k in params if k in DELIVERY_OPTIONS | runtime_dests(parser))
    if not_recorded:
        raise UserError(f"{path}: options {not_recorded} are never recorded in a build config; pass them on the "
                        "command line")
    values = {**params, "benchmark": source.get("benchmark"), "source": source.get("spec")}
    local = {k: v for k, v in values.items() if _is_recorded_local(v)}
    given = {k: v for k, v in values.items() if v is not None and k not in local}
    checked = parse_options(parser, given, path)
    return {dest: getattr(checked, dest) for dest in given}, local


def parse_options(parser: ArgumentParser, options: dict[str, Any], where: str | Path) -> argparse.Namespace:
    """``options`` ({dest: value}) parsed as if they had been typed, with the parser's own types and choices;
    a bad or unknown one is one error naming ``where`` (a config file, the Python API)."""
    return _parse_strictly(parser, option_words(parser, options, where), where)


def option_words(parser: argparse.ArgumentParser, options: dict[str, Any], where: str | Path) -> list[str]:
    """The command-line words that would give ``options`` ({dest: value}; None: the default); a false
    ``--x/--no-x`` switch is ``--no-x``."""
    actions = {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}
    unknown = sorted(k for k in options if k not in actions)
    if unknown:
        raise UserError(f"{where}: options {unknown} are not options of {parser.prog}")
    return [token for dest, value in options.items() if value is not None
            for token in _option_tokens(where, actions[dest], value)]


def _option_tokens(where: str | Path, action: argparse.Action, value: Any) -> list[str]:
    """The command-line words that would have given ``action`` this recorded value."""
    flag = next((s for s in action.option_strings if s.startswith("--")), action.option_strings[0])
    if isinstance(action, argparse.BooleanOptionalAction) or action.nargs == 0:
        if not isinstance(value, bool):
            raise UserError(f"{where}: option {action.dest} is a switch (true or false), got {value!r}")
        if isinstance(action, argparse.BooleanOptionalAction):
            return [flag if value else action.option_strings[1]]
        return [flag] if value != action.default else []
    if action.nargs is None or action.nargs == "?":
        if isinstance(value, (list, tuple, dict)):
            raise UserError(f"{where}: option {action.dest} takes one value, got {value!r}")
        return [f"{flag}={_token(value)}"]
    if not isinstance(value, (list, tuple)) or any(isinstance(v, (list, tuple, dict)) for v in value):
        raise UserError(f"{where}: option {action.dest} takes a list of values, got {value!r}")
    return [flag, *map(_token, value)] if value else []


def _token(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _parse_strictly(parser: ArgumentParser, tokens: list[str], where: str | Path) -> argparse.Namespace:
    """Parse option words with the parser's own types and choices; a bad value names ``where``."""
    try:
        return parser.parse_args(tokens)
    except UserError as error:
        raise UserError(f"{where}: {error}") from None


def _require_local_files_again(args: argparse.Namespace, parser: argparse.ArgumentParser,
                               local: dict[str, Any]) -> None:
    """A release records local files by base name and content hash: a rebuild must be given them again."""
    missing = [dest for dest in local if getattr(args, dest) in (None, [], ())]
    if missing:
        names = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
        hints = [f"{names.get(d, d)} ({_local_names(local[d])})" for d in missing]
        raise UserError(f"{args.config} was built from local files; pass them again: {', '.join(hints)}")


def _is_recorded_local(value: Any) -> bool:
    if isinstance(value, list):
        return any(_is_recorded_local(v) for v in value)
    return isinstance(value, dict) and "local" in value and "content" in value


def _local_names(value: Any) -> str:
    values = value if isinstance(value, list) else [value]
    return ", ".join(v["local"] for v in values if isinstance(v, dict) and "local" in v)


def recorded_params(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> dict:
    """Every option that decides what the build holds, for the build config and the card. Local files and
    folders are recorded by base name and content hash, never by path."""
    skipped = DELIVERY_OPTIONS | (runtime_dests(parser) if parser is not None else set())
    return {k: _recorded(v) for k, v in sorted(vars(args).items()) if k not in skipped}


def _recorded(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_recorded(v) for v in value]
    if not isinstance(value, (str, Path)):
        return value
    model, sep, rest = str(value).partition("=")
    for name, candidate in ((None, value), (model, rest if sep else None)):
        path = _local_path(candidate)
        if path is not None:
            entry = {"local": path.resolve().name, "content": content_revision(path)}
            return {"model": name, **entry} if name else entry
    return str(value)


PATH_SUFFIXES = {".jsonl", ".json", ".csv", ".parquet", ".yaml", ".yml", ".txt", ".gz", ".md"}


def _local_path(value: str | Path | None) -> Path | None:
    """An existing local file or folder that the option names (a Path, or text that looks like one)."""
    if value is None or value == "":
        return None
    text = str(value)
    looks_like_a_path = isinstance(value, Path) or "/" in text or text.startswith(("~", ".")) or \
        Path(text).suffix.lower() in PATH_SUFFIXES
    path = Path(text).expanduser()
    return path if looks_like_a_path and path.exists() else None


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
            release = preflight(builder, args)
            source = load(builder, args)
            build, report = build_and_validate(builder, parser, args, source)
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


def build_and_validate(builder: Builder, parser: argparse.ArgumentParser, args: argparse.Namespace,
                       source: LoadedSource) -> tuple[Build, ValidationReport]:
    """The build, with every recorded option in its params (the builder adds only derived ones), validated."""
    build = builder.build(source, args)
    build.params = {**recorded_params(args, parser), **build.params}
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


def preflight(builder: Builder, args: argparse.Namespace) -> ReleaseInfo:
    """Every check that can refuse a build, before any source is loaded or any paid call is made."""
    if not args.preview and not args.output and not args.push:
        raise UserError("nothing to do: pass --output DIR and/or --push REPO_ID --version X.Y.Z (or --preview K)")
    check_options(builder, args)
    release = ReleaseInfo(version=args.version)
    if args.preview:
        return release
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
    return release


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


def check_options(builder: Builder, args: argparse.Namespace) -> None:
    """The rules between options, and the LLM endpoint a build will call (each option's own range is its type)."""
    if args.version is not None:
        version_tag(args.version)
    builder.check_arguments(args)
    for model in builder.models(args):
        check_model(model)
    if builder.llm_models(args):
        from .llm import LLMSettings, check_endpoint

        check_endpoint(LLMSettings.from_args(args))


def deliver(build: Build, report: ValidationReport, args: argparse.Namespace, release: ReleaseInfo) -> None:
    """Write the folder and/or publish it, then say what was built and where it went."""
    where = []
    if args.output:
        write_release(build, report, args.output, release)
        where.append(f"wrote {args.output}")
    if args.push:
        with tempfile.TemporaryDirectory(prefix="mcqforge-release-") as tmp:
            folder = args.output or write_release(build, report, Path(tmp) / "release", release)
            published = publish_folder(Path(folder), release, private=args.private)
        where.append(f"published {published.url} tag {published.tag}")
    print_summary(build, report, where)


def exit_code(command: Callable[[], int | None]) -> int:
    """Run a command-line action: user errors print one line and exit 2, with no traceback; otherwise the
    action's own status (0 when it returns nothing)."""
    try:
        status = command()
    except UserError as error:
        print(f"error: {scrub_text(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if not raised_by_an_interrupt(error):
            raise
        print("interrupted", file=sys.stderr)  # e.g. an import that Ctrl-C broke half-way
        return 130
    return status or 0


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
