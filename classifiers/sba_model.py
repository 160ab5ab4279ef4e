"""Batched inference of an SBA (single-best-answer) classifier.

The WiCkeD builder and ``python -m classifiers.sba predict`` both call :meth:`SBAClassifier.scores`.
A classifier is any transformers sequence-classification folder or Hub id. Its config may carry
``sba_threshold``, ``sba_input`` (``question`` or ``question_choices``), ``sba_max_length`` (tokens, default
512) and ``sba_truncation_side`` (``right``, or ``left`` to keep the options of a long question); the
label named ``SBA`` is the positive class, and for two unnamed labels (the paper's released model) it
is label 1. Folders written by ``python -m classifiers.sba train`` carry all of these.

Inference runs every Linear layer in int8 (:class:`classifiers.int8.Int8Linear`: weights per output
channel, activations per token) and batches only questions of exactly the same token length, so nothing
is padded. Integer sums are exact and every remaining float operation (attention, layer norm) works
within one question, so a question's score is bit-identical whichever other questions share its batch:
WiCkeD's output does not depend on the item subset, order or batch size. Training calibrates the
threshold on these same scores.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from builders.core.errors import UserError
from builders.core.sources import content_revision

logger = logging.getLogger(__name__)

PAPER_CLASSIFIER = "ahmedselhady/bert-base-uncased-sba-clf"
DEFAULT_THRESHOLD = 0.5
EVALUATIONS_FILE = "sba_evaluations.json"  # written into a model folder by `evaluate --record`
BATCH_SIZE = 32  # questions of one length per forward pass; scores do not depend on it
INPUT_FORMATS = ("question", "question_choices")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def classifier_text(question: str, choices: Sequence[str], input_format: str) -> str:
    """The text a classifier sees; training and inference share it so they cannot drift apart."""
    if input_format == "question":
        return question
    options = "\n".join(f"({LETTERS[i]}) {choice}" for i, choice in enumerate(choices))
    return f"{question}\n{options}"


@dataclass
class SBAClassifier:
    model: object
    tokenizer: object
    sba_index: int
    threshold: float
    input_format: str
    name: str
    revision: str
    max_length: int = 512

    @classmethod
    def load(cls, name_or_path: str, threshold: float | None = None,
             revision: str | None = None) -> "SBAClassifier":
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        from .int8 import int8_linears

        try:
            tokenizer = AutoTokenizer.from_pretrained(name_or_path, revision=revision)
            model = AutoModelForSequenceClassification.from_pretrained(name_or_path, revision=revision)
        except (OSError, ValueError) as error:
            raise UserError(
                f"cannot load SBA classifier {name_or_path!r} ({str(error).splitlines()[0][:200]}). Offline, pass "
                "--sba-classifier PATH to a local model folder (e.g. the output of `python -m classifiers.sba train`) "
                "or --sba-classifier none to alter every item."
            ) from None
        model = int8_linears(model.eval())  # see classifiers/int8.py
        config = model.config
        tokenizer.truncation_side = getattr(config, "sba_truncation_side", "right")
        input_format = getattr(config, "sba_input", "question")
        if input_format not in INPUT_FORMATS:
            raise UserError(f"{name_or_path}: config sba_input must be one of {INPUT_FORMATS}, got {input_format!r}")
        return cls(
            model=model, tokenizer=tokenizer, sba_index=_sba_label_index(config.id2label, name_or_path),
            threshold=threshold if threshold is not None else float(getattr(config, "sba_threshold", DEFAULT_THRESHOLD)),
            input_format=input_format, name=name_or_path, revision=_revision(name_or_path, revision),
            max_length=min(int(getattr(config, "sba_max_length", 512)), getattr(tokenizer, "model_max_length", 512) or 512),
        )

    def encode(self, items: Sequence[tuple[str, Sequence[str]]]) -> list[list[int]]:
        """Token ids of each item's classifier text, truncated to the model's ``sba_max_length``."""
        texts = [classifier_text(q, c, self.input_format) for q, c in items]
        if not texts:
            return []
        return self.tokenizer(texts, truncation=True, max_length=self.max_length)["input_ids"]

    @staticmethod
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

    def scores(self, items: Sequence[tuple[str, Sequence[str]]], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """P(SBA) for each (question, choices); each score is independent of the rest of the list."""
        import torch
        from tqdm.auto import tqdm

        encoded = self.encode(items)
        result = np.empty(len(encoded), dtype=np.float32)
        torch.set_num_threads(max(1, os.cpu_count() or 1))
        with torch.inference_mode():
            for batch in tqdm(self.length_batches(encoded, batch_size), desc="SBA classifier", leave=False):
                input_ids = torch.tensor([encoded[i] for i in batch])
                logits = self.model(input_ids=input_ids).logits.float()
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
