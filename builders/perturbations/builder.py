"""Leaderboard-sensitivity perturbations: choice order, gold position, symbols, prompt wording, context.

Alzahrani et al. (2024), "When Benchmarks are Targets". Every config is one small, meaning-preserving
change to the benchmark; every split is transformed, the few-shot split included, so demonstrations
carry the perturbation too. Each record has ``labels`` (the symbol shown for each option), ``fewshot``
(its demonstrations' ids, drawn from the few-shot split by the per-item generator) and ``prompt`` (the
rendered MMLU-style symbol-scoring prompt), and the release holds an lm-eval task folder per config for
the symbol, hybrid and cloze scoring methods.

    python -m builders.perturbations --benchmark mmlu --source ../shared/data/mmlu --output out/

Items whose options depend on their positions ("All of the above", "Both A and B", "None of these",
letter references) are excluded from the order, gold-position and symbol configs, with the reason.
"""

from __future__ import annotations

import argparse
import json
import logging
import pprint
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
from datasets import Value

from builders.perturbations import prompts
from builders.core import cli
from builders.core.adapters import BENCHMARKS, LETTERS, LoadedSource
from builders.core.build import Build, Check
from builders.core.options import position_dependent_reason
from builders.core.record import MCQRecord, list_of
from builders.core.rng import item_rng
from builders.core.steps import Exclude, ExclusionLog, StepCounters, run_steps

logger = logging.getLogger(__name__)

NAME = "perturbations"
BENCHMARK_NAMES = [name for name, benchmark in BENCHMARKS.items() if benchmark.fewshot_split]
TRIVIAL_FILE = Path(__file__).resolve().parent / "trivial_fewshot.jsonl"
TASKS_DIR = "lm_eval"

# The paper's two symbol sets; options beyond the fourth take the extension, in order. The common
# extension stays with ASCII punctuation, the rare one with Latin/Cyrillic letters rarely used as labels.
SYMBOL_SETS: dict[str, tuple[str, ...]] = {"common": ("$", "&", "#", "@"), "rare": ("œ", "§", "З", "ü")}
SYMBOL_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "common": ("%", "*", "+", "=", "~", "^"),
    "rare": ("ß", "Ж", "ø", "¶", "Ð", "þ"),
}
PERTURBATION_FEATURES = {
    "permutation": list_of(Value("int32")),
    "original_answer": Value("int32"),
    "context_answer": Value("int32"),
}
COLUMN_FEATURES = {
    "labels": list_of(Value("string")),
    "fewshot": list_of(Value("string")),
    "prompt": Value("string"),
}
CITATION = """@inproceedings{alzahrani2024benchmarks,
  title={When Benchmarks are Targets: Revealing the Sensitivity of Large Language Model Leaderboards},
  author={Alzahrani, Norah and Alyahya, Hisham Abdullah and Alnumay, Yazeed and Alrashed, Sultan and Alsubaie, Shaykhah and Almushaykeh, Yusef and Mirza, Faisal and Alotaibi, Nouf and Altwairesh, Nora and Alowisheq, Areeb and Bari, M Saiful and Khan, Haidar},
  booktitle={Proceedings of ACL},
  year={2024}
}"""


def symbols(name: str) -> tuple[str, ...]:
    return SYMBOL_SETS[name] + SYMBOL_EXTENSIONS[name]


# ---- the configs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigSpec:
    """What one config changes. ``transformed`` says which splits get the option/label change."""

    name: str
    family: str
    description: str
    order: str = "keep"  # keep | swap_fixed | derangement | shuffle | gold_at
    gold_position: int | None = None
    transformed: str = "all"  # all | fewshot (only the few-shot split: the paper's setting i)
    symbols: str | None = None  # a SYMBOL_SETS key; None: letters A, B, C, ...
    symbol_order: str = "fixed"  # fixed | shuffled (per item)
    demonstrations: str = "same_subject"  # same_subject | other_subject | trivial | none
    context_answer: str | None = None  # correct | wrong: the item itself, answered, as the last demonstration
    with_subject: bool = True
    answer_prefix: str = prompts.ANSWER_PREFIX

    @property
    def excludes_position_dependent(self) -> bool:
        return self.order != "keep" or self.symbols is not None

    def transforms(self, split: str, fewshot_split: str | None) -> bool:
        return self.transformed == "all" or split == fewshot_split


def config_specs(positions: int, with_other_subjects: bool = True) -> list[ConfigSpec]:
    """Every config, in release order; ``positions`` is the largest number of options of any item."""
    letters = LETTERS[:positions]
    specs = [
        ConfigSpec("original", "original", "the source unchanged (the baseline)"),
        ConfigSpec("swap_fixed", "choice_order", "one fixed set of position swaps applied to every item", order="swap_fixed"),
        ConfigSpec("derangement", "choice_order", "a per-item random permutation in which every option moves", order="derangement"),
        ConfigSpec("shuffle", "choice_order", "a per-item random permutation", order="shuffle"),
    ]
    specs += [ConfigSpec(f"gold_at_{L}", "gold_position", f"the gold swapped to {L} in every split; zero-shot",
                         order="gold_at", gold_position=i, demonstrations="none") for i, L in enumerate(letters)]
    specs += [ConfigSpec(f"fewshot_gold_at_{L}", "gold_position",
                         f"only the few-shot split has its gold swapped to {L}; other splits unchanged (setting i)",
                         order="gold_at", gold_position=i, transformed="fewshot") for i, L in enumerate(letters)]
    specs += [ConfigSpec(f"fewshot_and_test_gold_at_{L}", "gold_position",
                         f"the gold swapped to {L} in every split, demonstrations included (setting ii)",
                         order="gold_at", gold_position=i) for i, L in enumerate(letters)]
    for name, shown in SYMBOL_SETS.items():
        text = " ".join(shown)
        specs += [
            ConfigSpec(f"symbols_{name}", "symbols", f"labels {text} instead of letters", symbols=name),
            ConfigSpec(f"symbols_{name}_shuffled_symbols", "symbols",
                       f"labels {text} in a per-item random order; options in source order", symbols=name,
                       symbol_order="shuffled"),
            ConfigSpec(f"symbols_{name}_shuffled_content", "symbols",
                       f"labels {text} in order; options shuffled (the `shuffle` permutation)", symbols=name,
                       order="shuffle"),
        ]
    specs += [
        ConfigSpec("no_subject", "prompt_wording", "the instruction without the subject", with_subject=False),
        ConfigSpec("correct_answer", "prompt_wording", '"Correct answer:" instead of "Answer:"',
                   answer_prefix="Correct answer:"),
        ConfigSpec("answer_in_context", "in_context", "the item itself, with its correct answer, as the last demonstration",
                   context_answer="correct"),
        ConfigSpec("wrong_answer_in_context", "in_context",
                   "the item itself, with a wrong answer drawn per item, as the last demonstration", context_answer="wrong"),
    ]
    if with_other_subjects:
        specs.append(ConfigSpec("ood_fewshot", "in_context", "demonstrations from another subject, drawn per item",
                                demonstrations="other_subject"))
    specs.append(ConfigSpec("trivial_fewshot", "in_context",
                            "demonstrations replaced by trivial questions about text and language (shipped file)",
                            demonstrations="trivial"))
    return specs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("perturbations")
    group.add_argument("--shots", type=int, default=5,
                       help="demonstrations per prompt (gold_at_<L> configs are zero-shot)")
    group.add_argument("--swaps", default="adjacent", metavar="PAIRS",
                       help="swap_fixed's swaps: 'adjacent' (A<->B, C<->D, E<->F, ...) or letter pairs like 'AC,BD'")
    group.add_argument("--only", nargs="+", metavar="CONFIG", default=None,
                       help="build only these configs (and `original`)")
    group.add_argument("--task-prefix", default=None,
                       help="prefix of the lm-eval task names (default: perturbations_<benchmark>)")


# ---- per-item draws -------------------------------------------------------------------------------------


def subject_group(record: MCQRecord) -> str:
    return record.subject or record.category or ""


@lru_cache(maxsize=1)
def trivial_questions() -> tuple[dict[str, Any], ...]:
    """The shipped trivial questions (written for mcqforge), as rows with letter labels."""
    rows = [json.loads(line) for line in TRIVIAL_FILE.read_text(encoding="utf-8").splitlines() if line.strip()]
    return tuple({**row, "labels": list(LETTERS[: len(row["choices"])])} for row in rows)


def derangement(rng: np.random.Generator, size: int) -> list[int]:
    """A uniform random permutation without fixed points, by rejection (about e draws on average)."""
    while True:
        permutation = [int(i) for i in rng.permutation(size)]
        if all(p != i for i, p in enumerate(permutation)):
            return permutation


class ItemDraws:
    """Every per-item random draw, made once per item and shared by the configs that use it.

    Each draw comes from ``item_rng(seed, item id, NAME, purpose)``. Sharing is deliberate: `shuffle` and
    `symbols_*_shuffled_content` show the same permutation, both symbol sets the same symbol order, and
    every config the same demonstrations where it kept them, so that two configs differ only in what
    they are about. Demonstration candidates are the source's few-shot items of a subject, sorted by id
    (the source order does not matter); a config takes the first ``shots`` of the item's order that it kept.
    """

    def __init__(self, seed: int, fewshot_records: Sequence[MCQRecord]):
        self.seed = seed
        groups: dict[str, list[str]] = defaultdict(list)
        for record in fewshot_records:
            groups[subject_group(record)].append(record.id)
        self.groups = {group: sorted(ids) for group, ids in sorted(groups.items())}
        self._cache: dict[tuple[str, str], Any] = {}

    def _draw(self, record: MCQRecord, purpose: str, make: Callable[[np.random.Generator], Any]) -> Any:
        key = (record.id, purpose)
        if key not in self._cache:
            self._cache[key] = make(item_rng(self.seed, record.id, NAME, purpose))
        return self._cache[key]

    def shuffle(self, record: MCQRecord) -> list[int]:
        return self._draw(record, "shuffle", lambda rng: [int(i) for i in rng.permutation(len(record.choices))])

    def derangement(self, record: MCQRecord) -> list[int]:
        return self._draw(record, "derangement", lambda rng: derangement(rng, len(record.choices)))

    def symbol_order(self, record: MCQRecord) -> list[int]:
        return self._draw(record, "symbol_order", lambda rng: [int(i) for i in rng.permutation(len(record.choices))])

    def wrong_answer(self, record: MCQRecord, source_answer: int) -> int:
        wrong = [i for i in range(len(record.choices)) if i != source_answer]
        return self._draw(record, "wrong_answer", lambda rng: wrong[int(rng.integers(len(wrong)))])

    def same_subject(self, record: MCQRecord) -> list[str]:
        return self._ordered(record, "fewshot", self.groups.get(subject_group(record), []))

    def other_subject(self, record: MCQRecord) -> list[str]:
        others = [g for g in self.groups if g != subject_group(record)]
        if not others:
            return []
        group = self._draw(record, "ood_subject", lambda rng: others[int(rng.integers(len(others)))])
        return self._ordered(record, "ood_fewshot", self.groups[group])

    def trivial(self, record: MCQRecord) -> list[str]:
        return self._ordered(record, "trivial", [row["id"] for row in trivial_questions()])

    def _ordered(self, record: MCQRecord, purpose: str, candidates: list[str]) -> list[str]:
        return self._draw(record, purpose, lambda rng: [candidates[int(i)] for i in rng.permutation(len(candidates))])


# ---- option order and labels ---------------------------------------------------------------------------


def parse_swaps(text: str) -> tuple[tuple[int, int], ...]:
    if text == "adjacent":
        return tuple((i, i + 1) for i in range(0, len(LETTERS) - 1, 2))
    pairs = []
    for pair in text.replace(" ", "").upper().split(","):
        if len(pair) != 2 or pair[0] == pair[1] or any(c not in LETTERS for c in pair):
            raise cli.UserError(f"--swaps: {pair!r} is not a pair of two different letters (e.g. 'AC,BD')")
        pairs.append((LETTERS.index(pair[0]), LETTERS.index(pair[1])))
    used = [i for pair in pairs for i in pair]
    if len(used) != len(set(used)):
        raise cli.UserError("--swaps: a position appears in two swaps; the swaps must be disjoint")
    return tuple(pairs)


def swapped(size: int, pairs: Iterable[tuple[int, int]]) -> list[int]:
    """Identity with the given position swaps; swaps that reach past the last option are skipped."""
    permutation = list(range(size))
    for a, b in pairs:
        if a < size and b < size:
            permutation[a], permutation[b] = permutation[b], permutation[a]
    return permutation


@lru_cache(maxsize=None)
def position_reason(choices: tuple[str, ...]) -> str | None:
    """The shared detector, once per distinct option tuple (each item is seen by many configs)."""
    return position_dependent_reason(choices)


def option_order(record: MCQRecord, spec: ConfigSpec, draws: ItemDraws, swaps: tuple[tuple[int, int], ...]) -> list[int]:
    """``permutation[j]``: the source index of the option shown at position j."""
    if spec.order == "swap_fixed":
        return swapped(len(record.choices), swaps)
    if spec.order == "derangement":
        return draws.derangement(record)
    if spec.order == "shuffle":
        return draws.shuffle(record)
    if spec.order == "gold_at":
        return swapped(len(record.choices), [(record.answer, spec.gold_position)])
    return list(range(len(record.choices)))


def option_labels(record: MCQRecord, spec: ConfigSpec, draws: ItemDraws) -> list[str]:
    size = len(record.choices)
    if spec.symbols is None:
        return list(LETTERS[:size])
    available = symbols(spec.symbols)
    if size > len(available):
        raise Exclude("more_options_than_symbols", "choices", f"{size} options, {len(available)} symbols")
    if spec.symbol_order == "shuffled":
        return [available[i] for i in draws.symbol_order(record)]
    return list(available[:size])


def perturbed_fields(record: MCQRecord, spec: ConfigSpec, transformed: bool, draws: ItemDraws,
                     swaps: tuple[tuple[int, int], ...]) -> dict[str, Any]:
    """The option and label change of one config, as changes to the record; the gold is tracked by index."""
    if transformed and spec.excludes_position_dependent:
        reason = position_reason(record.choices)
        if reason:
            raise Exclude(reason, "choices")
    if transformed and spec.gold_position is not None and spec.gold_position >= len(record.choices):
        raise Exclude("fewer_options_than_gold_position", "choices", f"{len(record.choices)} options")
    size = len(record.choices)
    permutation = option_order(record, spec, draws, swaps) if transformed else list(range(size))
    labels = option_labels(record, spec, draws) if transformed else list(LETTERS[:size])
    return {
        "choices": tuple(record.choices[p] for p in permutation),
        "answer": permutation.index(record.answer),
        "metadata": {**record.metadata, "permutation": permutation, "original_answer": record.answer,
                     "context_answer": None},
        "columns": {"labels": labels},
    }


def current_fields(record: MCQRecord) -> dict[str, Any]:
    return {"choices": record.choices, "answer": record.answer, "metadata": record.metadata, "columns": record.columns}


# ---- demonstrations and prompts ---------------------------------------------------------------------


def row_view(record: MCQRecord, fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fields the prompt renderer reads, as a dataset row has them (``fields``: pending changes)."""
    fields = fields or current_fields(record)
    return {"id": record.id, "question": record.question, "choices": fields["choices"],
            "labels": fields["columns"]["labels"], "answer": fields["answer"], "subject": record.subject,
            "category": record.category, "metadata": fields["metadata"]}


class PromptRenderer:
    """Adds one config's demonstrations and prompts; each demonstration's block is rendered once."""

    def __init__(self, spec: ConfigSpec, pool: Mapping[str, MCQRecord], draws: ItemDraws, shots: int):
        self.spec, self.pool, self.draws, self.shots = spec, pool, draws, shots
        self._blocks: dict[str, str] = {}

    def demonstration_ids(self, record: MCQRecord) -> list[str]:
        kind = self.spec.demonstrations
        if kind == "none" or self.shots == 0:
            return []
        if kind == "trivial":
            return self.draws.trivial(record)[: self.shots]
        order = self.draws.same_subject(record) if kind == "same_subject" else self.draws.other_subject(record)
        return [i for i in order if i in self.pool and i != record.id][: self.shots]

    def context_answer(self, record: MCQRecord, fields: Mapping[str, Any]) -> int | None:
        """The answer the item's own demonstration shows (in-context configs), as a displayed position."""
        if self.spec.context_answer == "correct":
            return fields["answer"]
        if self.spec.context_answer == "wrong":  # drawn among the source's wrong options
            source_answer = fields["metadata"]["original_answer"]
            return fields["metadata"]["permutation"].index(self.draws.wrong_answer(record, source_answer))
        return None

    def complete(self, record: MCQRecord, fields: dict[str, Any]) -> dict[str, Any]:
        """``fields`` plus the demonstrations and the rendered symbol prompt."""
        fewshot = self.demonstration_ids(record)
        shown = self.context_answer(record, fields)
        if shown is not None:
            fields = {**fields, "metadata": {**fields["metadata"], "context_answer": shown}}
            fewshot = fewshot + [record.id]
        item = row_view(record, fields)
        blocks = [self._block(demo_id, item) for demo_id in fewshot]
        prompt = prompts.join_prompt(prompts.instruction(record.subject or record.category, self.spec.with_subject),
                                     blocks, prompts.question_block(item, "symbol", self.spec.answer_prefix, None))
        return {**fields, "columns": {**fields["columns"], "fewshot": fewshot, "prompt": prompt}}

    def _block(self, demo_id: str, item: Mapping[str, Any]) -> str:
        if demo_id == item["id"]:  # the item's own demonstration shows its context answer
            return prompts.question_block(item, "symbol", self.spec.answer_prefix, prompts.shown_answer(item, item))
        if demo_id not in self._blocks:
            demo = row_view(self.pool[demo_id]) if demo_id in self.pool else _trivial_row(demo_id)
            self._blocks[demo_id] = prompts.question_block(demo, "symbol", self.spec.answer_prefix, demo["answer"])
        return self._blocks[demo_id]


def _trivial_row(demo_id: str) -> Mapping[str, Any]:
    return next(row for row in trivial_questions() if row["id"] == demo_id)


# ---- the build ---------------------------------------------------------------------------------------


def select_specs(source: LoadedSource, args: argparse.Namespace) -> list[ConfigSpec]:
    records = [r for split in source.splits.values() for r in split]
    positions = max((len(r.choices) for r in records), default=4)
    fewshot = source.splits.get(source.benchmark.fewshot_split or "", [])
    specs = config_specs(positions, with_other_subjects=len({subject_group(r) for r in fewshot}) > 1)
    if args.only:
        known = {s.name for s in specs}
        unknown = sorted(set(args.only) - known)
        if unknown:
            raise cli.UserError(f"--only: unknown configs {unknown}; choose from {sorted(known)}")
        specs = [s for s in specs if s.name == "original" or s.name in args.only]
    return specs


def _named(step: Callable[[MCQRecord], MCQRecord], name: str) -> Callable[[MCQRecord], MCQRecord]:
    step.name = name  # type: ignore[attr-defined]  (the step name recorded with each exclusion)
    return step


def build_config_records(spec: ConfigSpec, source: LoadedSource, draws: ItemDraws, args: argparse.Namespace,
                         swaps: tuple[tuple[int, int], ...], exclusions: ExclusionLog,
                         counters: StepCounters) -> dict[str, list[MCQRecord]]:
    """The few-shot split first (it is the demonstration pool), then every split with its prompts.

    Each record is rebuilt once: the perturbation and the prompt go in one ``replace``.
    """
    fewshot_split = source.benchmark.fewshot_split

    def perturb_step(transformed: bool):
        return _named(lambda r: r.replace(**perturbed_fields(r, spec, transformed, draws, swaps)), "perturb")

    pool_records = run_steps(source.splits.get(fewshot_split or "", []), [perturb_step(True)], exclusions, counters,
                             config=spec.name)
    renderer = PromptRenderer(spec, {r.id: r for r in pool_records}, draws, args.shots)
    splits = {}
    for split, records in source.splits.items():
        if split == fewshot_split:
            splits[split] = [r.replace(**renderer.complete(r, current_fields(r))) for r in pool_records]
            continue
        transformed = spec.transforms(split, fewshot_split)
        step = _named(lambda r, t=transformed: r.replace(
            **renderer.complete(r, perturbed_fields(r, spec, t, draws, swaps))), "perturb")
        splits[split] = run_steps(records, [step], exclusions, counters, config=spec.name)
    return splits


def build(source: LoadedSource, args: argparse.Namespace) -> Build:
    if args.shots < 0:
        raise cli.UserError("--shots must be 0 or more")
    swaps = parse_swaps(args.swaps)
    specs = select_specs(source, args)
    fewshot_split = source.benchmark.fewshot_split
    if fewshot_split not in source.splits:
        logger.warning("the source has no few-shot split %r: prompts have no demonstrations", fewshot_split)
    draws = ItemDraws(args.seed, source.splits.get(fewshot_split or "", []))
    exclusions = ExclusionLog()
    exclusions.extend(source.exclusions)
    counters = StepCounters()
    configs = {}
    for spec in specs:
        configs[spec.name] = build_config_records(spec, source, draws, args, swaps, exclusions, counters)
        logger.info("built config %s: %s", spec.name, {s: len(r) for s, r in configs[spec.name].items()})
    metadata = {**source.benchmark.metadata_features, **PERTURBATION_FEATURES}
    task_prefix = args.task_prefix or f"{NAME}_{source.benchmark.name}"
    return Build(
        builder=NAME,
        title=f"{source.benchmark.pretty_name} leaderboard-sensitivity perturbations",
        method_citation=CITATION,
        source=source,
        params={**cli.recorded_params(args), "task_prefix": task_prefix},
        configs=configs,
        metadata_features={spec.name: metadata for spec in specs},
        exclusions=exclusions,
        checks=checks(specs, source),
        statistics=statistics(specs, configs, args),
        extra_files=task_files(specs, source, args, task_prefix),
        extra_columns={spec.name: COLUMN_FEATURES for spec in specs},
        card_context={"specs": specs, "shots": args.shots, "task_prefix": task_prefix, "tasks_dir": TASKS_DIR,
                      "symbol_sets": {n: (SYMBOL_SETS[n], SYMBOL_EXTENSIONS[n]) for n in SYMBOL_SETS},
                      "swaps": args.swaps, "trivial_count": len(trivial_questions()),
                      "eval_split": eval_split(source), "fewshot_split": fewshot_split},
    )


# ---- lm-eval task folders -----------------------------------------------------------------------------


def eval_split(source: LoadedSource) -> str:
    splits = [s for s in source.benchmark.splits if s in source.splits]
    for preferred in ("test", "validation"):
        if preferred in splits:
            return preferred
    return next((s for s in splits if s != source.benchmark.fewshot_split), splits[0])


def task_location(args: argparse.Namespace) -> tuple[str, str | None]:
    """Where the YAML points: the published repo and tag, else (an --output-only build) the local folder."""
    if args.push:
        return args.push, f"v{args.version}"
    return str(Path(args.output).resolve()), None


def task_yaml(task: str, config: str, method: str, dataset_path: str, revision: str | None, split: str) -> str:
    lines = [
        f"# mcqforge perturbations, config {config!r}, {method} scoring.",
        "# The demonstrations are already in every prompt: evaluate it zero-shot (no --num_fewshot).",
        f"task: {task}",
        f"dataset_path: {json.dumps(dataset_path)}",
        f"dataset_name: {json.dumps(config)}",
    ]
    if revision:
        lines += ["dataset_kwargs:", f"  revision: {json.dumps(revision)}"]
    lines += [f"test_split: {split}", "output_type: multiple_choice", "num_fewshot: 0"]
    if method == "symbol":  # the options are shown; the label tokens are scored
        lines += ["doc_to_text: prompt", "doc_to_choice: labels"]
        metrics = ["acc"]
    else:  # hybrid shows the options, cloze hides them; both score each option's text
        lines += [f"doc_to_text: !function utils.{method}_text", "doc_to_choice: choices"]
        metrics = ["acc", "acc_norm"]
    lines += ["doc_to_target: answer", "metric_list:"]
    for metric in metrics:
        lines += [f"  - metric: {metric}", "    aggregation: mean", "    higher_is_better: true"]
    lines += ["metadata:", "  version: 1.0", f"  scoring: {method}"]
    return "\n".join(lines) + "\n"


def task_utils(spec: ConfigSpec, dataset_path: str, revision: str | None, fewshot_split: str | None) -> str:
    constants = {
        "dataset_path": dataset_path,
        "dataset_name": spec.name,
        "revision": revision,
        "fewshot_split": fewshot_split if spec.demonstrations in ("same_subject", "other_subject") else None,
        "with_subject": spec.with_subject,
        "answer_prefix": spec.answer_prefix,
        "trivial": list(trivial_questions()) if spec.demonstrations == "trivial" else [],
    }
    source = Path(prompts.__file__).read_text(encoding="utf-8")
    return (source + "\n\n# ---- this task (written by mcqforge's perturbations builder) ----\n\n"
            + f"TASK = {pprint.pformat(constants, width=110, sort_dicts=False)}\n")


def task_files(specs: Sequence[ConfigSpec], source: LoadedSource, args: argparse.Namespace,
               prefix: str) -> dict[str, bytes]:
    dataset_path, revision = task_location(args)
    split = eval_split(source)
    files = {f"{TASKS_DIR}/README.md": tasks_readme(specs, prefix, dataset_path, revision).encode()}
    for spec in specs:
        folder = f"{TASKS_DIR}/{spec.name}"
        files[f"{folder}/utils.py"] = task_utils(spec, dataset_path, revision, source.benchmark.fewshot_split).encode()
        for method in prompts.METHODS:
            task = f"{prefix}_{spec.name}_{method}"
            files[f"{folder}/{task}.yaml"] = task_yaml(task, spec.name, method, dataset_path, revision, split).encode()
    return files


def tasks_readme(specs: Sequence[ConfigSpec], prefix: str, dataset_path: str, revision: str | None) -> str:
    where = (f"`{dataset_path}` at `{revision}`" if revision else f"the local folder `{dataset_path}` (an --output-only "
             "build; a build published with --push reads its Hub repo at its tag)")
    first = specs[-1].name if len(specs) > 1 else specs[0].name
    return f"""# lm-evaluation-harness tasks

One folder per config, each with three tasks: `{prefix}_<config>_symbol` (options shown, the label is
scored: `acc`), `{prefix}_<config>_hybrid` (options shown, each option's text is scored: `acc_norm` is
the length-normalised score) and `{prefix}_<config>_cloze` (options hidden, each option's text is
scored). The YAML files read the dataset from {where}. Every prompt already holds its demonstrations,
so run zero-shot:

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval/{first} \\
  --tasks {prefix}_{first}_symbol,{prefix}_{first}_hybrid,{prefix}_{first}_cloze --log_samples --output_path results/
```

`utils.py` renders the hybrid and cloze prompts (the same renderer that wrote the `prompt` column).
Compare rankings with `python -m builders.metrics ranking` on the `samples_*.jsonl` logs.
"""


# ---- statistics for the card -------------------------------------------------------------------------


def statistics(specs: Sequence[ConfigSpec], configs, args: argparse.Namespace) -> dict[str, str]:
    splits = list(dict.fromkeys(split for records in configs.values() for split in records))
    rows = ["| config | " + " | ".join(f"{s} rows" for s in splits) + " | demonstrations per prompt |",
            "|---|" + "---|" * len(splits) + "---|"]
    for spec in specs:
        counts = " | ".join(str(len(configs[spec.name].get(s, []))) for s in splits)
        shots = "none" if spec.demonstrations == "none" else (
            f"up to {args.shots}, {spec.demonstrations.replace('_', ' ')}" + (", then the item" if spec.context_answer else ""))
        rows.append(f"| `{spec.name}` | {counts} | {shots} |")
    symbol_rows = ["| set | the 4 symbols | extension (options 5 and beyond) |", "|---|---|---|"]
    symbol_rows += [f"| {n} | {' '.join(SYMBOL_SETS[n])} | {' '.join(SYMBOL_EXTENSIONS[n])} |" for n in SYMBOL_SETS]
    return {"Rows per config": "\n".join(rows), "Symbol sets": "\n".join(symbol_rows)}


# ---- builder invariants -------------------------------------------------------------------------------


def checks(specs: Sequence[ConfigSpec], source: LoadedSource) -> list[Check]:
    originals = {r.id: r for records in source.splits.values() for r in records}
    by_name = {spec.name: spec for spec in specs}
    fewshot_split = source.benchmark.fewshot_split

    def each(build: Build, wanted: Callable[[ConfigSpec, str], bool] = lambda spec, split: True):
        for config, split, records in build.records():
            spec = by_name[config]
            if wanted(spec, split):
                for record in records:
                    yield spec, split, record, originals[record.id]

    def gold_text_preserved(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build):
            permutation = record.metadata["permutation"]
            if sorted(permutation) != list(range(len(original.choices))):
                yield f"{spec.name}/{split} {record.id}: permutation {permutation} is not a permutation"
            elif list(record.choices) != [original.choices[p] for p in permutation]:
                yield f"{spec.name}/{split} {record.id}: choices are not the source's in permutation order"
            elif record.gold != original.gold or record.question != original.question:
                yield f"{spec.name}/{split} {record.id}: gold {record.gold!r} != source gold {original.gold!r}"

    def gold_at_position(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build, lambda s, _: s.gold_position is not None):
            expected = spec.gold_position if spec.transforms(split, fewshot_split) else original.answer
            if record.answer != expected:
                yield f"{spec.name}/{split} {record.id}: gold at {LETTERS[record.answer]}, expected {LETTERS[expected]}"

    def derangement_moves_all(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build, lambda s, _: s.order == "derangement"):
            if any(a == b for a, b in zip(record.choices, original.choices)):
                yield f"{spec.name}/{split} {record.id}: an option stayed at its source position"

    def unchanged_where_not_transformed(build: Build) -> Iterable[str]:
        for spec, split, record, original in each(build):
            changes_order = spec.transforms(split, fewshot_split) and spec.order != "keep"
            if not changes_order and (record.choices, record.answer) != (original.choices, original.answer):
                yield f"{spec.name}/{split} {record.id}: options changed in a config/split that keeps them"

    def labels_unique(build: Build) -> Iterable[str]:
        for spec, split, record, _ in each(build):
            labels = record.columns["labels"]
            if len(labels) != len(record.choices) or len(set(labels)) != len(labels):
                yield f"{spec.name}/{split} {record.id}: labels {labels} for {len(record.choices)} options"
            elif spec.symbols and spec.transforms(split, fewshot_split) and not set(labels) <= set(symbols(spec.symbols)):
                yield f"{spec.name}/{split} {record.id}: labels {labels} are not from the {spec.symbols} set"

    def demonstrations_valid(build: Build) -> Iterable[str]:
        pools = {name: {r.id: r for r in splits.get(fewshot_split or "", [])} for name, splits in build.configs.items()}
        trivial_ids = {row["id"] for row in trivial_questions()}
        for spec, split, record, _ in each(build):
            yield from _demonstration_problems(spec, split, record, pools[spec.name], trivial_ids)

    def prompt_rendered(build: Build) -> Iterable[str]:
        for spec, split, record, _ in each(build):
            prompt = record.columns["prompt"]
            item_block = prompts.question_block(row_view(record), "symbol", spec.answer_prefix, None)
            head = prompts.instruction(record.subject or record.category, spec.with_subject)
            if not (prompt.startswith(head) and prompt.endswith(item_block)):
                yield f"{spec.name}/{split} {record.id}: prompt does not start with the instruction and end with the item"

    return [
        Check("gold_text_preserved", "choices are the source's options in `metadata.permutation` order, "
              "and choices[answer] is the source gold", gold_text_preserved),
        Check("gold_at_position", "gold-position configs have every gold at their position in the splits "
              "they transform, and the source gold elsewhere", gold_at_position),
        Check("derangement_moves_every_option", "in `derangement`, no option stays at its source position",
              derangement_moves_all),
        Check("unchanged_where_not_transformed", "configs and splits that keep the order have the source "
              "options and answer", unchanged_where_not_transformed),
        Check("labels_unique", "one label per option, unique per item, from the config's symbol set", labels_unique),
        Check("demonstrations_valid", "`fewshot` ids are kept few-shot items (or trivial questions, or the item "
              "itself in the in-context configs), never the item otherwise, at most --shots", demonstrations_valid),
        Check("prompt_rendered", "`prompt` starts with the instruction and ends with the item's labelled options "
              "and the answer prefix", prompt_rendered),
    ]


def _demonstration_problems(spec: ConfigSpec, split: str, record: MCQRecord, pool: Mapping[str, MCQRecord],
                            trivial_ids: set[str]) -> Iterable[str]:
    fewshot = list(record.columns["fewshot"])
    where = f"{spec.name}/{split} {record.id}"
    if spec.context_answer:
        if not fewshot or fewshot[-1] != record.id or record.metadata["context_answer"] is None:
            yield f"{where}: the item is not its own last demonstration"
            return
        if (record.metadata["context_answer"] == record.answer) != (spec.context_answer == "correct"):
            yield f"{where}: context answer {record.metadata['context_answer']} is not {spec.context_answer}"
        fewshot = fewshot[:-1]
    if record.id in fewshot or len(fewshot) != len(set(fewshot)):
        yield f"{where}: demonstrations {fewshot} repeat or include the item"
    if spec.demonstrations == "trivial":
        unknown = [i for i in fewshot if i not in trivial_ids]
    else:
        unknown = [i for i in fewshot if i not in pool]
    if unknown:
        yield f"{where}: demonstrations {unknown} are not in the config's few-shot split"
    elif spec.demonstrations in ("same_subject", "other_subject"):
        same = [subject_group(pool[i]) == subject_group(record) for i in fewshot]
        if any(s != (spec.demonstrations == "same_subject") for s in same):
            yield f"{where}: demonstrations {fewshot} break the {spec.demonstrations} rule"


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.builder_parser("python -m builders.perturbations", __doc__.split("\n\n")[0], BENCHMARK_NAMES, "mmlu")
    add_arguments(parser)
    return cli.main(parser, build, argv)

