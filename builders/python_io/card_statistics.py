"""The card's statistics and context: the pairs the tests gave and how many verified, the sandbox runs, the
predictions and their pools, the answer positions (the items kept and excluded are the core's outcome table)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from builders.core.build.result import Configs
from builders.core.items.tables import Statistics, Table
from builders.core.sources.predictions import MatchReport
from builders.from_predictions import sets as mc
from builders.from_predictions.tasks import demonstrations_text

from .problems import OUTPUT_SPLITS, CallPair, Row
from .transform import Distractors, Verification
from .verify import VerificationStats, Verified

PAPER_COUNTS = {"test": 1684, "train": 966}  # the paper's PythonIO


class Shown(Protocol):
    """The options the card states (PythonIO's ``Options``)."""

    choices: int
    sets: int
    draw: str
    predictions: tuple[str, ...]
    generate_with: tuple[str, ...]
    keep_docstrings: bool
    max_output_chars: int
    call_timeout: float
    unsafe_no_sandbox: bool


def statistics(rows: Mapping[str, Sequence[Row]], verification: Verification, distractors: Distractors,
               configs: Configs, options: Shown) -> Statistics:
    tables = Statistics([*_pair_tables(rows, verification.verified, configs),
                         _verification_table(verification.stats, options),
                         *_prediction_tables(distractors.report, distractors.failures, distractors.counts)])
    tables.extend(mc.pool_statistics(list(distractors.pools.values()), options.choices))
    tables.add(mc.position_table(configs))
    return tables


def _pair_tables(rows: Mapping[str, Sequence[Row]], verified: Sequence[Verified], configs: Configs) -> list[Table]:
    rows_in: Counter = Counter()
    pairs: Counter = Counter()
    kept: Counter = Counter()
    for row in (row for split_rows in rows.values() for row in split_rows):
        rows_in[(row.problem.benchmark, row.problem.split)] += 1
        if isinstance(row, CallPair):
            pairs[(row.problem.benchmark, row.problem.split)] += 1
    for v in verified:
        kept[(v.pair.problem.benchmark, v.pair.problem.split)] += 1
    default = configs.get("default", {})
    per_split = [(split, sum(n for (b, s), n in kept.items() if s == split), len(default[split]), PAPER_COUNTS[split])
                 for split in OUTPUT_SPLITS if split in default]
    return [
        Table("Pairs from the tests", ("source", "split", "assert statements", "(program, call, literal) pairs",
                                       "verified"),
              [(b, s, rows_in[(b, s)], pairs[(b, s)], kept[(b, s)]) for b, s in sorted(rows_in)]),
        Table("Items per split", ("split", "verified pairs", "items with enough distractors", "paper"), per_split,
              note="Next to the paper's PythonIO (which does not say how it filtered)."),
    ]


def _verification_table(stats: VerificationStats, options: Shown) -> Table:
    mode = ("**without isolation** (`--unsafe-no-sandbox`)" if options.unsafe_no_sandbox
            else "in bubblewrap sandboxes (no network, read-only root, private /tmp, rlimits)")
    return Table("Verification in the sandbox", ("quantity", "value"),
                 [("calls", stats.pairs), ("sandbox runs", stats.runs), ("rounds", stats.rounds),
                  ("CPU seconds per call (limit)", options.call_timeout), ("memory limit", stats.mechanism)],
                 note=f"Every reference program ran {mode}, in a forked process of its own; a fresh one after a call "
                      "that overran its time. Timings (seconds, runs and calls per second) go to the build log, not "
                      "here: the same build gives the same card on any machine.")


def _prediction_tables(report: MatchReport, failures: Mapping[str, int], counts: Mapping[str, Any]) -> list[Table]:
    tables = [Table("Predictions", ("quantity", "count"),
                    [("rows read or generated", report.read.total()),
                     ("rows that map onto an item", report.matched.total()),
                     ("verified items with a prediction", counts["items_with_predictions"]),
                     ("distinct predicted texts", counts["distinct_outputs"]),
                     ("of which a Python value", counts["valid_values"]),
                     ("rows whose text is not a literal (not_a_literal)", counts["not_a_literal"]),
                     ("candidates equal to another option up to whitespace", counts["case_clashes_dropped"]),
                     ("candidates equal to the gold up to float rounding", counts["near_gold_dropped"])],
                    note="A predicted text is a Python value when it is a literal (or set(), frozenset(...), "
                         "float('inf'), float('-inf') or complex(...) of literals). It is read, never run: any other "
                         "text, an expression included, is not_a_literal and counts as invalid for its model.")]
    if report.reasons:
        tables.append(Table("Prediction rows not used", ("reason", "rows"), sorted(report.reasons.items())))
    if any(failures.values()):
        tables.append(Table("Requests that failed for good (left out)", ("model", "requests"),
                            sorted((m, n) for m, n in failures.items() if n)))
    return tables


def card_context(options: Shown, report: MatchReport, configs: Configs) -> dict[str, Any]:
    """What ``cards/python_io.md`` reads."""
    return {
        "same_in_every_set": mc.same_in_every_set(configs),
        "choices": options.choices, "sets": options.sets, "draw": options.draw, "keep_docstrings": options.keep_docstrings,
        "unsafe": options.unsafe_no_sandbox, "call_timeout": options.call_timeout,
        "max_output_chars": options.max_output_chars, "paper_counts": PAPER_COUNTS,
        "generated_models": list(options.generate_with), "prediction_files": len(options.predictions),
        "models": sorted(report.matched), "demonstrations": demonstrations_text(configs),
    }

