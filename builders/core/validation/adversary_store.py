"""The choices-only model's figures of a split, kept on disk under the mcqforge cache: a rebuild of the same items
with the same code reads them back instead of fitting the models again (they cost most of a validation).

A figure is a function of the items the models score (each one's id, content key, options, gold and source place,
in the order they are scored), the split's size, the build's seed, and the code and libraries that read and fit
them; a figure's key is a hash of exactly these. A file that cannot be read or written is as no file: the models
are fitted, and the build is the same either way.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Sequence

from builders.core.items.record import MCQRecord
from builders.core.runtime.cache import cache_root, write_atomically

FOLDER = "choices_only"
_CORE = Path(__file__).resolve().parents[1]  # builders/core
# what the figures are computed by: the features, the models, the folds and draws (content hashes, item_rng)
CODE = ("validation/adversary.py", "validation/adversary_store.py", "validation/boosted.py",
        "validation/option_features.py", "items/rng.py", "items/record.py")
LIBRARIES = ("scikit-learn", "numpy", "scipy", "threadpoolctl")


@lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the modules and the library versions the figures are computed by."""
    digest = hashlib.sha256()
    for module in CODE:
        digest.update(module.encode() + b"\0" + (_CORE / module).read_bytes() + b"\0")
    for library in LIBRARIES:
        digest.update(f"{library}=={metadata.version(library)}\0".encode())
    return digest.hexdigest()


def figure_key(what: str, chosen: Sequence[MCQRecord], items: int, seed: int) -> str:
    """The key of the figure ``what`` of the scored items ``chosen`` of a split of ``items`` items."""
    described = [[r.id, r.content_key, list(r.choices), r.answer, r.source, r.source_config, r.source_split,
                  r.source_index] for r in chosen]
    text = json.dumps([code_version(), what, seed, items, described], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _path(key: str) -> Path:
    return cache_root() / FOLDER / key[:2] / f"{key}.json"


def read(key: str) -> Any:
    """The figure kept under ``key``, wrapped as it was written ({"value": ...}), or None."""
    try:
        kept = json.loads(_path(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return kept if isinstance(kept, dict) and "value" in kept else None


def write(key: str, value: Any) -> None:
    """Keep ``value`` (JSON) under ``key``, whole or not at all; a cache that cannot be written is as none."""
    data = json.dumps({"value": value}).encode("utf-8")
    try:
        write_atomically(_path(key), lambda file: file.write(data))
    except OSError:
        pass
