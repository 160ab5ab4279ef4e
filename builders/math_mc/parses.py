"""math-verify's parse of an answer, made once per worker process, and the worker pool of a build.

A parse is a pure reading of its text: ``parse`` of ``$text$`` under one soft time limit, with whether
math-verify's own time limit fired while it ran. The builder's equivalence (:mod:`.equivalence`) and the
validator's plain check (:mod:`.plain`) both read their texts through :func:`parsed`, and each still decides with
its own code: the validator runs its own ``verify`` on the parses and takes none of the builder's verdicts. Both
run their tasks in one pool (:func:`math_verify_pool`), so that an option the builder read is not parsed again
(about 10 ms of pure-Python parsing each) and the workers start once per build.

A task's answer is a pure function of the task and the code that judges it, so each of the two keeps its own in the
mcqforge cache (:func:`kept_map`): a rebuild starts no worker for what it judged before. Neither reads the other's.
"""

from __future__ import annotations

import importlib
import logging
from functools import lru_cache
from typing import Any, Callable, Sequence

from builders.core.runtime import cache
from builders.core.runtime.workers import DEFAULT_MEMORY_LIMIT, HardTimeoutPool, Outcome, cpu_workers

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


CACHE_FOLDER = "math_verify"
LIBRARIES = ("math-verify", "latex2sympy2_extended", "sympy", "mpmath", "antlr4-python3-runtime")


@lru_cache(maxsize=None)
def _code_version(module: str) -> str:
    # the judge's module, this one (the parse), the warm-up every worker runs first, and math-verify's stack
    return cache.code_version((module, "math_mc/parses.py", "math_mc/warm.py"), LIBRARIES)


def kept_map(pool: HardTimeoutPool, judge: str, tasks: Sequence[Any], keepable: Callable[[Any, Any], bool],
             timeouts: Sequence[float] | None = None, **options: Any) -> list[Outcome]:
    """``pool.map`` of ``(judge, task)`` for each task, an answer kept in the cache read back instead of run. An
    answer is kept when its task ran to the end and ``keepable(task, answer)`` holds (no time limit fired: a timeout
    depends on the machine). ``options``: the pool's ``map``'s, ``affinity`` per task."""
    version = _code_version(judge.partition(":")[0].removeprefix("builders.").replace(".", "/") + ".py")
    keys = [cache.key_of([version, judge, task]) for task in tasks]
    kept = [cache.read_kept_json(CACHE_FOLDER, key, _from_complex) for key in keys]
    outcomes: list[Outcome | None] = [None if value is None else Outcome(True, value) for value in kept]
    todo = [i for i, outcome in enumerate(outcomes) if outcome is None]
    if todo:  # a map of nothing would still start a worker
        if options.get("affinity") is not None:
            options["affinity"] = [options["affinity"][i] for i in todo]
        ran = pool.map([(judge, tasks[i]) for i in todo], None if timeouts is None else [timeouts[i] for i in todo],
                       **options)
        for i, outcome in zip(todo, ran, strict=True):
            outcomes[i] = outcome
            if outcome.ok and keepable(tasks[i], outcome.value):
                cache.keep_json(CACHE_FOLDER, keys[i], outcome.value, default=_complex)
    return outcomes  # type: ignore[return-value]  # every None was run


def _complex(value: object) -> dict:
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    raise TypeError(f"{type(value).__name__} is not kept")


def _from_complex(value: dict) -> object:
    return complex(*value["complex"]) if value.keys() == {"complex"} else value
