"""The consensus check: items whose source key the models' answers contradict.

GSM8K and MATH carry label errors (GSM8K-Platinum relabelled or removed about 8% of GSM8K's test set). On
such an item the true answer usually sits among the distractors, as the answer most models agree on, and
the weighted draw shows it in almost every set. An item is ``suspect_key`` when one wrong value is given by

* at least :attr:`ConsensusRule.min_models` models,
* at least :attr:`ConsensusRule.min_share` of the models with a valid answer to the item, and
* at least :attr:`ConsensusRule.ratio` times as many models as gave the key (any number when none did).

The figures were set on the shared GSM8K predictions (14 systems on every question): the rule finds 5 of
the 6 known wrong keys named in the project's issue 22 (the sixth, ``gsm8k/test/288``, is one that 42
models answer with the key) and flags 2% of the items. Builders exclude suspect items by default, with the
value the models agree on, and list them in the card; ``--keep-suspect-keys`` keeps them.
"""

from __future__ import annotations

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

    def describe(self) -> str:
        return (f"one wrong value is given by at least {self.min_models} models, by at least {self.min_share:.0%} of "
                f"the models with a valid answer, and by at least {self.ratio} times as many models as gave the key")


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


def answer_counts(pool: Pool) -> tuple[int, Counter, int]:
    """(models that gave the key, models per wrong value, models with a valid answer). A left-out candidate (the
    key in another unit, or rounded) is another form of the key: it counts as valid, never against the key."""
    wrong: Counter = Counter({c.text: c.count for c in pool.candidates})
    other_forms = sum(left.candidate.count for left in pool.left_out)
    return len(pool.correct), wrong, len(pool.correct) + wrong.total() + other_forms


def suspect(pool: Pool, rule: ConsensusRule = RULE) -> Suspect | None:
    key_models, wrong, valid = answer_counts(pool)
    if not wrong:
        return None
    agreeing = max(wrong.values())
    if agreeing < rule.min_models or agreeing < rule.min_share * valid or agreeing < rule.ratio * key_models:
        return None
    values = tuple(sorted(text for text, n in wrong.items() if n == agreeing))
    return Suspect(pool.question_id, pool.gold, values, agreeing, key_models, valid)


def suspects(pools: Mapping[str, Pool], rule: ConsensusRule = RULE) -> dict[str, Suspect]:
    found = {item_id: suspect(pool, rule) for item_id, pool in pools.items()}
    return {item_id: s for item_id, s in found.items() if s is not None}


def suspect_table(found: Mapping[str, Suspect], items: int, kept: bool, rule: ConsensusRule = RULE) -> Table:
    status = "kept (--keep-suspect-keys)" if kept else "excluded"
    note = (f"Consensus check: an item's key is suspect when {rule.describe()}. {len(found)} of {items} items "
            f"({len(found) / items if items else 0:.1%}) are suspect; they are {status}"
            + ("." if kept else f" with the reason `{REASON}`.")
            + " The value the models agree on is often the correct answer (GSM8K-Platinum relabelled such GSM8K keys).")
    rows = [(s.item_id, s.key, " or ".join(s.values), s.agreeing, s.key_models, s.valid_models, status)
            for s in sorted(found.values(), key=lambda s: _id_order(s.item_id))]
    return Table("Suspect keys", ("item", "key", "models agree on", "models agreeing", "models giving the key",
                                  "models with a valid answer", "status"), rows, note=note)


def _id_order(item_id: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in item_id.split("/"))


def no_suspect_check(pool_rows: Iterable[dict], rule: ConsensusRule = RULE) -> Check:
    """Re-checked from the pool report's plain rows (models per answer), apart from :func:`suspect`: no
    released item has a key that the rule calls suspect."""
    counts = {}
    for row in pool_rows:
        per_value: Counter = Counter()
        for entry in row["candidates"]:
            per_value[entry["text"]] += len(set(entry["models"]))
        other_forms = sum(len(set(entry["models"])) for entry in row.get("left_out", []))
        counts[row["question_id"]] = (len(row["correct"]), per_value, other_forms)

    def violations(build: Build) -> Iterable[str]:
        for config, split, records in build.records():
            for record in records:
                key_models, per_value, other_forms = counts.get(record.id, (0, Counter(), 0))
                valid = key_models + sum(per_value.values()) + other_forms
                for value, n in per_value.items():
                    if n >= rule.min_models and n >= rule.min_share * valid and n >= rule.ratio * key_models:
                        yield (f"{config}/{split} {record.id}: {n} of {valid} models answer {value!r}, "
                               f"{key_models} the key")
                        break

    return Check("no_suspect_key", f"no released item's key is contradicted by a model consensus ({rule.describe()})",
                 violations)
