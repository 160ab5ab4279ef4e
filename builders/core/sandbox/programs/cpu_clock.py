"""How a trusted process (the launcher, the evaluator) enforces the CPU limit on its child: it reads the
child's CPU clock (CLOCK_PROCESS_CPUTIME_ID of another process: exact scheduler time, what rusage reports)
every :data:`CPU_POLL` seconds and kills it at the limit, so it knows why it died.

RLIMIT_CPU is only a backstop, set well beyond (``limits.cpu_backstop``): the kernel checks it at ticks against
tick-sampled time, which under load runs ahead of the exact time (a busy loop killed at its 1 s limit had used
0.90 s by rusage), so a verdict from RLIMIT_CPU's signal and the rusage time would depend on the machine's load.
Runs inside the sandbox: the standard library only.
"""

import time

CPU_POLL = 0.02


def cpu_over(pid: int, limit: float) -> bool:
    """Whether process ``pid`` has used ``limit`` seconds of CPU (False once it is gone)."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2) >= limit  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    except OSError:
        return False
