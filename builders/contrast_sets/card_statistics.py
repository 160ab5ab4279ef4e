"""The card's statistics: the contrast graph, its components, the pairs per source, the similarities of the edges
and the answer positions (the rows paired and excluded are counted in the card's outcome table,
:func:`builders.core.items.outcomes.outcome_table`), and every edge for inspection (``contrast_edges.jsonl``)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Mapping

import numpy as np

from builders.core.items.tables import Statistics, Table

from .graph import component_size_table, source_name
from .mining import Mined

PAPER_YIELD = (820, 7611)  # the paper's contrast questions, of its source questions (10.8%)


def graph_summary(rows_in: int, not_mined: Mapping[str, int], mined: Mined) -> dict:
    """The graph's figures; ``not_mined``: the items the mining step excluded, by reason."""
    with_edges = mined.matching.component_size > 1
    components = np.unique(mined.matching.component[with_edges]) if len(mined.pool) else np.empty(0)
    questions = 2 * len(mined.pairs)
    identical = mined.edges.identical(mined.pool)
    return {
        "rows_in": rows_in,
        "not_mined_duplicate_choices": not_mined.get("duplicate_choices", 0),
        "not_mined_position_dependent_gold": not_mined.get("position_dependent_gold", 0),
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
        summary[name] = {"n": int(len(values)), "min": round(float(quantiles[0]), 4),
                         "p10": round(float(quantiles[1]), 4), "median": round(float(quantiles[2]), 4),
                         "p90": round(float(quantiles[3]), 4), "max": round(float(quantiles[4]), 4),
                         "identical_text_share": round(float(identical.mean()), 4)}
    return summary


def balance(flags: dict[str, bool]) -> dict[str, int]:
    return {"total": len(flags), "at_a": sum(flags.values())}


def statistics(mined: Mined, summary: dict[str, Any], threshold: float) -> Statistics:
    per_source = Counter("+".join(sorted({source_name(p.first), source_name(p.second)})) for p in mined.released)
    pairs, random_pairs = balance(mined.first_at_a), balance(mined.random_gold_first)
    return Statistics([
        Table("Contrast graph", ("quantity", "value"), [(k.replace("_", " "), v) for k, v in summary.items()]),
        Table("Component sizes", ("component size", "components", "vertices", "vertices matched"),
              component_size_table(mined.matching, _matched_vertices(mined)),
              note="A maximum-cardinality matching is computed per component."),
        Table("Pairs per source", ("source(s) of the pair", "pairs"), sorted(per_source.items())),
        _similarity_histogram(mined, threshold),
        Table("Answer positions of the pairs", ("config", "gold at A", "of"),
              [("contrast / choices_only (first question of each pair)", pairs["at_a"], pairs["total"]),
               ("random_pairs (questions)", random_pairs["at_a"], random_pairs["total"])],
              note="Within a contrast pair the two golds sit at different positions, so exactly half of the "
                   "questions have their gold at A."),
    ])


def _matched_vertices(mined: Mined) -> np.ndarray:
    kept = mined.matching.edges
    return np.concatenate([mined.edges.first[kept], mined.edges.second[kept]]).astype(np.int64)


def _similarity_histogram(mined: Mined, threshold: float) -> Table:
    bins = sorted({threshold, *(b for b in (0.9, 0.95) if b > threshold), 1.0 + 1e-9})
    labels = [f"[{low:.2f}, {high:.2f})" for low, high in zip(bins[:-2], bins[1:-1], strict=True)] + \
        [f"[{bins[-2]:.2f}, 1.00]"]
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
