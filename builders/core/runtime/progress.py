"""Progress bars: on a terminal only, and never with ``--no-progress``.

With stderr going to a file, a bar writes ``\\r``-joined frames (``read mmlu/test: 0it``) into the log lines. Every
bar of mcqforge is made by :func:`bar`; :func:`configure` (the command line calls it once its arguments parse)
also turns off the bars of the libraries a build loads (datasets, huggingface_hub, transformers, lm-eval), through
the variables they read when they are imported and, for those already imported, their own switches.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Iterable

logger = logging.getLogger(__name__)
# Without a terminal, a stage that runs longer than this logs a line at this interval (a WiCkeD MMLU build ran 22
# minutes with two log lines): what it has done, of how many, and the time left.
LOG_INTERVAL_S = 60.0

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
    if "transformers" in sys.modules:  # its "Loading weights" bar, once imported (TQDM_DISABLE is read at import)
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()


class _LogLines:
    """A stream for tqdm that logs each frame it writes as one line (no ``\\r``, no ANSI code)."""

    def write(self, text: str) -> None:
        for frame in text.split("\r"):
            if frame.strip():
                logger.info("%s", frame.strip())

    def flush(self) -> None:
        pass


def bar(iterable: Iterable[Any] | None = None, **options: Any):
    """A ``tqdm`` bar that shows only where :func:`enabled` says so (``disable=True`` still hides it); elsewhere
    a stage that lasts longer than :data:`LOG_INTERVAL_S` logs a line at that interval."""
    if options.get("disable"):
        from tqdm.auto import tqdm

        return tqdm(iterable, **options)
    if enabled():
        from tqdm.auto import tqdm

        return tqdm(iterable, **options)
    from tqdm import tqdm as plain

    total = options.get("total", len(iterable) if hasattr(iterable, "__len__") else None)  # type: ignore[arg-type]
    counted = "{n_fmt}/{total_fmt} {unit} ({percentage:.0f}%), {elapsed} elapsed, {remaining} left" \
        if total else "{n_fmt} {unit}, {elapsed} elapsed"
    options.update(file=_LogLines(), mininterval=LOG_INTERVAL_S, maxinterval=LOG_INTERVAL_S, delay=LOG_INTERVAL_S,
                   ascii=True, leave=False, dynamic_ncols=False, bar_format="{desc}: " + counted)
    return plain(iterable, **options)
