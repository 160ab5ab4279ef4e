"""The card's statistics and context: the groups requested and built, what became of the TPP candidates, how
often the paper layout's positional cues hold, and the previous release's audit (the items altered and copied
unchanged are the core's outcome table, :func:`builders.core.items.outcomes.outcome_table`)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from builders.core.items.record import MCQRecord
from builders.core.items.tables import Statistics, Table, counts_table

from .audit import audit_table
from .generation import TEMPLATE_FILES, PregeneratedOptions, TPPGenerator, load_template
from .groups import CFPP, GROUPS, ORIGINAL_CONFIG, PFPP, TPP
from .layout import DEFAULT_LAYOUT, pair_text
from .transform import SplitGroups

Splits = Mapping[str, Sequence[MCQRecord]]


def statistics(groups: Mapping[str, SplitGroups], default: Splits, context: Mapping[str, Any]) -> Statistics:
    """The card's tables, from each split's groups and the ``default`` config's records."""
    rows = [(split, group, split_groups.requested.get(group), split_groups.built.get(group, 0))
            for split, split_groups in groups.items() for group in GROUPS
            if split_groups.requested or split_groups.built.get(group)]
    tried = [p for split_groups in groups.values() for p in split_groups.tried]
    reasons = Counter(p.reason or "accepted" for p in tried)
    statistics = Statistics([
        Table("Modification groups", ("split", "group", "requested", "built"), rows),
        counts_table("TPP generation", reasons, "outcome", "TPP candidates",
                     note=f"{len(tried)} candidates asked, {reasons.get('accepted', 0)} accepted; every rejected one "
                          "fell back to another group and is listed in `tpp_rejections.jsonl`."),
    ])
    statistics.add(layout_table(default, context.get("layout", DEFAULT_LAYOUT)))
    if context.get("audit"):
        statistics.add(audit_table(context["audit"]))
    return statistics


def layout_table(default: Splits, layout: str) -> Table:
    """How often the positional cues of the paper's layout hold in this build (no structural shortcut)."""
    rows = []
    for split, records in default.items():
        pfpp = [r for r in records if r.columns["modification"] == PFPP]
        tpp = [r for r in records if r.columns["modification"] == TPP]
        if not (pfpp or tpp):
            continue
        first = sum(r.metadata["pair_indices"][0] == r.answer for r in pfpp)
        before = sum(r.metadata["pair_option_index"] - 1 in r.metadata["pair_indices"] for r in tpp)
        rows.append((split, layout, len(pfpp), first / len(pfpp) if pfpp else None, len(tpp),
                     before / len(tpp) if tpp else None))
    return Table("Pair layout", ("split", "layout", "PFPP items", "PFPP: answer named first", "TPP items",
                                 "TPP: a pair member just before the pair"), rows,
                 note="In the paper's layout both shares are 100%: the answer is always named first and the new TPP "
                      "option always sits just before the pair. The default layout draws both per item.",
                 percent=("PFPP: answer named first", "TPP: a pair member just before the pair"))


def pair_counts(default: Splits) -> tuple[int, int]:
    """(PFPP items, items with a pair) over the splits."""
    groups = Counter(r.columns["modification"] for records in default.values() for r in records)
    return groups[PFPP], groups[PFPP] + groups[CFPP] + groups[TPP]


def card_context(options: Any, generator: TPPGenerator | None, groups: Mapping[str, SplitGroups],
                 audit: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the card's method section (``cards/mmlu_pro_plus.md``) reads, from the build's options (``Options``)."""
    templates = [load_template(kind) for kind in TEMPLATE_FILES]
    llm = None
    if generator is not None:
        llm = {"model": generator.model, "rounds": generator.rounds, "usage": generator.usage(),
               "embedder": generator.scorer.id, "embedder_revision": generator.scorer.revision}
    return {
        "pair_template": pair_text("X", "Y"),
        "templates": [{"version": t.version, "sha256": t.sha256} for t in templates],
        "llm": llm,
        "similarity_cutoff": options.similarity_cutoff,
        "length_ratio": options.max_length_ratio,
        "length_slack": options.length_slack,
        "modified_splits": [split for split, split_groups in groups.items() if split_groups.requested],
        "audit": audit,
        "layout": options.layout,
        "pregenerated": generator.file_name if isinstance(generator, PregeneratedOptions) else None,
        "truth": generator.truth.card() if generator is not None and generator.truth is not None else None,
        "original_config": ORIGINAL_CONFIG,
    }
