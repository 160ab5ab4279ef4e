"""``mcqforge <command> ...``: the same as ``python -m builders.<command> ...``."""

from __future__ import annotations

import importlib
import sys
from typing import Sequence

from builders.registry import BUILDERS

# commands that are not builders -> module with main(argv)
TOOLS = {
    "metrics": "builders.metrics",
    "evaluate": "builders.evaluate",
    "export": "builders.export",
    "diff": "builders.diff",
    "publish": "builders.publish",
    "sba": "classifiers.sba",
}


def commands() -> dict[str, str]:
    """command -> module with main(argv): every builder of the registry, then the tools."""
    return {**BUILDERS, **TOOLS}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: mcqforge COMMAND [options]   (mcqforge COMMAND --help for its options)\n\ncommands: "
             + ", ".join(commands()))
    if argv and argv[0] in ("-h", "--help"):
        print(usage)
        return 0
    command = argv[0].replace("-", "_") if argv else ""
    if command not in commands():
        print(usage, file=sys.stderr)
        print(f"error: unknown command {argv[0]!r}" if argv else "error: no command given", file=sys.stderr)
        return 2
    return importlib.import_module(commands()[command]).main(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
