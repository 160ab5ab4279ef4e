"""Where mcqforge's on-disk caches live (LLM replies, embeddings, models fetched for a build).

Every default cache folder is under ``~/.cache/mcqforge``; ``$MCQFORGE_CACHE`` moves that root (the tests point it
at a temporary folder, so that they leave nothing in the user's home). A folder given explicitly is used as is.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Callable

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
