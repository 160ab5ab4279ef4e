"""The per-item parts of contrast mining: which items can be mined, and the two-option questions a matched pair
makes (the matching itself spans the items: :mod:`.mining`).

Each matched edge (i, j) yields (q_i, {a_i, a_j}, a_i) and (q_j, {a_i, a_j}, a_j): the same two options, in an
order drawn per pair, different golds. The gold is tracked by index; records are never changed in place.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from builders.core.items.outcomes import Exclude
from builders.core.items.record import MCQRecord, Value, normalize_text
from builders.core.items.referring import position_dependent_reason
from builders.core.items.rng import item_rng
from builders.core.items.twins import duplicate_option

NAME = "contrast_sets"
CONFIG_NAMES = ("contrast", "contrast_subset_original", "random_pairs", "choices_only")
CONTRAST_CONFIGS = ("contrast", "contrast_subset_original", "choices_only")
PAIR_FEATURES = {
    "pair_id": Value("string"),
    "partner_id": Value("string"),
    "pair_member": Value("int32"),
    "gold_similarity": Value("float32"),
    "partner_gold_similarity": Value("float32"),
    "golds_similarity": Value("float32"),
    "replaced_distractor": Value("string"),
    "cross_source": Value("bool"),
    "component_size": Value("int32"),
    "original_answer_index": Value("int32"),
    "original_num_choices": Value("int32"),
}
RANDOM_FEATURES = {
    "pair_id": Value("string"),
    "random_partner_id": Value("string"),
    "golds_similarity": Value("float32"),
    "original_answer_index": Value("int32"),
    "original_num_choices": Value("int32"),
}

# Similarities are compared rounded to this many decimals (:mod:`.graph` says why): a threshold has at most as many
SIMILARITY_DECIMALS = 2


def text_key(text: str) -> str:
    """Option and question texts that differ only in case or spacing are one text for the graph: one vertex
    per question, one embedding per option text."""
    return normalize_text(text).casefold()


def minable(record: MCQRecord) -> MCQRecord:
    """Items whose options repeat a text (whitespace-normalised; case matters) have no well-defined set of
    distractors, and "All of the above" or "A and B" cannot be the answer of a two-option question: such items are
    not mined, and each is excluded with its reason (a blank question is a malformed row, excluded on reading)."""
    duplicate = duplicate_option(record.choices)
    if duplicate is not None:
        raise Exclude("duplicate_choices", f"choices[{duplicate}]",
                      f"repeats an earlier option: {record.choices[duplicate]!r}")
    reason = position_dependent_reason((record.gold,))
    if reason:
        raise Exclude("position_dependent_gold", f"choices[{record.answer}]", reason)
    return record


@dataclass(frozen=True)
class ContrastPair:
    """A matched edge; ``first`` has the smaller id."""

    id: str
    first: MCQRecord
    second: MCQRecord
    first_similarity: float
    second_similarity: float
    golds_similarity: float
    first_replaced: str  # first's own distractor text that second's gold stands in for
    second_replaced: str
    component_size: int


def pair_id(first_id: str, second_id: str) -> str:
    return "pair-" + hashlib.sha256(f"{first_id}\x1f{second_id}".encode()).hexdigest()[:16]


def original_text(record: MCQRecord, normalized: str) -> str:
    """The option of ``record`` whose normalised text is ``normalized``, as the source spells it."""
    return next(c for c in record.choices if text_key(c) == normalized)


def balanced_flags(keys: Sequence[str], seed: int, purpose: str) -> dict[str, bool]:
    """True for exactly half of the keys (one more or one fewer when their number is odd).

    Each key draws a number from its own generator; the lower half of the draws get True, and with an odd
    count the median key flips its own coin. So which keys get True is random, and how many is not.
    """
    draws = sorted((item_rng(seed, key, NAME, purpose).random(), key) for key in keys)
    half = len(draws) // 2
    flags = {key: rank < half for rank, (_, key) in enumerate(draws)}
    if len(draws) % 2:
        median = draws[half][1]
        flags[median] = bool(item_rng(seed, median, NAME, purpose, "odd").random() < 0.5)
    return flags


def contrast_records(pair: ContrastPair, first_at_a: bool, cross_source: bool) -> tuple[MCQRecord, MCQRecord]:
    """Both questions get the same two options in the same order; the pair's generator chose the order."""
    options = (pair.first.gold, pair.second.gold) if first_at_a else (pair.second.gold, pair.first.gold)
    members = [(pair.first, pair.second, pair.first_similarity, pair.second_similarity, pair.first_replaced),
               (pair.second, pair.first, pair.second_similarity, pair.first_similarity, pair.second_replaced)]
    made = []
    for member, (record, partner, own_similarity, partner_similarity, replaced) in enumerate(members):
        answer = 0 if (member == 0) == first_at_a else 1  # the first's gold is options[0] iff first_at_a
        made.append(record.replace(choices=options, answer=answer).with_metadata(
            pair_id=pair.id, partner_id=partner.id, pair_member=member, gold_similarity=own_similarity,
            partner_gold_similarity=partner_similarity, golds_similarity=pair.golds_similarity,
            replaced_distractor=replaced, cross_source=cross_source, component_size=pair.component_size,
            original_answer_index=record.answer, original_num_choices=len(record.choices),
        ))
    return made[0], made[1]


def member_configs(record: MCQRecord, contrast: MCQRecord, random_pair: MCQRecord) -> dict[str, MCQRecord]:
    """What one question of a pair is in each config: its contrast question, its original with the pair's
    metadata, its random pair and its contrast question without the question."""
    return {"contrast": contrast,
            "contrast_subset_original": record.with_metadata(
                **{k: v for k, v in contrast.metadata.items() if k in PAIR_FEATURES}),
            "random_pairs": random_pair,
            "choices_only": contrast.replace(question="")}


def random_pair_record(record: MCQRecord, partner: MCQRecord, pair: ContrastPair, gold_first: bool,
                       golds_similarity: float) -> MCQRecord:
    options = (record.gold, partner.gold) if gold_first else (partner.gold, record.gold)
    return record.replace(choices=options, answer=0 if gold_first else 1).with_metadata(
        pair_id=pair.id, random_partner_id=partner.id, golds_similarity=golds_similarity,
        original_answer_index=record.answer, original_num_choices=len(record.choices),
    )
