"""The argparse types of the options' ranges: one option's own bounds, checked as it is parsed.

Range checks of a single option are argparse types, so that the command line, a ``--config`` file and the Python
API refuse a bad value the same way (a builder's ``check_arguments`` keeps the rules between options). They
depend on nothing else of mcqforge: the CLI, the LLM client and every builder declare their options with them.
"""

from __future__ import annotations

import argparse
import math
import threading
from typing import Callable


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``low`` (and at most ``high``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {value}")
        return value

    return parse


def number(low: float, high: float = math.inf, *, low_included: bool = False,
           high_included: bool = True) -> Callable[[str], float]:
    """An argparse type: a finite number above ``low`` and at most ``high`` (the ``*_included`` flags say
    whether each bound itself is allowed)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        above_low = value >= low if low_included else value > low
        below_high = value <= high if high_included else value < high
        if not (math.isfinite(value) and above_low and below_high):
            bounds = f"at least {low:g}" if low_included else f"above {low:g}"
            if high != math.inf:
                bounds += f" and {'at most' if high_included else 'below'} {high:g}"
            raise argparse.ArgumentTypeError(f"must be a finite number {bounds}, got {text}")
        return value

    return parse


positive_int = whole_number(1)  # workers, tokens, batch sizes, counts
nonnegative_int = whole_number(0)  # shots, retries, characters of slack
positive_float = number(0)  # ratios, epochs, rates (a timeout is `seconds`)
# The longest wait a timeout option takes: a day, and never beyond what the platform's waits take
# (threading.TIMEOUT_MAX; a larger value fails every wait as an overflow, blamed on whatever was waited for).
MAX_TIMEOUT_S = min(86_400.0, threading.TIMEOUT_MAX)
seconds = number(0, MAX_TIMEOUT_S)  # every timeout option
share = number(0, 1, low_included=True)  # [0, 1]: shares and probabilities
unit_interval = number(0, 1)  # (0, 1]: similarity cut-offs, recall targets


def share_or_count(text: str) -> float | int:
    """An argparse type, lm-eval's ``--limit``: a count of items per task, or below 1.0 a share of each task's."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if 0 < value < 1:
        return value
    if value >= 1 and value.is_integer():
        return int(value)
    raise argparse.ArgumentTypeError(f"must be a count of at least 1 or a share between 0 and 1, got {text}")
