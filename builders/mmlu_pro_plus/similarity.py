"""How close a new TPP option is to the answer: cosine similarity of sentence embeddings, cached on disk.

A new option at or above the cut-off "merely restates" the answer and is rejected (see :mod:`.generation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from builders.core.items.record import text_hash
from builders.core.runtime.embeddings import EmbeddingCache, Encoding, embed_texts, resolve_embedder

# Cosine similarity (all-MiniLM-L6-v2) at or above which a new option "merely restates" the answer.
# On CALIBRATION_PAIRS simple rewordings score 0.87-0.99 and acceptable alternatives 0.36-0.80.
DEFAULT_SIMILARITY_CUTOFF = 0.85
CALIBRATION_PAIRS = {
    "restatement": [
        ("The mitochondria produce energy for the cell", "Energy for the cell is produced by the mitochondria"),
        ("Shareholders, Care and Skill, Diligence", "Shareholders, Diligence, Care and Skill"),
        ("decrease in demand", "reduction in demand"),
        ("It violates the Fourth Amendment", "It breaches the Fourth Amendment"),
        ("Paris", "Paris, France"),
        ("9", "nine"),
    ],
    "acceptable": [
        ("9", "36/4"),
        ("1/4", "25%"),
        ("12 m/s", "43.2 km/h"),
        ("Increased blood pressure", "Hypertension"),
        ("George Washington", "The first president of the United States"),
        ("decrease in demand", "a fall in the quantity demanded at every price"),
        ("The defendant should be acquitted", "The defendant is not guilty"),
        ("The mitochondria produce energy for the cell", "The mitochondria are the powerhouse of the cell"),
    ],
}


class SimilarityScorer:
    """Cosine similarity of (answer, new option) pairs, from sentence embeddings cached on disk per text.

    The model is loaded only when the cache misses a text, so a re-run with a warm cache never loads it.
    Similarities are rounded to 4 decimals, so that the cut-off decision and the stored value are stable.
    """

    def __init__(self, embedder: str | None, cache_root: Path | None, batch_size: int = 64) -> None:
        self.embedder = resolve_embedder(embedder)
        self.cache = EmbeddingCache(cache_root / "embeddings" if cache_root else None, self.embedder)
        self.encoding = Encoding(max_texts=batch_size)
        self.computed = 0  # pairs scored with at least one freshly embedded text

    @property
    def id(self) -> str:
        """The card's name for the model: a Hub id or a folder name, never a machine's path."""
        return self.embedder.id

    @property
    def revision(self) -> str:
        return self.embedder.revision

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        # Sorted distinct texts: which texts share a batch, and so each vector, does not depend on the pairs' order.
        texts = sorted({text for pair in pairs for text in pair})
        fresh = dict(zip(texts, ~self.cache.contains([text_hash(text) for text in texts]), strict=True))
        vectors, _ = embed_texts(texts, self.embedder, self.cache, self.encoding)
        row = {text: i for i, text in enumerate(texts)}
        self.computed += sum(bool(fresh[x] or fresh[y]) for x, y in dict.fromkeys(pairs))
        return [round(float(vectors[row[x]] @ vectors[row[y]]), 4) for x, y in pairs]
