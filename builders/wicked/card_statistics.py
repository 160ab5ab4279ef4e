"""The card's statistics: the shares altered and flagged SBA, SBA on labelled questions, NOTA-answer rates (the
items altered and copied unchanged are counted in the card's outcome table, :func:`builders.core.items.outcomes.outcome_table`)."""

from __future__ import annotations

from collections import Counter

from builders.core.items.tables import Statistics, Table

from .sba import SBADecisions
from .transform import DUPLICATE_SKIP, JUDGE_FAILED_SKIP, NONE_LIKE_SKIP, SBA_SKIP


def statistics(configs, sba: SBADecisions) -> Statistics:
    tables = [altered_and_flagged(configs["variant_0"], sba_note(sba))]
    if sba.labelled:
        tables.append(Table(
            "SBA on labelled questions",
            ("labels", "questions", "labelled SBA", "flagged SBA", "precision", "recall", "model threshold"),
            [(e["labels"], e["n"], e["labelled_share"], e["flagged_share"], e["precision"], e["recall"],
              e["model_threshold"]) for e in sba.labelled],
            note="What the classifier's recorded evaluation measured on this benchmark's labelled questions (version-2 "
                 "labels): the share labelled SBA, next to the share it flags at its own threshold.",
            percent=("labelled SBA", "flagged SBA", "precision", "recall")))
    return Statistics(tables + nota_rates(configs))


def sba_note(sba: SBADecisions) -> str:
    card = sba.card
    if card is None:
        return "No SBA detection was used (`--sba-classifier none`): every coherent item was altered."
    if card["method"] == "judge":
        return (f"SBA judge `{card['name']}` (template `{card['template']}`) was asked about {card['questions']} "
                f"distinct items: {card['sba']} SBA (copied unchanged), {card['sca']} SCA (altered), {card['failed']} "
                "without a usable answer (copied unchanged as `sba_judge_failed`).")
    flagged = sum(v.is_sba for v in sba.verdicts.values())
    return (f"Classifier `{card['name']}` (revision `{card['revision']}`, input: {card['input']}) scored "
            f"{len(sba.verdicts)} distinct items; {flagged} reached the threshold {card['threshold']} and were copied "
            "unchanged.")


def altered_and_flagged(records_by_split, how_flagged: str = "") -> Table:
    rows = []
    for split, records in records_by_split.items():
        reasons = Counter(r.metadata["skip_reason"] or "altered" for r in records)
        referring = sum(n for reason, n in reasons.items() if reason.startswith("has_"))
        n = len(records) or 1  # a split whose every row was excluded has no items, and no shares to speak of
        rows.append((split, len(records), reasons["altered"] / n, reasons[SBA_SKIP] / n, referring / n,
                     reasons[NONE_LIKE_SKIP] / n, reasons[DUPLICATE_SKIP] / n, reasons[JUDGE_FAILED_SKIP] / n))
    shares = ("altered", "flagged SBA", "options refer to options", "an option means none", "duplicate options",
              "judge failed")
    return Table("Altered and flagged SBA", ("split", "items", *shares), rows,
                 note=f"Shares of each split's items (the same in every variant). {how_flagged}".strip(), percent=shares)


def nota_rates(configs) -> list[Table]:
    import numpy as np  # here: the builder's --help parses without numpy

    variants = [name for name in configs if name != "original"]
    per_variant, summary = [], []
    for split in configs["original"]:
        rates = []
        for variant in variants:
            records = configs[variant][split]
            altered = [r for r in records if r.metadata["removed_index"] is not None]
            nota = sum(r.metadata["nota_is_answer"] for r in altered)
            rate = nota / len(altered) if altered else 0.0
            expected = float(np.mean([1 / len(r.choices) for r in altered])) if altered else 0.0
            rates.append(rate)
            per_variant.append((split, variant, len(records), len(altered), nota, rate, expected))
        summary.append((split, float(np.mean(rates)), float(np.std(rates))))
    return [Table("NOTA-answer rate", ("split", "mean NOTA-answer rate", "std across variants"), summary),
            Table("NOTA-answer rate per variant",
                  ("split", "variant", "items", "altered", "NOTA is the answer", "NOTA rate among altered",
                   "expected (mean 1/k)"), per_variant)]
