"""The programs that run inside the sandbox, as modules of their own (linted and type-checked like the rest).

They run with ``python -S``, in a root where this package is not installed: each uses the standard library
only, and a sibling module (:mod:`unit`) only through its own folder, which the sandbox mounts beside them
(``/sandbox``, read-only; the unsafe mode's working folder). The parent reads their text with
:func:`program_text` (importlib.resources, so that an installed wheel works as well as a checkout) and hands it
to the sandbox as files: never as ``-c`` strings.
"""

from __future__ import annotations

from functools import lru_cache
from importlib.resources import files

#: The sibling modules every sandbox run carries beside its program, by file name.
TRUSTED_FILES = ("launcher.py", "unit.py")


@lru_cache(maxsize=None)
def program_text(name: str) -> str:
    """The source of the program ``name`` (a file name of this folder, e.g. ``"evaluator.py"``)."""
    return files(__package__).joinpath(name).read_text(encoding="utf-8")
