"""What a sandboxed run may use (:class:`Limits`), what it gave (:class:`RunResult`), how the memory budget is
shared out among processes, SysV shared memory and the private /tmp, and what each unit is given."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

MiB = 1 << 20
KiB = 1 << 10
NOBODY = 65534
Status = Literal["ok", "error", "timeout", "memory", "output_limit", "killed"]


@dataclass(frozen=True)
class Limits:
    """Resource limits for one execution."""

    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_bytes: int = 512 * MiB  # of the whole program: all its processes and shared memory
    file_bytes: int = 1 * MiB  # largest file the program may write (RLIMIT_FSIZE)
    processes: int = 4  # processes and threads of the program (RLIMIT_NPROC, pids.max)
    output_bytes: int = 64 * KiB  # kept from stdout and from stderr each
    tmp_bytes: int = 16 * MiB  # size of the private /tmp, which is also /dev/shm
    tmp_inodes: int = 64  # files, folders, links and (as inode space) extended attributes in /tmp
    open_files: int = 64

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {value!r}")


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class RunResult:
    """Outcome of one execution.

    ``returncode`` is the exit code, or minus the signal number when the program was
    killed by a signal. It is None when the parent killed the run (timeout, output_limit).
    ``cpu_seconds`` and ``max_rss_bytes`` are the program's, as the trusted launcher measured
    them (None when no report came).
    """

    status: Status
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    cpu_seconds: float | None = None
    max_rss_bytes: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def cpu_backstop(limits: Limits) -> int:
    """RLIMIT_CPU's soft limit: far enough beyond the limit the launcher enforces that it never fires first."""
    return 2 * limits.cpu_seconds + 1


MIN_PROCESS_BYTES = 48 * MiB  # Python with the standard library needs about this much address space


PAGE = os.sysconf("SC_PAGE_SIZE")
SYSV_IDS = 16  # SysV shared memory segments, and message queues, a unit may hold at once


def shm_cap(limits: Limits) -> int:
    """Bytes of SysV shared memory a sandbox may hold in all."""
    return min(64 * MiB, limits.memory_bytes // 8)


# Kernel memory an inode of the scratch tmpfs may hold besides its data: the inode and its dentry (about
# 1 KiB), a long symlink target or name, and two POSIX ACLs (up to 64 KiB each, outside the inode space).
INODE_OVERHEAD = 132 * KiB


def scratch_cap(limits: Limits) -> int:
    """Bytes the private /tmp may take in all: its data and the kernel memory of its inodes."""
    return limits.tmp_bytes + limits.tmp_inodes * INODE_OVERHEAD


def process_bytes(limits: Limits, cgroup: bool) -> int:
    """RLIMIT_AS of each process: the whole budget under a cgroup (which limits the sum and charges the
    scratch tmpfs to it), else an equal share, so that processes x share + shared memory + scratch space
    <= the budget."""
    if cgroup:
        return limits.memory_bytes
    return (limits.memory_bytes - shm_cap(limits) - scratch_cap(limits)) // limits.processes


def unit_settings(limits: Limits, cgroup: bool, isolate: bool, processes: int, under_tmp: Sequence[str] = ()) -> dict:
    """What the launcher and the evaluator give each unit they start (``programs/unit.py``, as JSON): its rlimits,
    its /tmp (also its /dev/shm: one budget), the SysV IPC limits of its IPC namespace, and one user namespace
    more than its own (the program's: none of its own). `processes` is its RLIMIT_NPROC;
    `under_tmp` are the interpreter's folders under /tmp, which each unit binds again on its own /tmp."""
    shm = shm_cap(limits)
    backstop = cpu_backstop(limits)
    return {
        "isolate": isolate,
        "cpu_seconds": limits.cpu_seconds,
        "rlimits": {"as": process_bytes(limits, cgroup), "fsize": limits.file_bytes, "nofile": limits.open_files,
                    "nproc": processes, "core": 0, "cpu": [backstop, backstop + 1]},
        "tmpfs": f"size={limits.tmp_bytes},nr_inodes={limits.tmp_inodes},mode=1777",
        "under_tmp": list(under_tmp),
        "sysctl": {"kernel/shmmax": shm, "kernel/shmall": max(1, shm // PAGE), "kernel/shmmni": SYSV_IDS,
                   "kernel/msgmni": SYSV_IDS, "user/max_user_namespaces": 1},
    }
