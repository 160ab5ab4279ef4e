"""The card's statistics and context: the golds per split, the pools and the candidates left out, the equivalence
engine, the surface-form cues, the answer positions and the suspect keys (the items kept and excluded are the
core's outcome table)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from builders.core.build.result import Configs
from builders.core.items.outcomes import ExclusionLog
from builders.core.items.record import OpenItem
from builders.core.items.tables import Statistics, Table
from builders.core.sources.loading import LoadedSource
from builders.from_predictions import collect, consensus
from builders.from_predictions import sets as mc
from builders.from_predictions.tasks import demonstrations_text

from .cues import form_table
from .equivalence import MathEquivalence
from .transform import DROP_REASONS, Steps

# Questions with a usable gold in the paper (Zhang et al., 2024): kept / source rows.
PAPER_GOLD_COUNTS = {"train": ("7.3K", "7.5K"), "test": ("4.9K", "5K")}
PAPER_TEST_GOLDS = (4914, 5000)  # the paper's exact count for MATH test: usable golds, rows


def statistics(source: LoadedSource, steps: Steps, configs: Configs, options: Any) -> tuple[Statistics, list[dict]]:
    """The tables, and the gold counts per split (which the card reads too)."""
    golds = gold_counts(source, steps.golds.excluded, steps.golds.kept)
    pools = steps.pools
    tables = Statistics([gold_table(golds)])
    tables.extend(mc.pool_statistics(list(pools.pools.values()), options.choices))
    tables.extend([distinct_table(steps.dropped), engine_table(steps.equivalence), form_table(configs),
                   mc.position_table(configs),
                   consensus.suspect_table(pools.suspects, pools.items, options.keep_suspect_keys)])
    return tables, golds


def distinct_table(dropped: Counter) -> Table:
    return Table("Candidates left out", ("candidate", "left out"),
                 [(reason, dropped[reason]) for reason in DROP_REASONS],
                 note="A model's wrong answer is a distractor only when it is an answer of the gold's kind (no bare "
                      "letter; an equation or words only beside a gold that is one; no variable the gold lacks), when "
                      "math-verify, asked both ways, calls it different from the gold and from every other kept "
                      "candidate, when its surface key (the normal form with case, spaces and `name =` folded) "
                      "differs from theirs, and when it is not the gold rounded to its own decimals. A comparison "
                      "that timed out proves nothing and leaves the candidate out. The validator asks plain "
                      "math-verify again about every pair of options.")


def multi_value(gold: str) -> bool:
    """A list of values ("6, -2", "1,3,5"): a comma outside every bracket."""
    depth = 0
    for char in gold:
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            return True
    return False


def gold_counts(source: LoadedSource, gold_exclusions: ExclusionLog, items: dict[str, list[OpenItem]]) -> list[dict]:
    """Per split of this build: source rows, and the golds missing, lettered, ambiguous, usable and multi-value."""
    reasons = source.exclusions.reasons()
    ambiguous = gold_exclusions.reasons()
    counts = []
    for split, rows in source.rows_in.items():
        usable = items.get(split, [])
        multi = sum(1 for item in usable if multi_value(item.gold))
        ambiguous_golds = ambiguous.get(split, {}).get("ambiguous_gold", 0)
        counts.append({"split": split, "rows": rows, "no_gold": reasons.get(split, {}).get("no_gold_answer", 0),
                       "letter": reasons.get(split, {}).get("letter_answer", 0), "ambiguous": ambiguous_golds,
                       "usable": len(usable), "multi_value": multi, "single_value": rows - ambiguous_golds - multi})
    return counts


def gold_table(counts: list[dict]) -> Table:
    rows = [(c["split"], c["rows"], c["no_gold"], c["letter"], c["ambiguous"], c["usable"], c["multi_value"],
             "{} / {}".format(*PAPER_GOLD_COUNTS.get(c["split"], ("-", "-")))) for c in counts]
    without_lists = "; ".join(f"{c['split']}: {c['rows']:,} rows less {c['ambiguous']:,} ambiguous and "
                              f"{c['multi_value']:,} multi-value golds is {c['single_value']:,}" for c in counts)
    return Table("Gold answers", ("split", "source rows", "no boxed gold", "letter answer", "ambiguous gold",
                                  "usable gold", "of which multi-value", "paper (usable / rows)"), rows,
                 note="`no boxed gold`: no `\\boxed{}` with content in the normal form (an empty box, `\\text{}`). "
                      "`letter answer`: the answer names lettered choices of the problem (\"(C)\", \"A, D\"), which "
                      "the release's own option letters would confuse. `ambiguous gold`: boxed answers that "
                      "math-verify does not find equivalent. `multi-value`: golds that list several values (\"6, -2\", "
                      "the roots of an equation); they are kept, since math-verify compares them as sets (\"-2, 6\" "
                      "equals \"6, -2\", \"6\" alone does not). Leaving them out, as the paper may have: "
                      f"{without_lists}.")


def engine_table(equivalence: MathEquivalence) -> Table:
    stats = equivalence.stats
    note = ("math-verify reads every distinct answer in worker processes (plain numbers need no reading); pairs are "
            "judged from the readings alone where two symbol-free values differ, else by math-verify (both ways). "
            "Comparisons that hit the time limit or failed prove nothing: such a candidate is never shown beside "
            "the answer it could not be compared with.")
    if stats.hanging:
        note += " Answers that could not be read or compared in time: " + ", ".join(f"`{a}`" for a in stats.hanging[:10]) + "."
    return Table("Equivalence engine", ("quantity", "count"),
                 [("distinct answers read", stats.answers), ("pairs judged", stats.pairs),
                  ("pairs settled from the readings", stats.prejudged), ("timeouts", stats.timeouts),
                  ("errors", stats.errors), ("pairs skipped (an answer hangs)", stats.skipped)], note=note)


def card_context(options: Any, collected: collect.Collected | None, golds: list[dict], configs: Configs) -> dict:
    """What ``cards/math_mc.md`` reads."""
    return {
        "same_in_every_set": mc.same_in_every_set(configs),
        "choices": options.choices, "sets": options.sets, "draw": options.draw, "timeout": options.equivalence_timeout,
        "paper_test_golds": PAPER_TEST_GOLDS, **collect.card_context(options, collected), "gold_counts": golds,
        "demonstrations": demonstrations_text(configs, by_subject=True),
    }
