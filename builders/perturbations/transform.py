"""The per-item transforms of a config: the options' order and labels, the demonstrations, the prompt.

Every random draw comes from ``item_rng(seed, item content, NAME, purpose)`` (:mod:`core.items.rng`), made once
per item and shared by the configs that use it: `shuffle` and `symbols_*_shuffled_content` show the same
permutation, both symbol sets the same symbol order, so that two configs differ only in what they are about.

An item whose options cannot take a config's change is copied unchanged (source order, letters) with its
``skip_reason``: options that refer to other options or to positions ("All of the above", "Both A and B",
"option C"), fewer options than the gold position, or more options than the symbol set has, in the configs
and splits that reorder or relabel options. A config that relabels in place (``symbols_*`` without a shuffle)
skips only options that name a label ("Both A and B", "option C"): "None of the above" stays true. The
gold-position configs show only demonstrations whose gold they move, so that every one answers their letter. An item with duplicated options (equal after whitespace
normalisation; case matters) has ``skip_reason`` ``duplicate_choices`` in every config and split: its options
are the source's everywhere, and its wrong answer in context is an option whose text differs from the gold.
Such an item stays in the config, and is shown unchanged where it is a demonstration: every config of an
item shows as many demonstrations as ``original``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, NamedTuple, Sequence

from builders.core.items.record import LETTERS, MCQRecord
from builders.core.items.referring import LABEL_REASONS, position_dependent_reason
from builders.core.items.rng import first_integers, permutations
from builders.core.items.outcomes import Skip
from builders.core.pipeline.steps import Across
from builders.core.items.twins import duplicate_option, option_key
from builders.perturbations import prompts
from builders.perturbations.configs import NAME, ConfigSpec, subject_group, symbols

TRIVIAL_FILE = Path(__file__).resolve().parent / "trivial_fewshot.jsonl"
DUPLICATE_CHOICES = "duplicate_choices"
FEWER_OPTIONS = "fewer_options_than_gold_position"
MORE_OPTIONS = "more_options_than_symbols"
SAMPLERS = ("first_n", "random")  # lm-eval's names: the first k in source order, or a random k


@lru_cache(maxsize=1)
def trivial_questions() -> tuple[dict[str, Any], ...]:
    """The shipped trivial questions (written for mcqforge), as rows with letter labels."""
    rows = [json.loads(line) for line in TRIVIAL_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return tuple({**row, "labels": list(LETTERS[: len(row["choices"])])} for row in rows)


# ---- per-item draws -------------------------------------------------------------------------------------

class ItemDraws:
    """Every per-item random draw, made once per item (its generator is keyed by its content) and shared
    by every config that uses it. A permutation is ``item_rng(...).permutation(n)`` and a derangement the first
    of its permutations without a fixed point; a choice is ``item_rng(...).integers(n)`` (:mod:`core.items.rng`
    computes them without a generator object)."""

    def __init__(self, seed: int):
        self.seed = seed
        self._cache: dict[tuple[Any, ...], Any] = {}

    def prepare(self, records: Sequence[MCQRecord], purpose: str) -> None:
        """Draw the option permutation of ``purpose`` (shuffle, derangement or symbol_order) of every record at
        once: the same as each record's own."""
        missing = [r for r in records if (r.id, purpose) not in self._cache and len(r.choices) > 1]
        made = permutations(self.seed, [r.content_key for r in missing], [len(r.choices) for r in missing],
                            NAME, purpose, derangements=purpose == "derangement")
        self._cache.update(zip([(r.id, purpose) for r in missing], made, strict=True))

    def permutation(self, record: MCQRecord, purpose: str) -> list[int]:
        """The option permutation of ``purpose`` (shuffle, derangement or symbol_order)."""
        key = (record.id, purpose)  # ids are unique in a source; the content key is hashed on a miss only
        if key not in self._cache:
            if len(record.choices) < 2:
                return identity(len(record.choices))
            self.prepare([record], purpose)
        return self._cache[key]

    def prepare_choices(self, records: Sequence[MCQRecord], purpose: str, sizes: Sequence[int]) -> None:
        """Draw the choice of ``purpose`` among ``sizes[i]`` options of every record at once."""
        missing = [(r, n) for r, n in zip(records, sizes, strict=True) if (r.id, purpose) not in self._cache]
        drawn = first_integers(self.seed, [r.content_key for r, _ in missing], [n for _, n in missing], NAME, purpose)
        self._cache.update(zip([(r.id, purpose) for r, _ in missing], drawn, strict=True))

    def prepare_wrong_answers(self, records: Sequence[MCQRecord]) -> None:
        """Draw the wrong answer in context of every record at once (:meth:`wrong_answer`)."""
        missing = [r for r in records if (r.id, "wrong_answer") not in self._cache]
        wrong = [wrong_options(r) for r in missing]
        drawn = first_integers(self.seed, [r.content_key for r in missing], list(map(len, wrong)), NAME, "wrong_answer")
        self._cache.update(((r.id, "wrong_answer"), options[i]) for r, options, i in zip(missing, wrong, drawn, strict=True))

    def wrong_answer(self, record: MCQRecord) -> int:
        """A source index whose text differs from the gold's (with duplicated options, not the gold's twin)."""
        if (record.id, "wrong_answer") not in self._cache:
            self.prepare_wrong_answers([record])
        return self._cache[record.id, "wrong_answer"]

    def choice(self, record: MCQRecord, purpose: str, options: Sequence[str]) -> str:
        if (record.id, purpose) not in self._cache:
            self.prepare_choices([record], purpose, [len(options)])
        return options[self._cache[record.id, purpose]]

    def order(self, record: MCQRecord, purpose: str, candidates: Sequence[str]) -> list[str]:
        key = (record.id, purpose, len(candidates))  # a gold-position config's candidates are fewer: those it moves
        if key not in self._cache:
            self._cache[key] = permutations(self.seed, [record.content_key], [len(candidates)], NAME, purpose)[0]
        return [candidates[i] for i in self._cache[key]]


def wrong_options(record: MCQRecord) -> list[int]:
    """The source indices a wrong answer in context is drawn from: those whose text differs from the gold's."""
    gold = option_key(record.gold)
    return ([i for i in range(len(record.choices)) if option_key(record.choices[i]) != gold]
            or [i for i in range(len(record.choices)) if i != record.answer])  # every option is the gold's text


# ---- option order and labels ---------------------------------------------------------------------------


@lru_cache(maxsize=None)
def identity(size: int) -> list[int]:
    """The permutation that keeps the order, one list per size that every record shares (none is ever changed:
    415,483 records of MMLU's 29 configs held one each)."""
    return list(range(size))


@lru_cache(maxsize=None)
def letters(size: int) -> list[str]:
    """The letter labels of ``size`` options, one shared list per size (as :func:`identity`)."""
    return list(LETTERS[:size])


def swapped(size: int, pairs: Iterable[tuple[int, int]]) -> list[int]:
    """Identity with the given position swaps; swaps that reach past the last option are skipped."""
    permutation = list(range(size))
    for a, b in pairs:
        if a < size and b < size:
            permutation[a], permutation[b] = permutation[b], permutation[a]
    return permutation


@lru_cache(maxsize=None)
def shared_swapped(size: int, pairs: tuple[tuple[int, int], ...]) -> list[int]:
    """:func:`swapped`, one list per (size, swaps) that every record shares (as :func:`identity`)."""
    return swapped(size, pairs)


@lru_cache(maxsize=None)
def symbol_labels(name: str, size: int) -> list[str]:
    """The first ``size`` symbols of a set, one shared list per (set, size) (as :func:`identity`)."""
    return list(symbols(name)[:size])


@lru_cache(maxsize=None)
def content_skip_reason(choices: tuple[str, ...], relabels_only: bool = False) -> str | None:
    """Why no config may reorder (``relabels_only``: relabel in place) these options, or None (once per distinct
    option tuple). Relabelling in place breaks only a reference to a label: "None of the above", "All three" and
    "The first two" stay true."""
    if duplicate_option(choices) is not None:
        return DUPLICATE_CHOICES
    return position_dependent_reason(choices, LABEL_REASONS if relabels_only else None)


class OptionFields(NamedTuple):
    """A record's fields in one config: its ``metadata`` is that of a config without an answer in context (one dict
    that the records of every config of the same variant share: none is ever changed)."""

    choices: tuple[str, ...]
    answer: int
    labels: list[str]
    metadata: dict[str, Any]

    @property
    def permutation(self) -> list[int]:
        return self.metadata["permutation"]

    @property
    def skip_reason(self) -> str | None:
        return self.metadata["skip_reason"]


class SharedFields:
    """:meth:`Perturbation.fields` of every item, made once per variant and split and shared by the configs of that
    variant: their records hold the same choices, labels and metadata (one dict per item and variant, not per record:
    14 variants for MMLU's 29 configs)."""

    def __init__(self) -> None:
        self._tables: dict[tuple[Any, ...], dict[str, OptionFields]] = {}

    def split_fields(self, perturbation: Perturbation, split: str, records: Sequence[MCQRecord]) -> list[OptionFields]:
        table = self._tables.setdefault((perturbation.variant(split), split), {})
        perturbation.prepare([r for r in records if r.id not in table], split)
        made = []
        for record in records:
            found = table.get(record.id)
            if found is None:
                found = table[record.id] = perturbation.fields(record, split)
            made.append(found)
        return made


class Perturbation:
    """One config's option change, as the new fields of a record; the gold is tracked by index."""

    def __init__(self, spec: ConfigSpec, draws: ItemDraws, swaps: tuple[tuple[int, int], ...],
                 fewshot_split: str | None):
        self.spec, self.draws, self.swaps, self.fewshot_split = spec, draws, swaps, fewshot_split

    def skip_reason(self, record: MCQRecord) -> str | None:
        reason = content_skip_reason(record.choices, self.spec.relabels_only)
        if reason is None and self.spec.gold_position is not None and self.spec.gold_position >= len(record.choices):
            return FEWER_OPTIONS
        if reason is None and self.spec.symbols is not None and len(record.choices) > len(symbols(self.spec.symbols)):
            return MORE_OPTIONS
        return reason

    def variant(self, split: str) -> tuple[Any, ...]:
        """What :meth:`fields` depends on beside the item: configs with the same variant give every item the same
        fields (8 of MMLU's 29 keep every option in place, and so do the splits a config does not transform), and
        :class:`SharedFields` makes them once."""
        spec = self.spec
        if not spec.transforms(split, self.fewshot_split):
            return ("unchanged",)
        return spec.order, spec.gold_position, spec.symbols, spec.symbol_order

    def prepare(self, records: Sequence[MCQRecord], split: str) -> None:
        """Make the permutations :meth:`fields` of these records will draw, all at once (those of items it copies
        unchanged too: a draw is a pure function of the item)."""
        if not self.spec.transforms(split, self.fewshot_split):
            return
        if self.spec.order in ("shuffle", "derangement"):
            self.draws.prepare(records, self.spec.order)
        if self.spec.symbols is not None and self.spec.symbol_order == "shuffled":
            self.draws.prepare(records, "symbol_order")

    def fields(self, record: MCQRecord, split: str) -> OptionFields:
        """``choices``, ``answer``, ``labels`` and ``metadata`` of the record in this config and split."""
        size = len(record.choices)
        transforms = self.spec.transforms(split, self.fewshot_split)
        reason = self.skip_reason(record) if transforms else None
        if reason is None and content_skip_reason(record.choices, False) == DUPLICATE_CHOICES:
            reason = DUPLICATE_CHOICES  # flagged in every config and split, as WiCkeD flags it
        if transforms and reason is None:
            permutation, labels = self.option_order(record), self.option_labels(record)
        else:
            permutation, labels = identity(size), letters(size)
        return OptionFields(
            record.choices if permutation == identity(size) else tuple(record.choices[p] for p in permutation),
            permutation.index(record.answer), labels,
            {**record.metadata, "permutation": permutation, "original_answer": record.answer,
             "context_answer": None, "skip_reason": reason})

    def option_order(self, record: MCQRecord) -> list[int]:
        """``permutation[j]``: the source index of the option shown at position j."""
        order = self.spec.order
        if order == "swap_fixed":
            return shared_swapped(len(record.choices), self.swaps)
        if order in ("derangement", "shuffle"):
            return self.draws.permutation(record, order)
        if order == "gold_at":
            return shared_swapped(len(record.choices), ((record.answer, self.spec.gold_position),))
        return identity(len(record.choices))

    def option_labels(self, record: MCQRecord) -> list[str]:
        size = len(record.choices)
        if self.spec.symbols is None:
            return letters(size)
        available = symbols(self.spec.symbols)
        if self.spec.symbol_order == "shuffled":
            return [available[i] for i in self.draws.permutation(record, "symbol_order")]
        return symbol_labels(self.spec.symbols, size)


# ---- demonstrations ---------------------------------------------------------------------------------------


class Demonstrations:
    """The ids of the demonstrations each item is shown, per kind: the same in every config of that kind.

    Candidates are the few-shot items of a subject in source order, never the item itself. ``first_n`` takes
    the first ``shots`` of them (lm-eval's MMLU); ``random`` takes ``shots`` in a per-item random order. The
    other kinds show as many demonstrations as the same-subject kind (`original`) shows the item: an
    `ood_fewshot` item draws another subject among those with enough few-shot items; `trivial_fewshot` takes
    the shipped trivial questions.
    """

    def __init__(self, fewshot_records: Sequence[MCQRecord], shots: int, sampler: str, draws: ItemDraws):
        groups: dict[str, list[str]] = defaultdict(list)
        for record in fewshot_records:
            groups[subject_group(record)].append(record.id)
        self.groups = dict(groups)
        self.subjects = sorted(groups)
        self.shots, self.sampler, self.draws = shots, sampler, draws
        self._cache: dict[tuple[str, str, frozenset[str] | None], tuple[tuple[str, ...], list[str]]] = {}
        self._lists: dict[tuple[str, ...], list[str]] = {}

    def ids(self, record: MCQRecord, kind: str, movable: frozenset[str] | None = None) -> tuple[str, ...]:
        """``movable``: only these few-shot items may be shown (a gold-position config shows only demonstrations
        whose gold it moved, so that every demonstration answers its letter); None: any."""
        return self.shown(record, kind, movable)[0]

    def shown(self, record: MCQRecord, kind: str,
              movable: frozenset[str] | None = None) -> tuple[tuple[str, ...], list[str]]:
        """:meth:`ids`, and the ``fewshot`` column's list of them: one list for every record of every config that
        shows them (none is ever changed; with ``first_n`` every item of a subject shows the same)."""
        key = (record.id, kind, movable)
        found = self._cache.get(key)
        if found is None:
            ids = self._choose(record, kind, movable)
            found = self._cache[key] = (ids, self._lists.setdefault(ids, list(ids)))
        return found

    def _choose(self, record: MCQRecord, kind: str, movable: frozenset[str] | None = None) -> tuple[str, ...]:
        if kind == "none" or self.shots == 0:
            return ()
        if kind == "same_subject":
            candidates = self.groups.get(subject_group(record), [])
            if movable is not None:  # the next few-shot items of the subject stand in for those that cannot move
                candidates = [i for i in candidates if i in movable]
            return self._take(record, kind, candidates, self.shots)
        wanted = len(self.ids(record, "same_subject"))  # as many as `original` shows
        if kind == "trivial":
            candidates = [row["id"] for row in trivial_questions()]
        else:  # other_subject
            subjects = self._other_subjects(record)
            if not subjects:
                return ()
            candidates = self.groups[self.draws.choice(record, "ood_subject", subjects)]
        return self._take(record, kind, candidates, wanted)

    def prepare(self, records: Sequence[MCQRecord], kind: str) -> None:
        """Draw the other subject of every record at once, for a config of ``kind``."""
        if kind == "other_subject" and self.shots:
            subjects = [(r, self._other_subjects(r)) for r in records]
            subjects = [(r, s) for r, s in subjects if s]
            self.draws.prepare_choices([r for r, _ in subjects], "ood_subject", [len(s) for _, s in subjects])

    def _other_subjects(self, record: MCQRecord) -> list[str]:
        """The subjects an `ood_fewshot` item draws its demonstrations from: those with as many few-shot items as
        `original` shows it, or any other where none has."""
        wanted = len(self.ids(record, "same_subject"))
        others = [s for s in self.subjects if s != subject_group(record)]
        return [s for s in others if len(self.groups[s]) >= wanted] or others

    def _take(self, record: MCQRecord, kind: str, candidates: Sequence[str], count: int) -> tuple[str, ...]:
        candidates = [i for i in candidates if i != record.id]
        if self.sampler == "random":
            candidates = self.draws.order(record, f"{kind}_order", candidates)
        return tuple(candidates[:count])


# ---- prompts ------------------------------------------------------------------------------------------------


def row_view(record: MCQRecord, fields: OptionFields) -> dict[str, Any]:
    """What the prompt renderer reads, as the record's dataset row will have it."""
    return {"id": record.id, "question": record.question, "choices": fields.choices, "labels": fields.labels,
            "answer": fields.answer, "subject": record.subject, "category": record.category}


class PromptRenderer:
    """One config's symbol-scoring prompts (the ``prompt`` column), exactly as :func:`prompts.render` writes
    them. Each demonstration block is rendered once, and so is each instruction + demonstrations head that
    items share (with ``first_n``, every item of a subject)."""

    def __init__(self, spec: ConfigSpec, pool: Mapping[str, Mapping[str, Any]]):
        self.spec, self.pool = spec, pool
        self._heads: dict[tuple[str | None, tuple[str, ...]], str] = {}
        self._trivial = {row["id"]: row for row in trivial_questions()}

    def prompt(self, record: MCQRecord, fields: OptionFields, demonstration_ids: tuple[str, ...],
               context_answer: int | None) -> str:
        """The prompt of ``record`` with these ``fields``; ``context_answer``: the answer the item's own
        demonstration shows (in-context configs), else None."""
        head = self._head(record.subject or record.category, demonstration_ids)
        # what the question block reads of the record's row (:func:`row_view`), and no more: it is made for every prompt
        item = {"question": record.question, "labels": fields.labels, "choices": fields.choices}
        parts = [head]
        if context_answer is not None:
            parts.append(prompts.question_block(item, "symbol", self.spec.answer_prefix, context_answer))
        parts.append(prompts.question_block(item, "symbol", self.spec.answer_prefix, None))
        return "\n\n".join(parts)

    def _head(self, subject: str | None, demonstration_ids: tuple[str, ...]) -> str:
        key = (subject, demonstration_ids)
        if key not in self._heads:
            blocks = []
            for demo_id in demonstration_ids:
                demo = self.pool.get(demo_id) or self._trivial[demo_id]
                blocks.append(prompts.question_block(demo, "symbol", self.spec.answer_prefix, demo["answer"]))
            self._heads[key] = "\n\n".join([prompts.instruction(subject, self.spec.with_subject), *blocks])
        return self._heads[key]


class PromptColumns(Mapping[str, Any]):
    """A record's ``labels``, ``fewshot`` and ``prompt`` columns. The prompt is rendered each time it is read (by
    the writer, which renders it where it writes it, and by the checks), never held: 29 configs of MMLU hold about
    1 GB of prompts, where what renders one is a few references (the config's renderer caches its heads)."""

    __slots__ = ("labels", "fewshot", "_renderer", "_ids", "_context", "_record", "_fields")
    KEYS = ("labels", "fewshot", "prompt")

    def __init__(self, fewshot: list[str], renderer: PromptRenderer, record: MCQRecord, fields: OptionFields,
                 ids: tuple[str, ...], context: int | None):
        self.labels, self.fewshot = fields.labels, fewshot
        self._renderer, self._ids, self._context = renderer, ids, context
        # what the renderer reads: the source record and the fields, not the record that holds
        # these columns
        self._record, self._fields = record, fields

    def __getitem__(self, key: str) -> Any:
        if key == "labels":
            return self.labels
        if key == "fewshot":
            return self.fewshot
        if key == "prompt":
            return self._renderer.prompt(self._record, self._fields, self._ids, self._context)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:  # not Mapping's, which reads (renders) the value
        return key in self.KEYS

    def get(self, key: str, default: Any = None) -> Any:  # Mapping's goes through a try and __getitem__: the writer asks every record
        return self[key] if key in self.KEYS else default

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)


# ---- one config -----------------------------------------------------------------------------------------------


BASELINE = "baseline_config"  # the outcome of every item of `original` and `original_zero_shot`: the source itself


class ConfigRecords:
    """One config's records, made by the core's runner. Its :attr:`step` spans the items: every prompt shows the
    few-shot split's items as this config transforms them, so the few-shot split is transformed first. An item
    the config's change (options, labels, prompt) reaches is altered; any other is copied unchanged with its
    ``skip_reason`` (a baseline config copies every item, as :data:`BASELINE` where it has no other reason), still
    with its labels, demonstrations and prompt: :meth:`copy` gives that record."""

    def __init__(self, spec: ConfigSpec, draws: ItemDraws, swaps: tuple[tuple[int, int], ...],
                 fewshot_split: str | None, demonstrations: Demonstrations, shared: SharedFields):
        self.spec, self.fewshot_split, self.demonstrations, self.shared = spec, fewshot_split, demonstrations, shared
        self.perturbation = Perturbation(spec, draws, swaps, fewshot_split)
        self._copies: dict[str, MCQRecord] = {}  # id -> the record of an item copied unchanged

    @property
    def step(self) -> Across:
        return Across(self.spec.name, self._records)

    def copy(self, record: MCQRecord, reason: str) -> MCQRecord:
        return self._copies.pop(record.id)

    def _records(self, items: Mapping[str, Sequence[MCQRecord]]) -> dict[str, list[tuple[MCQRecord, Any]]]:
        fields = {split: self.shared.split_fields(self.perturbation, split, records) for split, records in items.items()}
        fewshot = list(zip(items.get(self.fewshot_split or "", []), fields.get(self.fewshot_split or "", []),
                           strict=True))
        movable = None
        if self.spec.promises_demonstration_answers(self.fewshot_split):
            movable = frozenset(r.id for r, f in fewshot if f.skip_reason is None)
        renderer = PromptRenderer(self.spec, {r.id: row_view(r, f) for r, f in fewshot})
        every = [r for records in items.values() for r in records]
        self.demonstrations.prepare(every, self.spec.demonstrations)
        if self.spec.context_answer == "wrong":
            self.perturbation.draws.prepare_wrong_answers(every)
        baseline = BASELINE if self.spec.baseline is None else None
        outcomes: dict[str, list[tuple[MCQRecord, Any]]] = {}
        for split, records in items.items():
            outcomes[split] = made_split = []
            for record, new in zip(records, fields[split], strict=True):
                made = self._record(record, new, renderer, movable)
                reason = new.skip_reason or baseline
                if reason:
                    self._copies[record.id] = made
                made_split.append((record, Skip(reason) if reason else made))
        return outcomes

    def _record(self, record: MCQRecord, new: OptionFields, renderer: PromptRenderer,
                movable: frozenset[str] | None) -> MCQRecord:
        """The record with its new fields, its demonstrations and its prompt."""
        ids, shown = self.demonstrations.shown(record, self.spec.demonstrations, movable)
        metadata, context, fewshot = new.metadata, None, shown
        if self.spec.context_answer is not None:
            if self.spec.context_answer == "correct":
                context = new.answer
            else:  # a wrong source option, where the config shows it
                context = new.permutation.index(self.perturbation.draws.wrong_answer(record))
            metadata, fewshot = {**metadata, "context_answer": context}, [*ids, record.id]
        # the record's constructor, not dataclasses.replace (a third of the build's own time on MMLU)
        return MCQRecord(record.id, record.question, new.choices, new.answer, record.source,
                         record.source_config, record.source_split, record.source_index, record.subject,
                         record.category, metadata=metadata,
                         columns=PromptColumns(fewshot, renderer, record, new, ids, context))
