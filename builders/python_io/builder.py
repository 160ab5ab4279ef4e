"""PythonIO: predict what a program returns, as multiple choice with real models' wrong outputs.

Zhang et al. (2024), "Multiple-Choice Questions are Efficient and Robust LLM Evaluators". Each item
shows a reference program from HumanEval or MBPP and one call from its tests, and asks for the value
the call returns. Steps:

1. every ``assert`` of HumanEval's ``check`` and MBPP's ``test_list`` becomes a row; the ones of the form
   ``assert f(args) == LITERAL`` with a self-contained call become (program, call, expected) pairs;
2. each pair is verified by running the reference program on the call in the sandbox
   (:mod:`builders.core.sandbox`) and comparing the returned value with the expected one;
3. the wrong outputs that models predicted (``--predictions``, or ``--generate-with``) form a pool of
   distractors per item (:mod:`builders.from_predictions.pools`), equal values merged
   (:mod:`builders.python_io.values`);
4. each of ``--sets`` sets draws ``--choices`` - 1 of them and shuffles the options.

All of HumanEval and MBPP's test split form ``test``; MBPP's train, validation and prompt splits ``train``.

    python -m builders.python_io --source ../shared/data \\
        --predictions ../shared/data/predictions/python_io --output out/python_io
"""

from __future__ import annotations

import argparse
import ast
import decimal
import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from builders.core.items.record import MCQRecord, OpenItem, Value, normalize_text
from builders.core.items.tables import Statistics, Table
from builders.core.pipeline import api, cli
from builders.core.pipeline import legacy
from builders.core.options import argtypes
from builders.core.build.result import Check
from builders.core.pipeline.legacy import Build, Builder
from builders.core.items.outcomes import Exclude
from builders.core.sandbox import Sandbox
from builders.core.sources.loading import LoadedSource
from builders.core.sources.reading import iter_json_lines
from builders.core.sources.predictions import (
    PROBLEMS_FILE,
    MatchReport,
    Prediction,
    PredictionError,
    Unmatched,
    match_predictions,
    read_predictions,
    require_matches,
    require_texts,
    write_predictions,
)
from builders.from_predictions import collect
from builders.from_predictions import sets as mc
from builders.from_predictions.pools import Pool, build_pool, pool_report, respell
from builders.from_predictions.tasks import set_tasks, sets_table
from builders.python_io.problems import (
    BENCHMARK,
    OUTPUT_SPLIT,
    OUTPUT_SPLITS,
    VERIFY_LIMITS,
    CallPair,
    Extracted,
    Problem,
    VerificationStats,
    Verified,
    call_signature,
    extract_all,
    verify_pairs,
)
from builders.python_io.values import (
    DEFAULT_MAX_OUTPUT_CHARS,
    NotALiteral,
    PythonValueEquivalence,
    extract_predicted_output,
    nearly_equal,
    normalize_predictions,
    parse_literal,
    value_key,
)

logger = logging.getLogger(__name__)

NAME = "python_io"
TOPIC = "Python program reasoning"  # the paper's lm-eval header: "... (with answers) about <topic>."
PAPER_COUNTS = {"test": 1684, "train": 966}
CITATION = """@article{zhang2024multiple,
  title={Multiple-Choice Questions are Efficient and Robust {LLM} Evaluators},
  author={Zhang, Ziyin and Jiang, Zhaokun and Xu, Lizhen and Hao, Hongkun and Wang, Rui},
  journal={arXiv preprint arXiv:2405.11966},
  year={2024}
}"""


# ---- predictions: mapping them onto the items ------------------------------------------------------------------

PREDICTION_BENCHMARKS = ("humaneval", "mbpp")  # what a prediction row's "benchmark" field may name


class ItemIndex:
    """The item a prediction is about, for :func:`builders.core.sources.predictions.match_predictions`: by ``id`` (a plain
    row's, or an lm-eval doc's), else by (``benchmark``, ``task_id``, call). The call is the row's ``input``, else
    the one of its task in the ``problems.jsonl`` beside its file (CodeMind's layout, which also gives the gold
    the prediction was made against: another gold means another question)."""

    def __init__(self, pairs: Iterable[CallPair], golds: Mapping[str, str]):
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
        try:
            return value_key(parse_literal(gold)) == value_key(parse_literal(self.golds[item]))
        except NotALiteral:
            return False


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


# ---- predictions: asking models ----------------------------------------------------------------------------

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


def generate(pairs: Sequence[CallPair], options: Options) -> tuple[list[Prediction], dict[str, int]]:
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
    assert options.llm is not None, "DistractorOptions.fields_from makes it with --generate-with"
    run = generate_predictions(options.generate_with, {"items": ids}, request_for, options.llm)
    predictions = [replace(p, ref={"id": ids[p.ref["question_index"]]}) for p in run.predictions]
    if options.save_predictions:
        write_predictions(predictions, options.save_predictions)
    return predictions, dict(run.failures)


# A source split feeds the same PythonIO split whichever part it is from (only MBPP has train/validation/prompt).
SOURCE_SPLIT_OUTPUT = {split: output for (_, split), output in OUTPUT_SPLIT.items()}

# ---- the build -------------------------------------------------------------------------------------------------

METADATA_FEATURES = {
    **mc.METADATA_FEATURES,
    "benchmark": Value("string"),
    "task_id": Value("string"),
    "program": Value("string"),
    "call": Value("string"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = collect.add_distractor_arguments(parser, "PythonIO distractors", random_allowed=False)
    group.add_argument("--keep-docstrings", action="store_true",
                       help="show the programs with their docstrings (their examples often give the answer away)")
    group.add_argument("--max-output-chars", type=argtypes.positive_int, default=DEFAULT_MAX_OUTPUT_CHARS,
                       help="longest value (as text) kept as an option; longer golds exclude the item")
    group.add_argument("--call-timeout", type=argtypes.seconds, default=5.0, help="seconds one call may run")
    sandbox = legacy.runtime_group(parser, "sandbox (every reference program runs only here; predictions are read, never run)")
    sandbox.add_argument("--unsafe-no-sandbox", action="store_true",
                         help="run the programs as plain subprocesses when bubblewrap is unavailable (NOT isolated)")
    sandbox.add_argument("--sandbox-workers", type=argtypes.positive_int, default=None, help="parallel sandboxes (default: CPU count)")


def check_arguments(args: argparse.Namespace) -> None:
    collect.check_arguments(args)
    if not args.unsafe_no_sandbox:
        Sandbox.check()  # before any source is read: bubblewrap missing is one line, not a late traceback


@dataclass(frozen=True)
class Options(collect.DistractorOptions):
    """PythonIO's options, made once from the parsed arguments."""

    keep_docstrings: bool
    max_output_chars: int
    call_timeout: float
    unsafe_no_sandbox: bool
    sandbox_workers: int | None  # None: one per CPU

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(**cls.fields_from(args), keep_docstrings=args.keep_docstrings,
                   max_output_chars=args.max_output_chars, call_timeout=args.call_timeout,
                   unsafe_no_sandbox=args.unsafe_no_sandbox, sandbox_workers=args.sandbox_workers)


def make_sandbox(options: Options) -> Sandbox:
    """The sandbox, or SandboxUnavailable (a user error saying how to install bubblewrap)."""
    return Sandbox(limits=VERIFY_LIMITS, workers=options.sandbox_workers, unsafe=options.unsafe_no_sandbox)


def question_text(pair: CallPair) -> str:
    call = f"`{pair.call}`" if "\n" not in pair.call and "`" not in pair.call else f"\n\n```python\n{pair.call}\n```\n"
    return (f"Consider the following Python program.\n\n```python\n{pair.problem.program.rstrip()}\n```\n\n"
            f"What does {call} return?")


def open_item(verified: Verified) -> OpenItem:
    pair, problem = verified.pair, verified.pair.problem
    return OpenItem(pair.id, problem.split, problem.source_index, question_text(pair), verified.gold,
                    pair.expected_text, "", problem.source_config, category=problem.benchmark,
                    metadata={"benchmark": problem.benchmark, "task_id": problem.task_id, "program": problem.program,
                              "call": pair.call})


def without_text_clashes(pool: Pool) -> tuple[Pool, int]:
    """Drop candidates whose text equals the gold's or a more frequent candidate's up to whitespace
    (``'a  b'`` vs ``'a b'``): different values, but the shared validator refuses options that differ only
    so. Case matters there (:func:`builders.core.items.record.normalize_text`), so ``'HEO'`` and ``'heo'`` both stay.
    Returns the pool and how many were dropped."""
    seen = {normalize_text(pool.gold)}
    kept = []
    for candidate in pool.candidates:  # most frequent first
        text = normalize_text(candidate.text)
        if text not in seen:
            seen.add(text)
            kept.append(candidate)
    return replace(pool, candidates=kept), len(pool.candidates) - len(kept)


def without_near_gold(pool: Pool) -> tuple[Pool, int]:
    """Drop candidates whose value differs from the gold's only in float rounding (:func:`nearly_equal`):
    a reader who works the program out right cannot tell them from the gold. Returns the pool and how many
    were dropped."""
    try:
        gold = parse_literal(pool.gold)
    except NotALiteral:
        return pool, 0
    kept = []
    for candidate in pool.candidates:
        try:
            near = nearly_equal(gold, parse_literal(candidate.text))
        except NotALiteral:
            near = False
        if not near:
            kept.append(candidate)
    return replace(pool, candidates=kept), len(pool.candidates) - len(kept)


def make_pools(verified: Sequence[Verified], matched: Mapping[str, Sequence[Prediction]], max_chars: int) -> tuple[dict[str, Pool], dict[str, Any]]:
    """One pool per verified item, from its predictions (item id -> predictions); and counts for the card.

    The pool sees the spellings models wrote (so ``[1,2]`` joining ``[1, 2]`` counts as a merge and stays
    in ``variants``); each option shows the canonical spelling of its value. A predicted text that is no
    literal (:func:`normalize_predictions`: read, never run) is invalid for its model and counted as
    ``not_a_literal``."""
    calls = {v.pair.id: v.pair.call for v in verified}
    by_item = {item: [(p.model, predicted_output(p, calls[item])) for p in predictions]
               for item, predictions in matched.items()}
    texts = [text for answers in by_item.values() for _, text in answers if text]
    canonical = normalize_predictions(texts, max_chars)
    equivalence = PythonValueEquivalence(max_chars, canonical)
    pools, clashes, near = {}, 0, 0
    for v in verified:
        pool = respell(build_pool(v.pair.id, v.gold, by_item.get(v.pair.id, []), equivalence), equivalence.spell)
        pool, dropped = without_text_clashes(pool)
        pool, rounded = without_near_gold(pool)
        pools[v.pair.id] = pool
        clashes += dropped
        near += rounded
    counts = {"distinct_outputs": len(canonical), "valid_values": sum(1 for c in canonical.values() if c),
              "not_a_literal": sum(1 for text in texts if canonical[text.strip()] is None),
              "case_clashes_dropped": clashes, "near_gold_dropped": near,
              "items_with_predictions": sum(1 for v in verified if by_item.get(v.pair.id))}
    return pools, counts


def build(source: LoadedSource, options: Options) -> Build:
    predictions = read_predictions(options.predictions, benchmark=PREDICTION_BENCHMARKS)  # a bad file stops before
    require_texts(predictions, NAME)                                                  # the sandbox runs
    sandbox = make_sandbox(options)
    extracted = extract_all(source.records(), OUTPUT_SPLITS, options.keep_docstrings)
    verified, failed, verification = verify_pairs(extracted.pairs, sandbox, options.max_output_chars, options.call_timeout)
    golds = {v.pair.id: v.gold for v in verified}
    matched, report, failures = collect_all(predictions, extracted.pairs, verified, golds, options)
    pools, pool_counts = make_pools(verified, matched, options.max_output_chars)
    if options.pool:
        collect.write_pool_report(options.pool, pool_report(pools.values()))
    items = {split: [open_item(v) for v in verified if v.pair.problem.split == split]
             for split in OUTPUT_SPLITS if split in extracted.rows_in}
    set_options = mc.SetOptions(NAME, options.choices, options.sets, options.seed, options.draw)
    configs, exclusions, outcomes = mc.build_sets(items, pools, set_options, source.dataset,
                                        no_predictions={v.pair.id for v in verified} - set(matched))
    configs = _with_provenance(configs, {v.pair.id: v.pair.problem for v in verified})
    # Extraction makes one row per assert of a problem, and verification runs the calls in sandbox batches: neither
    # is a per-item step. Their rejections are excluded here; the sets' steps count every verified item.
    for rejected in extracted.rejected + failed:
        exclusions.add(rejected.problem.split, rejected.id, rejected.problem.source_index, rejected.step, rejected.error)
    rows_in = Counter(extracted.rows_in)
    for entry in source.exclusions.entries:  # malformed source rows: one row in each, excluded with their reason
        split = SOURCE_SPLIT_OUTPUT.get(entry.split, entry.split)
        exclusions.add(split, entry.id, entry.source_index, entry.step, Exclude(entry.reason, entry.field, entry.detail),
                       entry.config)
        rows_in[split] += 1
    equivalence = PythonValueEquivalence(options.max_output_chars)
    statistics = _statistics(extracted, verified, verification, report, failures, pools, pool_counts, configs, options)
    return Build(
        builder=NAME,
        title="PythonIO",
        method_citation=CITATION,
        source=source,
        params={},
        rows_in=dict(rows_in),
        configs=configs,
        metadata_features={name: METADATA_FEATURES for name in configs},
        exclusions=exclusions,
        outcomes=outcomes,
        checks=[*mc.make_checks(golds, equivalence.same, pools),
                mc.second_reading_check("one_gold_literal_eval", "with the standard library's ast.literal_eval and "
                                        "==, apart from the builder's value keys", golds, literally_equal),
                Check("no_rounded_gold", "no distractor is the gold rounded to the decimals it shows (re-read with "
                      "ast.literal_eval and decimal, apart from the builder's rule)",
                      lambda build: rounded_gold_violations(build, golds))],
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()},
        card_context=_card_context(options, report),
        lm_eval_tasks=lambda location: set_tasks(NAME, TOPIC, configs, location),
    )


def rounded_gold_violations(build: Build, golds: Mapping[str, str]) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            gold = _plain_reading(golds[record.id])
            for index, choice in enumerate(record.choices):
                if index != record.answer and _rounds_gold(gold, _plain_reading(choice), choice.strip()):
                    yield f"{config}/{split} {record.id}: option {index} ({choice}) is the gold rounded"


def _rounds_gold(gold: tuple[str, Any], option: tuple[str, Any], text: str) -> bool:
    """A float option written with k decimals equals the number gold rounded half-up to k decimals."""
    (gold_kind, exact), (kind, shown) = gold, option
    if gold_kind != "value" or kind != "value" or not isinstance(shown, float) or isinstance(exact, bool):
        return False
    if not isinstance(exact, (int, float)) or exact == shown or not all(map(math.isfinite, (exact, shown))):
        return False
    if "e" in text.lower():
        return False
    written = decimal.Decimal(text)
    if not isinstance(written.as_tuple().exponent, int) or written.as_tuple().exponent >= 0:
        return False
    return decimal.Decimal(repr(exact)).quantize(written, rounding=decimal.ROUND_HALF_UP) == written


def literally_equal(a: str, b: str) -> bool:
    """Two options as the standard library reads them: literal values compare with Python's ==; text that is
    no literal compares as text. Only data is parsed (never evaluated), so outputs stay untrusted text."""
    return _plain_reading(a) == _plain_reading(b)


def _plain_reading(text: str) -> tuple[str, Any]:
    try:
        return "value", ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return "text", " ".join(text.split())


def collect_all(predictions: Sequence[Prediction], pairs: Sequence[CallPair], verified: Sequence[Verified],
                golds: Mapping[str, str], options: Options
                ) -> tuple[dict[str, list[Prediction]], MatchReport, dict[str, int]]:
    """The read and generated predictions per verified item, how they matched, and failed requests per model."""
    index = ItemIndex(pairs, golds)
    require_matches(predictions, index, "a verified item")  # before any paid generation
    failures: dict[str, int] = {}
    if options.generate_with:
        generated, failures = generate([v.pair for v in verified], options)
        predictions = [*predictions, *generated]
    matched, report = match_predictions(predictions, index)
    return matched, report, failures


def _with_provenance(configs, problems: Mapping[str, Problem]):
    """Records name their own source dataset and split (MBPP's validation rows feed ``train``)."""
    def fix(record: MCQRecord) -> MCQRecord:
        problem = problems[record.id]
        return record.replace(source=BENCHMARK.part(problem.benchmark).hub_id, source_config=problem.source_config,
                              source_split=problem.source_split)

    fixed: dict[str, dict[str, list[MCQRecord]]] = {}
    for name, splits in configs.items():
        fixed[name] = {split: [fix(r) for r in records] for split, records in splits.items()}
    return fixed


# ---- statistics for the card -------------------------------------------------------------------------------


def _statistics(extracted: Extracted, verified, verification: VerificationStats, report: MatchReport,
                failures: Mapping[str, int], pools: Mapping[str, Pool], pool_counts: Mapping[str, Any],
                configs, options: Options) -> Statistics:
    statistics = Statistics([*_pair_tables(extracted, verified, configs), _verification_table(verification, options),
                             *_prediction_tables(report, failures, pool_counts)])
    statistics.extend(mc.pool_statistics(list(pools.values()), options.choices))
    statistics.add(mc.position_table(configs))
    return statistics


def _pair_tables(extracted: Extracted, verified: Sequence[Verified], configs) -> list[Table]:
    rows_in: Counter = Counter()
    pairs: Counter = Counter()
    kept: Counter = Counter()
    for item in extracted.pairs:
        pairs[(item.problem.benchmark, item.problem.split)] += 1
    for item in extracted.rejected:
        rows_in[(item.problem.benchmark, item.problem.split)] += 1
    rows_in.update(pairs)
    for v in verified:
        kept[(v.pair.problem.benchmark, v.pair.problem.split)] += 1
    default = configs.get("default", {})
    per_split = [(split, sum(n for (b, s), n in kept.items() if s == split), len(default[split]), PAPER_COUNTS[split])
                 for split in OUTPUT_SPLITS if split in default]
    return [
        Table("Pairs from the tests", ("source", "split", "assert statements", "(program, call, literal) pairs",
                                       "verified"),
              [(b, s, rows_in[(b, s)], pairs[(b, s)], kept[(b, s)]) for b, s in sorted(rows_in)]),
        Table("Items per split", ("split", "verified pairs", "items with enough distractors", "paper"), per_split,
              note="Next to the paper's PythonIO (which does not say how it filtered)."),
    ]


def _verification_table(stats: VerificationStats, options: Options) -> Table:
    mode = ("**without isolation** (`--unsafe-no-sandbox`)" if options.unsafe_no_sandbox
            else "in bubblewrap sandboxes (no network, read-only root, private /tmp, rlimits)")
    return Table("Verification in the sandbox", ("quantity", "value"),
                 [("calls", stats.pairs), ("sandbox runs", stats.runs), ("rounds", stats.rounds),
                  ("seconds per call (limit)", options.call_timeout), ("memory limit", stats.mechanism)],
                 note=f"Every reference program ran {mode}, in a forked process of its own; a fresh one after a call "
                      "that overran its time. Timings (seconds, runs and calls per second) go to the build log, not "
                      "here: the same build gives the same card on any machine.")


def _prediction_tables(report: MatchReport, failures: Mapping[str, int], counts: Mapping[str, Any]) -> list[Table]:
    tables = [Table("Predictions", ("quantity", "count"),
                    [("rows read or generated", report.read.total()),
                     ("rows that map onto an item", report.matched.total()),
                     ("verified items with a prediction", counts["items_with_predictions"]),
                     ("distinct predicted texts", counts["distinct_outputs"]),
                     ("of which a Python value", counts["valid_values"]),
                     ("rows whose text is not a literal (not_a_literal)", counts["not_a_literal"]),
                     ("candidates equal to another option up to whitespace", counts["case_clashes_dropped"]),
                     ("candidates equal to the gold up to float rounding", counts["near_gold_dropped"])],
                    note="A predicted text is a Python value when it is a literal (or set(), frozenset(...), "
                         "float('inf'), float('-inf') or complex(...) of literals). It is read, never run: any other "
                         "text, an expression included, is not_a_literal and counts as invalid for its model.")]
    if report.reasons:
        tables.append(Table("Prediction rows not used", ("reason", "rows"), sorted(report.reasons.items())))
    if any(failures.values()):
        tables.append(Table("Requests that failed for good (left out)", ("model", "requests"),
                            sorted((m, n) for m, n in failures.items() if n)))
    return tables


def _card_context(options: Options, report: MatchReport) -> dict[str, Any]:
    return {
        "choices": options.choices, "sets": options.sets, "draw": options.draw, "keep_docstrings": options.keep_docstrings,
        "unsafe": options.unsafe_no_sandbox, "call_timeout": options.call_timeout,
        "max_output_chars": options.max_output_chars, "paper_counts": PAPER_COUNTS,
        "generated_models": list(options.generate_with), "prediction_files": len(options.predictions),
        "models": sorted(report.matched),
    }


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [BENCHMARK], add_arguments, build, check_arguments,
                  llm_models=lambda options: list(options.generate_with), evaluation_table=sets_table,
                  make_options=Options.from_args)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build PythonIO from rows in memory: ``{"humaneval": {split: rows}, "mbpp": {split: rows}}``."""
    return api.build_dataset(BUILDER, data, **options)
