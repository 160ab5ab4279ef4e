"""The step that spans the items: embed every option text, find the edges, match, and give every mined question
its outcome: a question of each config (the pair's two questions, its original, a random pair, the choices
only), or excluded because it found no partner.

The core's runner (:class:`~builders.core.pipeline.steps.Across`) gives :meth:`PairMatcher.match` the minable items
of every split at once; it returns each of them once, the pairs' members first in the order of the pairs, and
keeps what it found (:class:`Mined`, the answer-position draws) for the card. With a judge (``--validate-with``,
:mod:`.validation`), the pairs it does not validate are dropped before the configs are made: both of their
questions are excluded from every config, with the judge's reason.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from builders.core.errors import UserError
from builders.core.items.outcomes import Exclude
from builders.core.items.record import MCQRecord
from builders.core.items.rng import item_rng
from builders.core.runtime.cache import cache_folder
from builders.core.runtime.embeddings import Embedder, EmbeddingCache, EmbeddingStats, embed_texts, resolve_embedder

from .graph import (
    CandidatePool,
    Edges,
    Matching,
    edge_weights,
    find_edges,
    gold_similarity,
    make_pool,
    maximum_matching,
    source_name,
)
from .transform import (
    NAME,
    ContrastPair,
    balanced_flags,
    contrast_records,
    member_configs,
    original_text,
    pair_id,
    random_pair_record,
)
from .validation import Validation

logger = logging.getLogger(__name__)

LENGTH_WINDOW = 25  # a random partner is one of the 2 x 25 vertices of its source nearest in gold length


class Stopwatch:
    """Seconds per stage, logged (``stage NAME: S s``, which the benchmark reads)."""

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
    first_at_a: dict[str, bool] = field(default_factory=dict)  # per pair: the first question's gold is at A
    random_gold_first: dict[str, bool] = field(default_factory=dict)  # per question of random_pairs
    validation: Validation | None = None  # the judge's verdicts (--validate-with), None without a judge

    @property
    def released(self) -> list[ContrastPair]:
        """The pairs the release holds: the matching's, less those the judge did not validate."""
        return [p for p in self.pairs if self.validation is None or self.validation.kept(p)]


def embedding_cache_folder(cache_dir: str | None) -> Path | None:
    """The sentence embeddings' cache in the ``--cache-dir`` root: ``DIR/embeddings``, as MMLU-Pro+'s (None: no cache)."""
    root = cache_folder(cache_dir)
    return root / "embeddings" if root is not None else None


def mine(records: Sequence[MCQRecord], options: Any, stopwatch: Stopwatch) -> Mined:
    pool = make_pool(records, options.cross_source, options.cross_split)
    with stopwatch.stage("embed"):
        embedder = resolve_embedder(options.embedder, options.embed_dtype)
        embeddings, stats = embed_texts(pool.texts, embedder, EmbeddingCache(embedding_cache_folder(options.cache_dir), embedder),
                                        options.encoding)
    with stopwatch.stage("edges"):
        edges = find_edges(pool, embeddings, options.threshold)
    with stopwatch.stage("matching"):
        matching = maximum_matching(len(pool), edges.first, edges.second, edge_weights(edges, options.tie_break))
        pairs = make_pairs(pool, edges, matching)
    logger.info("matching: %d pairs, %d questions of %d vertices", len(pairs), 2 * len(pairs), len(pool))
    return Mined(pool, embeddings, edges, matching, pairs, embedder, stats)


def make_pairs(pool: CandidatePool, edges: Edges, matching: Matching) -> list[ContrastPair]:
    pairs = []
    for e in matching.edges:
        first, second = pool.records[edges.first[e]], pool.records[edges.second[e]]
        pairs.append(ContrastPair(
            pair_id(first.id, second.id), first, second, float(edges.first_similarity[e]),
            float(edges.second_similarity[e]), float(edges.golds_similarity[e]),
            original_text(first, pool.texts[edges.first_distractor[e]]),
            original_text(second, pool.texts[edges.second_distractor[e]]),
            int(matching.component_size[edges.first[e]]),
        ))
    return sorted(pairs, key=lambda p: p.first.id)


Validate = Callable[[Sequence[ContrastPair]], Validation]


class PairMatcher:
    """The matching, as the run's spanning step: ``Across("match", PairMatcher(options).match)``; ``mined`` holds
    what it found once it has run. ``validate`` (None: no judge) judges the matched pairs."""

    def __init__(self, options: Any, stopwatch: Stopwatch | None = None, validate: Validate | None = None):
        self.options = options
        self.stopwatch = stopwatch or Stopwatch()
        self.validate = validate
        self.mined: Mined | None = None

    def match(self, items: Mapping[str, Sequence[MCQRecord]]) -> dict[str, list[tuple[MCQRecord, Any]]]:
        mined = mine([record for records in items.values() for record in records], self.options, self.stopwatch)
        if not mined.pairs:
            raise UserError(f"no contrast pair among {len(mined.pool)} items ({len(mined.edges)} edges): try a larger "
                            "source, --cross-split, or a lower --threshold")
        self.mined = mined
        if self.validate is not None:
            with self.stopwatch.stage("judge"):
                mined.validation = self.validate(mined.pairs)
            if not mined.released:
                raise UserError(f"the judge validated none of the {len(mined.pairs)} contrast pairs (dropped: "
                                f"{mined.validation.card()['dropped']})")
        split_of = {id(record): split for split, records in items.items() for record in records}
        outcomes: dict[str, list[tuple[MCQRecord, Any]]] = {split: [] for split in items}
        with self.stopwatch.stage("configs"):
            mined.first_at_a = balanced_flags([p.id for p in mined.released], self.options.seed, "pair_order")
            random_rows = self._random_pairs(mined)
            for pair in mined.pairs:
                if mined.validation is not None and not mined.validation.kept(pair):
                    verdict = mined.validation.verdicts[pair.id]
                    for member, record in enumerate((pair.first, pair.second)):
                        outcomes[split_of[id(record)]].append((record, verdict.exclusion(member)))
                    continue
                cross = source_name(pair.first) != source_name(pair.second)
                made = contrast_records(pair, mined.first_at_a[pair.id], cross)
                for record, contrast in zip((pair.first, pair.second), made, strict=True):
                    outcomes[split_of[id(record)]].append(
                        (record, member_configs(record, contrast, random_rows[record.id])))
            paired = {r.id for p in mined.pairs for r in (p.first, p.second)}
            for v, record in enumerate(mined.pool.records):
                if record.id not in paired:
                    outcomes[split_of[id(record)]].append((record, unmatched(int(mined.matching.component_size[v]))))
        return outcomes

    def _random_pairs(self, mined: Mined) -> dict[str, MCQRecord]:
        """Each paired question's ``random_pairs`` record; the draws of which option is first go in ``mined``."""
        vertex_of = {r.id: v for v, r in enumerate(mined.pool.records)}
        pair_of = {r.id: p for p in mined.released for r in (p.first, p.second)}
        matched = [vertex_of[i] for i in pair_of]
        partners = random_partners(mined.pool, mined.embeddings, self.options.threshold, matched, self.options.seed)
        mined.random_gold_first = gold_first = balanced_flags(list(pair_of), self.options.seed, "random_pair_order")
        rows = {}
        for v in matched:
            record, partner = mined.pool.records[v], mined.pool.records[partners[v]]
            similarity = float(gold_similarity(mined.embeddings, mined.pool.gold[[v]], mined.pool.gold[[partners[v]]])[0])
            rows[record.id] = random_pair_record(record, partner, pair_of[record.id], gold_first[record.id], similarity)
        return rows


def unmatched(component_size: int) -> Exclude:
    """Why a mined question is in no pair: it has no edge, or the maximum matching of its component left it out."""
    if component_size == 1:
        return Exclude("no_contrast_partner")
    return Exclude("unmatched_in_maximum_matching", None, f"component of {component_size} vertices")


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


def _acceptable_gold(pool: CandidatePool, embeddings: np.ndarray, threshold: float, v: int,
                     others: np.ndarray) -> np.ndarray:
    similarity = gold_similarity(embeddings, pool.gold[others], np.full(len(others), pool.gold[v]))
    return (others != v) & (pool.gold[others] != pool.gold[v]) & (similarity < threshold)
