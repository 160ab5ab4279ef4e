"""``mcqforge <command> ...``: the same as ``python -m builders.<command> ...``."""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

# command -> module with main(argv)
COMMANDS = {
    "wicked": "builders.wicked",
    "gsm_mc": "builders.gsm_mc",
    "math_mc": "builders.math_mc",
    "python_io": "builders.python_io",
    "mmlu_pro_plus": "builders.mmlu_pro_plus",
    "contrast_sets": "builders.contrast_sets",
    "perturbations": "builders.perturbations",
    "metrics": "builders.metrics",
    "evaluate": "builders.evaluate",
    "export": "builders.export",
    "sba": "classifiers.sba",
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: mcqforge COMMAND [options]   (mcqforge COMMAND --help for its options)\n\ncommands: "
             + ", ".join(COMMANDS))
    if argv and argv[0] in ("-h", "--help"):
        print(usage)
        return 0
    command = argv[0].replace("-", "_") if argv else ""
    if command not in COMMANDS:
        print(usage, file=sys.stderr)
        print(f"error: unknown command {argv[0]!r}" if argv else "error: no command given", file=sys.stderr)
        return 2
    return importlib.import_module(COMMANDS[command]).main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
