"""The build configuration: what a release records of how it was built (``build_config.yaml``), and how
``--config`` replays it.

Every option that decides what a release holds is recorded, by its name (local files by base name and content hash,
never by path: :func:`recorded_value`); options about where the build goes or how fast it runs (the runtime options,
:mod:`builders.core.options.declare`) never are. ``--config FILE`` reads the file back as the parser's defaults,
each value checked as if it had been typed, and explicit flags still win.
"""

from __future__ import annotations

import argparse
import re
import reprlib
from pathlib import Path
from typing import Any, Sequence

from builders.core.errors import UserError
from builders.core.build.result import Build
from builders.core.sources.spec import SAMPLES_DIR
from builders.core.runtime.content import content_revision
from builders.core.version import __version__

BUILD_CONFIG_FILE = "build_config.yaml"

BUILD_CONFIG_KEYS = ("builder", "mcqforge_version", "source", "params")  # what build_config() writes


def build_config(build: Build) -> dict[str, Any]:
    """The plain file that records how to rebuild this release (``--config`` reads it back)."""
    first = build.source.provenance[0]
    return {
        "builder": build.about.builder,
        "mcqforge_version": __version__,
        "source": {"benchmark": build.source.benchmark.name, "spec": first.spec,
                   "dataset": first.dataset, "revision": first.revision,
                   **({"parts": [vars(p) for p in build.source.provenance]} if len(build.source.provenance) > 1 else {})},
        "params": build.params,
    }


def build_config_text(build: Build) -> str:
    import yaml  # PyYAML loads when a build config is written or read, not to parse a command line

    return yaml.safe_dump(build_config(build), sort_keys=True, allow_unicode=True)


def load_build_config(path: Path) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise UserError(f"cannot read build config {path}: {error}") from None
    except RecursionError:
        raise UserError(f"cannot read build config {path}: nested too deeply") from None
    values = _values_in(data, {})
    if values > MAX_CONFIG_VALUES:  # aliases of aliases: a few lines that stand for millions of values
        raise UserError(f"{path} holds {values:,} values once its YAML aliases are expanded; a build config holds "
                        f"at most {MAX_CONFIG_VALUES:,}")
    if not isinstance(data, dict) or not isinstance(data.get("source", {}), dict):
        raise UserError(f"{path} is not an mcqforge build_config.yaml")
    unknown = sorted(str(key) for key in data if key not in BUILD_CONFIG_KEYS)
    if unknown:  # e.g. options written at the top level, which would otherwise be ignored without a word
        raise UserError(f"{path}: unknown top-level keys {unknown}; a build config holds only "
                        f"{', '.join(BUILD_CONFIG_KEYS)} (options go under 'params:')")
    return _resolve_release_files(_resolve_sample_files(data), Path(path).parent)


MAX_CONFIG_VALUES = 100_000


def _values_in(value: Any, sizes: dict[int, int]) -> int:
    """How many values ``value`` holds written out, itself included: an object a YAML alias repeats is counted
    each time, and measured once (``sizes``, by identity)."""
    if id(value) not in sizes:
        sizes[id(value)] = 1  # a cycle (a recursive alias) counts once
        children = [*value.keys(), *value.values()] if isinstance(value, dict) else \
            value if isinstance(value, list) else []
        sizes[id(value)] = 1 + sum(_values_in(child, sizes) for child in children)
    return sizes[id(value)]


def _resolve_sample_files(data: dict[str, Any]) -> dict[str, Any]:
    """A build from ``--source sample`` may have read files shipped with the sample (its models' predictions),
    recorded like any local file by base name and content hash. The package still holds them: a recorded
    file whose name and hash match a file of the sample is given back as its path, so that the rebuild needs
    no option. A file that is not there (or whose content changed) stays recorded: the user must pass it."""
    source = data.get("source") or {}
    if source.get("spec") != "sample" or not isinstance(data.get("params"), dict):
        return data
    benchmarks = [source.get("benchmark")] + [part.get("benchmark") for part in source.get("parts") or []
                                              if isinstance(part, dict)]
    folders = [SAMPLES_DIR / name for name in dict.fromkeys(benchmarks) if isinstance(name, str) and name]

    def resolve(value: Any) -> Any:
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if not (isinstance(value, dict) and isinstance(value.get("local"), str) and "content" in value):
            return value
        for folder in folders:
            candidate = folder / Path(value["local"]).name
            if candidate.is_file() and content_revision(candidate) == value["content"]:
                return f"{value['model']}={candidate}" if value.get("model") else str(candidate)
        return value

    return {**data, "params": {key: resolve(value) for key, value in data["params"].items()}}


def _resolve_release_files(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A release carries copies of some local files it was built from (``corrections.jsonl``), recorded by that
    name and content hash: a recorded file that the build config's own folder holds, with that content, is given
    back as its path, so that ``--config RELEASE/build_config.yaml`` rebuilds the release with no other option."""
    if not isinstance(data.get("params"), dict):
        return data

    def resolve(value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("local"), str) and "content" in value \
                and not value.get("model"):
            candidate = folder / Path(value["local"]).name
            if candidate.is_file() and content_revision(candidate) == value["content"]:
                return str(candidate)
        return value

    return {**data, "params": {key: resolve(value) for key, value in data["params"].items()}}


# ---- replaying a build config: --config ------------------------------------------------------------


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
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


def config_defaults(parser: argparse.ArgumentParser, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A build_config.yaml's options as parser defaults, each checked as if it had been typed (type, choices,
    the builder's own parsers), and the recorded local files a rebuild must be given again.

    A config file may come from anyone (it travels with a release on the Hub): options that are never
    recorded (where the build goes, the LLM endpoint and its key, caches) are refused, not applied."""
    recorded = load_build_config(path)
    builder = getattr(parser, "builder_name", None)  # a builder's parser: the file must be this builder's
    if builder and recorded.get("builder") not in (None, builder):
        raise UserError(f"{path} is the build config of {recorded.get('builder')!r}, not of {builder}")
    params, source = recorded.get("params") or {}, recorded.get("source") or {}
    if not isinstance(params, dict) or not isinstance(source, dict):
        raise UserError(f"{path} is not an mcqforge build_config.yaml: 'params' and 'source' must be mappings")
    not_recorded = sorted(k for k in params if k in not_recorded_options(parser))
    if not_recorded:
        raise UserError(f"{path}: options {not_recorded} are never recorded in a build config; pass them on the "
                        "command line")
    values = {**params, "benchmark": source.get("benchmark"), "source": source.get("spec")}
    local = {k: v for k, v in values.items() if _is_recorded_local(v)}
    given = {k: v for k, v in values.items() if v is not None and k not in local}
    checked = parse_options(parser, given, path)
    return {dest: getattr(checked, dest) for dest in given}, local


def parse_options(parser: argparse.ArgumentParser, options: dict[str, Any], where: str | Path) -> argparse.Namespace:
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
            raise UserError(f"{where}: option {action.dest} is a switch (true or false), got {shown(value)}")
        if isinstance(action, argparse.BooleanOptionalAction):
            return [flag if value else action.option_strings[1]]
        return [flag] if value != action.default else []
    if action.nargs is None or action.nargs == "?":
        if isinstance(value, (list, tuple, dict)):
            raise UserError(f"{where}: option {action.dest} takes one value, got {shown(value)}")
        return [f"{flag}={_token(value)}"]
    if not isinstance(value, (list, tuple)) or any(isinstance(v, (list, tuple, dict)) for v in value):
        raise UserError(f"{where}: option {action.dest} takes a list of values, got {shown(value)}")
    # a list's items follow its flag as separate words, where one that looks like a flag would be parsed as
    # that option ("splits: [test, --seed=7]" replaced the recorded seed)
    flag_like = [v for v in map(_token, value) if _NOT_A_VALUE.match(v)]
    if flag_like:
        raise UserError(f"{where}: option {action.dest}: item {flag_like[0]!r} looks like an option, not a value")
    return [flag, *map(_token, value)] if value else []


# What argparse reads as an option rather than a value: a word that starts with "-" and is not a negative number
_NOT_A_VALUE = re.compile(r"-(?!\d+(?:\.\d*)?$|\.\d+$).")


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxlist, _SHOWN.maxdict, _SHOWN.maxstring, _SHOWN.maxother = 2, 4, 4, 60, 60


def shown(value: Any) -> str:
    """A value as an error line quotes it: short, however large it is (a YAML alias bomb is 25 million
    characters long once written out, and as slow to write)."""
    return _SHOWN.repr(value)


def _token(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _parse_strictly(parser: argparse.ArgumentParser, tokens: list[str], where: str | Path) -> argparse.Namespace:
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


def not_recorded_options(parser: argparse.ArgumentParser) -> set[str]:
    """The dests of the options a builder's parser never records (where the build goes, runtime options), which
    the parser carries (:func:`builders.core.pipeline.cli.builder_parser`)."""
    return set(getattr(parser, "not_recorded", ()))


def recorded_value(value: Any) -> Any:
    """An option's value as a build config records it: a local file or folder by base name and content hash."""
    if isinstance(value, (list, tuple)):
        return [recorded_value(v) for v in value]
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
