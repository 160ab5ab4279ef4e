"""The builder's invariants, re-derived from the built records and the source: none of them calls the
transform code (:mod:`.transform` gives only its reason names and the trivial questions). The prompts are
re-rendered from the records with the plain renderer (:func:`prompts.render`), a second method beside the
builder's cached one."""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache
from typing import Callable, Iterable, Iterator, Sequence

from builders.core.items.record import LETTERS, MCQRecord, normalize_text
from builders.core.build.result import Build, Check
from builders.core.sources.loading import LoadedSource
from builders.core.validation.validate import option_spelling
from builders.perturbations import prompts
from builders.perturbations.configs import ORIGINAL, ConfigSpec, subject_group, symbols
from builders.perturbations.transform import DUPLICATE_CHOICES, FEWER_OPTIONS, MORE_OPTIONS, trivial_questions

Visit = tuple[ConfigSpec, str, MCQRecord, MCQRecord]  # spec, split, record, source record


def checks(specs: Sequence[ConfigSpec], source: LoadedSource, shots: int, sampler: str) -> list[Check]:
    originals = {r.id: r for records in source.items.values() for r in records}
    by_name = {spec.name: spec for spec in specs}
    fewshot_split = source.benchmark.fewshot_split

    def each(build: Build, wanted: Callable[[ConfigSpec, str], bool] = lambda spec, split: True) -> Iterator[Visit]:
        for config, split, records in build.records():
            spec = by_name[config]
            if wanted(spec, split):
                for record in records:
                    yield spec, split, record, originals[record.id]

    def transformed(spec: ConfigSpec, split: str, record: MCQRecord) -> bool:
        return spec.transforms(split, fewshot_split) and record.metadata["skip_reason"] is None

    def gold_text_preserved(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build):
            permutation = record.metadata["permutation"]
            if sorted(permutation) != list(range(len(original.choices))):
                yield f"{spec.name}/{split} {record.id}: permutation {permutation} is not a permutation"
            elif list(record.choices) != [original.choices[p] for p in permutation]:
                yield f"{spec.name}/{split} {record.id}: choices are not the source's in permutation order"
            elif (record.gold, record.question, record.metadata["original_answer"]) != (
                    original.gold, original.question, original.answer):
                yield f"{spec.name}/{split} {record.id}: gold {record.gold!r} != source gold {original.gold!r}"

    def copied_unchanged(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build):
            reason = record.metadata["skip_reason"]
            if reason is None:
                continue
            if not spec.transforms(split, fewshot_split) and reason != DUPLICATE_CHOICES:
                yield f"{spec.name}/{split} {record.id}: skip_reason {reason!r} where nothing is transformed"
            elif ((record.choices, record.answer, record.columns["labels"]) !=
                  (original.choices, original.answer, list(LETTERS[: len(original.choices)]))):
                yield f"{spec.name}/{split} {record.id}: skipped ({reason}) but not the source's options and letters"

    def skip_reasons_consistent(build: Build) -> Iterable[str]:
        """Duplicates are re-counted (flagged in every config and split); the position/reference reasons
        must agree over every config that reorders options, and over every config that only relabels them."""
        content_reasons: dict[tuple[str, bool], set] = defaultdict(set)
        duplicates: dict[str, bool] = {}  # source id -> duplicated options: a reading of the source, once per item
        for spec, split, record, original in each(build):
            reason, size = record.metadata["skip_reason"], len(original.choices)
            where = f"{spec.name}/{split} {record.id}"
            duplicated = duplicates.get(original.id)
            if duplicated is None:
                duplicated = duplicates[original.id] = len({option_spelling(c) for c in original.choices}) < size
            if duplicated != (reason == DUPLICATE_CHOICES):
                yield f"{where}: duplicated options {duplicated}, skip_reason {reason!r}"
            if not spec.transforms(split, fewshot_split) or duplicated:
                continue
            beyond = spec.gold_position is not None and spec.gold_position >= size
            if reason == FEWER_OPTIONS and not beyond:
                yield f"{where}: {FEWER_OPTIONS} with {size} options"
            too_many = spec.symbols is not None and size > len(symbols(spec.symbols))
            if reason == MORE_OPTIONS and not too_many:
                yield f"{where}: {MORE_OPTIONS} with {size} options"
            if (beyond or too_many) and reason is None:
                yield f"{where}: {size} options cannot take this config, yet the item is transformed"
            content_reasons[record.id, spec.relabels_only].add(
                None if reason in (FEWER_OPTIONS, MORE_OPTIONS) and (beyond or too_many) else reason)
        for (item_id, relabels_only), reasons in content_reasons.items():
            if len(reasons) > 1:
                kind = "relabel only" if relabels_only else "reorder"
                yield f"{item_id}: skipped for {sorted(map(str, reasons))} in different configs that {kind}"

    def gold_at_position(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build, lambda s, _: s.gold_position is not None):
            expected = spec.gold_position if transformed(spec, split, record) else original.answer
            if record.answer != expected:
                yield f"{spec.name}/{split} {record.id}: gold at {LETTERS[record.answer]}, expected {LETTERS[expected]}"

    def references_not_moved(build: Build) -> Iterable[str]:
        """An item with an option that plainly names other options is not reordered, nor relabelled when the
        option names a label: a second, deliberately narrow detector (:func:`plain_reference`), not the
        builder's."""
        named_in: dict[tuple[str, bool], str | None] = {}  # a reading of the source item, once per item and kind
        for spec, split, record, original in each(build, lambda s, split: s.transforms(split, fewshot_split)):
            if record.metadata["skip_reason"] is None:
                key = (original.id, spec.relabels_only)
                if key not in named_in:
                    names = plain_label_reference if spec.relabels_only else plain_reference
                    named_in[key] = next((c for c in original.choices if names(c)), None)
                named = named_in[key]
                if named is not None:
                    yield f"{spec.name}/{split} {record.id}: option {named!r} names other options, yet the item is transformed"

    def derangement_moves_all(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build, lambda s, _: s.order == "derangement"):
            if transformed(spec, split, record) and any(a == b for a, b in zip(record.choices, original.choices, strict=True)):
                yield f"{spec.name}/{split} {record.id}: an option stayed at its source position"

    def unchanged_where_not_transformed(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build):
            changes_order = spec.transforms(split, fewshot_split) and spec.order != "keep"
            if not changes_order and (record.choices, record.answer) != (original.choices, original.answer):
                yield f"{spec.name}/{split} {record.id}: options changed in a config/split that keeps them"

    def labels_unique(build: Build) -> Iterable[str]:
        for spec, split, record, _ in each(build):
            labels = record.columns["labels"]
            if len(labels) != len(record.choices) or len(set(labels)) != len(labels):
                yield f"{spec.name}/{split} {record.id}: labels {labels} for {len(record.choices)} options"
            elif spec.symbols and transformed(spec, split, record):
                if not set(labels) <= set(symbols(spec.symbols)):
                    yield f"{spec.name}/{split} {record.id}: labels {labels} are not from the {spec.symbols} set"
            elif labels != list(LETTERS[: len(labels)]):
                yield f"{spec.name}/{split} {record.id}: labels {labels} where the letters are expected"

    def moved_fewshot(build: Build, spec: ConfigSpec) -> frozenset[str] | None:
        """The few-shot items a config that promises its demonstrations' answers may show: those it moved."""
        if not spec.promises_demonstration_answers(fewshot_split):
            return None
        return frozenset(r.id for r in build.configs[spec.name].get(fewshot_split or "", [])
                         if r.metadata["skip_reason"] is None)

    def demonstrations_valid(build: Build) -> Iterable[str]:
        expected = ExpectedDemonstrations(source.items.get(fewshot_split or "", []), shots, sampler)
        movable = {spec.name: moved_fewshot(build, spec) for spec in specs if spec.name in build.configs}
        for spec, split, record, _ in each(build):
            yield from expected.problems(spec, split, record, movable[spec.name])

    def demonstrations_answer_the_position(build: Build) -> Iterable[str]:
        """Configs that promise "every demonstration answers L" keep the promise, read from the shown answers."""
        for spec in specs:
            if spec.name not in build.configs or not spec.promises_demonstration_answers(fewshot_split):
                continue
            answers = {r.id: r.answer for r in build.configs[spec.name].get(fewshot_split or "", [])}
            for split, records in build.configs[spec.name].items():
                for record in records:
                    wrong = [i for i in record.columns["fewshot"] if answers.get(i) != spec.gold_position]
                    if wrong:
                        yield (f"{spec.name}/{split} {record.id}: demonstrations {wrong} do not answer "
                               f"{LETTERS[spec.gold_position]}")

    def same_demonstrations_as_original(build: Build) -> Iterable[str]:
        original = {r.id: r.columns["fewshot"] for records in build.configs[ORIGINAL].values() for r in records}
        for spec, split, record, _ in each(build, lambda s, _: s.demonstrations == "same_subject"
                                           and not s.promises_demonstration_answers(fewshot_split)):
            shown = record.columns["fewshot"][:-1] if spec.context_answer else record.columns["fewshot"]
            if shown != original[record.id]:
                yield f"{spec.name}/{split} {record.id}: demonstrations {shown} != {original[record.id]} in `original`"

    def prompt_rendered(build: Build) -> Iterable[str]:
        trivial = {row["id"]: row for row in trivial_questions()}
        for config, splits in build.configs.items():
            spec = by_name[config]
            rows = {r.id: prompt_row(r) for r in splits.get(fewshot_split or "", [])}
            render = PlainRenderer(spec, rows, trivial)
            for split, records in splits.items():
                for record in records:
                    if record.columns["prompt"] != render(record):
                        yield f"{config}/{split} {record.id}: `prompt` is not the rendered item and demonstrations"

    return [
        Check("gold_text_preserved", "choices are the source's options in `metadata.permutation` order, "
              "and choices[answer] is the source gold", gold_text_preserved),
        Check("copied_unchanged", "items with a `skip_reason` are the source's options, answer and letters, "
              "and only configs/splits that change options skip", copied_unchanged),
        Check("skip_reasons_consistent", "duplicated options (re-counted) are skipped as duplicate_choices; an "
              "item skipped for its content is skipped alike in every config; size reasons match the sizes",
              skip_reasons_consistent),
        Check("references_not_moved", "no item with an option that plainly names other options (\"of the "
              "above\", \"none of these\", \"both a and c\", \"option B\") is reordered or relabelled", references_not_moved),
        Check("gold_at_position", "gold-position configs have every transformed gold at their position, "
              "and the source gold elsewhere", gold_at_position),
        Check("derangement_moves_every_option", "in `derangement`, no option of a transformed item stays at "
              "its source position", derangement_moves_all),
        Check("unchanged_where_not_transformed", "configs and splits that keep the order have the source "
              "options and answer", unchanged_where_not_transformed),
        Check("labels_unique", "one label per option, unique per item, from the config's symbol set where "
              "transformed, letters elsewhere", labels_unique),
        Check("demonstrations_valid", "`fewshot` ids follow the config's kind of demonstrations and --shots "
              "(the first few-shot items of the subject in source order by default), as many as `original` "
              "shows the item; a wrong answer in context differs from the gold in text", demonstrations_valid),
        Check("same_demonstrations_as_original", "configs with same-subject demonstrations show each item "
              "the demonstrations it has in `original`, except the gold-position configs with demonstrations",
              same_demonstrations_as_original),
        Check("demonstrations_answer_the_position", "in `fewshot_gold_at_<L>` and `fewshot_and_test_gold_at_<L>`, "
              "every demonstration shown answers L", demonstrations_answer_the_position),
        Check("prompt_rendered", "`prompt` is the item after its demonstrations as the config shows them, "
              "rendered by the plain renderer", prompt_rendered),
    ]


# The check's own, deliberately narrow reading of "this option names other options" (the
# validator does not reuse the builder's detector). Every form it accepts must be copied unchanged by the
# builder; the builder's detector is wider (prose references, numbered options, verdicts).
_PLAIN_LETTER = r"(?:\([a-dA-D]\)|\b[a-dA-D]\b\.?)"  # a, a., (a)
_PLAIN_JOIN = r"(?:\s*[,&]\s*(?:(?:and|or|nor)\s+)?|\s+(?:and|or|nor)\s+)"  # never "Dora" (D-or-a)
_PLAIN_LABEL_REFERENCES = [  # an option's label: wrong once the labels change
    re.compile(rf"^\W*(?:(?:both|either|neither)\s+)?{_PLAIN_LETTER}(?:{_PLAIN_JOIN}{_PLAIN_LETTER})+"
               r"(?:\s+(?:above|only))?[\s.]*$", re.I),
    re.compile(r"\b(?:[Oo]ptions?|[Cc]hoices?)\s+(?:\([A-D]\)|[A-D](?![\w']))"),
    re.compile(rf"^\W*(?:only\s+{_PLAIN_LETTER}|{_PLAIN_LETTER}\s+only)[\s.]*$", re.I),
]
_PLAIN_REFERENCES = _PLAIN_LABEL_REFERENCES + [  # the others' places or number: wrong once the order changes
    re.compile(r"\bof\s+the\s+above\b", re.I),
    re.compile(r"^\W*(?:all|none|both|neither)\s+of\s+(?:these|them|the\s+options)\W*$", re.I),
    re.compile(r"^\W*(?:none|neither|both)\W*$", re.I),
    re.compile(r"^\W*(?:all|both|none|neither)\s+(?:of\s+the\s+)?(?:(?:three|four)(?:\s+\w+)?"
               r"|(?:statements|interventions)(?:\s+(?:are|is)\s+correct)?)[\s.]*$", re.I),
]


@lru_cache(maxsize=1 << 18)  # a pure reading of one text, kept once per distinct text: every config reads it again
def plain_reference(option: str) -> bool:
    text = " ".join(option.split())
    return any(pattern.search(text) for pattern in _PLAIN_REFERENCES)


@lru_cache(maxsize=1 << 18)
def plain_label_reference(option: str) -> bool:
    text = " ".join(option.split())
    return any(pattern.search(text) for pattern in _PLAIN_LABEL_REFERENCES)


def prompt_row(record: MCQRecord) -> dict:
    return {"id": record.id, "question": record.question, "choices": record.choices, "labels": record.columns["labels"],
            "answer": record.answer, "subject": record.subject, "category": record.category,
            "metadata": record.metadata}


class PlainRenderer:
    """The plain renderer's prompt of a record (:func:`prompts.render`'s parts, from the built rows). A demonstration
    other than the item itself is rendered once per config: :func:`prompts.question_block` is a pure function of
    the demonstration's row and the answer it shows, and a row shows its gold in every prompt of the config (the
    item's own demonstration, which shows the context answer, is rendered with each item). So is the instruction and
    the demonstrations before an item that is not among them, joined once per subject and demonstrations shown:
    :func:`prompts.join_prompt` joins its parts with one separator, so it is that head, the separator, the item."""

    def __init__(self, spec: ConfigSpec, rows: dict[str, dict], trivial: dict[str, dict]):
        self.spec, self.rows, self.trivial = spec, rows, trivial
        self._blocks: dict[str, str] = {}
        self._instructions: dict[str | None, str] = {}  # subject -> the config's instruction, once per subject
        self._heads: dict[tuple[str | None, tuple[str, ...]], str] = {}

    def __call__(self, record: MCQRecord) -> str:
        item = prompt_row(record)
        subject = item.get("subject") or item.get("category")
        fewshot = record.columns["fewshot"]
        question = prompts.question_block(item, "symbol", self.spec.answer_prefix, None)
        if record.id not in fewshot:
            key = (subject, tuple(fewshot))
            head = self._heads.get(key)
            if head is None:
                parts = [self._instruction(subject), *(self._block(i, item) for i in fewshot)]
                head = self._heads[key] = prompts.join_prompt(parts[0], parts[1:-1], parts[-1]) if fewshot else parts[0]
            return prompts.join_prompt(head, (), question)
        blocks = [prompts.question_block(item, "symbol", self.spec.answer_prefix, prompts.shown_answer(item, item))
                  if i == record.id else self._block(i, item) for i in fewshot]
        return prompts.join_prompt(self._instruction(subject), blocks, question)

    def _instruction(self, subject: str | None) -> str:
        instruction = self._instructions.get(subject)
        if instruction is None:
            instruction = self._instructions[subject] = prompts.instruction(subject, self.spec.with_subject)
        return instruction

    def _block(self, demo_id: str, item: dict) -> str:
        block = self._blocks.get(demo_id)
        if block is None:
            demo = self.rows.get(demo_id) or self.trivial[demo_id]
            block = self._blocks[demo_id] = prompts.question_block(demo, "symbol", self.spec.answer_prefix,
                                                                   prompts.shown_answer(demo, item))
        return block


class ExpectedDemonstrations:
    """What a record's ``fewshot`` ids may be, re-derived from the source's few-shot split."""

    def __init__(self, fewshot_records: Sequence[MCQRecord], shots: int, sampler: str):
        self.subject_of = {r.id: subject_group(r) for r in fewshot_records}
        self.in_order: dict[str, list[str]] = defaultdict(list)
        for record in fewshot_records:
            self.in_order[subject_group(record)].append(record.id)
        self.trivial = [row["id"] for row in trivial_questions()]
        self.shots, self.sampler = shots, sampler
        self._same_subject: dict[tuple[str, str | None, frozenset[str] | None], list[str]] = {}

    def problems(self, spec: ConfigSpec, split: str, record: MCQRecord,
                 movable: frozenset[str] | None = None) -> Iterator[str]:
        """``movable``: the few-shot items a gold-position config may show (those it moved); None: any."""
        fewshot = record.columns["fewshot"]  # read, never changed

        def where() -> str:  # only when a problem is found
            return f"{spec.name}/{split} {record.id}"

        context = record.metadata["context_answer"]
        if spec.context_answer:
            if not fewshot or fewshot[-1] != record.id or context is None:
                yield f"{where()}: the item is not its own last demonstration"
                return
            if not 0 <= context < len(record.choices):
                yield f"{where()}: context answer {context} is not an option"
                return
            shown = normalize_text(record.choices[context])
            if (shown == normalize_text(record.gold)) != (spec.context_answer == "correct"):
                yield f"{where()}: context answer {context} ({shown!r}) is not {spec.context_answer}"
            fewshot = fewshot[:-1]
        elif context is not None:
            yield f"{where()}: a context answer outside the in-context configs"
        if spec.demonstrations == "none" or self.shots == 0:
            if fewshot:
                yield f"{where()}: demonstrations {fewshot} in a zero-shot config"
            return
        if record.id in fewshot or len(fewshot) != len(set(fewshot)):
            yield f"{where()}: demonstrations {fewshot} repeat or include the item"
            return
        expected = min(self.shots, len(self.same_subject(record, movable)))  # as many as `original`, or as can move
        if not fewshot:
            others = [s for s in self.in_order if s != subject_group(record)]
            if expected and (spec.demonstrations != "other_subject" or others):
                yield f"{where()}: no demonstrations, expected {expected}"
            return
        candidates = self.candidates(spec, record, fewshot, movable)
        # the first ids of the candidates are among them: the sets are built only for any other list
        in_order = candidates is not None and fewshot == candidates[: len(fewshot)]
        if candidates is None or not (in_order or set(fewshot) <= set(candidates)):
            yield f"{where()}: demonstrations {fewshot} are not {spec.demonstrations.replace('_', ' ')} demonstrations"
        elif len(fewshot) != min(expected, len(candidates)):
            yield f"{where()}: {len(fewshot)} demonstrations, expected {min(expected, len(candidates))}"
        elif self.sampler == "first_n" and not in_order:
            yield f"{where()}: demonstrations {fewshot} are not the first {len(fewshot)} in source order"

    def candidates(self, spec: ConfigSpec, record: MCQRecord, fewshot: list[str],
                   movable: frozenset[str] | None = None) -> list[str] | None:
        """The ids the demonstrations are taken from, in source order (None: they cannot be valid)."""
        if spec.demonstrations == "trivial":
            return self.trivial
        if spec.demonstrations == "same_subject":
            return self.same_subject(record, movable)
        else:  # other_subject: one other subject, whichever the item drew
            subjects = {self.subject_of.get(i) for i in fewshot}
            if len(subjects) != 1 or None in subjects or subject_group(record) in subjects:
                return None
            subject = subjects.pop()
        return [i for i in self.in_order.get(subject, []) if i != record.id]

    def same_subject(self, record: MCQRecord, movable: frozenset[str] | None = None) -> list[str]:
        """The subject's few-shot items but the record, in source order (those in ``movable`` only): the same list for
        every item of the subject outside the few-shot split, read once."""
        group = subject_group(record)
        key = (group, record.id if record.id in self.subject_of else None, movable)
        found = self._same_subject.get(key)
        if found is None:
            found = self._same_subject[key] = [i for i in self.in_order.get(group, [])
                                               if i != record.id and (movable is None or i in movable)]
        return found
