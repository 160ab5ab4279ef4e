"""The choices-only adversary's second learner: gradient-boosted trees on the same option features.

The logistic ranking (:mod:`.adversary`) scores an option by a weighted sum of its features, so it sees a cue only
where one direction of one feature gives the key away in every item. Trees see what depends on a combination: a
feature that points to the key in one kind of item and away from it in another, or a key that sits between the
other options on two features at once. On GSM-MC's balanced draw such a model read 28-33% per set (chance 25%)
where the logistic ranking read 23-30%.

Each option is one row (its features relative to its item, :mod:`.option_features`), labelled gold or not; a
scikit-learn ``HistGradientBoostingClassifier`` of :data:`PARAMETERS` (no early stopping, so no random
validation split: the fit is a function of its rows) scores every option of a held-out item and the item is
answered by its best-scored option. Its folds are the adversary's own (by source question, drawn by content
hash), drawn until about :data:`PREDICTIONS` predictions are averaged, fewer than the logistic ranking's: a fit
costs tens of milliseconds, not one. Its strongest features are read by ablation: a feature replaced, in every
item, by its mean over the item's options carries nothing that tells the options apart, and the features whose
loss costs the fitted model the most answers are named, in the direction the key leans on them.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from builders.core.validation.option_features import DESCRIPTIONS, FEATURES

NAME = "gradient-boosted trees"
PARAMETERS = {"max_iter": 20, "max_leaf_nodes": 8, "learning_rate": 0.3, "min_samples_leaf": 20}
PREDICTIONS = 1_000  # a split of 1,000 items or more: one draw of folds; GSM-MC's 886 items: two
MAX_REPEATS = 5
EXPLAINED = 500  # items the features are ablated on (each ablation is a prediction of every option of them)
MIN_REPEATED = 100  # as the logistic ranking: a smaller split's interval is too wide for more draws to matter


def repeats(items: int) -> int:
    """How many times the folds are drawn for the trees on ``items`` items."""
    return 1 if items < MIN_REPEATED else max(1, min(MAX_REPEATS, math.ceil(PREDICTIONS / items)))


class Trees:
    """Every option of every item as one row, for the trees' fits; columns constant over all of them are left
    out (they cannot split and cost a histogram per iteration)."""

    def __init__(self, blocks: Sequence[np.ndarray], answers: Sequence[int]):
        rows = np.vstack(blocks)
        self.varying = np.flatnonzero(rows.min(axis=0) < rows.max(axis=0))
        self.rows = rows[:, self.varying]
        sizes = [len(b) for b in blocks]
        self.starts = np.cumsum([0, *sizes[:-1]])
        self.item = np.repeat(np.arange(len(blocks)), sizes)
        self.gold_rows = self.starts + np.asarray(answers)
        self.labels = np.zeros(len(rows), dtype=int)
        self.labels[self.gold_rows] = 1

    def fit(self, items: np.ndarray):
        """The trees fitted on the options of the ``items`` mask (None with no varying feature)."""
        from sklearn.ensemble import HistGradientBoostingClassifier

        if not len(self.varying):
            return None
        rows = items[self.item]
        model = HistGradientBoostingClassifier(early_stopping=False, random_state=0, **PARAMETERS)
        return model.fit(self.rows[rows], self.labels[rows])

    def answered(self, model, items: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Per item of the ``items`` mask, whether its best-scored option (the first of equal scores) is the gold
        (no model: the first option). ``rows``: the option rows to score (default: the trees' own)."""
        chosen = np.flatnonzero(items)
        starts, ends = self.starts[chosen], np.append(self.starts, len(self.labels))[chosen + 1]
        if model is None:
            return starts == self.gold_rows[chosen]
        scores = model.decision_function((self.rows if rows is None else rows)[items[self.item]])
        local = np.cumsum([0, *(ends - starts)[:-1]])  # each chosen item's first row among the scored
        best = np.repeat(np.maximum.reduceat(scores, local), ends - starts)
        first = np.minimum.reduceat(np.where(scores == best, np.arange(len(scores)), len(scores)), local)
        return first - local + starts == self.gold_rows[chosen]

    def correct(self, assigned: np.ndarray, folds: int) -> int:
        """Items answered right out of fold, over one draw of ``folds`` folds."""
        return sum(int(self.answered(self.fit(assigned != fold), assigned == fold).sum()) for fold in range(folds))

    def strongest(self, shown: int) -> tuple[str, ...]:
        """The features the trees, fitted on every item, lose the most answers without (each replaced by its mean
        over its item's options), in words, in the direction the gold leans from its item's mean; those losing at
        least a quarter of the strongest's loss. The ablations are scored on the first :data:`EXPLAINED` items."""
        everything = np.ones(len(self.starts), dtype=bool)
        model = self.fit(everything)
        if model is None:
            return ()
        everything[EXPLAINED:] = False
        base = int(self.answered(model, everything).sum())
        sizes = np.diff(np.append(self.starts, len(self.labels)))
        means = np.add.reduceat(self.rows, self.starts, axis=0) / sizes[:, None]
        lean = (self.rows[self.gold_rows] - means).sum(axis=0)
        losses = []
        for column in range(self.rows.shape[1]):
            ablated = self.rows.copy()
            ablated[:, column] = means[self.item, column]
            losses.append(base - int(self.answered(model, everything, ablated).sum()))
        order = sorted(range(len(losses)), key=lambda i: (-losses[i], i))
        top = losses[order[0]]
        return tuple(DESCRIPTIONS[FEATURES[self.varying[i]]][0 if lean[i] >= 0 else 1] for i in order[:shown]
                     if top > 0 and losses[i] >= top / 4)
