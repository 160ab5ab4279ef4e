"""The predictions behind the distractors: reading them onto the items, and asking models for them.

A prediction names its item by ``id`` (a plain row's, or an lm-eval doc's), else by (``benchmark``, ``task_id``,
call): CodeMind's layout, whose ``problems.jsonl`` beside the predictions gives each task's call and the gold the
prediction was made against (another gold means another question). ``--generate-with`` asks each model the
one-shot output-prediction prompt, greedy.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from builders.core.sources.predictions import (
    PROBLEMS_FILE,
    MatchReport,
    Prediction,
    PredictionError,
    Unmatched,
    match_predictions,
    require_matches,
    write_predictions,
)
from builders.core.sources.reading import iter_json_lines
from builders.from_predictions.options import PredictionOptions

from .problems import CallPair, call_signature
from .values import NotALiteral, extract_predicted_output, parse_literal, value_key
from .verify import Verified

PREDICTION_BENCHMARKS = ("humaneval", "mbpp")  # what a prediction row's "benchmark" field may name


class ItemIndex:
    """The item a prediction is about, for :func:`builders.core.sources.predictions.match_predictions`: by ``id`` (a plain
    row's, or an lm-eval doc's), else by (``benchmark``, ``task_id``, call). The call is the row's ``input``, else
    the one of its task in the ``problems.jsonl`` beside its file (CodeMind's layout, which also gives the gold
    the prediction was made against: another gold means another question)."""

    def __init__(self, pairs: Sequence[CallPair], golds: Mapping[str, str]):
        self.ids = {pair.id for pair in pairs}
        self.golds = golds
        self.by_call: dict[tuple[str, str, str], str] = {}
        for pair in pairs:
            self.by_call[(pair.problem.benchmark, _task_number(pair.problem.task_id), call_signature(pair.call))] = pair.id
        self.problems: dict[Path, dict[tuple[str, str], dict]] = {}  # file -> its problems.jsonl by task

    def __call__(self, prediction: Prediction) -> str | Unmatched:
        ref = prediction.ref
        if isinstance(ref.get("id"), str):
            if ref["id"] not in self.ids:
                return Unmatched("unknown_id")
            return ref["id"] if ref["id"] in self.golds else Unmatched("item_not_verified")
        benchmark, task = ref.get("benchmark"), ref.get("task_id")
        if not isinstance(benchmark, str) or task is None:
            return Unmatched("no_id_or_call")
        if not isinstance(task, (str, int)) or isinstance(task, bool):
            raise PredictionError(f"{prediction.origin}: field 'task_id' must be a string or an integer, "
                                  f"got {type(task).__name__}")
        if ref.get("input") is not None and not isinstance(ref["input"], str):
            raise PredictionError(f"{prediction.origin}: field 'input' must be a string (the call), "
                                  f"got {type(ref['input']).__name__}")
        problem = self._problems_beside(prediction.file).get((benchmark.lower(), _task_number(str(task))), {})
        call = ref.get("input") or problem.get("input")
        if not isinstance(call, str):
            return Unmatched("no_id_or_call")
        try:
            signature = call_signature(call)
        except (SyntaxError, ValueError, RecursionError):
            return Unmatched("call_unparseable")
        found = self.by_call.get((benchmark.lower(), _task_number(str(task)), signature))
        if found is None:
            return Unmatched("call_not_among_items")
        if found not in self.golds:
            return Unmatched("item_not_verified")
        gold = ref.get("gold_output", problem.get("gold_output"))
        if gold is not None and not self._same_gold(found, str(gold)):
            return Unmatched("gold_disagrees")
        return found

    def _problems_beside(self, file: Path) -> dict[tuple[str, str], dict]:
        """The ``problems.jsonl`` beside a predictions file, by (benchmark, task number). A malformed row
        (a field missing or of the wrong type, a task twice) is one error naming its line and field: it
        would otherwise turn its task's predictions into unused rows, or pair them with the wrong call."""
        if file not in self.problems:
            beside = file.parent / PROBLEMS_FILE
            table: dict[tuple[str, str], dict] = {}
            lines: dict[tuple[str, str], int] = {}
            if beside.is_file() and beside != file:
                for line, row in iter_json_lines(beside, PredictionError):
                    key = _problem_key(row, f"{beside}:{line}")
                    if key in table:
                        raise PredictionError(f"{beside}:{line}: field 'task_id': task {key[1]} of {key[0]} "
                                              f"again (first on line {lines[key]})")
                    table[key], lines[key] = row, line
            self.problems[file] = table
        return self.problems[file]

    def _same_gold(self, item: str, gold: str) -> bool:
        """Predictions made against another gold answered another question (e.g. another program)."""
        mine, theirs = _literal_key(gold), _literal_key(self.golds[item])
        return mine is not None and mine == theirs


@lru_cache(maxsize=1 << 16)  # every prediction of a call gives its gold again: each distinct text is read once
def _literal_key(text: str) -> Hashable | None:
    """The value key of a literal text, None when it is not one."""
    try:
        return value_key(parse_literal(text))
    except NotALiteral:
        return None


def _problem_key(row: Mapping[str, Any], where: str) -> tuple[str, str]:
    """(benchmark, task number) of a CodeMind problem row, its fields checked."""
    for name, kinds in (("benchmark", (str,)), ("task_id", (str, int)), ("input", (str,))):
        value = row.get(name)
        if not isinstance(value, kinds) or isinstance(value, bool) or (isinstance(value, str) and not value.strip()):
            raise PredictionError(f"{where}: field {name!r} must be a non-empty "
                                  f"{'string' if kinds == (str,) else 'string or integer'}, got {type(value).__name__}")
    if not isinstance(row.get("gold_output", ""), str):
        raise PredictionError(f"{where}: field 'gold_output' must be a string, got {type(row['gold_output']).__name__}")
    return row["benchmark"].lower(), _task_number(str(row["task_id"]))


def _task_number(task_id: str) -> str:
    return task_id.split("/")[-1].strip()


def predicted_output(prediction: Prediction, call: str) -> str | None:
    """The predicted value's text: the output as given when already extracted, else read from the reply."""
    if prediction.output is None:
        return None
    text = prediction.output if prediction.extracted else extract_predicted_output(str(prediction.output), call)
    return text.strip() if text and text.strip() else None



PROMPT_VERSION = "python-io-output-v1"
PROMPT = """You are given a Python program and a call to one of its functions. Work out the exact value \
the call returns. Give the value as a Python literal, completing the assertion between [ANSWER] and \
[/ANSWER], as in the example.

[PYTHON]
def f(text, suffix):
    words = text.split()
    return [w + suffix for w in words if len(w) > 2]
[/PYTHON]
[CALL]
f("an old oak tree", "!")
[/CALL]
[ANSWER]
assert f("an old oak tree", "!") == ['old!', 'oak!', 'tree!']
[/ANSWER]

[PYTHON]
{program}
[/PYTHON]
[CALL]
{call}
[/CALL]
"""
DEFAULT_MAX_TOKENS = 512


def prediction_prompt(pair: CallPair) -> str:
    return PROMPT.format(program=pair.problem.program.rstrip("\n"), call=pair.call)


def generate(pairs: Sequence[CallPair], options: PredictionOptions) -> tuple[list[Prediction], dict[str, int]]:
    """Greedy output predictions of each ``--generate-with`` model, named by item id (cached; failed requests
    left out)."""
    from builders.core.llm.settings import ChatRequest
    from builders.from_predictions.generate import generate_predictions

    by_id = {pair.id: pair for pair in pairs}
    max_tokens = options.max_tokens or DEFAULT_MAX_TOKENS

    def request_for(pair_id: str) -> ChatRequest:
        return ChatRequest.from_prompt(prediction_prompt(by_id[pair_id]), temperature=0.0, max_tokens=max_tokens,
                                       template_version=PROMPT_VERSION)

    ids = [pair.id for pair in pairs]
    run = generate_predictions(options.generate_with, {"items": ids}, request_for, options.llm)
    predictions = [replace(p, ref={"id": ids[p.ref["question_index"]]}) for p in run.predictions]
    if options.save_predictions:
        write_predictions(predictions, options.save_predictions)
    return predictions, dict(run.failures)


def collect(predictions: Sequence[Prediction], pairs: Sequence[CallPair], verified: Sequence[Verified],
            options: PredictionOptions) -> tuple[dict[str, list[Prediction]], MatchReport, dict[str, int]]:
    """The read and generated predictions per verified item, how they matched (``pairs``: every pair, verified or
    not), and failed requests per model."""
    index = ItemIndex(pairs, {v.pair.id: v.gold for v in verified})
    require_matches(predictions, index, "a verified item")  # before any paid generation
    failures: dict[str, int] = {}
    if options.generate_with:
        generated, failures = generate([v.pair for v in verified], options)
        predictions = [*predictions, *generated]
    matched, report = match_predictions(predictions, index)
    return matched, report, failures

