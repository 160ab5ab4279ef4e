"""The default equivalence threshold, calibrated for the embedder the builder uses.

The paper's 0.85 was set for the paper's own embedder. With all-MiniLM-L6-v2 it is far too strict: the paper's
own examples of equivalent options, "rain"/"rainfall" and "sun"/"sunlight", score 0.80 and 0.83, and 92.7% of
the edges it kept on the six UnifiedQA sources joined identical texts. :func:`calibrate` picks the threshold
from labelled option pairs instead:

- the candidates are the two-decimal values from 0.50 to 1.00 (similarities are compared at two decimals,
  see :mod:`.graph`);
- a threshold must make every one of the paper's examples an edge;
- among those, the one of highest balanced accuracy (mean of the share of equivalent pairs at or above it and
  the share of non-equivalent pairs below it) wins, the highest such threshold on ties.

``tests/test_contrast_sets.py`` writes the labelled set (option pairs in the style of the UnifiedQA sources:
paraphrases, inflections and synonyms against co-hyponyms, antonyms and near-misses), recomputes the
calibration with the packaged MiniLM and checks :data:`DEFAULT_THRESHOLD` and :data:`MEASURED` against it.

    python -m builders.contrast_sets.calibration PAIRS.jsonl [--embedder ID|PATH]

prints the calibration of another embedder on a labelled set (rows ``{"first", "second", "equivalent"}``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from .transform import SIMILARITY_DECIMALS, text_key

if TYPE_CHECKING:
    import numpy as np

PAPER_THRESHOLD = 0.85
# Balepur and Rudinger (2024): option pairs the paper gives as equivalent (section 2).
PAPER_EXAMPLES: tuple[tuple[str, str], ...] = (("rain", "rainfall"), ("sun", "sunlight"))
GRID = tuple(round(0.5 + i / 10 ** SIMILARITY_DECIMALS, SIMILARITY_DECIMALS)
             for i in range(int(0.5 * 10 ** SIMILARITY_DECIMALS) + 1))

# The calibration of the packaged all-MiniLM-L6-v2, as the test recomputes it on its labelled set.
DEFAULT_THRESHOLD = 0.78
MEASURED = {
    "embedder": "sentence-transformers/all-MiniLM-L6-v2",
    "paper_examples": {"rain / rainfall": 0.8, "sun / sunlight": 0.83},
    "equivalent_pairs": 40,
    "non_equivalent_pairs": 40,
    "recall": 0.725,  # share of the equivalent pairs at or above the threshold
    "rejection": 0.825,  # share of the non-equivalent pairs below it
    "balanced_accuracy": 0.775,
    "paper_threshold_recall": 0.425,  # the same at the paper's 0.85
    "paper_threshold_rejection": 0.925,
    "unconstrained_threshold": 0.78,  # the best threshold without the paper's examples as a constraint
}


# Replacements read one by one in full UnifiedQA builds (benchmarks/contrast_sets_precision.py): where the partner's
# gold differs from the distractor it replaces, the share that mean the same, with and without the veto of
# :mod:`.equivalence`.
MATCHER_PRECISION = {"labelled": 159, "equivalent": 122, "precision": 0.767, "before_labelled": 208,
                     "before_equivalent": 129, "before_precision": 0.62}


@dataclass(frozen=True)
class LabelledPair:
    first: str
    second: str
    equivalent: bool


@dataclass(frozen=True)
class Calibration:
    threshold: float
    unconstrained_threshold: float
    recall: float
    rejection: float
    balanced_accuracy: float
    paper_threshold_recall: float
    paper_threshold_rejection: float
    paper_examples: dict[str, float]
    similarities: tuple[float, ...]  # one per labelled pair, in order

    def summary(self, embedder_id: str, pairs: Sequence[LabelledPair]) -> dict:
        """The figures in the layout of :data:`MEASURED`."""
        equivalent = sum(p.equivalent for p in pairs)
        return {"embedder": embedder_id, "paper_examples": self.paper_examples, "equivalent_pairs": equivalent,
                "non_equivalent_pairs": len(pairs) - equivalent, "recall": self.recall, "rejection": self.rejection,
                "balanced_accuracy": self.balanced_accuracy, "paper_threshold_recall": self.paper_threshold_recall,
                "paper_threshold_rejection": self.paper_threshold_rejection,
                "unconstrained_threshold": self.unconstrained_threshold}


def read_pairs(path: str | Path) -> list[LabelledPair]:
    pairs = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            pairs.append(LabelledPair(str(row["first"]), str(row["second"]), bool(row["equivalent"])))
    return pairs


def similarities(text_pairs: Sequence[tuple[str, str]], embedder, cache) -> np.ndarray:
    """The rounded similarity of each pair of texts, as the graph computes it (texts normalised as vertices)."""
    import numpy as np

    from builders.core.runtime.embeddings import embed_texts

    from .graph import gold_similarity

    texts = sorted({text_key(t) for pair in text_pairs for t in pair})
    index = {t: i for i, t in enumerate(texts)}
    vectors, _ = embed_texts(texts, embedder, cache)
    left = np.array([index[text_key(a)] for a, _ in text_pairs], dtype=np.int64)
    right = np.array([index[text_key(b)] for _, b in text_pairs], dtype=np.int64)
    return gold_similarity(vectors, left, right)


def _rates(values: np.ndarray, labels: np.ndarray, threshold: float) -> tuple[float, float]:
    return float((values[labels] >= threshold).mean()), float((values[~labels] < threshold).mean())


def calibrate(pairs: Sequence[LabelledPair], embedder, cache) -> Calibration:
    import numpy as np

    if not any(p.equivalent for p in pairs) or all(p.equivalent for p in pairs):
        raise ValueError("the labelled set needs equivalent and non-equivalent pairs")
    values = similarities([(p.first, p.second) for p in pairs] + list(PAPER_EXAMPLES), embedder, cache)
    labelled, paper = values[: len(pairs)], values[len(pairs):]
    labels = np.array([p.equivalent for p in pairs])

    def best(candidates: Sequence[float]) -> float:
        return max(candidates, key=lambda t: (round(sum(_rates(labelled, labels, t)) / 2, 9), t))

    threshold = best([t for t in GRID if t <= paper.min()])
    recall, rejection = _rates(labelled, labels, threshold)
    paper_recall, paper_rejection = _rates(labelled, labels, PAPER_THRESHOLD)
    return Calibration(
        threshold, best(GRID), round(recall, 4), round(rejection, 4), round((recall + rejection) / 2, 4),
        round(paper_recall, 4), round(paper_rejection, 4),
        {f"{a} / {b}": float(v) for (a, b), v in zip(PAPER_EXAMPLES, paper, strict=True)}, tuple(float(v) for v in labelled))


def main(argv: Sequence[str] | None = None) -> int:
    from builders.core.pipeline.cli import ArgumentParser, RawDescriptionHelpFormatter, exit_code
    from builders.core.runtime.embeddings import EmbeddingCache, resolve_embedder

    parser = ArgumentParser(prog="python -m builders.contrast_sets.calibration", description=__doc__,
                                     formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("pairs", help="JSONL of labelled option pairs: {\"first\", \"second\", \"equivalent\"}")
    parser.add_argument("--embedder", default=None, help="as the builder's --embedder (default: packaged MiniLM)")

    def run() -> None:
        args = parser.parse_args(argv)
        pairs = read_pairs(args.pairs)
        embedder = resolve_embedder(args.embedder)
        result = calibrate(pairs, embedder, EmbeddingCache(None, embedder))
        print(json.dumps({"threshold": result.threshold, **result.summary(embedder.id, pairs)}, indent=2))

    return exit_code(run)


if __name__ == "__main__":
    raise SystemExit(main())
