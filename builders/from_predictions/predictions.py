"""Reading model predictions, and matching them to the questions of a benchmark split.

Two formats, told apart line by line:

* lm-evaluation-harness sample logs (``--log_samples``: ``samples_<task>_<date>.jsonl``), one line per
  document with ``doc``, ``resps`` (``[[generation, ...]]``) and ``doc_id``. Questions are matched by
  the text of their ``doc`` (the harness may shuffle or subsample documents, so ``doc_id`` is not
  trusted). The model is named by ``MODEL=PATH`` on the command line, else by the sample log's folder
  (the harness writes ``<output_path>/<model name>/samples_*.jsonl``).
* plain JSON lines ``{"question_index" | "question", "model", "output"}``, optionally with ``split``
  and ``output_kind`` (``"extracted"`` when ``output`` already is the final answer, not a generation).

A folder is read recursively (``*.jsonl``). A prediction that matches no question is counted and
logged, never silently used; a second prediction of the same model on the same question is dropped
(the first one wins, in file order).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.sources import iter_json_lines

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prediction:
    model: str
    output: str
    question_index: int | None = None
    question: str | None = None
    split: str | None = None
    extracted: bool = False  # ``output`` already is the final answer
    origin: str = ""  # file:line, for messages


@dataclass
class MatchReport:
    read: int = 0
    matched: int = 0
    unmatched: int = 0
    duplicates: int = 0
    by_model: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


def question_key(text: str) -> str:
    """Whitespace-insensitive form used to match a prediction's question to a source row."""
    return " ".join(text.split())


def read_predictions(spec: str, doc_question: Callable[[Mapping], str | None]) -> list[Prediction]:
    """Every prediction under ``spec`` (``PATH`` or ``MODEL=PATH``; a file or a folder)."""
    model_override, path = _split_spec(spec)
    files = sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise UserError(f"--predictions {spec}: no .jsonl file found")
    predictions = []
    for file in files:
        predictions.extend(_read_file(file, model_override, doc_question))
    logger.info("read %d predictions from %s", len(predictions), spec)
    return predictions


def _split_spec(spec: str) -> tuple[str | None, Path]:
    path = Path(spec).expanduser()
    if not path.exists() and "=" in spec:
        model, _, rest = spec.partition("=")
        path = Path(rest).expanduser()
        if path.exists():
            return model, path
    if not path.exists():
        raise UserError(f"--predictions {spec}: no such file or folder")
    return None, path


def _read_file(file: Path, model_override: str | None, doc_question) -> Iterator[Prediction]:
    for number, row in iter_json_lines(file, UserError):
        yield from _from_row(row, file, f"{file}:{number}", model_override, doc_question)


def _from_row(row: dict, file: Path, origin: str, model_override: str | None, doc_question) -> Iterator[Prediction]:
    if "doc" in row and "resps" in row:
        yield from _from_harness(row, file, origin, model_override, doc_question)
        return
    if "output" not in row or not ("question_index" in row or "question" in row):
        raise UserError(f"{origin}: expected an lm-evaluation-harness sample (doc, resps) or "
                        "{question_index | question, model, output}")
    model = model_override or row.get("model")
    if not isinstance(model, str) or not model:
        raise UserError(f"{origin}: no model name (add \"model\" or pass --predictions MODEL=PATH)")
    output = row["output"]
    if not isinstance(output, str):
        raise UserError(f"{origin}: \"output\" must be a string")
    index = row.get("question_index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise UserError(f"{origin}: \"question_index\" must be an integer")
    yield Prediction(model, output, index, row.get("question"), row.get("split"),
                     row.get("output_kind") == "extracted", origin)


def _from_harness(row: dict, file: Path, origin: str, model_override: str | None, doc_question) -> Iterator[Prediction]:
    model = model_override or file.parent.name
    question = doc_question(row["doc"]) if isinstance(row["doc"], dict) else None
    if question is None:
        raise UserError(f"{origin}: the sample's doc has no question field this benchmark knows")
    responses = row["resps"]
    # generate_until logs [[text]]; with repeats, [[text, text, ...]]: the first generation is the greedy one.
    first = responses[0] if isinstance(responses, list) and responses else None
    text = first[0] if isinstance(first, list) and first else first
    if not isinstance(text, str):
        raise UserError(f"{origin}: \"resps\" holds no generated text")
    yield Prediction(model, text, None, question, None, False, origin)


def match_predictions(
    predictions: Iterable[Prediction],
    questions: Mapping[str, Sequence[str]],
) -> tuple[dict[tuple[str, int], list[Prediction]], MatchReport]:
    """Assign predictions to (split, row index); ``questions`` holds each split's question texts in order.

    A prediction with ``question_index`` and no ``split`` needs exactly one split to be built.
    """
    by_text: dict[str, tuple[str, int]] = {}
    for split, texts in questions.items():
        for index, text in enumerate(texts):
            by_text.setdefault(question_key(text), (split, index))
    matched: dict[tuple[str, int], list[Prediction]] = {}
    seen: set[tuple[str, int, str]] = set()
    report = MatchReport()
    for prediction in predictions:
        report.read += 1
        place = _place(prediction, questions, by_text)
        if place is None:
            report.unmatched += 1
            if len(report.examples) < 5:
                report.examples.append(prediction.origin)
            continue
        if (*place, prediction.model) in seen:
            report.duplicates += 1
            continue
        seen.add((*place, prediction.model))
        matched.setdefault(place, []).append(prediction)
        report.matched += 1
        report.by_model[prediction.model] += 1
    if report.unmatched:
        logger.warning("%d predictions match no question (e.g. %s)", report.unmatched, ", ".join(report.examples))
    if report.duplicates:
        logger.warning("%d repeated predictions of a model on a question dropped (the first one is kept)",
                       report.duplicates)
    return matched, report


def _place(prediction: Prediction, questions: Mapping[str, Sequence[str]], by_text) -> tuple[str, int] | None:
    if prediction.question_index is not None:
        split = prediction.split
        if split is None:
            if len(questions) != 1:
                raise UserError(f"{prediction.origin}: a prediction by question_index needs a \"split\" "
                                f"when several splits are built ({sorted(questions)})")
            split = next(iter(questions))
        if split not in questions or not 0 <= prediction.question_index < len(questions[split]):
            return None
        place = (split, prediction.question_index)
        if prediction.question is not None and question_key(prediction.question) != question_key(questions[split][place[1]]):
            return None  # the index and the text disagree: trust neither
        return place
    if prediction.question is not None:
        found = by_text.get(question_key(prediction.question))
        if found is not None and (prediction.split is None or prediction.split == found[0]):
            return found
    return None
