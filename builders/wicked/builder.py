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

The parts: :mod:`.transform` (the per-item transform and the reasons an item is copied unchanged), :mod:`.sba`
(the SBA decision: classifier or judge), :mod:`.tasks` (the lm-eval tasks), :mod:`.card_statistics` (the card's
tables), :mod:`.checks` (the builder's invariants), :mod:`.evaluation` (the paper's table); this module is the
builder: arguments and the build.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Sequence

from builders.core.errors import UserError
from builders.core.items.record import Value
from builders.core.llm import settings as llm
from builders.core.pipeline import api, argtypes, cli
from builders.core.pipeline.build import Build, Builder
from builders.core.pipeline.models import ModelToLoad
from builders.core.pipeline.steps import Outcomes
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import LoadedSource
from classifiers.sba_model import BATCH_SIZE, PAPER_CLASSIFIER

from .card_statistics import statistics
from .checks import CHECKS
from .evaluation import evaluation_table
from .sba import SBAOptions, decide_sba, undetected_sba
from .tasks import TaskPlan
from .transform import NAME, skip_reason, variant_records

BENCHMARK_NAMES = ["mmlu", "mmlu_pro", "mmlu_redux", "commonsense_qa", "truthful_qa", "arc_challenge"]
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


MAX_VARIANTS = 1000  # each variant is a config of the release



def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("WiCkeD")
    group.add_argument("--variants", type=argtypes.whole_number(1, MAX_VARIANTS), default=5,
                       help="number of independent WiCkeD variants (configs variant_0...)")
    group.add_argument("--sba-classifier", default=PAPER_CLASSIFIER, metavar="ID|PATH|none",
                       help="SBA classifier (Hub id or local folder, e.g. the output of `classifiers.sba train`); "
                            "'none' treats every item as non-SBA")
    group.add_argument("--sba-threshold", type=argtypes.share, default=None,
                       help="P(SBA) at or above which an item is copied unchanged (default: the classifier config's, else 0.5)")
    group.add_argument("--sba-judge", metavar="MODEL", default=None,
                       help="decide SBA with this LLM instead of the classifier: one request per distinct item, with "
                            "the version-2 labelling rule; an item whose judgement fails is copied unchanged")
    group.add_argument("--nota-position", choices=["last", "random"], default="last",
                       help="'last' follows the paper; 'random' spreads NOTA answers over all positions")
    group.add_argument("--redux-keep-all", action="store_true",
                       help="mmlu_redux: keep every item, not only error_type == 'ok'")
    runtime = cli.runtime_group(parser, "SBA classifier")
    runtime.add_argument("--sba-batch-size", type=argtypes.positive_int, default=BATCH_SIZE,
                         help="sequences per classifier forward pass (scores do not depend on it)")
    llm.add_llm_arguments(cli.runtime_group(parser, "SBA judge endpoint"))


def models_to_load(options: Options) -> list[ModelToLoad]:
    if not options.sba.classifies:
        return []
    return [ModelToLoad(options.sba.classifier, "SBA classifier",
                        "name a local model folder (the output of `python -m classifiers.sba train`), or pass "
                        "--sba-classifier none to alter every item")]


def check_arguments(args: argparse.Namespace) -> None:
    if args.sba_judge and args.sba_classifier.lower() not in ("none", PAPER_CLASSIFIER.lower()):
        raise UserError("--sba-judge and --sba-classifier are alternatives: pass one of them")
    if args.sba_judge and args.sba_threshold is not None:
        raise UserError("--sba-threshold applies to the classifier, not to --sba-judge")


@dataclass(frozen=True)
class Options:
    """WiCkeD's options, made once from the parsed arguments."""

    seed: int
    variants: int
    nota_position: str  # "last" (the paper) or "random"
    sba: SBAOptions

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(seed=args.seed, variants=args.variants, nota_position=args.nota_position,
                   sba=SBAOptions.from_args(args))


def build(source: LoadedSource, options: Options) -> Build:
    originals = source.items
    all_records = [r for records in originals.values() for r in records]
    reasons = {r.id: skip_reason(r) for r in all_records}
    sba = decide_sba([r for r in all_records if reasons[r.id] is None], options.sba, source.benchmark.name)
    configs = {"original": dict(originals)}
    outcomes = Outcomes()
    for variant in range(options.variants):
        configs[f"variant_{variant}"], counted = variant_records(originals, sba, reasons, options.seed, variant,
                                                                 options.nota_position)
        if variant == 0:  # every variant alters and copies the same items (variant_records)
            outcomes = counted
    benchmark_features = dict(source.benchmark.metadata_features)
    metadata_features = {name: benchmark_features for name in configs}
    metadata_features.update({name: {**benchmark_features, **METADATA_FEATURES} for name in configs if name != "original"})
    threshold = sba.card["threshold"] if sba.card and sba.card["method"] == "classifier" else None
    tasks = TaskPlan.for_source(source, options.variants)
    undetected = undetected_sba(source.benchmark.name, sba, configs)
    return Build(
        builder=NAME,
        title=f"WiCkeD {source.benchmark.pretty_name}",
        method_citation=CITATION,
        source=source,
        params={"sba_threshold": threshold},
        configs=configs,
        metadata_features=metadata_features,
        exclusions=source.exclusions,
        outcomes=outcomes,
        checks=CHECKS,
        statistics=statistics(configs, sba),
        card_context={"sba": sba.card, "variants": options.variants, "nota_position": options.nota_position,
                      "tasks": tasks.card(), "undetected_sba": undetected},
        lm_eval_tasks=tasks.files,
        unchanged_config="original",  # a shortcut the source's own options carry (MMLU-Pro's longest option) is inherited
    )


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [BENCHMARKS[name] for name in BENCHMARK_NAMES], add_arguments,
                  build, check_arguments, llm_models=lambda options: [options.sba.judge] if options.sba.judge else [],
                  models=models_to_load, make_options=Options.from_args,
                  evaluation_table=evaluation_table)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build WiCkeD from rows in memory (see :mod:`builders.core.pipeline.api`)."""
    return api.build_dataset(BUILDER, data, **options)

