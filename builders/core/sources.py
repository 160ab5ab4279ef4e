"""Reading source benchmarks, from the Hub or from a local copy in the same column layout.

A SPEC is either a Hub dataset id with an optional ``:config`` and ``@revision``
(``cais/mmlu:all@main``), a local file or folder (json, jsonl, csv or parquet; one file per split,
named after the split; for multi-config sources one sub-folder per config), or ``sample`` for the
small sample shipped inside the package.

Turning a source row into an :class:`MCQRecord` is the job of one adapter per benchmark, in
:mod:`builders.core.adapters`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from .errors import SourceError

logger = logging.getLogger(__name__)

SAMPLES_DIR = Path(__file__).resolve().parent.parent / "data" / "samples"
LOCAL_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


@dataclass(frozen=True)
class SourceSpec:
    """Where a benchmark's rows come from."""

    hub_id: str | None = None
    config: str | None = None
    revision: str | None = None
    path: Path | None = None
    text: str = ""  # as the user wrote it: recorded in the build config, so no machine path leaks in

    @property
    def is_local(self) -> bool:
        return self.path is not None

    def describe(self) -> str:
        if self.text:
            return self.text
        if self.path is not None:
            return str(self.path)
        return self.hub_id + (f":{self.config}" if self.config else "") + (f"@{self.revision}" if self.revision else "")


def parse_spec(spec: str, benchmark: str | None = None) -> SourceSpec:
    """Parse a SPEC string; a path that exists always wins over a Hub id."""
    if spec == "sample":
        path = SAMPLES_DIR / (benchmark or "")
        if not benchmark or not path.is_dir():
            raise SourceError(f"no embedded sample for benchmark {benchmark!r}; samples: {_sample_names()}")
        return SourceSpec(path=path, text="sample")
    path = Path(spec).expanduser()
    if path.exists():
        return SourceSpec(path=path, text=spec)
    if spec.startswith((".", "/", "~")) or spec.endswith(LOCAL_SUFFIXES):
        raise SourceError(f"source path {spec} does not exist")
    repo, _, revision = spec.partition("@")
    repo, _, config = repo.partition(":")
    if not _HUB_ID.match(repo) or (spec.count("@") > 1):
        raise SourceError(f"cannot read source {spec!r}: expected an existing path or HUB_ID[:CONFIG][@REVISION]")
    return SourceSpec(hub_id=repo, config=config or None, revision=revision or None, text=spec)


def _sample_names() -> list[str]:
    return sorted(p.name for p in SAMPLES_DIR.iterdir() if p.is_dir()) if SAMPLES_DIR.is_dir() else []


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
    suffix = file.suffix
    if suffix == ".jsonl":
        return list(_read_jsonl(file))
    if suffix == ".json":
        text = file.read_text(encoding="utf-8")
        if text.lstrip().startswith("["):
            return _check_objects(json.loads(text), file)
        return list(_read_jsonl(file))
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(file).to_pylist()
    if suffix == ".csv":
        return _read_csv(file)
    raise SourceError(f"{file}: unsupported file type {suffix}")


def _read_jsonl(file: Path) -> Iterator[dict[str, Any]]:
    for _, row in iter_json_lines(file):
        yield row


def iter_json_lines(file: Path, error: type[Exception] = SourceError) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a bad line raises ``error`` naming file and line."""
    with open(file, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as problem:
                raise error(f"{file}:{number}: invalid JSON ({problem.msg})") from None
            if not isinstance(row, dict):
                raise error(f"{file}:{number}: each line must be a JSON object")
            yield number, row


def _check_objects(rows: Any, file: Path) -> list[dict[str, Any]]:
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise SourceError(f"{file}: a .json file must hold an array of objects or JSON lines")
    return rows


def _read_csv(file: Path) -> list[dict[str, Any]]:
    """CSV cannot hold lists: cells that hold JSON arrays/objects are decoded, integers are parsed."""
    with open(file, encoding="utf-8", newline="") as f:
        return [{k: _csv_value(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _csv_value(cell: str) -> Any:
    stripped = cell.strip()
    if stripped[:1] in "[{":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return cell
    if re.fullmatch(r"-?\d+", stripped):
        return int(stripped)
    return cell


def content_revision(path: Path, ignore: tuple[str, ...] = ()) -> str:
    """A content hash that stands in for the Hub commit sha of a local file or folder (models too).

    Folders are hashed recursively (file names and contents), skipping ``.git`` and the names in ``ignore``.
    """
    digest = hashlib.sha256()
    root = path.parent if path.is_file() else path
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*")
        if p.is_file() and not {".git", *ignore} & set(p.relative_to(root).parts))
    for file in files:
        digest.update(str(file.relative_to(root)).encode())
        with open(file, "rb") as f:
            digest.update(hashlib.file_digest(f, "sha256").digest())
    return "sha256:" + digest.hexdigest()


def read_hub(spec: SourceSpec, default_config: str | None, splits: tuple[str, ...], configs: tuple[str, ...] = ()) -> RawSource:
    """Load from the Hub with ``datasets``; every failure becomes one actionable line."""
    config = spec.config or default_config
    try:
        revision = _resolve_revision(spec.hub_id, spec.revision)
        raw = RawSource(dataset=spec.hub_id, config=config or "default", revision=revision)
        for name in configs or (config,):
            loaded = _load_hub_dataset(spec.hub_id, name, revision)
            for split in splits:
                if split in loaded:
                    raw.rows[(name if configs else "", split)] = loaded[split].to_list()
    except SourceError:
        raise
    except Exception as error:  # datasets/hub raise many types; the user needs one line.
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SourceError(
            f"cannot load {spec.describe()} from the Hub ({type(error).__name__}: {message}). "
            "If the Hub is unreachable, pass --source PATH to a local copy in the same columns."
        ) from None
    if not raw.rows:
        raise SourceError(f"{spec.describe()} has none of the splits {list(splits)}")
    return raw


def _resolve_revision(hub_id: str, revision: str | None) -> str:
    from huggingface_hub import HfApi

    return HfApi().dataset_info(hub_id, revision=revision).sha


def _load_hub_dataset(hub_id: str, config: str | None, revision: str):
    import datasets

    return datasets.load_dataset(hub_id, config, revision=revision)
