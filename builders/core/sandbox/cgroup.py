"""A delegated cgroup v2 in which every run gets its own ``memory.max`` and ``pids.max``."""

from __future__ import annotations

import logging
import os
import threading
import time
from functools import lru_cache
from pathlib import Path

from builders.core.sandbox.limits import Limits

logger = logging.getLogger(__name__)

class _Cgroup:
    """A delegated cgroup v2 folder in which each run gets a child with memory.max and pids.max."""

    counter = 0

    def __init__(self, path: Path):
        self.path = path

    def child(self, limits: Limits, trusted: int) -> Path:
        _Cgroup.counter += 1
        child = self.path / f"mcqforge-{os.getpid()}-{threading.get_ident()}-{_Cgroup.counter}"
        child.mkdir()
        (child / "memory.max").write_text(str(limits.memory_bytes))
        if (child / "memory.swap.max").exists():
            (child / "memory.swap.max").write_text("0")
        # the sandbox's trusted processes hold `trusted` slots besides the program's
        (child / "pids.max").write_text(str(limits.processes + trusted))
        return child

    @staticmethod
    def events(child: Path) -> int:
        try:
            fields = dict(line.split() for line in (child / "memory.events").read_text().splitlines())
        except (OSError, ValueError):
            return 0
        return int(fields.get("oom_kill", 0)) + int(fields.get("max", 0))

    @staticmethod
    def remove(child: Path) -> None:
        kill = child / "cgroup.kill"
        for _ in range(50):
            try:
                if kill.exists():
                    kill.write_text("1")
                child.rmdir()
                return
            except OSError:
                time.sleep(0.01)
        logger.warning("could not remove cgroup %s", child)


@lru_cache(maxsize=1)
def _find_cgroup() -> tuple[_Cgroup | None, str]:
    """A cgroup v2 folder where sandboxes can get memory.max and pids.max, or None and why not."""
    try:
        line = next(l for l in Path("/proc/self/cgroup").read_text().splitlines() if l.startswith("0::"))
        mount = next(l.split()[4] for l in Path("/proc/self/mountinfo").read_text().splitlines()
                     if " - cgroup2 " in l)
    except (OSError, StopIteration, IndexError):
        return None, "no cgroup v2 hierarchy"
    configured = os.environ.get("MCQFORGE_CGROUP")
    path = Path(configured) if configured else Path(mount) / line[3:].lstrip("/")
    try:
        enabled = set((path / "cgroup.subtree_control").read_text().split())
    except OSError as error:
        return None, f"cgroup {path} unreadable ({error.strerror})"
    if not {"memory", "pids"} <= enabled:
        return None, f"cgroup {path} does not delegate the memory and pids controllers"
    probe = path / f"mcqforge-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError as error:
        return None, f"cannot create cgroups in {path} ({error.strerror})"
    return _Cgroup(path), f"cgroup v2 under {path}"
