"""Asking models for predictions on an OpenAI-compatible endpoint (vLLM, TGI, a hosted API).

One :class:`~builders.core.llm.settings.LLMClient` per model gives concurrency, retries with backoff on
429/5xx/timeouts, and the on-disk reply cache keyed by (model, prompt, question): a killed run
resumes without repeating a call. A request that still fails is left out of the predictions and
counted per model (a failed call is not the model's answer, so it is not "invalid" either).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from builders.core.llm.settings import ChatRequest, LLMSettings
from builders.core.sources.predictions import Prediction

logger = logging.getLogger(__name__)


@dataclass
class GenerationRun:
    predictions: list[Prediction] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)  # requests that failed for good, per model
    usage: dict[str, str] = field(default_factory=dict)  # the client's summary line, per model


def generate_predictions(
    models: Sequence[str],
    questions: Mapping[str, Mapping[int, str] | Sequence[str]],
    request_for: Callable[[str], ChatRequest],
    settings: LLMSettings,
) -> GenerationRun:
    """Ask every model every question. ``questions``: split -> {row index: question text}, or split ->
    texts in row order; a prediction's ``ref`` is its ``split`` and ``question_index`` (that row index), its
    ``output`` the model's whole reply."""
    run = GenerationRun()
    places = [(split, index) for split, texts in questions.items() for index in _indices(texts)]
    requests = [request_for(questions[split][index]) for split, index in places]
    for model in models:
        with settings.client(model) as client:
            results = client.complete_many(requests, desc=f"predictions {model}")
            run.usage[model] = client.usage_summary()
        failed = 0
        for (split, index), result in zip(places, results, strict=True):
            if result.ok and result.text is not None:
                run.predictions.append(Prediction(model, result.text, {"split": split, "question_index": index},
                                                  f"{model}:{split}/{index}"))
            else:
                failed += 1
        run.failures[model] = failed
        if failed:
            logger.warning("%s: %d of %d requests failed and are left out", model, failed, len(requests))
    return run


def _indices(texts: Mapping[int, str] | Sequence[str]) -> list[int]:
    return sorted(texts) if isinstance(texts, Mapping) else list(range(len(texts)))
