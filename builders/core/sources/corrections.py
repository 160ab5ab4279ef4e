"""Item-level corrections of a source: the one place where they are applied, for every builder, between loading
the source and the builder's steps (:func:`builders.core.pipeline.cli.build_and_validate`).

A correction is the source's own, not a builder's: a repaired key, an item that a benchmark's errata withdraw, a
key that a model consensus or a maintainer's ``--corrections`` file contradicts. All of them are one record,
:class:`Correction`, one line of a JSON lines file in the release's own ids::

    {"id": "mmlu/test/2398", "action": "set_answer", "answer": 2, "reason": "key is 14, -14 is right", "by": "jo"}
    {"id": "mmlu/test/927", "action": "exclude", "reason": "no_correct_answer", "by": "mmlu-redux-2.0"}

``answer`` (``set_answer`` only) is an index into the source item's options, or one option's text. ``by`` names who
or what decided: a person, an errata source (``mmlu-redux-2.0``), ``consensus``. An entry whose ``action`` is empty
is undecided (a review queue's entry not yet reviewed): it is read and ignored, and may carry its ``evidence``.

:func:`apply_corrections` applies them to the loaded items: ``set_answer`` moves the key and keeps the original one
in the item's metadata with where the new one came from (:data:`CORRECTION_FEATURES`); ``exclude`` puts the item in
the exclusion log with its reason. Every builder's release and card account for them
(:attr:`~builders.core.sources.loading.LoadedSource.corrections`).
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping, Sequence, cast

from builders.core.errors import UserError
from builders.core.items.outcomes import Exclude, ExclusionLog
from builders.core.items.record import MCQRecord, OpenItem, Value, normalize_text
from builders.core.items.tables import Table
from builders.core.runtime.content import named_content_revision
from builders.core.sources.loading import LoadedSource

Action = Literal["set_answer", "exclude"]
ACTIONS: tuple[str, ...] = ("set_answer", "exclude")
FIELDS = ("id", "action", "answer", "reason", "by")
OTHER_FIELDS = ("evidence",)  # what a review queue adds beside the decision: read, never applied
CORRECTIONS_FILE = "corrections.jsonl"  # the release's copy of the --corrections file
STEP = "corrections"  # the exclusion log's step of an item a correction withdrew

# the metadata of an item whose key a correction moved (the other items have them null): the original key (an option's
# index; an open-ended item's gold answer, ``original_gold``), who moved it and why
CORRECTION_FEATURES = {"original_answer": Value("int32"), "answer_corrected_by": Value("string"),
                       "correction_reason": Value("string")}
OPEN_CORRECTION_FEATURES = {"original_gold": Value("string"), "answer_corrected_by": Value("string"),
                            "correction_reason": Value("string")}


@dataclass(frozen=True, kw_only=True)
class Correction:
    """One decision about one item: its key set to ``answer``, or the item excluded, with the reason and who decided."""

    id: str
    action: Action
    answer: int | str | None = None
    reason: str = ""
    by: str = ""

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS if name != "answer" or self.action == "set_answer"}


@dataclass(frozen=True)
class AppliedCorrection:
    """A correction as a build applied it: the item's split and source row, and its key before (``set_answer``)."""

    correction: Correction
    split: str
    source_index: int
    original_answer: int | str | None = None  # the key as the source had it: an option's index, or the open answer


# ---- the file ------------------------------------------------------------------------------------------------


def read_corrections(path: Path | str) -> tuple[Correction, ...]:
    """The decided corrections of a JSON lines file (blank lines and undecided entries skipped), each checked on
    its own: its fields, its action, an answer with ``set_answer``, one entry per id. A bad one is one
    :class:`UserError` naming the file and line."""
    path = Path(path).expanduser()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"--corrections {path}: cannot read it: {error}") from None
    found: dict[str, int] = {}
    corrections = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"--corrections {path.name} line {number}"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserError(f"{where}: not JSON ({error.msg})") from None
        correction = correction_from(entry, where)
        if correction is None:
            continue
        if correction.id in found:
            raise UserError(f"{where}: a second entry for {correction.id} (the first is on line {found[correction.id]})")
        found[correction.id] = number
        corrections.append(correction)
    return tuple(corrections)


def correction_from(entry: Any, where: str) -> Correction | None:
    """One entry as a :class:`Correction`, or None when it is undecided (no action)."""
    if not isinstance(entry, dict):
        raise UserError(f"{where}: expected an object {{id, action, answer, reason, by}}, got {type(entry).__name__}")
    unknown = sorted(set(entry) - set(FIELDS) - set(OTHER_FIELDS))
    if unknown:
        raise UserError(f"{where}: unknown fields {unknown}; an entry has {', '.join(FIELDS + OTHER_FIELDS)}")
    item_id, action, answer = entry.get("id"), entry.get("action"), entry.get("answer")
    if not isinstance(item_id, str) or not item_id.strip():
        raise UserError(f"{where}: 'id' must be an item id such as \"mmlu/test/2398\", got {item_id!r}")
    if action in (None, ""):
        return None
    if action not in ACTIONS:
        raise UserError(f"{where}: {item_id}: action must be one of {', '.join(ACTIONS)} (or empty: undecided), "
                        f"got {action!r}")
    for name in ("reason", "by"):
        if not isinstance(entry.get(name, ""), str):
            raise UserError(f"{where}: {item_id}: {name!r} must be text, got {entry[name]!r}")
    if action == "set_answer":
        if isinstance(answer, bool) or not isinstance(answer, (int, str)) or answer == "":
            raise UserError(f"{where}: {item_id}: set_answer needs an answer: an option's 0-based index or its text, "
                            f"got {answer!r}")
    return Correction(id=item_id, action=cast(Action, action), answer=answer if action == "set_answer" else None,
                      reason=entry.get("reason") or "", by=entry.get("by") or "")


def write_corrections(corrections: Iterable[Correction], path: Path | str) -> None:
    """The corrections as :func:`read_corrections` reads them back, one JSON object a line, in the given order."""
    Path(path).write_text(corrections_text(corrections), encoding="utf-8")


def recorded_corrections(path: Path | str) -> dict[str, str]:
    """How a build config records a ``--corrections`` file: as the release's copy of it (``corrections.jsonl``) and
    its content hash, whatever the file's own name, so that a rebuild from the release's copy records the same."""
    return {"local": CORRECTIONS_FILE, "content": named_content_revision(CORRECTIONS_FILE,
                                                                         Path(path).expanduser().read_bytes())}


def corrections_text(corrections: Iterable[Correction]) -> str:
    return "".join(json.dumps(c.to_json(), ensure_ascii=False) + "\n" for c in corrections)


# ---- applying them -------------------------------------------------------------------------------------------


def check_corrections(source: LoadedSource, corrections: Sequence[Correction], origin: str = "--corrections") -> None:
    """Refuse, before any work, corrections that name no item of the source or an answer that is none of the
    item's options: one :class:`UserError` line. A build of a subset (``--subjects``, ``--limit``, ``--splits``)
    cannot tell an unknown id from one it did not read: only the items it read are checked."""
    items = {item.id: item for item in source.records()}
    known = set(items) | {entry.id for entry in source.exclusions.entries}
    duplicated = [i for i, n in Counter(c.id for c in corrections).items() if n > 1]
    if duplicated:
        raise UserError(f"{origin}: {len(duplicated)} ids have more than one correction, e.g. {duplicated[0]}")
    unknown = [c.id for c in corrections if c.id not in known]
    if unknown and not subset(source):
        raise UserError(f"{origin}: {len(unknown)} ids are no item of {source.source_description}, e.g. {unknown[0]}")
    for correction in corrections:
        if correction.action == "set_answer" and correction.id in items:
            new_answer(items[correction.id], correction, origin)


def subset(source: LoadedSource) -> bool:
    return bool(source.selection) or bool(source.selection.splits)


def new_answer(item: Any, correction: Correction, origin: str = "--corrections") -> Any:
    """The key ``correction`` gives ``item``: an option's index (a multiple-choice item; ``answer`` is the index or
    the option's text, whitespace aside), or the gold answer's text (an open-ended item)."""
    answer = correction.answer
    if isinstance(item, OpenItem):
        return str(answer)
    choices = item.choices
    if isinstance(answer, int):
        if not 0 <= answer < len(choices):
            raise UserError(f"{origin}: {correction.id}: answer {answer} is out of range: the item has "
                            f"{len(choices)} options (0 to {len(choices) - 1})")
        return answer
    matches = [i for i, choice in enumerate(choices) if normalize_text(choice) == normalize_text(str(answer))]
    if len(matches) != 1:
        what = "is none of" if not matches else f"is {len(matches)} of"
        raise UserError(f"{origin}: {correction.id}: answer {answer!r} {what} the item's options {list(choices)}")
    return matches[0]


def apply_corrections(source: LoadedSource, corrections: Sequence[Correction],
                      origin: str = "--corrections") -> LoadedSource:
    """The source as every builder's steps see it: each item named by a correction with its key moved or excluded
    (see the module's docstring), the corrections applied recorded in its ``corrections``. Checked first
    (:func:`check_corrections`). No correction: the source itself."""
    if not corrections:
        return source
    check_corrections(source, corrections, origin)
    by_id = {c.id: c for c in corrections}
    items: dict[str, list[Any]] = {}
    exclusions = ExclusionLog()
    exclusions.extend(source.exclusions)
    applied: list[AppliedCorrection] = list(source.corrections)
    for split, split_items in source.items.items():
        kept = items.setdefault(split, [])
        for item in split_items:
            correction = by_id.get(item.id)
            if correction is None:
                kept.append(item)
                continue
            index = source_index(item)
            if correction.action == "exclude":
                exclusions.add(split, item.id, index, STEP, Exclude(correction.reason or "excluded by a correction",
                                                                    "id", f"by {correction.by or 'unnamed'}"))
                applied.append(AppliedCorrection(correction, split, index))
                continue
            corrected, original = with_new_answer(item, correction, origin)
            kept.append(corrected)
            applied.append(AppliedCorrection(correction, split, index, original))
    benchmark = source.benchmark
    if any(a.correction.action == "set_answer" for a in applied):
        open_items = any(isinstance(item, OpenItem) for item in source.records())
        features = OPEN_CORRECTION_FEATURES if open_items else CORRECTION_FEATURES
        benchmark = dataclasses.replace(benchmark, metadata_features={**benchmark.metadata_features, **features})
    return dataclasses.replace(source, benchmark=benchmark, items=items, exclusions=exclusions,
                               corrections=tuple(applied))


def with_new_answer(item: Any, correction: Correction, origin: str) -> tuple[Any, int | str]:
    """The item with the correction's key, the original key kept in its metadata with where the new one came from;
    and the original key (an option's index, or the open answer)."""
    answer = new_answer(item, correction, origin)
    note = {"answer_corrected_by": correction.by or "unnamed", "correction_reason": correction.reason}
    if isinstance(item, MCQRecord):
        return item.replace(answer=answer).with_metadata(original_answer=item.answer, **note), item.answer
    if isinstance(item, OpenItem):
        corrected = dataclasses.replace(item, gold=answer, gold_text=answer,
                                        metadata={**item.metadata, "original_gold": item.gold, **note})
        return corrected, item.gold
    raise TypeError(f"a correction cannot set the answer of a {type(item).__name__}")


def source_index(item: Any) -> int:
    return item.source_index if isinstance(item, MCQRecord) else getattr(item, "index", -1)


def correction_counts(applied: Sequence[AppliedCorrection]) -> Mapping[tuple[str, str, str], int]:
    """{(by, action, reason): items}, sorted: what the card's table of corrections counts."""
    counts = Counter((a.correction.by or "unnamed", a.correction.action, a.correction.reason) for a in applied)
    return dict(sorted(counts.items()))


def corrections_table(applied: Sequence[AppliedCorrection]) -> Table:
    """The card's one table of the corrections applied, whoever decided them (a person, an errata source, a
    consensus): items per (by, action, reason)."""
    return Table("Corrections applied", ("by", "action", "reason", "items"),
                 [(by, action, reason or None, n) for (by, action, reason), n in correction_counts(applied).items()])
