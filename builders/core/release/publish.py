"""Versioned publishing: one commit with every file, then the tag ``vX.Y.Z`` on exactly that commit.

Everything that can refuse a release is checked before any work starts (:func:`prepare_release`): the
version, the repo id, the token, that the Hub answers, and that the tag does not exist yet. Each refusal
is one line. The tag comes last, so a run that dies mid-way leaves no tag and re-running completes the
release; a released version is never rewritten. The token comes from ``HF_TOKEN`` or the
``huggingface_hub`` login and is never printed.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builders.core.errors import ReleaseError
from builders.core.release.card import ChangelogEntry, ReleaseInfo, read_changelog
from builders.core.runtime.redact import scrub_text, scrub_url

if TYPE_CHECKING:
    from huggingface_hub import HfApi

# huggingface_hub (and httpx2, its HTTP client, whose transport errors it raises) are imported by the functions
# that call the Hub: a command line parses, and a bad flag is refused, before those 0.5 s are spent.

logger = logging.getLogger(__name__)


class _RequestLinesAtDebugOnly(logging.Filter):
    """The HTTP client logs every request at INFO, with its full URL: during a push that is a line per file,
    and on the Hub an upload URL is a signed storage URL (its query string is a credential for that upload).
    Those lines pass only when mcqforge logs at DEBUG; the client's warnings and errors always pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or logger.isEnabledFor(logging.DEBUG)


_REQUEST_FILTER = _RequestLinesAtDebugOnly()
for _client_logger in ("httpx2", "httpx"):
    if not any(isinstance(f, _RequestLinesAtDebugOnly) for f in logging.getLogger(_client_logger).filters):
        logging.getLogger(_client_logger).addFilter(_REQUEST_FILTER)
VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
HUB_TIMEOUT = 5.0  # seconds for the reachability probe: an offline run fails in seconds, not minutes


@dataclass(frozen=True)
class Published:
    url: str
    tag: str
    commit: str


def version_tag(version: str | None) -> str:
    if not VERSION.match(version or ""):
        raise ReleaseError(f"--version must look like X.Y.Z (semantic version, e.g. 1.2.0), got {version!r}")
    return f"v{version}"


def check_repo_id(repo_id: str) -> None:
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if repo_id.count("/") != 1:
        raise ReleaseError(f"--push {repo_id!r}: a Hub repo id is NAMESPACE/NAME")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ReleaseError(f"--push {repo_id!r} is not a valid Hub repo id ({_one_line(error)})") from None


def _api() -> HfApi:
    from huggingface_hub import HfApi, get_token

    if not get_token():
        raise ReleaseError("no Hub token: set HF_TOKEN or run `hf auth login` before --push")
    return HfApi()


def check_hub_reachable(api: HfApi) -> None:
    """One authenticated request with a short timeout: is the Hub there, and does it take the token?"""
    import httpx2
    from huggingface_hub import constants, get_session, get_token

    url = f"{api.endpoint or constants.ENDPOINT}/api/whoami-v2"
    try:
        response = get_session().get(url, headers={"authorization": f"Bearer {get_token()}"}, timeout=HUB_TIMEOUT)
    except httpx2.HTTPError as error:
        raise ReleaseError(f"cannot reach the Hub at {scrub_url(api.endpoint or constants.ENDPOINT)} "
                           f"({type(error).__name__}); nothing was built") from None
    if response.status_code in (401, 403):
        raise ReleaseError("the Hub refused the token (HTTP %d): check HF_TOKEN or `hf auth login`"
                           % response.status_code)
    if response.status_code >= 400:
        raise ReleaseError(f"the Hub at {scrub_url(api.endpoint)} answered HTTP {response.status_code} to a token check")


def check_online() -> None:
    """``HF_HUB_OFFLINE`` (which offline clusters set) makes every Hub call raise: say so before any work."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        raise ReleaseError("HF_HUB_OFFLINE is set: --push needs the Hub; unset HF_HUB_OFFLINE (or point HF_ENDPOINT "
                           "at a Hub you can reach), or build with --output only")


def prepare_release(repo_id: str, version: str, repo_type: str = "dataset") -> ReleaseInfo:
    """Every check that can refuse a release, before any work; and the previous release's changelog."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    tag = version_tag(version)
    check_repo_id(repo_id)
    check_online()
    api = _api()
    check_hub_reachable(api)
    try:
        refs = api.list_repo_refs(repo_id, repo_type=repo_type)
    except RepositoryNotFoundError:
        return ReleaseInfo(repo_id, version, [])
    except (HfHubHTTPError, httpx2.HTTPError) as error:
        raise ReleaseError(f"cannot read the refs of {repo_id}: {_one_line(error)}") from None
    if tag in {t.name for t in refs.tags}:
        raise ReleaseError(f"{repo_id} already has tag {tag}; a released version is never rewritten, choose a new --version")
    return ReleaseInfo(repo_id, version, _previous_changelog(api, repo_id, repo_type))


def _previous_changelog(api: HfApi, repo_id: str, repo_type: str) -> list[ChangelogEntry]:
    import httpx2
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        path = api.hf_hub_download(repo_id, "README.md", repo_type=repo_type, revision="main")
    except (EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError):
        return []
    except (HfHubHTTPError, httpx2.HTTPError) as error:
        raise ReleaseError(f"cannot read the card of {repo_id}: {_one_line(error)}") from None
    return read_changelog(Path(path).read_text(encoding="utf-8"))


def publish_folder(folder: Path, release: ReleaseInfo, private: bool = False, repo_type: str = "dataset") -> Published:
    """Upload ``folder`` as one commit (deleting files of earlier releases that it no longer has), then tag it.

    Any failure (an HTTP error, or one of the Xet storage client, which raises its own errors) is one line that
    says what the repo holds now: the tag comes last, so the same command run again completes the release."""
    assert release.repo_id and release.version
    tag = version_tag(release.version)
    api = _api()
    existed, revision = True, None  # until known: a failure before create_repo leaves the Hub as it was
    try:
        existed = api.repo_exists(release.repo_id, repo_type=repo_type)
        api.create_repo(release.repo_id, repo_type=repo_type, private=private, exist_ok=True)
        commit = api.upload_folder(
            repo_id=release.repo_id, repo_type=repo_type, folder_path=str(folder),
            commit_message=f"Release {tag}", delete_patterns=["*", "**/*"],
        )
        revision = commit.oid or api.repo_info(release.repo_id, repo_type=repo_type).sha
        api.create_tag(release.repo_id, tag=tag, revision=revision, repo_type=repo_type,
                       tag_message=f"mcqforge release {tag}")
    except Exception as error:  # noqa: BLE001  every failure of the upload is one line (KeyboardInterrupt passes)
        logger.debug("publishing failed", exc_info=True)
        removed = not existed and revision is None and _remove_empty_repo(api, release.repo_id, repo_type)
        raise ReleaseError(_failure_line(release.repo_id, tag, error, existed, revision, removed)) from None
    assert revision is not None  # set before the tag, which succeeded
    prefix = "datasets/" if repo_type == "dataset" else ""
    url = scrub_url(f"{api.endpoint}/{prefix}{release.repo_id}")
    logger.info("published %s at %s, tag %s (commit %s)", release.repo_id, url, tag, revision)
    return Published(url, tag, revision)


def _remove_empty_repo(api: HfApi, repo_id: str, repo_type: str) -> bool:
    """Delete the repo this run created when nothing could be committed to it, so that the Hub is left as it
    was; False where that fails too (the failure line then says the repo is there, empty)."""
    try:
        api.delete_repo(repo_id, repo_type=repo_type, missing_ok=True)
    except Exception:  # noqa: BLE001  the upload's own failure is the one to report
        logger.debug("could not delete the empty repo %s", repo_id, exc_info=True)
        return False
    return True


def _failure_line(repo_id: str, tag: str, error: Exception, existed: bool, revision: str | None,
                  removed: bool) -> str:
    """What failed, what the repo holds now, and how to complete the release."""
    if revision is not None:
        left = f"the release is on main as commit {revision[:12]} without its tag"
    elif existed:
        left = "nothing was committed: the repo holds what it held before"
    elif removed:
        left = "nothing was committed: the repo this run created was deleted again"
    else:
        left = "nothing was committed: the repo was created and is empty"
    hint = " (a Hub without Xet storage needs HF_HUB_DISABLE_XET=1)" if "xet" in str(error).lower() else ""
    return (f"publishing {repo_id} {tag} failed ({type(error).__name__}: {_one_line(error)}){hint}; {left}; "
            f"no tag was created: run the same command again to complete the release")


def _one_line(error: Exception) -> str:
    text = scrub_text(str(error)).strip().splitlines()
    return text[0][:300] if text else type(error).__name__
