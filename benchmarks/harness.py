"""What the benchmark scripts share: timing one builder process, and a digest of its Parquet files."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builders.registry import BUILDERS  # noqa: E402


@dataclass(frozen=True)
class Cost:
    """What one process cost: wall seconds, CPU seconds (user + system, every process it started included, those
    that outlived it too: ``benchmarks/subreaper.py``, as ``wait4`` reports them) and peak RSS in MiB (the largest
    of the process and its children)."""

    wall: float
    cpu: float
    peak_mib: float


def run_measured(command: list[str], env: dict[str, str] | None = None) -> Cost:
    """Run ``command`` from the repository (with ``env`` added to the environment); exit on failure."""
    start = time.perf_counter()
    # under a subreaper, so that the processes that outlive the command (a worker pool's forkserver) count too
    process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("subreaper.py")), *command], cwd=REPO,
                               env={**os.environ, **(env or {}), "PYTHONPATH": str(REPO)})
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}")
    return Cost(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def builder_command(name: str, argv: list[str]) -> list[str]:
    return [sys.executable, "-m", BUILDERS[name], *argv, "--log-level", "WARNING"]


def run_builder(name: str, argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of the builder ``name`` (``python -m builders.<name> ARGV``) run from the
    repository (with ``env`` added to the environment)."""
    cost = run_measured(builder_command(name, argv), env)
    return cost.wall, cost.peak_mib


def parquet_digest(folder: Path) -> str:
    """One hash over every Parquet file's path and bytes: equal digests mean byte-identical releases."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.parquet")):
        digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()
