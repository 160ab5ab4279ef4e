"""Reading model predictions: lm-evaluation-harness sample logs, or plain JSONL ``{model, id, pred}``.

Metrics (``python -m builders.metrics``) and builders that score models read predictions through
:func:`read_predictions`, whatever produced them:

- an lm-eval sample log, ``samples_<task>_<timestamp>.jsonl`` (``lm_eval --log_samples``), or the
  ``--output_path`` folder that holds them. For ``multiple_choice`` tasks the prediction is the option
  with the highest log-likelihood (``acc``), or the highest log-likelihood per character (``acc_norm``,
  lm-eval's length normalisation), recomputed from the logged log-likelihoods and checked against the
  logged metric; for generation tasks it is the filtered response text. The model name comes from the
  ``results_<timestamp>.json`` beside the log;
- a JSONL file with one ``{"model": ..., "id": ..., "pred": ...}`` object per line, where ``pred`` is an
  option index, an option label (resolved by :func:`resolve_prediction` against the item's labels), a
  free-text answer, or null for no answer.

Model outputs are data: they are parsed with ``json`` and compared, never evaluated.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .errors import UserError
from .sources import iter_json_lines

logger = logging.getLogger(__name__)

SCORES = ("auto", "acc", "acc_norm")
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")


class PredictionError(UserError):
    """A predictions file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Prediction:
    """One model's answer to one item.

    ``pred`` is an option index (int), a label or free text (str) still to be resolved, or None (no
    answer). ``gold`` is the gold option index when the log knows it (lm-eval logs do).
    """

    model: str
    id: str
    pred: int | str | None
    gold: int | None = None
    task: str | None = None


def read_predictions(paths: Iterable[str | Path], model: str | None = None, score: str = "auto") -> list[Prediction]:
    """Every prediction in ``paths`` (files or lm-eval output folders); ``model`` overrides the names."""
    if score not in SCORES:
        raise UserError(f"unknown score {score!r}; choose one of {SCORES}")
    predictions: list[Prediction] = []
    for path in map(Path, paths):
        for file in _expand(path):
            if is_lm_eval_samples(file):
                found = list(read_lm_eval_samples(file, model=model, score=score))
            else:
                found = list(read_jsonl_predictions(file, model=model))
            logger.info("read %d predictions from %s", len(found), file)
            predictions.extend(found)
    return predictions


def _expand(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(path.rglob("samples_*.jsonl"))
        if not files:
            raise PredictionError(f"{path}: no lm-eval samples_*.jsonl log in this folder (run lm_eval with --log_samples)")
        return files
    if not path.is_file():
        raise PredictionError(f"{path}: no such predictions file")
    return [path]


def is_lm_eval_samples(file: Path) -> bool:
    """An lm-eval sample log: by its name, or by its first line's keys."""
    if _SAMPLES_NAME.match(file.name):
        return True
    with open(file, encoding="utf-8") as f:
        first = next((line for line in f if line.strip()), "")
    try:
        row = json.loads(first) if first else {}
    except json.JSONDecodeError:
        return False
    return isinstance(row, dict) and {"doc_id", "doc", "filtered_resps"} <= set(row)


def _json_lines(file: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    return iter_json_lines(file, PredictionError)


# ---- plain JSONL ------------------------------------------------------------------------------------


def read_jsonl_predictions(file: Path, model: str | None = None) -> Iterator[Prediction]:
    for number, row in _json_lines(file):
        name = model or row.get("model")
        if not isinstance(name, str) or not name:
            raise PredictionError(f"{file}:{number}: 'model' must be a non-empty string (or pass a model name)")
        item_id = row.get("id")
        if not isinstance(item_id, (str, int)) or isinstance(item_id, bool):
            raise PredictionError(f"{file}:{number}: 'id' must be a string")
        if "pred" not in row:
            raise PredictionError(f"{file}:{number}: missing 'pred' (use null for no answer)")
        pred = row["pred"]
        if isinstance(pred, bool) or not (pred is None or isinstance(pred, (int, str))):
            raise PredictionError(f"{file}:{number}: 'pred' must be an option index, a label, text or null")
        yield Prediction(name, str(item_id), pred, task=row.get("task"))


def resolve_prediction(pred: int | str | None, labels: Sequence[str]) -> int | None:
    """An option index from an index, a label ("B", "$", "(B)", "B."), or None when it is neither."""
    if pred is None:
        return None
    if isinstance(pred, int):
        return pred if 0 <= pred < len(labels) else None
    text = pred.strip()
    if text in labels:
        return list(labels).index(text)
    stripped = text.strip("()[]. :")
    if stripped in labels:
        return list(labels).index(stripped)
    return None


# ---- lm-eval sample logs -----------------------------------------------------------------------------


def read_lm_eval_samples(file: Path, model: str | None = None, score: str = "auto",
                         id_field: str = "id") -> Iterator[Prediction]:
    results = _results_for(file)
    task = _task_name(file)
    name = model or _model_name(results, file)
    delimiter = ((results.get("configs") or {}).get(task) or {}).get("target_delimiter", " ")
    for number, row in _json_lines(file):
        where = f"{file}:{number}"
        doc = row.get("doc") if isinstance(row.get("doc"), dict) else {}
        item_id = doc.get(id_field, row.get("doc_id"))
        if item_id is None:
            raise PredictionError(f"{where}: the sample has no doc.{id_field} and no doc_id")
        pred = _sample_prediction(row, score, delimiter, where)
        yield Prediction(name, str(item_id), pred, _gold(row), task)


def _sample_prediction(row: Mapping[str, Any], score: str, delimiter: str, where: str) -> int | str | None:
    responses = row.get("filtered_resps")
    if not isinstance(responses, list) or not responses:
        raise PredictionError(f"{where}: no filtered_resps")
    if all(isinstance(r, list) and len(r) == 2 for r in responses):  # multiple_choice: [loglik, is_greedy] per option
        return _choice_prediction(row, responses, score, delimiter, where)
    first = responses[0]
    return first if isinstance(first, str) else json.dumps(first)


def _choice_prediction(row: Mapping[str, Any], responses: list, score: str, delimiter: str, where: str) -> int:
    try:
        logliks = [float(r[0]) for r in responses]
    except (TypeError, ValueError):
        raise PredictionError(f"{where}: filtered_resps are not log-likelihoods") from None
    metric = score if score != "auto" else ("acc_norm" if "acc_norm" in row else "acc")
    if metric == "acc_norm":
        lengths = [float(len(c)) for c in _continuations(row, delimiter, len(logliks), where)]
        values = [ll / length if length else float("-inf") for ll, length in zip(logliks, lengths)]
    else:
        values = logliks
    pred = max(range(len(values)), key=lambda i: (values[i], -i))  # first maximum, as numpy's argmax
    logged, gold = row.get(metric), _gold(row)
    if logged is not None and gold is not None and float(logged) != float(pred == gold):
        raise PredictionError(f"{where}: recomputed {metric} prediction {pred} disagrees with the logged {metric}={logged}")
    return pred


def _continuations(row: Mapping[str, Any], delimiter: str, count: int, where: str) -> list[str]:
    """Each option's scored text, without the target delimiter, as lm-eval measures it for acc_norm."""
    arguments = row.get("arguments")
    if isinstance(arguments, dict):
        pairs = [arguments[key] for key in sorted(arguments, key=lambda k: int(k.rsplit("_", 1)[-1]))]
        texts = [pair.get("arg_1") for pair in pairs if isinstance(pair, dict)]
    elif isinstance(arguments, list):
        texts = [pair[1] for pair in arguments if isinstance(pair, list) and len(pair) == 2]
    else:
        texts = []
    if len(texts) != count or not all(isinstance(t, str) for t in texts):
        raise PredictionError(f"{where}: cannot read the {count} option continuations from 'arguments'")
    return [t[len(delimiter):] if delimiter and t.startswith(delimiter) else t for t in texts]


def _gold(row: Mapping[str, Any]) -> int | None:
    target = row.get("target")
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str) and target.strip().isdigit():
        return int(target)
    return None


def _task_name(file: Path) -> str | None:
    match = _SAMPLES_NAME.match(file.name)
    return match.group("task") if match else None


def _results_for(file: Path) -> dict[str, Any]:
    """The results_<timestamp>.json written with this log, if it is there."""
    match = _SAMPLES_NAME.match(file.name)
    if not match:
        return {}
    results = file.with_name(f"results_{match.group('stamp')}.json")
    if not results.is_file():
        return {}
    try:
        return json.loads(results.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        logger.warning("cannot read %s; the model name falls back to the folder name", results)
        return {}


def _model_name(results: Mapping[str, Any], file: Path) -> str:
    """The evaluated model: its Hub id, or the folder name of a local model; else the log's folder."""
    name = results.get("model_name") or ((results.get("config") or {}).get("model_args") or {})
    if isinstance(name, dict):
        name = name.get("pretrained")
    if isinstance(name, str) and name:
        return Path(name).name if name.startswith(("/", ".", "~")) else name
    return file.parent.name
