"""Untrusted units (a program, then calls in its namespace), each in a forked process of its own inside a
sandbox run, with results written out only by the trusted evaluator (``programs/evaluator.py``)."""

from __future__ import annotations

import json
import marshal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from builders.core.sandbox.programs import program_text
from builders.core.sandbox.runner import Sandbox


def json_rows(stdout: str) -> Iterator[dict]:
    """The JSON objects a sandboxed script wrote one per line; any other line is skipped, since the
    untrusted code may have written to the saved stdout too."""
    for line in stdout.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield row


@dataclass(frozen=True)
class Unit:
    """Untrusted code to run in a process of its own: an optional program, then calls in its namespace."""

    program: str | None
    calls: tuple[str, ...]


def run_isolated(sandbox: Sandbox, units: Sequence[Unit], seconds: float, max_chars: int,
                 per_run: int = 64, *, progress: bool = False,
                 tally: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """Each unit's outcome: ``{"program_error": text}`` or ``{"calls": [row, ...]}`` with one row per call
    (``ok``, ``repr``, ``truncated``, ``error``, ``nonliteral``; ``died`` with the sandbox status when the
    whole run died during it). Units go ``per_run`` to a sandbox run, each in its own forked process;
    a run that stops early or dies is followed by another for the units it did not finish. The evaluator is one
    of the sandbox's ``processes``: each unit may have one fewer."""
    if sandbox.limits.processes < 2:
        raise ValueError("run_isolated needs Limits.processes >= 2: the evaluator and a unit's program")
    settings = sandbox.settings(processes=sandbox.limits.processes - 1)
    results: list[dict[str, Any] | None] = [None] * len(units)
    partial: dict[int, list[dict]] = {}
    pending = [list(range(i, min(i + per_run, len(units)))) for i in range(0, len(units), per_run)]
    budget = max(0.0, sandbox.limits.wall_seconds * 0.6 - 2 * seconds)
    while pending:
        jobs = []
        for batch in pending:
            job_units = []
            for index in batch:
                unit, calls_done = units[index], len(partial.get(index, []))
                # a unit resumed after a dead run re-runs its program, then only the calls not done
                job_units.append({"program": unit.program, "calls": list(unit.calls[calls_done:])})
            jobs.append(marshal.dumps({"units": job_units, "seconds": seconds, "max_chars": max_chars,
                                       "budget": budget, "cpu_seconds": sandbox.limits.cpu_seconds,
                                       "settings": settings}).hex())
        runs = sandbox.run_many([program_text("evaluator.py")] * len(jobs), jobs, progress=progress, trusted=True)
        if tally is not None:
            tally["runs"] = tally.get("runs", 0) + len(runs)
            tally["rounds"] = tally.get("rounds", 0) + 1
        retry = []
        for batch, run in zip(pending, runs, strict=True):
            rows = list(json_rows(run.stdout))
            ended = any(isinstance(row.get("end"), int) for row in rows)
            died_in: int | None = None
            for position, index in enumerate(batch):
                unit_rows = [row for row in rows if row.get("u") == position]
                error = next((row for row in unit_rows if "program_error" in row), None)
                if error is not None:
                    results[index] = {"program_error": str(error["program_error"])}
                    continue
                done = partial.setdefault(index, [])
                done += [row for row in unit_rows if isinstance(row.get("i"), int)]
                if len(done) < len(units[index].calls) and not ended and died_in is None:
                    # units run in order: the run died during this one, on its next call; the rest run again
                    died_in = position
                    done.append({"ok": False, "died": run.status,
                                 "error": f"sandbox run {run.status}: {run.stderr.strip()[-300:]}"})
                if len(done) >= len(units[index].calls):
                    results[index] = {"calls": done[: len(units[index].calls)]}
                else:
                    retry.append(index)  # not started (time budget, or after a dead run), or resumed
        pending = [retry[i:i + per_run] for i in range(0, len(retry), per_run)]
    return [result if result is not None else {"calls": []} for result in results]

