"""Full-scale contrast-set mining on the six UnifiedQA sources (train + test): the threshold and determinism.

    python benchmarks/contrast_sets.py --data ../shared/data [builder options, e.g. --no-cross-source]

Four builds, each its own process as a user runs it:

1. the calibrated default threshold, cold embedding cache, batches of at most 256 texts / 1024 tokens;
2. the same options, another cold cache, batches of at most 16 texts / 256 tokens: the Parquet files must be
   byte-identical to run 1 (the output does not depend on how texts were batched);
3. the same options, warm cache (run 1's): byte-identical again;
4. the paper's threshold 0.85 (warm cache), for the "before" figures.

Prints the seconds per stage, the end-to-end wall time (Python start and imports included), the peak memory,
the share of edges that join identical texts and the yield next to the paper's (820 of 7,611 questions).
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from harness import REPO, parquet_digest  # noqa: E402

PAPER = (820, 7611)
STAGES = ["imports", "load", "embed", "edges", "matching", "configs", "validate", "write"]


class StageTimes(logging.Handler):
    """The builder's ``stage NAME: S s`` log lines (embed, edges, matching, configs), as seconds per stage."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "stage %s: %.2f s":
            name, seconds = record.args  # type: ignore[misc]
            self.seconds[name] = seconds


def child(argv: list[str]) -> None:
    """One build, stage by stage, as ``python -m builders.contrast_sets`` runs it; prints one JSON line."""
    sys.path.insert(0, str(REPO))
    from builders import contrast_sets
    from builders.contrast_sets import BUILDER
    from builders.core.pipeline import cli
    from builders.core.release.writer import write_release

    stages = StageTimes()
    logger = logging.getLogger(contrast_sets.__name__)
    logger.addHandler(stages)
    logger.setLevel(logging.INFO)
    seconds = {"imports": time.perf_counter() - STARTED}
    parser = cli.builder_parser(BUILDER)
    args = cli.parse_args(parser, argv)
    options = cli.check_options(BUILDER, args)
    started = time.perf_counter()
    source = cli.load(BUILDER, args, options)
    seconds["load"] = time.perf_counter() - started
    build = BUILDER.make_build(source, options)
    started = time.perf_counter()
    report = cli.validate(build)
    seconds["validate"] = time.perf_counter() - started
    started = time.perf_counter()
    write_release(build, report, args.output)
    seconds["write"] = time.perf_counter() - started
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"stages": {**seconds, **stages.seconds}, "peak_mib": peak_mib, "threshold": options.threshold,
                      "graph": build.release.card_context["graph"],
                      "similarity": build.release.card_context["similarity"]}))


def run_build(argv: list[str]) -> tuple[float, dict]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"build failed:\n{result.stderr[-3000:]}")
    return seconds, json.loads(result.stdout.strip().splitlines()[-1])


def report(runs: list[tuple[str, float, dict]], rows: int, identical: dict[str, bool]) -> None:
    print(f"UnifiedQA, six sources x train+test: {rows} source rows, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| stage | " + " | ".join(name for name, _, _ in runs) + " |\n|---|" + "---|" * len(runs))
    for stage in STAGES:
        print(f"| {stage} | " + " | ".join(f"{r['stages'].get(stage, 0):.1f}" for _, _, r in runs) + " |")
    print("| **end to end (wall, process start to exit)** | " + " | ".join(f"**{s:.1f}**" for _, s, _ in runs) + " |")
    print("| peak RSS (MiB) | " + " | ".join(f"{r['peak_mib']:.0f}" for _, _, r in runs) + " |")
    keys = list(runs[0][2]["graph"])
    chosen = [runs[0], runs[-1]]
    print("\n| graph | " + " | ".join(f"threshold {r['threshold']}" for _, _, r in chosen) + " |\n|---|---|---|")
    for key in keys:
        print(f"| {key.replace('_', ' ')} | " + " | ".join(str(r["graph"][key]) for _, _, r in chosen) + " |")
    print(f"\npaper: {PAPER[0]} of {PAPER[1]} = {100 * PAPER[0] / PAPER[1]:.1f}%")
    for name, _, result in chosen:
        print(f"{name}: similarity of the kept edges {result['similarity'].get('kept')}")
    for name, same in identical.items():
        print(f"byte-identical Parquet, {name}: {same}")


def main() -> None:
    if "--child" in sys.argv:
        child([a for a in sys.argv[1:] if a != "--child"])
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    args, builder_options = parser.parse_known_args()
    source = (args.data / "unifiedqa").resolve()
    rows = sum(1 for path in source.glob("*/*.jsonl") for line in open(path, encoding="utf-8") if line.strip())
    with tempfile.TemporaryDirectory(prefix="mcqforge-contrast-bench-") as tmp:
        tmp = Path(tmp)
        plan = [
            ("default, cold, batches 256/1024", "a", "cache_a", ["--batch-size", "256", "--batch-tokens", "1024"]),
            ("default, cold, batches 16/256", "b", "cache_b", ["--batch-size", "16", "--batch-tokens", "256"]),
            ("default, warm", "c", "cache_a", []),
            ("paper 0.85, warm", "d", "cache_a", ["--threshold", "0.85"]),
        ]
        runs = []
        for name, out, cache, extra in plan:
            argv = ["--benchmark", "unifiedqa", "--source", str(source), "--cache-dir", str(tmp / cache),
                    "--output", str(tmp / out), "--log-level", "WARNING", *builder_options, *extra]
            seconds, result = run_build(argv)
            runs.append((name, seconds, result))
            print(f"{name}: {seconds:.1f} s", file=sys.stderr, flush=True)
        identical = {"batch size 256/1024 vs 16/256 (both cold)": parquet_digest(tmp / "a") == parquet_digest(tmp / "b"),
                     "cold vs warm": parquet_digest(tmp / "a") == parquet_digest(tmp / "c"),
                     "contrast_edges.jsonl, batch sizes": (tmp / "a" / "contrast_edges.jsonl").read_bytes()
                     == (tmp / "b" / "contrast_edges.jsonl").read_bytes()}
    report(runs, rows, identical)


if __name__ == "__main__":
    main()
