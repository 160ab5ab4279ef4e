"""The trusted evaluator of :func:`builders.core.sandbox.run_isolated`: the program of its sandbox runs.

It reads {"units": [{"program": str | None, "calls": [str, ...]}], "seconds", "max_chars", "budget",
"cpu_seconds", "settings"} on stdin (marshalled, in hex) and makes itself non-dumpable. Each unit runs in a unit of its own
(:mod:`unit`: its own user, mount, PID and IPC namespaces, /proc, /tmp and /dev/shm, session keyring and
rlimits), so it sees no process of another unit nor this one, and nothing another unit left. Its process C runs
the program (if any) and then each call in order in one namespace, with stdout and stderr on /dev/null, and
sends each value over a pipe of its own, marshalled (plain data only). Only this process writes to stdout: one
JSON line per call {"u", "i", "ok", "repr", "truncated", "error", "nonliteral"} (or {"u", "program_error"}),
then {"end": n} where n units were done (fewer when its time budget ran out). So no unit can write another's
result, replace the builtins another sees, or forge a line. A call's time is CPU time, so that a busy machine
changes no verdict: the call's own timer (ITIMER_PROF) stops it at its limit and its unit goes on; a call that
stops no timer (it ignores the signal, or spins in a child) is killed with its unit once the CPU time of all the
unit's processes passes the limit, and so is one that waits (sleeps, blocks) for IDLE times the limit of wall
time. The unit's remaining calls go on in a fresh one. Runs inside the sandbox: the standard library and its sibling :mod:`unit` only.
"""

import _signal as signal  # the signal module without its enums, which cost 4 ms at every start
import builtins
import ctypes
import marshal
import os
import resource
import select
import struct
import sys
import time
from _json import encode_basestring_ascii  # json's own string encoder: json.decoder's regexes cost 15 ms

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling; PYTHONSAFEPATH leaves it out
import unit as units  # noqa: E402

del sys.path[0]  # the untrusted code imports nothing from here

out = sys.stdout
LITERAL = (int, float, complex, str, bytes, bool, type(None), list, tuple, set, frozenset, dict)
MAX_FRAME = 1 << 24
# From the job (main): a call's CPU time, the longest repr kept, a unit's CPU time
SECONDS = 0.0
MAX_CHARS = 0
CPU_LIMIT = 0.0
IDLE = 3  # a call is stopped after IDLE times its limit of wall time: one that waits, or a machine 3 times busy
GRACE = 0.5  # seconds beyond a limit before the unit is killed: the call's own timer stops it first


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
    signal.signal(signal.SIGPROF, _alarm)
    namespace = {"__name__": "__program__", "__builtins__": builtins}
    if unit.get("program") is not None:
        try:
            signal.setitimer(signal.ITIMER_PROF, SECONDS)
            try:
                exec(compile(unit["program"], "<program>", "exec"), namespace)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
        except BaseException as error:
            _send(fd, b"p", _describe(error).encode("utf-8", "replace"))
            os._exit(0)
    for call in unit["calls"][start:]:
        try:
            signal.setitimer(signal.ITIMER_PROF, SECONDS)
            try:
                value = eval(compile(call, "<call>", "eval"), namespace)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
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


def _json(value):
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


def _emit(row):
    # one JSON object per line: its values are str, int, bool or None
    out.write("{%s}\n" % ", ".join("%s: %s" % (_json(key), _json(value)) for key, value in row.items()))
    out.flush()


def _reaped_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _Calls:
    """One life of a unit: its process C runs the program, then the calls from `start` on, in a unit of its own."""

    def __init__(self, unit, start, settings):
        self.read_fd, write_fd = os.pipe()
        self.cpu_before = _reaped_cpu()  # the last unit's processes are all reaped: none is alive
        self.unit = units.spawn(settings, [write_fd], lambda: _child(unit, start, write_fd))
        os.close(write_fd)
        self.checked = time.monotonic()
        self.begin(SECONDS)

    def begin(self, seconds):
        """A call (or the program's run) starts, which may use ``seconds`` of CPU time."""
        self.call_seconds = seconds
        self.call_cpu = None  # the unit's CPU time at the call's first reading (none for a call that ends before)
        self.deadline = time.monotonic() + IDLE * seconds + GRACE

    def over_cpu(self):
        # the CPU time of all the unit's processes, read at most every CPU_POLL seconds: over the unit's limit, or
        # over the call's since its first reading (at most CPU_POLL after it began)
        if time.monotonic() - self.checked < units.CPU_POLL:
            return False
        self.checked = time.monotonic()
        cpu = units.tree_cpu()
        if self.call_cpu is None:
            self.call_cpu = cpu
        return cpu - self.cpu_before >= CPU_LIMIT or cpu - self.call_cpu >= self.call_seconds + GRACE

    def read_exact(self, size):
        # a frame from C, unless the call overruns its wall or CPU time, or the unit its CPU time ("timeout"), or
        # C dies
        data = b""
        while len(data) < size:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0 or self.over_cpu():
                return None, "timeout"
            if not select.select([self.read_fd], [], [], min(remaining, units.CPU_POLL))[0]:
                continue
            chunk = os.read(self.read_fd, size - len(data))
            if not chunk:
                return None, "died"
            data += chunk
        return data, None

    def end(self, failure=None, deadline=0.0):
        """End the unit; what a failure was: "timeout", or how C died (it may take a moment to be reaped)."""
        if failure == "died":
            self.unit.read_status(deadline - time.monotonic())  # C has died: its init tells at once how
        # read before the end too: the processes the kernel kills with the unit's init are reaped unaccounted
        cpu = units.tree_cpu() - self.cpu_before if failure else 0.0
        status = self.unit.end()
        cpu = max(cpu, _reaped_cpu() - self.cpu_before)
        os.close(self.read_fd)
        if failure == "died" and status is not None and os.WIFSIGNALED(status):
            # RLIMIT_CPU's backstop after the limit was really used, or a signal of its own
            over = os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL) and cpu >= CPU_LIMIT
            return "timeout" if over else "killed by signal %d" % os.WTERMSIG(status)
        return failure


def _unit(u, unit, settings):
    calls, start = len(unit["calls"]), 0
    while start < calls:
        life = _Calls(unit, start, settings)
        if unit.get("program") is not None:
            life.begin(2 * SECONDS)  # the program runs again in every life: the first call's frame waits for it too
        index, ended = start, False
        while index < calls:
            header, failure = life.read_exact(5)
            if header is not None:
                kind, size = struct.unpack(">cI", header)
                payload, failure = life.read_exact(size) if size <= MAX_FRAME else (None, "died")
            if failure is not None:
                _emit({"u": u, "i": index, "ok": False, "error": life.end(failure, life.deadline)})
                index, ended = index + 1, True
                break
            if kind == b"p":
                _emit({"u": u, "program_error": payload.decode("utf-8", "replace")})
                index = calls
                break
            _emit(dict(_row(kind, payload), u=u, i=index))
            index += 1
            life.begin(SECONDS)
        if not ended:
            life.end()
        start = index


def main() -> None:
    global SECONDS, MAX_CHARS, CPU_LIMIT
    libc = ctypes.CDLL(None)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: each unit's init becomes this one's child
    job = marshal.loads(bytes.fromhex(sys.stdin.read()))  # from the host, which is trusted
    os.close(0)
    SECONDS, MAX_CHARS, budget, CPU_LIMIT = job["seconds"], job["max_chars"], job["budget"], job["cpu_seconds"]
    started = time.monotonic()
    done = 0
    for u, unit in enumerate(job["units"]):
        if done and time.monotonic() - started > budget:  # always one unit at least: every run makes progress
            break
        _unit(u, unit, job["settings"])
        done += 1
    _emit({"end": done})


if __name__ == "__main__":
    main()
