"""The builder's invariants: written independently of the code that built the items (they read the configs, never
the matching, and read numbers and negations with their own rules, not :mod:`.equivalence`'s)."""

from __future__ import annotations

import re
from collections import defaultdict

from builders.core.build.result import Build, Check
from builders.core.items.record import MCQRecord

from .transform import CONTRAST_CONFIGS, text_key


def _members_by_pair(build: Build, config: str) -> dict[str, list[MCQRecord]]:
    members: dict[str, list[MCQRecord]] = defaultdict(list)
    for records in build.configs.get(config, {}).values():
        for record in records:
            members[record.metadata["pair_id"]].append(record)
    return members


def _pairs_share_options(build: Build):
    for config in ("contrast", "choices_only"):
        for pid, members in _members_by_pair(build, config).items():
            if len(members) == 2 and (members[0].choices != members[1].choices or len(members[0].choices) != 2):
                yield f"{config} {pid}: the two questions do not share the same two options"


def _golds_differ(build: Build):
    for config in CONTRAST_CONFIGS:
        for pid, members in _members_by_pair(build, config).items():
            if len(members) == 2 and text_key(members[0].gold) == text_key(members[1].gold):
                yield f"{config} {pid}: both questions have the gold {members[0].gold!r}"


def _one_pair_per_question(build: Build):
    for config in CONTRAST_CONFIGS:
        for pid, members in _members_by_pair(build, config).items():
            ids = [r.id for r in members]
            if len(members) != 2 or ids[0] == ids[1] or [r.metadata["partner_id"] for r in members] != ids[::-1]:
                yield f"{config} {pid}: members {ids} do not point at each other"
    id_sets = {config: {r.id for records in splits.values() for r in records} for config, splits in build.configs.items()}
    for config, ids in id_sets.items():
        if ids != id_sets["contrast"]:
            yield f"{config}: its questions differ from those of contrast"


def _gold_kept(build: Build):
    originals = {r.id: r for records in build.configs["contrast_subset_original"].values() for r in records}
    for config in ("contrast", "choices_only", "random_pairs"):
        for records in build.configs[config].values():
            for record in records:
                original = originals.get(record.id)
                if original is None or record.gold != original.gold or len(record.choices) != 2:
                    yield f"{config} {record.id}: the gold is not the original gold text, or there are not two options"
                elif config == "choices_only" and record.question:
                    yield f"choices_only {record.id}: the question is not empty"


def _values(text: str) -> list[float]:
    """The numbers a text states, read apart from the miner's own rules (:mod:`.equivalence`)."""
    return sorted(float(token.replace(",", "")) for token in re.findall(r"\d[\d,]*(?:\.\d+)?|\.\d+", text))


def _negated(text: str) -> bool:
    return bool(re.search(r"(?i)\b(?:not|no|never|none|cannot|without)\b|n't\b", text))


def _replacement_keeps_meaning(build: Build):
    """The partner's gold stands in for a distractor of the same meaning: never a different number, never a
    negation of it."""
    for records in build.configs.get("contrast", {}).values():
        for record in records:
            replaced = record.metadata["replaced_distractor"]
            stand_in = record.choices[1 - record.answer]
            if " ".join(replaced.casefold().split()) == " ".join(stand_in.casefold().split()):
                continue
            if _values(replaced) != _values(stand_in) or _negated(replaced) != _negated(stand_in):
                yield f"contrast {record.id}: {stand_in!r} stands in for {replaced!r}, which it contradicts"


CHECKS = [
    Check("pair_shares_options", "the two questions of a pair have the same two options, in the same order",
          _pairs_share_options),
    Check("golds_differ", "the two golds of a pair differ after whitespace/case normalisation", _golds_differ),
    Check("one_pair_per_question", "every question is in at most one pair, whose partner points back; "
          "every config holds the same questions", _one_pair_per_question),
    Check("replacement_keeps_meaning", "the distractor each question gets from its partner states the same numbers "
          "and negation as the distractor it replaces", _replacement_keeps_meaning),
    Check("gold_kept", "two options per two-option item, the gold being the original gold text; "
          "choices_only has no question", _gold_kept),
]
