"""What every answer extraction shares: braces matched in one pass, and the longest output read.

Model outputs are untrusted and read in the parent process, outside any time limit, so extraction must be
linear in the output's length: :func:`brace_pairs` matches every brace of a text in one left-to-right
pass (a stack), so that finding the content of each of k ``\\boxed{`` costs O(n + k), not O(n * k) as slicing
the rest of the text per box did. Outputs longer than :data:`MAX_OUTPUT_CHARS` are not read at all: they
count as invalid answers of their model, with the reason ``output_too_long``.
"""

from __future__ import annotations

import re

# 3x the longest real output of the shared GSM8K and MATH predictions (30,776 characters, a ToRA trajectory).
MAX_OUTPUT_CHARS = 100_000
TOO_LONG = "output_too_long"
# A boxed answer longer than this is not one answer (the longest boxed gold of MATH test has 81 characters);
# skipping such boxes keeps the contents read from nested boxes linear in the output's length too.
MAX_BOXED_CHARS = 1_000
_BRACES = re.compile(r"[{}]")
_ESCAPED_BRACES = re.compile(r"\\.|[{}]", re.DOTALL)


def brace_pairs(text: str, start: int = 0, escapes: bool = False) -> dict[int, int]:
    """Index of every ``{`` from ``start`` on -> index of its matching ``}`` (unmatched ones are absent).
    With ``escapes``, a brace right after a backslash (``\\{``) is text, not a brace."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    for match in (_ESCAPED_BRACES if escapes else _BRACES).finditer(text, start):
        char = match.group()
        if char == "{":
            stack.append(match.start())
        elif char == "}" and stack:
            pairs[stack.pop()] = match.start()
    return pairs
