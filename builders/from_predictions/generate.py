"""Asking models for predictions on an OpenAI-compatible endpoint (vLLM, TGI, a hosted API).

One :class:`~builders.core.llm.LLMClient` per model gives concurrency, retries with backoff on
429/5xx/timeouts, and the on-disk reply cache keyed by (model, prompt, question): a killed run
resumes without repeating a call. A request that still fails is left out of the predictions and
counted per model (a failed call is not the model's answer, so it is not "invalid" either).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from builders.core.llm import ChatRequest, LLMClient

from .predictions import Prediction

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EndpointSettings:
    base_url: str
    api_key_env: str | None = None  # None: a keyless local server
    cache_dir: Path | None = None
    concurrency: int = 8
    timeout: float = 120.0
    max_retries: int = 6


@dataclass
class GenerationRun:
    predictions: list[Prediction] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)  # requests that failed for good, per model
    usage: dict[str, str] = field(default_factory=dict)  # the client's summary line, per model


def generate_predictions(
    models: Sequence[str],
    questions: Mapping[str, Mapping[int, str] | Sequence[str]],
    request_for: Callable[[str], ChatRequest],
    settings: EndpointSettings,
) -> GenerationRun:
    """Ask every model every question. ``questions``: split -> {row index: question text}, or split ->
    texts in row order; a prediction's ``question_index`` is that row index."""
    run = GenerationRun()
    places = [(split, index) for split, texts in questions.items() for index in _indices(texts)]
    requests = [request_for(questions[split][index]) for split, index in places]
    for model in models:
        with LLMClient(model, base_url=settings.base_url, api_key_env=settings.api_key_env,
                       cache_dir=settings.cache_dir, concurrency=settings.concurrency,
                       timeout=settings.timeout, max_retries=settings.max_retries) as client:
            results = client.complete_many(requests, desc=f"predictions {model}")
            run.usage[model] = client.usage_summary()
        failed = 0
        for (split, index), result in zip(places, results):
            if result.ok and result.text is not None:
                run.predictions.append(Prediction(model, result.text, index, None, split, False, f"{model}:{split}/{index}"))
            else:
                failed += 1
        run.failures[model] = failed
        if failed:
            logger.warning("%s: %d of %d requests failed and are left out", model, failed, len(requests))
    return run


def _indices(texts: Mapping[int, str] | Sequence[str]) -> list[int]:
    return sorted(texts) if isinstance(texts, Mapping) else list(range(len(texts)))


def write_predictions(predictions: Sequence[Prediction], path: Path) -> None:
    """Save predictions in the plain JSON-lines format, so a later build can read them back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for p in predictions:
            row = {"split": p.split, "question_index": p.question_index, "model": p.model, "output": p.output}
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
