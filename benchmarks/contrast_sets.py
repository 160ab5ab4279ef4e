"""Full-scale contrast-set mining: the six UnifiedQA sources (train + test), cold and warm embedding cache.

    python benchmarks/contrast_sets.py --data ../shared/data [builder options, e.g. --no-cross-source]

Each build runs as its own process, as a user runs it: first with an empty embedding cache (cold), then
with the cache the first run filled (warm). Prints the seconds per stage, the end-to-end wall time (Python
start and imports included), the peak memory, the graph statistics and the yield next to the paper's
(820 of 7,611 questions), and whether the two runs wrote byte-identical Parquet files.
"""

from __future__ import annotations

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

from harness import REPO, parquet_digest  # noqa: E402

PAPER = (820, 7611)
STAGES = ["imports", "load", "embed", "edges", "matching", "configs", "validate", "write"]


def child(argv: list[str]) -> None:
    """One build, stage by stage, as ``python -m builders.contrast_sets`` runs it; prints one JSON line."""
    sys.path.insert(0, str(REPO))
    from builders.contrast_sets import builder as cs
    from builders.core import cli
    from builders.core.adapters import load_benchmark
    from builders.core.release import write_release
    from builders.core.validate import validate

    stopwatch = cs.Stopwatch()
    stopwatch.seconds["imports"] = time.perf_counter() - STARTED
    args = cli.parse_args(cs.make_parser(), argv)
    with stopwatch.stage("load"):
        source = load_benchmark(args.benchmark, args.source, seed=args.seed)
    build = cs.build(source, args, stopwatch)
    with stopwatch.stage("validate"):
        report = validate(build)
    with stopwatch.stage("write"):
        write_release(build, report, args.output)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"stages": stopwatch.seconds, "peak_mib": peak_mib, "graph": build.card_context["graph"],
                      "similarity": build.card_context["similarity"], "balance": build.card_context["pair_balance"]}))


def run_build(argv: list[str]) -> tuple[float, dict]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, __file__, "--child", *argv], capture_output=True, text=True, cwd=REPO,
                            env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"build failed:\n{result.stderr[-3000:]}")
    return seconds, json.loads(result.stdout.strip().splitlines()[-1])


def report(runs: list[tuple[str, float, dict]], rows: int, identical: bool) -> None:
    print(f"UnifiedQA, six sources x train+test: {rows} source rows, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| stage | " + " | ".join(name for name, _, _ in runs) + " |\n|---|" + "---|" * len(runs))
    for stage in STAGES:
        print(f"| {stage} | " + " | ".join(f"{r['stages'].get(stage, 0):.1f}" for _, _, r in runs) + " |")
    print("| **end to end (wall, process start to exit)** | " + " | ".join(f"**{s:.1f}**" for _, s, _ in runs) + " |")
    print("| peak RSS (MiB) | " + " | ".join(f"{r['peak_mib']:.0f}" for _, _, r in runs) + " |")
    graph = runs[0][2]["graph"]
    print("\n| graph | value |\n|---|---|")
    for key, value in graph.items():
        print(f"| {key.replace('_', ' ')} | {value} |")
    print(f"\nyield: {graph['questions']} questions of {graph['rows_in']} rows = {graph['yield_percent']}% "
          f"(paper: {PAPER[0]} of {PAPER[1]} = {100 * PAPER[0] / PAPER[1]:.1f}%)")
    print(f"similarity of the kept edges: {runs[0][2]['similarity'].get('kept')}")
    print(f"pairs whose first question has its gold at A: {runs[0][2]['balance']}")
    print(f"byte-identical Parquet, cold vs warm: {identical}")


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
        runs = []
        for name in ("cold cache", "warm cache"):
            out = tmp / name.split()[0]
            argv = ["--benchmark", "unifiedqa", "--source", str(source), "--cache-dir", str(tmp / "cache"),
                    "--output", str(out), "--log-level", "WARNING", *builder_options]
            seconds, result = run_build(argv)
            runs.append((name, seconds, result))
        identical = parquet_digest(tmp / "cold") == parquet_digest(tmp / "warm")
    report(runs, rows, identical)


if __name__ == "__main__":
    main()
