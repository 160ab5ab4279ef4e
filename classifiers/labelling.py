"""Labelling questions SBA or SCA with an LLM, or reading a human's labels.

A prompt template (``templates/sba_label_*.yaml``) turns one item into a :class:`ChatRequest`
(:meth:`LabelTemplate.request`) and reads the reply back into a :class:`LabelReply` (label, alternative,
confidence) with :meth:`LabelTemplate.parse` and :func:`check_alternative`; anything else that asks an LLM
whether an item is SBA (WiCkeD's build-time judge) reuses the two.

Every call goes through :class:`builders.core.llm.settings.LLMClient`: bounded concurrency, retries with
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
from typing import Any, Mapping, NamedTuple, Sequence

import jinja2
import yaml

from builders.core.errors import UserError
from builders.core.llm.settings import ChatRequest, ChatResult, LLMClient

from .data import LABELS, SBA, SCA, normalize_label, question_row, read_jsonl
from .sba_model import LETTERS

logger = logging.getLogger(__name__)

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
DEFAULT_TEMPLATE = TEMPLATES_DIR / "sba_label_v2.yaml"
HUMAN = "human"


class LabelReply(NamedTuple):
    label: str  # SBA or SCA
    alternative: int | None  # 0-based index of the remaining option an SBA reply names
    confidence: str | None  # high, low, or None when the reply gives none


@dataclass(frozen=True)
class LabelTemplate:
    version: str
    system: str | None
    user: jinja2.Template
    path: Path
    needs_answer: bool = False  # the prompt shows the key: every row must carry its answer index
    needs_alternative: bool = False  # an SBA reply must name the remaining option that becomes acceptable

    def request(self, row: Mapping[str, Any], max_tokens: int) -> ChatRequest:
        """The chat request for one item (a row with question, choices and, when known, answer)."""
        choices = list(row["choices"])
        answer = row.get("answer")
        answer_letter = LETTERS[answer] if isinstance(answer, int) and 0 <= answer < len(choices) else None
        # LETTERS is the whole alphabet, longer than any list of options
        prompt = self.user.render(question=row["question"], options=list(zip(LETTERS, choices, strict=False)),
                                  answer_letter=answer_letter)
        return ChatRequest.from_prompt(prompt, system=self.system, temperature=0.0, max_tokens=max_tokens,
                                       template_version=self.version)

    def parse(self, reply: str) -> LabelReply:
        """The reply as a :class:`LabelReply`; ValueError (which makes the client ask once more) if it has
        no label, or is an SBA reply naming no option where the template asks for one."""
        parsed = parse_reply(reply)
        if self.needs_alternative and parsed.label == SBA and parsed.alternative is None:
            raise ValueError(f"an SBA reply must name the option that would become acceptable ({reply[:80]!r})")
        return parsed

    def check_rows(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Before any call: a template that shows the key needs every row's answer index."""
        if not self.needs_answer:
            return
        for row in rows:
            answer = row.get("answer")
            if not isinstance(answer, int) or isinstance(answer, bool) or not 0 <= answer < len(row["choices"]):
                raise UserError(f"template {self.version} shows the keyed answer, but row {row.get('id')} has no valid "
                                f"'answer' (the key's 0-based index; `classifiers.sba sample` writes it)")


def load_template(path: Path = DEFAULT_TEMPLATE) -> LabelTemplate:
    """A template file, or the name of a shipped one (``v2``, ``v1``, ``paper``)."""
    path = Path(path)
    shipped = TEMPLATES_DIR / f"sba_label_{path}.yaml"
    if not path.exists() and path.parent == Path(".") and shipped.exists():
        path = shipped
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise UserError(f"cannot read prompt template {path}: {error}") from None
    if not isinstance(spec, dict) or not spec.get("version") or not spec.get("user"):
        raise UserError(f"{path}: a prompt template needs 'version' and 'user' (and optionally 'system')")
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=False, autoescape=False)
    return LabelTemplate(str(spec["version"]), spec.get("system"), environment.from_string(spec["user"]), path,
                         bool(spec.get("needs_answer")), bool(spec.get("needs_alternative")))


_JSON_OBJECT = re.compile(r"\{[^{}]*\}", re.DOTALL)
_LABEL_LINE = re.compile(r"^\W*(?:(?:label|class)\W*)?(SBA|SCA|1|0)\W*$", re.IGNORECASE | re.MULTILINE)
_ALTERNATIVE_LINE = re.compile(r"^\W*alternative\W*([A-Z])\W*$", re.IGNORECASE | re.MULTILINE)
_CLASSES = {"1": SBA, "0": SCA}  # the paper's classes: 1 is SBA, its classifier's positive label


def parse_reply(reply: str) -> LabelReply:
    """A label from a JSON object (``{"label": "SBA" | "SCA" | 1 | 0, "alternative": "B" | null,
    "confidence": ...}``), else from a line holding only the label: ``SBA``, ``Label: SCA``, ``1``,
    ``Class: 0`` (with an optional ``Alternative: B`` line). The alternative is an option letter.

    Raises ValueError for anything else, which makes the client ask once more.
    """
    for candidate in _JSON_OBJECT.findall(reply):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and "label" in data:
            confidence = str(data.get("confidence") or "").lower()
            return LabelReply(_label(data["label"]), _letter_index(data.get("alternative")),
                              confidence if confidence in ("high", "low") else None)
    labels = {_label(match) for match in _LABEL_LINE.findall(reply)}
    if len(labels) == 1:
        alternatives = set(_ALTERNATIVE_LINE.findall(reply))
        return LabelReply(labels.pop(), _letter_index(alternatives.pop()) if len(alternatives) == 1 else None, None)
    raise ValueError(f"no SBA/SCA label in the reply ({reply[:80]!r})")


def _label(value: Any) -> str:
    if isinstance(value, bool):
        raise ValueError(f"label must be SBA, SCA, 1 or 0, got {value!r}")
    return _CLASSES.get(str(value).strip()) or normalize_label(value)


def _letter_index(value: Any) -> int | None:
    if value is None or str(value).strip().lower() in ("", "none", "null"):
        return None
    letter = str(value).strip().strip("()").upper()
    if len(letter) != 1 or letter not in LETTERS:
        raise ValueError(f"the alternative must be an option letter, got {value!r}")
    return LETTERS.index(letter)


def check_alternative(reply: LabelReply, row: Mapping[str, Any]) -> LabelReply:
    """The reply, if the option it names exists and is not the key; ValueError otherwise."""
    if reply.alternative is None:
        return reply
    if reply.alternative >= len(row["choices"]):
        raise ValueError(f"alternative {LETTERS[reply.alternative]} is not one of the {len(row['choices'])} options")
    if reply.alternative == row.get("answer"):
        raise ValueError(f"alternative {LETTERS[reply.alternative]} is the keyed answer itself")
    return reply


@dataclass(frozen=True)
class LabelRun:
    rows: list[dict[str, Any]]
    counts: dict[str, int]
    usage: str


def label_with_llm(rows: Sequence[Mapping[str, Any]], client: LLMClient, template: LabelTemplate,
                   max_tokens: int = 64) -> LabelRun:
    template.check_rows(rows)
    requests = [template.request(row, max_tokens) for row in rows]
    results = client.complete_many(requests, parse=template.parse, parse_retries=1, desc="SBA labels")
    labelled = [_labelled_row(row, result, client.model, template.version) for row, result in zip(rows, results, strict=True)]
    return LabelRun(labelled, _counts(labelled), client.usage_summary())


def _labelled_row(row: Mapping[str, Any], result: ChatResult, model: str, version: str) -> dict[str, Any]:
    out = {**row, "labeller": model, "template": version}
    error = result.error
    if result.ok and result.parsed is not None:
        try:
            reply = check_alternative(result.parsed, row)
            return {**out, "label": reply.label, "alternative": reply.alternative, "confidence": reply.confidence}
        except ValueError as problem:
            error = f"invalid alternative: {problem}"
    out.update(label=None, alternative=None, confidence=None, error=error)
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
