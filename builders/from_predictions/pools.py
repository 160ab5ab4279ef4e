"""Distractor pools: the distinct wrong answers real models gave to one question.

Generic over the kind of answer. An :class:`Equivalence` engine says when two answers are the same:
``key`` gives a canonical key (cheap, exact: answers with equal keys are one class, and ``None`` marks an
unparseable answer, counted as invalid for its model); engines whose equality is not a canonical form
(MATH, through math-verify) also implement ``same(a, b)``, which is asked once per pair of classes that
``key`` could not tell apart.

A pool holds one representative per equivalence class of wrong answers, with the models that gave it.
Answers equivalent to the gold are counted as correct and dropped. Candidates are ranked by how many
models gave them (frequent wrong answers are the plausible ones), then by text, so a pool never depends
on the order the predictions came in.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import (
    Any,
    Callable,
    Hashable,
    Iterable,
    Protocol,
    Sequence,
    runtime_checkable,
)

logger = logging.getLogger(__name__)


@runtime_checkable
class Equivalence(Protocol):
    """When two answers count as the same answer."""

    def key(self, answer: str) -> Hashable | None:
        """Canonical key: equal keys mean equivalent answers; None means unparseable (invalid)."""
        ...


def pairwise_same(equivalence: Equivalence):
    """The engine's pairwise check, or None when keys alone decide equivalence."""
    same = getattr(equivalence, "same", None)
    return same if callable(same) else None


@dataclass(frozen=True)
class Candidate:
    """One wrong answer (the representative of its class) and the models that gave it."""

    text: str
    models: tuple[str, ...]
    variants: tuple[str, ...] = ()  # other spellings merged into this class

    @property
    def count(self) -> int:
        return len(self.models)


@dataclass
class Pool:
    question_id: str
    gold: str
    candidates: list[Candidate]
    invalid: dict[str, int] = field(default_factory=dict)  # unparseable answers, per model
    correct: dict[str, int] = field(default_factory=dict)  # answers equivalent to the gold, per model
    # Equivalence merges: distinct spellings joined to another spelling's class ("4.0" into "4"),
    # the gold's class included (its spellings count against the gold's own text).
    merges: int = 0
    gold_merges: int = 0  # of which joined the gold's class
    # Wrong answers that are not shown as options, with the reason (the gold in another unit, the gold
    # rounded): their models are still counted, so that every prediction is accounted for.
    left_out: tuple["LeftOut", ...] = ()

    @property
    def size(self) -> int:
        return len(self.candidates)

    @property
    def texts(self) -> list[str]:
        return [c.text for c in self.candidates]

    def candidate(self, text: str) -> Candidate | None:
        return next((c for c in self.candidates if c.text == text), None)


@dataclass(frozen=True)
class LeftOut:
    """A candidate kept out of the options, and why."""

    candidate: Candidate
    reason: str


def leave_out(pool: Pool, reason_for: Callable[[Candidate], str | None]) -> Pool:
    """The pool without the candidates for which ``reason_for`` gives a reason; they move to ``left_out``."""
    kept, left = [], list(pool.left_out)
    for candidate in pool.candidates:
        reason = reason_for(candidate)
        if reason is None:
            kept.append(candidate)
        else:
            left.append(LeftOut(candidate, reason))
    return replace(pool, candidates=kept, left_out=tuple(left))


def rounds_to(exact: Fraction, shown: Fraction, decimals: int) -> bool:
    """Whether ``shown``, written with ``decimals`` digits after the point, is ``exact`` rounded to that precision
    ("0.377" beside 193/512, "15.588" beside 15.588457...): a second correct answer beside ``exact``. A value
    without decimals is kept (11 beside 10.5 is a different answer, not a rounding), as is one that writes
    ``exact`` in full."""
    if decimals <= 0 or shown == exact or (exact * 10 ** decimals).denominator == 1:
        return False
    return abs(exact - shown) * 2 * 10 ** decimals <= 1


def left_out_counts(pools: Iterable[Pool]) -> Counter:
    """Candidates left out over all pools, per reason."""
    return Counter(left.reason for pool in pools for left in pool.left_out)


@dataclass
class _Group:
    """Answers that share one canonical key."""

    key: Hashable
    texts: Counter = field(default_factory=Counter)
    models: list[str] = field(default_factory=list)

    @property
    def representative(self) -> str:
        # The spelling most models used; ties go to the shortest, then the first in text order.
        return min(self.texts, key=lambda t: (-self.texts[t], len(t), t))


def build_pool(question_id: str, gold: str, outputs: Sequence[tuple[str, str | None]],
               equivalence: Equivalence) -> Pool:
    """The pool of one question from (model, extracted answer or None) pairs."""
    gold_key = equivalence.key(gold)
    if gold_key is None:
        raise ValueError(f"{question_id}: the gold answer {gold!r} is not a valid answer")
    invalid, groups = _group(outputs, equivalence)
    pool = Pool(question_id, gold, [], dict(sorted(invalid.items())))
    _merge_groups(pool, gold_key, groups, pairwise_same(equivalence))
    return pool


def comparison_group(gold: str, outputs: Sequence[tuple[str, str | None]], equivalence: Equivalence) -> list[str]:
    """The gold, then every answer spelling that :func:`build_pool` may compare pairwise: engines with a
    batch ``prepare(groups)`` judge these pairs in advance, in parallel."""
    _, groups = _group(outputs, equivalence)
    return [gold] + [group.representative for group in groups.values()]


def _group(outputs: Sequence[tuple[str, str | None]], equivalence: Equivalence) -> tuple[Counter, dict[Hashable, "_Group"]]:
    invalid: Counter = Counter()
    groups: dict[Hashable, _Group] = {}
    for model, answer in outputs:
        key = equivalence.key(answer) if answer is not None and answer.strip() else None
        if key is None:
            invalid[model] += 1
            continue
        group = groups.setdefault(key, _Group(key))
        group.texts[answer.strip()] += 1
        group.models.append(model)
    return invalid, groups


def _merge_groups(pool: Pool, gold_key: Hashable, groups: dict[Hashable, _Group], same) -> None:
    """Join key groups into classes; the gold's class is counted as correct, the others become candidates."""
    gold_class = [groups[gold_key]] if gold_key in groups else []
    classes: list[list[_Group]] = []
    ordered = sorted((g for k, g in groups.items() if k != gold_key),
                     key=lambda g: (-len(g.models), g.representative))
    for group in ordered:
        if same is not None and same(pool.gold, group.representative):
            gold_class.append(group)
            continue
        home = next((c for c in classes if same is not None and same(c[0].representative, group.representative)), None)
        if home is None:
            classes.append([group])
        else:
            home.append(group)
    gold_texts = {pool.gold.strip()} | {t for group in gold_class for t in group.texts}
    pool.gold_merges = len(gold_texts) - 1
    pool.merges = pool.gold_merges + sum(len({t for g in members for t in g.texts}) - 1 for members in classes)
    pool.correct = dict(sorted(Counter(m for group in gold_class for m in group.models).items()))
    candidates = [_candidate(members) for members in classes]
    pool.candidates = sorted(candidates, key=lambda c: (-c.count, c.text))


def _candidate(members: list[_Group]) -> Candidate:
    texts: Counter = Counter()
    for group in members:
        texts.update(group.texts)
    representative = min(texts, key=lambda t: (-texts[t], len(t), t))
    models = tuple(sorted({m for group in members for m in group.models}))
    variants = tuple(sorted(t for t in texts if t != representative))
    return Candidate(representative, models, variants)


# ---- the --pool report ---------------------------------------------------------------------------


def pool_rows(pools: Iterable[Pool]) -> list[dict[str, Any]]:
    """One plain row per question: pool size, candidates with their models, invalid counts, merges."""
    return [
        {
            "question_id": pool.question_id,
            "gold": pool.gold,
            "pool_size": pool.size,
            "candidates": [{"text": c.text, "count": c.count, "models": list(c.models), "variants": list(c.variants)}
                           for c in pool.candidates],
            "invalid": pool.invalid,
            "correct": pool.correct,
            "merges": pool.merges,
            "gold_merges": pool.gold_merges,
            "left_out": [{"text": left.candidate.text, "count": left.candidate.count,
                          "models": list(left.candidate.models), "reason": left.reason} for left in pool.left_out],
        }
        for pool in pools
    ]


def pool_report(pools: Iterable[Pool]) -> str:
    """The per-question report as JSON lines (what ``--pool PATH`` writes)."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in pool_rows(pools))


@dataclass(frozen=True)
class PoolSummary:
    questions: int
    answered: int  # questions with at least one prediction (valid or not)
    mean_size: float  # over the answered questions
    size_histogram: dict[int, int]
    eligible_by_choices: dict[int, int]  # N -> questions whose pool has at least N-1 candidates
    invalid_by_model: dict[str, int]
    correct_by_model: dict[str, int]
    answers_by_model: dict[str, int]
    left_out_by_model: dict[str, int]  # answers whose candidate is not shown (``Pool.left_out``)
    merges: int
    gold_merges: int


def summarize_pools(pools: Sequence[Pool], choices: Iterable[int] = range(2, 9)) -> PoolSummary:
    sizes = Counter(pool.size for pool in pools)
    invalid, correct, answered, left_out = Counter(), Counter(), Counter(), Counter()
    for pool in pools:
        invalid.update(pool.invalid)
        correct.update(pool.correct)
        answered.update(pool.invalid)
        answered.update(pool.correct)
        for candidate in pool.candidates:
            answered.update(candidate.models)
        for left in pool.left_out:
            answered.update(left.candidate.models)
            left_out.update(left.candidate.models)
    with_answers = [p for p in pools if p.candidates or p.invalid or p.correct or p.left_out]
    return PoolSummary(
        questions=len(pools),
        answered=len(with_answers),
        mean_size=sum(p.size for p in with_answers) / len(with_answers) if with_answers else 0.0,
        size_histogram=dict(sorted(sizes.items())),
        eligible_by_choices={n: sum(1 for p in pools if p.size >= n - 1) for n in choices},
        invalid_by_model=dict(sorted(invalid.items())),
        correct_by_model=dict(sorted(correct.items())),
        answers_by_model=dict(sorted(answered.items())),
        left_out_by_model=dict(sorted(left_out.items())),
        merges=sum(p.merges for p in pools),
        gold_merges=sum(p.gold_merges for p in pools),
    )


def distractor_models(pools: Iterable[Pool]) -> dict[str, int]:
    """How many pool candidates each model contributed to."""
    counts: dict[str, int] = defaultdict(int)
    for pool in pools:
        for candidate in pool.candidates:
            for model in candidate.models:
                counts[model] += 1
    return dict(sorted(counts.items()))


def respell(pool: Pool, spell: Callable[[str], str]) -> Pool:
    """The pool with each candidate shown as ``spell(text)``, for engines with a canonical spelling (GSM8K
    numbers): the spellings models used stay in ``variants``. ``spell`` must map a class to one text."""
    candidates = []
    for candidate in pool.candidates:
        text = spell(candidate.text)
        variants = tuple(sorted({candidate.text, *candidate.variants} - {text}))
        candidates.append(Candidate(text, candidate.models, variants))
    return replace(pool, candidates=sorted(candidates, key=lambda c: (-c.count, c.text)))
