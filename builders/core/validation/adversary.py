"""The choices-only adversary: models that see only the options of an item, never the question, and learn which
one is the answer.

A list of rules (:mod:`.audit`) only finds the shortcuts someone thought of. These models find the ones nobody
listed: every option is described relative to the other options of its item (length and its rank; for numeric
options rank, distance to the mean and median, integer or not, digits; typesetting: spaces, LaTeX commands,
"=", units, case, punctuation; word overlap with the other options; options that name other options;
position; words such as "both", "none", "all"). Two learners read these features: a logistic regression scores
each option and the item's answer is the best-scored option (a ranking, so items with different option counts
mix), and gradient-boosted trees (:mod:`.boosted`) score each option the same way from combinations of
features that no weighted sum sees. Their accuracy is cross-validated with folds split by source question
(variants or sets of one question never sit on both sides of a fold), the folds drawn several times by content
hash (:func:`repeats`) and the accuracies averaged; the row shows the stronger learner, reported beside chance
with a 95% Wilson interval, per config and split.

It warns, like a listed rule, when it beats chance beyond sampling noise (one-sided binomial test, Bonferroni
over its rows and both learners: the stronger of two is two tests) and by a practical margin
(:func:`.audit.practically_large`). A builder may declare it inherent
to its design (``Build.inherent_baselines["<config>/choices_only_model"]``). Large splits are sampled down to
:data:`MAX_ITEMS` items, chosen by a hash of (build seed, item content), so the figures are the same on every
rebuild and the models cost seconds.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Sequence

import numpy as np

from builders.core.items.record import MCQRecord, text_hash
from builders.core.items.rng import item_rng
from builders.core.items.tables import Table
from builders.core.build.result import Build
from builders.core.validation import adversary_store, boosted
from builders.core.validation.option_features import DESCRIPTIONS, FEATURES, option_features
from builders.core.validation.significance import (
    THRESHOLD_WORDS,
    TOO_SMALL_MARGIN,
    inherit_from_source,
    practically_large,
    significantly_above_chance,
    spread,
    status,
    too_small,
    where,
)

NAME = "choices_only_model"
MAX_ITEMS = 2000  # per config and split: a 95% interval of at most +-2.2 points, in about a second
FOLDS = 5
# The folds are drawn anew until about PREDICTIONS predictions are averaged, at most MAX_REPEATS times: one draw of
# 5 folds over a few hundred items moves the figure by 1-3 points (MATH-MC's 2-option sets, the same 360 items in
# other layouts, read 50.7-57.3% with one draw, 51.9-54.7% with 11); a sampled split of 2,000 items takes 2.
PREDICTIONS = 4_000
MAX_REPEATS = 20
MIN_REPEATED = 100  # a smaller split is judged on a margin of 10 points or more (its interval is that wide): one draw
PAIRS = 3  # distractors paired with the gold per item for training
SHOWN_FEATURES = 3
LINEAR = "logistic regression"
LEARNERS = 2  # the logistic ranking and the trees: a row's figure is the stronger of two tests
WILSON_Z = 1.959964  # 95%

# ---- the model, cross-validated by source question ----------------------------------------------------------


@dataclass(frozen=True)
class AdversaryRow:
    config: str
    split: str
    items: int  # the split's items
    scored: int  # the items the model was cross-validated on (a seeded sample of at most MAX_ITEMS)
    accuracy: float
    chance: float
    low: float  # 95% Wilson interval of the accuracy
    high: float
    features: tuple[str, ...]  # the strongest features, in words (when the model beats chance)
    inherent: str | None
    tests: int = LEARNERS  # adversary rows in the build times LEARNERS: the family the warning level is corrected for
    model: str = LINEAR  # the learner whose accuracy the row shows: the stronger
    accuracies: tuple[tuple[str, float], ...] = ()  # every learner's accuracy, in the order they were fitted

    @property
    def significant(self) -> bool:
        return significantly_above_chance(self.accuracy, self.chance, self.scored, self.tests)

    @property
    def warns(self) -> bool:
        return self.inherent is None and self.significant and practically_large(self.accuracy, self.chance)


def assess(build: Build) -> list[AdversaryRow]:
    """The adversary's row for every config and split (the few-shot split aside, as in the rule audit)."""
    seed = int(build.params.get("seed", 0) or 0)
    fewshot = build.source.benchmark.fewshot_split
    rows: list[AdversaryRow] = []
    keys: list[tuple] = []  # each row's items
    seen: dict[tuple, AdversaryRow | None] = {}  # a config that repeats another's items (GSM-MC default = set_0)
    read: dict[tuple, Sequence[MCQRecord]] = {}  # the splits the trees may be read on: the rows the trees win
    features: dict[tuple[str, ...], np.ndarray] = {}  # options -> their features, read once for every config
    for config, splits in build.configs.items():
        for split, records in splits.items():
            if split == fewshot or len(records) < 2:
                continue
            inherent = build.release.inherent_baselines.get(f"{config}/{NAME}", build.release.inherent_baselines.get(NAME))
            key = tuple((r.source_index, r.choices, r.answer) for r in records)
            if key not in seen:
                seen[key] = found = stored_evaluation(records, seed, features)
                if found is not None and found.model == boosted.NAME:
                    read[key] = records
            evaluated = seen[key]
            if evaluated is not None:
                rows.append(replace(evaluated, config=config, split=split, inherent=inherent))
                keys.append(key)
    rows = [replace(row, tests=LEARNERS * len(rows)) for row in rows]
    explained: dict[tuple, tuple[str, ...]] = {}  # the trees' features: read once the family is known, where it beats chance
    for row, key in zip(rows, keys, strict=True):
        if row.model == boosted.NAME and row.significant and key not in explained:
            explained[key] = stored_trees_features(read[key], seed, features)
    rows = [replace(row, features=explained.get(key, row.features)) for row, key in zip(rows, keys, strict=True)]
    rows = inherit_from_source(rows, build.about.unchanged_config, lambda row: NAME, lambda row: row.scored)
    return [row if row.significant else replace(row, features=()) for row in rows]


def sample(records: Sequence[MCQRecord], seed: int, limit: int = MAX_ITEMS) -> list[MCQRecord]:
    """At most ``limit`` records, chosen by a hash of (seed, content), in their release order."""
    if len(records) <= limit:
        return list(records)
    keys = sorted(range(len(records)), key=lambda i: (text_hash(f"{seed}\x1f{records[i].content_key}"), i))
    return [records[i] for i in sorted(keys[:limit])]


def source_groups(records: Sequence[MCQRecord]) -> np.ndarray:
    """A group per source question: records of one source row, or with the same set of options, are joined
    (the variants of a question, the two sides of a contrast pair)."""
    parent = list(range(len(records)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    seen: dict[object, int] = {}
    for i, record in enumerate(records):
        for key in (("source", record.source, record.source_config, record.source_split, record.source_index),
                    ("options", tuple(sorted(" ".join(c.split()) for c in record.choices)))):
            if key in seen:
                parent[find(i)] = find(seen[key])
            else:
                seen[key] = i
    return np.array([find(i) for i in range(len(records))])


Scored = tuple[list[MCQRecord], list[np.ndarray]]  # the items a split is scored on, and their option features


def chosen_items(records: Sequence[MCQRecord], seed: int) -> list[MCQRecord]:
    """The items :func:`evaluate` scores of ``records``: a seeded sample, in content order. In content order, the
    fits' floating-point sums run over the same rows in the same order, whatever the release's order (a shuffled
    release moved one prediction in 5,000 otherwise)."""
    return sorted(sample(records, seed), key=lambda r: (r.content_key, r.id))


def scored_items(records: Sequence[MCQRecord], seed: int,
                 features: dict[tuple[str, ...], np.ndarray] | None = None) -> Scored:
    """The items :func:`evaluate` scores of ``records`` (a seeded sample, in content order), with their features.
    ``features``: the features of the options already read (a pure reading of the options, which no fit changes),
    filled with those read here: the configs of a release that keep an item's options read them once."""
    return _with_features(chosen_items(records, seed), features)


def _with_features(chosen: list[MCQRecord], features: dict[tuple[str, ...], np.ndarray] | None) -> Scored:
    if features is None:
        return chosen, [option_features(r.choices) for r in chosen]
    blocks = []
    for record in chosen:
        block = features.get(record.choices)
        if block is None:
            block = features[record.choices] = option_features(record.choices)
        blocks.append(block)
    return chosen, blocks


def evaluate(records: Sequence[MCQRecord], seed: int, config: str = "", split: str = "",
             inherent: str | None = None, tests: int | None = LEARNERS, scored: Scored | None = None
             ) -> AdversaryRow | None:
    """Cross-validated accuracy of the choices-only models on ``records``, each the mean over its draws of
    :data:`FOLDS` folds (:func:`repeats`, :func:`.boosted.repeats`), and the stronger shown (the logistic ranking
    of equals); None when there are too few source questions to split into two folds. The trees' strongest features
    are read where they beat chance in a family of ``tests`` (None: not here; :func:`assess` reads them once its
    family is known). ``scored``: :func:`scored_items` of ``records``, where the caller has it."""
    import sklearn.ensemble  # noqa: F401  # its OpenMP library loaded before the limit, or the limit misses it
    from threadpoolctl import threadpool_limits

    chosen, blocks = scored or scored_items(records, seed)
    groups = source_groups(chosen)
    folds = min(FOLDS, len(set(groups.tolist())))
    if folds < 2:
        return None
    ranking = Ranking(blocks, chosen, seed)
    options = OptionMatrix(blocks, [r.answer for r in chosen])
    contents = [r.content_key for r in chosen]
    trees = boosted.Trees(blocks, [r.answer for r in chosen])
    correct = boosted_correct = 0
    with threadpool_limits(1):  # small fits: threads only contend (7 times slower on 2 busy cores)
        for repeat in range(max(repeats(len(chosen)), boosted.repeats(len(chosen)))):
            assigned = fold_assignment(contents, groups, folds, seed, repeat)
            if repeat < repeats(len(chosen)):
                for fold in range(folds):
                    correct += int(options.answered(ranking.weights(assigned != fold))[assigned == fold].sum())
            if repeat < boosted.repeats(len(chosen)):
                boosted_correct += trees.correct(assigned, folds)
        accuracies = ((LINEAR, correct / (repeats(len(chosen)) * len(chosen))),
                      (boosted.NAME, boosted_correct / (boosted.repeats(len(chosen)) * len(chosen))))
        model, accuracy = max(accuracies, key=lambda pair: pair[1])  # the first of equals
        chance = sum(1 / len(r.choices) for r in chosen) / len(chosen)
        if model == LINEAR:
            features = strongest_features(ranking.fit(np.ones(len(chosen), dtype=bool)))
        elif tests is not None and significantly_above_chance(accuracy, chance, len(chosen), tests):
            features = trees.strongest(SHOWN_FEATURES)
        else:
            features = ()
    low, high = wilson_interval(accuracy * len(chosen), len(chosen))
    return AdversaryRow(config, split, len(records), len(chosen), accuracy, chance, low, high, features, inherent,
                        model=model, accuracies=accuracies)


def stored_evaluation(records: Sequence[MCQRecord], seed: int,
                      features: dict[tuple[str, ...], np.ndarray] | None = None) -> AdversaryRow | None:
    """:func:`evaluate` of ``records`` with no family yet (config, split and the builder's reason left for the
    caller), kept in the mcqforge cache by what it is a function of (:mod:`.adversary_store`): a rebuild of the
    same items reads it back. ``features``: as :func:`scored_items` takes them."""
    def decoded(value):
        return None if value is None else AdversaryRow(**{
            **value, "features": tuple(value["features"]), "accuracies": tuple(map(tuple, value["accuracies"]))})

    return _stored("evaluation", records, seed, features,
                   lambda scored: evaluate(records, seed, tests=None, scored=scored),
                   lambda found: None if found is None else asdict(found), decoded)


def stored_trees_features(records: Sequence[MCQRecord], seed: int,
                          features: dict[tuple[str, ...], np.ndarray] | None = None) -> tuple[str, ...]:
    """:func:`trees_features` of the items :func:`evaluate` scores of ``records``, kept as
    :func:`stored_evaluation` keeps its figures."""
    return _stored("trees_features", records, seed, features, trees_features, list, tuple)


def _stored(what: str, records: Sequence[MCQRecord], seed: int, features: dict[tuple[str, ...], np.ndarray] | None,
            compute: Callable[[Scored], Any], encoded: Callable[[Any], Any], decoded: Callable[[Any], Any]) -> Any:
    """``compute`` of the scored items of ``records``, read back from the cache under the key of ``what`` of them,
    or computed and kept there (``encoded`` to JSON, ``decoded`` from it)."""
    chosen = chosen_items(records, seed)
    key = adversary_store.figure_key(what, chosen, len(records), seed)
    kept = adversary_store.read(key)
    if kept is not None:
        return decoded(kept["value"])
    found = compute(_with_features(chosen, features))
    adversary_store.write(key, encoded(found))
    return found


def trees_features(scored: Scored) -> tuple[str, ...]:
    """The trees' strongest features on the items :func:`evaluate` scored (:func:`scored_items`)."""
    import sklearn.ensemble  # noqa: F401  # before the limit, as in evaluate
    from threadpoolctl import threadpool_limits

    chosen, blocks = scored
    with threadpool_limits(1):
        return boosted.Trees(blocks, [r.answer for r in chosen]).strongest(SHOWN_FEATURES)


def repeats(items: int) -> int:
    """How many times the folds are drawn for ``items`` items: until about :data:`PREDICTIONS` predictions, once
    below :data:`MIN_REPEATED` items."""
    return 1 if items < MIN_REPEATED else max(1, min(MAX_REPEATS, math.ceil(PREDICTIONS / items)))


class Ranking:
    """The training rows of the ranking (:func:`_pairs`), stacked and standardised once for every fold's fit."""

    def __init__(self, blocks: Sequence[np.ndarray], records: Sequence[MCQRecord], seed: int):
        pairs = [_pairs(block, record, seed) for block, record in zip(blocks, records, strict=True)]
        rows = np.vstack([p[0] for p in pairs])
        self.labels = np.concatenate([p[1] for p in pairs])
        self.item = np.repeat(np.arange(len(pairs)), [len(p[1]) for p in pairs])
        spread = rows.std(axis=0)
        self.scale = np.where(spread > 0, spread, 1.0)
        self.standardised = rows / self.scale
        self.seed = seed

    def fit(self, items: np.ndarray) -> np.ndarray | None:
        """Weights on standardised features of a logistic regression on option differences without intercept (a
        linear score whose argmax ranks), fitted on the rows of the ``items`` mask; None with one label only."""
        from sklearn.linear_model import LogisticRegression

        rows = items[self.item]
        labels = self.labels[rows]
        if labels.min() == labels.max():
            return None
        model = LogisticRegression(C=1.0, fit_intercept=False, solver="liblinear", random_state=self.seed)
        return model.fit(self.standardised[rows], labels).coef_[0]

    def weights(self, items: np.ndarray) -> np.ndarray:
        """The score of an option's raw features (zeros when there was nothing to learn: the first option, the
        argmax of equal scores, is picked)."""
        fitted = self.fit(items)
        return np.zeros(len(FEATURES)) if fitted is None else fitted / self.scale


class OptionMatrix:
    """Every option of every item as one matrix, so that a weight vector answers all items at once."""

    def __init__(self, blocks: Sequence[np.ndarray], answers: Sequence[int]):
        self.rows = np.vstack(blocks)
        self.starts = np.cumsum([0, *(len(b) for b in blocks[:-1])])
        self.gold_rows = self.starts + np.asarray(answers)

    def answered(self, weights: np.ndarray) -> np.ndarray:
        """Per item, whether its best-scored option (the first of equal scores) is the gold."""
        scores = self.rows @ weights
        best = np.repeat(np.maximum.reduceat(scores, self.starts), np.diff([*self.starts, len(scores)]))
        first_best = np.minimum.reduceat(np.where(scores == best, np.arange(len(scores)), len(scores)), self.starts)
        return first_best == self.gold_rows


def fold_assignment(contents: Sequence[str], groups: np.ndarray, folds: int, seed: int, repeat: int) -> np.ndarray:
    """Each item's fold in draw ``repeat``, from the items' content keys and source groups: the source questions,
    ordered by a hash of (seed, draw, content), are dealt to the folds in turn, so that the folds hold as many
    questions each and do not depend on the release's order."""
    content: dict[int, str] = {}
    for key, group in zip(contents, groups.tolist(), strict=True):
        content[group] = min(content.get(group, key), key)
    order = sorted(content, key=lambda g: (text_hash(f"{seed}\x1f{NAME}\x1f{repeat}\x1f{content[g]}"), content[g]))
    fold_of = {group: position % folds for position, group in enumerate(order)}
    return np.array([fold_of[group] for group in groups.tolist()])


def _pairs(block: np.ndarray, record: MCQRecord, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Training rows of the ranking: the gold's features minus a distractor's (label 1) or the reverse (label
    0), for up to :data:`PAIRS` distractors drawn per item, the signs alternating from a drawn one (both seeded
    by its content, not its place)."""
    distractors = [j for j in range(len(block)) if j != record.answer]
    rng = item_rng(seed, record.content_key, NAME)
    drawn = rng.permutation(distractors)[:PAIRS]
    first = int(rng.integers(2))
    signs = np.array([1 if (first + k) % 2 == 0 else -1 for k in range(len(drawn))])
    return (block[record.answer] - block[drawn]) * signs[:, None], (signs > 0).astype(int)


def strongest_features(weights: np.ndarray | None, shown: int = SHOWN_FEATURES) -> tuple[str, ...]:
    """The features with the largest standardised weights, in words (with the direction the weight favours)."""
    if weights is None:
        return ()
    order = sorted(range(len(weights)), key=lambda i: (-abs(weights[i]), i))
    top = abs(weights[order[0]]) if order else 0.0
    return tuple(DESCRIPTIONS[FEATURES[i]][0 if weights[i] > 0 else 1] for i in order[:shown]
                 if top > 0 and abs(weights[i]) >= top / 4)


def wilson_interval(successes: float, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def adversary_table(rows: Sequence[AdversaryRow]) -> Table:
    return Table(
        "Choices-only model",
        ("config", "split", "items", "scored", "accuracy", "95% interval", "chance", "beats chance by", "model",
         "other model", "strongest features", "status"),
        [(r.config, r.split, r.items, r.scored, r.accuracy, f"{r.low:.1%}–{r.high:.1%}", r.chance,
          r.accuracy - r.chance, r.model, "; ".join(f"{name} {accuracy:.1%}" for name, accuracy in r.accuracies
                                                    if name != r.model) or None,
          "; ".join(r.features) or None, row_status(r)) for r in rows],
        note=(f"Two models that see only the options, never the question, score each option from features that "
              f"describe it against the other options of its item (length, numbers, typesetting, word overlap, "
              f"options naming others, position, words such as \"both\" or \"none\"), and answer with the "
              f"best-scored option: a logistic regression (a weighted sum of the features) and gradient-boosted "
              f"trees (scikit-learn's HistGradientBoostingClassifier, {boosted.PARAMETERS['max_iter']} trees of "
              f"{boosted.PARAMETERS['max_leaf_nodes']} leaves, no early stopping: combinations of features, such as "
              f"a cue that points to the key in one kind of item and away from it in another). Accuracy is "
              f"cross-validated ({FOLDS} folds split by source question, drawn until about {PREDICTIONS:,} "
              f"predictions are averaged for the regression, at most {MAX_REPEATS} times, and "
              f"{boosted.PREDICTIONS:,} for the trees, at most {boosted.MAX_REPEATS} times) on at most "
              f"{MAX_ITEMS:,} items per split (a seeded sample), beside chance; the row shows the stronger model, "
              f"the other beside it. It warns above chance {THRESHOLD_WORDS}, the correction counting both models "
              f"of every row; a row where a model {TOO_SMALL_MARGIN * 100:.0f} points above chance could not warn "
              f"has too few items to judge. Its strongest features are shown where it beats chance beyond noise "
              f"(for the trees: the features whose loss, each replaced by its item's mean, costs them the most "
              f"answers)."),
        percent=("accuracy", "chance", "beats chance by"),
    )


def row_status(row: AdversaryRow) -> str:
    return status(row.warns, row.inherent, too_small(row.scored, row.chance, row.tests))


def warnings(rows: Sequence[AdversaryRow]) -> list[str]:
    """One warning per split, naming every config where the model warns (PythonIO's sample warned in 11 lines, one
    per set): its figures over them, and the features it reads most often."""
    groups: dict[str, list[AdversaryRow]] = {}
    for r in rows:
        if r.warns:
            groups.setdefault(r.split, []).append(r)
    found = []
    for split_rows in groups.values():
        if len(split_rows) == 1:
            r = split_rows[0]
            found.append(f"{r.config}/{r.split}: a choices-only model ({r.model}) answers {r.accuracy:.1%} of {r.scored} "
                         f"items (95% {r.low:.1%}–{r.high:.1%}, chance {r.chance:.1%}) from the options alone"
                         + (f", by: {'; '.join(r.features)}" if r.features else ""))
            continue
        features = Counter(feature for r in split_rows for feature in r.features)
        models = ", ".join(sorted({r.model for r in split_rows}))
        read = "; ".join(f"{feature} ({n} of {len(split_rows)})" for feature, n in features.most_common(3))
        found.append(f"{where(split_rows)}: a choices-only model ({models}) answers "
                     f"{spread([r.accuracy for r in split_rows], '.1%')} of {spread([r.scored for r in split_rows], 'd')} items (chance "
                     f"{spread([r.chance for r in split_rows], '.1%')}) from the options alone"
                     + (f", most often by: {read}" if read else ""))
    return found
