"""The sandbox's read-only root: /usr, the loader's folders and the interpreter's prefixes, wherever they live
(a venv under /tmp included), never a folder that holds the home directory or other users' files."""

from __future__ import annotations

import os
import stat
import sys
import sysconfig
import tempfile
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

from builders.core.sandbox.host import SandboxUnavailable

# Loader paths that Python needs besides /usr; symlinks (merged /usr) are recreated.
ROOT_LIB_DIRS = ("/bin", "/lib", "/lib32", "/lib64", "/libx32")
# Not secret, and lets the dynamic loader skip a directory search at every start.
ETC_FILES = ("/etc/ld.so.cache",)
# Folders that hold other users' or the system's files: never mounted whole as an interpreter prefix.
SHARED_FOLDERS = frozenset({"/", "/tmp", "/var/tmp", "/dev/shm", "/home", "/root", "/etc", "/var", "/run",
                            "/proc", "/sys", "/dev", "/mnt", "/media", "/srv"})


def _is_within(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _interpreter_paths() -> tuple[list[str], list[tuple[str, str]]]:
    """Folders to mount read-only for the interpreter (its prefix, a venv's prefix, the real executable's
    prefix, libpython's folder), outside /usr, wherever they live, /tmp included; and the symlinks
    (target, path) from ``sys.executable`` to the real executable that lie outside those folders.

    Raises SandboxUnavailable if a folder would expose the home directory or all of /tmp."""
    executable = os.path.abspath(sys.executable)
    real = os.path.realpath(executable)
    candidates = [sys.base_prefix, sys.prefix, str(Path(real).parents[1])]
    libdir = sysconfig.get_config_var("LIBDIR")
    if libdir and sysconfig.get_config_var("Py_ENABLE_SHARED"):
        candidates.append(libdir)
    dirs: list[str] = []
    for candidate in sorted(map(os.path.realpath, candidates), key=len):
        if not _is_within(candidate, ["/usr", *dirs]):
            dirs.append(candidate)
    home = os.path.realpath(os.path.expanduser("~"))
    for path in dirs:
        if _is_within(home, [path]):
            raise SandboxUnavailable(
                f"Python lives in {path}, which contains the home directory {home}; "
                "mounting it would expose credentials such as ~/.cache/huggingface/token. "
                "Use an interpreter installed outside the home directory (e.g. in a venv)."
            )
        if path in SHARED_FOLDERS:
            raise SandboxUnavailable(
                f"Python's prefix is {path}; mounting it would expose the whole folder to untrusted code. "
                "Install the interpreter or the venv in a folder of its own (e.g. /tmp/venv)."
            )
    links: list[tuple[str, str]] = []
    path, seen = executable, set()
    while os.path.islink(path) and path not in seen:
        seen.add(path)
        target = os.readlink(path)
        if not _is_within(path, ["/usr", *ROOT_LIB_DIRS, *dirs]):
            links.append((target, path))
        path = os.path.normpath(os.path.join(os.path.dirname(path), target))
    return dirs, links


def _interpreter_dirs() -> list[str]:
    return _interpreter_paths()[0]


def _parents_args(path: str) -> list[str]:
    # bwrap would create the missing parents (e.g. /root) with mode 0700, which the
    # unprivileged sandbox user could not traverse.
    args: list[str] = []
    for parent in reversed(Path(path).parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    return args


@lru_cache(maxsize=1)
def _root_mounts() -> tuple[str, ...]:
    """bwrap arguments for the read-only system part of the sandbox root."""
    args = ["--ro-bind", "/usr", "/usr"]
    for path in ROOT_LIB_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_FILES:
        if os.path.isfile(path):
            args += ["--ro-bind", path, path]
    return tuple(args)


def _crossable_by_anyone(path: str) -> bool:
    """Whether every folder above `path` lets any user through (mode o+x)."""
    return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in Path(path).parents)


def _staged_for(dirs: Sequence[str]) -> dict[str, str]:
    """For root, who runs bubblewrap as nobody: an empty folder nobody can reach for each interpreter folder that
    nobody cannot (one under /root, say), on which the run binds it in a private mount namespace first."""
    staged = {}
    for path in dirs:
        if not _crossable_by_anyone(path):
            folder = tempfile.mkdtemp(prefix="mcqforge-python-")
            os.chmod(folder, 0o755)
            staged[path] = folder
    return staged


def _interpreter_mounts(staged: Mapping[str, str]) -> tuple[str, ...]:
    """bwrap arguments that make the interpreter visible (from its staged folder, where it has one); they come
    after the /tmp folder, so that a Python living under /tmp (a venv made there) is mounted inside it."""
    dirs, links = _interpreter_paths()
    args: list[str] = []
    for path in dirs:
        args += [*_parents_args(path), "--ro-bind", staged.get(path, path), path]
    for target, path in links:
        args += [*_parents_args(path), "--symlink", target, path]
    return tuple(args)
