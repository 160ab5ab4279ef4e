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
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from .build import Build, Builder
from .errors import UserError
from .publish import check_repo_id, prepare_release, publish_folder, version_tag
from .release import ReleaseInfo, check_output_folder, load_build_config, write_release
from .sources import DEFAULT_MAX_EXCLUDED, LoadedSource, Selection, content_revision, load_source
from .validate import ValidationReport, validate

logger = logging.getLogger(__name__)
# Options about where a build goes, not what it holds: never recorded (with the runtime groups' options).
DELIVERY_OPTIONS = {"output", "push", "version", "private", "config", "log_level", "benchmark", "source", "preview"}


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default once, and only when there is one worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, False, argparse.SUPPRESS, []) or "%(default)" in (action.help or ""):
            return action.help or ""
        return super()._get_help_string(action)


def runtime_group(parser: argparse.ArgumentParser, title: str) -> argparse._ArgumentGroup:
    """An argument group for options about where and how fast a build runs, not what it holds:
    they stay out of build_config.yaml and the card."""
    group = parser.add_argument_group(f"{title} (runtime: not recorded in build_config.yaml)")
    group.runtime = True  # type: ignore[attr-defined]
    return group


def runtime_dests(parser: argparse.ArgumentParser) -> set[str]:
    return {a.dest for g in parser._action_groups if getattr(g, "runtime", False) for a in g._group_actions}


def builder_parser(builder: Builder) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m builders.{builder.name}", description=builder.description,
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
    common.add_argument("--max-excluded", type=float, default=DEFAULT_MAX_EXCLUDED, metavar="SHARE",
                        help="stop when more than this share of the source rows would be excluded")
    common.add_argument("--splits", nargs="+", metavar="SPLIT", help="build only these splits of the source")
    common.add_argument("--subjects", nargs="+", metavar="SUBJECT",
                        help="build only these subjects (MMLU subjects, MMLU-Pro categories, MATH types, sub-configs)")
    common.add_argument("--limit", type=int, metavar="N", help="build only the first N rows of each evaluation split")
    common.add_argument("--output", metavar="DIR", type=Path, help="write the release folder here")
    common.add_argument("--push", metavar="REPO_ID", help="validate, publish to this Hub dataset repo and tag the version")
    common.add_argument("--version", metavar="X.Y.Z", help="release version, required with --push; tagged vX.Y.Z")
    common.add_argument("--private", action="store_true", help="create the Hub repo as private")
    common.add_argument("--config", metavar="FILE", type=Path,
                        help="build_config.yaml of an earlier release: its options become the defaults")
    common.add_argument("--preview", type=int, metavar="K",
                        help="print K transformed items and write nothing (built from the first K items where the "
                             "builder allows, so that a preview costs few LLM calls)")
    common.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    builder.add_arguments(parser)
    return parser


# ---- parsing -------------------------------------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse twice: a --config file sets the defaults, explicit flags still win."""
    args = parser.parse_args(argv)
    if args.config:
        recorded = load_build_config(args.config)
        defaults = dict(recorded.get("params") or {})
        source = recorded.get("source") or {}
        defaults["benchmark"] = source.get("benchmark")
        defaults["source"] = source.get("spec")
        known = {action.dest for action in parser._actions}
        unknown = sorted(set(defaults) - known)
        if unknown:
            raise UserError(f"{args.config}: options {unknown} are not options of {parser.prog}")
        local = {k: v for k, v in defaults.items() if _is_recorded_local(v)}
        parser.set_defaults(**{k: v for k, v in defaults.items() if v is not None and k not in local})
        args = parser.parse_args(argv)
        _require_local_files_again(args, parser, local)
    return args


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
        release = preflight(builder, args)
        source = load(builder, args)
        build, report = build_and_validate(builder, parser, args, source)
        if args.preview:
            print_preview(build, args.preview)
            return
        deliver(build, report, args, release)

    return exit_code(run)


def load(builder: Builder, args: argparse.Namespace) -> LoadedSource:
    """The builder's source, read as ``args`` say (``--benchmark``, ``--source``, the subset options)."""
    return load_source(builder.benchmark(args.benchmark), args.source, seed=args.seed, strict=args.strict,
                       options=vars(args), selection=selection(builder, args), max_excluded=args.max_excluded)


def build_and_validate(builder: Builder, parser: argparse.ArgumentParser, args: argparse.Namespace,
                       source: LoadedSource) -> tuple[Build, ValidationReport]:
    """The build, with every recorded option in its params (the builder adds only derived ones), validated."""
    build = builder.build(source, args)
    build.params = {**recorded_params(args, parser), **build.params}
    return build, validate(build)


def selection(builder: Builder, args: argparse.Namespace) -> Selection:
    limit = args.limit
    if args.preview and builder.preview_subset:
        limit = min(limit or args.preview, args.preview)
    if limit is not None and limit < 1:
        raise UserError("--limit must be at least 1")
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
    if args.push:
        if not args.version:
            raise UserError("--push needs --version X.Y.Z")
        check_repo_id(args.push)
        release = prepare_release(args.push, args.version)
    return release


def check_options(builder: Builder, args: argparse.Namespace) -> None:
    """The options themselves, and the LLM endpoint a build will call."""
    if args.preview is not None and args.preview < 1:
        raise UserError("--preview must be at least 1")
    if args.version is not None:
        version_tag(args.version)
    if not 0 <= args.max_excluded <= 1:
        raise UserError("--max-excluded is a share between 0 and 1")
    builder.check_arguments(args)
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
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return status or 0


# ---- what the console shows ------------------------------------------------------------------------------


def print_summary(build: Build, report: ValidationReport, where: Sequence[str], out=None) -> None:
    out = out or sys.stdout
    print(f"\n{build.title}: {len(build.configs)} configs from {build.source.source_description}", file=out)
    print(report.rows_table().to_markdown(), file=out)
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
