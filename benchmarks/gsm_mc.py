"""Full-scale GSM-MC timings on the real predictions: time per stage, items/s, peak memory.

    python benchmarks/gsm_mc.py --data ../shared/data [--sets 10] [--choices 4]

Stages run in this process as the builder runs them (source, predictions, pools, sets, validation, release
folder); then the whole CLI runs twice as separate processes, to time it as a user runs it and to check
that the Parquet files are byte-identical.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from harness import REPO, parquet_digest, run_builder

sys.path.insert(0, str(REPO))  # run as a script from anywhere


class Stages:
    def __init__(self) -> None:
        self.last = time.perf_counter()

    def done(self, name: str, items: int | None = None) -> None:
        now = time.perf_counter()
        seconds, self.last = now - self.last, now
        rate = f", {items / seconds:,.0f} items/s" if items else ""
        print(f"  {name:<22} {seconds:6.2f} s{rate}")


def in_process(data: Path, sets: int, choices: int, out: Path) -> None:
    from builders.gsm_mc import builder as gsm_mc
    from builders.core import cli
    from builders.core.release import write_release
    from builders.core.validate import validate
    from builders.from_predictions import collect, sets as mc
    from builders.gsm_mc.answers import NumericEquivalence, extract_answer_text
    from builders.from_predictions.pools import respell

    parser = cli.builder_parser("gsm_mc", "", ["gsm8k"], "gsm8k")
    gsm_mc.add_arguments(parser)
    args = parser.parse_args(["--source", str(data / "gsm8k"), "--predictions", str(data / "predictions" / "gsm8k_test.jsonl"),
                              "--sets", str(sets), "--choices", str(choices)])
    stages = Stages()
    source = gsm_mc.load_source(args)
    items = source.items["test"]
    stages.done("read GSM8K test", len(items))
    collected = collect.collect_predictions(source, args, items, lambda doc: doc.get("question"), lambda q: None)
    stages.done("read predictions", collected.report.read)
    answers = {i.id: collect.answers_for(i, collected, extract_answer_text, gsm_mc._number_text) for i in items}
    stages.done("extract answers", collected.report.matched)
    equivalence = NumericEquivalence()
    pools = {k: respell(p, equivalence.spell) for k, p in collect.make_pools(items, answers, equivalence).items()}
    stages.done("pools", len(pools))
    mc.build_sets(source.items, pools, mc.SetOptions("gsm_mc", choices, sets, 0), source.dataset)
    stages.done("sets", len(items) * sets)
    build = gsm_mc.build(source, args)  # the builder's own path end to end, for validation and writing
    stages.done("build (all of it)", len(items))
    report = validate(build)
    stages.done("validate", sum(len(r) for _, _, r in build.records()))
    write_release(build, report, out)
    stages.done("write release", sum(len(r) for _, _, r in build.records()))
    kept = len(build.configs["set_0"]["test"])
    print(f"  kept {kept} of {len(items)} questions per set; {sum(len(p.candidates) for p in pools.values())} "
          f"pool candidates; peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


def run_cli(data: Path, sets: int, choices: int, out: Path) -> tuple[float, float]:
    return run_builder("gsm_mc", ["--source", str(data / "gsm8k"), "--predictions",
                                  str(data / "predictions" / "gsm8k_test.jsonl"), "--sets", str(sets),
                                  "--choices", str(choices), "--output", str(out)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--sets", type=int, default=10)
    parser.add_argument("--choices", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"GSM-MC, {args.sets} sets x {args.choices} options, stages in one process:")
        in_process(args.data.resolve(), args.sets, args.choices, Path(tmp) / "stages")
        runs = [run_cli(args.data.resolve(), args.sets, args.choices, Path(tmp) / f"cli{i}") for i in range(2)]
        same = parquet_digest(Path(tmp) / "cli0") == parquet_digest(Path(tmp) / "cli1")
        for i, (seconds, peak) in enumerate(runs):
            print(f"CLI run {i + 1}: {seconds:.1f} s wall, peak {peak:.0f} MiB")
        print(f"byte-identical Parquet across the two runs: {same}")


if __name__ == "__main__":
    main()
