"""Source benchmarks: where their rows come from, and the one loader that turns rows into items.

A SPEC is a Hub dataset id with an optional ``:config`` and ``@revision`` (``cais/mmlu:all@main``), a local
file or folder (json, jsonl, csv or parquet; one file per split, named after the split; for multi-config
sources one sub-folder per config), or ``sample`` for the small sample shipped inside the package.

A :class:`Benchmark` describes one source: its Hub id, splits, and ``to_item(row, ctx)``, the small adapter
that turns one row into the builder's item (an :class:`~builders.core.items.record.MCQRecord`, an
:class:`~builders.core.items.record.OpenItem`, or a builder's own record). :func:`load_source` reads any
benchmark, multiple-choice or open-ended, and returns a :class:`LoadedSource`: the items per split, the
rows read, every exclusion with its reason, and the provenance the card records.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, Sized

from builders.core.errors import MalformedRow, SourceError, tag_hint
from builders.core.items.record import MCQRecord, normalize_text
from builders.core.pipeline.steps import Exclude, ExclusionLog
from builders.core.runtime.progress import bar

logger = logging.getLogger(__name__)

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "data" / "samples"
LOCAL_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")
# A JSON escape of a UTF-16 surrogate: only a valid high+low pair makes text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
DEFAULT_MAX_EXCLUDED = 0.5


# ---- SPEC -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceSpec:
    """Where a benchmark's rows come from."""

    hub_id: str | None = None
    config: str | None = None
    revision: str | None = None
    path: Path | None = None
    text: str = ""  # as the user wrote it

    @property
    def is_local(self) -> bool:
        return self.path is not None

    def recorded(self) -> str | dict[str, str]:
        """What the build config and card say: a Hub spec as written, ``sample``, or a local copy's base
        name and content hash (never a path of this machine)."""
        if self.path is None or self.text == "sample":
            return self.text
        return {"local": self.path.resolve().name, "content": content_revision(self.path)}

    def describe(self) -> str:
        if self.path is not None and self.text != "sample":
            return f"local copy '{self.path.resolve().name}'"
        return self.text or (self.hub_id or "")


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


# ---- raw rows -----------------------------------------------------------------------------------------


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
    if cell is None:
        return None
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
        if p.is_file() and not {".git", "__pycache__", *ignore} & set(p.relative_to(root).parts))
    for file in files:
        digest.update(str(file.relative_to(root)).encode())
        digest.update(_file_sha256(file))
    return "sha256:" + digest.hexdigest()


def _file_sha256(file: Path) -> bytes:
    """The file's sha256, read in chunks (hashlib.file_digest is Python 3.11+; the project runs on 3.10)."""
    file_hash = hashlib.sha256()
    with open(file, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            file_hash.update(chunk)
    return file_hash.digest()


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


# ---- benchmarks and the loader -------------------------------------------------------------------------


@dataclass(frozen=True)
class RowContext:
    """Where one source row sits, for its adapter."""

    benchmark: str
    dataset: str
    config: str
    split: str
    index: int
    seed: int
    options: Mapping[str, Any]  # the build's options, for adapters with a choice (mmlu_redux: keep all)
    subconfig: str = ""  # for sources split into configs (mmlu_redux subjects): part of the id
    split_position: int = 0  # the row's place in its split, sub-configs concatenated in name order

    @property
    def default_id(self) -> str:
        parts = [self.benchmark, self.subconfig, self.split, str(self.index)]
        return "/".join(p for p in parts if p)

    def record(self, row_id: str, question: str, choices: tuple[str, ...], answer: int, **extra: Any) -> MCQRecord:
        return MCQRecord(
            id=row_id, question=question, choices=choices, answer=answer, source=self.dataset,
            source_config=self.config, source_split=self.split, source_index=self.index, **extra,
        )


@dataclass(frozen=True, kw_only=True)
class Benchmark:
    """A source benchmark: where it lives on the Hub, and how its rows become items.

    ``parts`` makes a benchmark out of several datasets read side by side (PythonIO: HumanEval and MBPP); its
    SPEC is then ``PART=SPEC,PART=SPEC`` or a folder with one sub-folder per part.
    """

    name: str
    hub_id: str
    config: str | None
    splits: tuple[str, ...]
    to_item: Callable[[dict[str, Any], RowContext], Any] | None  # None for a benchmark made of parts
    license: str
    citation: str
    pretty_name: str
    metadata_features: Mapping[str, Any] = field(default_factory=dict)
    subconfigs: tuple[str, ...] = ()
    fewshot_split: str | None = None
    subject_field: str | None = None  # the row field that --subjects selects on
    parts: tuple["Benchmark", ...] = ()
    license_name: str | None = None  # with license "other": the Hub's license_name and license_link
    license_link: str | None = None

    @property
    def default_spec(self) -> str:
        return self.hub_id + (f":{self.config}" if self.config else "")

    def part(self, name: str) -> "Benchmark":
        return next(p for p in self.parts if p.name == name)


@dataclass(frozen=True)
class Provenance:
    """One dataset a build read: what the card's ``source_datasets`` and provenance table say."""

    benchmark: str
    dataset: str  # the Hub id (a local copy stands in for its benchmark's Hub id)
    spec: str | dict[str, str]  # as recorded: a Hub spec, "sample", or {local: base name, content: hash}
    revision: str  # the Hub commit sha, or the local copy's content hash


@dataclass(frozen=True)
class Selection:
    """A subset of the source: ``--splits``, ``--subjects`` and ``--limit`` (rows per evaluation split, and per
    subject when subjects are named)."""

    subjects: tuple[str, ...] = ()
    limit: int | None = None
    splits: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.subjects) or self.limit is not None

    def splits_of(self, benchmark: "Benchmark") -> tuple[str, ...]:
        unknown = sorted(set(self.splits) - set(benchmark.splits))
        if unknown:
            raise SourceError(f"{benchmark.name} has no split {unknown}; its splits are {list(benchmark.splits)}")
        return tuple(s for s in benchmark.splits if s in self.splits) if self.splits else benchmark.splits


@dataclass
class LoadedSource:
    """A benchmark's items per split, with the accounting the card and validator need."""

    benchmark: Benchmark
    items: dict[str, list[Any]]
    rows_in: dict[str, int]
    exclusions: ExclusionLog
    provenance: list[Provenance]
    selection: Selection = field(default_factory=Selection)

    @property
    def dataset(self) -> str:
        return self.provenance[0].dataset

    @property
    def revision(self) -> str:
        return self.provenance[0].revision

    @property
    def source_description(self) -> str:
        return ", ".join(_describe(p) for p in self.provenance)

    def records(self) -> list[Any]:
        return [item for items in self.items.values() for item in items]


def _describe(provenance: Provenance) -> str:
    spec = provenance.spec
    return f"local copy '{spec['local']}'" if isinstance(spec, dict) else spec


def load_source(benchmark: Benchmark, source: str | None = None, *, seed: int = 0, strict: bool = False,
                options: Mapping[str, Any] | None = None, selection: Selection = Selection(),
                max_excluded: float = DEFAULT_MAX_EXCLUDED) -> LoadedSource:
    """Read ``benchmark`` from ``source`` (default: its Hub id) into items.

    Malformed rows stop the load when ``strict`` and are otherwise excluded with their reason. A load that
    excludes more than ``max_excluded`` of its rows, or leaves a split empty, stops with one line.
    """
    if benchmark.parts:
        loaded = _load_parts(benchmark, source, seed, strict, options or {}, selection)
    else:
        spec = parse_spec(source or benchmark.default_spec, benchmark.name)
        splits = selection.splits_of(benchmark)
        raw = read_local(spec.path, splits, benchmark.subconfigs) if spec.path is not None else \
            read_hub(spec, benchmark.config, splits, benchmark.subconfigs)
        dataset = benchmark.hub_id if spec.is_local else raw.dataset
        loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(),
                              [Provenance(benchmark.name, dataset, spec.recorded(), raw.revision)], selection)
        _convert_rows(loaded, raw, seed, strict, options or {})
    _check_loaded(loaded, max_excluded)
    logger.info("loaded %s: %s", benchmark.name, {s: len(r) for s, r in loaded.items.items()})
    return loaded


def load_rows(benchmark: Benchmark, rows: Mapping[str, Any], *, seed: int = 0, strict: bool = False,
              options: Mapping[str, Any] | None = None, selection: Selection = Selection(),
              max_excluded: float = DEFAULT_MAX_EXCLUDED) -> LoadedSource:
    """Items from rows already in memory (the Python API): ``{split: [row, ...]}`` in the benchmark's Hub
    columns, or for a benchmark with parts ``{part: {split: [row, ...]}}``."""
    if benchmark.parts:
        loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(), [], selection)
        for part in benchmark.parts:
            if part.name in rows:
                _merge(loaded, load_rows(part, rows[part.name], seed=seed, strict=strict, options=options,
                                         selection=selection, max_excluded=1.0))
    else:
        unknown = sorted(set(rows) - set(benchmark.splits))
        if unknown:
            raise SourceError(f"{benchmark.name} has no split {unknown}; its splits are {list(benchmark.splits)}")
        splits = selection.splits_of(benchmark)
        raw = RawSource(benchmark.hub_id, "in-memory", _rows_revision(rows),
                        {("", split): [dict(row) for row in split_rows] for split, split_rows in rows.items()
                         if split in splits})
        loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(),
                              [Provenance(benchmark.name, benchmark.hub_id, "in-memory", raw.revision)], selection)
        _convert_rows(loaded, raw, seed, strict, options or {})
    _check_loaded(loaded, max_excluded)
    return loaded


def _rows_revision(rows: Mapping[str, Any]) -> str:
    text = json.dumps(rows, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _merge(loaded: LoadedSource, part: LoadedSource) -> None:
    for split, items in part.items.items():
        loaded.items.setdefault(split, []).extend(items)
    for split, count in part.rows_in.items():
        loaded.rows_in[split] = loaded.rows_in.get(split, 0) + count
    loaded.exclusions.extend(part.exclusions)
    loaded.provenance.extend(part.provenance)


def _load_parts(benchmark: Benchmark, source: str | None, seed: int, strict: bool, options: Mapping[str, Any],
                selection: Selection) -> LoadedSource:
    specs = _part_specs(benchmark, source)
    loaded = LoadedSource(benchmark, {}, {}, ExclusionLog(), [], selection)
    selection.splits_of(benchmark)
    for part in benchmark.parts:
        if source is not None and part.name not in specs:
            continue  # --source names only some parts
        wanted = tuple(s for s in selection.splits if s in part.splits)
        if selection.splits and not wanted:
            continue
        part_selection = Selection(selection.subjects, selection.limit, wanted)
        _merge(loaded, load_source(part, specs.get(part.name), seed=seed, strict=strict, options=options,
                                   selection=part_selection, max_excluded=1.0))
    return loaded


def _part_specs(benchmark: Benchmark, source: str | None) -> dict[str, str]:
    """``PART=SPEC,...`` (parts left out read their default), or a folder with one sub-folder per part."""
    names = [p.name for p in benchmark.parts]
    if source is None:
        return {}
    if source != "sample" and Path(source).expanduser().is_dir():
        folder = Path(source).expanduser()
        found = {name: str(folder / name) for name in names if (folder / name).is_dir()}
        if not found:
            raise SourceError(f"{source}: expected sub-folders named {names}")
        return found
    if source == "sample":
        return {name: "sample" for name in names}
    specs = {}
    for entry in source.split(","):
        name, sep, spec = entry.partition("=")
        if not sep or name.strip() not in names:
            raise SourceError(f"--source {source!r}: expected a folder, 'sample', or {'=SPEC,'.join(names)}=SPEC")
        specs[name.strip()] = spec.strip()
    return specs


def _selected(rows: list[dict[str, Any]], subconfig: str, split: str, benchmark: Benchmark, selection: Selection,
              taken: Counter) -> Iterator[tuple[int, dict[str, Any]]]:
    """(row index, row) of the rows ``--subjects`` and ``--limit`` keep, indices as in the whole source, so
    that an item keeps its id in any subset. ``--limit`` never cuts the few-shot split, and with ``--subjects``
    it counts per subject (the first N rows of one subject must not crowd out every other)."""
    wanted = set(selection.subjects)
    for index, row in enumerate(rows):
        subject = subconfig if subconfig in wanted else _subject(row, benchmark)
        if wanted and subject not in wanted:
            continue
        if selection.limit is not None and split != benchmark.fewshot_split:
            key = (split, subject) if wanted else (split, None)
            if taken[key] >= selection.limit:
                if wanted:
                    continue
                return
            taken[key] += 1
        yield index, row


def _subject(row: Mapping[str, Any], benchmark: Benchmark) -> Any:
    return row.get(benchmark.subject_field) if benchmark.subject_field else None


def _convert_rows(loaded: LoadedSource, raw: RawSource, seed: int, strict: bool, options: Mapping[str, Any]) -> None:
    benchmark = loaded.benchmark
    seen_ids: set[str] = set()
    taken: Counter = Counter()
    ordered = sorted(raw.rows.items(), key=lambda kv: (benchmark.splits.index(kv[0][1]), kv[0][0]))
    first: Counter = Counter()  # rows of the split in the sub-configs before this one
    for (subconfig, split), rows in ordered:
        items = loaded.items.setdefault(split, [])
        loaded.rows_in.setdefault(split, 0)
        config = subconfig or benchmark.config or "default"
        selected = _selected(rows, subconfig, split, benchmark, loaded.selection, taken)
        for index, row in bar(selected, desc=f"read {benchmark.name}/{subconfig or split}", leave=False):
            loaded.rows_in[split] += 1
            ctx = RowContext(benchmark.name, loaded.dataset, config, split, index, seed, options, subconfig,
                             first[split] + index)
            item = None
            try:
                assert benchmark.to_item is not None, "only a benchmark made of parts has no to_item"
                item = benchmark.to_item(row, ctx)
                _check_item(item, seen_ids)
            except MalformedRow as error:
                if strict:
                    raise
                loaded.exclusions.add(split, error.row_id, index, "source",
                                      Exclude("malformed_row", error.field, error.problem))
                continue
            except Exclude as error:
                loaded.exclusions.add(split, item.id if item is not None else ctx.default_id, index, "source", error)
                continue
            seen_ids.add(item.id)
            items.append(item)
        first[split] += len(rows)


def _check_item(item: Any, seen_ids: set[str]) -> None:
    """Rules every item meets, whatever its source: a unique id; a multiple-choice item has at least two
    options and no empty one. Duplicated options are well-formed: the builders copy such items unchanged."""
    if item.id in seen_ids:
        raise MalformedRow(item.id, "id", "duplicate id")
    if isinstance(item, MCQRecord):
        if len(item.choices) < 2:
            raise MalformedRow(item.id, "choices", f"{len(item.choices)} choices; at least 2 are needed")
        empty = [i for i, c in enumerate(item.choices) if not c.strip()]
        if empty:
            raise MalformedRow(item.id, f"choices[{empty[0]}]", "empty option")


def _check_loaded(loaded: LoadedSource, max_excluded: float) -> None:
    """Stop a load that lost most of its rows (another benchmark's layout?) or left a split empty."""
    rows = sum(loaded.rows_in.values())
    excluded = len(loaded.exclusions.entries)
    if rows and excluded > max_excluded * rows:
        reason, count = Counter((e.reason, e.field, e.detail) for e in loaded.exclusions.entries).most_common(1)[0]
        (why, where, detail) = reason
        raise SourceError(
            f"{excluded} of {rows} source rows ({excluded / rows:.0%}) would be excluded, most often for "
            f"{why} in field {where!r} ({count} rows, e.g. {detail!r}); is this the {loaded.benchmark.name} "
            f"layout? (--max-excluded {max_excluded} allows at most {max_excluded:.0%})")
    empty = [split for split, count in loaded.rows_in.items() if count == 0]
    if empty or not rows:
        subjects = f" of --subjects {' '.join(loaded.selection.subjects)}" if loaded.selection.subjects else ""
        raise SourceError(f"{loaded.source_description}: split {empty[0] if empty else 'any'!r} has no rows{subjects}")


def duplicate_option(choices: Sequence[str]) -> int | None:
    """The index of the first option whose text repeats an earlier one (whitespace-normalised), or None."""
    seen: set[str] = set()
    for index, choice in enumerate(choices):
        key = normalize_text(choice)
        if key in seen:
            return index
        seen.add(key)
    return None


def evaluation_split(splits: Mapping[str, Sized], fewshot_split: str | None = None) -> str:
    """The split a release's tasks score, the one rule of every builder: ``test``, else ``validation``, else the
    first split that is not the few-shot one, among the splits that hold items (in their order); the first split
    when none holds any."""
    names = [name for name, items in splits.items() if len(items)] or list(splits)
    preferred = next((name for name in ("test", "validation") if name in names), None)
    return preferred or next((name for name in names if name != fewshot_split), names[0])
