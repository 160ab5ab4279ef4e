"""The choices-only adversary on full builds of the shared data: what it costs beside the build, and what it finds.

    python benchmarks/adversary.py --data ../shared/data [--only wicked-mmlu gsm-random ...]

Each build runs in this process as the command line runs it (``builders.<name>.main``), with the adversary's
``assess`` wrapped to time it: the overhead is its share of the rest of the build (target: at most 20%). Then
the adversary's row per config and split, beside the strongest listed rule on the same split, so that what it
finds can be read against the rules (the review's figures: closest-to-mean 47-50% on GSM-MC `--distractors random`,
the longest option 18.4% on WiCkeD MMLU-Pro).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from harness import REPO

from builders.core.validation import adversary
from builders.core.validation.significance import binomial_p_value
from builders.registry import builder_module


def builds(data: Path) -> dict[str, tuple[str, list[str]]]:
    gsm = ["--source", str(data / "gsm8k")]
    # the shared MATH predictions answer a few hundred questions: most items have no distractor pool
    math = ["--source", str(data / "math"), "--predictions", str(data / "predictions" / "math_test.jsonl")]
    return {
        "wicked-mmlu": ("wicked", ["--benchmark", "mmlu", "--source", str(data / "mmlu"), "--sba-classifier", "none"]),
        "wicked-mmlu-pro": ("wicked", ["--benchmark", "mmlu_pro", "--source", str(data / "mmlu_pro"),
                                       "--sba-classifier", "none"]),
        "gsm-random": ("gsm_mc", [*gsm, "--distractors", "random"]),
        "gsm-predictions": ("gsm_mc", [*gsm, "--predictions", str(data / "predictions" / "gsm8k_test.jsonl")]),
        "gsm-predictions-weighted": ("gsm_mc", [*gsm, "--predictions", str(data / "predictions" / "gsm8k_test.jsonl"),
                                                "--draw", "weighted"]),
        # more options than most pools hold: 80 of the 203 items kept at 8 options have exactly 7 wrong answers
        **{f"gsm-predictions-{n}": ("gsm_mc", [*gsm, "--predictions", str(data / "predictions" / "gsm8k_test.jsonl"),
                                               "--choices", str(n), "--max-excluded", "1"]) for n in (7, 8)},
        **{f"math-{n}": ("math_mc", [*math, "--choices", str(n), "--max-excluded", "1"]) for n in (2, 3, 4)},
        "pro-plus-0111": ("mmlu_pro_plus", ["--source", str(data / "mmlu_pro"), "--ratios", "0:1:1:1"]),
        "perturbations-mmlu": ("perturbations", ["--source", str(data / "mmlu")]),  # the largest release: 29 configs
    }


def timed_build(module: str, argv: list[str], out: Path) -> tuple[float, float]:
    """(build seconds, adversary seconds) of one build, in this process."""
    spent = []
    original = adversary.assess

    def assess(build):
        start = time.perf_counter()
        try:
            return original(build)
        finally:
            spent.append(time.perf_counter() - start)

    adversary.assess = assess
    try:
        start = time.perf_counter()
        status = builder_module(module).main([*argv, "--output", str(out), "--log-level", "ERROR"])
        seconds = time.perf_counter() - start
    finally:
        adversary.assess = original
    if status != 0:
        raise SystemExit(f"build failed: builders.{module} {' '.join(argv)}")
    return seconds, sum(spent)


def findings(release: Path) -> list[str]:
    """Per config and split: the adversary, and the listed rule that beats chance most surely (smallest p)."""
    report = json.loads((release / "validation_report.json").read_text())
    lines = []
    for row in report["adversary"]:
        rules = [r for r in report["audit"] if (r["config"], r["split"]) == (row["config"], row["split"])]
        best = min(rules, key=lambda r: (binomial_p_value(round(r["accuracy"] * r["applies"]), r["applies"],
                                                          r["chance"]), r["baseline"]))
        lines.append(f"| {row['config']}/{row['split']} | {row['accuracy']:.1%} ({row['low']:.1%}–{row['high']:.1%}) "
                     f"| {row['chance']:.1%} | {'; '.join(row['features']) or '–'} | {best['baseline']} "
                     f"{best['accuracy']:.1%} of {best['applies']} (chance {best['chance']:.1%}) |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--only", nargs="*", help="build names (default: all)")
    args = parser.parse_args()
    chosen = {name: spec for name, spec in builds(args.data.resolve()).items() if not args.only or name in args.only}
    print(f"{os.cpu_count()} cores; at most {adversary.MAX_ITEMS} items per split\n")
    print("| build | build s | adversary s | overhead |\n|---|---|---|---|")
    found = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (module, argv) in chosen.items():
            seconds, spent = timed_build(module, argv, Path(tmp) / name)
            print(f"| {name} | {seconds:.1f} | {spent:.1f} | {spent / (seconds - spent):.0%} |", flush=True)
            found[name] = findings(Path(tmp) / name)
    for name, lines in found.items():
        print(f"\n{name}\n\n| config/split | adversary (95%) | chance | strongest features | strongest rule |")
        print("|---|---|---|---|---|\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
