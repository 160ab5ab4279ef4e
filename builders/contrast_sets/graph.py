"""The contrast graph of Balepur and Rudinger (2024), section 2: vertices, edges and a maximum matching.

Every item d_i = (q_i, C_i, a_i) is a vertex. An edge joins i and j when the gold a_i is equivalent to some
distractor of d_j and a_j to some distractor of d_i, the two golds being neither the same text nor equivalent.
Two texts are equivalent when the cosine similarity of their normalised sentence embeddings, rounded to
``SIMILARITY_DECIMALS`` decimals, is at least the threshold; a text is always exactly 1.0 from itself.

Rounding makes every decision and every stored similarity independent of how the texts were batched through
the embedding model: the same text embedded in two batch layouts moves by up to about 3e-7 in cosine, which
changed the released bytes when similarities were kept at full precision. At two decimals a value changes
only when it lies within 3e-7 of a rounding boundary: 2 of the 16 million pairwise similarities of 4,000
UnifiedQA option texts embedded in batches of 256 and of 7 (at four decimals: 790 of them).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from builders.core.items.record import MCQRecord

from .equivalence import contradicts
from .transform import SIMILARITY_DECIMALS, text_key

logger = logging.getLogger(__name__)

# Float32 block products can land a hair away from the float64 value: candidates are found with this
# margin and then every edge is decided on rounded float64 similarities.
CANDIDATE_MARGIN = 1e-2
BLOCK_ELEMENTS = 1 << 24  # similarities held at once by one block product (64 MiB of float32)
GATHER_ELEMENTS = 1 << 22  # float64 values held at once when re-scoring candidate edges
WEIGHT_SCALE = 10 ** SIMILARITY_DECIMALS
VETO_FLOOR = 0.5  # the lowest threshold calibration considers: below it no text pair can be an equivalence  # tie-break weights as integers: networkx's blossom is exact on integers


def rounded(similarity: np.ndarray) -> np.ndarray:
    """Similarities as every decision and output uses them: float64, rounded to ``SIMILARITY_DECIMALS``."""
    return np.round(np.asarray(similarity, dtype=np.float64), SIMILARITY_DECIMALS)


# ---- the graph's vertices --------------------------------------------------------------------------


@dataclass
class CandidatePool:
    """The mined items as arrays: one row per vertex, sorted by id so that input order does not matter."""

    records: list[MCQRecord]
    texts: list[str]  # distinct normalised option texts: the rows of the embedding matrix
    gold: np.ndarray  # (n,) text index of each vertex's gold
    distractors: np.ndarray  # (n, k) text indices of its distractors; -1 pads
    block: np.ndarray  # (n,) vertices pair only within a block (a split and/or a source)
    question: np.ndarray  # (n,) index of the normalised question: a question never pairs with its duplicate

    def __len__(self) -> int:
        return len(self.records)


def source_name(record: MCQRecord) -> str:
    """The source a record comes from: a UnifiedQA sub-source or MMLU-Redux subject, else the benchmark's config."""
    return record.source_config


def make_pool(records: Sequence[MCQRecord], cross_source: bool, cross_split: bool) -> CandidatePool:
    records = sorted(records, key=lambda r: r.id)
    text_index: dict[str, int] = {}
    question_index: dict[str, int] = {}
    block_index: dict[tuple[str, str], int] = {}
    width = max((len(r.choices) - 1 for r in records), default=1)
    gold = np.empty(len(records), dtype=np.int64)
    distractors = np.full((len(records), max(width, 1)), -1, dtype=np.int64)
    block = np.empty(len(records), dtype=np.int64)
    question = np.empty(len(records), dtype=np.int64)
    for v, record in enumerate(records):
        keys = [text_index.setdefault(text_key(c), len(text_index)) for c in record.choices]
        gold[v] = keys[record.answer]
        others = keys[: record.answer] + keys[record.answer + 1:]
        distractors[v, : len(others)] = others
        block_key = ("" if cross_split else record.source_split, "" if cross_source else source_name(record))
        block[v] = block_index.setdefault(block_key, len(block_index))
        question[v] = question_index.setdefault(text_key(record.question), len(question_index))
    return CandidatePool(list(records), list(text_index), gold, distractors, block, question)


# ---- edges: blocked matrix products, never a loop over pairs ----------------------------------------


@dataclass
class Edges:
    """Undirected edges (first < second, sorted) and the similarities that justify them."""

    first: np.ndarray
    second: np.ndarray
    first_similarity: np.ndarray  # gold of first vs the closest distractor of second
    second_similarity: np.ndarray  # gold of second vs the closest distractor of first
    first_distractor: np.ndarray  # text index of first's distractor that second's gold matched
    second_distractor: np.ndarray
    golds_similarity: np.ndarray

    def __len__(self) -> int:
        return len(self.first)

    def take(self, keep: np.ndarray) -> "Edges":
        return Edges(*(getattr(self, name)[keep] for name in self.__dataclass_fields__))

    def identical(self, pool: "CandidatePool") -> np.ndarray:
        """Per edge: both equivalences are identical texts (after whitespace and case normalisation), i.e.
        each gold is literally one of the other question's distractors."""
        return (pool.gold[self.first] == self.second_distractor) & (pool.gold[self.second] == self.first_distractor)


def find_edges(pool: CandidatePool, embeddings: np.ndarray, threshold: float) -> Edges:
    """Edges need equivalence both ways, two different golds (not equivalent to each other either: the
    two questions would share their answer) and two different questions. Texts that differ in a number, a
    negation, an antonym or a direction (:mod:`.equivalence`) are never equivalent."""
    first, second = candidate_pairs(pool, embeddings, threshold - CANDIDATE_MARGIN)
    allowed = ((pool.block[first] == pool.block[second]) & (pool.gold[first] != pool.gold[second])
               & (pool.question[first] != pool.question[second]))
    first, second = first[allowed], second[allowed]
    first_similarity, first_distractor_of_second = closest_distractor(pool, embeddings, first, second)
    second_similarity, second_distractor_of_first = closest_distractor(pool, embeddings, second, first)
    golds_similarity = gold_similarity(embeddings, pool.gold[first], pool.gold[second])
    edges = Edges(first, second, first_similarity, second_similarity, second_distractor_of_first,
                  first_distractor_of_second, golds_similarity)
    golds_equivalent = (golds_similarity >= threshold) & ~vetoed(pool, pool.gold[first], pool.gold[second])
    keep = (first_similarity >= threshold) & (second_similarity >= threshold) & ~golds_equivalent
    edges = edges.take(keep)
    logger.info("graph: %d vertices, %d candidate pairs, %d edges", len(pool), len(first), len(edges))
    return edges


def candidate_pairs(pool: CandidatePool, embeddings: np.ndarray, cutoff: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertex pairs (i < j) of one block whose golds each reach ``cutoff`` with some distractor of the other.

    Vertices pair only within their block (a split and/or a source), so each block is searched on its own: the
    similar (gold text, distractor text) pairs of its distinct texts come from blocked products, and the sparse
    products gold-incidence x hits x distractor-incidence lift them to its vertices. (Over all texts at once the
    products cost about as many times more as there are blocks, for pairs the block rule then drops.)
    """
    firsts, seconds = [], []
    for members in _block_members(pool.block):
        first, second = _block_candidates(pool, embeddings, cutoff, members)
        firsts.append(members[first])
        seconds.append(members[second])
    if not firsts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    first, second = np.concatenate(firsts), np.concatenate(seconds)
    order = np.lexsort((second, first))
    return first[order], second[order]


def _block_members(block: np.ndarray) -> list[np.ndarray]:
    """The vertices of each block, in vertex order."""
    order = np.argsort(block, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(block[order])) + 1) if len(order) else []


def _block_candidates(pool: CandidatePool, embeddings: np.ndarray, cutoff: float,
                      members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`candidate_pairs` among ``members`` (positions in ``members``, first < second)."""
    n = len(members)
    block_distractors = pool.distractors[members]
    valid = block_distractors >= 0
    gold_texts, gold_columns = np.unique(pool.gold[members], return_inverse=True)
    distractor_texts, distractor_columns = np.unique(block_distractors[valid], return_inverse=True)
    if n < 2 or not len(distractor_texts):
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    rows, cols = similar_pairs(embeddings[gold_texts], embeddings[distractor_texts], cutoff)
    hits = _incidence(rows, cols, (len(gold_texts), len(distractor_texts)))
    golds = _incidence(np.arange(n), gold_columns, (n, len(gold_texts)))
    distractors = _incidence(np.nonzero(valid)[0], distractor_columns, (n, len(distractor_texts)))
    gold_near = (golds @ hits @ distractors.T).tocsr()  # [i, j] > 0: a_i is close to a distractor of j
    from scipy import sparse  # scipy and networkx load when pairs are mined, not to parse a command line

    mutual = sparse.triu(gold_near.multiply(gold_near.T), k=1).tocoo()
    return mutual.row.astype(np.int64), mutual.col.astype(np.int64)


def _incidence(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]):  # a scipy.sparse.csr_matrix
    from scipy import sparse

    return sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=shape)


def similar_pairs(left: np.ndarray, right: np.ndarray, cutoff: float) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of every left/right pair with dot product >= cutoff, a block of left rows at a time."""
    step = max(1, BLOCK_ELEMENTS // max(1, len(right)))
    rows, cols = [], []
    for start in range(0, len(left), step):
        block_rows, block_cols = np.nonzero(left[start:start + step] @ right.T >= cutoff)
        rows.append(block_rows + start)
        cols.append(block_cols)
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(cols)


def closest_distractor(pool: CandidatePool, embeddings: np.ndarray, gold_of: np.ndarray,
                       distractors_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each edge: the rounded similarity of one vertex's gold to the closest distractor of the other, and
    that distractor's text index (the first in the item's order, on ties after rounding)."""
    width = pool.distractors.shape[1]
    step = max(1, GATHER_ELEMENTS // max(1, width * embeddings.shape[1]))
    similarity = np.empty(len(gold_of), dtype=np.float64)
    text = np.empty(len(gold_of), dtype=np.int64)
    for start in range(0, len(gold_of), step):
        golds = embeddings[pool.gold[gold_of[start:start + step]]].astype(np.float64)
        options = pool.distractors[distractors_of[start:start + step]]
        vectors = embeddings[np.maximum(options, 0)].astype(np.float64)
        scores = rounded(np.einsum("cd,ckd->ck", golds, vectors))
        gold_texts = pool.gold[gold_of[start:start + step], None]
        scores[options == gold_texts] = 1.0  # a text is exactly itself
        scores[options < 0] = -np.inf
        near_rows, near_cols = np.nonzero((scores >= VETO_FLOOR) & (options != gold_texts))
        veto = vetoed(pool, gold_texts[near_rows, 0], options[near_rows, near_cols])
        scores[near_rows[veto], near_cols[veto]] = -1.0  # never the closest equivalent distractor
        best = scores.argmax(axis=1)
        rows = np.arange(len(best))
        similarity[start:start + step] = scores[rows, best]
        text[start:start + step] = options[rows, best]
    return similarity, text


def vetoed(pool: CandidatePool, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Per text pair: the texts contradict each other (:func:`.equivalence.contradicts`), so they are not
    equivalent at any similarity."""
    return np.fromiter((contradicts(pool.texts[a], pool.texts[b]) is not None for a, b in zip(left, right, strict=True)),
                       dtype=bool, count=len(left))


def gold_similarity(embeddings: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Rounded similarity of text ``left[c]`` and text ``right[c]``; exactly 1.0 for the same text."""
    if not len(left):
        return np.empty(0, dtype=np.float64)
    similarity = rounded(np.einsum("cd,cd->c", embeddings[left].astype(np.float64), embeddings[right].astype(np.float64)))
    return np.where(left == right, 1.0, similarity)


# ---- matching: maximum cardinality, per connected component ------------------------------------------


@dataclass
class Matching:
    edges: np.ndarray  # indices of the matched edges, sorted
    component: np.ndarray  # (n,) component label of every vertex
    component_size: np.ndarray  # (n,) size of the vertex's component (1: no edge)


def edge_weights(edges: Edges, tie_break: str) -> np.ndarray:
    if tie_break == "none":
        return np.ones(len(edges), dtype=np.int64)
    return np.rint((edges.first_similarity + edges.second_similarity) * WEIGHT_SCALE).astype(np.int64)


def maximum_matching(num_vertices: int, first: np.ndarray, second: np.ndarray, weights: np.ndarray) -> Matching:
    """A maximum-cardinality matching (Edmonds' blossom algorithm in networkx), of maximum total weight
    among those; each connected component is matched on its own, one-edge components directly."""
    if num_vertices == 0:
        empty = np.empty(0, dtype=np.int64)
        return Matching(empty, empty, empty)
    from scipy import sparse
    from scipy.sparse import csgraph

    graph = sparse.coo_matrix((np.ones(len(first)), (first, second)), shape=(num_vertices, num_vertices))
    _, component = csgraph.connected_components(graph, directed=False)
    edge_component = component[first]
    order = np.argsort(edge_component, kind="stable")  # the edges of each component, consecutive
    matched: list[int] = []
    for group in np.split(order, np.flatnonzero(np.diff(edge_component[order])) + 1):
        if len(group) == 1:
            matched.append(int(group[0]))
        elif len(group) > 1:
            matched.extend(_match_component(group, first, second, weights))
    return Matching(np.array(sorted(matched), dtype=np.int64), component, np.bincount(component)[component])


def _match_component(group: np.ndarray, first: np.ndarray, second: np.ndarray, weights: np.ndarray) -> list[int]:
    import networkx as nx

    graph = nx.Graph()
    for edge in group:
        graph.add_edge(int(first[edge]), int(second[edge]), weight=int(weights[edge]), edge=int(edge))
    matching = nx.max_weight_matching(graph, maxcardinality=True, weight="weight")
    return [graph.edges[u, v]["edge"] for u, v in matching]


def component_size_table(matching: Matching, matched_vertices: np.ndarray) -> list[tuple[str, int, int, int]]:
    """(size bucket, components, vertices, vertices matched) over the components with at least one edge."""
    sizes = np.bincount(matching.component)
    matched = np.bincount(matching.component[matched_vertices], minlength=len(sizes))
    rows = []
    for low, high, name in [(2, 2, "2"), (3, 3, "3"), (4, 5, "4-5"), (6, 10, "6-10"), (11, 100, "11-100"),
                            (101, np.inf, "more than 100")]:
        chosen = (sizes >= low) & (sizes <= high)
        if chosen.any():
            rows.append((name, int(chosen.sum()), int(sizes[chosen].sum()), int(matched[chosen].sum())))
    return rows
