"""The trusted launcher: the first process in the sandbox (root when the caller is root, so the program,
running as nobody, can neither signal nor trace it).

``launcher.py REPORT_FD CPU_LIMIT COMMAND...`` runs the program's command, kills it when its CPU time reaches
the limit, waits for it and writes "wait-status cpu-seconds max-rss-KiB cpu-limit-reached" on the pipe
REPORT_FD, which the program never holds (closed before exec). It exits as the program did. Runs inside the
sandbox: the standard library and its sibling :mod:`cpu_clock` only.
"""

import os
import select
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its sibling; PYTHONSAFEPATH leaves it out
from cpu_clock import CPU_POLL, cpu_over  # noqa: E402

del sys.path[0]


def main() -> None:
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
        if cpu_over(pid, cpu_limit):
            os.kill(pid, 9)
            over = 1
            break
    _, status, usage = os.wait4(pid, 0)
    os.write(fd, ("%d %r %d %d\n" % (status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, over)).encode())
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main()
