"""Each (program, call, expected) pair verified in the sandbox: the reference program runs, the call's value is
compared with the one the test expects.

Each problem's program runs once in a unit of its own (namespaces, /tmp, keyring: nothing another problem left,
and no sight of the evaluator), then its calls in order in its namespace (as the original tests do); the values
come back over a private pipe, and the trusted evaluator alone writes result lines
(:func:`builders.core.sandbox.run_isolated`), so a program cannot forge its or another's verification line.
A call that overruns its time is killed with its unit; the problem's other calls go on in a fresh one.

What the sandbox runs give back is a function of the programs and calls, the interpreter (which runs them without
site-packages), the sandbox's code, limits and settings: a verification whose every call ended on its own (no time
or memory limit, no dead run, which depend on the machine) is kept in the mcqforge cache under a hash of all of
these (:func:`kept_runs`), and a rebuild of the same pairs reads the rows back instead of running the programs again.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from builders.core.items.outcomes import Exclude
from builders.core.runtime import cache
from builders.core.sandbox import Limits, Sandbox, Unit, run_isolated

from .problems import CallPair
from .values import DEFAULT_MAX_OUTPUT_CHARS, NotALiteral, format_value, parse_literal, value_key

logger = logging.getLogger(__name__)

# Two processes (the evaluator and the program) share the memory budget.
VERIFY_LIMITS = Limits(cpu_seconds=60, wall_seconds=60.0, memory_bytes=1 << 30, processes=2, output_bytes=4 << 20)
# Problems per sandbox run: since every problem has a unit of its own, which problems share a run changes no
# verdict. A run (bubblewrap, the launcher's and the evaluator's interpreters) costs about 65 ms CPU, as much as 15
# to 20 trivial problems: 128 a run (9 runs for the 1,130 problems of HumanEval and MBPP instead of 36) saved 1.7 of
# the verification's 8 CPU s, and still gives each of 2 workers several runs.
PROBLEMS_PER_RUN = 128
CACHE_FOLDER = "python_io_runs"


@dataclass(frozen=True)
class Verified:
    pair: CallPair
    gold: str  # format_value of the value the reference program returned


@dataclass
class VerificationStats:
    pairs: int = 0
    runs: int = 0
    rounds: int = 0
    seconds: float = 0.0
    mechanism: str = ""  # how the sandbox limits memory (Sandbox.mechanism)

    @property
    def runs_per_second(self) -> float:
        return self.runs / self.seconds if self.seconds else 0.0

    @property
    def calls_per_second(self) -> float:
        return self.pairs / self.seconds if self.seconds else 0.0


def verify_pairs(pairs: Sequence[CallPair], sandbox: Sandbox, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
                 call_seconds: float = 5.0) -> tuple[list[Verified], dict[str, Exclude], VerificationStats]:
    """Run each problem's program once in the sandbox and evaluate its calls; keep the pairs whose value
    equals the expected one, and say why of the others (by pair id, in the pairs' order). A call that dies
    (timeout, memory) is rejected; the problem's other calls still run."""
    stats = VerificationStats(pairs=len(pairs), mechanism=sandbox.mechanism)
    started = time.monotonic()
    by_problem: dict[tuple[str, str], list[CallPair]] = defaultdict(list)
    for pair in pairs:
        by_problem[pair.problem.key].append(pair)
    batches = list(by_problem.values())
    units = [Unit(batch[0].problem.program, tuple(p.call for p in batch)) for batch in batches]
    outcomes, stats.runs, stats.rounds = kept_runs(sandbox, units, call_seconds, max_chars)
    verified: dict[str, Verified] = {}
    rejected: dict[str, Exclude] = {}
    for batch, outcome in zip(batches, outcomes, strict=True):
        _judge_unit(batch, outcome, max_chars, verified, rejected)
    stats.seconds = time.monotonic() - started
    logger.info("verified %d pairs in %d sandbox runs (%.1f s, %.1f runs/s, %.1f calls/s): %d kept",
                len(pairs), stats.runs, stats.seconds, stats.runs_per_second, stats.calls_per_second, len(verified))
    return ([verified[p.id] for p in pairs if p.id in verified],
            {p.id: rejected[p.id] for p in pairs if p.id in rejected}, stats)


def kept_runs(sandbox: Sandbox, units: Sequence[Unit], call_seconds: float,
              max_chars: int) -> tuple[list[dict[str, Any]], int, int]:
    """:func:`run_isolated`'s outcomes of ``units`` with the sandbox runs and rounds it took, read from the cache
    when a verification of the same units under the same sandbox and code was kept, else run (and kept when every
    call ended on its own)."""
    described = [_code_version(), sys.version, os.path.realpath(sys.executable), os.geteuid() == 0,
                 sandbox.unsafe, sandbox.site_packages, sandbox.mechanism, dataclasses.asdict(sandbox.limits),
                 sandbox.settings(processes=sandbox.limits.processes - 1), call_seconds, max_chars, PROBLEMS_PER_RUN,
                 [[unit.program, list(unit.calls)] for unit in units]]
    key = cache.key_of(described) + ".json"
    kept = cache.read_kept_json(CACHE_FOLDER, key)
    if isinstance(kept, dict) and kept.keys() == {"outcomes", "runs", "rounds"}:
        return kept["outcomes"], kept["runs"], kept["rounds"]
    tally: Counter = Counter()
    outcomes = run_isolated(sandbox, units, call_seconds, max_chars, per_run=PROBLEMS_PER_RUN, tally=tally)
    if all(_ended_on_its_own(outcome) for outcome in outcomes):
        cache.keep_json(CACHE_FOLDER, key, {"outcomes": outcomes, "runs": tally["runs"], "rounds": tally["rounds"]})
    return outcomes, tally["runs"], tally["rounds"]


@lru_cache(maxsize=1)
def _code_version() -> str:
    # the sandbox's modules and the programs that run inside it; not this module's judging, which reads the rows
    sandbox = Path(__file__).resolve().parents[1] / "core" / "sandbox"
    return cache.code_version(sorted(str(path.relative_to(sandbox.parents[1])) for path in sandbox.rglob("*.py")), ())


def _ended_on_its_own(outcome: Mapping[str, Any]) -> bool:
    """No call of the unit met a limit (time, memory) or a dead run: what the machine's speed or load may change."""
    calls = outcome.get("calls") or []
    errors = [str(row.get("error", "")) for row in calls] + [str(outcome.get("program_error", ""))]
    return not any("died" in row for row in calls) and not any(
        error in ("timeout", "died", "memory") or error.startswith(("killed", "sandbox run")) or "MemoryError" in error
        for error in errors)


def _judge_unit(batch: list[CallPair], outcome: Mapping[str, Any], max_chars: int, verified: dict,
                rejected: dict) -> None:
    """Record the outcome of each call of one problem."""
    if "program_error" in outcome:
        for pair in batch:
            rejected[pair.id] = Exclude("program_failed", "call", str(outcome["program_error"]))
        return
    rows = outcome.get("calls") or []
    for pair, row in zip(batch, rows, strict=True):
        result = _judge_call(pair, row, max_chars)
        if isinstance(result, Verified):
            verified[pair.id] = result
        else:
            rejected[pair.id] = result
    for pair in batch[len(rows):]:
        rejected[pair.id] = Exclude("reference_run_died", "call", "no result")


def _judge_call(pair: CallPair, row: Mapping[str, Any], max_chars: int) -> Verified | Exclude:
    if not row.get("ok"):
        error = str(row.get("error", ""))
        if "died" in row:  # the whole sandbox run ended during this call
            reason = {"timeout": "reference_timeout", "memory": "reference_out_of_memory"}.get(
                str(row["died"]), "reference_run_died")
        elif row.get("nonliteral"):
            reason = "output_not_a_literal"
        elif error == "timeout":
            reason = "reference_timeout"
        elif error == "died" or error.startswith("killed by signal"):
            reason = "reference_run_died"
        else:
            reason = "reference_raised"
        return Exclude(reason, "call", error)
    shown = str(row.get("repr", ""))
    if row.get("truncated"):
        return Exclude("output_too_long", "call", f"repr longer than {max_chars} characters")
    try:
        value = parse_literal(shown, from_repr=True)
    except NotALiteral as why:
        return Exclude("output_not_a_literal", "call", f"{why}: {shown[:200]}")
    gold = format_value(value)
    if len(gold) > max_chars:
        return Exclude("output_too_long", "call", f"{len(gold)} characters")
    if pair.truth_test and not isinstance(value, bool):
        return Exclude("reference_output_mismatch", "call", f"a truth-value assert, but the call returned {gold[:150]}")
    if value_key(value) != value_key(parse_literal(pair.expected_text)):
        return Exclude("reference_output_mismatch", "call", f"expected {pair.expected_text[:150]}, got {gold[:150]}")
    return Verified(pair, gold)
