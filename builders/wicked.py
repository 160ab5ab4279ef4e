"""WiCkeD: replace one uniformly chosen option with "None of the above".

Elhady, Agirre and Artetxe (2025), section 3.1. For every item that is not single-best-answer (SBA):
draw one option with the per-item generator, remove it, and add "None of the above". If the removed
option was the gold, NOTA becomes the answer; otherwise the gold keeps its text at its new index.
SBA items, detected by a BERT classifier, are copied unchanged, and so are items whose options already
depend on each other ("None of the above", "All of the above", "A and B", letter references): adding
NOTA to them would be incoherent. The paper does not skip those; the card counts them.

    python -m builders.wicked --benchmark mmlu --source ../data/mmlu --sba-classifier none --output out/
"""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Sequence

import numpy as np
from datasets import Value

from builders.core import cli
from builders.core.adapters import LoadedSource
from builders.core.build import Build, Check
from builders.core.errors import UserError
from builders.core.options import NOTA_TEXT, is_nota, position_dependent_reason
from builders.core.record import MCQRecord
from builders.core.rng import item_rng
from classifiers.sba_model import BATCH_SIZE, PAPER_CLASSIFIER

NAME = "wicked"
BENCHMARK_NAMES = ["mmlu", "mmlu_pro", "mmlu_redux", "commonsense_qa", "truthful_qa", "arc_challenge"]
SBA_SKIP = "single_best_answer"
METADATA_FEATURES = {
    "is_sba": Value("bool"),
    "sba_score": Value("float32"),
    "removed_index": Value("int32"),
    "nota_index": Value("int32"),
    "nota_is_answer": Value("bool"),
    "original_answer_index": Value("int32"),
    "skip_reason": Value("string"),
}
CITATION = """@article{elhady2025wicked,
  title={{WiCkeD}: A Simple Method to Make Multiple Choice Benchmarks More Challenging},
  author={Elhady, Ahmed and Agirre, Eneko and Artetxe, Mikel},
  journal={arXiv preprint},
  year={2025}
}"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("WiCkeD")
    group.add_argument("--variants", type=int, default=5, help="number of independent WiCkeD variants (configs variant_0...)")
    group.add_argument("--sba-classifier", default=PAPER_CLASSIFIER, metavar="ID|PATH|none",
                       help="SBA classifier (Hub id or local folder, e.g. the output of `classifiers.sba train`); "
                            "'none' treats every item as non-SBA")
    group.add_argument("--sba-threshold", type=float, default=None,
                       help="P(SBA) at or above which an item is copied unchanged (default: the classifier config's, else 0.5)")
    group.add_argument("--sba-batch-size", type=int, default=BATCH_SIZE,
                       help="questions per classifier forward pass (scores do not depend on it)")
    group.add_argument("--nota-position", choices=["last", "random"], default="last",
                       help="'last' follows the paper; 'random' spreads NOTA answers over all positions")
    group.add_argument("--redux-keep-all", action="store_true",
                       help="mmlu_redux: keep every item, not only error_type == 'ok'")


# ---- the per-item transform ------------------------------------------------------------------------


def add_nota(record: MCQRecord, seed: int, variant: int, nota_position: str) -> MCQRecord:
    """Remove one uniformly drawn option and add NOTA; the gold is tracked by index."""
    rng = item_rng(seed, record.id, NAME, variant)
    size = len(record.choices)
    removed = int(rng.integers(size))
    nota_index = size - 1 if nota_position == "last" else int(rng.integers(size))
    kept = [i for i in range(size) if i != removed]
    choices = [record.choices[i] for i in kept]
    choices.insert(nota_index, NOTA_TEXT)
    if removed == record.answer:
        answer = nota_index
    else:
        position = kept.index(record.answer)
        answer = position + (position >= nota_index)
    return record.replace(choices=choices, answer=answer).with_metadata(
        removed_index=removed, nota_index=nota_index, nota_is_answer=removed == record.answer,
    )


def wicked_variant(record: MCQRecord, sba_score: float | None, threshold: float, skip_reason: str | None,
                   seed: int, variant: int, nota_position: str) -> MCQRecord:
    is_sba = sba_score is not None and sba_score >= threshold
    if skip_reason is None and is_sba:
        skip_reason = SBA_SKIP
    unchanged = record.with_metadata(
        is_sba=is_sba, sba_score=sba_score, removed_index=None, nota_index=None, nota_is_answer=False,
        original_answer_index=record.answer, skip_reason=skip_reason,
    )
    return unchanged if skip_reason else add_nota(unchanged, seed, variant, nota_position)


# ---- the build ---------------------------------------------------------------------------------------


def score_distinct_questions(records: Sequence[MCQRecord], classifier, batch_size: int) -> dict[tuple, float]:
    """Each distinct (question, choices) is scored once per build, whatever the variants and splits."""
    keys = list(dict.fromkeys((r.question, r.choices) for r in records))
    scores = classifier.scores(keys, batch_size=batch_size)
    return {key: float(score) for key, score in zip(keys, scores)}


def build(source: LoadedSource, args: argparse.Namespace) -> Build:
    if args.variants < 1:
        raise UserError("--variants must be at least 1")
    classifier = _load_classifier(args)
    originals = source.splits
    all_records = [r for records in originals.values() for r in records]
    skip_reasons = {r.id: position_dependent_reason(r.choices) for r in all_records}
    scores: dict[tuple, float] = {}
    if classifier is not None:
        to_score = [r for r in all_records if skip_reasons[r.id] is None]
        scores = score_distinct_questions(to_score, classifier, args.sba_batch_size)
    threshold = classifier.threshold if classifier else 1.0
    configs = {"original": dict(originals)}
    for variant in range(args.variants):
        configs[f"variant_{variant}"] = {
            split: [wicked_variant(r, scores.get((r.question, r.choices)), threshold, skip_reasons[r.id],
                                   args.seed, variant, args.nota_position) for r in records]
            for split, records in originals.items()
        }
    adapter_features = dict(source.benchmark.metadata_features)
    metadata_features = {name: adapter_features for name in configs}
    metadata_features.update({name: {**adapter_features, **METADATA_FEATURES} for name in configs if name != "original"})
    classifier_info = {"name": classifier.name, "revision": classifier.revision, "threshold": threshold,
                       "input": classifier.input_format} if classifier else None
    return Build(
        builder=NAME,
        title=f"WiCkeD {source.benchmark.pretty_name}",
        method_citation=CITATION,
        source=source,
        params={**cli.recorded_params(args), "sba_threshold": threshold if classifier else None},
        configs=configs,
        metadata_features=metadata_features,
        exclusions=source.exclusions,
        checks=CHECKS,
        statistics=statistics(configs, classifier_info, scores),
        card_context={"classifier": classifier_info, "variants": args.variants, "nota_position": args.nota_position},
    )


def _load_classifier(args: argparse.Namespace):
    if args.sba_classifier.lower() == "none":
        return None
    from classifiers.sba_model import SBAClassifier

    return SBAClassifier.load(args.sba_classifier, threshold=args.sba_threshold)


# ---- statistics for the card -------------------------------------------------------------------------


def statistics(configs, classifier_info, scores) -> dict[str, str]:
    variants = [name for name in configs if name != "original"]
    splits = list(configs["original"])
    rows = ["| split | variant | items | altered | NOTA is the answer | NOTA rate among altered | expected (mean 1/k) |",
            "|---|---|---|---|---|---|---|"]
    summary = ["| split | mean NOTA-answer rate | std across variants |", "|---|---|---|"]
    for split in splits:
        rates = []
        for variant in variants:
            records = configs[variant][split]
            altered = [r for r in records if r.metadata["removed_index"] is not None]
            nota = sum(r.metadata["nota_is_answer"] for r in altered)
            rate = nota / len(altered) if altered else 0.0
            expected = float(np.mean([1 / len(r.choices) for r in altered])) if altered else 0.0
            rates.append(rate)
            rows.append(f"| {split} | {variant} | {len(records)} | {len(altered)} | {nota} | {rate:.4f} | {expected:.4f} |")
        summary.append(f"| {split} | {np.mean(rates):.4f} | {np.std(rates):.4f} |")
    first = configs[variants[0]]
    skipped = Counter(r.metadata["skip_reason"] or "altered" for records in first.values() for r in records)
    skip_rows = ["| outcome | items (all splits) |", "|---|---|"] + [f"| {k} | {v} |" for k, v in sorted(skipped.items())]
    if classifier_info:
        sba = sum(1 for s in scores.values() if s >= classifier_info["threshold"])
        classifier_text = (f"Classifier `{classifier_info['name']}` (revision `{classifier_info['revision']}`, input: "
                           f"{classifier_info['input']}) scored {len(scores)} distinct questions; {sba} reached the "
                           f"threshold {classifier_info['threshold']} and were copied unchanged.")
    else:
        classifier_text = "No SBA classifier was used (`--sba-classifier none`): every coherent item was altered."
    return {
        "Items altered and copied unchanged": classifier_text + "\n\n" + "\n".join(skip_rows),
        "NOTA-answer rate": "\n".join(summary) + "\n\n" + "\n".join(rows),
    }


# ---- builder invariants -------------------------------------------------------------------------------


def _pairs(build: Build):
    originals = {r.id: r for records in build.configs["original"].values() for r in records}
    for config, split, records in build.records():
        if config != "original":
            for record in records:
                yield config, split, record, originals[record.id]


def _altered_shape(build: Build):
    for config, split, record, original in _pairs(build):
        if record.metadata["removed_index"] is None:
            continue
        notas = sum(is_nota(c) for c in record.choices)
        if notas != 1 or record.choices.count(NOTA_TEXT) != 1:
            yield f"{config}/{split} {record.id}: {notas} NOTA-like options"
        if len(record.choices) != len(original.choices):
            yield f"{config}/{split} {record.id}: {len(record.choices)} choices, original had {len(original.choices)}"


def _gold_tracked(build: Build):
    for config, split, record, original in _pairs(build):
        if record.metadata["removed_index"] is None:
            continue
        nota_answer = record.choices[record.answer] == NOTA_TEXT
        if nota_answer != record.metadata["nota_is_answer"]:
            yield f"{config}/{split} {record.id}: nota_is_answer flag disagrees with the answer"
        elif not nota_answer and record.choices[record.answer] != original.gold:
            yield f"{config}/{split} {record.id}: answer text changed from {original.gold!r}"
        elif nota_answer and original.gold in record.choices:
            yield f"{config}/{split} {record.id}: NOTA is the answer but the gold text is still present"


def _unaltered_equal(build: Build):
    for config, split, record, original in _pairs(build):
        if record.metadata["removed_index"] is None and (
            (record.question, record.choices, record.answer) != (original.question, original.choices, original.answer)
        ):
            yield f"{config}/{split} {record.id}: copied item differs from the original"


CHECKS = [
    Check("one_nota_same_length", "every altered item has exactly one NOTA and as many choices as the original", _altered_shape),
    Check("gold_tracked", "choices[answer] is the original gold text, or NOTA when the gold was removed (then absent)", _gold_tracked),
    Check("unaltered_equal_original", "items copied unchanged (SBA or skipped) equal the original", _unaltered_equal),
]


def main(argv: Sequence[str] | None = None) -> int:
    parser = cli.builder_parser("python -m builders.wicked", __doc__.split("\n\n")[0], BENCHMARK_NAMES, "mmlu")
    add_arguments(parser)
    return cli.main(parser, build, argv, source_options=lambda args: {"redux_keep_all": args.redux_keep_all})


if __name__ == "__main__":
    raise SystemExit(main())
