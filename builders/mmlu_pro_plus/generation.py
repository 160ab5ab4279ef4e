"""The new TPP options: the rejection rules, the prompts, the LLM requests, pre-generated options.

A TPP candidate's new option is written by an LLM (:class:`TPPGenerator`) or read from a file of pre-generated
options (``--tpp-options``, :class:`PregeneratedOptions`); either way it must pass every rejection rule
(:func:`rejection_reason`) and the similarity cut-off (:mod:`.similarity`), then, with ``--validate-with``, a
second model's truth check (:mod:`.truth`). :func:`select_tpp` asks for the best-ranked candidates until enough
options are accepted.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any, Callable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS, MCQRecord, normalize_text
from builders.core.items.referring import position_dependent_reason
from builders.core.sources.spec import SAMPLES_DIR

from .similarity import SimilarityScorer
from .truth import TruthCheck

logger = logging.getLogger(__name__)

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_FILES = {"math": "tpp_math_v1.txt", "other": "tpp_general_v1.txt"}

# Style check of the paper's QA: the new option stays within the lengths of the existing ones.
DEFAULT_LENGTH_RATIO = 1.5
DEFAULT_LENGTH_SLACK = 10


# ---- rejection rules: normalisation and the detectors they use -------------------------------------------------

_STRIP = " .,;:!?\"'`"
_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d*)(?:\.\d+)?$")
_BOTH = re.compile(r"\bboth\b", re.I)
BARE_LETTER = re.compile(r"^\s*\(?[A-L]\)?[.:]?\s*$")
# "(B)" inside a sentence refers to an option; "P(A)" (no space before the parenthesis) is notation.
_PAREN_LETTER = re.compile(r"(?<![\w)\]])\([A-L]\)")


# A label before an option's text, as the prompt shows the options: "B. 0.5", "(b) 0.5", "2) 0.5", "Option B: 0.5".
_LABEL = re.compile(r"^\s*(?:(?:option|choice|answer)\s+)?(?:\(?[A-Za-z]\)|[A-Za-z][.:]|\(?\d{1,2}\)|\d{1,2}[.:](?!\d))\s+",
                    re.I)
# An option that names the task instead of answering: "The new option", "Another correct answer".
_NAMES_THE_TASK = re.compile(
    r"^\W*(?:the\s+|an?\s+)?(?:(?:new|additional|another|extra|added|generated|second)\s+)?(?:correct\s+|valid\s+|true\s+)?"
    r"(?:option|answer|choice)\W*$|\b(?:new|additional|extra|generated)\s+(?:correct\s+)?option\b", re.I)


def without_label(text: str) -> str | None:
    """The option's text with a leading letter or number label stripped, or None when it has none."""
    match = _LABEL.match(text)
    return text[match.end():] if match else None


@lru_cache(maxsize=1 << 18)  # pure: every option of an item is compared with each proposal and with the others
def normalize_option(text: str) -> str:
    """Case, whitespace, outer punctuation and number formatting ("9.0", "9", "9.") do not make a new option."""
    flat = normalize_text(text).casefold().strip(_STRIP)
    compact = flat.replace(" ", "")
    # the pattern first: it fails at the first character of most texts, where the digit scan reads them all
    if _NUMBER.match(compact) and any(ch.isdigit() for ch in compact):
        try:
            return format(Decimal(compact.replace(",", "")).normalize(), "f")
        except InvalidOperation:
            pass
    return flat


def letter_reference_reason(text: str) -> str | None:
    reason = position_dependent_reason([text])
    if reason in ("has_none_of_the_above", "has_all_of_the_above"):
        return "refers_to_other_options"
    if reason or BARE_LETTER.match(text) or _PAREN_LETTER.search(text):
        return "letter_reference"
    return None


def max_option_chars(record: MCQRecord, ratio: float, slack: int) -> int:
    longest = max(len(c) for c in record.choices)
    return max(math.ceil(ratio * longest), longest + slack)


def rejection_reason(option: str, record: MCQRecord, max_chars: int) -> tuple[str, str] | None:
    """The first rule a proposed TPP option breaks, as (reason, detail), or None. Similarity comes later."""
    if not option:
        return "empty", ""
    if _BOTH.search(option):
        return "contains_both", ""
    reason = letter_reference_reason(option)
    if reason:
        return reason, ""
    if _NAMES_THE_TASK.search(option):
        return "names_the_task", ""
    unlabelled = without_label(option)
    for index, choice in enumerate(record.choices):
        if unlabelled is not None and normalize_option(choice) == normalize_option(unlabelled):
            return "labelled_copy", f"of option {LETTERS[index]}, behind the label {option[:len(option) - len(unlabelled)].strip()!r}"
    if len(option) > max_chars:
        return "too_long", f"{len(option)} > {max_chars} characters"
    normalized = normalize_option(option)
    for index, choice in enumerate(record.choices):
        if normalize_option(choice) == normalized:
            return "duplicate", f"of option {LETTERS[index]}"
    return None


# ---- the TPP prompts -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptTemplate:
    version: str  # the file name without suffix, dashes for underscores: "tpp-math-v1"
    text: str
    sha256: str


@lru_cache(maxsize=None)
def load_template(kind: str) -> PromptTemplate:
    path = TEMPLATE_DIR / TEMPLATE_FILES[kind]
    text = path.read_text(encoding="utf-8")
    return PromptTemplate(path.stem.replace("_", "-"), text, hashlib.sha256(text.encode("utf-8")).hexdigest())


def template_kind(record: MCQRecord, math_categories: frozenset[str]) -> str:
    return "math" if (record.category or "").strip().lower() in math_categories else "other"


def render_prompt(template: PromptTemplate, record: MCQRecord, max_chars: int) -> str:
    options = "\n".join(f"{LETTERS[i]}. {choice}" for i, choice in enumerate(record.choices))
    return Template(template.text).substitute(
        question=record.question, options=options, answer=f"{LETTERS[record.answer]}. {record.gold}",
        category=record.category or "general knowledge", max_chars=max_chars,
    )


def parse_reply(text: str) -> str:
    """The "option" of a JSON reply (a ```json fence is tolerated). ValueError makes the client ask again."""
    body = text.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.S)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg})") from None
    if not isinstance(value, dict) or not isinstance(value.get("option"), str):
        raise ValueError('expected a JSON object with a string "option"')
    return value["option"]


# ---- TPP generation --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposal:
    """What became of one TPP candidate: the new option, or the reason it was rejected."""

    item_id: str
    template_version: str
    option: str | None
    reason: str | None = None
    detail: str = ""
    similarity: float | None = None

    @property
    def accepted(self) -> bool:
        return self.reason is None


@dataclass
class TPPGenerator:
    client: Any  # builders.core.llm.settings.LLMClient
    scorer: SimilarityScorer
    math_categories: frozenset[str]
    similarity_cutoff: float
    length_ratio: float
    length_slack: int
    max_tokens: int
    rounds: int = 0
    truth: TruthCheck | None = None  # the second model that confirms an option (--validate-with), or None

    @property
    def model(self) -> str:
        return self.client.model

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.truth is not None:
            self.truth.close()

    def usage(self) -> str:
        return self.client.usage_summary() if self.client is not None else "no LLM calls"

    def propose(self, records: Sequence[MCQRecord]) -> list[Proposal]:
        """One round: a request per record, the rejection rules, then the similarity cut-off."""
        from builders.core.llm.settings import ChatRequest

        self.rounds += 1
        templates = [load_template(template_kind(r, self.math_categories)) for r in records]
        limits = [max_option_chars(r, self.length_ratio, self.length_slack) for r in records]
        requests = [ChatRequest.from_prompt(render_prompt(t, r, n), max_tokens=self.max_tokens,
                                            response_format={"type": "json_object"}, template_version=t.version)
                    for r, t, n in zip(records, templates, limits, strict=True)]
        results = self.client.complete_many(requests, parse=parse_reply, parse_retries=1,
                                            desc=f"MMLU-Pro+ TPP round {self.rounds}")
        proposals = [self._check(r, t, n, result) for r, t, n, result in zip(records, templates, limits, results, strict=True)]
        return self._checked(records, proposals)

    def _check(self, record: MCQRecord, template: PromptTemplate, max_chars: int, result) -> Proposal:
        from builders.core.llm.settings import UNPARSEABLE

        if not result.ok:
            reason = "malformed_reply" if result.error == UNPARSEABLE else "llm_error"
            return Proposal(record.id, template.version, None, reason, f"{result.error}: {result.error_detail}"[:300])
        option = " ".join(result.parsed.split())
        rejected = rejection_reason(option, record, max_chars)
        if rejected:
            return Proposal(record.id, template.version, option, *rejected)
        return Proposal(record.id, template.version, option)

    def _checked(self, records: Sequence[MCQRecord], proposals: list[Proposal]) -> list[Proposal]:
        """The proposals that passed the form rules, through the similarity cut-off, then the truth check."""
        proposals = self._check_similarity(records, proposals)
        return self.truth.confirm(records, proposals) if self.truth is not None else proposals

    def _check_similarity(self, records: Sequence[MCQRecord], proposals: list[Proposal]) -> list[Proposal]:
        open_ = [i for i, p in enumerate(proposals) if p.accepted]
        similarities = self.scorer.scores([(records[i].gold, proposals[i].option) for i in open_])
        for i, similarity in zip(open_, similarities, strict=True):
            too_similar = similarity >= self.similarity_cutoff
            proposals[i] = replace(proposals[i], similarity=similarity, reason="too_similar" if too_similar else None,
                                   detail=f"cosine {similarity:.4f} >= {self.similarity_cutoff}" if too_similar else "")
        for proposal in proposals:
            if not proposal.accepted:
                logger.info("TPP option for %s rejected (%s) %s", proposal.item_id, proposal.reason, proposal.detail)
        return proposals


def select_tpp(ranked: Sequence[MCQRecord], target: int,
               propose: Callable[[Sequence[MCQRecord]], list[Proposal]]) -> tuple[dict[str, Proposal], list[Proposal]]:
    """Ask for the best-ranked candidates until ``target`` are accepted or none is left.

    Each round asks for exactly the number still missing, taking the next candidates in the ranking, so the
    accepted set is the ranking's prefix minus the rejected items: independent of input order.
    """
    accepted: dict[str, Proposal] = {}
    tried: list[Proposal] = []
    position = 0
    while len(accepted) < target and position < len(ranked):
        batch = ranked[position:position + target - len(accepted)]
        position += len(batch)
        for proposal in propose(batch):
            tried.append(proposal)
            if proposal.accepted:
                accepted[proposal.item_id] = proposal
    return accepted, tried


# ---- pre-generated options (--tpp-options) ---------------------------------------------------------------------

SAMPLE_TPP_OPTIONS = SAMPLES_DIR / "mmlu_pro" / "tpp_options.jsonl"
PREGENERATED_VERSION = "pregenerated"


def read_tpp_options(path: Path) -> dict[str, tuple[str, str | None]]:
    """question_id -> (option, generator_model) of a pre-generated options file (JSON lines)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise UserError(f"--tpp-options {path}: {error.strerror or error}") from None
    options: dict[str, tuple[str, str | None]] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserError(f"--tpp-options {Path(path).name} line {number}: not JSON ({error.msg})") from None
        if not isinstance(row, dict) or "question_id" not in row or not isinstance(row.get("option"), str):
            raise UserError(f"--tpp-options {Path(path).name} line {number}: expected {{question_id, option}}")
        key = str(row["question_id"])
        if key in options:
            raise UserError(f"--tpp-options {Path(path).name} line {number}: question_id {key} appears twice")
        model = row.get("generator_model")
        options[key] = (row["option"], str(model) if model is not None else None)
    return options


@dataclass
class PregeneratedOptions(TPPGenerator):
    """TPP options read from a file (``--tpp-options``) instead of asked of an LLM; every rejection rule and the
    similarity cut-off still apply. A question the file does not cover is rejected (``no_pregenerated_option``)."""

    options: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    file_name: str = ""

    @property
    def model(self) -> str:
        models = sorted({m for _, m in self.options.values() if m})
        return ", ".join(models) if models else f"pre-generated ({self.file_name})"

    def propose(self, records: Sequence[MCQRecord]) -> list[Proposal]:
        self.rounds += 1
        proposals = []
        for record in records:
            found = self.options.get(str(record.metadata.get("question_id")))
            if found is None:
                proposals.append(Proposal(record.id, PREGENERATED_VERSION, None, "no_pregenerated_option",
                                          f"not in {self.file_name}"))
                continue
            option = " ".join(found[0].split())
            limit = max_option_chars(record, self.length_ratio, self.length_slack)
            rejected = rejection_reason(option, record, limit)
            proposals.append(Proposal(record.id, PREGENERATED_VERSION, option, *rejected) if rejected
                             else Proposal(record.id, PREGENERATED_VERSION, option))
        return self._checked(records, proposals)


def make_generator(options: Any) -> TPPGenerator | None:
    """Where the build's new TPP options come from (the builder's ``Options``): the pre-generated file
    ``--tpp-options``, else ``--llm-model`` on the LLM endpoint (whose cache folder also holds the similarity
    check's embeddings), each with ``--validate-with``'s truth check on the same endpoint; None when the build makes
    no TPP option."""
    if not options.makes_tpp_options:
        return None
    settings = options.llm
    scorer = SimilarityScorer(options.embedder, settings.cache_dir, options.embedder_batch_size)
    rules = (options.similarity_cutoff, options.max_length_ratio, options.length_slack, options.llm_max_tokens)
    truth = TruthCheck(settings.client(options.validate_with)) if options.validate_with else None
    if options.tpp_options is not None:
        return PregeneratedOptions(None, scorer, frozenset(), *rules, truth=truth,
                                   options=read_tpp_options(options.tpp_options), file_name=options.tpp_options.name)
    return TPPGenerator(settings.client(options.llm_model), scorer, options.tpp_math_categories, *rules, truth=truth)


def rejections_file(tried: Sequence[Proposal]) -> dict[str, bytes]:
    """``tpp_rejections.jsonl``: every rejected TPP candidate, by item id."""
    rejected = sorted((p for p in tried if not p.accepted), key=lambda p: p.item_id)
    lines = [json.dumps({"id": p.item_id, "reason": p.reason, "detail": p.detail, "option": p.option,
                         "similarity": p.similarity, "template_version": p.template_version},
                        ensure_ascii=False, sort_keys=True) for p in rejected]
    return {"tpp_rejections.jsonl": ("\n".join(lines) + "\n" if lines else "").encode("utf-8")}
