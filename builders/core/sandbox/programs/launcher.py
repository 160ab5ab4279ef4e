"""The trusted launcher: pid 1 of the sandbox (bubblewrap's ``--as-pid-1``), which the program can neither see,
trace nor signal: the program runs in a unit of its own (:mod:`unit`), with a PID namespace of its own.

``launcher.py REPORT_FD SETTINGS COMMAND...`` runs the command in a fresh unit with the rlimits of SETTINGS
(marshalled, in hex: what :func:`builders.core.sandbox.limits.unit_settings` makes), kills the whole unit when the CPU time of
all its processes reaches ``cpu_seconds``, and writes "wait-status cpu-seconds max-rss-KiB cpu-limit-reached" on
the pipe REPORT_FD, which no other process holds. With ``"trusted": true`` (the evaluator, which makes a unit for
each program it runs) the command runs as its child instead, under the same rlimits but for the process count,
and the limit is on the command's own CPU time. It exits as the program did. Runs inside the sandbox: the
standard library and its sibling :mod:`unit` only.
"""

import _signal as signal  # the signal module without its enums, which cost 4 ms at every start
import ctypes
import marshal
import os
import resource
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling; PYTHONSAFEPATH leaves it out
import unit  # noqa: E402

del sys.path[0]


SETUP_FAILED = 125 << 8  # the wait status of an exit(125): the sandbox, not the program, failed


def _exec(command):
    os.execv(command[0], command)


def _run_trusted(settings, command):
    """The evaluator, as a child: its wait status, whether its own CPU time reached the limit, and its CPU time
    with its units'."""
    pid = os.fork()
    if pid == 0:
        try:
            unit.join_fresh_session_keyring()
            unit._set_rlimits({name: value for name, value in settings["rlimits"].items() if name != "nproc"})
            _exec(command)
        finally:
            os._exit(127)
    pidfd, over = os.pidfd_open(pid), 0
    while not select.select([pidfd], [], [], unit.CPU_POLL)[0]:
        if unit.process_cpu(pid) >= settings["cpu_seconds"]:
            os.kill(pid, signal.SIGKILL)
            over = 1
            break
    _, status, usage = os.wait4(pid, 0)
    return status, over, usage.ru_utime + usage.ru_stime


def _run_unit(settings, command):
    """The program, in a unit of its own: its wait status, whether the CPU time of all the unit's processes
    reached the limit, and that CPU time."""
    try:
        program = unit.spawn(settings, [], lambda: _exec(command))
    except OSError as error:
        os.write(2, ("sandbox: %s\n" % error).encode("utf-8", "replace"))
        return SETUP_FAILED, 0, 0.0
    over, checked = 0, time.monotonic()
    while program.read_status(unit.CPU_POLL) is None and not program.error and not program.silent:
        if time.monotonic() - checked >= unit.CPU_POLL:
            checked = time.monotonic()
            if unit.tree_cpu() >= settings["cpu_seconds"]:
                over = 1
                break
    # read before the end: the processes the kernel kills with the unit's init are reaped unaccounted
    cpu = unit.tree_cpu()
    if over and not settings["isolate"]:  # no PID namespace to end with its init
        unit.kill_descendants(os.getpid())
    status = program.end()
    if program.error:
        os.write(2, ("sandbox: %s\n" % program.error).encode("utf-8", "replace"))
        return SETUP_FAILED, 0, cpu
    return (signal.SIGKILL if status is None else status), over, max(cpu, unit.tree_cpu())  # None: killed


def main() -> None:
    report_fd, settings, command = int(sys.argv[1]), marshal.loads(bytes.fromhex(sys.argv[2])), sys.argv[3:]
    os.set_inheritable(report_fd, False)
    libc = ctypes.CDLL(None)
    libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: no process of its user may trace it or read its fds
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: the unit's init is its child (pid 1 needs none of it)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as pid 1 it then gets no signal from inside the sandbox
    run = _run_trusted if settings.get("trusted") else _run_unit
    status, over, cpu = run(settings, command)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # of the largest process of the run
    os.write(report_fd, ("%d %r %d %d\n" % (status, cpu, peak, over)).encode())
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main()
