"""The pair option and where the options go: which options a pair may name, the pair's text, the layout.

``--layout random`` (the default) draws per item the order in which the pair names its two options and the
position of the new TPP option; ``--layout paper`` keeps the paper's Figure 5. :func:`make_tpp`,
:func:`make_pfpp` and :func:`make_cfpp` apply a group to a record.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from builders.core.items.record import MCQRecord, normalize_text
from builders.core.items.referring import position_dependent_reason
from builders.core.items.rng import item_rng
from builders.core.items.twins import duplicate_option

from .generation import BARE_LETTER, Proposal, normalize_option
from .groups import CFPP, NAME, PFPP, TPP, with_group

PAIR_TEMPLATE = "Both {x} and {y} are correct"
# Where the pair's members and the new TPP option sit. "random" (the default): the order of the two options named
# in the pair is drawn per item, and the new TPP option goes to a random position among the original ones.
# "paper": the layout of the paper's Figure 5 (the answer named first, the new TPP option just before the pair),
# which a no-knowledge rule exploits (see ``baselines.BASELINES``); kept for exact reproduction.
LAYOUTS = ("random", "paper")
DEFAULT_LAYOUT = "random"
# An option that already says two things are correct ("Both theories of learning are correct, depending on the
# context."): an added pair beside it would be a second option of the same kind.
_PAIR_OPTION = re.compile(r"^\W*both\b.*\b(?:correct|true|right|valid)\b", re.I | re.S)
# An option that itself starts with "Both" would be named "Both Both are guilty, ... and ... are correct".
_STARTS_WITH_BOTH = re.compile(r"^\W*both\b", re.I)


_TRAILING_STOPS = re.compile(r"[\s.]+$")  # compiled once: a pair member is cut for every option of every item


# ---- which items and options can take part in a pair -----------------------------------------------------------


@lru_cache(maxsize=1 << 18)  # pure, and read for every option of every item several times
def pair_member_text(option: str) -> str:
    """An option as the pair names it: whitespace normalised, trailing periods stripped ("16.3923", not " 16.3923";
    "…palatini", not "…palatini.")."""
    return _TRAILING_STOPS.sub("", normalize_text(option))


def pairable(option: str) -> bool:
    """A bare letter ("A", "(B)") in a pair would read as "Both A and B are correct": a letter combination. An
    option that is only periods would name nothing, and one that starts with "Both" would read "Both Both ..."."""
    return not BARE_LETTER.match(option) and not _STARTS_WITH_BOTH.match(option) and bool(pair_member_text(option))


def ineligible_reason(record: MCQRecord) -> str | None:
    """Why no pair option may be added: the options already depend on each other, one is a pair option, or two
    options read the same once named in a pair (equal up to case, whitespace, outer punctuation and number format:
    "5" and "5.", "1" and "1.0") or are twins (:func:`duplicate_option`): a pair naming either could mean the other, and a pair naming a copy of the answer
    would hold the answer."""
    reason = position_dependent_reason(record.choices)
    if reason:
        return reason
    if any(_PAIR_OPTION.match(choice) for choice in record.choices):
        return "has_pair_option"
    names = [normalize_option(pair_member_text(choice)) for choice in record.choices]
    # twins ("0.60 for L^m ..." and "0.6 for L^m ...", MMLU-Pro 3182) are alike too, though not to the pair reading
    if len(set(names)) < len(names) or duplicate_option(record.choices) is not None:
        return "options_read_alike"
    return None


def pair_text(x: str, y: str) -> str:
    return PAIR_TEMPLATE.format(x=pair_member_text(x), y=pair_member_text(y))


def wrong_pairable(record: MCQRecord) -> list[int]:
    return [i for i, c in enumerate(record.choices) if i != record.answer and pairable(c)]


def can_take(group: str, record: MCQRecord) -> bool:
    if group == TPP:
        return pairable(record.gold)
    if group == PFPP:
        return pairable(record.gold) and len(wrong_pairable(record)) >= 1
    if group == CFPP:
        return len(wrong_pairable(record)) >= 2
    return True


# ---- the pair and the place of the new option ------------------------------------------------------------------


def add_pair(record: MCQRecord, x: int, y: int, answer_is_pair: bool) -> tuple[MCQRecord, int]:
    choices = record.choices + (pair_text(record.choices[x], record.choices[y]),)
    pair_index = len(choices) - 1
    return record.replace(choices=choices, answer=pair_index if answer_is_pair else record.answer), pair_index


def pair_order(seed: int, record: MCQRecord, x: int, y: int, layout: str) -> tuple[int, int]:
    """The order in which the pair names ``x`` (the answer) and ``y``: drawn per item, or the paper's (x first)."""
    if layout == "paper":
        return x, y
    swap = bool(item_rng(seed, record.content_key, NAME, "pair_order").random() < 0.5)
    return (y, x) if swap else (x, y)


def tpp_position(seed: int, record: MCQRecord, layout: str) -> int:
    """Where the new TPP option goes among the original options: anywhere (0..n), or last (the paper's)."""
    size = len(record.choices)
    if layout == "paper":
        return size
    return int(item_rng(seed, record.content_key, NAME, "tpp_position").integers(size + 1))


def make_tpp(record: MCQRecord, proposal: Proposal, model: str, seed: int = 0, layout: str = "paper",
             **metadata: Any) -> MCQRecord:
    added = tpp_position(seed, record, layout)
    choices = record.choices[:added] + (proposal.option,) + record.choices[added:]
    answer = record.answer + (record.answer >= added)
    extended = record.replace(choices=choices, answer=answer)
    x, y = pair_order(seed, record, answer, added, layout)
    modified, pair_index = add_pair(extended, x, y, answer_is_pair=True)
    return with_group(modified, TPP, pair_indices=[x, y], pair_option_index=pair_index,
                      original_answer_index=record.answer, added_option_index=added, generator_model=model,
                      template_version=proposal.template_version, added_option_similarity=proposal.similarity,
                      **metadata)


def make_pfpp(record: MCQRecord, seed: int, layout: str = "paper", **metadata: Any) -> MCQRecord:
    wrong = wrong_pairable(record)
    y = wrong[int(item_rng(seed, record.content_key, NAME, "pair").integers(len(wrong)))]
    x, y = pair_order(seed, record, record.answer, y, layout)
    modified, pair_index = add_pair(record, x, y, answer_is_pair=False)
    return with_group(modified, PFPP, pair_indices=[x, y], pair_option_index=pair_index,
                      original_answer_index=record.answer, **metadata)


def make_cfpp(record: MCQRecord, seed: int, **metadata: Any) -> MCQRecord:
    wrong = wrong_pairable(record)
    x, y = (wrong[int(i)] for i in item_rng(seed, record.content_key, NAME, "pair").choice(len(wrong), 2, replace=False))
    modified, pair_index = add_pair(record, x, y, answer_is_pair=False)
    return with_group(modified, CFPP, pair_indices=[x, y], pair_option_index=pair_index,
                      original_answer_index=record.answer, **metadata)
