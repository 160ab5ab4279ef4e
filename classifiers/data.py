"""The JSON-lines files the SBA pipeline passes from verb to verb.

One row per question: ``id``, ``source``, ``question``, ``choices`` and ``answer`` (the 0-based index of
the key; ``sample`` writes it, and the cross-encoder cannot train or score without it). ``label`` adds
``label`` (``SBA``, ``SCA`` or null when the labeller gave no usable answer), ``alternative`` (for an SBA
label under the version-2 rule: the 0-based index of the remaining option that would become acceptable
without the key), ``confidence``, ``labeller``, ``template`` and, for an unlabelled row, ``raw_reply``.
The shared ``sba_labels`` files read the same way once their ``answer`` is joined in (see
``benchmarks/sba.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from builders.core.errors import UserError

logger = logging.getLogger(__name__)

SBA, SCA = "SBA", "SCA"
LABELS = (SCA, SBA)  # index = class id in a trained model: 1 is SBA, as in the paper's released model


@dataclass(frozen=True)
class LabelledQuestion:
    id: str
    source: str
    question: str
    choices: tuple[str, ...]
    label: str | None
    answer: int | None = None  # index of the key
    alternative: int | None = None  # index of the remaining option an SBA label names

    @property
    def is_sba(self) -> bool:
        return self.label == SBA


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    try:
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise UserError(f"{path}:{number}: invalid JSON ({error.msg})") from None
                if not isinstance(row, dict):
                    raise UserError(f"{path}:{number}: each line must be a JSON object")
                rows.append(row)
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}") from None
    return rows


def _umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it: put it straight back
    os.umask(mask)
    return mask


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Written to a temporary file and moved into place, so a killed run never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would keep colleagues on a shared cluster out
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def question_row(row: Mapping[str, Any], path: Path, number: int) -> tuple[str, str, tuple[str, ...]]:
    """(id, question, choices) of a row, with an actionable error naming the row."""
    row_id = row.get("id")
    question = row.get("question")
    choices = row.get("choices")
    if not isinstance(row_id, str) or not row_id:
        raise UserError(f"{path}: row {number} has no string 'id'")
    if not isinstance(question, str):
        raise UserError(f"{path}: row {row_id} has no string 'question'")
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise UserError(f"{path}: row {row_id}: 'choices' must be a list of strings")
    return row_id, question, tuple(choices)


def normalize_label(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip().upper()
    if text in LABELS:
        return text
    raise ValueError(f"label must be SBA or SCA, got {value!r}")


def read_labelled(path: Path) -> list[LabelledQuestion]:
    """Every row of a labelled file; rows whose ``label`` is null stay in, unlabelled."""
    questions, seen = [], set()
    for number, row in enumerate(read_jsonl(path), 1):
        row_id, question, choices = question_row(row, path, number)
        if row_id in seen:
            raise UserError(f"{path}: duplicate id {row_id}")
        seen.add(row_id)
        try:
            label = normalize_label(row.get("label"))
            answer = option_index(row.get("answer"), choices, "answer")
            alternative = option_index(row.get("alternative"), choices, "alternative")
        except ValueError as error:
            raise UserError(f"{path}: row {row_id}: {error}") from None
        if alternative is not None and (label != SBA or alternative == answer):
            raise UserError(f"{path}: row {row_id}: 'alternative' names a remaining option that would become "
                            f"acceptable, so it needs label SBA and must differ from the answer")
        questions.append(LabelledQuestion(row_id, str(row.get("source") or source_of(row_id)), question, choices, label,
                                          answer, alternative))
    return questions


def option_index(value: Any, choices: Sequence[str], field: str) -> int | None:
    """A 0-based option index (or null) checked against the choices."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < len(choices):
        raise ValueError(f"'{field}' must be an option index in 0..{len(choices) - 1}, got {value!r}")
    return value


def labelled_only(questions: Sequence[LabelledQuestion], path: Path) -> list[LabelledQuestion]:
    kept = [q for q in questions if q.label is not None]
    if len(kept) < len(questions):
        logger.warning("%s: %d of %d rows have no label and are left out", path, len(questions) - len(kept), len(questions))
    if not kept:
        raise UserError(f"{path}: no row has a label (SBA or SCA)")
    return kept


def source_of(row_id: str) -> str:
    """Ids are ``<benchmark>/...``: the first part names the source when a row has no ``source``."""
    return row_id.split("/", 1)[0]


def file_sha256(path: Path) -> str:
    return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()


def label_provenance(path: Path) -> dict[str, Any]:
    """Who labelled a file (models or ``human``) and with which prompt template versions."""
    rows = read_jsonl(path)
    return {
        "file": Path(path).name,
        "sha256": file_sha256(path),
        "labellers": sorted({str(r["labeller"]) for r in rows if r.get("labeller")}),
        "templates": sorted({str(r["template"]) for r in rows if r.get("template")}),
    }
