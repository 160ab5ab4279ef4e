"""MATH-MC's invariants, checked on the release as built: the kernel's (one option equivalent to the gold, and it is
the answer; no two options equivalent; every distractor from its pool), judged with the builder's equivalence;
then plain math-verify about every pair of options (:mod:`.plain`), the options' form with plain regular
expressions (:mod:`.option_checks`), and no released key that a model consensus contradicts."""

from __future__ import annotations

from typing import Mapping

from builders.core.build.result import Check
from builders.from_predictions import consensus
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import Pool, pool_rows

from .equivalence import MathEquivalence
from .option_checks import option_form_checks
from .plain import one_correct_option_check


def checks(golds: Mapping[str, str], pools: Mapping[str, Pool], equivalence: MathEquivalence, *, timeout: float,
           keep_suspect_keys: bool) -> list[Check]:
    """``golds``: the gold of every item kept by the gold step, by id; ``equivalence``: the builder's, whose
    ``same`` the kernel's checks ask and whose workers (with the parses they hold) plain math-verify uses."""
    return [*mc.make_checks(golds, equivalence.same, pools),
            one_correct_option_check(timeout=max(10.0, timeout), pool=equivalence.pool),
            *option_form_checks(),
            *([] if keep_suspect_keys else [consensus.no_suspect_check(pool_rows(pools.values()))])]
