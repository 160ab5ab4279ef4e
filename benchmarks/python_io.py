"""PythonIO on the real HumanEval + MBPP and CodeMind's predictions: time per stage, throughput, memory.

    python benchmarks/python_io.py [--data ../shared/data] [--workers N] [--throughput-runs 600]

Stages: read both sources, extract the (program, call, expected) pairs, verify every pair in the sandbox
(the target: all of HumanEval and MBPP in under 2 minutes), sustained sandbox throughput on trivial
programs, then the whole builder end to end (predictions, pools, 10 sets x 4 options, validation, release).
"""

from __future__ import annotations

import argparse
import json
import logging
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builders import python_io
from builders.core.items.outcomes import Exclude
from builders.core.sandbox import Sandbox
from builders.core.sources.loading import load_source
from builders.python_io.card_statistics import PAPER_COUNTS
from builders.python_io.problems import BENCHMARK, OUTPUT_SPLITS, CallPair, extract_rows
from builders.python_io.verify import VERIFY_LIMITS, verify_pairs


def peak_mb() -> float:
    """Peak resident memory of this process, in MB (each sandbox is capped by its own rlimit)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def stage(name: str, started: float, items: int, unit: str) -> None:
    elapsed = time.perf_counter() - started
    rate = f", {items / elapsed:.1f} {unit}/s" if elapsed > 0 and items else ""
    print(f"{name:<28} {elapsed:7.1f} s  {items} {unit}{rate}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO / ".." / "shared" / "data",
                        help="folder with humaneval/, mbpp/ and predictions/python_io/")
    parser.add_argument("--workers", type=int, default=None, help="parallel sandboxes (default: CPU count)")
    parser.add_argument("--throughput-runs", type=int, default=600)
    parser.add_argument("--skip-build", action="store_true", help="stop after the sandbox stages")
    args = parser.parse_args()
    logging.basicConfig(level="WARNING")

    started = time.perf_counter()
    source = load_source(BENCHMARK, str(args.data))
    problems = source.records()
    stage("read sources", started, len(problems), "problems")

    started = time.perf_counter()
    rows = extract_rows(problems)
    pairs = [row for split_rows in rows.values() for row in split_rows if isinstance(row, CallPair)]
    stage("extract pairs", started, len(pairs), "pairs")
    print("  rows in per split:", {split: len(split_rows) for split, split_rows in rows.items()}, " rejected:",
          dict(Counter(row.error.reason for split_rows in rows.values() for row in split_rows
                       if isinstance(getattr(row, "error", None), Exclude))))

    sandbox = Sandbox(limits=VERIFY_LIMITS, workers=args.workers)
    started = time.perf_counter()
    verified, failed, stats = verify_pairs(pairs, sandbox)
    stage("verify in the sandbox", started, len(pairs), "calls")
    print(f"  {stats.runs} sandbox runs in {stats.rounds} round(s): {stats.runs_per_second:.1f} runs/s, "
          f"{stats.calls_per_second:.1f} calls/s, {sandbox.workers} workers; verified {len(verified)}, failed "
          f"{dict(Counter(error.reason for error in failed.values()))}")
    per_split = Counter(v.pair.problem.split for v in verified)
    print("  verified per split:", {s: per_split[s] for s in OUTPUT_SPLITS}, " paper:", PAPER_COUNTS)

    started = time.perf_counter()
    results = sandbox.run_many([f"print({i} * {i})" for i in range(args.throughput_runs)])
    stage("sustained sandbox throughput", started, args.throughput_runs, "executions")
    wrong = sum(r.stdout != f"{i * i}\n" for i, r in enumerate(results))
    print(f"  {wrong} wrong outputs")

    if not args.skip_build:
        predictions = args.data / "predictions" / "python_io"
        with tempfile.TemporaryDirectory(prefix="python-io-bench-") as tmp:
            out = Path(tmp) / "release"
            started = time.perf_counter()
            code = python_io.main(["--source", str(args.data), "--predictions", str(predictions), "--output", str(out),
                                   "--log-level", "WARNING"])
            report = json.loads((out / "validation_report.json").read_text()) if code == 0 else {}
            kept = report.get("counts", {}).get("default", {})
            stage("whole build (10 sets x 4)", started, sum(n["out"] for n in kept.values()), "items")
            print("  exit", code, " items per split:", {s: n["out"] for s, n in kept.items()})

    print(f"peak memory: {peak_mb():.0f} MB (this process)")


if __name__ == "__main__":
    main()
