"""Versioned publishing: one commit with every file, then the tag ``vX.Y.Z`` on exactly that commit.

The tag comes last, so a run that dies mid-way leaves no tag and re-running completes the release.
A version whose tag exists is refused before anything is uploaded: a released version is never
rewritten. The token comes from ``HF_TOKEN`` or the ``huggingface_hub`` login and is never printed.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from huggingface_hub import HfApi, get_token
from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

from .errors import ReleaseError
from .release import ChangelogEntry, ReleaseInfo, read_changelog

logger = logging.getLogger(__name__)
VERSION = re.compile(r"^\d+\.\d+\.\d+$")


@dataclass(frozen=True)
class Published:
    url: str
    tag: str
    commit: str


def version_tag(version: str) -> str:
    if not VERSION.match(version or ""):
        raise ReleaseError(f"--version must look like X.Y.Z (semantic version), got {version!r}")
    return f"v{version}"


def _api() -> HfApi:
    if not get_token():
        raise ReleaseError("no Hub token: set HF_TOKEN or run `hf auth login` before --push")
    return HfApi()


def prepare_release(repo_id: str, version: str, repo_type: str = "dataset") -> ReleaseInfo:
    """Refuse an existing tag, and carry the changelog forward from the previous release's card."""
    tag = version_tag(version)
    api = _api()
    try:
        refs = api.list_repo_refs(repo_id, repo_type=repo_type)
    except RepositoryNotFoundError:
        return ReleaseInfo(repo_id, version, [])
    except HfHubHTTPError as error:
        raise ReleaseError(f"cannot read the refs of {repo_id}: {_one_line(error)}") from None
    if tag in {t.name for t in refs.tags}:
        raise ReleaseError(f"{repo_id} already has tag {tag}; a released version is never rewritten, choose a new --version")
    return ReleaseInfo(repo_id, version, _previous_changelog(api, repo_id, repo_type))


def _previous_changelog(api: HfApi, repo_id: str, repo_type: str) -> list[ChangelogEntry]:
    try:
        path = api.hf_hub_download(repo_id, "README.md", repo_type=repo_type, revision="main")
    except (EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError):
        return []
    return read_changelog(Path(path).read_text(encoding="utf-8"))


def publish_folder(folder: Path, release: ReleaseInfo, private: bool = False, repo_type: str = "dataset") -> Published:
    """Upload ``folder`` as one commit (deleting files of earlier releases that it no longer has), then tag it."""
    assert release.repo_id and release.version
    tag = version_tag(release.version)
    api = _api()
    try:
        api.create_repo(release.repo_id, repo_type=repo_type, private=private, exist_ok=True)
        commit = api.upload_folder(
            repo_id=release.repo_id, repo_type=repo_type, folder_path=str(folder),
            commit_message=f"Release {tag}", delete_patterns=["*", "**/*"],
        )
        revision = commit.oid or api.repo_info(release.repo_id, repo_type=repo_type).sha
        api.create_tag(release.repo_id, tag=tag, revision=revision, repo_type=repo_type,
                       tag_message=f"mcqforge release {tag}")
    except HfHubHTTPError as error:
        raise ReleaseError(f"publishing {release.repo_id} {tag} failed, no tag was created: {_one_line(error)}") from None
    prefix = "datasets/" if repo_type == "dataset" else ""
    url = f"{api.endpoint}/{prefix}{release.repo_id}"
    logger.info("published %s at %s, tag %s (commit %s)", release.repo_id, url, tag, revision)
    return Published(url, tag, revision)


def _one_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
