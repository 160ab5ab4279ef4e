"""Reading a release back: a release folder, or a published release ``REPO@vX.Y.Z`` fetched from the Hub.

Every command that reads a release (``evaluate``, ``export``, the metrics, MMLU-Pro+'s audit sheet) opens it here,
so that a spec is understood, fetched and refused the same way everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from builders.core.errors import UserError, tag_hint
from builders.core.runtime.cache import cache_root

if TYPE_CHECKING:
    import datasets


def open_release(spec: str, patterns: Sequence[str]) -> Path:
    """The folder of the release ``spec``: a local folder as it is, or the files of ``REPO@TAG`` that match
    ``patterns`` (``fnmatch`` patterns of paths in the repo), fetched from the Hub."""
    folder = Path(spec).expanduser()
    if folder.is_dir():
        return folder
    repo, sep, tag = spec.partition("@")
    if not sep or not repo or not tag:
        raise UserError(f"{spec}: expected a release folder or REPO@vX.Y.Z")
    from huggingface_hub import constants, snapshot_download

    try:
        # real files, not the cache's links into blobs/: lm-eval resolves a YAML file's links and then looks for
        # utils.py beside the blob
        return Path(snapshot_download(repo, repo_type="dataset", revision=tag, local_dir=release_cache(repo, tag),
                                      allow_patterns=list(patterns)))
    except Exception as error:  # huggingface_hub raises many types; the user needs one line
        name = type(error).__name__
        hint = tag_hint(tag) if name in ("RevisionNotFoundError", "LocalEntryNotFoundError") else ""
        if constants.HF_HUB_OFFLINE:  # offline clusters: a fetched release stays readable, others cannot be fetched
            raise UserError(f"cannot read {spec}: HF_HUB_OFFLINE is set and it is not in the release cache "
                            f"({release_cache(repo, tag)}); fetch it once where the Hub is reachable{hint}") from None
        raise UserError(f"cannot fetch {spec} from the Hub ({name}){hint}") from None


def release_cache(repo: str, tag: str) -> Path:
    """Where ``REPO@TAG``'s files are kept (under ``$MCQFORGE_CACHE``): a tag's files never change."""
    return cache_root() / "releases" / f"{repo.replace('/', '--')}--{tag}"


def load_release_split(dataset: str, config: str, split: str, revision: str | None) -> datasets.Dataset:
    """One config's split of a release folder or a Hub dataset repo (at ``revision``), read by ``datasets``."""
    import datasets

    try:
        return datasets.load_dataset(dataset, config, split=split, revision=revision)
    except Exception as error:  # datasets raises many types; the user needs one line
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise UserError(f"cannot load {dataset} config {config!r} split {split!r}: {type(error).__name__}: "
                        f"{first}") from None
