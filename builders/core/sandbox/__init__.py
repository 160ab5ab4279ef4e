"""Run untrusted Python (reference programs, predicted outputs) in an isolated process.

Each execution gets its own bubblewrap (``bwrap``) sandbox, run unprivileged whoever calls it (root runs it as
uid/gid 65534, so that root and ordinary users get one sandbox, and the same tests hold for both): no network,
a read-only root holding only /usr, the loader's libraries and the interpreter's prefix (so
``~/.cache/huggingface/token`` and the rest of /root or /home do not exist inside), a read-only /dev, an empty
environment, and limits on CPU time, memory, file size, open files and processes. The parent enforces a
wall-clock deadline and reads at most ``output_bytes`` of each output stream.

The first process inside is the trusted launcher (``--as-pid-1``, non-dumpable). It runs the program in a
*unit* of its own (:mod:`.programs.unit`): user, mount, PID and IPC namespaces of its own, a /proc that shows the
unit alone, one tmpfs bounded in bytes and inodes as /tmp and /dev/shm, SysV IPC capped in its IPC namespace,
no further user namespace, a fresh session keyring, no capability. So the program sees no trusted process but
its unit's init, which it can neither trace, read nor signal, and nothing a run before it left. The launcher
kills the unit when the CPU time of all its processes, children included, reaches the limit, and reports the
wait status, CPU time and peak memory on a pipe the program never holds. "timeout" needs the wall clock or the
CPU limit really reached; "memory" a MemoryError with the memory really used (or a cgroup OOM event). A program
that kills itself or prints a fake MemoryError reads as "killed" or "error".

:func:`run_isolated` runs untrusted expressions and reference programs in a trusted evaluator, which gives each
program a unit of its own in turn: units share nothing, and only the evaluator writes results. Its calls are
timed in CPU time, so that a busy machine changes no call's verdict; wall time stops only a call that waits.

Memory is limited for the whole program, not per process: with a delegated cgroup v2 (``memory`` and
``pids`` enabled in ``cgroup.subtree_control`` of ``$MCQFORGE_CGROUP``, else of the caller's own cgroup)
every run gets its own ``memory.max`` and ``pids.max``; otherwise RLIMIT_NPROC times RLIMIT_AS (an equal
share each), SysV shared memory and the tmpfs add up to the budget. ``Sandbox.mechanism`` says which is in
force (for a card); ``Sandbox.summary`` is the one log line.

``unsafe=True`` runs the program as a plain subprocess of the current user with the same rlimits, deadline and
output cap but no namespaces (and, for root, no effective process limit); only for machines where bubblewrap
cannot run and the user accepted the risk.

The modules, one job each: :mod:`.limits` (what a run may use and what it gave), :mod:`.host` (bubblewrap and
the tools it needs), :mod:`.cgroup`, :mod:`.mounts` (the read-only root), :mod:`.process` (one run from the
outside: deadline, output cap, verdict), :mod:`.runner` (:class:`Sandbox`), :mod:`.isolated`
(:func:`run_isolated`); and :mod:`.programs`, the programs that run inside the sandbox (the launcher, the units,
the evaluator, the call script).
"""

from builders.core.sandbox.cgroup import _find_cgroup
from builders.core.sandbox.host import INSTALL_HINT, SandboxUnavailable, find_bwrap
from builders.core.sandbox.isolated import Unit, json_rows, run_isolated
from builders.core.sandbox.limits import (
    KiB,
    Limits,
    MiB,
    RunResult,
    Status,
    cpu_backstop,
    process_bytes,
    scratch_cap,
    shm_cap,
)
from builders.core.sandbox.runner import Sandbox

__all__ = [
    "INSTALL_HINT", "KiB", "Limits", "MiB", "RunResult", "Sandbox", "SandboxUnavailable", "Status", "Unit",
    "_find_cgroup", "cpu_backstop", "find_bwrap", "json_rows", "process_bytes", "run_isolated", "scratch_cap",
    "shm_cap",
]
