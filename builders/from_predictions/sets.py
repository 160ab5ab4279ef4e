"""Pools to multiple-choice sets: draws, records, the builders' invariants and the card's statistics.

Set ``k`` of an item draws N-1 distractors from the item's pool and shuffles the N options, both with
``item_rng(seed, item id, builder, "set", k)``: an item's options depend on nothing but the seed, the
item and the pool. Configs are ``default`` (= ``set_0``) and ``set_0`` ... ``set_{K-1}``.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from builders.core.items.record import LETTERS, MCQRecord, OpenItem, Value, list_of
from builders.core.items.rng import item_rng
from builders.core.items.tables import Statistics, Table
from builders.core.build.result import Build, Check, Configs
from builders.core.items.outcomes import Exclude

from .pools import Candidate, Pool, distractor_models, summarize_pools

if TYPE_CHECKING:  # numpy is imported where it computes: a builder's --help parses without it
    import numpy as np

GOLD, POOL, RANDOM = "gold", "pool", "random"
PAPER_CITATION = """@article{zhang2024multiple,
  title={Multiple-Choice Questions are Efficient and Robust {LLM} Evaluators},
  author={Zhang, Ziyin and Jiang, Zhaokun and Xu, Lizhen and Hao, Hongkun and Wang, Rui},
  journal={arXiv preprint arXiv:2405.11966},
  year={2024}
}"""
METADATA_FEATURES = {
    "gold_text": Value("string"),  # the gold answer as written in the source
    "choice_origins": list_of(Value("string")),  # per option: gold, pool or random
    "choice_models": list_of(list_of(Value("string"))),  # per option: the models that gave it (gold: none)
    "pool_size": Value("int32"),
    "set_index": Value("int32"),
    "solution": Value("string"),
}


@dataclass(frozen=True)
class SetOptions:
    builder: str
    choices: int
    sets: int
    seed: int
    draw: str = "weighted"  # or "uniform", or "balanced" or "rank" (numeric answers: need ``value``)
    value: Callable[[str], float] | None = None  # an answer's numeric value, for the "balanced" and "rank" draws


@dataclass(frozen=True)
class Option:
    text: str
    origin: str
    models: tuple[str, ...] = ()


RandomDistractors = Callable[[OpenItem, int, "np.random.Generator"], list[str]]


def config_names(sets: int) -> list[str]:
    return ["default"] + [f"set_{k}" for k in range(sets)]


def draw_from_pool(pool: Pool, count: int, rng: np.random.Generator, draw: str,
                   value: Callable[[str], float] | None = None) -> list[Candidate]:
    """``count`` distinct candidates, uniformly or with probability proportional to their model count; the
    "balanced" draw (numeric answers) also evens out where the key sits among its options (:func:`draw_balanced`)."""
    if draw == "balanced":
        return draw_balanced(pool, count, rng, value)
    if draw == "rank":
        return draw_by_rank(pool, count, rng, value)
    return _draw(pool.candidates, count, rng, weighted=draw == "weighted")


def _draw(candidates: Sequence[Candidate], count: int, rng: np.random.Generator, weighted: bool) -> list[Candidate]:
    if count == 0:
        return []
    if count == len(candidates):
        return list(candidates)
    weights = None
    if weighted:
        import numpy as np

        counts = np.array([c.count for c in candidates], dtype=float)
        weights = counts / counts.sum()
    chosen = rng.choice(len(candidates), size=count, replace=False, p=weights)
    return [candidates[int(i)] for i in sorted(chosen)]


def feasible_ranks(below: int, above: int, count: int) -> list[int]:
    """The key's possible ranks (distractors below it) when ``count`` are drawn from ``below`` + ``above``."""
    return [rank for rank in range(count + 1) if rank <= below and count - rank <= above]


def draw_by_rank(pool: Pool, count: int, rng: np.random.Generator, value: Callable[[str], float]) -> list[Candidate]:
    """The key's rank among the options (how many distractors lie below it) uniformly among the ranks the pool
    allows, then that many candidates below the key and the rest above it, each side weighted by model count.
    The default of releases before the balanced draw, kept so that their ``build_config.yaml`` still rebuilds
    them: it evens out the key's rank but not its nearness to the options' mean and median."""
    gold = value(pool.gold)
    values = [value(c.text) for c in pool.candidates]
    below = [c for c, v in zip(pool.candidates, values, strict=True) if v < gold]
    above = [c for c, v in zip(pool.candidates, values, strict=True) if v > gold]
    ranks = feasible_ranks(len(below), len(above), count)
    rank = ranks[int(rng.integers(len(ranks)))]
    chosen = {c.text for c in [*_draw(below, rank, rng, True), *_draw(above, count - rank, rng, True)]}
    return [c for c in pool.candidates if c.text in chosen]


# ---- the balanced draw (numeric answers) ---------------------------------------------------------------------

# Where the key sits among its options, as the columns of :func:`key_advantages`, and the tilt the balanced draw
# gives each. Models' wrong answers scatter around the key, with outliers (x10, a wrong unit), so a draw by
# frequency alone leaves the key near the middle of its options and rarely the outlier: a choices-only model
# picked it in 33-38% of GSM-MC's items (chance 25%), by "the number nearer the options' median". A pool of 3 or 4
# candidates cannot hide the key by itself (a quarter of GSM8K's kept items have exactly 3), so the tilt is set for
# the release as a whole: it is the one that makes the key's mean advantage zero in every column over all of
# GSM8K test's pools from the shared predictions, one per number of options (`python benchmarks/gsm_mc_cues.py
# --calibrate RELEASE` refits it from a release's pools; fitted on half of the items, the 4-option tilt left the
# choices-only model at 24.5% on the other half). Constants, so that an item's options depend on nothing but the
# seed, the item and its pool.
BALANCE_COLUMNS = ("rank", "extreme", "mean_distance", "nearest_mean", "farthest_mean", "median_distance",
                   "nearest_median")
BALANCE_TILTS = {  # options per item -> tilt, fitted with the smallest ridge (1e-4, 1e-3, 1e-2) that keeps it within 20
    2: (0.29, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
    3: (0.15, -0.03, -3.25, 0.03, -1.28, 4.78, 0.03),
    4: (-0.34, -0.85, -2.56, -0.08, -0.74, 6.99, -0.43),
    5: (-1.32, 0.47, 2.08, 1.33, -0.22, 4.41, 0.58),
    6: (-0.04, 0.75, 1.71, 1.1, -0.08, 9.13, -0.8),
    7: (-2.18, 0.77, 5.17, 2.12, 2.43, 11.9, -0.41),
    8: (-0.13, 2.34, 2.34, 0.62, 1.71, 3.56, -0.73),
}
MAX_SUBSETS = 5000  # larger pools are cut to their most frequent candidates first


def key_advantages(values: np.ndarray) -> np.ndarray:
    """For option sets ``values`` (one row per set, the key in column 0, distinct numbers), the key's features
    (:data:`BALANCE_COLUMNS`) minus their mean over the set's options: zero on average when the key looks like
    any option."""
    import numpy as np

    n = values.shape[1]
    rank = (values[:, :, None] > values[:, None, :]).sum(2)
    to_mean = np.abs(values - values.mean(1, keepdims=True))
    to_median = np.abs(values - np.median(values, 1, keepdims=True))
    features = [rank / (n - 1), (rank == 0) | (rank == n - 1),
                _scaled(to_mean), _is_min(to_mean), to_mean == to_mean.max(1, keepdims=True),
                _scaled(to_median), _is_min(to_median)]
    stacked = np.stack([f.astype(float) for f in features], axis=2)
    return stacked[:, 0, :] - stacked.mean(axis=1)


def _scaled(distance: np.ndarray) -> np.ndarray:
    import numpy as np

    return distance / np.maximum(distance.max(1, keepdims=True), 1e-300)


def _is_min(distance: np.ndarray) -> np.ndarray:
    return distance == distance.min(1, keepdims=True)


def of_the_keys_kind(pool: Pool, count: int, value: Callable[[str], float]) -> list[Candidate]:
    """The candidates of the key's kind (an integer or not, the sign) when there are ``count`` of them, else all:
    a key that is the only integer among fractions, or the only positive number, needs no knowledge."""
    def kind(text: str) -> tuple[bool, bool]:
        number = value(text)
        return float(number).is_integer(), number < 0

    alike = [c for c in pool.candidates if kind(c.text) == kind(pool.gold)]
    return alike if len(alike) >= count else list(pool.candidates)


def balanced_subsets(pool: Pool, count: int, value: Callable[[str], float],
                     tilt: Sequence[float] | None = None) -> tuple[list[Candidate], np.ndarray, np.ndarray]:
    """The candidates considered, every ``count``-subset of them (as index rows) and each subset's probability:
    the product of its candidates' model counts, tilted by ``exp(tilt . key_advantages)`` (by default the tilt
    fitted for ``count`` + 1 options)."""
    import numpy as np

    candidates, subsets, advantages, log_counts = _subsets(pool, count, value)
    tilt = BALANCE_TILTS[count + 1] if tilt is None else tilt
    scores = log_counts + advantages @ np.asarray(tilt, dtype=float)
    weights = np.exp(scores - scores.max())
    return candidates, subsets, weights / weights.sum()


def _subsets(pool: Pool, count: int, value: Callable[[str], float]) -> tuple[list[Candidate], np.ndarray,
                                                                              np.ndarray, np.ndarray]:
    """The candidates considered, their ``count``-subsets, the key's advantages in each and its log weight."""
    import numpy as np

    candidates = of_the_keys_kind(pool, count, value)
    while len(candidates) > count and math.comb(len(candidates), count) > MAX_SUBSETS:
        candidates = candidates[:-1]  # the pool lists the most frequent first
    subsets = np.array(list(combinations(range(len(candidates)), count)), dtype=int).reshape(-1, count)
    values = np.array([value(c.text) for c in candidates], dtype=float)
    options = np.column_stack([np.full(len(subsets), value(pool.gold)), values[subsets]])
    log_counts = np.log(np.array([c.count for c in candidates], dtype=float))[subsets].sum(axis=1)
    return candidates, subsets, key_advantages(options), log_counts


def fit_balance_tilt(pools: Iterable[Pool], count: int, value: Callable[[str], float],
                     ridge: float = 1e-4) -> tuple[float, ...]:
    """The tilt under which the key's mean advantage is zero in every column over ``pools`` (those with at least
    ``count`` candidates): the dual of a maximum-entropy problem, convex; the ridge keeps it finite where no tilt
    reaches zero. How :data:`BALANCE_TILTS` were found (``benchmarks/gsm_mc_cues.py --calibrate``)."""
    import numpy as np
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    items = [_subsets(pool, count, value)[2:] for pool in pools if pool.size >= count]

    def objective(tilt: np.ndarray) -> tuple[float, np.ndarray]:
        total, gradient = 0.0, np.zeros_like(tilt)
        for advantages, log_counts in items:
            scores = log_counts + advantages @ tilt
            normaliser = logsumexp(scores)
            total += normaliser
            gradient += np.exp(scores - normaliser) @ advantages
        return total / len(items) + ridge * tilt @ tilt, gradient / len(items) + 2 * ridge * tilt

    fitted = minimize(objective, np.zeros(len(BALANCE_COLUMNS)), jac=True, method="L-BFGS-B").x
    return tuple(round(float(t), 2) for t in fitted)


def draw_balanced(pool: Pool, count: int, rng: np.random.Generator, value: Callable[[str], float],
                  tilt: Sequence[float] | None = None) -> list[Candidate]:
    """``count`` candidates of the key's kind, weighted by model count and tilted (:data:`BALANCE_TILTS`) so that,
    over a release, the key sits among its options' values (rank, nearness to their mean and median) as any
    option does."""
    if count == 0:
        return []
    return _choose_subset(balanced_subsets(pool, count, value, tilt), rng)


def _choose_subset(weighted: tuple[list[Candidate], np.ndarray, np.ndarray], rng: np.random.Generator) -> list[Candidate]:
    """One subset of :func:`balanced_subsets`'s, drawn with its probability."""
    candidates, subsets, probabilities = weighted
    return [candidates[int(i)] for i in subsets[int(rng.choice(len(subsets), p=probabilities))]]


def make_record(item: OpenItem, distractors: Sequence[Option], rng: np.random.Generator, set_index: int,
                pool_size: int, dataset: str, extra_metadata: Mapping | None = None) -> MCQRecord:
    """The gold and the distractors in the order of one permutation drawn from ``rng``."""
    options = [Option(item.gold, GOLD)] + list(distractors)
    order = [int(i) for i in rng.permutation(len(options))]
    shuffled = [options[i] for i in order]
    return MCQRecord(
        id=item.id, question=item.question, choices=tuple(o.text for o in shuffled), answer=order.index(0),
        source=dataset, source_config=item.config, source_split=item.split, source_index=item.index,
        subject=item.subject, category=item.category,
        metadata={"gold_text": item.gold_text, "choice_origins": [o.origin for o in shuffled],
                  "choice_models": [list(o.models) for o in shuffled], "pool_size": pool_size,
                  "set_index": set_index, "solution": item.solution, **(extra_metadata or {}), **item.metadata},
    )


def item_sets(item: OpenItem, pools: Mapping[str, Pool] | None, options: SetOptions, dataset: str,
              random_distractors: RandomDistractors | None = None,
              no_predictions: set[str] | frozenset = frozenset()) -> list[MCQRecord]:
    """The item's record in each set (random distractors when ``pools`` is None); :class:`Exclude` when its pool
    has fewer distractors than a set needs (``no_predictions`` for an item no model predicted)."""
    needed = options.choices - 1
    pool = pools.get(item.id) if pools is not None else None
    if pools is not None and (pool is None or pool.size < needed):
        reason = "no_predictions" if item.id in no_predictions else "pool_too_small"
        size = pool.size if pool is not None else 0
        raise Exclude(reason, "pool", f"{size} distractors, {needed} needed")
    # the balanced draw weighs the pool's subsets once for all the item's sets: they depend on the pool alone
    balanced = (balanced_subsets(pool, needed, options.value)
                if pool is not None and options.draw == "balanced" and needed else None)
    return [_set_record(item, pool, k, options, dataset, random_distractors, balanced) for k in range(options.sets)]


def _set_record(item: OpenItem, pool: Pool | None, k: int, options: SetOptions, dataset: str,
                random_distractors: RandomDistractors | None,
                balanced: tuple[list[Candidate], np.ndarray, np.ndarray] | None) -> MCQRecord:
    rng = item_rng(options.seed, item.content_key, options.builder, "set", k)
    needed = options.choices - 1
    if pool is None:
        distractors = [Option(text, RANDOM) for text in random_distractors(item, needed, rng)]
        size = 0
    else:
        drawn = (_choose_subset(balanced, rng) if balanced is not None
                 else draw_from_pool(pool, needed, rng, options.draw, options.value))
        distractors = [Option(c.text, POOL, c.models) for c in drawn]
        size = pool.size
    return make_record(item, distractors, rng, k, size, dataset)


# ---- builder invariants ------------------------------------------------------------------------------


def make_checks(golds: Mapping[str, str], equivalent: Callable[[str, str], bool], pools: Mapping[str, Pool] | None,
                random_ok: Callable[[str, str], bool] | None = None) -> list[Check]:
    """The issue's three invariants, judged with the same equivalence that built the pools."""

    def from_pool(build: Build) -> Iterable[str]:
        for config, split, records in build.records():
            for record in records:
                yield from _origin_violations(config, split, record, golds, pools, random_ok)

    return [
        Check("one_gold_equivalent", "exactly one option is equivalent to the gold, and it is the answer",
              lambda build: _gold_violations(build, golds, equivalent)),
        Check("options_not_equivalent", "no two options are equivalent to each other",
              lambda build: _equal_option_violations(build, equivalent)),
        Check("distractors_from_pool", "every distractor is a pool candidate with its models (or a random "
              "number from the documented interval)", from_pool),
    ]


def second_reading_check(name: str, reading: str, golds: Mapping[str, str], equal: Callable[[str, str], bool]) -> Check:
    """The first two invariants again under an equality that shares no code with the builder's, so that a
    defect in the builder's equivalence shows up as a violation instead of passing its own test."""
    return Check(name, f"re-checked {reading}: exactly one option, the answer, equals the gold, and no two "
                 "options are equal",
                 lambda build: [*_gold_violations(build, golds, equal), *_equal_option_violations(build, equal)])


def _gold_violations(build: Build, golds: Mapping[str, str], equal: Callable[[str, str], bool]) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            matches = [i for i, c in enumerate(record.choices) if equal(golds[record.id], c)]
            if matches != [record.answer]:
                yield f"{config}/{split} {record.id}: options {matches} equal the gold, answer is {record.answer}"


def _equal_option_violations(build: Build, equal: Callable[[str, str], bool]) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            choices = record.choices
            for i in range(len(choices)):
                for j in range(i + 1, len(choices)):
                    if equal(choices[i], choices[j]):
                        yield f"{config}/{split} {record.id}: options {i} and {j} are equal"


def _origin_violations(config, split, record: MCQRecord, golds, pools, random_ok) -> Iterable[str]:
    origins, models = record.metadata["choice_origins"], record.metadata["choice_models"]
    for index, (text, origin, option_models) in enumerate(zip(record.choices, origins, models, strict=True)):
        where = f"{config}/{split} {record.id} option {index}"
        if origin == GOLD:
            if index != record.answer or text != golds[record.id]:
                yield f"{where}: marked gold but is not the answer's gold text"
        elif origin == POOL:
            candidate = pools[record.id].candidate(text) if pools is not None and record.id in pools else None
            if candidate is None:
                yield f"{where}: {text!r} is not in the pool"
            elif tuple(option_models) != candidate.models:
                yield f"{where}: models {option_models} differ from the pool's {list(candidate.models)}"
        elif origin == RANDOM:
            if random_ok is None or not random_ok(golds[record.id], text):
                yield f"{where}: {text!r} is not a random number from the documented interval"
        else:
            yield f"{where}: unknown origin {origin!r}"


# ---- statistics for the card -------------------------------------------------------------------------


def pool_statistics(pools: Sequence[Pool], choices: int) -> Statistics:
    summary = summarize_pools(pools)
    contributed = distractor_models(pools)
    return Statistics([
        Table("Distractor pools", ("N options", "questions kept", "questions excluded"),
              [(n, kept, summary.questions - kept) for n, kept in summary.eligible_by_choices.items()],
              note=(f"{summary.questions} questions, {summary.answered} of them answered by at least one model; their "
                    f"mean pool size is {summary.mean_size:.2f} distinct wrong answers. Equivalence merges: "
                    f"{summary.merges} spellings joined another spelling's class, {summary.gold_merges} of them the "
                    f"gold's. Questions need a pool of at least N-1 distractors for N options; this build uses "
                    f"N = {choices}.")),
        Table("Pool sizes", ("distinct wrong answers", "questions"), list(summary.size_histogram.items())),
        Table("Models", ("model", "answers", "correct", "invalid (no extractable answer)", "pool candidates it gave",
                         "left out (not shown as an option)"),
              [(model, answers, summary.correct_by_model.get(model, 0), summary.invalid_by_model.get(model, 0),
                contributed.get(model, 0), summary.left_out_by_model.get(model, 0))
               for model, answers in summary.answers_by_model.items()],
              note="Every matched prediction is counted once: answers = correct + invalid + the answers behind pool "
                   "candidates + the answers left out (a candidate not shown as an option: the gold in another form, or "
                   "one of another kind than the answer; `pools.jsonl` lists them under `left_out` with the reason)."),
    ])


def position_table(configs: Configs) -> Table:
    """Share of the gold at each position over all sets together (each set is listed in the validation)."""
    counts: Counter = Counter()
    for name, splits in configs.items():
        if name == "default":
            continue
        for records in splits.values():
            counts.update(LETTERS[r.answer] for r in records)
    total = sum(counts.values()) or 1
    letters = sorted(counts)
    return Table("Answer positions over all sets", tuple(letters), [tuple(counts[x] / total for x in letters)],
                 percent=tuple(letters))


def same_in_every_set(configs: Configs) -> dict[str, int]:
    """How many items have the same options in every set (``same_options``; a pool of exactly N-1 distractors
    allows one draw), and of them how many in the same order too (``same_order``), of all (``total``): the sets are
    independent draws only for the others."""
    sets = [splits for name, splits in configs.items() if name.startswith("set_")]
    counts = {"total": 0, "same_options": 0, "same_order": 0}
    if not sets:
        return counts
    for split, records in sets[0].items():
        for index in range(len(records)):
            drawn = [s[split][index].choices for s in sets]
            counts["total"] += 1
            counts["same_options"] += all(sorted(c) == sorted(drawn[0]) for c in drawn)
            counts["same_order"] += all(tuple(c) == tuple(drawn[0]) for c in drawn)
    return counts
