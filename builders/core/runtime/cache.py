"""Where mcqforge's on-disk caches live (LLM replies, embeddings, models fetched for a build).

Every default cache folder is under ``~/.cache/mcqforge``; ``$MCQFORGE_CACHE`` moves that root (the tests point it
at a temporary folder, so that they leave nothing in the user's home). A folder given explicitly is used as is.

What a build computes purely from its inputs and is costly (the choices-only model's figures, math-verify's
verdicts, the card's picture) is kept under the root by a key: a hash of everything the value is a function of,
:func:`code_version` of the code and libraries that compute it among them (:func:`read_kept`, :func:`keep`).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable

from builders.core.errors import UserError

DEFAULT_ROOT = "~/.cache/mcqforge"


def cache_root() -> Path:
    return Path(os.environ.get("MCQFORGE_CACHE") or DEFAULT_ROOT).expanduser()


def cache_folder(text: str | Path | None) -> Path | None:
    """A --cache-dir value as a folder: 'none' (or None) is no cache; a default under ``~/.cache/mcqforge``
    follows ``$MCQFORGE_CACHE``."""
    if text is None or str(text).lower() == "none":
        return None
    text = str(text)
    if text == DEFAULT_ROOT or text.startswith(DEFAULT_ROOT + "/"):
        return cache_root() / text[len(DEFAULT_ROOT):].lstrip("/")
    return Path(text).expanduser()


def check_cache_folder(text: str | Path | None, flag: str = "--cache-dir") -> None:
    """A cache folder a build will write into, checked before any work: a folder (or one that can be made) that
    this user can write, on a file system that is not read-only."""
    folder = cache_folder(text)
    if folder is None:
        return
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"{flag} {text}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):  # also false on a read-only file system, for root too
        raise UserError(f"{flag} {text}: {existing} is not writable")


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """``write`` the file at ``path`` whole or not at all: into a temporary file beside it, then renamed into place,
    so that a process killed mid-write leaves the old state or the whole file, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            write(file)
        os.replace(staging, path)
    except BaseException:
        Path(staging).unlink(missing_ok=True)
        raise


_BUILDERS = Path(__file__).resolve().parents[2]  # the builders package


def code_version(modules: Iterable[str], libraries: Iterable[str]) -> str:
    """A hash of the ``modules`` (paths under the builders package) and the versions of the ``libraries``."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(module.encode() + b"\0" + (_BUILDERS / module).read_bytes() + b"\0")
    for library in libraries:
        digest.update(f"{library}=={metadata.version(library)}\0".encode())
    return digest.hexdigest()


def key_of(described: object) -> str:
    """The hex SHA-256 of ``described`` (everything a kept value is a function of) as JSON."""
    return hashlib.sha256(json.dumps(described, ensure_ascii=False).encode("utf-8")).hexdigest()


def _kept_path(folder: str, key: str) -> Path:
    return cache_root() / folder / key[:2] / key


def read_kept(folder: str, key: str) -> bytes | None:
    """The bytes kept under ``key`` in the cache's ``folder``, or None: none kept, unreadable, or damaged (a file
    opens with the digest of the bytes it keeps, so that a changed byte is found)."""
    try:
        kept = _kept_path(folder, key).read_bytes()
    except OSError:
        return None
    digest, data = kept[:32], kept[32:]
    return data if hashlib.sha256(data).digest() == digest else None


def keep(folder: str, key: str, data: bytes) -> None:
    """Keep ``data`` under ``key``, whole or not at all; a cache that cannot be written is as none (the build is the
    same either way)."""
    try:
        write_atomically(_kept_path(folder, key), lambda file: file.write(hashlib.sha256(data).digest() + data))
    except OSError:
        pass


def read_kept_json(folder: str, key: str, object_hook: Callable[[dict], Any] | None = None) -> Any:
    """:func:`read_kept` of a value kept by :func:`keep_json`, or None (none kept, damaged, or not JSON)."""
    kept = read_kept(folder, key)
    try:
        return None if kept is None else json.loads(kept, object_hook=object_hook)
    except ValueError:
        return None


def keep_json(folder: str, key: str, value: Any, default: Callable[[Any], Any] | None = None) -> None:
    """:func:`keep` of ``value`` as JSON (``default``: json.dumps's, for what JSON lacks)."""
    keep(folder, key, json.dumps(value, ensure_ascii=False, default=default).encode("utf-8"))
