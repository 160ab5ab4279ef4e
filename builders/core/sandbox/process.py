"""One sandbox process from the outside: its files in memory, the launcher's report pipe, the wall-clock
deadline and output cap while it runs, and the verdict from what the parent and the trusted launcher saw."""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Literal

from builders.core.sandbox.limits import KiB, Limits, Status

READ_CHUNK = 64 * KiB


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
