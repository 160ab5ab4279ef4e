"""GSM-MC: GSM8K as multiple choice, with real models' wrong answers as distractors.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". The gold is
the ``#### N`` line of GSM8K's ``answer``. Models' predictions (read from files and/or generated on an
OpenAI-compatible endpoint with the 8-shot chain-of-thought prompt) give one answer each, extracted
and normalised as a number; the distinct wrong numbers form the question's pool. Each of K sets draws
N-1 of them and shuffles the options. ``--distractors random`` is the paper's ablation: random numbers
near the gold instead of models' answers. Wrong answers that are the gold in another unit or rounded are left
out (counted in ``left_out``); items whose key most models contradict are ``suspect_key``
(:mod:`builders.from_predictions.consensus`). ``--benchmark gsm8k_platinum`` reads GSM8K-Platinum, with
predictions made on GSM8K matched by question text.

    python -m builders.gsm_mc --source ../shared/data/gsm8k --predictions ../shared/data/predictions/gsm8k_test.jsonl --output out/

The parts: :mod:`.benchmarks` (the sources), :mod:`.answers` (numbers, units, random distractors),
:mod:`.prompts`, :mod:`.transform` (the steps), :mod:`.checks`, :mod:`.card_statistics`, :mod:`.tasks` (lm-eval),
:mod:`.evaluation`; this module is the builder: its options and its build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.errors import UserError
from builders.core.options.declare import option, with_default
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.options import BuildOptions
from builders.core.pipeline.steps import Run
from builders.core.sources.loading import LoadedSource
from builders.from_predictions import sets as mc
from builders.from_predictions.options import ConsensusOptions, NumericPredictionOptions
from builders.from_predictions.pools import pool_report

from .answers import NumericEquivalence
from .benchmarks import GSM8K, GSM8K_PLATINUM, NAME
from .card_statistics import card_context, statistics
from .checks import checks, float_value
from .evaluation import evaluation_table
from .tasks import lm_eval_tasks
from .transform import steps


@dataclass(frozen=True, kw_only=True)
class Options(NumericPredictionOptions, ConsensusOptions):
    """GSM-MC's options (the LLM endpoint is ``--generate-with``'s)."""

    GROUP: ClassVar[str] = "GSM-MC distractors"

    splits: tuple[str, ...] | None = with_default(BuildOptions, "splits", ("test",))
    keep_unit_multiples: bool = option(False, help="keep distractors that equal the gold times or divided by 100, "
                                                   "1000, 60 or a conversion between units the question names (7 "
                                                   "days per week, 12 per dozen, 16 ounces per pound): the gold in "
                                                   "another unit; they are left out by default")
    gsm8k_questions: str | None = option(None, metavar="SPEC",
                                         help="with --benchmark gsm8k_platinum: the GSM8K copy whose test rows the "
                                              "predictions' question_index names (default: openai/gsm8k:main); a "
                                              "prediction is matched to GSM8K-Platinum by that row's question text")

    def check(self) -> None:
        if self.gsm8k_questions and self.benchmark != GSM8K_PLATINUM.name:
            raise UserError("--gsm8k-questions is for --benchmark gsm8k_platinum (predictions made on GSM8K)")

    @property
    def title_suffix(self) -> str:
        return " (random distractors)" if self.distractors == "random" else ""


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    equivalence = NumericEquivalence()
    pools, made_by = steps(source, options, equivalence, float_value)
    configs = run.make(mc.config_names(options.sets), made_by)
    golds = {item.id: item.gold for item in source.records()}
    return Release(
        metadata_features={name: {**mc.METADATA_FEATURES, **source.benchmark.metadata_features} for name in configs},
        checks=checks(golds, pools.pools if pools else None, equivalence.equal, draw=options.draw,
                      keep_unit_multiples=options.keep_unit_multiples, keep_suspect_keys=options.keep_suspect_keys),
        statistics=statistics(pools, configs, options),
        extra_files={"pools.jsonl": pool_report(pools.pools.values()).encode()} if pools is not None else {},
        card_context=card_context(options, pools.collected if pools else None, configs),
        lm_eval_tasks=lm_eval_tasks(configs),
    )


BUILDER = Builder(name=NAME, title="GSM-MC{options.title_suffix}", description=__doc__.split("\n\n")[0],
                  citation=mc.PAPER_CITATION, benchmarks=[GSM8K, GSM8K_PLATINUM], options=Options, build=build,
                  default_config="default", evaluation_table=evaluation_table)
