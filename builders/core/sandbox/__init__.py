"""Run untrusted Python (reference programs, predicted outputs) in an isolated process.

Each execution gets its own bubblewrap (``bwrap``) sandbox: no network, a read-only
root holding only /usr, the loader's libraries and the interpreter's prefix (so
``~/.cache/huggingface/token`` and the rest of /root or /home do not exist inside), a
private tmpfs /tmp capped in size and in inodes (files, links and extended attributes: kernel memory no
rlimit counts), new PID/IPC/UTS namespaces, an empty environment,
and limits on CPU time, memory, file size, open files and processes. The
parent enforces a wall-clock deadline and reads at most ``output_bytes`` of each
output stream.

When the caller is root, the sandbox drops to uid/gid 65534 (``setpriv``) and then
enters a fresh user namespace (``unshare --user``): root is exempt from
RLIMIT_NPROC, and the new namespace gives every sandbox its own process budget, so
a fork bomb in one worker cannot starve the others.

Memory is limited for the whole program, not per process: with a delegated cgroup v2 (``memory`` and
``pids`` enabled in ``cgroup.subtree_control`` of ``$MCQFORGE_CGROUP``, else of the caller's own cgroup)
every run gets its own ``memory.max`` and ``pids.max``; otherwise RLIMIT_NPROC times RLIMIT_AS (an equal
share each) adds up to the budget. SysV shared memory and message queues are capped in the sandbox's own
IPC namespace (``shmmax``/``shmall``/``shmmni``/``msgmni``, written by root before bwrap starts, since bwrap
mounts /proc/sys read-only). ``Sandbox.mechanism`` says which is in force; the log says it at start.

Verdicts come from a trusted launcher, the first process inside the sandbox (root when the caller is root,
so the program, as nobody, can neither signal nor trace it): it waits for the program and reports its wait
status, CPU time and peak memory on a pipe the program never holds. "timeout" needs the wall clock or the
CPU limit really reached; "memory" a MemoryError with the memory really used (or a cgroup OOM event). A
program that kills itself or prints a fake MemoryError reads as "killed" or "error".

The interpreter (``sys.prefix``, ``sys.base_prefix``, the real executable's prefix, libpython's folder, and
the symlinks from ``sys.executable`` to it) is mounted after the private /tmp, so a venv made under /tmp
works. :func:`run_isolated` runs untrusted expressions and reference programs each in a forked process of
its own, with results on private pipes, written out only by a trusted evaluator.

``unsafe=True`` runs the program as a plain subprocess of the current user with the same
rlimits, deadline and output cap but no namespaces (and, for root, no effective process
limit); only for machines where bubblewrap cannot run and the user accepted the risk.

The modules, one job each: :mod:`.limits` (what a run may use and what it gave), :mod:`.host` (bubblewrap and
the tools it needs), :mod:`.cgroup`, :mod:`.mounts` (the read-only root), :mod:`.process` (one run from the
outside: deadline, output cap, verdict), :mod:`.runner` (:class:`Sandbox`), :mod:`.isolated`
(:func:`run_isolated`); and :mod:`.programs`, the programs that run inside the sandbox (the launcher, the
evaluator, the call script).
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
