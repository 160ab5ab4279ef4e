"""PythonIO's steps, which the core runs over one row per assert of the tests (:func:`.problems.extract_rows`):

1. ``extract``: an assert that is no (program, call, expected) pair is excluded with its reason;
2. ``verify``, across the items (the sandbox runs them in batches, one unit per problem): a pair whose call does
   not return the value its test expects is excluded with the reason (:mod:`.verify`);
3. ``distractors``, across the items (the predictions are matched and pooled over all of them at once): the item's
   record in every set, or excluded when its pool has too few distractors (:mod:`.pools`; the sets are the
   kernel's, :func:`builders.from_predictions.sets.item_sets`).

Each step object keeps what the card reports of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from builders.core.items.outcomes import Exclude
from builders.core.items.record import MCQRecord, OpenItem
from builders.core.pipeline.steps import Across, Step
from builders.core.sandbox import Sandbox
from builders.core.sources.predictions import MatchReport, Prediction
from builders.from_predictions import sets as mc
from builders.from_predictions.options import PredictionOptions
from builders.from_predictions.pools import Pool

from .pools import make_pools
from .predictions import collect
from .problems import BENCHMARK, NAME, CallPair, Rejected, Row
from .verify import VerificationStats, Verified, verify_pairs

Outcomes = dict[str, list[tuple[Any, Any]]]  # split -> (item, its outcome) for an Across step


def question_text(pair: CallPair) -> str:
    call = f"`{pair.call}`" if "\n" not in pair.call and "`" not in pair.call else f"\n\n```python\n{pair.call}\n```\n"
    return (f"Consider the following Python program.\n\n```python\n{pair.problem.program.rstrip()}\n```\n\n"
            f"What does {call} return?")


def open_item(verified: Verified) -> OpenItem:
    """The open question of a verified pair, in its own source dataset's split and config (MBPP's validation rows
    feed ``train``, and say they are MBPP's validation rows)."""
    pair, problem = verified.pair, verified.pair.problem
    return OpenItem(pair.id, problem.source_split, problem.source_index, question_text(pair), verified.gold,
                    pair.expected_text, "", problem.source_config, category=problem.benchmark,
                    metadata={"benchmark": problem.benchmark, "task_id": problem.task_id, "program": problem.program,
                              "call": pair.call})


def accepted(row: Row) -> CallPair:
    """The ``extract`` step: a pair goes on, an assert that is none is excluded with its reason."""
    if isinstance(row, Rejected):
        raise row.error
    return row


class Verification:
    """The ``verify`` step: every pair's call run at once in the sandbox; then ``verified`` (in the pairs' order)
    and the ``stats`` of the runs."""

    def __init__(self, sandbox: Sandbox, max_chars: int, call_seconds: float):
        self.sandbox, self.max_chars, self.call_seconds = sandbox, max_chars, call_seconds
        self.verified: list[Verified] = []
        self.stats = VerificationStats(mechanism=sandbox.mechanism)

    def __call__(self, pairs: Mapping[str, Sequence[CallPair]]) -> Outcomes:
        every = [pair for split_pairs in pairs.values() for pair in split_pairs]
        self.verified, rejected, self.stats = verify_pairs(every, self.sandbox, self.max_chars, self.call_seconds)
        outcome: dict[str, Verified | Exclude] = {**{v.pair.id: v for v in self.verified}, **rejected}
        return {split: [(pair, outcome[pair.id]) for pair in split_pairs] for split, split_pairs in pairs.items()}


class Distractors:
    """The ``distractors`` step: the predictions (read, and generated for the verified items) matched onto the
    items, one pool per verified item, and each item's record in every set; then the predictions' ``report``, the
    requests that ``failed`` per model, the ``pools`` and their ``counts``."""

    def __init__(self, predictions: Sequence[Prediction], pairs: Sequence[CallPair], options: PredictionOptions,
                 max_chars: int):
        self.predictions, self.pairs, self.options, self.max_chars = predictions, pairs, options, max_chars
        self.report = MatchReport()
        self.failures: dict[str, int] = {}
        self.pools: dict[str, Pool] = {}
        self.counts: dict[str, Any] = {}

    def __call__(self, items: Mapping[str, Sequence[Verified]]) -> Outcomes:
        verified = [v for split_items in items.values() for v in split_items]
        matched, self.report, self.failures = collect(self.predictions, self.pairs, verified, self.options)
        self.pools, self.counts = make_pools(verified, matched, self.max_chars)
        no_predictions = {v.pair.id for v in verified} - set(matched)
        return {split: [(v, self._sets(v, no_predictions)) for v in split_items] for split, split_items in items.items()}

    def _sets(self, verified: Verified, no_predictions: set[str]) -> dict[str, MCQRecord] | Exclude:
        options = self.options
        set_options = mc.SetOptions(NAME, options.choices, options.sets, options.seed, options.draw)
        dataset = BENCHMARK.part(verified.pair.problem.benchmark).hub_id
        try:
            records = mc.item_sets(open_item(verified), self.pools, set_options, dataset, no_predictions=no_predictions)
        except Exclude as excluded:
            return excluded
        return dict(zip(mc.config_names(options.sets), [records[0], *records], strict=True))


def steps(verification: Verification, distractors: Distractors) -> list[Step | Across]:
    return [Step("extract", accepted), Across("verify", verification), Across("distractors", distractors)]
