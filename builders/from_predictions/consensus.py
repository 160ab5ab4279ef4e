"""The consensus check: items whose source key the models' answers contradict.

GSM8K and MATH carry label errors (GSM8K-Platinum relabelled or removed about 8% of GSM8K's test set). On
such an item the true answer usually sits among the distractors, as the answer most models agree on, and
the weighted draw shows it in almost every set. An item is ``suspect_key`` when one wrong value is given by

* at least :attr:`ConsensusRule.min_models` models,
* at least :attr:`ConsensusRule.min_share` of the models with a valid answer to the item, and
* at least :attr:`ConsensusRule.ratio` times as many models as gave the key (any number when none did).

A model counts once however many samples it gave (MATH-MC's shared predictions hold 8 samples of one model,
``qwen2.5-math-instruct#0`` ... ``#7``),
and a model that gives the key on none of the (at least :attr:`ConsensusRule.min_error_only_items`) items it
answers is not counted at all: its rows hold errors only (GSM8K-Platinum's prediction rows list its panel's
mistakes), and say nothing of which answer is right. The validator re-counts both from the pool report.

The figures were set on the shared GSM8K predictions (14 systems on every question), where the rule flags about
2% of the items. Builders exclude suspect items by default, with the value the models agree on, and list them in
the card; ``--keep-suspect-keys`` keeps them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Mapping

from builders.core.items.tables import Table
from builders.core.build.result import Build, Check
from builders.core.items.outcomes import Exclude

from .pools import Pool

REASON = "suspect_key"


@dataclass(frozen=True)
class ConsensusRule:
    min_models: int = 3
    min_share: float = 0.2
    ratio: int = 3
    min_error_only_items: int = 10  # a model with no key among this many answered items holds errors only

    def describe(self) -> str:
        return (f"one wrong value is given by at least {self.min_models} models, by at least {self.min_share:.0%} of "
                f"the models with a valid answer, and by at least {self.ratio} times as many models as gave the key "
                f"(each model counted once, however many samples it gave; a model that gave no key on any of the "
                f"{self.min_error_only_items} or more items it answered holds errors only and is not counted)")


RULE = ConsensusRule()


@dataclass(frozen=True)
class Suspect:
    """An item whose key the models contradict: the value(s) they agree on and the counts behind it."""

    item_id: str
    key: str
    values: tuple[str, ...]  # the wrong value(s) with the most models (several on a tie)
    agreeing: int  # models that gave each of ``values``
    key_models: int  # models that gave the key
    valid_models: int  # models with a valid answer

    def exclusion(self) -> Exclude:
        return Exclude(REASON, "key", f"{self.agreeing} of {self.valid_models} models answer "
                       f"{' or '.join(self.values)}, {self.key_models} the key {self.key}")


_SAMPLE = re.compile(r"#\d+$")


def model_of(name: str) -> str:
    """The model a prediction's model name is a sample of: ``qwen2.5-math-instruct#3`` is the 4th sample of
    ``qwen2.5-math-instruct`` (a name with no ``#k`` suffix is its own model)."""
    return _SAMPLE.sub("", name)


def _models(names: Iterable[str]) -> set[str]:
    return {model_of(name) for name in names}


def error_only_models(pools: Iterable[Pool], rule: ConsensusRule = RULE) -> frozenset[str]:
    """The models that gave no key on any of at least :attr:`ConsensusRule.min_error_only_items` items they
    answered: rows that hold only errors (GSM8K-Platinum's prediction rows list the mistakes of its panel's models,
    never their correct answers), which say nothing of which answer is right."""
    answered: Counter = Counter()
    keyed: set[str] = set()
    for pool in pools:
        keyed.update(_models(pool.correct))
        answered.update(_models(m for c in (*pool.candidates, *(left.candidate for left in pool.left_out))
                                for m in c.models))
    return frozenset(m for m, n in answered.items() if m not in keyed and n >= rule.min_error_only_items)


def answer_counts(pool: Pool, ignored: frozenset[str] = frozenset()) -> tuple[int, Counter, int]:
    """(models that gave the key, models per wrong value, models with a valid answer), each model counted once
    however many samples it gave, the ``ignored`` ones (:func:`error_only_models`) not at all. A left-out candidate
    (the key in another unit, or rounded; in GSM-MC also a value of another kind than a count question's answer, or a
    second rounding of a candidate) counts as a valid answer, never against the key: a count question's models
    agreeing on 47.25 hours are no evidence that its whole key is wrong."""
    key = _models(pool.correct) - ignored
    wrong: Counter = Counter({c.text: len(_models(c.models) - ignored) for c in pool.candidates})
    valid = key | _models(m for c in pool.candidates for m in c.models) | _models(
        m for left in pool.left_out for m in left.candidate.models)
    return len(key), +wrong, len(valid - ignored)


def suspect(pool: Pool, rule: ConsensusRule = RULE, ignored: frozenset[str] = frozenset()) -> Suspect | None:
    key_models, wrong, valid = answer_counts(pool, ignored)
    if not wrong:
        return None
    agreeing = max(wrong.values())
    if agreeing < rule.min_models or agreeing < rule.min_share * valid or agreeing < rule.ratio * key_models:
        return None
    values = tuple(sorted(text for text, n in wrong.items() if n == agreeing))
    return Suspect(pool.question_id, pool.gold, values, agreeing, key_models, valid)


def suspects(pools: Mapping[str, Pool], rule: ConsensusRule = RULE) -> dict[str, Suspect]:
    ignored = error_only_models(pools.values(), rule)
    found = {item_id: suspect(pool, rule, ignored) for item_id, pool in pools.items()}
    return {item_id: s for item_id, s in found.items() if s is not None}


def suspect_table(found: Mapping[str, Suspect], items: int, kept: bool, rule: ConsensusRule = RULE,
                  measured: str = "") -> Table:
    """The flags, with the rule; ``measured``: what a reading of the flagged items found, where a builder has it."""
    status = "kept (--keep-suspect-keys)" if kept else "excluded"
    note = (f"Consensus check: an item's key is suspect when {rule.describe()}. {len(found)} of {items} items "
            f"({len(found) / items if items else 0:.1%}) are suspect; they are {status}"
            + ("." if kept else f" with the reason `{REASON}`.")
            + (f" {measured}" if measured else " The value the models agree on can be the correct answer "
               "(GSM8K-Platinum relabelled such GSM8K keys), or a mistake most models share: a flag marks an item "
               "for review, not a wrong key."))
    rows = [(s.item_id, s.key, " or ".join(s.values), s.agreeing, s.key_models, s.valid_models, status)
            for s in sorted(found.values(), key=lambda s: _id_order(s.item_id))]
    return Table("Suspect keys", ("item", "key", "models agree on", "models agreeing", "models giving the key",
                                  "models with a valid answer", "status"), rows, note=note)


def _id_order(item_id: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in item_id.split("/"))


def no_suspect_check(pool_rows: Iterable[dict], rule: ConsensusRule = RULE) -> Check:
    """Re-checked from the pool report's plain rows (models per answer), apart from :func:`suspect`: no
    released item has a key that the rule calls suspect."""
    rows = list(pool_rows)

    def models(names: Iterable[str]) -> set[str]:  # "name#3", a sample of "name", by splitting, apart from model_of
        return {name.rsplit("#", 1)[0] if name.rsplit("#", 1)[-1].isdigit() else name for name in names}

    answered: Counter = Counter()
    keyed: set[str] = set()
    for row in rows:
        keyed.update(models(row["correct"]))
        answered.update(models(m for entry in [*row["candidates"], *row.get("left_out", [])] for m in entry["models"]))
    ignored = {m for m, n in answered.items() if m not in keyed and n >= rule.min_error_only_items}
    counts = {}
    for row in rows:
        per_value: Counter = Counter()
        for entry in row["candidates"]:
            per_value[entry["text"]] += len(models(entry["models"]) - ignored)
        valid = models(row["correct"]) | models(m for entry in [*row["candidates"], *row.get("left_out", [])]
                                                for m in entry["models"])
        counts[row["question_id"]] = (len(models(row["correct"]) - ignored), per_value, len(valid - ignored))

    def violations(build: Build) -> Iterable[str]:
        for config, split, records in build.records():
            for record in records:
                key_models, per_value, valid = counts.get(record.id, (0, Counter(), 0))
                for value, n in per_value.items():
                    if n >= rule.min_models and n >= rule.min_share * valid and n >= rule.ratio * key_models:
                        yield (f"{config}/{split} {record.id}: {n} of {valid} models answer {value!r}, "
                               f"{key_models} the key")
                        break

    return Check("no_suspect_key", f"no released item's key is contradicted by a model consensus ({rule.describe()})",
                 violations)
