"""The shortcut audit: how far no-knowledge answering rules get on each config of a release.

A release with a layout that gives the answer away corrupts every evaluation run on it. So every build is
scored, from its records (what a model sees: question and options), by rules that use no knowledge:
always the first or the last position, the gold-position prior of the few-shot split, the longest and the
shortest option, the number nearest and farthest from the options' mean, always "None of the above", always
a "Both X and Y" option, plus the builder's own rules; and by a model that learns from the options alone
(:mod:`.adversary`), for the shortcuts no rule lists. A rule abstains on an item it does not apply to (no
numeric options, no pair, a tie) and is scored only over the items it applies to, beside chance over those
items (the mean of 1/number of options). Every ordering rule has its mirror, since a rule far below chance
is a shortcut too: its mirror is far above.

A rule warns, in the report and on the console, when it beats chance beyond sampling noise and by a practical
margin relative to chance, unless the builder declares it inherent to its design (with the reason). Sampling noise
is a one-sided binomial test for the whole audit (Bonferroni: each row's p-value times the number of rows), so a
release of ten randomly laid-out sets does not warn by chance on one of its sixty rows. A row so small that a
strong rule could not warn says so instead of "ok". These judgements are :mod:`.significance`'s, which the
choices-only model shares.

The rules here are written independently of every builder's code: they read the released options only.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Mapping, Sequence

import numpy as np

from builders.core.items.record import MCQRecord
from builders.core.items.tables import Table
from builders.core.build.result import Baseline, Build
from builders.core.validation.adversary import AdversaryRow, row_status
from builders.core.validation.significance import (
    INHERITED,
    THRESHOLD_WORDS,
    TOO_SMALL_MARGIN,
    binomial_p_value,
    inherit_from_source,
    practically_large,
    significantly_above_chance,
    spread,
    status,
    where,
    too_small,
)

_NONE_OF_THE_ABOVE = re.compile(r"^\s*none\s+of\s+the\s+(above|others|options|choices|these)\b", re.I)
_BOTH = re.compile(r"^\s*both\b.+\b(and|&)\b.+\b(are|is)\s+(correct|true|right)\s*\.?\s*$", re.I | re.S)


def _first(record: MCQRecord) -> int:
    return 0


def _last(record: MCQRecord) -> int:
    return len(record.choices) - 1


def _extreme(values: Sequence[float] | None, pick) -> int | None:
    """The index of the one option whose value is ``pick`` (max or min); None (the rule abstains) when the
    values are missing or several options share the extreme."""
    if values is None or not values:
        return None
    target = pick(values)
    found = [i for i, v in enumerate(values) if v == target]
    return found[0] if len(found) == 1 else None


def _lengths(record: MCQRecord) -> list[float]:
    return [float(len(c)) for c in record.choices]


def _mean_distances(record: MCQRecord) -> list[float] | None:
    """Each option's distance to the mean of the item's options, when every option is one number."""
    parsed = [_number(c) for c in record.choices]
    values = [v for v in parsed if v is not None]
    if len(values) != len(parsed):
        return None
    mean = sum(values) / len(values)
    return [abs(v - mean) for v in values]


@lru_cache(maxsize=1 << 18)
def _number(option: str) -> float | None:
    """An option that is one number ("1,250", "$3.50", "12%", "-4"), else None. Written apart from the
    adversary's parser: the rule and the model are two readings of the options."""
    text = re.sub(r"\\?[$%]|\s", "", option)
    if not re.fullmatch(r"-?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?|-?\.\d+", text):
        return None
    return float(text.replace(",", ""))


def _matching(pattern: re.Pattern) -> Callable[[MCQRecord], int | None]:
    def predict(record: MCQRecord) -> int | None:
        return next((i for i, c in enumerate(record.choices) if pattern.search(c)), None)
    return predict


class SplitColumns:
    """One config/split's records as arrays, read once for every rule: the rules that have a ``predict_all``
    answer all its items at once. ``options`` lists every option of every item, item after item."""

    def __init__(self, records: Sequence[MCQRecord], readings: dict[str, int] | None = None):
        """``readings``: option text -> :func:`_readings`, shared by the splits of a build (every config of a
        perturbation release shows the same options)."""
        self.records = records
        self.known = {} if readings is None else readings
        self.counts = np.fromiter((len(r.choices) for r in records), dtype=np.int64, count=len(records))
        self.answers = np.fromiter((r.answer for r in records), dtype=np.int64, count=len(records))
        self.options = [choice for record in records for choice in record.choices]
        self.starts = np.cumsum(self.counts) - self.counts
        self.item = np.repeat(np.arange(len(records)), self.counts)
        self.local = np.arange(len(self.options)) - self.starts[self.item]
        # every item has an option: an array reduction per item is then defined (a well-formed build's are)
        self.regular = bool(len(records)) and int(self.counts.min()) > 0
        self._lengths: np.ndarray | None = None
        self._readings: np.ndarray | None = None

    @property
    def lengths(self) -> np.ndarray:
        if self._lengths is None:
            self._lengths = np.fromiter(map(len, self.options), dtype=np.int64, count=len(self.options))
        return self._lengths

    def marks(self, reading: int) -> np.ndarray:
        """Which options have ``reading`` (:data:`ONE_NUMBER`, :data:`NOTA_OPENING`, :data:`BOTH_CORRECT`)."""
        if self._readings is None:
            values = list(map(self.known.get, self.options))  # a dictionary's lookup, a tenth of a cached call's
            for index in [i for i, value in enumerate(values) if value is None]:
                option = self.options[index]
                values[index] = self.known[option] = _readings(option)
            self._readings = np.array(values, dtype=np.int64)
        return (self._readings & reading) > 0

    def first_marked(self, marks: np.ndarray) -> np.ndarray:
        """Per item, the first marked option, or -1."""
        firsts = np.minimum.reduceat(np.where(marks, self.local, np.iinfo(np.int64).max), self.starts)
        return np.where(np.logical_or.reduceat(marks, self.starts), firsts, -1)

    def only_marked(self, marks: np.ndarray) -> np.ndarray:
        """Per item, the one marked option, or -1 when none or several are."""
        return np.where(np.add.reduceat(marks.astype(np.int64), self.starts) == 1, self.first_marked(marks), -1)

    def extreme(self, values: np.ndarray, pick) -> np.ndarray:
        """Per item, the one option whose value is the item's ``pick`` (np.maximum or np.minimum), or -1 on a tie."""
        return self.only_marked(values == pick.reduceat(values, self.starts)[self.item])

    def per_record(self, predict: Callable[[MCQRecord], int | None], where: np.ndarray) -> np.ndarray:
        """``predict`` item by item on the items of the mask ``where``; -1 elsewhere and where it abstains."""
        picks = np.full(len(self.records), -1, dtype=np.int64)
        for index in np.flatnonzero(where).tolist():
            pick = predict(self.records[index])
            if pick is not None:
                picks[index] = pick
        return picks


ONE_NUMBER, NOTA_OPENING, BOTH_CORRECT = 1, 2, 4


def _readings(option: str) -> int:
    """What the rules read in one option's text, as flags, once per distinct text."""
    return ((ONE_NUMBER if _number(option) is not None else 0) | (NOTA_OPENING if _NONE_OF_THE_ABOVE.search(option) else 0)
            | (BOTH_CORRECT if _BOTH.search(option) else 0))


def _numeric_items(columns: SplitColumns) -> np.ndarray:
    """The items whose every option is one number: the only ones the mean rules apply to."""
    return np.logical_and.reduceat(columns.marks(ONE_NUMBER), columns.starts)


def _mean_rule(pick) -> Callable[[SplitColumns], np.ndarray]:
    predict = _mean_predict(pick)
    return lambda columns: columns.per_record(predict, _numeric_items(columns))


def _mean_predict(pick) -> Callable[[MCQRecord], int | None]:
    return lambda r: _extreme(_mean_distances(r), pick)


# Each rule twice: item by item (``predict``, what it means), and over a split's arrays at once (``predict_all``,
# what the audit runs), which picks the same; tests/test_audit.py holds the two to each other.
COMMON_BASELINES = [
    Baseline("always_first", "always the first option", _first, mirror="always_last",
             predict_all=lambda columns: np.zeros(len(columns.counts), dtype=np.int64)),
    Baseline("always_last", "always the last option", _last, mirror="always_first",
             predict_all=lambda columns: columns.counts - 1),
    Baseline("longest_option", "the longest option (abstains on a tie)", lambda r: _extreme(_lengths(r), max),
             mirror="shortest_option", predict_all=lambda columns: columns.extreme(columns.lengths, np.maximum)),
    Baseline("shortest_option", "the shortest option (abstains on a tie)", lambda r: _extreme(_lengths(r), min),
             mirror="longest_option", predict_all=lambda columns: columns.extreme(columns.lengths, np.minimum)),
    Baseline("closest_to_mean", "the number nearest the mean of the options (numeric items; abstains on a tie)",
             _mean_predict(min), mirror="farthest_from_mean", predict_all=_mean_rule(min)),
    Baseline("farthest_from_mean", "the number farthest from the mean of the options (numeric items; abstains on "
             "a tie)", _mean_predict(max), mirror="closest_to_mean", predict_all=_mean_rule(max)),
    Baseline("always_none_of_the_above", 'the "None of the above" option where there is one', _matching(_NONE_OF_THE_ABOVE),
             predict_all=lambda columns: columns.first_marked(columns.marks(NOTA_OPENING))),
    Baseline("always_both", 'a "Both X and Y are correct" option where there is one', _matching(_BOTH),
             predict_all=lambda columns: columns.first_marked(columns.marks(BOTH_CORRECT))),
]


@dataclass(frozen=True)
class AuditRow:
    config: str
    split: str
    baseline: str
    items: int  # the split's items
    applies: int  # the items where the rule picks an option: accuracy and chance are over these only
    accuracy: float
    chance: float
    inherent: str | None  # the builder's reason, when the rule beats chance by design
    tests: int = 1  # rows in the whole audit: the family the warning level is corrected for

    @property
    def p_value(self) -> float:
        """How likely guessing at chance scores this well (one-sided binomial)."""
        return binomial_p_value(round(self.accuracy * self.applies), self.applies, self.chance)

    @property
    def warns(self) -> bool:
        return (self.inherent is None and practically_large(self.accuracy, self.chance)
                and significantly_above_chance(self.accuracy, self.chance, self.applies, self.tests))

    @property
    def too_small(self) -> bool:
        return too_small(self.applies, self.chance, self.tests)

    @property
    def status(self) -> str:
        return status(self.warns, self.inherent, self.too_small)


def audit(build: Build) -> list[AuditRow]:
    baselines = COMMON_BASELINES + list(build.release.baselines)
    fewshot = build.source.benchmark.fewshot_split
    rows = []
    readings: dict[str, int] = {}
    for config, splits in build.configs.items():
        prior = _position_prior(splits.get(fewshot or "", []))
        for split, records in splits.items():
            if not records or split == fewshot:
                continue
            columns = SplitColumns(records, readings)
            for baseline in baselines:
                row = _row(config, split, baseline.name, columns, _picks(columns, baseline.predict,
                                                                         baseline.predict_all), build)
                if row is not None:  # None: the rule never applies here ("always NOTA" without NOTA options)
                    rows.append(row)
            if prior is not None:
                row = _row(config, split, "fewshot_position_prior", columns, _prior_picks(columns, prior), build)
                if row is not None:
                    rows.append(row)
    return inherit_from_source([replace(row, tests=len(rows)) for row in rows], build.about.unchanged_config,
                               lambda row: row.baseline, lambda row: row.applies)


def _picks(columns: SplitColumns, predict: Callable[[MCQRecord], int | None],
           predict_all: Callable[[SplitColumns], np.ndarray] | None) -> np.ndarray:
    """The rule's pick on every item of the split, -1 where it abstains."""
    if predict_all is not None and columns.regular:
        return np.asarray(predict_all(columns), dtype=np.int64)
    return columns.per_record(predict, np.ones(len(columns.records), dtype=bool))


def _prior_picks(columns: SplitColumns, prior: int) -> np.ndarray:
    """The few-shot split's most frequent gold position, on every item that has it."""
    return np.where(prior < columns.counts, prior, -1)


def _row(config: str, split: str, name: str, columns: SplitColumns, picks: np.ndarray,
         build: Build) -> AuditRow | None:
    """The rule scored over the items it applies to; it abstains on the others."""
    applied = picks >= 0
    count = int(applied.sum())
    if not count:
        return None
    correct = int((picks[applied] == columns.answers[applied]).sum())
    # summed one item after the other, as the items come: the same float as a sum over the records
    chance = sum((1 / columns.counts[applied]).tolist()) / count
    inherent = build.release.inherent_baselines.get(f"{config}/{name}", build.release.inherent_baselines.get(name))
    return AuditRow(config, split, name, len(columns.records), count, correct / count, chance, inherent)


def _position_prior(records: Sequence[MCQRecord]) -> int | None:
    """The most frequent gold position of the few-shot split (a model can learn it from the demonstrations)."""
    counts = Counter(r.answer for r in records)
    return min(counts, key=lambda p: (-counts[p], p)) if counts else None


def audit_table(rows: Sequence[AuditRow]) -> Table:
    return Table(
        "Shortcut audit",
        ("config", "split", "rule", "applies to", "items", "accuracy", "chance", "beats chance by", "status"),
        [(r.config, r.split, r.baseline, r.applies, r.items, r.accuracy, r.chance, r.accuracy - r.chance, r.status)
         for r in rows],
        note=(f"Accuracy of answering rules that use no knowledge, from the released records, each scored only over "
              f"the items it applies to (it abstains on the others: no pair, no numeric options, a tie), beside "
              f"chance over those items (the mean of 1/number of options). Every ordering rule sits beside its "
              f"mirror (first and last, longest and shortest, nearest and farthest). A rule above chance {THRESHOLD_WORDS} "
              f"is a WARNING unless the design makes it so (inherent); a row where a rule {TOO_SMALL_MARGIN * 100:.0f} "
              f"points above chance could not warn has too few items to judge."),
        percent=("accuracy", "chance", "beats chance by"),
    )


def warnings(rows: Sequence[AuditRow]) -> list[str]:
    """One warning per rule and split, naming every config where it warns (PythonIO's sets warned one by one)."""
    groups: dict[tuple[str, str], list[AuditRow]] = {}
    for r in rows:
        if r.warns:
            groups.setdefault((r.baseline, r.split), []).append(r)
    return [f"{where(found)}: '{baseline}' answers {spread([r.accuracy for r in found], '.1%')} of "
            f"{spread([r.applies for r in found], 'd')} items (chance {spread([r.chance for r in found], '.1%')}): "
            "a no-knowledge shortcut" for (baseline, _), found in groups.items()]


def summary_by_rule(rows: Sequence[AuditRow]) -> Mapping[str, float]:
    """The highest accuracy each rule reaches over the configs (for quick reading in tests and logs)."""
    best: dict[str, float] = {}
    for row in rows:
        best[row.baseline] = max(best.get(row.baseline, 0.0), row.accuracy)
    return best


def summary_sentence(rules: Sequence[AuditRow], models: Sequence[AdversaryRow] = ()) -> str:
    """What the audit tables say, in one paragraph for the card: generated from their rows, so it cannot
    contradict them."""
    labelled = [(f"`{r.baseline}`", f"{r.config}/{r.split}", r.status, r.accuracy, r.chance, r.applies) for r in rules]
    labelled += [("the choices-only model", f"{r.config}/{r.split}", row_status(r), r.accuracy, r.chance, r.scored)
                 for r in models]
    if not labelled:
        return "The shortcut audit has nothing to score (no test split)."
    splits = len({row[1] for row in labelled})
    parts = [(f"The shortcut audit scores {len({r.baseline for r in rules})} answering rules that use no knowledge "
              f"and a choices-only model on {splits} config/split(s) ({len(labelled)} rows)")]
    warned = [row for row in labelled if row[2] == "WARNING"]
    if warned:
        parts.append(f"**{len(warned)} warning(s)**: " + "; ".join(_grouped(warned)))
    inherited = [row for row in labelled if row[2].startswith(f"inherent: {INHERITED}")]
    if inherited:
        parts.append(f"{INHERITED} (the source unchanged beats chance on it, and these rows by no more; see the "
                     "status column): " + "; ".join(_grouped(inherited)))
    inherent = [row for row in labelled if row[2].startswith("inherent") and row not in inherited]
    if inherent:
        parts.append("beating chance by design (declared inherent, see the status column): " + "; ".join(_grouped(inherent)))
    small = [row[5] for row in labelled if row[2] == "too few items to judge"]
    if small:
        parts.append(f"**{len(small)} row(s) have too few items to judge** (as few as {min(small)}): a shortcut "
                     f"{TOO_SMALL_MARGIN * 100:.0f} points above chance could go unseen there")
    ok = [row for row in labelled if row[2] == "ok"]
    if ok:
        name, where, _, accuracy, chance, n = max(ok, key=lambda row: row[3] - row[4])  # the first of equals
        others = "no other row" if warned or inherited or inherent or small else "no row"
        parts.append(f"{others} beats chance {THRESHOLD_WORDS}; the closest is {name} on {where}, {accuracy:.1%} "
                     f"against {chance:.1%} over {n} items")
    return "; ".join(parts) + "."


def _grouped(rows) -> list[str]:
    """Rows of one rule together: "`rule` on 3 config/splits (47.1%-50.2% against 25.0%)"."""
    by_name: dict[str, list] = {}
    for row in rows:
        by_name.setdefault(row[0], []).append(row)
    out = []
    for name, group in by_name.items():
        accuracies, chances = [row[3] for row in group], [row[4] for row in group]
        where = group[0][1] if len(group) == 1 else f"{len(group)} config/splits"
        spread = (f"{min(accuracies):.1%}" if min(accuracies) == max(accuracies)
                  else f"{min(accuracies):.1%}–{max(accuracies):.1%}")
        against = (f"{min(chances):.1%}" if round(min(chances), 3) == round(max(chances), 3)
                   else f"{min(chances):.1%}–{max(chances):.1%}")
        out.append(f"{name} on {where} ({spread} against {against})")
    return out
