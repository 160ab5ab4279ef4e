"""mcqforge builders: each submodule is runnable as ``python -m builders.<name>``."""

import os
import sys

from .core.version import __version__  # noqa: F401  (the package's version, kept in builders.core)

# Run as a command (`python -m builders...` sets argv[0] to "-m" while it finds the module; the console script
# is `mcqforge`), a Ctrl-C while torch and datasets import is one line, as it is once the command runs; in the
# forkserver of a command's worker pool (`python -c "from multiprocessing.forkserver import main; ..."`), which
# imports the command again, it is silent. A program that imports builders as a library keeps its own hook.
_AS_A_COMMAND = sys.argv[:1] == ["-m"] or os.path.basename(sys.argv[0] if sys.argv else "") == "mcqforge"
_IN_A_FORKSERVER = sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules
if _AS_A_COMMAND or _IN_A_FORKSERVER:
    from .core.errors import report_interruptions

    sys.excepthook = report_interruptions(sys.excepthook, "interrupted" if _AS_A_COMMAND else None)
