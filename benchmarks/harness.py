"""What the benchmark scripts share: timing one builder process, and a digest of its Parquet files."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from builders.registry import BUILDERS  # noqa: E402


def run_builder(name: str, argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of the builder ``name`` (``python -m builders.<name> ARGV``) run from the
    repository (with ``env`` added to the environment)."""
    module = BUILDERS[name]
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", module, *argv, "--log-level", "WARNING"],
                               cwd=REPO, env={**os.environ, **(env or {}), "PYTHONPATH": str(REPO)})
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"build failed: {module} {' '.join(argv)}")
    return seconds, usage.ru_maxrss / 1024


def parquet_digest(folder: Path) -> str:
    """One hash over every Parquet file's path and bytes: equal digests mean byte-identical releases."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.parquet")):
        digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()
