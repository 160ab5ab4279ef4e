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

The parts: :mod:`.configs` (what each config changes, and which configs a build makes), :mod:`.transform`
(the per-item transforms, demonstrations and prompts), :mod:`.prompts` (the prompt renderer the lm-eval tasks
share), :mod:`.tasks` (the lm-eval folder and its manifest), :mod:`.checks` (the invariants, independent of the
transforms), :mod:`.card_statistics` (the card's tables), :mod:`.evaluation` (the paper's table, from
:mod:`.ranking`, which is also ``python -m builders.metrics ranking``); this module is the builder: its options
and its build.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.items.record import Value, list_of
from builders.core.options.argtypes import nonnegative_int
from builders.core.options.declare import option
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.options import BuildOptions
from builders.core.pipeline.steps import Run
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.consensus import KeyConsensusOptions
from builders.core.sources.loading import LoadedSource, evaluation_split

from . import tasks
from .card_statistics import left_out_configs, statistics
from .checks import checks
from .configs import (
    NAME,
    SYMBOL_EXTENSIONS,
    SYMBOL_SETS,
    check_swaps_fit,
    inherent_baselines,
    parse_swaps,
    select_specs,
)
from .evaluation import evaluation_table
from .transform import SAMPLERS, ConfigRecords, Demonstrations, ItemDraws, SharedFields, trivial_questions

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


@dataclass(frozen=True, kw_only=True)
class Options(BuildOptions, KeyConsensusOptions):
    """The perturbation builder's options."""

    GROUP: ClassVar[str] = "perturbations"

    shots: int = option(5, type=nonnegative_int,
                        help="demonstrations per prompt (gold_at_<L> and original_zero_shot are zero-shot)")
    fewshot_sampler: str = option("first_n", choices=SAMPLERS,
                                  help="which of the subject's few-shot items are shown: the first --shots in source "
                                       "order (lm-eval's MMLU), or --shots in a per-item random order")
    swaps: str = option("adjacent", metavar="PAIRS",
                        help="swap_fixed's swaps: 'adjacent' (A<->B, C<->D, E<->F, ...) or letter pairs like 'AC,BD'")
    only: tuple[str, ...] | None = option(None, metavar="CONFIG",
                                          help="build only these configs (and their baselines: `original`, and "
                                               "`original_zero_shot` for the zero-shot configs)")
    task_prefix: str | None = option(None, type=tasks.task_prefix,
                                     help="prefix of the lm-eval task names (default: perturbations_<benchmark>)")

    def check(self) -> None:
        parse_swaps(self.swaps)

    def derived(self) -> Options:
        """The task names' prefix of the benchmark when ``--task-prefix`` is unset: what the build uses and records."""
        return self if self.task_prefix is not None else replace(self, task_prefix=f"{NAME}_{self.benchmark}")

    @property
    def default_config(self) -> str:
        """The config ``load_dataset(repo)`` returns: every config is compared with `original`, the source, so a
        user who names none gets a perturbation, `shuffle` (a per-item choice order), or the first of ``--only``."""
        return "shuffle" if not self.only or "shuffle" in self.only else self.only[0]

    @property
    def swap_pairs(self) -> tuple[tuple[int, int], ...]:
        """The positions swap_fixed exchanges."""
        return parse_swaps(self.swaps)


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    specs = select_specs(source, options.only, options.shots)
    fewshot_split = source.benchmark.fewshot_split
    if fewshot_split not in source.items:
        logger.warning("the source has no few-shot split %r: prompts have no demonstrations", fewshot_split)
    if any(spec.order == "swap_fixed" for spec in specs):
        check_swaps_fit(options.swaps, options.swap_pairs, source)
    draws = ItemDraws(options.seed)
    demonstrations = Demonstrations(source.items.get(fewshot_split or "", []), options.shots, options.fewshot_sampler,
                                    draws)
    shared = SharedFields()
    for spec in specs:
        config = ConfigRecords(spec, draws, options.swap_pairs, fewshot_split, demonstrations, shared)
        run.make(spec.name, [config.step], copy=config.copy)
        logger.info("built config %s", spec.name)
    metadata = {**source.benchmark.metadata_features, **PERTURBATION_FEATURES}
    task_prefix = options.task_prefix
    return Release(
        metadata_features={spec.name: metadata for spec in specs},
        extra_columns={spec.name: COLUMN_FEATURES for spec in specs},
        checks=checks(specs, source, options.shots, options.fewshot_sampler),
        statistics=statistics(specs, run.configs, fewshot_split, options.shots, options.fewshot_sampler),
        lm_eval_tasks=lambda location: tasks.task_files(specs, source, task_prefix, location),
        inherent_baselines=inherent_baselines(specs),
        card_context={"specs": specs, "shots": options.shots, "sampler": options.fewshot_sampler,
                      "task_prefix": task_prefix, "tasks_dir": "lm_eval", "swaps": options.swaps,
                      "in_prompt_demonstrations": tasks.IN_PROMPT_DEMONSTRATIONS,
                      "symbol_sets": {n: (SYMBOL_SETS[n], SYMBOL_EXTENSIONS[n]) for n in SYMBOL_SETS},
                      "trivial_count": len(trivial_questions()),
                      "eval_split": evaluation_split(source.items, fewshot_split), "fewshot_split": fewshot_split,
                      "left_out": left_out_configs(source, options.shots, specs)},
    )


BUILDER = Builder(
    name=NAME, title="{benchmark} leaderboard-sensitivity perturbations", description=__doc__.split("\n\n")[0],
    citation=CITATION, benchmarks=[BENCHMARKS[name] for name in BENCHMARK_NAMES], options=Options, build=build,
    default_config="{options.default_config}", evaluation_table=evaluation_table,
)
