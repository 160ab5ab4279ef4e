"""The sentence embeddings of builders/core/runtime/embeddings.py: one vector per (model, text), the same bytes
however it was computed, cached once for every build and every builder (with the packaged all-MiniLM-L6-v2)."""

import sys
from pathlib import Path

import numpy as np
import pytest
from sample_releases import EMBEDDER_GROUP

from builders.contrast_sets import builder as contrast_sets
from builders.contrast_sets.mining import embedding_cache_folder
from builders.core.llm.endpoint import DEFAULT_CACHE_DIR as LLM_CACHE_DIR
from builders.core.runtime import embeddings
from builders.core.runtime.cache import cache_folder
from builders.mmlu_pro_plus.similarity import SimilarityScorer

pytestmark = EMBEDDER_GROUP  # its tests embed texts

# One-token words (a batch of one such text alone takes another kernel path), short phrases, a long sentence,
# and a text longer than the model reads (it is truncated).
TEXTS = ["gas", "water", "nine", "9", "the sun", "solar energy", "liquid into a gas", "27°C", "0°C",
         "Energy for the cell is produced by the mitochondria", "a fall in the quantity demanded at every price",
         "The defendant should be acquitted because the evidence was obtained without a warrant", "",
         " ".join(["word"] * 400)]


@pytest.mark.slow  # loads the embedder: 7 CPU-seconds
def test_a_vector_is_the_same_bytes_alone_among_others_and_in_any_batching():
    embedder = embeddings.resolve_embedder(None)
    no_cache = embeddings.EmbeddingCache(None, embedder)
    together, _ = embeddings.embed_texts(TEXTS, embedder, no_cache)
    alone = np.stack([embeddings.embed_texts([text], embedder, no_cache)[0][0] for text in TEXTS])
    order = np.random.default_rng(0).permutation(len(TEXTS))
    shuffled, _ = embeddings.embed_texts([TEXTS[i] for i in order], embedder, no_cache,
                                         embeddings.Encoding(max_texts=2, max_tokens=8))
    assert together.dtype == np.float32 and np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-6)
    assert together.tobytes() == alone.tobytes() == shuffled[np.argsort(order)].tobytes()


@pytest.mark.slow
def test_texts_are_batched_by_their_exact_token_length():
    model = embeddings._load_model(embeddings.resolve_embedder(None))
    lengths = embeddings._token_lengths(model, TEXTS)
    expected = [len(ids) for ids in model.tokenizer(TEXTS, truncation=True, max_length=model.max_seq_length)["input_ids"]]
    assert lengths.tolist() == expected and lengths[-1] == model.max_seq_length


def test_a_second_builder_embeds_only_the_texts_no_build_embedded_before(tmp_path: Path):
    # The two builders' default caches are one folder, as are their --cache-dir forms: DIR/embeddings.
    assert contrast_sets.Options.__dataclass_fields__["cache_dir"].default == LLM_CACHE_DIR
    assert embedding_cache_folder(LLM_CACHE_DIR) == cache_folder(LLM_CACHE_DIR) / "embeddings"
    assert embedding_cache_folder(str(tmp_path)) == tmp_path / "embeddings"
    embedder = embeddings.resolve_embedder(None)
    first, _ = embeddings.embed_texts(TEXTS[:6], embedder, embeddings.EmbeddingCache(tmp_path / "embeddings", embedder))
    before = embeddings.COUNTS["embedded"]
    scorer = SimilarityScorer(None, tmp_path)  # MMLU-Pro+'s similarity check, on the cache root
    scores = scorer.scores([(TEXTS[0], TEXTS[1]), (TEXTS[4], TEXTS[6])])
    assert embeddings.COUNTS["embedded"] - before == 1 and scorer.computed == 1  # only TEXTS[6] was new
    assert scores[0] == round(float(first[0] @ first[1]), 4)


def test_loading_the_embedder_is_said_before_it_starts_and_sentence_transformers_says_nothing(caplog):
    """MMLU-Pro+ and contrast sets spent about 50 s loading torch and the embedder with no line saying so, then
    sentence-transformers logged "No device provided, using cpu" at INFO."""
    import logging

    embedder = embeddings.resolve_embedder(None)
    embeddings._load_model.cache_clear()  # as in a new process: the model is not loaded yet
    what = "the embedder" if "torch" in sys.modules else "torch and the embedder"  # another test may have loaded it
    with caplog.at_level(logging.INFO):
        embeddings.embed_texts(TEXTS[:3], embedder, embeddings.EmbeddingCache(None, embedder))
        embeddings.embed_texts(TEXTS[3:5], embedder, embeddings.EmbeddingCache(None, embedder))
    lines = [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO]
    loading = [message for name, message in lines if message.startswith("loading ")]
    assert loading == [f"loading {what} {embedder.id} to embed 3 texts"]  # once: the second call finds it loaded
    assert lines[0] == ("builders.core.runtime.embeddings", loading[0])  # before anything the load logs
    assert [name for name, _ in lines if name.startswith("sentence_transformers")] == []
    assert logging.getLogger("sentence_transformers").level == logging.NOTSET  # kept quiet for the load only
