"""WiCkeD: replace one uniformly chosen option with "None of the above".

Elhady, Agirre and Artetxe (2025), section 3.1. For every item that is not single-best-answer (SBA):
draw one option with the per-item generator, remove it, and add "None of the above". If the removed
option was the gold, NOTA becomes the answer; otherwise the gold keeps its text at its new index.
SBA items are copied unchanged: a BERT classifier decides (the paper), or an LLM judge asked at build
time (``--sba-judge MODEL``: the two are alternatives). Items whose options already refer to each
other ("None of the above", "Both a and c", "Option B", "All three", "The first two"), items with an option
that already means "no answer" ("None, because ...", "I have no comment.": NOTA would be a second one) and
items with duplicated options are copied unchanged too, with the reason: adding NOTA to them would be
incoherent. The paper does not skip those; the card counts them.

    python -m builders.wicked --benchmark mmlu --source ../data/mmlu --sba-classifier none --output out/

The parts: :mod:`.transform` (the per-item steps and the reasons an item is copied unchanged), :mod:`.sba`
(the SBA decision: classifier or judge), :mod:`.tasks` (the lm-eval tasks), :mod:`.card_statistics` (the card's
tables), :mod:`.checks` (the builder's invariants), :mod:`.evaluation` (the paper's table); this module is the
builder: its options and its build.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.errors import UserError
from builders.core.items.record import Value
from builders.core.llm.settings import LLMEndpoint
from builders.core.options.argtypes import positive_int, share, whole_number
from builders.core.options.declare import option
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.options import BuildOptions
from builders.core.pipeline.steps import Run
from builders.core.runtime.models import ModelToLoad
from builders.core.sources.benchmarks import BENCHMARKS, ReduxOptions
from builders.core.sources.consensus import KeyConsensusOptions
from builders.core.sources.loading import LoadedSource
from classifiers.sba_model import BATCH_SIZE, PAPER_CLASSIFIER, configured_threshold

from .card_statistics import statistics
from .checks import CHECKS
from .evaluation import evaluation_table
from .review_cues import best_answer_counts, best_answer_review
from .sba import decide_sba, near_threshold, undetected_sba
from .tasks import TaskPlan
from .transform import NAME, copied, removed_draws, skip_reason, variant_step

BENCHMARK_NAMES = ["mmlu", "mmlu_pro", "mmlu_redux", "commonsense_qa", "truthful_qa", "arc_challenge"]
MAX_VARIANTS = 1000  # each variant is a config of the release
METADATA_FEATURES = {
    "is_sba": Value("bool"),
    "sba_score": Value("float32"),
    "sba_judge": Value("string"),
    "removed_index": Value("int32"),
    "nota_index": Value("int32"),
    "nota_is_answer": Value("bool"),
    "original_answer_index": Value("int32"),
    "skip_reason": Value("string"),
}
CITATION = """@article{elhady2025wicked,
  title={{WiCkeD}: A Simple Method to Make Multiple Choice Benchmarks More Challenging},
  author={Elhady, Ahmed and Agirre, Eneko and Artetxe, Mikel},
  journal={arXiv preprint},
  year={2025}
}"""


@dataclass(frozen=True, kw_only=True)
class Options(BuildOptions, ReduxOptions, KeyConsensusOptions, LLMEndpoint):
    """WiCkeD's options (the LLM endpoint is the SBA judge's)."""

    GROUP: ClassVar[str] = "WiCkeD"

    variants: int = option(5, type=whole_number(1, MAX_VARIANTS),
                           help="number of independent WiCkeD variants (configs variant_0...)")
    sba_classifier: str = option(PAPER_CLASSIFIER, metavar="ID|PATH|none",
                                 help="SBA classifier (Hub id or local folder, e.g. the output of `classifiers.sba "
                                      "train`); 'none' treats every item as non-SBA")
    sba_threshold: float | None = option(None, type=share,
                                         help="P(SBA) at or above which an item is copied unchanged (default: the "
                                              "classifier config's, else 0.5)")
    sba_judge: str | None = option(None, metavar="MODEL",
                                   help="decide SBA with this LLM instead of the classifier: one request per distinct "
                                        "item, with the version-2 labelling rule; an item whose judgement fails is "
                                        "copied unchanged")
    nota_position: str = option("last", choices=["last", "random"],
                                help="'last' follows the paper; 'random' spreads NOTA answers over all positions")
    sba_batch_size: int = option(BATCH_SIZE, type=positive_int, runtime=True, group="SBA classifier",
                                 help="sequences per classifier forward pass (scores do not depend on it)")

    def check(self) -> None:
        if self.sba_judge and self.sba_classifier.lower() not in ("none", PAPER_CLASSIFIER.lower()):
            raise UserError("--sba-judge and --sba-classifier are alternatives: pass one of them")
        if self.sba_judge and self.sba_threshold is not None:
            raise UserError("--sba-threshold applies to the classifier, not to --sba-judge")

    def derived(self) -> Options:
        """The classifier's own threshold when ``--sba-threshold`` is unset: what the build uses and records."""
        if not self.classifies or self.sba_threshold is not None:
            return self
        return replace(self, sba_threshold=configured_threshold(self.sba_classifier))

    @property
    def classifies(self) -> bool:
        """Whether the SBA classifier decides (not the judge, not 'none')."""
        return not self.sba_judge and self.sba_classifier.lower() != "none"

    def llm_models(self) -> list[str]:
        return [self.sba_judge] if self.sba_judge else []

    def models(self) -> list[ModelToLoad]:
        if not self.classifies:
            return []
        return [ModelToLoad(self.sba_classifier, "SBA classifier",
                            "name a local model folder (the output of `python -m classifiers.sba train`), or pass "
                            "--sba-classifier none to alter every item")]


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    records = source.records()
    reasons = {r.id: skip_reason(r) for r in records}
    altered = [r for r in records if reasons[r.id] is None]
    sba = decide_sba(altered, options, source.benchmark.name)
    run.unchanged("original")
    for variant in range(options.variants):
        draws = removed_draws(altered, options.seed, variant) if options.nota_position == "last" else None
        run.make(f"variant_{variant}", [variant_step(sba, reasons, options.seed, variant, options.nota_position, draws)],
                 copy=partial(copied, sba))
    benchmark_features = dict(source.benchmark.metadata_features)
    tasks = TaskPlan.for_source(source, options.variants)
    best_answer = best_answer_review(records, run.configs)
    return Release(
        metadata_features={name: benchmark_features if name == "original" else {**benchmark_features,
                                                                                 **METADATA_FEATURES}
                           for name in run.configs},
        checks=CHECKS,
        statistics=statistics(run.configs, sba),
        card_context={"sba": sba.card, "variants": options.variants, "nota_position": options.nota_position,
                      "tasks": tasks.card(), "undetected_sba": undetected_sba(source.benchmark.name, sba, run.configs),
                      "best_answer_review": best_answer_counts(best_answer)},
        lm_eval_tasks=tasks.files,
        review=[*near_threshold(records, sba, options.sba_threshold if options.classifies else None), *best_answer],
    )


BUILDER = Builder(
    name=NAME, title="WiCkeD {benchmark}", description=__doc__.split("\n\n")[0], citation=CITATION,
    benchmarks=[BENCHMARKS[name] for name in BENCHMARK_NAMES], options=Options, build=build,
    # a shortcut the source's own options carry (MMLU-Pro's longest option) is the source's, inherited
    default_config="variant_0", unchanged_config="original", evaluation_table=evaluation_table, sample_options=("--sba-classifier", "none"),
)
