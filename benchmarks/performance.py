"""Every full build against its I/O floor: CPU seconds, wall, peak memory, and how the cost grows with the input.

    python benchmarks/performance.py --data ../shared/data                     # every build of the table
    python benchmarks/performance.py --data ../shared/data --only wicked perturbations
    python benchmarks/performance.py --data ../shared/data --only wicked --scale 10   # ten copies of the input

Each build runs as its own process, as a user runs it, on the whole input and on its first quarter and half
(every JSON-lines file of the source cut to that share of its rows). CPU seconds are user + system time of the
builder and every process it started (``wait4``): on a shared machine wall time measures the neighbours. The
floor is reading the same source files and writing the same rows and configs (the release's Parquet tables)
with pyarrow alone, in its own process, timed around that work only. The exponent is the least-squares slope of
log CPU over log input share: 1.0 is linear. ``--scale N`` builds N concatenated copies of the input instead,
each copy's questions made distinct, and reports CPU and memory per copy against one.

Every build runs twice on one cache: cold (it fits every choices-only model, the contrast sets and MMLU-Pro+ embed
every text, MATH-MC asks math-verify, PythonIO runs every program in the sandbox) and warm (a rebuild: it reads
all of these back, and MMLU-Pro+ its LLM replies); the MMLU-Pro+ build gets its TPP options from a local llmock with
the scripted responder of ``mmlu_pro_plus.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness import REPO, Cost, builder_command, run_measured

sys.path[:0] = [str(REPO / "tests")]

SHARES = (0.25, 0.5)


@dataclass(frozen=True)
class Build:
    """One row of the table: the builder, the source folder (under --data) and its options given that folder."""

    builder: str
    source: str
    argv: Callable[[Path, Path], list[str]]  # (source copy, work folder) -> options
    needs_llm: bool = False
    cut_predictions: bool = True  # at 1/4 and 1/2, cut the predictions too (else only the source is cut)


def _predictions(name: str, *extra: str) -> Callable[[Path, Path], list[str]]:
    return lambda source, work: ["--source", str(source / "source"), "--predictions",
                                 str(source / "predictions" / name), *extra]


BUILDS = {
    "wicked": Build("wicked", "mmlu", lambda s, w: ["--benchmark", "mmlu", "--source", str(s),
                                                    "--sba-classifier", "none"]),
    "perturbations": Build("perturbations", "mmlu", lambda s, w: ["--source", str(s)]),
    "contrast_sets": Build("contrast_sets", "unifiedqa", lambda s, w: ["--benchmark", "unifiedqa", "--source", str(s),
                                                                       "--cache-dir", str(w / "cache")]),
    "mmlu_pro_plus": Build("mmlu_pro_plus", "mmlu_pro", lambda s, w: ["--source", str(s), "--cache-dir",
                                                                      str(w / "cache")], needs_llm=True),
    "python_io": Build("python_io", "python_io", lambda s, w: ["--source", str(s / "source"), "--predictions",
                                                               str(s / "predictions"), "--max-excluded", "1"],
                       cut_predictions=False),
    # PythonIO: the predictions cover CodeMind's 570 calls, not every assert of HumanEval and MBPP, and their first
    # quarter no MBPP train task (a build at 1/4 would have an empty split)
    "gsm_mc": Build("gsm_mc", "gsm8k", _predictions("gsm8k_test.jsonl")),
    "math_mc": Build("math_mc", "math", _predictions("math_test.jsonl", "--choices", "2", "--sets", "3",
                                                     "--max-excluded", "1")),
}


def copy_source(data: Path, build: Build, target: Path, share: float = 1.0, copies: int = 1) -> Path:
    """The build's source files under ``target``: each JSON-lines file cut to its first ``share`` of rows, or
    repeated ``copies`` times with every copy's questions (and ids) made distinct."""
    layouts = {"gsm8k": {"source": data / "gsm8k", "predictions": data / "predictions"},
               "math": {"source": data / "math", "predictions": data / "predictions"},
               "python_io": {"source": data, "predictions": data / "predictions" / "python_io"}}
    for name, folder in layouts.get(build.source, {"": data / build.source}).items():
        for path in sorted(folder.rglob("*.jsonl")):
            out = target / name / path.relative_to(folder)
            out.parent.mkdir(parents=True, exist_ok=True)
            lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
            if share < 1 and (build.cut_predictions or name != "predictions"):
                lines = lines[:max(1, round(len(lines) * share))]
            out.write_text("".join(f"{line}\n" for copy in range(copies) for line in _copy(lines, copy)),
                           encoding="utf-8")
    return target


def _copy(lines: list[str], copy: int) -> list[str]:
    if copy == 0:
        return lines
    rows = [json.loads(line) for line in lines]
    for row in rows:
        for key in ("question", "problem", "prompt"):
            if isinstance(row.get(key), str):
                row[key] = f"{row[key]} (copy {copy})"
        for key in ("id", "task_id", "unique_id"):
            if isinstance(row.get(key), (str, int)):
                row[key] = f"{row[key]}-copy{copy}"
    return [json.dumps(row, ensure_ascii=False) for row in rows]


def floor_child(source: Path, release: Path) -> None:
    """Read every source file and write the release's Parquet tables with pyarrow; print the CPU seconds of that."""
    import pyarrow.json as pajson
    import pyarrow.parquet as pq

    tables = {path.relative_to(release): pq.read_table(path) for path in sorted(release.rglob("*.parquet"))}
    before = resource.getrusage(resource.RUSAGE_SELF)
    read = [pajson.read_json(path) for path in sorted(source.rglob("*.jsonl"))]
    with tempfile.TemporaryDirectory() as tmp:
        for name, table in tables.items():
            (Path(tmp) / name).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, Path(tmp) / name)
    after = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime,
                      "rows_read": sum(t.num_rows for t in read)}))


def floor_cpu(source: Path, release: Path) -> float:
    import subprocess

    result = subprocess.run([sys.executable, __file__, "--floor", str(source), str(release)], cwd=REPO,
                            capture_output=True, text=True, check=True)
    return float(json.loads(result.stdout.splitlines()[-1])["cpu"])


def exponent(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of log(cpu) over log(share)."""
    xs, ys = [math.log(s) for s, _ in points], [math.log(c) for _, c in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


class Runner:
    def __init__(self, data: Path, work: Path, llm_argv: list[str]):
        self.data, self.work, self.llm_argv, self.runs = data, work, llm_argv, 0

    def build(self, build: Build, share: float = 1.0, copies: int = 1, cache: Path | None = None) -> tuple[Cost, Path, Path]:
        self.runs += 1
        folder = self.work / f"run{self.runs}"
        source = copy_source(self.data, build, folder / "source", share, copies)
        release = folder / "release"
        argv = [*build.argv(source, cache or folder), *(self.llm_argv if build.needs_llm else []),
                "--output", str(release), "--no-progress"]
        cost = run_measured(builder_command(build.builder, argv), env={"MCQFORGE_CACHE": str(cache or folder / "cache")})
        print(f"  {build.builder} share {share} x{copies}: {cost.cpu:.1f} CPU s, {cost.wall:.1f} s wall, "
              f"{cost.peak_mib:.0f} MiB", file=sys.stderr, flush=True)
        return cost, source, release


def table_rows(runner: Runner, names: list[str], scaling: bool) -> list[str]:
    rows = []
    for name in names:
        build = BUILDS[name]
        # cold, then warm on the same cache: every build keeps its choices-only figures there (and its
        # embeddings, LLM replies), so a rebuild of the same items pays for none of them
        cache = runner.work / f"{name}-cache"
        full, source, release = runner.build(build, cache=cache)
        warm, _, _ = runner.build(build, cache=cache)
        floor = floor_cpu(source, release)
        points = [(share, runner.build(build, share)[0].cpu) for share in SHARES] if scaling else []
        fit = f"{exponent([*points, (1.0, full.cpu)]):.2f}" if points else "–"
        at = " / ".join(f"{cpu:.1f}" for _, cpu in points) or "–"
        rows.append(f"| {name} (cold) | {full.cpu:.1f} | {full.wall:.1f} | {full.peak_mib:.0f} | {floor:.2f} | "
                    f"{full.cpu / floor:.0f}× | {at} | {fit} |")
        rows.append(f"| {name} (warm cache) | {warm.cpu:.1f} | {warm.wall:.1f} | {warm.peak_mib:.0f} | "
                    f"{floor:.2f} | {warm.cpu / floor:.0f}× | – | – |")
    return rows


def scale_rows(runner: Runner, names: list[str], copies: int) -> list[str]:
    rows = []
    for name in names:
        one, _, _ = runner.build(BUILDS[name])
        many, _, _ = runner.build(BUILDS[name], copies=copies)
        rows.append(f"| {name} | {one.cpu:.1f} | {one.peak_mib:.0f} | {many.cpu:.1f} | {many.peak_mib:.0f} | "
                    f"{many.cpu / one.cpu:.1f}× | {many.peak_mib / one.peak_mib:.2f}× |")
    return rows


def main() -> None:
    if sys.argv[1:2] == ["--floor"]:
        floor_child(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--only", nargs="+", choices=list(BUILDS), help="run only these builds")
    parser.add_argument("--no-scaling", action="store_true", help="skip the builds at 1/4 and 1/2 of the input")
    parser.add_argument("--scale", type=int, metavar="N", help="compare one copy of the input with N copies")
    args = parser.parse_args()
    names = args.only or list(BUILDS)
    if not (args.data / "mmlu").is_dir():
        parser.error(f"--data {args.data}: not the folder of real benchmark copies (../shared/data)")
    with tempfile.TemporaryDirectory(prefix="mcqforge-perf-") as tmp, ExitStack() as stack:
        llm_argv = []
        if any(BUILDS[name].needs_llm for name in names):
            from llm_server import start_llmock
            from mmlu_pro_plus import responder

            server = stack.enter_context(start_llmock(responder=responder))
            llm_argv = ["--llm-model", "scripted-gpt-4o", "--base-url", server.openai_base_url, "--api-key-env",
                        "none", "--llm-concurrency", "16"]
        runner = Runner(args.data.resolve(), Path(tmp), llm_argv)
        if args.scale:
            rows = scale_rows(runner, names, args.scale)
            print(f"| build | CPU s, 1 copy | peak MiB | CPU s, {args.scale} copies | peak MiB | CPU ratio | "
                  "memory ratio |\n|---|---|---|---|---|---|---|")
        else:
            rows = table_rows(runner, names, not args.no_scaling)
            print("| build (full data) | CPU s | wall s | peak RSS MiB | floor CPU s | ratio | CPU s at ¼ / ½ | "
                  "exponent |\n|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))


if __name__ == "__main__":
    main()
