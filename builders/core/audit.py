"""The shortcut audit: how far no-knowledge answering rules get on each config of a release.

A release with a layout that gives the answer away corrupts every evaluation run on it. So every build is
scored, from its records (what a model sees: question and options), by rules that use no knowledge:
always the first or the last position, the gold-position prior of the few-shot split, the longest
option, always "None of the above", always a "Both X and Y" option, plus the builder's own rules. Each
is reported beside chance (the mean of 1/number of options). A rule that beats chance by more than
:data:`WARN_MARGIN`, by more than sampling noise explains, is a warning, in the report and on the console,
unless the builder declares it inherent to its design (with the reason). Sampling noise is a one-sided
binomial test at :data:`WARN_P_VALUE` for the whole audit (Bonferroni: each row's p-value times the number
of rows), so a release of ten randomly laid-out sets does not warn by chance on one of its sixty rows.

The rules here are written independently of every builder's code: they read the released options only.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from .build import Baseline, Build
from .record import MCQRecord
from .tables import Table

WARN_MARGIN = 0.10
WARN_P_VALUE = 0.01
_NONE_OF_THE_ABOVE = re.compile(r"^\s*none\s+of\s+the\s+(above|others|options|choices|these)\b", re.I)
_BOTH = re.compile(r"^\s*both\b.+\b(and|&)\b.+\b(are|is)\s+(correct|true|right)\s*\.?\s*$", re.I | re.S)


def _first(record: MCQRecord) -> int:
    return 0


def _last(record: MCQRecord) -> int:
    return len(record.choices) - 1


def _longest(record: MCQRecord) -> int:
    lengths = [len(c) for c in record.choices]
    return lengths.index(max(lengths))


def _matching(pattern: re.Pattern) -> callable:
    def predict(record: MCQRecord) -> int | None:
        return next((i for i, c in enumerate(record.choices) if pattern.search(c)), None)
    return predict


COMMON_BASELINES = [
    Baseline("always_first", "always the first option", _first),
    Baseline("always_last", "always the last option", _last),
    Baseline("longest_option", "the longest option (first of equals)", _longest),
    Baseline("always_none_of_the_above", 'the "None of the above" option where there is one', _matching(_NONE_OF_THE_ABOVE)),
    Baseline("always_both", 'a "Both X and Y are correct" option where there is one', _matching(_BOTH)),
]


@dataclass(frozen=True)
class AuditRow:
    config: str
    split: str
    baseline: str
    items: int
    accuracy: float
    chance: float
    inherent: str | None  # the builder's reason, when the rule beats chance by design
    tests: int = 1  # rows in the whole audit: the family the warning level is corrected for

    @property
    def p_value(self) -> float:
        """How likely guessing at chance scores this well (one-sided binomial)."""
        from scipy.stats import binomtest

        correct = round(self.accuracy * self.items)
        return float(binomtest(correct, self.items, min(max(self.chance, 0.0), 1.0), alternative="greater").pvalue)

    @property
    def warns(self) -> bool:
        return self.inherent is None and self.accuracy > self.chance + WARN_MARGIN and self.p_value * self.tests < WARN_P_VALUE


def audit(build: Build) -> list[AuditRow]:
    baselines = COMMON_BASELINES + list(build.baselines)
    fewshot = build.source.benchmark.fewshot_split
    rows = []
    for config, splits in build.configs.items():
        prior = _position_prior(splits.get(fewshot or "", []))
        for split, records in splits.items():
            if not records or split == fewshot:
                continue
            chance = sum(1 / len(r.choices) for r in records) / len(records)
            for baseline in baselines:
                if not any(baseline.predict(r) is not None for r in records):
                    continue  # the rule never applies here ("always NOTA" without NOTA options)
                rows.append(_row(config, split, baseline.name, records, baseline.predict, chance, build))
            if prior is not None:
                rows.append(_row(config, split, "fewshot_position_prior", records,
                                 lambda r, p=prior: p if p < len(r.choices) else None, chance, build))
    return [replace(row, tests=len(rows)) for row in rows]


def _row(config: str, split: str, name: str, records: Sequence[MCQRecord], predict, chance: float,
         build: Build) -> AuditRow:
    correct = sum(1 for r in records if predict(r) == r.answer)
    inherent = build.inherent_baselines.get(f"{config}/{name}", build.inherent_baselines.get(name))
    return AuditRow(config, split, name, len(records), correct / len(records), chance, inherent)


def _position_prior(records: Sequence[MCQRecord]) -> int | None:
    """The most frequent gold position of the few-shot split (a model can learn it from the demonstrations)."""
    counts = Counter(r.answer for r in records)
    return min(counts, key=lambda p: (-counts[p], p)) if counts else None


def audit_table(rows: Sequence[AuditRow]) -> Table:
    return Table(
        "Shortcut audit",
        ("config", "split", "rule", "items", "accuracy", "chance", "beats chance by", "status"),
        [(r.config, r.split, r.baseline, r.items, r.accuracy, r.chance, r.accuracy - r.chance,
          "WARNING" if r.warns else (f"inherent: {r.inherent}" if r.inherent else "ok")) for r in rows],
        note=(f"Accuracy of answering rules that use no knowledge, from the released records, beside chance "
              f"(the mean of 1/number of options). A rule more than {WARN_MARGIN:.0%} above chance (and beyond "
              f"sampling noise: binomial p < {WARN_P_VALUE} over the whole audit, Bonferroni-corrected) is a "
              f"WARNING unless the design makes it so (inherent)."),
        percent=("accuracy", "chance", "beats chance by"),
    )


def warnings(rows: Sequence[AuditRow]) -> list[str]:
    return [f"{r.config}/{r.split}: '{r.baseline}' answers {r.accuracy:.1%} of {r.items} items (chance "
            f"{r.chance:.1%}): a no-knowledge shortcut" for r in rows if r.warns]


def summary_by_rule(rows: Sequence[AuditRow]) -> Mapping[str, float]:
    """The highest accuracy each rule reaches over the configs (for quick reading in tests and logs)."""
    best: dict[str, float] = {}
    for row in rows:
        best[row.baseline] = max(best.get(row.baseline, 0.0), row.accuracy)
    return best
