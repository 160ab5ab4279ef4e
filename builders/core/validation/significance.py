"""When a shortcut's score says something: beyond sampling noise, by a practical margin, not the source's own.

The shortcut audit's listed rules (:mod:`.audit`) and its choices-only model (:mod:`.adversary`) are judged by the
same rules, here, so that the two cannot drift apart: a one-sided binomial test at :data:`WARN_P_VALUE` for the
whole family of rows (Bonferroni), a margin over chance of :data:`MIN_MARGIN` points or :data:`MIN_RATIO` times
chance, a row too small to judge, and a cue inherited from an unchanged source.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

MIN_MARGIN = 0.05  # a shortcut worth a warning: at least 5 points above chance ...
MIN_RATIO = 1.5  # ... or at least 1.5 times chance, whichever is smaller (a 10-option release: 15% against 10%)
WARN_P_VALUE = 0.01
TOO_SMALL_MARGIN = 0.20  # a row that could not warn on a rule this far above chance is too small to judge


def binomial_p_value(correct: int, n: int, chance: float) -> float:
    """How likely guessing at ``chance`` gets ``correct`` of ``n`` or more right (one-sided binomial)."""
    from scipy.stats import binom

    return float(binom.sf(correct - 1, n, min(max(chance, 0.0), 1.0))) if n else 1.0


# The tails of the binomial in closed form (summed in log space) decide a warning without scipy.stats (a second
# of imports, where nothing else of a build loads it) wherever they are farther than this from the level;
# nearer, scipy's tail decides, so that every verdict is scipy's. The closed form is within 1e-9 of it (relative)
# wherever the tail is above 1e-100, far below any level a family of rows divides 0.01 into.
CLOSE_TO_THE_LEVEL = 1e-6


def binomial_tails(n: int, chance: float) -> np.ndarray:
    """P(X >= k) for X ~ Binomial(n, chance) and every k in 0..n, from the log probabilities of every count (the
    ratios of successive ones, accumulated) summed from the top."""
    p = min(max(chance, 0.0), 1.0)
    counts = np.arange(n + 1, dtype=float)
    if p in (0.0, 1.0):
        return (counts <= n * p).astype(float)
    steps = np.log((n - counts[:-1]) / (counts[:-1] + 1)) + (math.log(p) - math.log1p(-p))
    log_pmf = n * math.log1p(-p) + np.concatenate(([0.0], np.cumsum(steps)))
    return np.exp(np.logaddexp.accumulate(log_pmf[::-1])[::-1])


def _near_the_level(p_values: np.ndarray, tests: int) -> bool:
    return bool(np.any(np.abs(p_values * tests - WARN_P_VALUE) <= CLOSE_TO_THE_LEVEL * WARN_P_VALUE))


def significantly_above_chance(accuracy: float, chance: float, n: int, tests: int) -> bool:
    """Guessing at chance scores ``accuracy`` over ``n`` items with a one-sided binomial p below
    :data:`WARN_P_VALUE`, Bonferroni-corrected over the ``tests`` rows of the family (rules or adversary rows)."""
    correct = round(accuracy * n)
    if not n or correct <= 0:
        return tests < WARN_P_VALUE  # a p-value of 1
    if correct > n:
        return True  # a p-value of 0: no count is that high
    p_value = _tails(n, chance)[correct:correct + 1]
    if _near_the_level(p_value, tests):
        return binomial_p_value(correct, n, chance) * tests < WARN_P_VALUE
    return bool(p_value[0] * tests < WARN_P_VALUE)


@lru_cache(maxsize=4096)
def _tails(n: int, chance: float) -> np.ndarray:
    tails = binomial_tails(n, chance)
    tails.flags.writeable = False  # shared by every caller of the same n and chance
    return tails


def practically_large(accuracy: float, chance: float) -> bool:
    """Whether a rule is far enough above chance to matter: :data:`MIN_MARGIN` points or :data:`MIN_RATIO`
    times chance, whichever is smaller (so a 10-option release is held to the same relative standard)."""
    return accuracy - chance >= min(MIN_MARGIN, (MIN_RATIO - 1) * chance) - 1e-12


@lru_cache(maxsize=4096)
def detectable_margin(n: int, chance: float, tests: int) -> float | None:
    """The smallest margin above chance that would warn on ``n`` items (None: not even a perfect score would)."""
    if n == 0:
        return None
    correct = np.arange(n + 1)
    p_values = _tails(n, chance) * tests
    if _near_the_level(_tails(n, chance), tests):
        from scipy.stats import binom

        p_values = binom.sf(correct - 1, n, min(max(chance, 0.0), 1.0)) * tests
    # practically_large over every score at once, the same comparison of the same floats
    large = correct / n - chance >= min(MIN_MARGIN, (MIN_RATIO - 1) * chance) - 1e-12
    warnable = np.flatnonzero((p_values < WARN_P_VALUE) & large)
    return int(warnable[0]) / n - chance if len(warnable) else None


def too_small(n: int, chance: float, tests: int) -> bool:
    """Whether a rule :data:`TOO_SMALL_MARGIN` above chance could go unseen on ``n`` items."""
    margin = detectable_margin(n, chance, tests)
    return margin is None or margin > TOO_SMALL_MARGIN


def status(warns: bool, inherent: str | None, small: bool) -> str:
    if warns:
        return "WARNING"
    if inherent:
        return f"inherent: {inherent}"
    return "too few items to judge" if small else "ok"


INHERITED = "inherited from the source"


def inherit_from_source(rows: Sequence, unchanged_config: str | None, rule: Callable, scored: Callable) -> list:
    """Rows (rule or choices-only model) marked inherent when the cue is the source's: on ``unchanged_config`` (the
    source unchanged) a row that would warn is the source's own cue, and a row of another config (same rule, same
    split) whose margin over chance is not larger than that one's beyond sampling noise inherits it. A config that
    adds to the cue still warns. The reason carries the source row's figures. ``scored``: a row's item count."""
    if unchanged_config is None:
        return list(rows)
    source = {(row.split, rule(row)): row for row in rows if row.config == unchanged_config and row.warns}
    marked = []
    for row in rows:
        own = source.get((row.split, rule(row)))
        if own is not None and row.inherent is None and not _adds_to(row, own, scored):
            where = ("the source's own options carry it" if row is own else
                     f"`{unchanged_config}` (the source unchanged) scores {own.accuracy:.1%} against chance {own.chance:.1%}")
            row = replace(row, inherent=f"{INHERITED}: {where}")
        marked.append(row)
    return marked


def _adds_to(row, own, scored: Callable) -> bool:
    """Whether ``row`` beats chance by more than ``own`` does, beyond noise (one-sided two-proportion z-test at
    :data:`WARN_P_VALUE`)."""
    n, m = scored(row), scored(own)
    pooled = (row.accuracy * n + own.accuracy * m) / (n + m)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / n + 1 / m))
    excess = (row.accuracy - row.chance) - (own.accuracy - own.chance)
    return excess > 0 and (spread == 0 or excess / spread > ONE_SIDED_Z)


ONE_SIDED_Z = 2.326348  # the one-sided normal quantile of WARN_P_VALUE


THRESHOLD_WORDS = (f"beyond sampling noise (one-sided binomial p < {WARN_P_VALUE} over the whole audit, "
                   f"Bonferroni-corrected) and by at least {MIN_MARGIN * 100:.0f} points or {MIN_RATIO:g} times chance, "
                   f"whichever is smaller")


# ---- how a warning names its rows (the rule audit's and the choices-only model's) ----------------------------


def where(rows: Sequence[Any]) -> str:
    """The configs and split of a warning's rows: ``set_2/test``, or ``test of default, set_0, set_3``."""
    if len(rows) == 1:
        return f"{rows[0].config}/{rows[0].split}"
    return f"{rows[0].split} of {', '.join(r.config for r in rows)}"


def spread(values: Sequence[float], spec: str) -> str:
    """A figure of one or several rows: ``51.7%``, or ``60.6%–66.7%``."""
    low, high = min(values), max(values)
    return format(low, spec) if format(low, spec) == format(high, spec) else f"{format(low, spec)}–{format(high, spec)}"
