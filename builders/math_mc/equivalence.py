"""When two MATH answers are the same: surface keys, then math-verify under hard time limits.

Equivalence has two levels. :meth:`MathEquivalence.key` is :func:`surface_key`, the option's normal form
(:func:`~builders.math_mc.forms.option_form`: no ``\\text{}``, units, degrees, percent or dollar signs, ``x =``
before a value) with case and spaces folded: equal keys are the same answer without asking anyone.
:meth:`MathEquivalence.same` asks math-verify (``parse`` of the answer wrapped in ``$...$``, then
``verify`` in both directions: it is not symmetric), always in worker processes under a hard wall-clock
limit (:mod:`.workers`); a timeout means "not equivalent" for the pools' statistics, is logged and counted,
and leaves the pair :meth:`~MathEquivalence.undecided`, which the builder never shows side by side.

For speed, :meth:`MathEquivalence.prepare` works in two stages over all questions at once.
1. Every distinct answer is *read* once, in chunks spread over the workers: math-verify parses it, and
   a symbol-free scalar expression gets a numeric value (infinite when too large for a float, as
   ``2^{2^{40}}``); an interval gets a flag. Plain numbers ("-12", "3.5", "\\frac{7}{2}") get their value by
   regex in the parent, without any parse. Expressions with symbols get no value: math-verify also
   compares symbols as text ("odd", read o*d*d, equals ``\\text{odd}``), which no value can predict.
2. A pair is settled "different" from these readings alone when both are scalars whose values differ
   (also after a factor of 100 either way, for percentages) or a scalar meets an interval: math-verify's
   equality implies equal values there (``benchmarks/math_equivalence.py --check-fast-path`` asks plain
   math-verify about every pair of the real build to prove it). Only the other pairs (equations, sets,
   tuples, text, values that agree) go to ``verify``, in one task per question; a question whose task
   fails is judged again pair by pair, so one hanging answer costs only its own pairs. An answer that
   cannot be read in time is equivalent to nothing.
The parent never parses an answer with sympy: it only compares the numbers the workers send back. The workers
are the build's (:func:`~builders.math_mc.parses.math_verify_pool`): each keeps the parses it made
(:func:`~builders.math_mc.parses.parsed`), which the validator's plain check reads its options from. What a task
answered in time is kept in the mcqforge cache (:func:`~builders.math_mc.parses.kept_map`): a rebuild reads it back.
"""

from __future__ import annotations

import cmath
import hashlib
import logging
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Iterable, Sequence

from builders.core.runtime.workers import DEFAULT_MEMORY_LIMIT, Outcome

from . import parses
from .forms import surface_key

logger = logging.getLogger(__name__)

JUDGE = "builders.math_mc.equivalence:judge"  # what the build's workers run for this module's tasks

# ---- the worker side ----------------------------------------------------------------------------------


@dataclass
class _Answer:
    text: str
    value: complex | None  # numeric fingerprint of a plain scalar expression, else None


_CACHE: dict[str, _Answer] = {}
_CACHE_LIMIT = 200_000
# math-verify's own signal-based limit inside the worker (seconds). It stops slow pure-Python sympy
# work cheaply; C-level work (a huge integer power) ignores signals, which is what the parent's hard
# limit is for. Set per task from the hard limit.
_soft_timeout = 5
# Plain numbers ("-12", "3.5", "7/2", "\frac{7}{2}") get their value without math-verify's parse, which
# costs ~10 ms: most pairs of MATH answers are two numbers, and their values decide them.
_SIMPLE_NUMBER = re.compile(r"^(-?)(?:(\d{1,30})(?:\.(\d{1,30}))?|\\frac\{(\d{1,30})\}\{(\d{1,30})\}|(\d{1,30})/(\d{1,30}))$")


def _simple_value(answer: str) -> complex | None:
    match = _SIMPLE_NUMBER.match(answer)
    if match is None:
        return None
    sign, whole, decimals, numerator, denominator, top, bottom = match.groups()
    if whole is not None:
        value = Fraction(int(whole + (decimals or "")), 10 ** len(decimals or ""))
    else:
        top, bottom = (numerator, denominator) if numerator is not None else (top, bottom)
        if int(bottom) == 0:
            return None
        value = Fraction(int(top), int(bottom))
    return complex(float(-value if sign else value))


def _answer(text: str) -> _Answer:
    cached = _CACHE.get(text)
    if cached is None:
        value = _simple_value(text)
        cached = _Answer(text, value if value is not None else _fingerprint(_parsed(text)))
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE[text] = cached
    return cached


def _parsed(text: str) -> list:
    return parses.parsed(text, _soft_timeout)[0]

def _symbol_value(name: str) -> float:
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return 0.5 + int.from_bytes(digest[:4], "little") / 2**32  # in [0.5, 1.5): away from 0 and 1


def _fingerprint(parsed: list) -> complex | None:
    """The value of a plain scalar expression at fixed symbol values, or None when not that kind."""
    import sympy

    if not parsed or not isinstance(parsed[0], sympy.Expr) or isinstance(parsed[0], sympy.MatrixBase):
        return None
    expression = parsed[0]
    if expression.atoms(sympy.core.function.AppliedUndef):  # f(x) with f unknown: no value
        return None
    if expression.free_symbols:
        # math-verify compares symbols as text too ("odd" = o*d*d equals \text{odd}, "East" equals
        # \text{east}), so values at made-up symbol values prove nothing: only symbol-free values are used.
        return None
    try:
        values = {s: _symbol_value(s.name) for s in expression.free_symbols}
        number = complex(expression.evalf(20, subs=values))
    except (TypeError, ValueError, ArithmeticError, AttributeError, RecursionError):
        return None
    if cmath.isnan(number):
        return None
    return number  # may be infinite: 2^{2^{40}} is a scalar too large for a float


def _close(a: complex, b: complex) -> bool:
    return abs(a - b) <= 1e-3 * max(1.0, abs(a), abs(b))


def clearly_different(a: complex | None, b: complex | None) -> bool:
    """Both plain scalars whose values differ, also after a factor of 100 (percent) either way."""
    if a is None or b is None:
        return False
    if cmath.isinf(a) or cmath.isinf(b):  # astronomically large: only another such value may equal it
        return cmath.isinf(a) != cmath.isinf(b)
    return not (_close(a, b) or _close(a, 100 * b) or _close(100 * a, b))


def _is_continuum(parsed: list) -> bool:
    """An interval of positive length or a union of sets (which sympy keeps only for intervals)."""
    import sympy

    if not parsed:
        return False
    first = parsed[0]
    if isinstance(first, sympy.Interval):
        return first.measure != 0
    return isinstance(first, sympy.Union)


def _verify(gold: str, answer: str) -> tuple[bool, bool]:
    """(equivalent, whether a soft timeout fired on the way). The parent sends only the pairs its readings leave
    open (:func:`prejudge`), so math-verify is asked at once."""
    from math_verify import verify

    before = parses.timeouts_fired()
    left, right = _parsed(gold), _parsed(answer)
    # math-verify is not symmetric (the gold side may be an equation, a set...): ask both directions.
    result = bool(verify(left, right, timeout_seconds=_soft_timeout)) or \
        bool(verify(right, left, timeout_seconds=_soft_timeout))
    return result, parses.timeouts_fired() > before


def _read(text: str) -> tuple[complex | None, bool, bool]:
    """What the parent needs to pre-judge pairs: (value, is a continuum, math-verify read it in time)."""
    before = parses.timeouts_fired()
    answer = _answer(text)
    return answer.value, _is_continuum(_parsed(text)), parses.timeouts_fired() == before


def judge(task: tuple) -> object:
    """Worker entry point; the last element of every task is the soft time limit.

    ``("read", texts, soft)``: :func:`_read` of each text; ``("pairs", [(a, b), ...], soft)``:
    (equivalent, timed out) per pair, in order."""
    global _soft_timeout
    kind, argument, _soft_timeout = task
    if kind == "read":
        return [_read(text) for text in argument]
    if kind == "pairs":
        return [_verify(a, b) for a, b in argument]
    raise ValueError(f"unknown task {kind!r}")


def _in_time(task: tuple, answers: list) -> bool:
    """Whether a task's answers came without a soft timeout: a reading's last element is "in time", a pair's "a
    limit fired"."""
    return all(in_time for *_, in_time in answers) if task[0] == "read" else not any(f for _, f in answers)


# ---- the parent side ---------------------------------------------------------------------------------
# The parent never parses an answer with sympy (an answer is untrusted and may hang sympy): it only
# compares the plain numbers the workers send back.


@dataclass(frozen=True)
class Reading:
    value: complex | None
    continuum: bool


def prejudge(a: Reading, b: Reading) -> bool:
    """True when the pair is certainly not equivalent for math-verify, from the readings alone."""
    if clearly_different(a.value, b.value):
        return True
    return (a.value is not None and b.value is None and b.continuum) or \
        (b.value is not None and a.value is None and a.continuum)


@dataclass
class EquivalenceStats:
    answers: int = 0  # distinct answers read (plain numbers are read without a worker)
    pairs: int = 0  # pairs judged
    prejudged: int = 0  # of which decided "different" from the workers' readings, without verify
    timeouts: int = 0  # pairs judged "not equivalent" because their task hit a time limit
    errors: int = 0  # pairs judged "not equivalent" because math-verify raised or a worker crashed
    skipped: int = 0  # pairs judged "not equivalent" unasked: one side hangs
    timed_out: list[tuple[str, str]] = field(default_factory=list)
    hanging: list[str] = field(default_factory=list)  # answers that could not be read in time


CHUNK = 16  # answers per read task


class MathEquivalence:
    """math-verify equivalence of MATH answers, in worker processes with a hard limit per task.

    ``prepare`` first reads every distinct answer once (in chunks, in parallel): its value when it is a
    plain scalar, whether it is an interval. Pairs these readings decide are never sent to math-verify;
    the others go, one task per question. ``timeout`` is the hard limit of one task. An answer whose
    reading hits the limit, or that is in two timed-out pairs, "hangs": it is judged not equivalent to
    anything without asking again.
    """

    def __init__(self, workers: int | None = None, timeout: float = 10.0, memory_limit: int | None = None) -> None:
        self.timeout = timeout
        # the build's math-verify workers, which the validator's plain check uses too (:mod:`.parses`)
        self._workers = workers  # None: as many as the work needs (parses.workers_for)
        self.pool = parses.math_verify_pool(workers, timeout,
                                           DEFAULT_MEMORY_LIMIT if memory_limit is None else memory_limit)
        self._soft = max(1, int(timeout / 2))
        self._known: dict[tuple[str, str], bool] = {}
        self._readings: dict[str, Reading] = {}
        self._timeouts_by_answer: dict[str, int] = {}
        self._undecided: set[tuple[str, str]] = set()
        self.prejudged_pairs: set[tuple[str, str]] = set()  # settled "different" by the readings alone
        self.stats = EquivalenceStats()

    def __enter__(self) -> "MathEquivalence":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.pool.close()

    def _map(self, tasks: list[tuple[str, list]], **options) -> list[Outcome]:
        """Run ``(kind, argument)`` tasks of :func:`judge` on the pool (``options``: the pool's ``map``'s), with the
        workers their answers and pairs need."""
        self.pool.grow(parses.workers_for(sum(len(argument) for _, argument in tasks), self._workers))
        return parses.kept_map(self.pool, JUDGE, [(kind, argument, self._soft) for kind, argument in tasks],
                               _in_time, **options)

    def key(self, answer: str) -> str | None:
        return surface_key(answer)

    def same(self, a: str, b: str) -> bool:
        """One surface key, or math-verify (either direction) says equal."""
        if surface_key(a) == surface_key(b):
            return True
        known = self._lookup(a, b)
        if known is None:
            self.prepare([[a, b]])
            known = self._lookup(a, b)
        return bool(known)

    def value(self, answer: str) -> complex | None:
        """The value math-verify read for a plain scalar ``answer`` (None for any other answer, or one that hangs)."""
        if answer not in self._readings and not self._is_hanging(answer):
            self._read([answer])
        reading = self._readings.get(answer)
        return reading.value if reading else None

    def undecided(self, a: str, b: str) -> bool:
        """Whether the pair's "not equivalent" is only a default: math-verify timed out, failed, or one side
        hangs. Such a pair is not proven different, so the builder never shows both as options."""
        return (a, b) in self._undecided or (b, a) in self._undecided or self._is_hanging(a) or self._is_hanging(b)

    def _lookup(self, a: str, b: str) -> bool | None:
        found = self._known.get((a, b))
        return self._known.get((b, a)) if found is None else found

    def prepare(self, groups: Iterable[Sequence[str]]) -> None:
        """Judge every pair within each group (a question's gold first, then its answers)."""
        groups = [list(dict.fromkeys(g)) for g in groups]
        todo = [[pair for pair in _pairs(g) if self._lookup(*pair) is None] for g in groups]
        todo = [pairs for pairs in todo if pairs]
        self._read(list(dict.fromkeys(a for pairs in todo for pair in pairs for a in pair)))
        batches = [self._prejudge(pairs) for pairs in todo]
        self._verify_batches([b for b in batches if b])

    # -- stage 1: read every answer once

    def _read(self, answers: list[str]) -> None:
        unread = [a for a in answers if a not in self._readings and not self._is_hanging(a)]
        for answer in unread:
            value = _simple_value(answer)
            if value is not None:  # a plain number: no worker needed
                self._readings[answer] = Reading(value, False)
        unread = [a for a in unread if a not in self._readings]
        self.stats.answers += len(unread)
        chunks = [unread[i:i + CHUNK] for i in range(0, len(unread), CHUNK)]
        retry: list[str] = []
        outcomes = self._map([("read", c) for c in chunks], affinity=chunks)
        for chunk, outcome in zip(chunks, outcomes, strict=True):
            if outcome.ok:
                for answer, reading in zip(chunk, outcome.value, strict=True):
                    self._take_reading(answer, *reading)
            else:
                retry.extend(chunk)
        outcomes = self._map([("read", [a]) for a in retry], affinity=[[a] for a in retry])
        for answer, outcome in zip(retry, outcomes, strict=True):
            if outcome.ok:
                self._take_reading(answer, *outcome.value[0])
            else:
                self._hangs(answer, outcome.error or "error")

    def _take_reading(self, answer: str, value: complex | None, continuum: bool, in_time: bool) -> None:
        if in_time:
            self._readings[answer] = Reading(value, continuum)
        else:
            self._hangs(answer, "math-verify's own time limit")

    def _hangs(self, answer: str, why: str) -> None:
        self._timeouts_by_answer[answer] = 2
        self.stats.hanging.append(answer[:200])
        logger.warning("reading %.100r with math-verify failed (%s): it is judged equivalent to nothing", answer, why)

    # -- stage 2: the pairs the readings leave open

    def _prejudge(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """Settle what the readings decide; return the pairs that need math-verify."""
        open_pairs = []
        for a, b in pairs:
            if self._is_hanging(a) or self._is_hanging(b):
                self._store(a, b, False)
                self.stats.skipped += 1
            elif prejudge(self._readings[a], self._readings[b]):
                self._store(a, b, False)
                self.prejudged_pairs.add((a, b))
                self.stats.prejudged += 1
            else:
                open_pairs.append((a, b))
        return open_pairs

    def _verify_batches(self, batches: list[list[tuple[str, str]]]) -> None:
        retry: list[tuple[str, str]] = []
        payloads = [("pairs", b) for b in batches]
        # a pair goes where its answers were read: the worker holds their parses (each worker caches its own)
        outcomes = self._map(payloads, progress="math-verify", affinity=[_answers_of(b) for b in batches])
        for batch, outcome in zip(batches, outcomes, strict=True):
            if outcome.ok:
                for (a, b), (result, timed_out) in zip(batch, outcome.value, strict=True):
                    self._settle(a, b, result, timed_out)
            else:
                logger.warning("math-verify task for %d pairs failed (%s); judging them one by one",
                               len(batch), outcome.error)
                retry.extend(batch)
        # One pair per worker at a time, so that an answer seen in two timeouts stops costing time.
        while retry:
            round_, retry = retry[:self.pool.size], retry[self.pool.size:]
            asked = [pair for pair in round_ if self._prejudge([pair])]
            outcomes = self._map([("pairs", [pair]) for pair in asked], affinity=asked)
            for (a, b), outcome in zip(asked, outcomes, strict=True):
                if outcome.ok:
                    self._settle(a, b, *outcome.value[0])
                else:
                    self._record_failure(a, b, outcome)

    def _is_hanging(self, answer: str) -> bool:
        return self._timeouts_by_answer.get(answer, 0) >= 2

    def _store(self, a: str, b: str, result: bool) -> None:
        self._known[(a, b)] = result
        self.stats.pairs += 1

    def _settle(self, a: str, b: str, result: bool, timed_out: bool) -> None:
        """A worker's verdict; a soft timeout that left the pair unequal counts as a timeout."""
        if timed_out and not result:
            self._record_failure(a, b, Outcome(False, error="timeout", detail="math-verify's own time limit"))
        else:
            self._store(a, b, bool(result))

    def _record_failure(self, a: str, b: str, outcome: Outcome) -> None:
        self._store(a, b, False)
        self._undecided.add((a, b))
        if outcome.error != "timeout":
            self.stats.errors += 1
            logger.warning("math-verify failed on %.100r vs %.100r (%s: %s): judged not equivalent",
                           a, b, outcome.error, outcome.detail)
            return
        self.stats.timeouts += 1
        self.stats.timed_out.append((a[:200], b[:200]))
        logger.warning("math-verify timed out on %.100r vs %.100r (%s): judged not equivalent", a, b, outcome.detail)
        for answer in (a, b):
            self._timeouts_by_answer[answer] = self._timeouts_by_answer.get(answer, 0) + 1
            if self._is_hanging(answer) and answer[:200] not in self.stats.hanging:
                self.stats.hanging.append(answer[:200])


def _answers_of(pairs: Sequence[tuple[str, str]]) -> set[str]:
    return {answer for pair in pairs for answer in pair}


def _pairs(group: Sequence[str]) -> list[tuple[str, str]]:
    return [(group[i], group[j]) for i in range(len(group)) for j in range(i + 1, len(group))]
