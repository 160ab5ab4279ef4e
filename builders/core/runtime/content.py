"""A content hash of a local file or folder: what stands in for a Hub commit sha (sources, models, predictions)."""

from __future__ import annotations

import hashlib
from pathlib import Path


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


def named_content_revision(name: str, data: bytes) -> str:
    """The :func:`content_revision` of a file named ``name`` that holds ``data`` (a copy a release carries under
    its own name, recorded before it is written)."""
    return "sha256:" + hashlib.sha256(name.encode() + hashlib.sha256(data).digest()).hexdigest()


def _file_sha256(file: Path) -> bytes:
    """The file's sha256, read in chunks (hashlib.file_digest is Python 3.11+; the project runs on 3.10)."""
    file_hash = hashlib.sha256()
    with open(file, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            file_hash.update(chunk)
    return file_hash.digest()
