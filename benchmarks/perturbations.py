"""Full-scale perturbation timings: every config of the MMLU test set (14,042) and dev split, end to end.

    python benchmarks/perturbations.py --data ../shared/data [--output DIR] [--twice]

Runs the builder's stages in this process and prints the seconds of each (load, build every config
with its prompts, validate, write the release with its lm-eval task folders), source items/s, records/s
and the peak memory. ``--twice`` builds a second time and checks that the Parquet is byte-identical.
The target is under 2 minutes on a 2-core machine.

Then it reads the written Parquet files back (not the build in memory) and prints, per config: the rows
of each split against the source's, the items copied unchanged per ``skip_reason``, and the
demonstrations shown against ``original``'s (same ids for the same-subject configs, the same number for
`ood_fewshot` and `trivial_fewshot`, none for the zero-shot configs).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from harness import REPO, parquet_digest

sys.path.insert(0, str(REPO))

from builders import perturbations  # noqa: E402
from builders.core import cli  # noqa: E402
from builders.core.release.card import ReleaseInfo  # noqa: E402
from builders.core.release.writer import write_release  # noqa: E402
from builders.core.sources.benchmarks import BENCHMARKS  # noqa: E402
from builders.core.sources.loading import load_source  # noqa: E402
from builders.core.validation.validate import validate  # noqa: E402

TARGET_SECONDS = 120


def builder_options(output: Path) -> perturbations.Options:
    return perturbations.Options.from_args(cli.builder_parser(perturbations.BUILDER).parse_args(["--output", str(output)]))


class Stages:
    """Wall and CPU seconds per stage (CPU time shows what a busy shared machine hides)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float]] = []

    def run(self, name: str, action):
        wall, cpu = time.perf_counter(), time.process_time()
        result = action()
        self.rows.append((name(result) if callable(name) else name, time.perf_counter() - wall, time.process_time() - cpu))
        return result


def timed_build(source_dir: Path, output: Path) -> tuple[Stages, dict[str, int], int, int]:
    """Stage timings, source rows per split, configs and records written."""
    stages = Stages()
    source = stages.run("load", lambda: load_source(BENCHMARKS["mmlu"], str(source_dir)))
    build = stages.run(lambda b: f"build {len(b.configs)} configs (perturb, demonstrations, prompts, task folders)",
                       lambda: perturbations.BUILDER.build(source, builder_options(output)))
    report = stages.run(lambda r: f"validate ({len(r.checks)} checks)", lambda: validate(build))
    stages.run("write release (Parquet, card, task folders)", lambda: write_release(build, report, output, ReleaseInfo()))
    records = sum(len(r) for _, _, r in build.records())
    return stages, dict(source.rows_in), len(build.configs), records


def release_figures(output: Path, rows_in: dict[str, int]) -> None:
    """Rows, copied-unchanged reasons and demonstrations per config, read from the written Parquet."""
    import pyarrow.parquet as pq

    tables = {}
    for path in sorted(output.glob("*/*.parquet")):
        config, split = path.parent.name, path.name.split("-")[0]
        table = pq.read_table(path, columns=["id", "fewshot", "metadata"]).to_pydict()
        tables[config, split] = table
    configs = list(dict.fromkeys(config for config, _ in tables))
    splits = list(rows_in)
    original = {i: f for split in splits for i, f in zip(tables["original", split]["id"], tables["original", split]["fewshot"], strict=True)}
    reasons = sorted({m["skip_reason"] for t in tables.values() for m in t["metadata"] if m["skip_reason"]})
    print("\n| config | " + " | ".join(f"{s} rows (of {rows_in[s]})" for s in splits) + " | "
          + " | ".join(f"{r} ({' / '.join(splits)})" for r in reasons) + " | demonstrations (original: "
          + f"{sum(map(len, original.values()))}) | items whose demonstrations differ from original's |")
    print("|---" * (2 + len(splits) + len(reasons)) + "|---|")
    all_kept = True
    for config in configs:
        rows = [len(tables[config, s]["id"]) for s in splits]
        all_kept &= rows == [rows_in[s] for s in splits]
        counts = {r: {s: 0 for s in splits} for r in reasons}
        shown, differ = 0, 0
        for split in splits:
            table = tables[config, split]
            for item_id, fewshot, metadata in zip(table["id"], table["fewshot"], table["metadata"], strict=True):
                if metadata["skip_reason"]:
                    counts[metadata["skip_reason"]][split] += 1
                demos = fewshot[:-1] if fewshot and fewshot[-1] == item_id else fewshot
                shown += len(demos)
                if config.startswith("gold_at_") or config == "original_zero_shot":
                    differ += bool(demos)
                elif config in ("ood_fewshot", "trivial_fewshot"):
                    differ += len(demos) != len(original[item_id])
                else:
                    differ += demos != original[item_id]
        print(f"| {config} | " + " | ".join(map(str, rows)) + " | "
              + " | ".join(" / ".join(str(counts[r][s]) for s in splits) for r in reasons)
              + f" | {shown} | {differ} |")
    print(f"\nevery config keeps every source item: {all_kept} ({len(configs)} configs)")


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--output", type=Path, help="keep the release here (default: a temporary folder)")
    parser.add_argument("--twice", action="store_true", help="build again and compare the Parquet bytes")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory() as tmp:
        output = args.output or Path(tmp) / "a"
        stages, rows_in, configs, records = timed_build(args.data / "mmlu", output)
        items = sum(rows_in.values())
        total = sum(wall for _, wall, _ in stages.rows)
        print(f"MMLU test+dev from {args.data / 'mmlu'}: {items} source items, {configs} configs, "
              f"{records} records written, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
        print("| stage | wall seconds | CPU seconds |\n|---|---|---|")
        for name, wall, cpu in stages.rows:
            print(f"| {name} | {wall:.1f} | {cpu:.1f} |")
        print(f"| **total** | **{total:.1f}** | {sum(cpu for _, _, cpu in stages.rows):.1f} |\n")
        print(f"{items / total:.0f} source items/s, {records / total:.0f} records/s; "
              f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB; "
              f"release {folder_mib(output):.0f} MiB; target < {TARGET_SECONDS} s: "
              f"{'met' if total < TARGET_SECONDS else 'MISSED'}")
        release_figures(output, rows_in)
        if args.twice:
            timed_build(args.data / "mmlu", Path(tmp) / "b")
            print(f"byte-identical Parquet across two builds: {parquet_digest(output) == parquet_digest(Path(tmp) / 'b')}")


if __name__ == "__main__":
    main()
