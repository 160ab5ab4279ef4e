"""MATH-MC: MATH as multiple choice, with real models' wrong answers as distractors.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". The gold is
the last boxed expression of the solution; a solution whose boxed answers are not all equivalent is an
ambiguous gold and is excluded. Models' predictions (read from files and/or generated with the 4-shot
Minerva prompt) give one boxed answer each; math-verify, in worker processes under a hard time limit,
decides which answers are equivalent (both ways, or one surface key). Every option, the gold included, is
shown in one normal form (:func:`~builders.math_mc.forms.option_form`), so that no typesetting singles out
the gold; a wrong answer that is not of the gold's kind (:func:`~builders.math_mc.forms.kind_mismatch`) or is
the gold rounded is left out, and a gold that names lettered choices excludes its problem. The distinct wrong
answers form the question's pool, every two of them proven different; each of K sets draws N-1 of them and
shuffles the options. The validator asks plain math-verify about every pair of options again
(:mod:`builders.math_mc.plain`) and checks the options' form with plain regular expressions
(:mod:`builders.math_mc.option_checks`).

    python -m builders.math_mc --source sample    # the embedded sample and its made-up models' predictions

    python -m builders.math_mc --source ../shared/data/math --predictions ../shared/data/predictions/math_test.jsonl --output out/

The parts: :mod:`.benchmarks` (the source), :mod:`.forms` (answers and their normal form), :mod:`.equivalence`
(math-verify in workers), :mod:`.prompts`, :mod:`.transform` (the steps), :mod:`.cues` (surface form),
:mod:`.checks` (with :mod:`.plain` and :mod:`.option_checks`), :mod:`.card_statistics`, :mod:`.tasks` (lm-eval),
:mod:`.evaluation`; this module is the builder: its options and its build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.options.argtypes import positive_int, seconds
from builders.core.options.declare import option, with_default
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.options import BuildOptions
from builders.core.pipeline.steps import Run
from builders.core.sources.loading import LoadedSource
from builders.from_predictions import sets as mc
from builders.from_predictions.options import ConsensusOptions, PredictionOptions
from builders.from_predictions.pools import pool_report

from .benchmarks import EXTRA_METADATA, MATH, NAME
from .card_statistics import card_context, statistics
from .checks import checks
from .cues import FORM_CUE, FORM_CUE_MIRROR
from .equivalence import MathEquivalence
from .evaluation import evaluation_table
from .tasks import lm_eval_tasks
from .transform import Steps


@dataclass(frozen=True, kw_only=True)
class Options(PredictionOptions, ConsensusOptions):
    """MATH-MC's options (the LLM endpoint is ``--generate-with``'s)."""

    GROUP: ClassVar[str] = "MATH-MC distractors"

    splits: tuple[str, ...] | None = with_default(BuildOptions, "splits", ("test",))
    equivalence_timeout: float = option(10.0, type=seconds,
                                        help="hard wall-clock limit (seconds) of one math-verify comparison; a "
                                             "comparison that times out proves nothing, so the candidate is left out")
    equivalence_workers: int | None = option(None, type=positive_int, runtime=True, group="math-verify",
                                             help="math-verify worker processes (default: one per 1,000 answers to "
                                                  "read or pairs to verify, at most one per CPU)")


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    equivalence = MathEquivalence(options.equivalence_workers, options.equivalence_timeout)
    steps = Steps(source, options, equivalence)
    try:
        configs = run.make(mc.config_names(options.sets), steps.steps)
    except BaseException:
        equivalence.close()
        raise
    # the workers stay for the validator's plain check, which closes them
    pools = steps.pools
    tables, golds = statistics(source, steps, configs, options)
    kept = {item.id: item.gold for split_items in steps.golds.kept.values() for item in split_items}
    return Release(
        metadata_features={name: {**mc.METADATA_FEATURES, **EXTRA_METADATA} for name in configs},
        checks=checks(kept, pools.pools, equivalence, timeout=options.equivalence_timeout,
                      keep_suspect_keys=options.keep_suspect_keys),
        statistics=tables,
        extra_files={"pools.jsonl": pool_report(pools.pools.values()).encode()},
        card_context=card_context(options, pools.collected, golds, configs),
        lm_eval_tasks=lm_eval_tasks(configs),
        baselines=[FORM_CUE, FORM_CUE_MIRROR],
    )


BUILDER = Builder(name=NAME, title="MATH-MC", description=__doc__.split("\n\n")[0], citation=mc.PAPER_CITATION,
                  benchmarks=[MATH], options=Options, build=build, default_config="default",
                  evaluation_table=evaluation_table)
