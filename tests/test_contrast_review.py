"""The contrast pairs queued for a person to validate: every pair of a release built without a judge (the screen's
flags with the screen's reason, the others as not validated), and with a judge the pairs it kept that the screen
flags; each queued pair is two entries of ``review.jsonl``, one per question."""

from __future__ import annotations

import json
from collections import Counter

from sample_releases import EMBEDDER_GROUP

from builders.contrast_sets.review import NOT_VALIDATED, queued_pairs, review_queue
from builders.contrast_sets.transform import ContrastPair, pair_id
from builders.contrast_sets.validation import TWO_ANSWERS, PairVerdict, Validation
from builders.core.items.record import MCQRecord
from builders.core.llm.correct_options import Judgement


def record(rid: str, question: str, choices: tuple[str, ...]) -> MCQRecord:
    return MCQRecord(id=rid, question=question, choices=choices, answer=0, source="s", source_config="c",
                     source_split="test", source_index=int(rid[1:]))


def pair(first: MCQRecord, second: MCQRecord, golds_similarity: float) -> ContrastPair:
    return ContrastPair(pair_id(first.id, second.id), first, second, 0.9, 0.9, golds_similarity,
                        first.choices[1], second.choices[1], 2)


# p0: containment ("gas" / "gases"); p1: near-synonyms by the embedder's similarity; p2 and p3: not flagged
PAIRS = [
    pair(record("q0", "What state of matter is steam?", ("gas", "gases")),
         record("q1", "What do fizzy drinks release when opened?", ("gases", "gas")), 0.9),
    pair(record("q2", "What falls from clouds on a wet day?", ("rain", "precipitation")),
         record("q3", "What does a rain gauge measure?", ("precipitation", "rain")), 0.62),
    pair(record("q4", "Which planet is the hottest?", ("Venus", "Mars")),
         record("q5", "Which planet is called the red planet?", ("Mars", "Venus")), 0.41),
    pair(record("q6", "Which metal conducts electricity?", ("copper", "wood")),
         record("q7", "What is a table often made of?", ("wood", "copper")), 0.1),
]


def judged(kept: set[int]) -> Validation:
    """A judge that keeps the pairs ``kept`` (each question: its key, A) and finds two answers in the others."""
    verdicts = {}
    for p, contrast in enumerate(PAIRS):
        correct = frozenset({0}) if p in kept else frozenset({0, 1})
        verdicts[contrast.id] = PairVerdict(contrast.id, (contrast.first.gold, contrast.second.gold),
                                            (Judgement(correct), Judgement(correct)), None if p in kept else TWO_ANSWERS)
    return Validation("judge-model", verdicts)


def test_without_a_judge_every_pair_is_queued_the_flagged_with_the_screens_reason():
    assert [(p.id, why) for p, why in queued_pairs(PAIRS, None)] == [
        (PAIRS[0].id, "contrast_screen_containment"), (PAIRS[1].id, "contrast_screen_near_synonym"),
        (PAIRS[2].id, NOT_VALIDATED), (PAIRS[3].id, NOT_VALIDATED)]
    entries = review_queue(PAIRS, None)
    assert [(e.id, e.queued_for) for e in entries] == [
        ("q0", "contrast_screen_containment"), ("q1", "contrast_screen_containment"),
        ("q2", "contrast_screen_near_synonym"), ("q3", "contrast_screen_near_synonym"),
        ("q4", NOT_VALIDATED), ("q5", NOT_VALIDATED), ("q6", NOT_VALIDATED), ("q7", NOT_VALIDATED)]
    q3 = entries[3].to_json()
    assert q3["action"] == "" and q3["evidence"]["status"] == "kept"
    assert q3["evidence"]["partner_id"] == "q2" and q3["evidence"]["pair_options"] == ["rain", "precipitation"]
    assert q3["evidence"]["key_in_pair"] == "precipitation" and q3["evidence"]["suggestion"] == {"action": "exclude"}
    assert "suggestion" not in entries[4].to_json()["evidence"]
    assert entries[4].evidence["validated"].startswith("no:")


def test_with_a_judge_only_the_flagged_pairs_it_kept_are_queued():
    # the judge keeps p1 (flagged) and p2, p3 (not flagged) and drops p0 (flagged): only p1 is queued
    validation = judged({1, 2, 3})
    assert [(p.id, why) for p, why in queued_pairs(PAIRS, validation)] == [(PAIRS[1].id, "contrast_screen_near_synonym")]
    entries = review_queue(PAIRS, validation)
    assert [e.id for e in entries] == ["q2", "q3"]
    assert entries[0].evidence["judge"] == ("judge-model kept the pair: A for this question, A for its partner, "
                                            "options A. rain / B. precipitation")
    assert "validated" not in entries[0].evidence
    assert queued_pairs(PAIRS, judged(set())) == []


@EMBEDDER_GROUP  # may be the first to build the contrast sets' sample, which embeds texts
def test_a_release_without_a_judge_queues_all_its_pairs(sample_releases):
    out = sample_releases.release("contrast_sets")  # the sample, built with no judge, shared by the session
    entries = [json.loads(line) for line in (out / "review.jsonl").read_text().splitlines()]
    assert Counter(e["reason"] for e in entries) == {NOT_VALIDATED: 10, "contrast_screen_near_synonym": 6}
    assert len({e["evidence"]["pair_id"] for e in entries}) == 8
    assert all(e["evidence"]["status"] == "kept" for e in entries)
    excluded = {json.loads(line)["id"] for line in (out / "exclusions.jsonl").read_text().splitlines()}
    assert not excluded & {e["id"] for e in entries}  # every queued question is released
    assert (out / "review.html").read_text().count("<article ") == 16
    card = " ".join((out / "README.md").read_text().split())
    assert "**Validation: none. This release is not validated: no judge and no person read its pairs.**" in card
    assert "**All 8 of its pairs are in the review queue** (`review.jsonl`, `review.html`: both questions of each, " \
           "16 entries), for a person to validate them as the paper did." in card
    assert "it flags 3 of 8 pairs (`near_synonym` 3), which are kept, not dropped, and queued with the screen's " \
           "reason (`contrast_screen_<reason>`); the other 5 are queued as `contrast_not_validated`." in card
    assert "A judge's precision and recall, measured with `SmolLM2-135M-Instruct` on the 24 labelled pairs, each with " \
           "two questions written to fit its label (`benchmarks/contrast_judge.py`, the code and prompt of " \
           "`--validate-with`; a pair is flagged when the judge would drop it): it flags 24, 12 of them two-answer " \
           "pairs, precision 50.0% and recall 100.0%, with 48 of its 48 replies unusable (no JSON list of letters). " \
           "That is no judgement: the model never replied in the asked form" in card
