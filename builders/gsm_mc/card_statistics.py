"""The card's statistics and context: the pools and the candidates left out as the gold in another form, the
suspect keys, the answer positions and ranks (the items kept and excluded are the core's outcome table)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from builders.core.build.result import Configs
from builders.core.items.tables import Statistics, Table
from builders.from_predictions import collect, consensus
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import left_out_counts
from builders.from_predictions.steps import Pools
from builders.from_predictions.tasks import demonstrations_text

from .answers import FLOAT_DIGITS, UNIT_FACTORS, unit_conversions
from .benchmarks import GSM8K, GSM8K_PLATINUM
from .checks import float_value
from .kinds import ANOTHER_ROUNDING, NEGATIVE, NON_INTEGER
from .suspect_labels import LABELS_FILE, SUSPECT_KEY_MEASURED, Precision, precision
from .transform import ROUNDED_GOLD, UNIT_MULTIPLE


def statistics(pools: Pools | None, configs: Configs, options: Any) -> Statistics:
    tables = Statistics()
    if pools is not None:
        tables = mc.pool_statistics(list(pools.pools.values()), options.choices)
        tables.add(unit_table(pools.pools.values(), options.keep_unit_multiples))
        tables.add(kind_table(pools.pools.values()))
        tables.add(consensus.suspect_table(pools.suspects, pools.items, options.keep_suspect_keys,
                                           measured=measured_note(precision(pools.suspects))))
    tables.add(mc.position_table(configs))
    tables.add(rank_table(configs, options.choices))
    return tables


def rank_table(configs, choices: int) -> Table:
    """Where the gold sits among its options' values, over all sets: its rank, and how often two no-knowledge
    rules find it ("the option closest to the mean", "an integer option", each tie split evenly)."""
    ranks: Counter = Counter()
    closest = integer = total = 0.0
    for name, splits in configs.items():
        if name == "default":
            continue
        for records in splits.values():
            for record in records:
                values = [float_value(c) for c in record.choices]
                gold = values[record.answer]
                ranks[sum(v < gold for v in values)] += 1
                mean = sum(values) / len(values)
                distances = [abs(v - mean) for v in values]
                nearest = [i for i, d in enumerate(distances) if d == min(distances)]
                closest += (record.answer in nearest) / len(nearest)
                integers = [i for i, v in enumerate(values) if v == int(v)]
                integer += (record.answer in integers) / len(integers) if integers else 1 / len(values)
                total += 1
    total = total or 1
    columns = tuple(f"rank {r + 1}" for r in range(choices))
    return Table("Answer ranks", (*columns, "closest to the mean", "an integer option", "chance"),
                 [(*(ranks[r] / total for r in range(choices)), closest / total, integer / total, 1 / choices)],
                 percent=(*columns, "closest to the mean", "an integer option", "chance"),
                 note="The gold's rank among its options' values (rank 1: the smallest), over all sets, and the accuracy "
                      "of two rules that need no knowledge: pick the option closest to the options' mean; pick one of "
                      "the integer options at random. Beside chance, they show whether the values alone give the gold away.")


def unit_table(pools, kept: bool) -> Table:
    """Candidates left out as the gold in another form, per conversion (and rounding)."""
    counts = left_out_counts(pools)
    labels = [label for label, _ in unit_conversions("")] + sorted(
        {r.split(":", 1)[1] for r in counts if r.startswith(UNIT_MULTIPLE + ":")} - {str(f) for f in UNIT_FACTORS},
        key=lambda label: (int(label.split()[0]), label))  # a set's order follows the hash seed: ties by name
    rows = [(f"unit: x or / {label}", counts[f"{UNIT_MULTIPLE}:{label}"]) for label in labels]
    rows.append(("the gold rounded to the option's decimals", counts[ROUNDED_GOLD]))
    note = ("Kept (`--keep-unit-multiples`): distractors equal to the gold in another unit stay; only roundings of "
            "the gold are left out." if kept else
            "Distractors equal to the gold times or divided by 100, 1000 or 60 (100 cents for 1 dollar, 0.7 for 70 %), "
            "or by a conversion between units the question names (21 days for 3 weeks, 60 for 5 dozen, 400 ounces "
            "for 25 pounds), are the correct answer in another unit")
    note += ("; a decimal distractor that is the gold rounded to its own decimals (15.59 beside 15.588) is a second "
             "correct answer. These candidates are left out of the options; `pools.jsonl` lists them under "
             "`left_out`, and their models are counted in the Models table.")
    return Table("Correct answers in another form", ("candidate left out", "candidates"), rows, note=note)


def kind_table(pools) -> Table:
    """Candidates left out as of another kind than the question's answer, or as a second rounding of one value."""
    pools = list(pools)
    rows = []
    for reason, label in ((NON_INTEGER, "not a count: a non-integer, for a count question"),
                          (NEGATIVE, "not a count: a negative number, for a count question"),
                          (ANOTHER_ROUNDING, "a second rounding of a candidate kept")):
        items = [sum(left.reason == reason for left in pool.left_out) for pool in pools]
        rows.append((label, sum(items), sum(n > 0 for n in items)))
    return Table("Distractors of the question's kind", ("candidate left out", "candidates", "questions"), rows,
                 note="A count question (its gold a whole number, 0 or more, and its asking sentence says \"how many\" or "
                      "asks for the number of something) gets no non-integer and no negative distractor; no item shows "
                      "one wrong value at two roundings (8/3 and 2.67, 2.666 and 2.67: equal once rounded to the "
                      "shown precision of the less precise one), of which the one more models gave is kept. These "
                      "candidates are left out of the pool before the sets are drawn (`pools.jsonl` lists them under "
                      "`left_out`), so a set draws the next candidates; a left-out answer still counts as a valid "
                      "answer of its model, never as agreement against the key.")


def measured_note(build: Precision) -> str:
    """The rule's measured precision (:data:`SUSPECT_KEY_MEASURED`), and this build's flags against the labels."""
    m = SUSPECT_KEY_MEASURED
    note = (f"Measured on labels: we read and solved each of the {m['flagged']} questions the rule flags in a default "
            f"build on GSM8K test; {m['wrong_key']} ({m['wrong_key_share']:.0%}) have a wrong key, {m['ambiguous']} "
            f"two readings, and {m['key_right']} ({m['key_right'] / m['flagged']:.0%}) a right key that most models "
            f"miss the same way (`builders/gsm_mc/{LABELS_FILE}`). A flag marks an item for review, not a wrong key.")
    if build.labelled:
        note += (f" Of this build's {build.flagged} flags, {build.labelled} are labelled: {build.wrong_key} wrong "
                 f"keys, {build.ambiguous} ambiguous, {build.key_right} right keys.")
    return note


def card_context(options: Any, collected: collect.Collected | None, configs: Configs) -> dict:
    """What ``cards/gsm_mc.md`` reads."""
    return {
        "same_in_every_set": mc.same_in_every_set(configs), "suspect_measured": SUSPECT_KEY_MEASURED,
        "choices": options.choices, "sets": options.sets, "distractors": options.distractors, "draw": options.draw,
        "keep_unit_multiples": options.keep_unit_multiples, "keep_suspect_keys": options.keep_suspect_keys,
        "float_digits": FLOAT_DIGITS, "platinum": options.benchmark == GSM8K_PLATINUM.name,
        "gsm8k_questions": options.gsm8k_questions or GSM8K.default_spec,
        **collect.card_context(options, collected), "demonstrations": demonstrations_text(configs),
    }
