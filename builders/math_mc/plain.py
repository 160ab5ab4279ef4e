"""The validator's one-correct-option check for MATH-MC, with plain math-verify only.

It shares no decision code with the builder: no normal form, no surface key, no numeric fingerprint, no
cache of the builder's verdicts. Every pair of options of every released item (the gold among them) is
given to math-verify as written in the release, ``parse`` of ``$option$`` then ``verify`` in both
directions, in worker processes under a hard time limit (sympy can hang on an option such as
``2^{2^{40}}``). What it shares with the builder is the pure reading of a text, math-verify's parse
(:func:`.parses.parsed`, the same call either would make), and the build's workers that hold those parses. It
keeps its own verdicts in the cache (:func:`.parses.kept_map`, keyed by this module's code), never the builder's. A pair math-verify calls equal is a violation, and so is a pair it cannot compare in time:
such a pair is not shown to differ. A pair of the key and a distractor is a violation too when one of them is a
plain decimal and math-verify's value of the other, rounded to its decimals, is that decimal (``0.377`` beside
``\\frac{193}{512}``): a second correct option.
"""

from __future__ import annotations

import re
from typing import Iterable

from builders.core.build.result import Build, Check
from builders.core.runtime.workers import HardTimeoutPool

from . import parses

JUDGE = "builders.math_mc.plain:judge"  # what the build's workers run for this check's tasks
PAIRS_PER_TASK = 8
_PLAIN_DECIMAL = re.compile(r"^\s*-?[0-9]*\.([0-9]+)\s*$")


def rounds(decimal: str, parsed: list) -> bool:
    """``decimal`` is a plain decimal and the value math-verify parsed (``parsed``), rounded to its places."""
    import sympy

    match = _PLAIN_DECIMAL.match(decimal)
    if not match or not parsed or not isinstance(parsed[0], sympy.Expr) or parsed[0].free_symbols:
        return False
    try:
        value = complex(sympy.N(parsed[0], 30))
    except (TypeError, ValueError, ArithmeticError):  # zoo, nan, an expression sympy cannot evaluate
        return False
    places = len(match.group(1))
    return abs(value.imag) < 1e-12 and abs(float(decimal) - value.real) <= 0.5 * 10 ** -places * (1 + 1e-9)


def judge(task: tuple[list[tuple[str, str]], int]) -> list[tuple[bool, bool, bool]]:
    """Worker: (equal either way, a math-verify time limit fired, one is the other rounded to its decimals) per
    pair."""
    import logging

    from math_verify import verify

    pairs, soft = task
    fired = []

    class _Timeouts(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if str(record.msg).startswith("Timeout"):
                fired.append(True)

    handler = _Timeouts(logging.WARNING)
    math_verify_logger = logging.getLogger("math_verify")
    math_verify_logger.addHandler(handler)
    math_verify_logger.setLevel(logging.WARNING)
    math_verify_logger.propagate = False

    def parsed(text: str) -> list:
        # each option parsed once per worker (a key is in a pair with each of its distractors), with whether
        # math-verify's time limit fired while parsing it, which counts for every pair that option is in
        parse, parse_fired = parses.parsed(text, soft)
        if parse_fired:
            fired.append(True)
        return parse

    results = []
    try:
        for a, b in pairs:
            fired.clear()
            left, right = parsed(a), parsed(b)
            equal = bool(verify(left, right, timeout_seconds=soft)) or bool(verify(right, left, timeout_seconds=soft))
            results.append((equal, bool(fired), rounds(a, right) or rounds(b, left)))
    finally:
        math_verify_logger.removeHandler(handler)
    return results


def _in_time(task: tuple, judged: list) -> bool:
    return not any(fired for _, fired, _ in judged)


def option_pairs(build: Build) -> dict[tuple[str, str], list[tuple[str, bool]]]:
    """Each distinct unordered pair of option texts shown together, with where (config/split id i j) and whether
    one of the two is the key."""
    pairs: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for config, split, records in build.records():
        for record in records:
            choices = record.choices
            for i in range(len(choices)):
                for j in range(i + 1, len(choices)):
                    key = tuple(sorted((choices[i], choices[j])))
                    place = f"{config}/{split} {record.id}: options {i} and {j}"
                    pairs.setdefault(key, []).append((place, record.answer in (i, j)))
    return pairs


def _verdict(equal: bool, fired: bool, rounded: bool) -> str:
    return "equal" if equal else "undecided" if fired else "rounded" if rounded else "different"


def judge_pairs(pairs: list[tuple[str, str]], workers: int | None = None, timeout: float = 10.0,
                pool: HardTimeoutPool | None = None) -> dict[tuple[str, str], str]:
    """Plain math-verify's verdict per pair: "different", "equal", "undecided" (timeout, error) or "rounded"
    (different, but one is the other rounded to its decimals). ``pool``: the build's math-verify workers
    (:func:`.parses.math_verify_pool`), closed when done; else a pool of its own, of ``workers`` (by default as
    many as the pairs need, :func:`.parses.workers_for`)."""
    with pool or parses.math_verify_pool(parses.workers_for(len(pairs), workers), timeout) as pool:
        return _judged(pairs, pool, timeout)


def _judged(pairs: list[tuple[str, str]], pool: HardTimeoutPool, timeout: float) -> dict[tuple[str, str], str]:
    verdicts: dict[tuple[str, str], str] = {}
    soft = max(1, int(timeout / 2))

    def run(chunks: list[list[tuple[str, str]]]) -> list:
        # a chunk goes, where it can, to the worker that has parsed its options (each worker caches its own)
        return parses.kept_map(pool, JUDGE, [(c, soft) for c in chunks], _in_time, [timeout] * len(chunks),
                               affinity=[{o for pair in c for o in pair} for c in chunks])

    chunks = [pairs[i:i + PAIRS_PER_TASK] for i in range(0, len(pairs), PAIRS_PER_TASK)]
    retry = []
    for chunk, outcome in zip(chunks, run(chunks), strict=True):
        if outcome.ok:
            for pair, judged in zip(chunk, outcome.value, strict=True):
                verdicts[pair] = _verdict(*judged)
        else:
            retry.extend(chunk)
    for pair, outcome in zip(retry, run([[p] for p in retry]), strict=True):
        verdicts[pair] = _verdict(*outcome.value[0]) if outcome.ok else "undecided"
    return verdicts


def one_correct_option_check(workers: int | None = None, timeout: float = 10.0,
                             pool: HardTimeoutPool | None = None) -> Check:
    """``pool``: the build's math-verify workers, which this check, the last to need them, closes."""
    def violations(build: Build) -> Iterable[str]:
        shown = option_pairs(build)
        verdicts = judge_pairs(sorted(shown), workers, timeout, pool)
        for pair, places in shown.items():
            verdict = verdicts[pair]
            for place, with_key in places:
                if verdict in ("equal", "undecided") or (verdict == "rounded" and with_key):
                    yield f"{place} ({pair[0]!r}, {pair[1]!r}) are {verdict} for plain math-verify"

    return Check("plain_math_verify_distinct",
                 "plain math-verify, asked both ways, calls every pair of options of an item different (the gold "
                 "included), and no distractor is the key rounded to its decimals (or the key a distractor "
                 "rounded): exactly one correct option", violations)
