"""The release folder: Parquet per config and split, the dataset card, the build's configuration, the
validation report, the exclusions and the lm-eval tasks.

``datasets.load_dataset(DIR, "<config>")`` loads the folder, because the card's YAML ``configs:`` block
maps each config to its files. The same build gives byte-identical Parquet files.

A release is written whole or not at all: into a sibling staging folder first, flushed to disk, which then
takes the old folder's place in one atomic exchange. A build killed at any moment (a power loss included)
leaves the old release or the new one, never a mix, and the same command run again completes.

One writer at a time: a build holds an exclusive lock (``flock``) on ``.<name>.lock`` beside the folder from
its first check to its last write (a file opened without following links). A second build on the same folder stops with one line naming the
holder (or waits for it). Clean-up removes only staging folders whose writer is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import json
import logging
import os
import shutil
import stat
import sys
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path
from typing import Any, Callable

from builders.core.errors import UserError, ValidationFailed
from builders.core.items.record import BASE_COLUMNS, arrow_schema, features_json, release_features
from builders.core.build.result import Build
from builders.core.release.build_config import BUILD_CONFIG_FILE, build_config_text
from builders.core.release.diff import DIFF_FILE
from builders.core.release.review import review_files
from builders.core.release.card import ReleaseInfo, render_card
from builders.core.release.figure import FIGURE_FILE, summary_figure
from builders.core.runtime.progress import bar
from builders.core.tasks import inspect_tasks
from builders.core.tasks.lm_eval_tasks import MANIFEST
from builders.core.validation.validate import ValidationReport

logger = logging.getLogger(__name__)

REPORT_FILE = "validation_report.json"
EXCLUSIONS_FILE = "exclusions.jsonl"


def parquet_path(config: str, split: str) -> str:
    return f"{config}/{split}-00000-of-00001.parquet"


# ---- writing the folder atomically -------------------------------------------------------------------


def check_output_folder(out_dir: Path) -> None:
    """Refuse, before any work, an --output that is a file, a non-release folder, or cannot be created."""
    out_dir = Path(out_dir)
    with output_lock(out_dir):  # a writer's own clean-up runs only while no other writer can be at work
        recover_interrupted(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--output {out_dir} is a file, not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / BUILD_CONFIG_FILE).exists():
        raise UserError(f"--output {out_dir} is not empty and is not an mcqforge release folder; choose another")
    if out_dir.is_dir() and os.path.ismount(out_dir):
        raise UserError(f"--output {out_dir} is a mount point, which a new release cannot take the place of; "
                        "write it into a folder under it")
    parent = out_dir.resolve().parent
    try:
        probe = tempfile.mkdtemp(prefix=f".{out_dir.name}.probe-", dir=parent)
        os.rmdir(probe)
    except OSError as error:
        raise UserError(f"--output {out_dir}: cannot create a folder there ({error.strerror or error})") from None
    check_free_space(out_dir, parent)


MIN_FREE_BYTES = 4 * 2 ** 20  # a release of the embedded samples takes under 1 MiB


def check_free_space(out_dir: Path, parent: Path) -> None:
    """Room for the new release beside the previous one (the swap needs both at once), which a rebuild's
    previous release estimates; a full disk found only at the end of a build costs the whole build."""
    previous = sum(f.lstat().st_size for f in out_dir.rglob("*") if f.is_file()) if out_dir.is_dir() else 0
    free = shutil.disk_usage(parent).free
    if free < previous + MIN_FREE_BYTES:
        raise UserError(f"--output {out_dir}: {free / 2 ** 20:.1f} MiB free there; the new release needs "
                        f"about {(previous + MIN_FREE_BYTES) / 2 ** 20:.1f} MiB beside the previous one")


def write_release(build: Build, report: ValidationReport, out_dir: Path, release: ReleaseInfo | None = None, *,
                  announce: bool = True) -> Path:
    """Write the whole folder into a staging folder beside ``out_dir``, flush it to disk, then move it into place
    (``announce``: log where; not for a temporary folder that a push uploads and removes)."""
    release = release or ReleaseInfo()
    out_dir = Path(out_dir)
    check_not_empty(build)
    with output_lock(out_dir):
        check_output_folder(out_dir)
        write_folder_atomically(out_dir, lambda staging: _write_files(build, report, staging, release))
    if announce:
        logger.info("wrote release folder %s", out_dir)
    return out_dir


def check_not_empty(build: Build) -> None:
    """A config without splits or a split without rows cannot be loaded (``load_dataset`` refuses a Parquet file
    of 0 rows): such a release is refused before anything is written or pushed."""
    empty = [f"{config} (no splits)" for config, splits in build.configs.items() if not splits]
    empty += [f"{config}/{split}" for config, splits in build.configs.items()
              for split, records in splits.items() if not records]
    if not build.configs or empty:
        reasons = Counter(entry.reason for entry in build.exclusions.entries).most_common(3)
        why = f"; most common exclusions: {', '.join(f'{r} ({n})' for r, n in reasons)}" if reasons else ""
        what = f"{len(empty)} empty config(s) or split(s): {', '.join(empty[:5])}" if empty else "no configs"
        raise ValidationFailed(f"nothing to publish: {what}{why}; nothing was written")


# ---- one writer per release folder ----------------------------------------------------------------------

SYNC_THREADS = 16  # flushes to disk in flight at once
# Rows of a string column converted to Arrow at once: the Parquet writer's batch (1,024 rows). The writer also
# cuts a batch, and so a page and its dictionary fallback, at a chunk's end, so chunks of whole batches write the
# same bytes as one array; and a chunk of rare-symbol prompts (4 bytes a character in Python) stays about 14 MB
STRING_CHUNK_ROWS = 1024
_HELD: dict[Path, int] = {}  # lock files this process holds -> how many nested output_lock()s hold it
_HELD_GUARD = threading.Lock()


def lock_path(out_dir: Path) -> Path:
    out_dir = Path(out_dir).expanduser().resolve()
    return out_dir.parent / f".{out_dir.name}.lock"


@contextlib.contextmanager
def output_lock(out_dir: Path, wait: bool = False) -> Iterator[None]:
    """Hold the exclusive lock of the release folder ``out_dir`` (re-entrant within a process). Another
    process holding it: one line naming the folder and its pid, or, with ``wait``, wait until it is free."""
    path = lock_path(out_dir)
    with _HELD_GUARD:
        if path in _HELD:
            _HELD[path] += 1
            acquired = None
        else:
            acquired = _acquire(path, Path(out_dir), wait)
            _HELD[path] = 1
    try:
        yield
    finally:
        with _HELD_GUARD:
            _HELD[path] -= 1
            if not _HELD[path]:
                del _HELD[path]
                if acquired is not None:
                    _release(path, acquired)


def _acquire(path: Path, out_dir: Path, wait: bool) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"--output {out_dir}: cannot create a folder there ({error.strerror or error})") from None
    while True:
        fd = _open_lock_file(path, out_dir)
        if fd is None:
            continue  # removed by its holder as it let go, between our two attempts: create it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _lock_holder(fd)
            if not wait:
                os.close(fd)
                raise UserError(f"--output {out_dir} is being written by another build (pid {holder}); wait for "
                                "it to end or pass --wait-for-output") from None
            logger.warning("--output %s is being written by another build (pid %s): waiting for it", out_dir, holder)
            fcntl.flock(fd, fcntl.LOCK_EX)
        if _same_file(fd, path):  # else the holder removed the file as it let go: lock the new one
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd
        os.close(fd)


def _open_lock_file(path: Path, out_dir: Path) -> int | None:
    """The lock file, created when missing (``O_EXCL``), and never opened through a link (``O_NOFOLLOW``): a
    symbolic link, a hard link or anything but a plain file at its path is refused in one line, since writing
    the holder's pid would truncate the file it leads to. None when it vanished between two attempts."""
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # O_NONBLOCK: a FIFO there cannot hang us
    try:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UserError(f"--output {out_dir}: its lock file {path} is a symbolic link; remove it (a lock file "
                            "is never opened through a link)") from None
        raise UserError(f"--output {out_dir}: cannot create its lock file {path.name} "
                        f"({error.strerror or error})") from None
    held = os.fstat(fd)
    if not stat.S_ISREG(held.st_mode) or held.st_nlink != 1:
        os.close(fd)
        raise UserError(f"--output {out_dir}: its lock file {path} is not a plain file of its own (a hard link or "
                        "a special file); remove it")
    return fd


def _release(path: Path, fd: int) -> None:
    # Removed while still locked, so that a waiter that then gets the old file sees it is gone and retries.
    with contextlib.suppress(OSError):
        path.unlink()
    os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = path.lstat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _lock_holder(fd: int) -> str:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return text if text.isdigit() else "unknown"


# ---- who owns a staging folder ------------------------------------------------------------------------


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:12]
    except OSError:
        return "0"


def _start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), None when it does not exist; 0 without /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None if Path("/proc/self/stat").exists() else 0
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the name in parentheses may hold spaces


def owner_tag(pid: int | None = None) -> str:
    """A process (this one by default) as a staging folder's name records its writer: pid, start time, boot."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_ticks(pid) or 0}.{_boot_id()}"


def _owner_alive(tag: str) -> bool:
    """Whether the writer a staging folder's name records is still running (a pid reused by a later process,
    or one of an earlier boot, is not it). An unreadable tag (an older mcqforge's) has no live owner."""
    parts = tag.split(".")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit() or parts[2] != _boot_id():
        return False
    pid, started = int(parts[0]), int(parts[1])
    now = _start_ticks(pid)
    if now is None:
        return False
    if now and started:
        return now == started
    try:  # no /proc: only whether the pid exists
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---- writing the folder atomically -------------------------------------------------------------------


def _sync_tree(folder: Path) -> None:
    """Flush every file, then every folder (deepest first), to disk: the swap must not reach the disk before
    the content it makes visible. The flushes of one level run side by side: the file system commits them
    together (2,002 files in 91 folders: 12.1 s one after the other, 0.4 s side by side, on ext4)."""
    files: list[Path] = []
    folders = [folder]
    for root, dirs, names in os.walk(folder):
        files.extend(Path(root) / name for name in names)
        folders.extend(Path(root) / d for d in dirs)
    levels = [files] + [[f for f in folders if len(f.parts) == depth]
                        for depth in sorted({len(f.parts) for f in folders}, reverse=True)]
    with ThreadPoolExecutor(max_workers=SYNC_THREADS) as pool:
        for level in levels:
            flags = os.O_RDONLY if level is files else os.O_RDONLY | os.O_DIRECTORY
            list(pool.map(lambda path: _fsync(path, flags), level))  # noqa: B023 (used at once, in the loop)


def _fsync(path: Path, flags: int) -> None:
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_folder_atomically(out_dir: Path, fill: Callable[[Path], None]) -> None:
    """``fill(staging)`` writes a whole folder (creating it) beside ``out_dir``; it is flushed to disk and then
    takes ``out_dir``'s place in one atomic exchange: a failure, a kill or a power loss at any moment leaves the
    old folder or the new one. The staging folder's name records its writer (:func:`owner_tag`)."""
    staging = Path(out_dir).resolve().parent / f".{Path(out_dir).name}.incoming-{owner_tag()}-{uuid.uuid4().hex[:8]}"
    existed = Path(out_dir).exists()
    try:
        fill(staging)
        _sync_tree(staging)
        _move_into_place(staging, Path(out_dir).resolve())
    except OSError as error:  # a full disk, a quota, a folder taken away: the old folder is still in place
        kept = "the previous one is left as it was" if existed else "nothing was written"
        raise UserError(f"--output {out_dir}: writing failed ({_reason(error)}); {kept}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _reason(error: OSError) -> str:
    """An OSError in a few words: its system reason (pyarrow's carry theirs in the message only)."""
    if error.errno:
        return os.strerror(error.errno)
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


def _write_files(build: Build, report: ValidationReport, folder: Path, release: ReleaseInfo) -> None:
    folder.mkdir(parents=True)
    splits = list(build.records())
    sizes = {}  # (config, split) -> Arrow bytes, for the card's dataset_info
    for config, split, records in bar(splits, desc="write", unit="split", leave=False, disable=len(splits) < 4):
        sizes[config, split] = write_parquet(records, build.release.metadata_features.get(config, {}),
                                             folder / parquet_path(config, split), build.release.extra_columns.get(config))
    (folder / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=2, sort_keys=True, default=str) + "\n")
    build.exclusions.write_jsonl(folder / EXCLUSIONS_FILE)
    # the review queue and the card's picture: every release has both
    files = {**build.release.extra_files, **review_files(build), FIGURE_FILE: summary_figure(build, report)}
    if release.diff is not None:  # what changed since the repo's previous release
        files[DIFF_FILE] = (json.dumps(release.diff, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
    if build.release.lm_eval_tasks is not None:
        files.update(build.release.lm_eval_tasks(release.task_location))
        files.update(inspect_tasks.task_files(files[MANIFEST], release.task_location))  # inspect_ai, beside lm_eval
    for relative, content in sorted(files.items()):
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    card = render_card(build, report, release, sizes)
    config_text = build_config_text(build)
    for text, what in ((str(card), "the card"), (config_text, BUILD_CONFIG_FILE)):
        _refuse_local_paths(text, what)
    card.save(folder / "README.md")
    # Written last: a folder is a release only once this file is there.
    (folder / BUILD_CONFIG_FILE).write_text(config_text, encoding="utf-8")


def _move_into_place(staging: Path, out_dir: Path) -> None:
    if not out_dir.exists():
        os.rename(staging, out_dir)
    elif not _exchange(staging, out_dir):  # on success staging now holds the old release
        old = out_dir.parent / f".{out_dir.name}.previous-{uuid.uuid4().hex[:8]}"
        os.rename(out_dir, old)  # a kill between these two renames is mended by recover_interrupted
        try:
            os.rename(staging, out_dir)
        except OSError:
            os.rename(old, out_dir)
            raise
        shutil.rmtree(old, ignore_errors=True)
    _fsync(out_dir.parent, os.O_RDONLY | os.O_DIRECTORY)  # the swap itself, on disk


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def recover_interrupted(out_dir: Path) -> None:
    """Mend what a killed writer left beside ``out_dir``: put back a moved-aside release, drop the staging
    folders whose writer is gone (a running writer's is left alone). Call it holding :func:`output_lock`."""
    parent = out_dir.resolve().parent
    if not parent.is_dir():
        return
    previous = sorted(parent.glob(f".{out_dir.name}.previous-*"))
    if previous and not out_dir.exists():
        os.rename(previous[0], out_dir)
        previous = previous[1:]
    prefix = f".{out_dir.name}.incoming-"
    orphans = [p for p in parent.glob(f"{prefix}*") if not _owner_alive(p.name[len(prefix):].rpartition("-")[0])]
    for leftover in [*previous, *orphans]:
        shutil.rmtree(leftover, ignore_errors=True)


def _refuse_local_paths(text: str, what: str) -> None:
    """No path of this machine goes into a published file: the home, the working folder, the Python prefix."""
    places = {str(Path.home()), os.getcwd(), sys.prefix, tempfile.gettempdir()} - {"/", ""}
    found = sorted(p for p in places if f"{p}/" in text or text.endswith(p))
    if found:
        raise ValidationFailed(f"{what} would publish a local path ({found[0]}/...); nothing written")


def release_rows(records, features) -> list[dict[str, Any]]:
    """The records as the release's rows (no ``metadata`` column where the config has none)."""
    rows = [record.to_row() for record in records]
    if "metadata" not in features:
        for row in rows:
            row.pop("metadata")
    return rows


def _column(records, name: str, present: set[str]) -> list[Any]:
    """One column of the release's rows (:func:`release_rows`): a record's own ``columns`` before its base fields,
    and its ``metadata`` as it is; None where a record has no such column. ``present``: the names any record's
    ``columns`` holds (read once per table, not once per record and column)."""
    if name == "metadata":
        return [dict(r.metadata) for r in records]
    if name == "choices":
        if "choices" not in present:
            return [list(r.choices) for r in records]
        return [r.columns["choices"] if "choices" in r.columns else list(r.choices) for r in records]
    if name in BASE_COLUMNS:
        if name not in present:
            return list(map(attrgetter(name), records))
        return [r.columns[name] if name in r.columns else getattr(r, name) for r in records]
    return [r.columns.get(name) for r in records]


def _arrow_column(records, field, present: set[str]) -> Any:
    """One column as Arrow takes it: a string column (a perturbation's ``prompt``, rendered as it is read)
    converted :data:`STRING_CHUNK_ROWS` rows at a time, so that its Python strings are never all held, nor Arrow's
    builder grown by doubling over the whole column; any other column as the list :func:`_column` reads."""
    import pyarrow as pa

    if not pa.types.is_string(field.type) or len(records) <= STRING_CHUNK_ROWS:
        return _column(records, field.name, present)
    chunks = [pa.array(_column(records[start:start + STRING_CHUNK_ROWS], field.name, present), type=field.type)
              for start in range(0, len(records), STRING_CHUNK_ROWS)]
    if any(chunk.null_count for chunk in chunks):  # one validity bitmap, as one array has: the card's sizes stay
        return pa.concat_arrays(chunks)
    return pa.chunked_array(chunks, type=field.type)


def write_parquet(records, metadata_features, path: Path, column_features=None) -> int:
    """Arrow table with the explicit features in the schema metadata, as ``datasets`` writes it; returns the
    table's size in bytes."""
    features = release_features(metadata_features, column_features)
    schema = arrow_schema(features).with_metadata(
        {"huggingface": json.dumps({"info": {"features": features_json(features)}})}
    )
    import pyarrow as pa  # here, not at the top: a command line parses before any heavy library loads
    import pyarrow.parquet as pq

    # column by column, as Table.from_pylist(release_rows(records, features)) takes them: the same arrays
    present: set[str] = set()
    for record in records:
        present.update(record.columns)
    # The table is converted and compressed with the C library's allocator, which hands a freed buffer back at once;
    # mimalloc, Arrow's default, held about twice the table (a chunk's buffers, the compressor's) while it wrote:
    # 65 MiB more of a perturbation release's peak
    default_pool = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        table = pa.Table.from_arrays([_arrow_column(records, field, present) for field in schema], schema=schema)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path, compression="zstd")
        size = table.nbytes
        del table
        # what the allocator keeps of the freed table, handed back (malloc_trim): a release's peak is its largest
        # table, not the sum of what every table's conversion and compression once held
        pa.system_memory_pool().release_unused()
        default_pool.release_unused()  # and what reading the sources left in the default one
    finally:
        pa.set_memory_pool(default_pool)
    return size


