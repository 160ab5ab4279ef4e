"""Imported once in the worker pools' fork server (``preload``): one math-verify comparison there loads
sympy's lazily imported machinery, so that every worker forked from it (and every worker restarted after a
timeout) starts warm instead of spending its first seconds of a hard time limit on imports."""

from math_verify import parse, verify

verify(parse("$odd$"), parse(r"$\frac{1}{2}, x = 3$"), timeout_seconds=30)
verify(parse(r"$\begin{pmatrix} 1 \\ 2 \end{pmatrix}$"), parse("$[0, 1)$"), timeout_seconds=30)
