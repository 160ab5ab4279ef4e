"""Worker processes with a hard wall-clock limit per task.

sympy (under math-verify) can run for hours on inputs such as ``2^{2^{40}}``, inside C code that no
signal interrupts. So every such call runs in a worker process, and a task that outlives its limit has
its worker killed (SIGKILL) and replaced; the task comes back as an :class:`Outcome` with
``error="timeout"``. A worker that dies on its own (out of memory, a crash) gives ``error="crashed"``;
an exception inside the task gives ``error="error"``. The pool keeps going in every case.

The task function is named as ``"module:function"`` so that a fresh interpreter can import it.
Workers start from a forkserver that has imported that module once, so a replacement starts in
milliseconds instead of re-importing sympy. Each worker caps the growth of its address space
(``RLIMIT_AS``, ``memory_limit`` above what it maps at start), so a runaway big-integer power fails with
MemoryError instead of eating the machine's memory.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import multiprocessing
import multiprocessing.connection
import os
import resource
import signal
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Collection, Hashable, Sequence

from builders.core.runtime.progress import bar as progress_bar

logger = logging.getLogger(__name__)

DEFAULT_MEMORY_LIMIT = 2 * 1024**3
# Workers that die one after the other without finishing any task cannot start at all (a broken
# environment, a script without the ``if __name__ == "__main__"`` guard): fail loudly instead of
# turning every task into a "crashed" outcome.
MAX_CONSECUTIVE_CRASHES = 5
STARTUP_TIMEOUT = 120.0
READY = ("ready",)
# A free worker looks this far down the queue for the task nearest to what it has served (``map``'s affinity).
AFFINITY_WINDOW = 64
AFFINITY_MEMORY = 100_000  # keys a worker remembers


class WorkerPoolError(RuntimeError):
    """The workers cannot run tasks at all."""


@dataclass(frozen=True)
class Outcome:
    ok: bool
    value: Any = None
    error: str | None = None  # "timeout", "crashed" or "error"
    detail: str = ""


def _resolve(function: str) -> Callable[[Any], Any]:
    module, _, name = function.partition(":")
    return getattr(importlib.import_module(module), name)


def _address_space() -> int:
    """This process's current virtual memory size in bytes (Linux), 0 when unknown."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _worker_main(function: str, connection, memory_limit: int | None) -> None:
    # Ctrl-C reaches the whole process group: the parent stops and kills its workers (HardTimeoutPool.close),
    # so a worker ignores it rather than print a traceback from the middle of sympy.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if memory_limit:
        # Headroom above what the worker already maps (imported libraries reserve address space that
        # is never used), so the limit stops runaway growth, not ordinary work.
        limit = _address_space() + memory_limit
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    run = _resolve(function)
    connection.send(READY)  # a task's clock starts only once its worker is up
    while True:
        try:
            task_id, payload = connection.recv()
        except (EOFError, OSError):  # the parent went away
            return
        try:
            reply = (task_id, True, run(payload), "")
        except MemoryError:
            reply = (task_id, False, None, "MemoryError")
        except Exception as error:  # the task's own failure; the worker stays usable
            reply = (task_id, False, None, f"{type(error).__name__}: {error}"[:300])
        try:
            connection.send(reply)
        except (EOFError, OSError):
            return


class _Worker:
    def __init__(self, context, function: str, memory_limit: int | None) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_worker_main, args=(function, child, memory_limit), daemon=True)
        self.process.start()
        child.close()
        self.task: int | None = None
        self.deadline = 0.0
        self.served: set[Hashable] = set()  # the affinity keys of the tasks it ran (what its caches hold)
        self._wait_until_ready()

    def _wait_until_ready(self) -> None:
        try:
            if self.connection.poll(STARTUP_TIMEOUT) and self.connection.recv() == READY:
                return
        except (EOFError, OSError):
            pass
        code = self.process.exitcode
        self.kill()
        raise WorkerPoolError(f"a worker did not start within {STARTUP_TIMEOUT:.0f} s (exit code {code}); "
                              "see its error output above")

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.connection.close()


class HardTimeoutPool:
    """``workers`` processes running ``function(payload)``, each task under ``timeout`` seconds."""

    def __init__(self, function: str, workers: int = 2, timeout: float = 10.0,
                 memory_limit: int | None = DEFAULT_MEMORY_LIMIT, preload: Sequence[str] = ()) -> None:
        if workers < 1 or timeout <= 0:
            raise ValueError("workers must be >= 1 and timeout > 0")
        self.function, self.size, self.timeout, self.memory_limit = function, workers, timeout, memory_limit
        self._context = multiprocessing.get_context("forkserver")
        # Modules the forkserver imports once, so that every (re)started worker has them already; the
        # main module too, which each worker would otherwise import again (seconds for a CLI).
        self._context.set_forkserver_preload(["__main__", *preload, function.partition(":")[0]])
        self._workers: list[_Worker] = []
        self._lock = threading.Lock()  # one map at a time: callers may come from several threads
        self.timeouts = 0
        self.crashes = 0
        self._consecutive_crashes = 0

    def __enter__(self) -> "HardTimeoutPool":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def grow(self, workers: int) -> None:
        """Run up to ``workers`` processes from now on (never fewer than now): they start when a map needs them."""
        self.size = max(self.size, workers)

    def close(self) -> None:
        for worker in self._workers:
            worker.kill()
        self._workers = []

    def run(self, payload: Any, timeout: float | None = None) -> Outcome:
        return self.map([payload], [timeout] if timeout is not None else None)[0]

    def map(self, payloads: Sequence[Any], timeouts: Sequence[float] | None = None,
            progress: str | None = None, affinity: Sequence[Collection[Hashable]] | None = None) -> list[Outcome]:
        """Run every payload; outcomes come back in payload order. ``progress`` names a progress bar. ``affinity``:
        per payload, the keys of what it works on (the texts a task parses); a free worker takes, among the next
        queued tasks, the one sharing most keys with the tasks it ran before, so that what a worker caches is used
        again (which worker runs a task changes nothing but the time it takes)."""
        with self._lock, progress_bar(total=len(payloads), desc=progress, disable=progress is None, leave=False) as bar:
            return self._map(payloads, timeouts, bar, affinity)

    def _map(self, payloads: Sequence[Any], timeouts: Sequence[float] | None, bar: Any,
             affinity: Sequence[Collection[Hashable]] | None = None) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(payloads)
        pending = deque(range(len(payloads)))
        while len(self._workers) < min(self.size, max(1, len(payloads))):
            self._workers.append(self._spawn())
        while pending or any(w.task is not None for w in self._workers):
            for worker in self._workers:
                if worker.task is None and pending:
                    self._assign(worker, _next_task(pending, worker, affinity), payloads, timeouts)
            busy = [w for w in self._workers if w.task is not None]
            wait_for = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = multiprocessing.connection.wait([w.connection for w in busy], timeout=wait_for)
            for worker in busy:
                if worker.connection in ready:
                    self._collect(worker, outcomes)
                    bar.update()
                elif time.monotonic() >= worker.deadline:
                    self._expire(worker, outcomes, payloads)
                    bar.update()
        return outcomes  # type: ignore[return-value]

    def _spawn(self) -> _Worker:
        return _Worker(self._context, self.function, self.memory_limit)

    def _assign(self, worker: _Worker, index: int, payloads, timeouts) -> None:
        limit = timeouts[index] if timeouts is not None else self.timeout
        worker.task, worker.deadline = index, time.monotonic() + limit
        try:
            worker.connection.send((index, payloads[index]))
        except (OSError, ValueError):
            worker.deadline = 0.0  # a dead worker: expires at once and is replaced

    def _collect(self, worker: _Worker, outcomes: list) -> None:
        index = worker.task
        assert index is not None, "only a busy worker is collected"
        try:
            task_id, ok, value, detail = worker.connection.recv()
        except (EOFError, OSError):
            self.crashes += 1
            self._consecutive_crashes += 1
            if self._consecutive_crashes > MAX_CONSECUTIVE_CRASHES:
                self.close()
                raise WorkerPoolError(f"{self._consecutive_crashes} workers in a row died without finishing a task "
                                      f"(last exit code {worker.process.exitcode}); see their error output above") from None
            logger.warning("worker %d died during task %d; starting another", worker.process.pid, index)
            outcomes[index] = Outcome(False, error="crashed", detail=f"exit code {worker.process.exitcode}")
            self._replace(worker)
            return
        assert task_id == index
        self._consecutive_crashes = 0
        outcomes[index] = Outcome(True, value) if ok else Outcome(False, error="error", detail=detail)
        worker.task = None

    def _expire(self, worker: _Worker, outcomes: list, payloads) -> None:
        index = worker.task
        assert index is not None, "only a busy worker expires"
        self.timeouts += 1
        logger.warning("task timed out (hard limit), worker %d killed: %.200r", worker.process.pid, payloads[index])
        outcomes[index] = Outcome(False, error="timeout", detail="hard time limit")
        self._replace(worker)

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        self._workers[self._workers.index(worker)] = self._spawn()


def _next_task(pending: deque[int], worker: _Worker, affinity: Sequence[Collection[Hashable]] | None) -> int:
    """The queued task ``worker`` runs next (taken off the queue): the first, or with ``affinity`` the one among the
    first :data:`AFFINITY_WINDOW` sharing most keys with what the worker ran (the first of those on a tie)."""
    if affinity is None:
        return pending.popleft()
    best, best_shared = 0, -1
    for position, index in enumerate(itertools.islice(pending, AFFINITY_WINDOW)):
        shared = sum(key in worker.served for key in affinity[index])
        if shared > best_shared:
            best, best_shared = position, shared
    index = pending[best]
    del pending[best]
    if len(worker.served) > AFFINITY_MEMORY:
        worker.served.clear()
    worker.served.update(affinity[index])
    return index


def cpu_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))
