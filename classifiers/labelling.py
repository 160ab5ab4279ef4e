"""Labelling questions SBA or SCA with an LLM, or reading a human's labels.

Every call goes through :class:`builders.core.llm.LLMClient`: bounded concurrency, retries with
backoff on 429, 5xx and timeouts, and an on-disk reply cache whose key covers the model, the template
version and the prompt (hence the question), so a killed run resumes and pays for nothing twice. A
reply that does not parse into a label is asked for once more, then recorded unlabelled with the
raw reply.
"""

from __future__ import annotations

import csv
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
import yaml

from builders.core.errors import UserError
from builders.core.llm import ChatRequest, ChatResult, LLMClient

from .data import LABELS, normalize_label, question_row, read_jsonl
from .sba_model import LETTERS

logger = logging.getLogger(__name__)

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
DEFAULT_TEMPLATE = TEMPLATES_DIR / "sba_label_v1.yaml"
HUMAN = "human"


@dataclass(frozen=True)
class LabelTemplate:
    version: str
    system: str | None
    user: jinja2.Template
    path: Path

    def request(self, row: Mapping[str, Any], max_tokens: int) -> ChatRequest:
        choices = list(row["choices"])
        answer = row.get("answer")
        answer_letter = LETTERS[answer] if isinstance(answer, int) and 0 <= answer < len(choices) else None
        prompt = self.user.render(question=row["question"], options=list(zip(LETTERS, choices)),
                                  answer_letter=answer_letter)
        return ChatRequest.from_prompt(prompt, system=self.system, temperature=0.0, max_tokens=max_tokens,
                                       template_version=self.version)


def load_template(path: Path = DEFAULT_TEMPLATE) -> LabelTemplate:
    try:
        spec = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise UserError(f"cannot read prompt template {path}: {error}") from None
    if not isinstance(spec, dict) or not spec.get("version") or not spec.get("user"):
        raise UserError(f"{path}: a prompt template needs 'version' and 'user' (and optionally 'system')")
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)
    return LabelTemplate(str(spec["version"]), spec.get("system"), environment.from_string(spec["user"]), Path(path))


_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_LABEL_LINE = re.compile(r"^\W*(?:label\W*)?(SBA|SCA)\W*$", re.IGNORECASE | re.MULTILINE)


def parse_label(reply: str) -> tuple[str, str | None]:
    """(label, confidence) from a reply: a JSON object with ``label``, else a line holding only the label.

    Raises ValueError for anything else, which makes the client ask once more.
    """
    for candidate in _JSON_OBJECT.findall(reply):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "label" in data:
            label = normalize_label(data["label"])
            confidence = data.get("confidence")
            return label, str(confidence).lower() if confidence in ("high", "low", "HIGH", "LOW") else None
    lines = {match.upper() for match in _LABEL_LINE.findall(reply)}
    if len(lines) == 1:
        return lines.pop(), None
    raise ValueError(f"no SBA/SCA label in the reply ({reply[:80]!r})")


@dataclass(frozen=True)
class LabelRun:
    rows: list[dict[str, Any]]
    counts: dict[str, int]
    usage: str


def label_with_llm(rows: Sequence[Mapping[str, Any]], client: LLMClient, template: LabelTemplate,
                   max_tokens: int = 64) -> LabelRun:
    requests = [template.request(row, max_tokens) for row in rows]
    results = client.complete_many(requests, parse=parse_label, parse_retries=1, desc="SBA labels")
    labelled = [_labelled_row(row, result, client.model, template.version) for row, result in zip(rows, results)]
    return LabelRun(labelled, _counts(labelled), client.usage_summary())


def _labelled_row(row: Mapping[str, Any], result: ChatResult, model: str, version: str) -> dict[str, Any]:
    out = {**row, "labeller": model, "template": version}
    if result.ok and result.parsed is not None:
        label, confidence = result.parsed
        return {**out, "label": label, "confidence": confidence}
    out.update(label=None, confidence=None, error=result.error)
    if result.text is not None:
        out["raw_reply"] = result.text
    return out


def label_with_humans(rows: Sequence[Mapping[str, Any]], labels_path: Path) -> LabelRun:
    """Merge a human's labels (JSONL or CSV with ``id`` and ``label``) into the sampled rows."""
    given = read_human_labels(labels_path)
    known = {row["id"] for row in rows}
    unknown = sorted(set(given) - known)
    if unknown:
        raise UserError(f"{labels_path}: {len(unknown)} ids are not in the input, e.g. {unknown[0]!r}")
    labelled = []
    for row in rows:
        label, confidence = given.get(row["id"], (None, None))
        extra = {} if label else {"error": "no human label"}
        labelled.append({**row, "label": label, "confidence": confidence, "labeller": HUMAN, "template": None, **extra})
    return LabelRun(labelled, _counts(labelled), f"{len(given)} human labels from {labels_path.name}")


def read_human_labels(path: Path) -> dict[str, tuple[str, str | None]]:
    path = Path(path)
    if path.suffix == ".csv":
        with open(path, encoding="utf-8", newline="") as handle:
            rows = list(csv.DictReader(handle))
    else:
        rows = read_jsonl(path)
    labels: dict[str, tuple[str, str | None]] = {}
    for number, row in enumerate(rows, 1):
        row_id = row.get("id")
        if not row_id:
            raise UserError(f"{path}: row {number} has no 'id'")
        try:
            label = normalize_label(row.get("label"))
        except ValueError as error:
            raise UserError(f"{path}: row {row_id}: {error}") from None
        if label is None:
            continue
        if row_id in labels:
            raise UserError(f"{path}: id {row_id} is labelled twice")
        labels[row_id] = (label, row.get("confidence") or None)
    return labels


def read_questions(path: Path) -> list[dict[str, Any]]:
    """The rows of a sample (or any file with id, question, choices), checked."""
    rows = read_jsonl(path)
    seen = set()
    for number, row in enumerate(rows, 1):
        row_id, _, _ = question_row(row, path, number)
        if row_id in seen:
            raise UserError(f"{path}: duplicate id {row_id}")
        seen.add(row_id)
    return rows


def _counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = {label: 0 for label in LABELS}
    counts["unlabelled"] = 0
    for row in rows:
        counts[row.get("label") or "unlabelled"] += 1
    return counts
