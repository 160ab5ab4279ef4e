"""The trusted evaluator of :func:`builders.core.sandbox.run_isolated`: the program of its sandbox runs.

It reads {"units": [{"program": str | None, "calls": [str, ...]}], "seconds", "max_chars", "budget",
"cpu_seconds", "scratch"} on stdin and makes itself non-dumpable (so no process of the same user can trace it or
open its file descriptors). For each unit it forks a child that runs the untrusted code: the child's stdout and
stderr go to /dev/null, it runs the program (if any) and then each call in order in one namespace, and sends
each value over a pipe of its own, marshalled (plain data only). Only this process writes to stdout: one JSON
line per call {"u", "i", "ok", "repr", "truncated", "error", "nonliteral"} (or {"u", "program_error"}), then
{"end": n} where n units were done (fewer when its time budget ran out). So no unit can write another's result,
replace the builtins another sees, or forge a line. After each unit every process it left is killed (the
evaluator is their subreaper), /tmp is emptied and SysV IPC objects are removed: every unit starts with a fresh
scratch space, so no file of one unit can change another's value. A call that overruns its time is killed with
its child; the unit's remaining calls go on in a fresh child. Runs inside the sandbox: the standard library and
its sibling :mod:`cpu_clock` only.
"""

import builtins
import ctypes
import json
import marshal
import os
import select
import signal
import stat
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling; PYTHONSAFEPATH leaves it out
from cpu_clock import CPU_POLL, cpu_over  # noqa: E402

del sys.path[0]  # the untrusted code imports nothing from here

libc = ctypes.CDLL(None, use_errno=True)
out = sys.stdout
LITERAL = (int, float, complex, str, bytes, bool, type(None), list, tuple, set, frozenset, dict)
MAX_FRAME = 1 << 24
# From the job (main): a call's wall time, the longest repr kept, a call's CPU time
SECONDS = 0.0
MAX_CHARS = 0
CPU_LIMIT = 0.0
# the sandbox's private /tmp, emptied after each unit; only when it is one (a tmpfs of its own, not the host's)
SCRATCH = False
SCRATCH_DEVICE = 0


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
        if remaining <= 0 or cpu_over(pid, CPU_LIMIT):
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


def main() -> None:
    global SECONDS, MAX_CHARS, CPU_LIMIT, SCRATCH, SCRATCH_DEVICE
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: a unit's orphaned processes become this one's children
    job = json.loads(sys.stdin.read())
    os.close(0)
    SECONDS, MAX_CHARS, budget, CPU_LIMIT = job["seconds"], job["max_chars"], job["budget"], job["cpu_seconds"]
    SCRATCH = job["scratch"] and os.statvfs("/tmp").f_files == job["scratch"]
    SCRATCH_DEVICE = os.lstat("/tmp").st_dev
    started = time.monotonic()
    done = 0
    for u, unit in enumerate(job["units"]):
        if done and time.monotonic() - started > budget:  # always one unit at least: every run makes progress
            break
        _unit(u, unit)
        _fresh_scratch()  # the next unit sees none of this one's files or processes
        done += 1
    _emit({"end": done})


if __name__ == "__main__":
    main()
