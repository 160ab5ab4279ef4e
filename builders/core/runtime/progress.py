"""Progress bars: on a terminal only, and never with ``--no-progress``.

With stderr going to a file, a bar writes ``\\r``-joined frames (``read mmlu/test: 0it``) into the log lines. Every
bar of mcqforge is made by :func:`bar`; :func:`configure` (the command line calls it once its arguments parse)
also turns off the bars of the libraries a build loads (datasets, huggingface_hub, transformers, lm-eval), through
the variables they read when they are imported and, for those already imported, their own switches.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable

_enabled: bool | None = None  # None: not configured, bars show on a terminal (and in a notebook)

# read at import by huggingface_hub, datasets and tqdm itself (transformers, sentence-transformers and lm-eval
# make plain tqdm bars)
LIBRARY_SWITCHES = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS", "TQDM_DISABLE")


def on_a_terminal() -> bool:
    """stderr is a terminal, or this runs in a notebook kernel (whose bars are widgets)."""
    return "ipykernel" in sys.modules or (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())


def enabled() -> bool:
    return on_a_terminal() if _enabled is None else _enabled


def configure(show: bool | None = None) -> None:
    """``show``: False for ``--no-progress``; None for bars on a terminal only."""
    global _enabled
    _enabled = on_a_terminal() if show is None else show
    if _enabled:
        return
    for variable in LIBRARY_SWITCHES:
        os.environ[variable] = "1"
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()


def bar(iterable: Iterable[Any] | None = None, **options: Any):
    """A ``tqdm`` bar that shows only where :func:`enabled` says so (``disable=True`` still hides it)."""
    from tqdm.auto import tqdm

    options["disable"] = bool(options.get("disable")) or not enabled()
    return tqdm(iterable, **options)
