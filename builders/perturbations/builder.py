"""Leaderboard-sensitivity perturbations: choice order, gold position, symbols, prompt wording, context.

Alzahrani et al. (2024), "When Benchmarks are Targets". Every config is one small, meaning-preserving
change to the benchmark; every split is transformed, the few-shot split included, so demonstrations
carry the perturbation too. Each record has ``labels`` (the symbol shown for each option), ``fewshot``
(its demonstrations' ids: by default the subject's first few-shot items, as lm-eval's MMLU, the same in
every config that shows demonstrations of the same kind) and ``prompt`` (the rendered MMLU-style
symbol-scoring prompt), and the release holds an lm-eval task folder per config for the symbol, hybrid
and cloze scoring methods, with a manifest for ``python -m builders.evaluate``.

    python -m builders.perturbations --benchmark mmlu --source ../shared/data/mmlu --output out/

Every config keeps every item. Items whose options cannot be reordered or relabelled (options that depend
on each other or on their positions: "All of the above", "Both a and c", "None of these", letter
references) are copied unchanged in the configs that change options, with ``metadata.skip_reason``; items
with duplicated options are copied unchanged with ``duplicate_choices`` in every config; the ``symbols_*`` configs
that keep the order skip only options that name a label. Every config shows an item as many demonstrations as
``original``, except the gold-position configs with demonstrations, which show only the few-shot items they move
(every demonstration answers their letter); `gold_at_<L>` and ``original_zero_shot`` are zero-shot. A
build that shows no demonstrations (``--shots 0``, or a source without its few-shot split) leaves out the
configs that change only the demonstrations (`fewshot_gold_at_<L>`, `ood_fewshot`, `trivial_fewshot`):
each would be a copy of `original`.

The modules: :mod:`.configs` (what each config changes), :mod:`.transforms` (the per-item transforms,
demonstrations and prompts), :mod:`.prompts` (the prompt renderer the lm-eval tasks share), :mod:`.tasks`
(the lm-eval folder and its manifest), :mod:`.checks` (the invariants, independent of the transforms).
"""

from __future__ import annotations

import argparse
import logging
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS, MCQRecord, Value, list_of
from builders.core.items.tables import Statistics, Table
from builders.core.pipeline import api, cli
from builders.core.options import argtypes
from builders.core.pipeline.legacy import Build, Builder
from builders.core.items.outcomes import Outcomes
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import LoadedSource, evaluation_split
from builders.perturbations import ranking, tasks
from builders.perturbations.checks import checks
from builders.perturbations.configs import (
    NAME,
    SYMBOL_EXTENSIONS,
    SYMBOL_SETS,
    ConfigSpec,
    config_specs,
    parse_swaps,
    selected_specs,
)
from builders.perturbations.transforms import (
    SAMPLERS,
    Demonstrations,
    ItemDraws,
    Perturbation,
    config_records,
    subject_group,
    trivial_questions,
)

logger = logging.getLogger(__name__)

BENCHMARK_NAMES = [name for name, benchmark in BENCHMARKS.items() if benchmark.fewshot_split]
PERTURBATION_FEATURES = {
    "permutation": list_of(Value("int32")),
    "original_answer": Value("int32"),
    "context_answer": Value("int32"),
    "skip_reason": Value("string"),
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("perturbations")
    group.add_argument("--shots", type=argtypes.nonnegative_int, default=5,
                       help="demonstrations per prompt (gold_at_<L> and original_zero_shot are zero-shot)")
    group.add_argument("--fewshot-sampler", choices=SAMPLERS, default="first_n",
                       help="which of the subject's few-shot items are shown: the first --shots in source order "
                            "(lm-eval's MMLU), or --shots in a per-item random order")
    group.add_argument("--swaps", default="adjacent", metavar="PAIRS",
                       help="swap_fixed's swaps: 'adjacent' (A<->B, C<->D, E<->F, ...) or letter pairs like 'AC,BD'")
    group.add_argument("--only", nargs="+", metavar="CONFIG", default=None,
                       help="build only these configs (and their baselines: `original`, and `original_zero_shot` "
                            "for the zero-shot configs)")
    group.add_argument("--task-prefix", type=task_prefix, default=None,
                       help="prefix of the lm-eval task names (default: perturbations_<benchmark>)")


def task_prefix(text: str) -> str:
    """An argparse type: lm-eval task names are one word (a space or a comma would break ``--tasks a,b``)."""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", text):
        raise argparse.ArgumentTypeError(f"letters, digits, '_' and '-', starting with a letter; got {text!r}")
    return text


def check_arguments(args: argparse.Namespace) -> None:
    parse_swaps(args.swaps)


@dataclass(frozen=True)
class Options:
    """The perturbation builder's options, made once from the parsed arguments."""

    seed: int
    shots: int
    fewshot_sampler: str
    swaps: str  # --swaps as given, for the card
    swap_pairs: tuple[tuple[int, int], ...]  # the positions swap_fixed exchanges
    only: tuple[str, ...] | None
    task_prefix: str | None  # None: perturbations_<benchmark>

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        return cls(seed=args.seed, shots=args.shots, fewshot_sampler=args.fewshot_sampler, swaps=args.swaps,
                   swap_pairs=parse_swaps(args.swaps), only=tuple(args.only) if args.only is not None else None,
                   task_prefix=args.task_prefix)


def select_specs(source: LoadedSource, only: Sequence[str] | None, shots: int) -> list[ConfigSpec]:
    positions = max((len(r.choices) for records in source.items.values() for r in records), default=4)
    fewshot = source.items.get(source.benchmark.fewshot_split or "", [])
    specs = config_specs(positions, with_other_subjects=len({subject_group(r) for r in fewshot}) > 1)
    if not shows_demonstrations(source, shots):
        # Without demonstrations these configs would be copies of `original`, reported as "no effect".
        left_out = [s.name for s in specs if s.changes_only_demonstrations]
        asked = sorted(set(only or ()) & set(left_out))
        if asked:
            raise UserError(f"--only: {asked} change only the demonstrations, and this build shows none "
                            f"({no_demonstrations_reason(source, shots)})")
        logger.warning("%s: leaving out the configs that change only the demonstrations (%d)",
                       no_demonstrations_reason(source, shots), len(left_out))
        specs = [s for s in specs if not s.changes_only_demonstrations]
    return selected_specs(specs, only)


def shows_demonstrations(source: LoadedSource, shots: int) -> bool:
    return shots > 0 and bool(source.items.get(source.benchmark.fewshot_split or ""))


def no_demonstrations_reason(source: LoadedSource, shots: int) -> str:
    return "--shots 0" if shots <= 0 else f"the source has no few-shot split {source.benchmark.fewshot_split!r}"


def left_out_configs(source: LoadedSource, shots: int, specs: Sequence[ConfigSpec]) -> dict[str, object] | None:
    """For the card: the configs a build without demonstrations leaves out, and why (None: none left out)."""
    if shows_demonstrations(source, shots):
        return None
    names = [s.name for s in config_specs(len(LETTERS)) if s.changes_only_demonstrations]
    kept = {s.name for s in specs}
    return {"reason": no_demonstrations_reason(source, shots),
            "families": sorted({n.rsplit("_", 1)[0] + "_<L>" if n.startswith("fewshot_gold_at_") else n
                                for n in names if n not in kept})}


def build(source: LoadedSource, options: Options) -> Build:
    specs = select_specs(source, options.only, options.shots)
    fewshot_split = source.benchmark.fewshot_split
    if fewshot_split not in source.items:
        logger.warning("the source has no few-shot split %r: prompts have no demonstrations", fewshot_split)
    draws = ItemDraws(options.seed)
    demonstrations = Demonstrations(source.items.get(fewshot_split or "", []), options.shots, options.fewshot_sampler, draws)
    swaps = options.swap_pairs
    if any(spec.order == "swap_fixed" for spec in specs):
        check_swaps_fit(options.swaps, swaps, source)
    configs, outcomes = {}, Outcomes()
    for spec in specs:
        configs[spec.name], counted = config_records(spec, source.items, fewshot_split,
                                                     Perturbation(spec, draws, swaps, fewshot_split), demonstrations)
        outcomes.update(counted)
        logger.info("built config %s", spec.name)
    metadata = {**source.benchmark.metadata_features, **PERTURBATION_FEATURES}
    task_prefix = options.task_prefix or f"{NAME}_{source.benchmark.name}"
    return Build(
        builder=NAME,
        title=f"{source.benchmark.pretty_name} leaderboard-sensitivity perturbations",
        method_citation=CITATION,
        source=source,
        params={"task_prefix": task_prefix},
        configs=configs,
        metadata_features={spec.name: metadata for spec in specs},
        exclusions=source.exclusions,
        outcomes=outcomes,
        checks=checks(specs, source, options.shots, options.fewshot_sampler),
        statistics=statistics(specs, configs, fewshot_split, options),
        lm_eval_tasks=lambda location: tasks.task_files(specs, source, task_prefix, location),
        extra_columns={spec.name: COLUMN_FEATURES for spec in specs},
        inherent_baselines=inherent_baselines(specs),
        card_context={"specs": specs, "shots": options.shots, "sampler": options.fewshot_sampler,
                      "task_prefix": task_prefix, "tasks_dir": "lm_eval", "swaps": options.swaps,
                      "in_prompt_demonstrations": tasks.IN_PROMPT_DEMONSTRATIONS,
                      "symbol_sets": {n: (SYMBOL_SETS[n], SYMBOL_EXTENSIONS[n]) for n in SYMBOL_SETS},
                      "trivial_count": len(trivial_questions()),
                      "eval_split": evaluation_split(source.items, source.benchmark.fewshot_split), "fewshot_split": fewshot_split,
                      "left_out": left_out_configs(source, options.shots, specs)},
    )


def check_swaps_fit(text: str, swaps: Sequence[tuple[int, int]], source: LoadedSource) -> None:
    """Explicit ``--swaps`` must name positions that some item has: a swap no item can take would make
    `swap_fixed` a silent copy of `original` (``adjacent`` is meant for any number of options)."""
    if text == "adjacent":
        return
    positions = max(len(r.choices) for records in source.items.values() for r in records)
    beyond = [LETTERS[a] + LETTERS[b] for a, b in swaps if max(a, b) >= positions]
    if beyond:
        raise UserError(f"--swaps: {', '.join(beyond)} names a position past the last option of every item "
                        f"(at most {positions} options, A-{LETTERS[positions - 1]})")


def inherent_baselines(specs: Sequence[ConfigSpec]) -> dict[str, str]:
    """The shortcut-audit rules that the gold-position configs make right by design."""
    inherent = {}
    last = max((s.gold_position for s in specs if s.gold_position is not None), default=None)
    for spec in specs:
        if spec.order != "gold_at" or spec.transformed != "all":
            continue
        reason = f"every transformable gold is at position {spec.gold_position} by design"
        inherent[f"{spec.name}/fewshot_position_prior"] = reason
        inherent[f"{spec.name}/choices_only_model"] = reason + ", and the model sees positions"
        if spec.gold_position == 0:
            inherent[f"{spec.name}/always_first"] = reason
        if spec.gold_position == last:
            inherent[f"{spec.name}/always_last"] = reason
    return inherent


# ---- statistics for the card -------------------------------------------------------------------------


def statistics(specs: Sequence[ConfigSpec], configs: Mapping[str, Mapping[str, list[MCQRecord]]],
               fewshot_split: str | None, options: Options) -> Statistics:
    splits = list(dict.fromkeys(split for records in configs.values() for split in records))
    rows = []
    for spec in specs:
        rows.append((spec.name, spec.family, spec.baseline or "–", *[len(configs[spec.name].get(s, [])) for s in splits],
                     demonstrations_text(spec, options, fewshot_split)))
    return Statistics([
        Table("Rows per config", ("config", "family", "compared with", *[f"{s} rows" for s in splits],
                                  "demonstrations per prompt"), rows,
              note="Every config keeps every source item; items that cannot take a config's change are copied "
                   "unchanged (the table \"Items altered, copied unchanged and excluded\")."),
        unchanged_demonstration_table(specs, configs, fewshot_split),
        Table("Symbol sets", ("set", "the 4 symbols", "extension (options 5 and beyond)"),
              [(n, " ".join(SYMBOL_SETS[n]), " ".join(SYMBOL_EXTENSIONS[n])) for n in SYMBOL_SETS]),
    ])


def demonstrations_text(spec: ConfigSpec, options: Options, fewshot_split: str | None = None) -> str:
    if spec.demonstrations == "none" or options.shots == 0:
        return "none"
    which = "first" if options.fewshot_sampler == "first_n" else "random"
    if spec.promises_demonstration_answers(fewshot_split):
        return f"the subject's {which} {options.shots} among the few-shot items it moves to {LETTERS[spec.gold_position]}"
    kinds = {"same_subject": f"the subject's {which} {options.shots}",
             "other_subject": f"another subject's {which}, as many as `original`",
             "trivial": f"{which} trivial questions, as many as `original`"}
    return kinds[spec.demonstrations] + (", then the item" if spec.context_answer else "")


def unchanged_demonstration_table(specs: Sequence[ConfigSpec], configs: Mapping[str, Mapping[str, list[MCQRecord]]],
                                  fewshot_split: str | None) -> Table:
    """Per config and split: the prompts whose demonstrations include an item copied unchanged (shown unchanged,
    never dropped). The items themselves are counted in the card's outcome table."""
    rows = []
    for spec in specs:
        splits = configs[spec.name]
        unchanged = {r.id for r in splits.get(fewshot_split or "", []) if r.metadata["skip_reason"]}
        for split, records in splits.items():
            with_demo = sum(1 for r in records if unchanged.intersection(r.columns["fewshot"]))
            if with_demo:
                rows.append((spec.name, split, with_demo))
    return Table("Prompts with an unchanged demonstration", ("config", "split", "prompts"), rows,
                 note="Items whose options cannot be reordered or relabelled are copied unchanged (source order, "
                      "letters) with `metadata.skip_reason`, in the configs and splits that change options; items "
                      "with duplicated options carry `duplicate_choices` in every config and split. As demonstrations "
                      "they are shown unchanged: these prompts show one.")


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [BENCHMARKS[name] for name in BENCHMARK_NAMES], add_arguments,
                  build, check_arguments, evaluation_table=ranking.evaluation_table, make_options=Options.from_args)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build the perturbations from rows in memory (see :mod:`builders.core.pipeline.api`)."""
    return api.build_dataset(BUILDER, data, **options)
