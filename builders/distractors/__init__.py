"""Distractor pools from real models' wrong answers (Zhang et al., 2024).

* :mod:`.pool`: the generic pool (``Candidate``, ``Pool``, ``Equivalence``, ``build_pool``, the report);
* :mod:`.predictions`: reading predictions (lm-evaluation-harness sample logs, plain JSON lines);
* :mod:`.generate`: asking OpenAI-compatible endpoints for predictions with the standard few-shot prompts;
* :mod:`.gsm8k` and :mod:`.math_answers`: answer extraction and equivalence for GSM8K and MATH;
* :mod:`.workers`: worker processes with a hard time limit per task (math-verify can hang);
* :mod:`.mc`: turning pools into multiple-choice sets, shared by the builders.
"""

from .pool import Candidate, Equivalence, Pool, build_pool, pool_report, pool_rows, summarize_pools

__all__ = ["Candidate", "Equivalence", "Pool", "build_pool", "pool_report", "pool_rows", "summarize_pools"]
