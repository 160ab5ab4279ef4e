"""The choices-only model's figures of a split, kept on disk under the mcqforge cache: a rebuild of the same items
with the same code reads them back instead of fitting the models again (they cost most of a validation).

A figure is a function of the items the models score (each one's id, content key, options, gold and source place,
in the order they are scored), the split's size, the build's seed, and the code and libraries that read and fit
them; a figure's key is a hash of exactly these. A file that cannot be read or written is as no file: the models
are fitted, and the build is the same either way.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

from builders.core.items.record import MCQRecord
from builders.core.runtime import cache

FOLDER = "choices_only"
# what the figures are computed by: the features, the models, the folds and draws (content hashes, item_rng)
CODE = ("core/validation/adversary.py", "core/validation/adversary_store.py", "core/validation/boosted.py",
        "core/validation/option_features.py", "core/items/rng.py", "core/items/record.py")
LIBRARIES = ("scikit-learn", "numpy", "scipy", "threadpoolctl")


@lru_cache(maxsize=1)
def code_version() -> str:
    """A hash of the modules and the library versions the figures are computed by."""
    return cache.code_version(CODE, LIBRARIES)


def figure_key(what: str, chosen: Sequence[MCQRecord], items: int, seed: int) -> str:
    """The key of the figure ``what`` of the scored items ``chosen`` of a split of ``items`` items."""
    described = [[r.id, r.content_key, list(r.choices), r.answer, r.source, r.source_config, r.source_split,
                  r.source_index] for r in chosen]
    return cache.key_of([code_version(), what, seed, items, described])


def read(key: str) -> Any:
    """The figure kept under ``key``, wrapped as it was written ({"value": ...}), or None."""
    kept = cache.read_kept_json(FOLDER, f"{key}.json")
    return kept if isinstance(kept, dict) and "value" in kept else None


def write(key: str, value: Any) -> None:
    """Keep ``value`` (JSON) under ``key``."""
    cache.keep_json(FOLDER, f"{key}.json", {"value": value})
