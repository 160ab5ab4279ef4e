"""The screen of a contrast pair's shared options: its precision and recall on the labelled pairs shipped as test
data, measured with the packaged embedder, are the figures the card states."""

from __future__ import annotations

import json
from pathlib import Path

from sample_releases import EMBEDDER_GROUP

from builders.contrast_sets.graph import rounded
from builders.contrast_sets.screen import JUDGE_MEASURED, SCREEN_MEASURED, content_stems, screen_reason
from builders.core.runtime.embeddings import EmbeddingCache, embed_texts, resolve_embedder

pytestmark = EMBEDDER_GROUP  # its tests embed texts

PAIRS = [json.loads(line) for line in
         (Path(__file__).parent / "data" / "contrast_screen_pairs.jsonl").read_text(encoding="utf-8").splitlines()]


def test_containment_is_read_on_stems_without_the_embedder():
    assert content_stems("the rivers and lakes") == {"river", "lake"}
    assert screen_reason("gas", "gases", 0.0) == "containment"
    assert screen_reason("body water", "water", 0.0) == "containment"
    assert screen_reason("Mars", "Venus", 0.0) is None
    assert screen_reason("north", "south", 0.9) is None  # antonyms: close embeddings, not two answers


def test_the_screens_precision_and_recall_on_the_labelled_pairs_are_the_cards():
    embedder = resolve_embedder(None)
    texts = sorted({text for pair in PAIRS for text in (pair["first"], pair["second"])})
    vectors, _ = embed_texts(texts, embedder, EmbeddingCache(None, embedder))
    index = {text: i for i, text in enumerate(texts)}
    flags = [screen_reason(p["first"], p["second"], float(rounded(vectors[index[p["first"]]] @ vectors[index[p["second"]]])))
             is not None for p in PAIRS]
    true_flags = sum(flag and p["two_answers"] for flag, p in zip(flags, PAIRS, strict=True))
    assert (len(PAIRS), sum(p["two_answers"] for p in PAIRS), sum(flags), true_flags) == (24, 12, 14, 10)
    assert SCREEN_MEASURED == {"pairs": 24, "two_answer_pairs": 12, "flagged": 14, "true_flags": 10,
                               "precision": true_flags / sum(flags), "recall": true_flags / 12}


def test_a_release_says_plainly_that_no_judge_validated_it(tmp_path):
    from builders import contrast_sets

    out = tmp_path / "release"
    assert contrast_sets.main(["--source", "sample", "--output", str(out), "--cache-dir", str(tmp_path / "cache"),
                               "--no-progress"]) == 0
    card = " ".join((out / "README.md").read_text().split())
    assert "**Validation: none. This release is not validated: no judge and no person read its pairs.**" in card
    assert "the screen's precision is 71.4% and its recall 83.3%" in card


def test_the_judges_measured_figures_are_those_of_the_labelled_pairs():
    """benchmarks/contrast_judge.py measured them (SmolLM2-135M-Instruct: no reply parsed, every pair flagged)."""
    m = JUDGE_MEASURED
    assert (m["pairs"], m["two_answer_pairs"], m["questions"]) == (len(PAIRS), sum(p["two_answers"] for p in PAIRS),
                                                                   2 * len(PAIRS))
    assert m["precision"] == m["true_flags"] / m["flagged"] and m["recall"] == m["true_flags"] / m["two_answer_pairs"]
    assert (m["flagged"], m["true_flags"], m["failed_replies"]) == (24, 12, 48)
