"""Reading a source's raw rows: a local copy (json, jsonl, csv, parquet) or the Hub, each failure one line."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

from builders.core.errors import SourceError, tag_hint
from builders.core.runtime.content import content_revision
from builders.core.sources.spec import LOCAL_SUFFIXES, SourceSpec

# A JSON escape of a UTF-16 surrogate: only a valid high+low pair makes text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_MAX_DIGITS = 4300  # the longest integer Python reads from text (sys.get_int_max_str_digits' default)


@dataclass
class RawSource:
    """Rows per (config, split), in source order, and where they came from."""

    dataset: str
    config: str
    revision: str
    rows: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)


def read_local(path: Path, splits: tuple[str, ...], configs: tuple[str, ...] = ()) -> RawSource:
    """Read a local copy: one file per split, or one sub-folder per config when ``configs`` is set."""
    raw = RawSource(dataset=str(path), config="local", revision=content_revision(path))
    if configs and path.is_dir() and any(p.is_dir() for p in path.iterdir()):
        for config_dir in sorted(p for p in path.iterdir() if p.is_dir()):
            for split, file in _split_files(config_dir, splits).items():
                raw.rows[(config_dir.name, split)] = read_rows(file)
    else:
        for split, file in _split_files(path, splits).items():
            raw.rows[("", split)] = read_rows(file)
    if not raw.rows:
        raise SourceError(f"no split file found in {path}; expected one of {list(splits)} with suffix {LOCAL_SUFFIXES}")
    return raw


def _split_files(path: Path, splits: tuple[str, ...]) -> dict[str, Path]:
    if path.is_file():
        split = path.name.split(".")[0]
        if split not in splits:
            raise SourceError(f"{path}: the file name must be a split name, one of {list(splits)}")
        return {split: path}
    found = {}
    for split in splits:
        candidates = [path / f"{split}{suffix}" for suffix in LOCAL_SUFFIXES]
        existing = [p for p in candidates if p.exists()]
        if len(existing) > 1:
            raise SourceError(f"{path}: several files for split {split!r}: {[p.name for p in existing]}")
        if existing:
            found[split] = existing[0]
    return found


def read_rows(file: Path) -> list[dict[str, Any]]:
    """Every row of a local file; any unreadable content is one SourceError naming the file (and line)."""
    suffix = file.suffix
    if suffix == ".parquet":
        return _read_parquet(file)
    text = _read_text(file)
    if suffix == ".jsonl":
        return [row for _, row in _json_lines(text.split("\n"), file, SourceError)]
    if suffix == ".json":
        if text.lstrip().startswith("["):
            return _check_objects(_loads(text, f"{file}", SourceError), file)
        return [row for _, row in _json_lines(text.split("\n"), file, SourceError)]
    if suffix == ".csv":
        return _read_csv(text, file)
    raise SourceError(f"{file}: unsupported file type {suffix}")


def _read_text(file: Path) -> str:
    data = file.read_bytes()
    if b"\x00" in data[:8192]:
        raise SourceError(f"{file}: a binary file, not {file.suffix[1:]} text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SourceError(f"{file}:{line}: not UTF-8 text (byte 0x{data[error.start]:02x})") from None


def _read_parquet(file: Path) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(file).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as error:
        raise SourceError(f"{file}: not a readable Parquet file ({_first_line(error)})") from None


def iter_json_lines(file: Path, error: type[Exception] = SourceError) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; bad content raises ``error`` naming file and line."""
    try:
        text = _read_text(file)
    except SourceError as problem:
        raise error(str(problem)) from None
    yield from _json_lines(text.split("\n"), file, error)


def _json_lines(lines: Sequence[str], file: Path, error: type[Exception]) -> Iterator[tuple[int, dict[str, Any]]]:
    # ``lines`` split on "\n" only: str.splitlines() also splits on U+0085 and U+2028, which JSON strings may hold raw
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = _loads(line, f"{file}:{number}", error)
        if not isinstance(row, dict):
            raise error(f"{file}:{number}: each line must be a JSON object")
        yield number, row


def _loads(text: str, where: str, error: type[Exception]) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as problem:
        raise error(f"{where}: invalid JSON ({problem.msg})") from None
    except ValueError:  # Python reads no integer of more than 4,300 digits (sys.get_int_max_str_digits)
        raise error(f"{where}: a number too long to read (more than {_MAX_DIGITS:,} digits)") from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply to read") from None
    if _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise error(f"{where}: a lone UTF-16 surrogate (such as \\ud800) is not text") from None
    return value


def _check_objects(rows: Any, file: Path) -> list[dict[str, Any]]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise SourceError(f"{file}: a .json file must hold an array of objects or JSON lines")
    return rows


def _read_csv(text: str, file: Path) -> list[dict[str, Any]]:
    """CSV cannot hold lists: cells that hold JSON arrays/objects are decoded, integers are parsed."""
    try:
        return [{k: _csv_value(v) for k, v in row.items()} for row in csv.DictReader(io.StringIO(text, newline=""))]
    except csv.Error as error:
        raise SourceError(f"{file}: not a readable CSV file ({error})") from None


def _csv_value(cell: str | None) -> Any:
    """A cell that is not JSON, or not an integer Python can read (4,300 digits at most), stays text: the
    source's adapter then names the row and the field it expected something else in."""
    if cell is None:
        return None
    stripped = cell.strip()
    if stripped[:1] in "[{":
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):  # JSONDecodeError, too long a number, too deep
            return cell
    if re.fullmatch(r"-?\d+", stripped) and len(stripped) <= _MAX_DIGITS:
        return int(stripped)
    return cell


def read_hub(spec: SourceSpec, default_config: str | None, splits: tuple[str, ...], configs: tuple[str, ...] = ()) -> RawSource:
    """Load from the Hub with ``datasets``; every failure becomes one actionable line."""
    config = spec.config or default_config
    hub_id = spec.hub_id
    assert hub_id is not None, "a spec that is not local names a Hub id"
    try:
        revision = _resolve_revision(hub_id, spec.revision)
        raw = RawSource(dataset=hub_id, config=config or "default", revision=revision)
        for name in configs or (config,):
            loaded = _load_hub_dataset(hub_id, name, revision)
            for split in splits:
                if split in loaded:
                    # with ``configs``, each name is one of them (a str)
                    raw.rows[(str(name) if configs else "", split)] = loaded[split].to_list()
    except SourceError:
        raise
    except Exception as error:  # datasets/hub raise many types; the user needs one line.
        if type(error).__name__ == "RevisionNotFoundError":
            raise SourceError(f"{spec.hub_id} has no revision {spec.revision!r}{tag_hint(spec.revision)}") from None
        raise SourceError(
            f"cannot load {spec.text} from the Hub ({type(error).__name__}: {_first_line(error)}). "
            "If the Hub is unreachable, pass --source PATH to a local copy in the same columns."
        ) from None
    if not raw.rows:
        raise SourceError(f"{spec.text} has none of the splits {list(splits)}")
    return raw


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _resolve_revision(hub_id: str, revision: str | None) -> str:
    from huggingface_hub import HfApi

    sha = HfApi().dataset_info(hub_id, revision=revision).sha
    assert sha is not None, "the Hub reports the commit sha of every dataset it returns"
    return sha


def _load_hub_dataset(hub_id: str, config: str | None, revision: str):
    import datasets

    return datasets.load_dataset(hub_id, config, revision=revision)
