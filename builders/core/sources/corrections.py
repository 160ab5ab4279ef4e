"""Item-level corrections of a source: the one place where they are applied, for every builder, between loading
the source and the builder's steps (:func:`builders.core.pipeline.cli.build_and_validate`).

A correction is the source's own, not a builder's: a repaired key, an item that a benchmark's errata withdraw, a
key that a model consensus or a maintainer's ``--corrections`` file contradicts. Each is applied to the loaded
items, and an item it withdraws is excluded with its reason, so that every builder's release and card account
for it. None is declared yet: the source reaches the builder's steps as it was loaded.
"""

from __future__ import annotations

from typing import Any

from builders.core.sources.loading import LoadedSource


def apply_corrections(source: LoadedSource, options: Any) -> LoadedSource:
    """The source as every builder's steps see it, with its item-level corrections (none yet)."""
    return source
