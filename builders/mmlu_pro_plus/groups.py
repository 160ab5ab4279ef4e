"""The names every part of MMLU-Pro+ shares, and the four modification groups: shares, exact counts, labels.

A record's group is cut from a per-item hash ranking (:func:`rank_key`) at the requested shares
(:func:`parse_ratios`), with counts that sum exactly (:func:`apportion`); :func:`with_group` labels a record
with its group in the columns the paper's evaluation code reads.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from builders.core.errors import UserError
from builders.core.items.record import MCQRecord
from builders.core.items.rng import item_rng

NAME = "mmlu_pro_plus"
CONFIG = "default"
ORIGINAL_CONFIG = "original"
TPP = "true_positive_pair"
PFPP = "partial_false_positive_pair"
CFPP = "complete_false_positive_pair"
UNCHANGED = "unchanged"
GROUPS = (TPP, PFPP, CFPP, UNCHANGED)
# The paper's counts out of MMLU-Pro's 12,032 test questions; as weights they are the default shares.
PAPER_COUNTS = {TPP: 3718, PFPP: 2124, CFPP: 2029, UNCHANGED: 12032 - 3718 - 2124 - 2029}
NON_LLM_TYPE = {PFPP: "correct_and_wrong", CFPP: "two_wrong"}


def parse_ratios(text: str) -> dict[str, float]:
    try:
        weights = [float(part) for part in str(text).split(":")]
    except ValueError:
        raise UserError(f"--ratios {text!r}: expected four numbers TPP:PFPP:CFPP:UNCHANGED") from None
    if len(weights) != 4 or any(w < 0 or not math.isfinite(w) for w in weights) or sum(weights) <= 0:
        raise UserError(f"--ratios {text!r}: expected four non-negative numbers TPP:PFPP:CFPP:UNCHANGED, not all 0")
    total = sum(weights)
    return {group: w / total for group, w in zip(GROUPS, weights, strict=True)}


def apportion(n: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Largest-remainder counts that sum to ``n``; ties go to the group listed first."""
    exact = {g: shares[g] * n for g in GROUPS}
    counts = {g: math.floor(exact[g]) for g in GROUPS}
    by_remainder = sorted(GROUPS, key=lambda g: (-(exact[g] - counts[g]), GROUPS.index(g)))
    for group in by_remainder[: n - sum(counts.values())]:
        counts[group] += 1
    return counts


def rank_key(seed: int, record: MCQRecord) -> tuple[float, str]:
    return float(item_rng(seed, record.content_key, NAME, "rank").random()), record.id


def with_group(record: MCQRecord, group: str, **metadata: Any) -> MCQRecord:
    fields = {"pair_indices": None, "pair_option_index": None, "original_answer_index": record.answer,
              "added_option_index": None, "generator_model": None, "template_version": None,
              "added_option_similarity": None, "tpp_rejection": None, "ineligible_reason": None,
              "unchanged_reason": None}
    fields.update(metadata)
    return record.with_metadata(**fields).with_columns(
        modification=group, is_modified=group == TPP, is_modified_non_llm=group in NON_LLM_TYPE,
        modification_type_non_llm=NON_LLM_TYPE.get(group),
    )
