"""Start-up: a command's ``--help`` imports none of the heavy libraries, which load only where a build or a command
uses them (a model, the Arrow writer, the choices-only model, math-verify, a Hub upload). A behaviour test, not a
timing one: each command runs in a fresh interpreter, and the heavy modules it left loaded are listed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builders.__main__ import TOOLS
from builders.registry import BUILDERS, METRICS

REPO = Path(__file__).resolve().parents[1]

HEAVY = ("torch", "transformers", "sentence_transformers", "datasets", "sklearn", "pyarrow", "pandas", "scipy",
         "matplotlib", "lm_eval", "inspect_ai", "math_verify", "sympy", "huggingface_hub", "openai", "httpx",
         "networkx", "yaml")

# ``python -m MODULE ARGS --help`` in a fresh interpreter; prints the heavy top-level modules then loaded
PROBE = """
import json, runpy, sys
module, heavy = sys.argv[1], set(json.loads(sys.argv[2]))
sys.argv = [module, *sys.argv[3:], "--help"]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
except SystemExit:
    pass
print(json.dumps(sorted(heavy & {name.partition(".")[0] for name in sys.modules})), file=sys.__stderr__)
"""

COMMANDS = [
    *[[module] for module in BUILDERS.values()],
    ["builders"],
    *[["builders", name] for name in [*BUILDERS, *TOOLS]],
    *[["builders.metrics", name] for name in METRICS],
]


def heavy_modules_after_help(module: str, *args: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, module, json.dumps(HEAVY), *args], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "usage:" in result.stdout, result.stdout[-2000:]
    return json.loads(result.stderr.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_help_imports_no_heavy_library(command):
    assert heavy_modules_after_help(*command) == []


@pytest.mark.slow
@pytest.mark.parametrize("module", BUILDERS.values())
def test_a_builders_help_loads_no_numpy(module):
    """The contrast sets' --help loaded numpy with the mining's modules (0.42 CPU s, over the 0.3 s a --help may
    take); a builder's options are checked before any of it is needed."""
    result = subprocess.run([sys.executable, "-c", PROBE, module, json.dumps(["numpy"])], capture_output=True,
                            text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0 and "usage:" in result.stdout, result.stderr[-2000:]
    assert json.loads(result.stderr.strip().splitlines()[-1]) == []
