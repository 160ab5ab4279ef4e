"""The shortcut audit's MMLU-Pro+ rules: they read the released options only, not the builder's metadata."""

from __future__ import annotations

import re
from functools import lru_cache

from builders.core.items.record import MCQRecord
from builders.core.build.result import Baseline

from .groups import CONFIG


_TRAILING = re.compile(r"[\s.]+$")


def _named_members(record: MCQRecord) -> tuple[int, list[int]] | None:
    """(pair option index, the option indices it names in naming order), read from the texts: every way of
    cutting "Both … and … are correct" at an " and " whose halves are two options (trailing periods ignored)."""
    found = _named_in(tuple(record.choices))
    return (found[0], list(found[1])) if found else None


@lru_cache(maxsize=1 << 16)  # a pure function of the options, which each of the audit's rules reads
def _named_in(choices: tuple[str, ...]) -> tuple[int, tuple[int, int]] | None:
    for pair in range(len(choices) - 1, -1, -1):
        text = choices[pair]
        if not (text.startswith("Both ") and text.endswith(" are correct")):
            continue
        inner = text[len("Both "):-len(" are correct")]
        names: dict[str, int] = {}
        for index, choice in enumerate(choices):
            if index != pair:
                names.setdefault(_TRAILING.sub("", " ".join(choice.split())), index)
        start = 0
        while (cut := inner.find(" and ", start)) != -1:
            left, right = inner[:cut], inner[cut + len(" and "):]
            if left in names and right in names and names[left] != names[right]:
                return pair, (names[left], names[right])
            start = cut + 1
        return None
    return None


def first_named_member(record: MCQRecord) -> int | None:
    found = _named_members(record)
    return found[1][0] if found else None


def second_named_member(record: MCQRecord) -> int | None:
    found = _named_members(record)
    return found[1][1] if found else None


def pair_if_just_before(record: MCQRecord) -> int | None:
    """The pair when the option just before it is one of its members, otherwise the pair's first-named option:
    67% of modified items in the paper's layout."""
    found = _named_members(record)
    if not found:
        return None
    pair, members = found
    return pair if pair - 1 in members else members[0]


# MMLU-Pro has at most 10 options; a TPP item gains two (the new option and the pair), a PFPP/CFPP item one.
TPP_ONLY_OPTION_COUNT = 12


def pair_if_twelve_options(record: MCQRecord) -> int | None:
    """The pair when the item has 12 options (only a TPP item of a 10-option question has that many), otherwise
    the pair's first-named option: the option count tells a TPP item from a PFPP/CFPP one."""
    found = _named_members(record)
    if not found:
        return None
    pair, members = found
    return pair if len(record.choices) >= TPP_ONLY_OPTION_COUNT else members[0]


BASELINES = [
    Baseline("pair_first_named", "the option the \"Both X and Y\" pair names first (X), where there is a pair",
             first_named_member, mirror="pair_second_named"),
    Baseline("pair_second_named", "the option the \"Both X and Y\" pair names second (Y), where there is a pair",
             second_named_member, mirror="pair_first_named"),
    Baseline("pair_if_just_before_else_first_named", "the pair when the option just before it is one of its "
             "members, otherwise the pair's first-named option", pair_if_just_before),
    Baseline("pair_if_twelve_options", "the pair when the item has 12 options, otherwise the pair's first-named "
             "option", pair_if_twelve_options),
]


INHERENT_BASELINES = {
    f"{CONFIG}/always_both": "the pair option is the answer exactly in the true-positive-pair group: the TPP share, "
                             "by construction",
    f"{CONFIG}/pair_if_twelve_options": "a TPP item gains two options (the new one and the pair), a PFPP or CFPP "
                                        "item one, so on MMLU-Pro's 10-option questions only TPP items have 12 "
                                        "options: the option count tells whether the pair is correct. The paper's "
                                        "design; removing an original option to hide it would change the question",
    f"{CONFIG}/choices_only_model": "the options alone tell a pair from the others and which options it names: the "
                                    "pair is the answer exactly in TPP items, a named option exactly in half of the "
                                    "PFPP items, and on MMLU-Pro's 10-option questions the option count tells a "
                                    "TPP item (see `always_both`, `pair_first_named` and `pair_if_twelve_options`): "
                                    "the paper's design",
    f"{CONFIG}/always_last": "the pair option is always appended last (the paper's design), so always-last is always-Both",
    # Only in the MMLU-Pro+ config: MMLU-Pro's own longest-option bias stays reported on `original`.
    f"{CONFIG}/longest_option": "the pair option names two options, so it is nearly always the longest: on the "
                                "modified items this is always-Both (the TPP share), plus MMLU-Pro's own "
                                "longest-option bias on the unchanged ones (see the `original` config)",
}


# A rule that picks one of the pair's two named options. Can its cue be removed? It cannot
# without changing what the groups are. A PFPP pair names the answer and a wrong option (its definition), a CFPP
# pair two wrong options and a TPP pair the two halves of an answer that is the pair itself, so a named option is
# the answer in half of the PFPP items, whatever the order or the place: PFPP items / items with a pair / 2 (25%
# at `--ratios 0:1:1:1`, 13.5% at the paper's shares, against about 1 in 11 by chance). Mixing other pairs in to
# hide it (a pair naming the answer that is not a PFPP item) would be a group the paper does not have, and its
# metrics (SSR_partial, the pair chosen on PFPP) would stop measuring what they say. So it is declared inherent,
# with the figure the build's shares give, and the card shows it beside the rule's accuracy. The paper's layout
# adds an order cue on top (the answer named first), which the random layout removes: that one is not inherent.
PAIR_MEMBER_RULES = ("pair_first_named", "pair_second_named", "pair_if_just_before_else_first_named")


def inherent_baselines(pfpp_items: int, items_with_pair: int, layout: str) -> dict[str, str]:
    """What the build declares inherent: in the random layout, :data:`INHERENT_BASELINES` and the pair-member rules
    with the accuracy the group shares give them; in the paper's layout, whose order cue is not the design's, neither
    the pair-member rules nor the choices-only model (which reads that order too)."""
    if layout == "paper":
        return {name: reason for name, reason in INHERENT_BASELINES.items() if not name.endswith("/choices_only_model")}
    return {**INHERENT_BASELINES, **pair_member_inherent(pfpp_items, items_with_pair)}


def pair_member_inherent(pfpp_items: int, items_with_pair: int) -> dict[str, str]:
    if not items_with_pair:
        return {}
    expected = pfpp_items / items_with_pair / 2
    reason = (f"a PFPP pair names the answer and a wrong option (the group's definition), a CFPP or TPP pair no "
              f"option that is the answer: a named option is the answer in half of the {pfpp_items:,} PFPP items of "
              f"the {items_with_pair:,} with a pair, {expected:.1%} for a rule that picks one (the `--ratios` PFPP "
              f"share decides it; the drawn order and place add nothing)")
    return {f"{CONFIG}/{rule}": reason for rule in PAIR_MEMBER_RULES}
