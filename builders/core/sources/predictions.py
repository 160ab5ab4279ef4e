"""The one predictions reader: lm-evaluation-harness sample logs, or plain JSON lines; and matching them to items.

Every command that reads models' predictions (``metrics ranking``, ``metrics mmlu-pro-plus``, GSM-MC,
MATH-MC, PythonIO) reads them with :func:`read_predictions` into the same :class:`Prediction`, and gives
:func:`match_predictions` only its own function from a prediction to its item id.

What is read:

- ``PATH`` or ``MODEL=PATH`` (``MODEL`` names every prediction under ``PATH``); a file, or a folder read
  recursively (every ``*.jsonl`` in it except ``problems.jsonl``, the problems that go with the
  predictions beside it in CodeMind's layout, which PythonIO reads).
- lm-eval sample logs, ``samples_<task>_<timestamp>.jsonl`` (``lm_eval --log_samples``, or a file whose
  first row has ``doc`` and ``resps`` or ``filtered_resps``). For ``multiple_choice`` tasks the output is
  the option with the highest log-likelihood (``acc``), or per character (``acc_norm``), recomputed from
  the logged log-likelihoods and checked against the logged metric; the gold option is the logged target. For
  generation tasks it is the filtered response (the task's answer extraction; ``extracted`` when the filter
  changed the generation). The doc's fields and ``doc_id`` are the prediction's ``ref``. A doc logged once
  per filter is read once (its first row). The model is named by ``results_<timestamp>.json`` beside the
  log, else by the log's folder.
- plain JSON lines, one prediction per line::

      {"model": ..., "id" | "question_index" | "question": ..., "output": ..., "split"?: ..,
       "benchmark"?: .., "output_kind"?: "raw" | "extracted"}

  ``output`` (or ``pred`` or ``answer``, its multiple-choice spellings) is an option index, a label, a generated text
  (``output_kind`` "extracted" when it already is the final answer), or null for no answer. Other fields
  (MMLU-Pro's ``question_id``; CodeMind's ``benchmark``, ``task_id``, ``input``) stay in ``ref`` for the
  builder's own matching.

A malformed row stops the read with one line naming file and line. Model outputs are data: parsed with
``json`` and compared, never evaluated.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar

from builders.core.errors import UserError
from builders.core.sources.reading import iter_json_lines

logger = logging.getLogger(__name__)

SCORES = ("auto", "acc", "acc_norm")
PROBLEMS_FILE = "problems.jsonl"
_SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")
ANSWER_FIELDS = ("output", "pred", "answer")  # a plain row's answer, as the formats spell it (one of them)
_NOT_REF_FIELDS = frozenset({"model", "output", "pred", "answer", "output_kind"})  # a plain row's fields not in its ref
_NOT_REFERENCES = frozenset({"split", "benchmark", "source", "raw", "task"})  # fields that name no item alone
ItemId = TypeVar("ItemId")


class PredictionError(UserError):
    """A predictions file that cannot be read; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Prediction:
    """One model's answer to one item, from a file or generated.

    ``output``: an option index (int), a label, a text still to interpret (str), or None (no answer).
    ``ref``: how the row names its item: ``id``, ``question_index``, ``question``, ``split``, ``benchmark``
    and the row's other fields (an lm-eval log's doc fields and ``doc_id``). ``origin``: ``file:line``.
    ``gold``: the gold option index, when an lm-eval log knows it. ``extracted``: ``output`` already is the
    final answer (no answer extraction to apply).
    """

    model: str
    output: int | str | None
    ref: Mapping[str, Any]
    origin: str
    gold: int | None = None
    task: str | None = None
    extracted: bool = False

    @property
    def file(self) -> Path:
        """The file a prediction read from a file comes from."""
        return Path(self.origin.rpartition(":")[0])


def read_predictions(specs: Iterable[str | Path], *, benchmark: str | Sequence[str] | None = None,
                     model: str | None = None, score: str = "auto", flag: str = "--predictions") -> list[Prediction]:
    """Every prediction under ``specs`` (``PATH`` or ``MODEL=PATH``: files or folders), in file order.

    ``benchmark``: the benchmark(s) the command reads; a plain row whose ``benchmark`` names another one stops
    the read. ``model`` names every prediction (a ``MODEL=`` of the spec wins). A spec that holds no prediction
    is an error naming ``flag``.
    """
    if score not in SCORES:
        raise UserError(f"unknown score {score!r}; choose one of {SCORES}")
    expected = _benchmark_names(benchmark)
    predictions: list[Prediction] = []
    for spec in specs:
        spec_model, path = _split_spec(str(spec))
        before = len(predictions)
        for file in _files(path, str(spec)):
            if _is_lm_eval_samples(file):
                found = list(_read_lm_eval_samples(file, spec_model or model, score))
            else:
                found = [_plain_prediction(row, f"{file}:{number}", spec_model or model, expected)
                         for number, row in iter_json_lines(file, PredictionError)]
            logger.info("read %d predictions from %s", len(found), file)
            predictions.extend(found)
        if len(predictions) == before:  # an empty file would otherwise build a release with every item excluded
            raise PredictionError(f"{flag} {spec}: no predictions in it")
    return predictions


def _benchmark_names(benchmark: str | Sequence[str] | None) -> tuple[str, ...]:
    if benchmark is None:
        return ()
    return (benchmark.lower(),) if isinstance(benchmark, str) else tuple(name.lower() for name in benchmark)


def _split_spec(spec: str) -> tuple[str | None, Path]:
    """(model, path) of ``MODEL=PATH``, or (None, path) of ``PATH``."""
    path = Path(spec).expanduser()
    if path.exists():
        return None, path
    model, equals, rest = spec.partition("=")
    if equals and model and Path(rest).expanduser().exists():
        return model, Path(rest).expanduser()
    raise PredictionError(f"predictions {spec}: no such file or folder")


def _files(path: Path, spec: str) -> list[Path]:
    if path.is_file():
        return [path]
    files = [file for file in sorted(path.rglob("*.jsonl")) if file.name != PROBLEMS_FILE]
    if not files:
        raise PredictionError(f"predictions {spec}: no .jsonl file in this folder (lm-eval logs need --log_samples)")
    return files


def _is_lm_eval_samples(file: Path) -> bool:
    """An lm-eval sample log: by its name, or by its first line's keys."""
    if _SAMPLES_NAME.match(file.name):
        return True
    with open(file, encoding="utf-8") as handle:
        first = next((line for line in handle if line.strip()), "")
    try:
        row = json.loads(first) if first else {}
    except (ValueError, RecursionError):  # not JSON, too long a number, too deep: the reader names the line
        return False
    return isinstance(row, dict) and "doc" in row and ("resps" in row or "filtered_resps" in row)


# ---- plain JSON lines -----------------------------------------------------------------------------------


def _plain_prediction(row: dict[str, Any], origin: str, model: str | None, benchmarks: Sequence[str]) -> Prediction:
    """The row's answer fields are taken out of ``row``; what is left is the prediction's ``ref``."""
    listed = row.pop("model", None)
    name = model or listed
    if type(name) is not str or not name:
        raise PredictionError(f"{origin}: 'model' must be a non-empty string (or pass --predictions MODEL=PATH)")
    if benchmarks:
        _check_benchmark(row, origin, benchmarks)
    spellings = [name for name in ANSWER_FIELDS if name in row]
    if len(spellings) != 1:
        raise PredictionError(f"{origin}: give the answer as exactly one of 'output', 'pred' or 'answer' (null for no "
                              "answer)")
    spelled, = spellings
    output = row.pop(spelled)
    if output is not None and type(output) not in (int, str):  # a bool is no option index
        raise PredictionError(f"{origin}: '{spelled}' must be an option index, a label, a text or null")
    kind = row.pop("output_kind", None)
    if kind not in (None, "raw", "extracted"):
        raise PredictionError(f"{origin}: 'output_kind' must be 'raw' or 'extracted', not {kind!r}")
    _check_reference(row, origin)
    task = row.get("task")
    return Prediction(name, output, row, origin, None, task if type(task) is str else None, kind == "extracted")


def _check_benchmark(row: Mapping[str, Any], origin: str, benchmarks: Sequence[str]) -> None:
    named = row.get("benchmark")
    if isinstance(named, str) and named.lower() not in benchmarks:
        raise PredictionError(f"{origin}: this row is a {named!r} prediction; this command reads "
                              f"{' or '.join(benchmarks)} predictions")


def _check_reference(ref: dict[str, Any], origin: str) -> None:
    """Types of the standard references; ``id`` becomes a string. A row must name its item somehow."""
    if all(key in _NOT_REFERENCES for key in ref):
        raise PredictionError(f"{origin}: the row names no item (give 'id', 'question_index' or 'question')")
    if "id" in ref:
        if type(ref["id"]) not in (str, int):
            raise PredictionError(f"{origin}: 'id' must be a string or an integer")
        ref["id"] = str(ref["id"])
    if "question_index" in ref and type(ref["question_index"]) is not int:
        raise PredictionError(f"{origin}: 'question_index' must be an integer")
    for key in ("question", "split", "benchmark"):
        if key in ref and type(ref[key]) is not str:
            raise PredictionError(f"{origin}: {key!r} must be a string")


# ---- lm-eval sample logs ---------------------------------------------------------------------------------


def _read_lm_eval_samples(file: Path, model: str | None, score: str) -> Iterator[Prediction]:
    results = _results_for(file)
    task = _task_name(file)
    name = model or _model_name(results, file)
    delimiter = ((results.get("configs") or {}).get(task) or {}).get("target_delimiter", " ")
    seen: set[Any] = set()
    for number, row in iter_json_lines(file, PredictionError):
        origin = f"{file}:{number}"
        doc = row.get("doc")
        if not isinstance(doc, dict):
            raise PredictionError(f"{origin}: an lm-eval sample needs its 'doc'")
        doc_id = row.get("doc_id")
        if doc_id is not None and doc_id in seen:
            continue  # the same request logged again under another filter: its first row stands
        seen.add(doc_id)
        ref = {**doc, "doc_id": doc_id}
        if _is_multiple_choice(row):
            yield Prediction(name, choice_prediction(row, score, delimiter, origin), ref, origin, _gold(row), task)
        else:
            output, extracted = _generation(row, origin)
            yield Prediction(name, output, ref, origin, None, task, extracted)


def _is_multiple_choice(row: Mapping[str, Any]) -> bool:
    """``multiple_choice`` tasks log one [log-likelihood, is_greedy] pair per option."""
    responses = row.get("filtered_resps")
    return isinstance(responses, list) and bool(responses) and all(
        isinstance(r, list) and len(r) == 2 and str(r[1]) in ("True", "False") for r in responses)


def _generation(row: Mapping[str, Any], origin: str) -> tuple[str | None, bool]:
    """(the filtered response, whether the filter changed the generation); the generation when unfiltered;
    None when the log holds no answer (a null response)."""
    responses = row.get("resps")
    first = responses[0] if isinstance(responses, list) and responses else None
    generated = first[0] if isinstance(first, list) and first else first  # [[text, ...]]: the first is greedy
    filtered = row.get("filtered_resps")
    answer = filtered[0] if isinstance(filtered, list) and filtered else generated
    if isinstance(answer, str):
        return answer, isinstance(generated, str) and answer.strip() != generated.strip()
    if answer is None and isinstance(filtered, list) and filtered:
        return None, False  # a logged null: no answer
    raise PredictionError(f"{origin}: neither 'filtered_resps' nor 'resps' holds a generated text")


def choice_prediction(row: Mapping[str, Any], score: str, delimiter: str, origin: str) -> int:
    """The option an lm-eval multiple-choice sample picked under ``score`` (acc: the highest log-likelihood;
    acc_norm: per character of the option, the delimiter left out, as lm-eval measures it), checked
    against the sample's logged metric."""
    try:
        logliks = [float(r[0]) for r in row["filtered_resps"]]
    except (TypeError, ValueError):
        raise PredictionError(f"{origin}: filtered_resps are not log-likelihoods") from None
    metric = score if score != "auto" else ("acc_norm" if "acc_norm" in row else "acc")
    if metric == "acc_norm":
        lengths = [float(len(c)) for c in _continuations(row, delimiter, len(logliks), origin)]
        values = [ll / length if length else float("-inf") for ll, length in zip(logliks, lengths, strict=True)]
    else:
        values = logliks
    pred = max(range(len(values)), key=lambda i: (values[i], -i))  # first maximum, as numpy's argmax
    logged, gold = row.get(metric), _gold(row)
    if logged is not None and gold is not None and float(logged) != float(pred == gold):
        raise PredictionError(f"{origin}: recomputed {metric} prediction {pred} disagrees with the logged "
                              f"{metric}={logged}")
    return pred


def _continuations(row: Mapping[str, Any], delimiter: str, count: int, origin: str) -> list[str]:
    """Each option's scored text, without the target delimiter, as lm-eval measures it for acc_norm."""
    arguments = row.get("arguments")
    texts: list[Any]  # whatever the file holds, until checked below
    if isinstance(arguments, dict):
        pairs = [arguments[key] for key in sorted(arguments, key=lambda k: int(k.rsplit("_", 1)[-1]))]
        texts = [pair.get("arg_1") for pair in pairs if isinstance(pair, dict)]
    elif isinstance(arguments, list):
        texts = [pair[1] for pair in arguments if isinstance(pair, (list, tuple)) and len(pair) == 2]
    else:
        texts = []
    if len(texts) != count or not all(isinstance(t, str) for t in texts):
        raise PredictionError(f"{origin}: cannot read the {count} option continuations from 'arguments'")
    return [t[len(delimiter):] if delimiter and t.startswith(delimiter) else t for t in texts]


def _gold(row: Mapping[str, Any]) -> int | None:
    target = row.get("target")
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str) and target.strip().isdigit() and len(target.strip()) <= 18:
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
    except (OSError, ValueError, RecursionError):  # ValueError: JSONDecodeError, a number too long to read
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


# ---- interpreting and matching ---------------------------------------------------------------------------


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


def require_texts(predictions: Iterable[Prediction], benchmark: str) -> None:
    """Builders that read generated answers refuse option indices (a multiple-choice log given by mistake)."""
    for p in predictions:
        if isinstance(p.output, int):
            raise PredictionError(f"{p.origin}: the answer is an option index ({p.output}), not text: "
                                  f"{benchmark} predictions are generated answers (a multiple-choice log?)")


@dataclass(frozen=True)
class Unmatched:
    """What an item-id function returns for a prediction that names no item it builds: why not."""

    reason: str


NO_MATCH = Unmatched("no_match")
DUPLICATE = "duplicate_model_item"
# predictions on a split the build does not select (one file for train and test, a --splits test build):
# expected, so counted and logged without a warning
SPLIT_NOT_BUILT = Unmatched("split_not_built")


@dataclass
class MatchReport:
    """Counts per model: predictions read, matched, unmatched and repeated (a model's second answer to an item)."""

    read: Counter = field(default_factory=Counter)
    matched: Counter = field(default_factory=Counter)
    unmatched: Counter = field(default_factory=Counter)
    duplicates: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)  # why not used -> predictions (duplicates included)
    examples: dict[str, list[str]] = field(default_factory=dict)  # reason -> the first few, for messages

    def summary(self) -> str:
        return (f"{self.read.total()} predictions read, {self.matched.total()} matched, {self.unmatched.total()} "
                f"unmatched, {self.duplicates.total()} repeated")


def require_matches(predictions: Sequence[Prediction], item_id: Callable[[Prediction], Any], what: str) -> None:
    """Predictions none of which names ``what`` (another benchmark's, split's or release's) are one user error,
    found before any paid generation (as is any error ``item_id`` raises)."""
    reasons: Counter = Counter()
    for prediction in predictions:
        found = item_id(prediction)
        if found is None or isinstance(found, Unmatched):
            reasons[(found or NO_MATCH).reason] += 1
    if predictions and reasons.total() == len(predictions):
        raise PredictionError(f"none of the {len(predictions)} predictions names {what}: {dict(reasons)} "
                              f"(e.g. {predictions[0].origin})")


def match_predictions(predictions: Iterable[Prediction], item_id: Callable[[Prediction], ItemId | Unmatched | None],
                      ) -> tuple[dict[ItemId, list[Prediction]], MatchReport]:
    """Predictions per item, by the builder's ``item_id`` (None or :class:`Unmatched`: no item).

    A model's second prediction on one item is counted and dropped: the first one, in read order, stands.
    """
    matched: dict[Any, list[Prediction]] = {}
    seen: set[tuple[Any, str]] = set()
    report = MatchReport()
    for prediction in predictions:
        report.read[prediction.model] += 1
        found = item_id(prediction)
        if found is None or isinstance(found, Unmatched):
            reason = (found or NO_MATCH).reason
            report.unmatched[prediction.model] += 1
            _not_used(report, reason, f"{prediction.origin} ({reason})")
        elif (found, prediction.model) in seen:
            report.duplicates[prediction.model] += 1
            _not_used(report, DUPLICATE, f"{prediction.origin} (a second prediction of {prediction.model} on {found})")
        else:
            seen.add((found, prediction.model))
            matched.setdefault(found, []).append(prediction)
            report.matched[prediction.model] += 1
    _log_not_used(report)
    return matched, report


def _log_not_used(report: MatchReport) -> None:
    """One line: predictions on a split the build does not select are expected (no pointers to them, no
    warning); any other prediction not used is a warning with the first few, by file and line."""
    not_built = report.reasons.get(SPLIT_NOT_BUILT.reason, 0)
    others = {reason: n for reason, n in report.reasons.items() if reason != SPLIT_NOT_BUILT.reason}
    if not others:
        if not_built:
            logger.info("%d predictions read, %d matched, %d on splits this build does not make", report.read.total(),
                        report.matched.total(), not_built)
        return
    logger.warning("%s; not used: %s (e.g. %s)", report.summary(), dict(report.reasons),
                   "; ".join(e for reason, found in report.examples.items() if reason in others for e in found))


def _not_used(report: MatchReport, reason: str, example: str) -> None:
    report.reasons[reason] += 1
    found = report.examples.setdefault(reason, [])
    if len(found) < 3:
        found.append(example)


# ---- writing -------------------------------------------------------------------------------------------


def write_predictions(predictions: Iterable[Prediction], path: Path) -> None:
    """Predictions as plain JSON lines, which :func:`read_predictions` reads back (same model, ref and output)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for p in predictions:
            ref = {key: value for key, value in p.ref.items() if key not in _NOT_REF_FIELDS}
            row = {"model": p.model, **ref, "output": p.output}
            if p.extracted:
                row["output_kind"] = "extracted"
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
