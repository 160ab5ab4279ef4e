"""``push``: publish a trained model folder to a Hub model repo with its model card, then tag the version.

Publishing is the foundation's (:mod:`builders.core.release.publish`): the tag is refused if it exists, the
folder goes up as one commit, and the tag ``vX.Y.Z`` comes last.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from builders.core.errors import UserError
from builders.core.release.card import CARDS_DIR, ChangelogEntry, ReleaseInfo
from builders.core.release.publish import Published, prepare_release, publish_folder

from .sba_model import EVALUATIONS_FILE

logger = logging.getLogger(__name__)

CARD_TEMPLATE = CARDS_DIR / "sba_classifier.md"
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


def read_model_config(folder: Path) -> dict[str, Any]:
    path = Path(folder) / "config.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"{folder} is not a model folder (cannot read config.json: {error})") from None


def read_evaluations(folder: Path) -> list[dict[str, Any]]:
    path = Path(folder) / EVALUATIONS_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []


def record_evaluation(folder: Path, evaluation: dict[str, Any]) -> None:
    """Keep one evaluation per labels file in the model folder; ``push`` puts them on the card."""
    kept = [e for e in read_evaluations(folder) if e.get("labels_file") != evaluation.get("labels_file")]
    path = Path(folder) / EVALUATIONS_FILE
    path.write_text(json.dumps(kept + [evaluation], indent=2, sort_keys=True) + "\n", encoding="utf-8")


def render_model_card(folder: Path, release: ReleaseInfo) -> ModelCard:
    config = read_model_config(folder)
    training = config.get("sba_training")
    if not isinstance(training, dict):
        raise UserError(f"{folder}: config.json has no sba_training provenance; push publishes models made by "
                        "`python -m classifiers.sba train`")
    labels = {str(v).upper() for v in (config.get("id2label") or {}).values()}
    if labels != {"SBA", "SCA"}:
        raise UserError(f"{folder}: config id2label must name SBA and SCA, got {sorted(labels)}")
    evaluations = read_evaluations(folder)
    changelog = [ChangelogEntry(release.version or "unreleased", _summary(training))] + [
        e for e in release.changelog if e.version != release.version
    ]
    card_data = ModelCardData(
        license="apache-2.0", language=["en"], library_name="transformers", pipeline_tag="text-classification",
        base_model=_base_model(training.get("backbone", "")), tags=["mcqforge", "wicked", "single-best-answer"],
        mcqforge={"kind": "sba_classifier", "version": release.version,
                  "changelog": [{"version": e.version, "summary": e.summary} for e in changelog]},
    )
    context = {
        "title": f"SBA classifier {release.repo_id or ''}".strip(),
        "repo_id": release.repo_id or "<your-namespace>/<model>",
        "version": release.version,
        "threshold": float(config.get("sba_threshold", 0.5)),
        "kind": config.get("sba_kind", "sequence"),
        "input_format": config.get("sba_input", "question"),
        "max_length": config.get("sba_max_length", 512),
        "truncation_side": config.get("sba_truncation_side", "right"),
        "training": training,
        "recipe": training.get("recipe", {}),
        "data": _DataView(training.get("data") or {}),
        "calibration": training.get("calibration"),
        "evaluations": evaluations,
        "changelog": changelog,
    }
    return ModelCard.from_template(card_data, template_path=str(CARD_TEMPLATE), **context)


class _DataView(dict):
    """Attribute access with defaults for the card template (older folders may lack a field)."""

    def __getattr__(self, name: str) -> Any:
        defaults = {"train_counts": {}, "calibration_counts": {}, "labellers": [], "templates": []}
        return self.get(name, defaults.get(name))


def _base_model(backbone: str) -> str | None:
    """A Hub id for the card's base_model; a local folder (e.g. the packaged MiniLM) is not one."""
    return backbone if _HUB_ID.match(backbone or "") and not Path(backbone).exists() else None


def _summary(training: dict[str, Any]) -> str:
    recipe = training.get("recipe", {})
    data = training.get("data", {})
    return (f"{recipe.get('name', 'custom')} recipe on {training.get('backbone', '?')}, "
            f"{data.get('train_questions', '?')} questions from {data.get('file', '?')}")


def push_model(folder: Path, repo_id: str, version: str, private: bool = False) -> Published:
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"model folder {folder} does not exist")
    release = prepare_release(repo_id, version, repo_type="model")
    card = render_model_card(folder, release)
    with tempfile.TemporaryDirectory(prefix="mcqforge-model-") as tmp:
        staged = Path(tmp) / "model"
        shutil.copytree(folder, staged)
        card.save(staged / "README.md")
        return publish_folder(staged, release, private=private, repo_type="model")
