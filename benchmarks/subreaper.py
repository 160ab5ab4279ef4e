"""Run a command as a child subreaper, and exit with its status once every process it started has ended.

A process that outlives its parent (the forkserver of a worker pool, and the workers it forks) is reparented to
the nearest subreaper; without one it goes to init, and the CPU time it spends is counted nowhere. Under this
wrapper every such descendant is reaped here, so that ``wait4`` on the wrapper (:func:`harness.run_measured`)
counts the whole tree: MATH-MC's math-verify workers are most of its cost.

    python benchmarks/subreaper.py COMMAND [ARGS...]
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def main() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")
    child = subprocess.Popen(sys.argv[1:])
    code = 1
    while True:  # the command, then whatever it left behind
        try:
            pid, status = os.wait()
        except ChildProcessError:
            break
        if pid == child.pid:
            child.returncode = code = os.waitstatus_to_exitcode(status)
    return code


if __name__ == "__main__":
    sys.exit(main())
