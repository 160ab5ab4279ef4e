"""Batched inference of an SBA (single-best-answer) classifier.

The WiCkeD builder and ``python -m classifiers.sba predict`` both call :meth:`SBAClassifier.scores` on
items ``(question, choices, answer)``: the answer is the 0-based index of the key. Two kinds of model
score them, named by the folder's config (``sba_kind``):

- ``sequence``: one sequence per item, the question (``sba_input: question``) or the question and its
  lettered options (``question_choices``), gives P(SBA). The answer is not needed: an item may also be
  ``(question, choices)``. A folder without ``sba_*`` settings (the paper's released classifier) is one.
- ``cross_encoder``: SBA means "with the key removed, some remaining option is acceptable", and this
  model scores that directly. It reads one pair per remaining option j, (question, keyed answer,
  option j) (``sba_input: question_key_option``), gives P(option j is also acceptable), and the item's
  score is the maximum over the remaining options. An item with no remaining option scores 0.

Both kinds are transformers sequence-classification folders (or Hub ids). The config may carry
``sba_threshold``, ``sba_max_length`` (tokens, default 512) and ``sba_truncation_side`` (``right``, or
``left`` to keep the end of a long question); the label named ``SBA`` is the positive class (for a pair:
"this option is acceptable too"), and for two unnamed labels (the paper's released model) it is label 1.

Scores are fp32 and batch-independent: sequences are batched only with sequences of exactly the same
token length (nothing is padded, so attention, layer norm and activations work within one sequence),
and every Linear layer runs on fixed-size row blocks (:mod:`classifiers.fixed_rows`). A score is
bit-identical whichever other items are scored with it, so WiCkeD's output does not depend on the
item subset, order or batch size. Training calibrates the threshold on these same scores.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from builders.core.errors import UserError
from builders.core.runtime.content import content_revision

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

PAPER_CLASSIFIER = "ahmedselhady/bert-base-uncased-sba-clf"
DEFAULT_THRESHOLD = 0.5
EVALUATIONS_FILE = "sba_evaluations.json"  # written into a model folder by `evaluate --record`
BATCH_SIZE = 32  # sequences of one length per forward pass; scores do not depend on it
SEQUENCE, CROSS_ENCODER = "sequence", "cross_encoder"
INPUT_FORMATS = {SEQUENCE: ("question", "question_choices"), CROSS_ENCODER: ("question_key_option",)}
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def classifier_text(question: str, choices: Sequence[str], input_format: str) -> str:
    """The text a sequence classifier sees; training and inference share it so they cannot drift apart."""
    if input_format == "question":
        return question
    options = "\n".join(f"({LETTERS[i]}) {choice}" for i, choice in enumerate(choices))
    return f"{question}\n{options}"


@dataclass(frozen=True)
class Item:
    question: str
    choices: tuple[str, ...]
    answer: int | None


def as_item(value: Any) -> Item:
    """``(question, choices)`` or ``(question, choices, answer)`` as an :class:`Item`."""
    question, choices, *rest = value
    return Item(question, tuple(choices), rest[0] if rest else None)


@dataclass(frozen=True)
class Encoded:
    """The token sequences of a list of items; ``owners[k]`` is the index of the item sequence k belongs to."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    owners: np.ndarray
    options: np.ndarray  # the option a pair judges (cross-encoder), -1 for a whole-item sequence


def encode_items(tokenizer, items: Sequence[Item], kind: str, input_format: str, max_length: int) -> Encoded:
    """Token ids of every sequence the model reads for ``items``; training and inference share it."""
    import numpy as np  # here: a builder's --help imports this module, and parses without numpy

    if kind == CROSS_ENCODER:
        return _encode_pairs(tokenizer, items, max_length)
    if not items:
        return Encoded([], [], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    encoded = tokenizer([classifier_text(i.question, i.choices, input_format) for i in items],
                        truncation=True, max_length=max_length)
    ids = encoded["input_ids"]
    types = encoded.get("token_type_ids") or [[0] * len(x) for x in ids]
    return Encoded(ids, types, np.arange(len(items)), np.full(len(items), -1))


def _encode_pairs(tokenizer, items: Sequence[Item], max_length: int) -> Encoded:
    """``[CLS] question [SEP] key [SEP] option [SEP]`` for every remaining option of every item.

    The key and the option keep at most a quarter of ``max_length`` each; the question gets the rest,
    cut on the tokenizer's truncation side (``left`` keeps its end, where the question is asked).
    """
    import numpy as np

    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls is None or sep is None:
        raise UserError("a cross-encoder needs a tokenizer with CLS and SEP tokens (a BERT-style backbone)")
    for number, item in enumerate(items):
        if not isinstance(item.answer, int) or isinstance(item.answer, bool) or not 0 <= item.answer < len(item.choices):
            raise UserError(f"item {number} ({item.question[:60]!r}): a cross-encoder needs the answer index of "
                            f"every item, got {item.answer!r} for {len(item.choices)} choices")
    cap = max_length // 4
    questions = _token_ids(tokenizer, [i.question for i in items])
    options = iter(_token_ids(tokenizer, [c for i in items for c in i.choices]))
    ids, types, owners, judged = [], [], [], []
    keep_end = tokenizer.truncation_side == "left"
    for index, (item, question) in enumerate(zip(items, questions, strict=True)):
        item_options = [next(options)[:cap] for _ in item.choices]
        for j, option in enumerate(item_options):
            if j == item.answer:
                continue
            tail = item_options[item.answer] + [sep] + option + [sep]
            budget = max(0, max_length - 2 - len(tail))
            kept = (question[len(question) - budget:] if keep_end else question[:budget]) if budget else []
            head = [cls] + kept + [sep]
            ids.append(head + tail)
            types.append([0] * len(head) + [1] * len(tail))
            owners.append(index)
            judged.append(j)
    return Encoded(ids, types, np.asarray(owners, dtype=np.int64), np.asarray(judged, dtype=np.int64))


def _token_ids(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    # Whole texts (cut later, per pair); verbose=False: no warning about texts longer than the model takes.
    return tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"] if texts else []


def length_batches(encoded: Sequence[Sequence[int]], batch_size: int) -> list[list[int]]:
    """Indices grouped by exact token length, cut into batches: no batch needs padding."""
    by_length: dict[int, list[int]] = {}
    for index, ids in enumerate(encoded):
        by_length.setdefault(len(ids), []).append(index)
    batches = []
    for length in sorted(by_length):
        group = by_length[length]
        batches.extend(group[start:start + batch_size] for start in range(0, len(group), batch_size))
    return batches


def configured_threshold(name_or_path: str, revision: str | None = None) -> float:
    """The threshold a classifier's config records (``sba_threshold``: training calibrates it), else the default;
    read from its config alone, before the weights are loaded."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(name_or_path, revision=revision)
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read the config of SBA classifier {name_or_path!r} "
                        f"({str(error).splitlines()[0][:200]})") from None
    return float(getattr(config, "sba_threshold", DEFAULT_THRESHOLD))


@dataclass
class SBAClassifier:
    model: object
    tokenizer: object
    sba_index: int
    threshold: float
    kind: str
    input_format: str
    name: str
    revision: str
    max_length: int = 512

    @classmethod
    def load(cls, name_or_path: str, threshold: float | None = None,
             revision: str | None = None) -> "SBAClassifier":
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from .fixed_rows import fixed_row_linears

        try:
            tokenizer = AutoTokenizer.from_pretrained(name_or_path, revision=revision)
            model = AutoModelForSequenceClassification.from_pretrained(name_or_path, revision=revision)
        except (OSError, ValueError) as error:
            raise UserError(
                f"cannot load SBA classifier {name_or_path!r} ({str(error).splitlines()[0][:200]}). Offline, name "
                "a local model folder (the output of `python -m classifiers.sba train`); WiCkeD also takes "
                "--sba-classifier none to alter every item."
            ) from None
        model = fixed_row_linears(model.float().eval())  # see classifiers/fixed_rows.py
        config = model.config
        tokenizer.truncation_side = getattr(config, "sba_truncation_side", "right")
        kind = getattr(config, "sba_kind", SEQUENCE)
        input_format = getattr(config, "sba_input", "question")
        if input_format not in INPUT_FORMATS.get(kind, ()):
            raise UserError(f"{name_or_path}: config sba_kind {kind!r} with sba_input {input_format!r} is not one of "
                            f"{INPUT_FORMATS}")
        return cls(
            model=model, tokenizer=tokenizer, sba_index=_sba_label_index(config.id2label, name_or_path),
            threshold=threshold if threshold is not None else float(getattr(config, "sba_threshold", DEFAULT_THRESHOLD)),
            kind=kind, input_format=input_format,
            name=Path(name_or_path).name if Path(name_or_path).exists() else name_or_path,
            revision=_revision(name_or_path, revision),
            max_length=min(int(getattr(config, "sba_max_length", 512)), getattr(tokenizer, "model_max_length", 512) or 512),
        )

    @property
    def needs_answer(self) -> bool:
        return self.kind == CROSS_ENCODER

    def encode(self, items: Sequence[Any]) -> Encoded:
        """The token sequences of ``items`` (each ``(question, choices[, answer])``)."""
        return encode_items(self.tokenizer, [as_item(i) for i in items], self.kind, self.input_format, self.max_length)

    def scores(self, items: Sequence[Any], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """P(SBA) for each ``(question, choices[, answer])``; each score is independent of the rest of the list."""
        import numpy as np

        encoded = self.encode(items)
        item_scores = np.zeros(len(items), dtype=np.float32)
        np.maximum.at(item_scores, encoded.owners, self.sequence_scores(encoded, batch_size))
        return item_scores

    def sequence_scores(self, encoded: Encoded, batch_size: int = BATCH_SIZE) -> np.ndarray:
        """P(positive) of every sequence: of the item (sequence model) or of one remaining option (cross-encoder)."""
        import numpy as np
        import torch

        from builders.core.runtime.progress import bar

        result = np.empty(len(encoded.input_ids), dtype=np.float32)
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        with_types = getattr(self.model.config, "type_vocab_size", 0) > 1
        with torch.inference_mode():
            for batch in bar(length_batches(encoded.input_ids, batch_size), desc="SBA classifier", leave=False):
                inputs = {"input_ids": torch.tensor([encoded.input_ids[i] for i in batch])}
                if with_types:
                    inputs["token_type_ids"] = torch.tensor([encoded.token_type_ids[i] for i in batch])
                logits = self.model(**inputs).logits.float()
                result[batch] = torch.softmax(logits, dim=-1)[:, self.sba_index].numpy()
        return result


def _sba_label_index(id2label: dict, name: str) -> int:
    labels = {int(i): str(label).upper() for i, label in id2label.items()}
    named = [i for i, label in labels.items() if label == "SBA"]
    if named:
        return named[0]
    if len(labels) == 2:
        return 1  # the paper's released classifier: LABEL_1 means SBA
    raise UserError(f"{name}: cannot tell which label means SBA among {sorted(labels.values())}")


def _revision(name_or_path: str, revision: str | None = None) -> str:
    """The Hub commit of a model id, or a content hash of a local folder's config and weights."""
    path = Path(name_or_path)
    if path.is_dir():
        # not the evaluation reports `evaluate --record` adds: they do not change the model
        return content_revision(path, ignore=(EVALUATIONS_FILE,))
    try:
        from huggingface_hub import HfApi

        return HfApi().model_info(name_or_path, revision=revision).sha or "unknown"
    except Exception:  # the weights loaded from the local cache; provenance stays honest about it
        return "unknown (loaded from cache)"
