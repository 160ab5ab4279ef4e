"""The choices-only adversary: a small model that sees only the options of an item, never the question, and
learns which one is the answer.

A list of rules (:mod:`.audit`) only finds the shortcuts someone thought of. This model finds the ones nobody
listed: every option is described relative to the other options of its item (length and its rank; for numeric
options rank, distance to the mean and median, integer or not, digits; typesetting: spaces, LaTeX commands,
"=", units, case, punctuation; word overlap with the other options; options that name other options;
position; words such as "both", "none", "all"). A logistic regression scores each option and the item's
answer is the best-scored option (a ranking, so items with different option counts mix). Its accuracy is
cross-validated with folds split by source question (variants or sets of one question never sit on both sides
of a fold), the folds drawn several times by content hash (:func:`repeats`) and the accuracies averaged, and
reported beside chance with a 95% Wilson interval, per config and split.

It warns, like a listed rule, when it beats chance beyond sampling noise (one-sided binomial test, Bonferroni
over its rows) and by a practical margin (:func:`.audit.practically_large`). A builder may declare it inherent
to its design (``Build.inherent_baselines["<config>/choices_only_model"]``). Large splits are sampled down to
:data:`MAX_ITEMS` items, chosen by a hash of (build seed, item content), so the figures are the same on every
rebuild and the model costs seconds.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from builders.core.items.record import MCQRecord, text_hash
from builders.core.items.rng import item_rng
from builders.core.items.tables import Table
from builders.core.build.result import Build
from builders.core.validation.significance import (
    THRESHOLD_WORDS,
    TOO_SMALL_MARGIN,
    inherit_from_source,
    practically_large,
    significantly_above_chance,
    status,
    too_small,
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
WILSON_Z = 1.959964  # 95%
MAX_MAGNITUDE = 1e100  # a larger number (a 400-digit Python int is inf as a float) is not read as one: the
# distances and means of such values overflow to inf and NaN
POSITIONS = 12  # one-hot positions A..L; later positions share the last column

# ---- option features: each describes an option relative to the other options of its item --------------------

_WORD = re.compile(r"\w+")
_LATEX = re.compile(r"\\[A-Za-z]+")
_UNIT = re.compile(r"\d\s*(?:[a-zA-Z]{1,6}\b|%|°)|\\text|\\mbox|\\circ|\\%|\$")
_PUNCTUATION = re.compile(r"[.,;:!?()\[\]\"']")
_NUMBER = re.compile(r"[-−]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
_FRACTION = re.compile(r"(-?)\\[dt]?frac\{?(-?\d+(?:\.\d+)?)\}?\{?(-?\d+(?:\.\d+)?)\}?")
_RATIO = re.compile(r"(-?\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")
_KEYWORDS = ("both", "none", "all", "neither", "not")
_FORMS: dict[str, Callable[[str], bool]] = {
    "space": lambda c: " " in c.strip(),
    "latex": lambda c: bool(_LATEX.search(c)),
    "equals": lambda c: "=" in c,
    "unit": lambda c: bool(_UNIT.search(c)),
    "capital": lambda c: c.strip()[:1].isupper(),
    "final_stop": lambda c: c.rstrip().endswith((".", "!", "?")),
    "comma": lambda c: "," in c,
}
_FORM_WORDS = {"space": "a space", "latex": "a LaTeX command", "equals": 'an "="', "unit": "a unit or symbol",
               "capital": "a capital first letter", "final_stop": "a final full stop", "comma": "a comma"}

# feature name -> (what a positive weight favours, what a negative weight favours), in words for the card
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "length": ("longer option", "shorter option"),
    "length_rank": ("higher length rank", "lower length rank"),
    "longest": ("the longest option", "not the longest option"),
    "shortest": ("the shortest option", "not the shortest option"),
    "word_count": ("more words", "fewer words"),
    "numeric_rank": ("larger number", "smaller number"),
    "mean_distance": ("the number farther from the options' mean", "the number nearer the options' mean"),
    "closest_to_mean": ("the number nearest the options' mean", "not the number nearest the options' mean"),
    "farthest_from_mean": ("the number farthest from the options' mean", "not the number farthest from the mean"),
    "median_distance": ("the number farther from the options' median", "the number nearer the options' median"),
    "closest_to_median": ("the number nearest the options' median", "not the number nearest the median"),
    "extreme_number": ("the smallest or largest number", "a number between the others"),
    "integer": ("an integer among non-integers", "a non-integer among integers"),
    "digits": ("more digits", "fewer digits"),
    "punctuation": ("more punctuation", "less punctuation"),
    "overlap": ("shares more words with the others", "shares fewer words with the others"),
    "centroid": ("the option sharing most words with the others", "not the option sharing most words"),
    "odd_one_out": ("the option sharing fewest words with the others", "not the odd one out in words"),
    "names_others": ("an option naming other options", "not an option naming others"),
    "named_by_other": ("an option another option names", "an option no other option names"),
    "first_named": ("the option another option names first", "not the first-named option"),
    "named_by_next": ("the option just before the option that names it", "not just before its naming option"),
    "names_previous": ("an option naming the option just before it", "not naming the option before it"),
    "last": ("the last option", "not the last option"),
    "relative_position": ("a later position", "an earlier position"),
    **{f"position_{i}": (f"position {chr(65 + i)}", f"not position {chr(65 + i)}") for i in range(POSITIONS)},
    **{f"word_{w}": (f'an option with "{w}"', f'an option without "{w}"') for w in _KEYWORDS},
    **{f"{f}_alone": (f"the only option with {w}", f"not the only option with {w}") for f, w in _FORM_WORDS.items()},
    **{f"{f}_alone_without": (f"the only option without {w}", f"not the only option without {w}")
       for f, w in _FORM_WORDS.items()},
}
FEATURES = tuple(DESCRIPTIONS)
_COLUMN = {name: i for i, name in enumerate(FEATURES)}


def number(option: str) -> float | None:
    """The value of an option that is one number (units, $, % and thousands commas aside), else None."""
    text = option.replace("\\$", "").replace("\\%", "").replace("$", "").replace("%", "").replace("\\!", "")
    text = text.replace("−", "-").strip()
    fraction = _FRACTION.fullmatch(text)
    if fraction:
        sign, top, bottom = fraction.groups()
        return (-1 if sign else 1) * float(top) / float(bottom) if float(bottom) else None
    ratio = _RATIO.fullmatch(text)
    if ratio:
        return float(ratio.group(1)) / float(ratio.group(2)) if float(ratio.group(2)) else None
    found = _NUMBER.findall(text)
    if len(found) != 1:
        return None
    try:
        value = float(found[0].replace(",", "").replace("−", "-"))
    except ValueError:
        return None
    return value if abs(value) <= MAX_MAGNITUDE else None


def _ranks(values: Sequence[float]) -> list[float]:
    """Average ranks (ties share theirs) scaled to -0.5..0.5. Plain Python: items have a handful of options,
    where numpy's per-call cost dominates."""
    n = len(values)
    if n < 2:
        return [0.0] * n
    return [(sum(v > w for w in values) + (sum(v == w for w in values) - 1) / 2) / (n - 1) - 0.5 for v in values]


def _centred(values: Sequence[float], scale: float = 1.0) -> list[float]:
    mean = sum(values) / len(values)
    return [(v - mean) / scale for v in values]


def _is(values: Sequence[float], target: float) -> list[bool]:
    return [v == target for v in values]


def _names(container: str, named: str) -> int:
    """Where ``container`` names ``named`` as a whole phrase, or -1."""
    if not named or len(named) >= len(container) or named not in container:
        return -1
    found = re.search(r"(?<!\w)" + re.escape(named) + r"(?!\w)", container)
    return found.start() if found else -1


@dataclass(frozen=True)
class _Reading:
    """What the features read in one option's text alone, once per distinct text (a build's configs share most
    of their options)."""

    length: float
    words: frozenset[str]
    word_count: float
    punctuation: float
    number: float | None
    digits: float
    forms: tuple[bool, ...]  # the marks of _FORMS, in order
    text: str  # as the reference features compare options: spaces collapsed, no final stop, lower case


@lru_cache(maxsize=1 << 18)
def _reading(option: str) -> _Reading:
    return _Reading(float(len(option)), frozenset(_WORD.findall(option.lower())), float(len(_WORD.findall(option))),
                    float(len(_PUNCTUATION.findall(option))), number(option), float(sum(ch.isdigit() for ch in option)),
                    tuple(has(option) for has in _FORMS.values()),
                    re.sub(r"[\s.]+$", "", " ".join(option.split())).lower())


def option_features(choices: Sequence[str]) -> np.ndarray:
    """One row per option, the columns of :data:`FEATURES`."""
    n = len(choices)
    readings = [_reading(c) for c in choices]
    columns: dict[str, list] = {}
    lengths = [r.length for r in readings]
    columns["length"] = _centred(lengths, max(sum(lengths) / n, 1.0))
    columns["length_rank"] = _ranks(lengths)
    if min(lengths) < max(lengths):
        columns["longest"], columns["shortest"] = _is(lengths, max(lengths)), _is(lengths, min(lengths))
    words = [r.words for r in readings]
    counts = [r.word_count for r in readings]
    columns["word_count"] = _centred(counts, max(sum(counts) / n, 1.0))
    columns["punctuation"] = _centred([r.punctuation for r in readings])
    _numeric_features(choices, columns, readings)
    _form_features(readings, columns)
    _overlap_features(words, columns)
    _reference_features([r.text for r in readings], columns)
    columns["last"] = [i == n - 1 for i in range(n)]
    columns["relative_position"] = [i / max(n - 1, 1) - 0.5 for i in range(n)]
    for word in _KEYWORDS:
        columns[f"word_{word}"] = [word in w for w in words]
    out = np.zeros((n, len(FEATURES)))
    out[:, [_COLUMN[name] for name in columns]] = np.array(list(columns.values()), dtype=float).T
    out[np.arange(n), [_COLUMN[f"position_{min(i, POSITIONS - 1)}"] for i in range(n)]] = 1
    return out


def _numeric_features(choices: Sequence[str], columns: dict[str, list], readings: Sequence[_Reading]) -> None:
    parsed = [r.number for r in readings]
    values = [v for v in parsed if v is not None]
    if len(values) != len(parsed) or len(set(values)) < 2:
        return
    columns["numeric_rank"] = _ranks(values)
    columns["extreme_number"] = [v in (min(values), max(values)) for v in values]
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    for name, centre in (("mean", sum(values) / len(values)), ("median", median)):
        distance = [abs(v - centre) for v in values]
        if max(distance) > 0:
            columns[f"{name}_distance"] = _centred([d / max(distance) for d in distance])
        if min(distance) < max(distance):
            columns[f"closest_to_{name}"] = _is(distance, min(distance))
            if name == "mean":
                columns["farthest_from_mean"] = _is(distance, max(distance))
    columns["integer"] = _centred([float(float(v).is_integer() and "." not in c) for v, c in zip(values, choices, strict=True)])
    columns["digits"] = _centred([r.digits for r in readings])


def _form_features(readings: Sequence[_Reading], columns: dict[str, list]) -> None:
    n = len(readings)
    for form, name in enumerate(_FORMS):
        marks = [r.forms[form] for r in readings]
        if sum(marks) == 1:
            columns[f"{name}_alone"] = marks
        if n >= 3 and sum(marks) == n - 1:
            columns[f"{name}_alone_without"] = [not m for m in marks]


def _overlap_features(words: Sequence[frozenset[str]], columns: dict[str, list]) -> None:
    n = len(words)
    total = [0.0] * n
    for i in range(n):
        for j in range(i + 1, n):
            union = len(words[i] | words[j])
            shared = len(words[i] & words[j]) / union if union else 0.0
            total[i] += shared
            total[j] += shared
    overlap = [t / (n - 1) for t in total]
    columns["overlap"] = _centred(overlap)
    if min(overlap) < max(overlap):
        columns["centroid"], columns["odd_one_out"] = _is(overlap, max(overlap)), _is(overlap, min(overlap))


def _reference_features(texts: Sequence[str], columns: dict[str, list]) -> None:
    """Options that name other options ("Both X and Y are correct", "X or Y"): who names whom, and in what
    order and place. ``texts``: the options as :class:`_Reading` compares them."""
    n = len(texts)
    where = [[_names(texts[i], texts[j]) if i != j else -1 for j in range(n)] for i in range(n)]
    names_others = [sum(p >= 0 for p in row) >= 2 for row in where]
    if not any(names_others):
        return
    columns["names_others"] = names_others
    columns["named_by_other"] = [any(where[i][j] >= 0 for i in range(n) if names_others[i]) for j in range(n)]
    first = [False] * n
    for i in range(n):
        if names_others[i]:
            first[min((p, j) for j, p in enumerate(where[i]) if p >= 0)[1]] = True
    columns["first_named"] = first
    columns["named_by_next"] = [j + 1 < n and names_others[j + 1] and where[j + 1][j] >= 0 for j in range(n)]
    columns["names_previous"] = [i > 0 and names_others[i] and where[i][i - 1] >= 0 for i in range(n)]


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
    tests: int = 1  # adversary rows in the build: the family the warning level is corrected for

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
    seen: dict[tuple, AdversaryRow | None] = {}  # a config that repeats another's items (GSM-MC default = set_0)
    for config, splits in build.configs.items():
        for split, records in splits.items():
            if split == fewshot or len(records) < 2:
                continue
            inherent = build.release.inherent_baselines.get(f"{config}/{NAME}", build.release.inherent_baselines.get(NAME))
            key = tuple((r.source_index, r.choices, r.answer) for r in records)
            if key not in seen:
                seen[key] = evaluate(records, seed, config, split, inherent)
            evaluated = seen[key]
            if evaluated is not None:
                rows.append(replace(evaluated, config=config, split=split, inherent=inherent))
    rows = [replace(row, tests=len(rows)) for row in rows]
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


def evaluate(records: Sequence[MCQRecord], seed: int, config: str = "", split: str = "",
             inherent: str | None = None) -> AdversaryRow | None:
    """Cross-validated accuracy of the choices-only model on ``records``, the mean over :func:`repeats` draws of
    :data:`FOLDS` folds (None when there are too few source questions to split into two folds)."""
    from threadpoolctl import threadpool_limits

    # In content order: the fits' floating-point sums then run over the same rows in the same order, whatever the
    # release's order (a shuffled release moved one prediction in 5,000 otherwise).
    chosen = sorted(sample(records, seed), key=lambda r: (r.content_key, r.id))
    groups = source_groups(chosen)
    folds = min(FOLDS, len(set(groups.tolist())))
    if folds < 2:
        return None
    blocks = [option_features(r.choices) for r in chosen]
    ranking = Ranking(blocks, chosen, seed)
    options = OptionMatrix(blocks, [r.answer for r in chosen])
    contents = [r.content_key for r in chosen]
    correct = 0
    with threadpool_limits(1):  # small fits: threads only contend (7 times slower on 2 busy cores)
        for repeat in range(repeats(len(chosen))):
            assigned = fold_assignment(contents, groups, folds, seed, repeat)
            for fold in range(folds):
                correct += int(options.answered(ranking.weights(assigned != fold))[assigned == fold].sum())
        features = strongest_features(ranking.fit(np.ones(len(chosen), dtype=bool)))
    accuracy = correct / (repeats(len(chosen)) * len(chosen))
    low, high = wilson_interval(accuracy * len(chosen), len(chosen))
    chance = sum(1 / len(r.choices) for r in chosen) / len(chosen)
    return AdversaryRow(config, split, len(records), len(chosen), accuracy, chance, low, high, features, inherent)


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
        ("config", "split", "items", "scored", "accuracy", "95% interval", "chance", "beats chance by",
         "strongest features", "status"),
        [(r.config, r.split, r.items, r.scored, r.accuracy, f"{r.low:.1%}–{r.high:.1%}", r.chance,
          r.accuracy - r.chance, "; ".join(r.features) or None, row_status(r)) for r in rows],
        note=(f"A logistic regression that sees only the options, never the question, scores each option from "
              f"features that describe it against the other options of its item (length, numbers, typesetting, "
              f"word overlap, options naming others, position, words such as \"both\" or \"none\"), and answers "
              f"with the best-scored option. Accuracy is cross-validated ({FOLDS} folds split by source question, "
              f"drawn until about {PREDICTIONS:,} predictions are averaged, at most {MAX_REPEATS} times) "
              f"on at most {MAX_ITEMS:,} items per split (a seeded sample), beside chance. It warns above chance "
              f"{THRESHOLD_WORDS}; a row where a model {TOO_SMALL_MARGIN * 100:.0f} points above chance could not warn has "
              f"too few items to judge. Its strongest features are shown where it beats chance beyond noise."),
        percent=("accuracy", "chance", "beats chance by"),
    )


def row_status(row: AdversaryRow) -> str:
    return status(row.warns, row.inherent, too_small(row.scored, row.chance, row.tests))


def warnings(rows: Sequence[AdversaryRow]) -> list[str]:
    return [f"{r.config}/{r.split}: a choices-only model answers {r.accuracy:.1%} of {r.scored} items (95% "
            f"{r.low:.1%}–{r.high:.1%}, chance {r.chance:.1%}) from the options alone"
            + (f", by: {'; '.join(r.features)}" if r.features else "") for r in rows if r.warns]
