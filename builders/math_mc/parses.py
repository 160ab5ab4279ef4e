"""math-verify's parse of an answer, made once per worker process, and the worker pool of a build.

A parse is a pure reading of its text: ``parse`` of ``$text$`` under one soft time limit, with whether
math-verify's own time limit fired while it ran. The builder's equivalence (:mod:`.equivalence`) and the
validator's plain check (:mod:`.plain`) both read their texts through :func:`parsed`, and each still decides with
its own code: the validator runs its own ``verify`` on the parses and takes none of the builder's verdicts. Both
run their tasks in one pool (:func:`math_verify_pool`), so that an option the builder read is not parsed again
(about 10 ms of pure-Python parsing each) and the workers start once per build.
"""

from __future__ import annotations

import importlib
import logging

from builders.core.runtime.workers import DEFAULT_MEMORY_LIMIT, HardTimeoutPool, cpu_workers

WORKER_FUNCTION = "builders.math_mc.parses:run"
# Work (answers to read, pairs to verify) that makes one more worker worth starting, when the number of workers is
# not given: each worker has its own parses and warms its own parser and sympy caches, so a second one on MATH's
# real build (251 answers read, 469 pairs verified) cost 2.6 CPU s more than one (9.7 against 7.1) and saved seconds
# of wall time only.
WORK_PER_WORKER = 1000
_PARSED: dict[tuple[str, int], tuple[list, bool]] = {}  # (text, soft limit) -> (parse, whether the limit fired)
_PARSED_LIMIT = 200_000


class _TimeoutCounter(logging.Handler):
    """Counts math-verify's own timeout warnings (it returns an empty parse on a timeout and only logs it)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("Timeout"):
            self.count += 1


_timeouts = _TimeoutCounter()


def timeouts_fired() -> int:
    """How many times math-verify's own time limit fired in this process so far (its warnings counted here, and
    not printed: the parent reports them)."""
    math_verify_logger = logging.getLogger("math_verify")
    if _timeouts not in math_verify_logger.handlers:
        math_verify_logger.addHandler(_timeouts)
        math_verify_logger.setLevel(logging.WARNING)
        math_verify_logger.propagate = False
    return _timeouts.count


def parsed(text: str, soft: int) -> tuple[list, bool]:
    """math-verify's parse of ``$text$`` with ``soft`` seconds of its own limit, and whether that limit fired."""
    known = _PARSED.get((text, soft))
    if known is None:
        from math_verify import parse

        before = timeouts_fired()
        known = parse(f"${text}$", parsing_timeout=soft), timeouts_fired() > before
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        _PARSED[text, soft] = known
    return known


def run(task: tuple[str, object]) -> object:
    """Worker entry point: ``("module:function", payload)`` runs that function of the task's sender (the builder's
    equivalence or the validator's plain check) on ``payload``."""
    function, payload = task
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)(payload)


def workers_for(work: int, workers: int | None) -> int:
    """How many workers ``work`` items (answers, pairs) need: ``workers`` when given, else one per
    :data:`WORK_PER_WORKER` of work, at most one per CPU."""
    return workers or max(1, min(cpu_workers(), -(-work // WORK_PER_WORKER)))


def math_verify_pool(workers: int | None, timeout: float,
                     memory_limit: int | None = DEFAULT_MEMORY_LIMIT) -> HardTimeoutPool:
    """The workers that run math-verify for a build, under ``timeout`` seconds a task unless a task is given its own:
    ``workers`` of them, or one to start with (:meth:`~HardTimeoutPool.grow` adds those its work needs)."""
    return HardTimeoutPool(WORKER_FUNCTION, workers or 1, timeout, memory_limit,
                           preload=("sympy", "math_verify", "builders.math_mc.warm"))
