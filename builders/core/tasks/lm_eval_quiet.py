"""lm-eval's log lines that say nothing about what the user did, kept out of ``builders evaluate``'s output: the
``--metadata`` hint of every custom-dataset task, the chat-template hint for a model with no template, git's
complaint outside a checkout."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path


class _NoMetadataHint(logging.Filter):
    """lm-eval warns, once per task, that a task with a ``custom_dataset`` could take ``--metadata``: every
    release task reads its data that way, so the hint was 2 lines per task (174 for the perturbations
    release), none of them about anything the user did."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Custom kwargs can be passed to `--metadata`" not in record.getMessage()


class _NoChatTemplateHint(logging.Filter):
    """lm-eval warns that a model whose name says "instruct" or "chat" "appears to be an instruct or chat variant
    but chat template is not applied": noise for a model whose tokenizer has no chat template to apply."""

    def __init__(self, models_without_template: set[str]) -> None:
        super().__init__()
        self.models = models_without_template

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "chat template is not applied" not in message or not any(m in message for m in self.models)


WITHOUT_CHAT_TEMPLATE: set[str] = set()  # pretrained= values whose tokenizer has none


def quiet_lm_eval() -> None:
    import lm_eval.evaluator

    task_logger = logging.getLogger("lm_eval.api.task")
    if not any(isinstance(f, _NoMetadataHint) for f in task_logger.filters):
        task_logger.addFilter(_NoMetadataHint())
    evaluator_logger = logging.getLogger("lm_eval.evaluator")
    if not any(isinstance(f, _NoChatTemplateHint) for f in evaluator_logger.filters):
        evaluator_logger.addFilter(_NoChatTemplateHint(WITHOUT_CHAT_TEMPLATE))
    # lm-eval records `git describe` of the working folder, and git says "fatal: not a git repository" on the
    # terminal wherever that is not a checkout: the same hash, without git's complaint
    lm_eval.evaluator.get_git_commit_hash = _git_commit_quietly


def _git_commit_quietly() -> str | None:
    """lm-eval's get_git_commit_hash, with git's stderr dropped."""
    import subprocess

    from lm_eval.loggers.utils import get_commit_from_path

    try:
        return subprocess.check_output(["git", "describe", "--always"], stderr=subprocess.DEVNULL).strip().decode()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return get_commit_from_path(os.getcwd())


def has_no_chat_template(pretrained: str) -> bool:
    """A local model folder whose tokenizer defines no chat template (nothing for lm-eval to apply)."""
    folder = Path(pretrained)
    if not folder.is_dir():
        return False
    config = folder / "tokenizer_config.json"
    try:
        declared = "chat_template" in json.loads(config.read_text(encoding="utf-8")) if config.is_file() else False
    except (OSError, ValueError):
        return False
    return not declared and not any(folder.glob("chat_template.*"))
