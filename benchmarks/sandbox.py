"""Sandbox throughput and containment: executions per second of a trivial program, isolated evaluations per
second, and how much host memory the issue-13 attacks take.

    python benchmarks/sandbox.py --runs 300 --workers 2 [--site-packages] [--unsafe]
        [--baseline OLD_SANDBOX.py]   # a one-file sandbox: `git show 7c1ce25:builders/core/sandbox.py > /tmp/old.py`
        [--attacks]                   # 6 children x 400 MiB and 8 SysV segments x 256 MiB vs a 512 MiB budget

Throughputs are measured interleaved with the baseline (when given), so that both see the same machine load.
The memory figure is the largest drop of the host's MemAvailable during the attack, sampled every 20 ms
(other processes on the machine add noise).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builders.core import sandbox as current  # noqa: E402

MiB = 1 << 20


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location("baseline_sandbox", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def trivial_runs(module, runs: int, workers: int, unsafe: bool, site_packages: bool) -> tuple[float, int, str]:
    sandbox = module.Sandbox(workers=workers, unsafe=unsafe, site_packages=site_packages)
    programs = [f"print({i} * {i})" for i in range(runs)]
    started = time.perf_counter()
    results = sandbox.run_many(programs)
    elapsed = time.perf_counter() - started
    wrong = sum(result.stdout != f"{i * i}\n" for i, result in enumerate(results))
    return runs / elapsed, wrong, getattr(sandbox, "mechanism", "per-process rlimits only")


def isolated_evaluations(runs: int, workers: int, unsafe: bool) -> tuple[float, int]:
    limits = current.Limits(cpu_seconds=5, wall_seconds=10.0, memory_bytes=512 * MiB, processes=2)
    sandbox = current.Sandbox(limits, workers=workers, unsafe=unsafe)
    units = [current.Unit(None, (f"{i} * {i}",)) for i in range(runs)]
    started = time.perf_counter()
    outcomes = current.run_isolated(sandbox, units, 2.0, 1000)
    elapsed = time.perf_counter() - started
    wrong = sum(outcome["calls"][0].get("repr") != str(i * i) for i, outcome in enumerate(outcomes))
    return runs / elapsed, wrong


def mem_available() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable")


def largest_drop(action) -> tuple[int, object]:
    baseline = mem_available()
    lowest = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            lowest[0] = min(lowest[0], mem_available())
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = action()
    finally:
        done.set()
        sampler.join()
    return baseline - lowest[0], result


def attacks(module, name: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_sandbox import SIX_CHILDREN, SYSV_SEGMENTS, held_bytes  # the programs of the tests

    budget = module.Limits(cpu_seconds=10, wall_seconds=30, memory_bytes=512 * MiB, processes=4)
    sandbox = module.Sandbox(budget, workers=1)
    for label, program in (("6 children x 400 MiB", SIX_CHILDREN), ("8 SysV segments x 256 MiB", SYSV_SEGMENTS)):
        drop, result = largest_drop(lambda program=program: sandbox.run(program))
        print(f"  [{name}] {label}: held {held_bytes(result.stdout) / MiB:.0f} MiB by its own count, host "
              f"MemAvailable fell {drop / MiB:.0f} MiB (budget 512 MiB, 1.5x = 768 MiB); status {result.status}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved measurements of each")
    parser.add_argument("--site-packages", action="store_true", help="start Python with site-packages")
    parser.add_argument("--unsafe", action="store_true", help="plain subprocess, no bubblewrap")
    parser.add_argument("--baseline", type=Path, help="another sandbox.py to measure beside this one")
    parser.add_argument("--attacks", action="store_true", help="measure the memory attacks too")
    args = parser.parse_args()
    modules = [("current", current)] + ([("baseline", load_module(args.baseline))] if args.baseline else [])
    rates: dict[str, list[float]] = {name: [] for name, _ in modules}
    rates["isolated"] = []
    mechanism = ""
    for _ in range(args.rounds):
        for name, module in modules:
            rate, wrong, how = trivial_runs(module, args.runs, args.workers, args.unsafe, args.site_packages)
            rates[name].append(rate)
            mechanism = how if name == "current" else mechanism
            print(f"{name}: {args.runs} trivial executions, {rate:.1f}/s ({wrong} wrong)", flush=True)
        rate, wrong = isolated_evaluations(args.runs, args.workers, args.unsafe)
        rates["isolated"].append(rate)
        print(f"isolated: {args.runs} expressions, each in a forked process, {rate:.1f}/s ({wrong} wrong)", flush=True)
    print(f"memory limit: {mechanism}")
    for name, values in rates.items():
        print(f"{name:>9}: mean {sum(values) / len(values):.1f}/s over {len(values)} rounds, workers={args.workers}")
    if args.baseline:
        ratio = sum(rates["current"]) / sum(rates["baseline"])
        print(f"current / baseline trivial throughput: {ratio:.2f}")
    if args.attacks:  # this sandbox only: the old one let them take 2.2 and 1.8 GiB of the host
        attacks(current, "current")


if __name__ == "__main__":
    main()
