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

The parts: :mod:`.problems` (the source, one row per assert), :mod:`.verify` (the sandbox runs),
:mod:`.predictions` (reading and asking for predictions), :mod:`.pools` (each item's distractors),
:mod:`.transform` (the steps), :mod:`.checks`, :mod:`.card_statistics`, :mod:`.tasks` (lm-eval),
:mod:`.evaluation`; this module is the builder: its options and its build.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.items.record import Value
from builders.core.options.argtypes import positive_int, seconds
from builders.core.options.declare import option
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.steps import Run
from builders.core.sandbox import Sandbox
from builders.core.sources.loading import LoadedSource
from builders.core.sources.predictions import read_predictions, require_texts
from builders.from_predictions import sets as mc
from builders.from_predictions.collect import write_pool_report
from builders.from_predictions.options import PredictionOptions
from builders.from_predictions.pools import pool_report

from .card_statistics import card_context, statistics
from .checks import checks
from .evaluation import evaluation_table
from .problems import BENCHMARK, NAME, OUTPUT_SPLIT, CallPair, extract_rows
from .tasks import lm_eval_tasks
from .transform import Distractors, Verification, steps
from .values import DEFAULT_MAX_OUTPUT_CHARS
from .verify import VERIFY_LIMITS

PREDICTION_BENCHMARKS = ("humaneval", "mbpp")  # what a prediction row's "benchmark" field may name
SANDBOX = "sandbox (every reference program runs only here; predictions are read, never run)"
# A source split feeds the same PythonIO split whichever part it is from (only MBPP has train/validation/prompt).
SOURCE_SPLIT_OUTPUT = {split: output for (_, split), output in OUTPUT_SPLIT.items()}
METADATA_FEATURES = {
    **mc.METADATA_FEATURES,
    "benchmark": Value("string"),
    "task_id": Value("string"),
    "program": Value("string"),
    "call": Value("string"),
}
CITATION = mc.PAPER_CITATION


@dataclass(frozen=True, kw_only=True)
class Options(PredictionOptions):
    """PythonIO's options (the LLM endpoint is ``--generate-with``'s)."""

    GROUP: ClassVar[str] = "PythonIO"

    keep_docstrings: bool = option(False, help="show the programs with their docstrings (their examples often give "
                                               "the answer away)")
    max_output_chars: int = option(DEFAULT_MAX_OUTPUT_CHARS, type=positive_int,
                                   help="longest value (as text) kept as an option; longer golds exclude the item")
    call_timeout: float = option(5.0, type=seconds, help="CPU seconds one call may use (one that waits is stopped after 3 times that)")
    unsafe_no_sandbox: bool = option(False, runtime=True, group=SANDBOX,
                                     help="run the programs as plain subprocesses when bubblewrap is unavailable "
                                          "(NOT isolated)")
    sandbox_workers: int | None = option(None, type=positive_int, runtime=True, group=SANDBOX,
                                         help="parallel sandboxes (default: CPU count)")

    def check(self) -> None:
        if not self.unsafe_no_sandbox:
            Sandbox.check()  # before any source is read: bubblewrap missing is one line, not a late traceback


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    predictions = read_predictions(options.predictions, benchmark=PREDICTION_BENCHMARKS)  # a bad file stops before
    require_texts(predictions, NAME)                                                      # the sandbox runs
    sandbox = Sandbox(limits=VERIFY_LIMITS, workers=options.sandbox_workers, unsafe=options.unsafe_no_sandbox)
    verification = Verification(sandbox, options.max_output_chars, options.call_timeout)
    rows = extract_rows(source.records(), options.keep_docstrings)
    pairs = [row for split_rows in rows.values() for row in split_rows if isinstance(row, CallPair)]
    distractors = Distractors(predictions, pairs, options, options.max_output_chars)
    # the rows are the asserts, in PythonIO's splits: a malformed source row is one row of the split it feeds
    run.feed_splits(SOURCE_SPLIT_OUTPUT)
    excluded = Counter(SOURCE_SPLIT_OUTPUT.get(entry.split, entry.split) for entry in source.exclusions.entries)
    rows_in = {split: len(rows.get(split, ())) + excluded[split] for split in [*rows, *excluded]}
    configs = run.make(mc.config_names(options.sets), steps(verification, distractors),
                       items={split: rows.get(split, []) for split in rows_in})
    golds = {v.pair.id: v.gold for v in verification.verified}
    pools = pool_report(distractors.pools.values())
    if options.pool:
        write_pool_report(options.pool, pools)
    return Release(
        metadata_features={name: METADATA_FEATURES for name in configs},
        rows_in=rows_in,
        checks=checks(golds, distractors.pools, options.max_output_chars),
        statistics=statistics(rows, verification, distractors, configs, options),
        extra_files={"pools.jsonl": pools.encode()},
        card_context=card_context(options, distractors.report, configs),
        lm_eval_tasks=lm_eval_tasks(configs),
    )


BUILDER = Builder(name=NAME, title="PythonIO", description=__doc__.split("\n\n")[0], citation=CITATION,
                  benchmarks=[BENCHMARK], options=Options, build=build, default_config="default",
                  evaluation_table=evaluation_table)
