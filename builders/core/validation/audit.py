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
    status,
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


def only_two_options(rule: Callable[[MCQRecord], int | None]) -> Callable[[MCQRecord], int | None]:
    """The mirror of a rule that picks a marked option: in a 2-option item where it applies, the other option;
    elsewhere it abstains (from 3 options no single option is the opposite of a marked one)."""
    def predict(record: MCQRecord) -> int | None:
        picked = rule(record) if len(record.choices) == 2 else None
        return None if picked is None else 1 - picked
    return predict


COMMON_BASELINES = [
    Baseline("always_first", "always the first option", _first, mirror="always_last"),
    Baseline("always_last", "always the last option", _last, mirror="always_first"),
    Baseline("longest_option", "the longest option (abstains on a tie)", lambda r: _extreme(_lengths(r), max),
             mirror="shortest_option"),
    Baseline("shortest_option", "the shortest option (abstains on a tie)", lambda r: _extreme(_lengths(r), min),
             mirror="longest_option"),
    Baseline("closest_to_mean", "the number nearest the mean of the options (numeric items; abstains on a tie)",
             lambda r: _extreme(_mean_distances(r), min), mirror="farthest_from_mean"),
    Baseline("farthest_from_mean", "the number farthest from the mean of the options (numeric items; abstains on "
             "a tie)", lambda r: _extreme(_mean_distances(r), max), mirror="closest_to_mean"),
    Baseline("always_none_of_the_above", 'the "None of the above" option where there is one', _matching(_NONE_OF_THE_ABOVE)),
    Baseline("always_both", 'a "Both X and Y are correct" option where there is one', _matching(_BOTH)),
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
    fewshot = build.source.benchmark.fewshot_split
    rows = []
    picks_of: dict[tuple[str, ...], tuple[int, ...]] = {}  # the common rules' picks (-1: abstains), per option tuple
    for config, splits in build.configs.items():
        prior = _position_prior(splits.get(fewshot or "", []))
        for split, records in splits.items():
            if not records or split == fewshot:
                continue
            scored = _Split(records, picks_of)
            named = [(b.name, scored.common[:, i]) for i, b in enumerate(COMMON_BASELINES)]
            named += [(b.name, _picks(records, b.predict)) for b in build.release.baselines]
            if prior is not None:
                named.append(("fewshot_position_prior", np.where(prior < scored.sizes, prior, -1)))
            for name, picks in named:
                row = scored.row(config, split, name, picks, build)
                if row is not None:  # None: the rule never applies here ("always NOTA" without NOTA options)
                    rows.append(row)
    return inherit_from_source([replace(row, tests=len(rows)) for row in rows], build.about.unchanged_config,
                               lambda row: row.baseline, lambda row: row.applies)


def _common_picks(choices: tuple[str, ...]) -> tuple[int, ...]:
    """What every common rule picks among these options (-1: it abstains). The common rules read the options only,
    so one reading serves every record that shows the same options, in whatever config."""
    record = MCQRecord("", "", choices, 0, "", "", "", 0)
    picks = (baseline.predict(record) for baseline in COMMON_BASELINES)
    return tuple(-1 if pick is None else pick for pick in picks)


def _picks(records: Sequence[MCQRecord], predict) -> np.ndarray:
    return np.array([-1 if pick is None else pick for pick in map(predict, records)], dtype=np.int64)


class _Split:
    """One config/split as arrays: the gold, the number of options, and the common rules' picks per record."""

    def __init__(self, records: Sequence[MCQRecord], picks_of: dict[tuple[str, ...], tuple[int, ...]]):
        self.items = len(records)
        self.answers = np.fromiter((r.answer for r in records), dtype=np.int64, count=len(records))
        self.sizes = np.fromiter((len(r.choices) for r in records), dtype=np.int64, count=len(records))
        table = []
        for record in records:
            picks = picks_of.get(record.choices)
            if picks is None:
                picks = picks_of[record.choices] = _common_picks(record.choices)
            table.append(picks)
        self.common = np.array(table, dtype=np.int64).reshape(len(records), len(COMMON_BASELINES))

    def row(self, config: str, split: str, name: str, picks: np.ndarray, build: Build) -> AuditRow | None:
        """The rule scored over the items it applies to; it abstains on the others (``picks`` -1)."""
        applied = picks >= 0
        count = int(applied.sum())
        if not count:
            return None
        correct = int((picks[applied] == self.answers[applied]).sum())
        # summed in record order, one item after another, as a Python sum of 1/len(choices) adds them
        chance = sum((1 / self.sizes[applied]).tolist()) / count
        inherent = build.release.inherent_baselines.get(f"{config}/{name}", build.release.inherent_baselines.get(name))
        return AuditRow(config, split, name, self.items, count, correct / count, chance, inherent)


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
    return [f"{r.config}/{r.split}: '{r.baseline}' answers {r.accuracy:.1%} of {r.applies} items (chance "
            f"{r.chance:.1%}): a no-knowledge shortcut" for r in rows if r.warns]


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
