"""Fresh units: the namespaces, scratch space and limits in which untrusted code runs inside the sandbox, and the
CPU time of a whole process tree. Imported by the launcher (one unit: the program) and the evaluator (one unit
per isolated program, and a fresh one after a call that overran). Runs inside the sandbox: the standard library
only.

:func:`spawn` starts a unit in two steps:

* B is cloned straight into new user, mount, PID and IPC namespaces: pid 1 of its PID namespace, the unit's
  init, and uid 0 of its user namespace, where 0 is the caller's own uid (so that it may mount there and set the
  IPC limits of the namespaces it owns). It mounts a /proc that shows the unit alone, one tmpfs bounded in bytes
  and inodes as both /tmp and /dev/shm, caps SysV IPC in the unit's IPC namespace, allows one user namespace
  more (C's), makes /proc/sys read-only (the IPC sysctls check the caller's uid, which C has too, not a
  capability), and forks C. When C ends, B writes C's wait status on the status pipe and exits; the kernel then
  kills whatever the unit left in its PID namespace, and its /tmp, SysV objects and POSIX message queues go
  with its namespaces.
* C enters a user namespace of its own where it has the caller's uid again, drops every capability, joins a
  fresh session keyring (it would share the caller's otherwise), keeps only the file descriptors it is given,
  takes the rlimits and runs the untrusted code.

So nothing a unit does reaches the next one, and nothing in it sees a trusted process but B, which it can
neither trace nor read (B is not dumpable) nor signal (the init of a PID namespace gets no signal from inside it
for which it has no handler, SIGSTOP and SIGKILL included). Without isolation (the unsafe mode) only C's
keyring, rlimits and closed descriptors remain, and B kills what the unit left.
"""

import _signal as signal  # the signal module without its enums, which cost 4 ms at every start
import ctypes
import os
import resource
import select
import time

libc = ctypes.CDLL(None, use_errno=True)
# Looked up once here, not in every unit's processes (a lookup costs a unit more than the call).
syscall, prctl, unshare, mount, capset = libc.syscall, libc.prctl, libc.unshare, libc.mount, libc.capset
syscall.restype = ctypes.c_long
mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x08000000, 0x10000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18)
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 4, 38, 36
KEYCTL_JOIN_SESSION_KEYRING = 1
# keyctl(2) has no libc wrapper: its number on each architecture Linux runs Python on.
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "loongarch64": 219, "ppc64le": 271, "ppc64": 271,
              "s390x": 280, "armv7l": 311, "armv8l": 311, "i686": 288, "i386": 288}
# clone(2), on the architectures where its first argument is the flags (s390x has the stack first).
SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "loongarch64": 220, "ppc64le": 120, "ppc64": 120,
             "armv7l": 120, "armv8l": 120, "i686": 120, "i386": 120}.get(os.uname().machine)
RLIMITS = {"as": resource.RLIMIT_AS, "fsize": resource.RLIMIT_FSIZE, "nofile": resource.RLIMIT_NOFILE,
           "nproc": resource.RLIMIT_NPROC, "core": resource.RLIMIT_CORE, "cpu": resource.RLIMIT_CPU}
TICK = os.sysconf("SC_CLK_TCK")
CPU_POLL = 0.02  # seconds between two readings of a watched process's CPU time


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_NO_CAPABILITIES = (_CapHeader(0x20080522, 0), (_CapData * 2)())  # _LINUX_CAPABILITY_VERSION_3, all zero


def _check(result, what):
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, "%s: %s" % (what, os.strerror(error)))


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _mount(source, target, fstype, flags, data=None):
    encode = (lambda s: s.encode() if s is not None else None)
    _check(mount(encode(source), encode(target), encode(fstype), flags, encode(data)), "mount " + target)


def _clone(namespaces):
    """fork into new `namespaces` at once: clone(2) as fork(2) does it, with no stack of its own (the child
    goes on on a copy of this one). Its child is pid 1 of a new PID namespace without a process in between.
    Python's own work around fork is not needed here: the caller has one thread, and the child runs only this
    module's code, then forks (with os.fork) or exits."""
    if not namespaces:
        return os.fork()
    if SYS_CLONE is None:
        raise OSError("no clone(2) number known for %s" % os.uname().machine)
    result = syscall(SYS_CLONE, namespaces | 17, None, None, None, 0)  # 17: SIGCHLD to the parent at the end
    return result if result >= 0 else -ctypes.get_errno()


def _enter_user_namespace(inside, outside_uid, outside_gid):
    """unshare a user namespace in which the uid and gid `inside` are this process's own."""
    _check(unshare(CLONE_NEWUSER), "unshare")
    _map_ids(inside, outside_uid, outside_gid)


def _map_ids(inside, outside_uid, outside_gid):
    """/proc/self/*_map belong to root while the process is not dumpable: it is, for these writes, when no
    untrusted process exists yet."""
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", "%d %d 1" % (inside[0], outside_uid))
    _write("/proc/self/gid_map", "%d %d 1" % (inside[1], outside_gid))


def _drop_privileges():
    # No capability left, and none to gain: with no_new_privs, exec honours neither setuid bits nor file
    # capabilities, and C's uid is not 0 in its namespace.
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    header, data = _NO_CAPABILITIES
    _check(capset(ctypes.byref(header), data), "capset")


def join_fresh_session_keyring():
    """A new, empty session keyring: a process inherits its parent's, the caller's login keyring included."""
    number = SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        raise OSError("no keyctl(2) number known for %s" % os.uname().machine)
    _check(syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None), "keyctl join")


def _keep_only(fds):
    start = 3
    for fd in sorted(fd for fd in fds if fd >= 3):
        os.closerange(start, fd)
        start = fd + 1
    os.closerange(start, 1 << 20)


def _set_rlimits(rlimits):
    for name, value in rlimits.items():
        soft, hard = value if isinstance(value, list) else (value, value)
        resource.setrlimit(RLIMITS[name], (soft, hard))


def _mount_scratch(settings):
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # the interpreter's folders under /tmp (a venv made there), kept through the tmpfs that hides them
    kept = [(os.open(path, os.O_PATH), path) for path in settings["under_tmp"]]
    _mount("scratch", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, settings["tmpfs"])
    for fd, path in kept:
        os.makedirs(path, 0o755, exist_ok=True)
        _mount("/proc/self/fd/%d" % fd, path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    _mount("/tmp", "/dev/shm", None, MS_BIND)  # one budget for both
    for name, value in settings["sysctl"].items():
        _write("/proc/sys/" + name, str(value))
    _mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)
    _mount(None, "/proc/sys", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _untrusted(settings, ids, keep, body):
    """C: from here on the process runs untrusted code."""
    if settings["isolate"]:
        _enter_user_namespace(ids, 0, 0)
        os.chdir("/tmp")  # the unit's own, mounted over the folder the sandbox started in
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any Python process
    _drop_privileges()
    join_fresh_session_keyring()
    _keep_only(keep)
    _set_rlimits(settings["rlimits"])
    body()


def _init(settings, ids, keep, body, status_fd):
    """B: sets the unit up, forks C, and reports C's wait status when it ends."""
    for number in signal.valid_signals():
        if callable(signal.getsignal(number)):
            signal.signal(number, signal.SIG_DFL)  # an init with no handler gets no signal from its namespace
    if settings["isolate"]:
        _mount_scratch(settings)
    else:
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # what the unit leaves is B's to kill
    child = os.fork()
    if child == 0:
        try:
            _untrusted(settings, ids, keep, body)
        except BaseException as error:
            os.write(2, ("sandbox: cannot start the program: %s\n" % error).encode("utf-8", "replace"))
        finally:
            os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    _keep_only([status_fd])
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    if not settings["isolate"]:
        kill_descendants(os.getpid())
    os.write(status_fd, b"status %d\n" % status)


class Unit:
    """A started unit: its init's pid (in the starter's PID namespace) and the pipe on which it reports, one line
    at a time: "pid N" (from A), then "status N" (C's wait status) or "error WHY" (from A or B)."""

    def __init__(self, status_fd):
        self.status_fd, self.pid, self.status, self.error, self.silent = status_fd, 0, None, "", False
        self._pending = b""

    def _read_lines(self, timeout):
        if select.select([self.status_fd], [], [], timeout)[0]:
            data = os.read(self.status_fd, 4096)
            self._pending += data
            self.silent = not data  # B is gone (killed) and C's status with it
        while b"\n" in self._pending:
            line, self._pending = self._pending.split(b"\n", 1)
            word, _, rest = line.decode("utf-8", "replace").partition(" ")
            if word == "pid":
                self.pid = int(rest)
            elif word == "status":
                self.status = int(rest)
            else:
                self.error = rest

    def read_status(self, timeout):
        """C's wait status, once B has written it within `timeout` seconds (None until then)."""
        if self.status is None and not self.error and not self.silent:
            self._read_lines(max(0.0, timeout))
        return self.status

    def end(self):
        """Kill the unit (all of it, with its init) and reap the init; C's status if it had ended first."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):  # reaped already (the unsafe mode's clean-up)
            pass
        status = self.read_status(0)
        os.close(self.status_fd)
        return status


def spawn(settings, keep, body):
    """Start a unit that runs ``body()`` in C with only the descriptors `keep` (besides 0, 1 and 2).

    Raises OSError with the reason when the unit could not be set up (no user namespaces, a mount refused)."""
    read_fd, write_fd = os.pipe()
    ids = (os.getuid(), os.getgid())
    namespaces = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC if settings["isolate"] else 0
    init = _clone(namespaces)
    if init == 0:  # B, in its new namespaces
        try:
            os.close(read_fd)
            if namespaces:
                _map_ids((0, 0), *ids)
                prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
            _init(settings, ids, keep, body, write_fd)
        except BaseException as error:
            os.write(write_fd, ("error %s\n" % error).encode("utf-8", "replace"))
        finally:
            os._exit(0)
    os.close(write_fd)
    if init < 0:
        os.close(read_fd)
        raise OSError("cannot start a unit: clone: %s" % os.strerror(-init))
    unit = Unit(read_fd)
    unit.pid = init
    return unit


# ---- CPU time of a process tree -------------------------------------------------------------------------

def _processes():
    """{pid: (parent pid, CPU ticks of the process and of the children it reaped)} of every visible process."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        found[int(name)] = (int(fields[1]), sum(int(field) for field in fields[11:15]))
    return found


def _descendants(root, processes):
    inside = {root}
    changed = True
    while changed:
        changed = False
        for pid, (parent, _) in processes.items():
            if parent in inside and pid not in inside:
                inside.add(pid)
                changed = True
    inside.discard(root)
    return inside


def tree_cpu():
    """CPU seconds of every process below this one: live ones from /proc (with what they reaped), ended ones
    from what this process reaped. So a program's children count against its limit, daemons included (they
    are this process's, a subreaper's or an init's, once their parents are gone)."""
    processes = _processes()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = sum(processes[pid][1] for pid in _descendants(os.getpid(), processes)) / TICK
    return live + usage.ru_utime + usage.ru_stime


def kill_descendants(root):
    """SIGKILL every process below `root` until none is left (the unsafe mode has no PID namespace to end)."""
    while True:
        below = _descendants(root, _processes())
        if not below:
            return
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.001)
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass


def process_cpu(pid):
    """CPU seconds of one process (exact scheduler time; 0 once it is gone)."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        return 0.0
