"""Versioned publishing: one commit with every file, then the tag ``vX.Y.Z`` on exactly that commit.

Everything that can refuse a release is checked before any work starts (:func:`prepare_release`): the
version, the repo id, the token, that the Hub answers, and that the tag does not exist yet. Each refusal
is one line. The tag comes last, so a run that dies mid-way leaves no tag and re-running completes the
release; a released version is never rewritten. The token comes from ``HF_TOKEN`` or the
``huggingface_hub`` login and is never printed.

Builds that publish one repo at once are kept apart by the Hub's optimistic concurrency, not by a local lock
(two machines share none):

* a build commits only onto the head of ``main`` it read (``create_commit(parent_commit=...)``); when another
  commit came first the Hub answers 412, and the build gives that commit's build a moment to tag it (a build
  of the same version tags within moments), then reads ``main`` again;
* a tag is created once (the Hub answers 409 when it exists): exactly one build's ``create_tag`` succeeds, and
  that build has published the version, at its own commit;
* a build whose tag was refused may have put its commit on ``main`` meanwhile: it puts the published files
  back, in a commit onto its own (so that it never undoes anyone else's), and stops with one line naming the
  commit that was published.

Ctrl-C: a build interrupted before it committed deletes the repo it created, when still empty; one whose tag is
there has published, and says so (:class:`~builders.core.errors.WorkDone`). A second Ctrl-C does not cut these
clean-ups short (:func:`~builders.core.errors.interrupts_put_off`).
"""

from __future__ import annotations

import logging
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from builders.core.errors import ReleaseError, WorkDone, interrupts_put_off, raised_by_an_interrupt
from builders.core.release.card import ChangelogEntry, Published, ReleaseInfo, read_changelog
from builders.core.runtime.redact import remember_secret, scrub_text, scrub_url

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
COMMIT_ATTEMPTS = 8  # commits refused as stale (other builds moving main) before a build gives up
TAG_GRACE_S = 3.0  # after a refused commit: how long the build that committed first has to tag it
POLL_S = 0.1
BRANCH = "main"
NEVER_REWRITTEN = "a released version is never rewritten: choose a new --version"


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

    token = get_token()
    if not token:
        raise ReleaseError("no Hub token: set HF_TOKEN or run `hf auth login` before --push")
    remember_secret(token)  # hidden, in every spelling, from whatever the Hub answers
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
    tags = {t.name for t in refs.tags}
    if tag in tags:
        raise ReleaseError(f"{repo_id} already has tag {tag}; {NEVER_REWRITTEN}")
    return ReleaseInfo(repo_id, version, _previous_changelog(api, repo_id, repo_type, tags),
                       previous_tag=previous_tag(tags, version))


def previous_tag(tags: set[str], version: str) -> str | None:
    """The newest release tag before ``version``, or None."""
    new = tuple(map(int, version.split(".")))
    earlier = sorted((tuple(map(int, t[1:].split("."))), t) for t in tags
                     if VERSION.match(t[1:]) and tuple(map(int, t[1:].split("."))) < new)
    return earlier[-1][1] if earlier else None


def _previous_changelog(api: HfApi, repo_id: str, repo_type: str, tags: set[str]) -> list[ChangelogEntry]:
    """The changelog the new card continues: the one of the card on main (where a maintainer may have edited
    it), else, where that card has none that can be read (no card, invalid YAML, a card that is not
    mcqforge's), the one of the newest release's card, at its tag."""
    releases = sorted((tuple(map(int, t[1:].split("."))), t) for t in tags if VERSION.match(t[1:]))
    on_main = _card_changelog(api, repo_id, repo_type, BRANCH)
    if on_main or not releases:
        return on_main
    newest = releases[-1][1]
    logger.warning("the card on main of %s has no changelog that can be read: the new card's continues from %s's",
                   repo_id, newest)
    return _card_changelog(api, repo_id, repo_type, newest)


def _card_changelog(api: HfApi, repo_id: str, repo_type: str, revision: str) -> list[ChangelogEntry]:
    import httpx2
    from huggingface_hub.errors import (
        EntryNotFoundError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        path = api.hf_hub_download(repo_id, "README.md", repo_type=repo_type, revision=revision)
    except (EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError):
        return []
    except (HfHubHTTPError, httpx2.HTTPError) as error:
        raise ReleaseError(f"cannot read the card of {repo_id}: {_one_line(error)}") from None
    return read_changelog(Path(path).read_text(encoding="utf-8", errors="replace"))


def publish_folder(folder: Path, release: ReleaseInfo, private: bool = False, repo_type: str = "dataset") -> Published:
    """Upload ``folder`` as one commit onto main (deleting files of earlier releases that it no longer has), then
    tag it; ``release.published`` is set the moment the tag is there.

    Any failure (an HTTP error, or one of the Xet storage client, which raises its own errors) is one line that
    says what the repo holds now: the tag comes last, so the same command run again completes the release.
    Another build that published the same version first is one line too. A Ctrl-C once the tag is there raises
    :class:`WorkDone`; before, a ``KeyboardInterrupt`` whose message says what the repo holds."""
    assert release.repo_id and release.version
    push = _Push(_api(), release.repo_id, repo_type, version_tag(release.version))
    try:
        push.create_repo(private)
        push.commit_folder(folder)
        published = push.create_tag()
    except ReleaseError:
        raise
    except BaseException as error:  # every failure of the upload is one line, an interruption included
        if not isinstance(error, Exception) and not raised_by_an_interrupt(error):
            raise
        logger.debug("publishing failed", exc_info=True)
        with interrupts_put_off("interrupted: finishing the clean-up of the upload"):
            published = push.settle(error)
        release.published = published
        if raised_by_an_interrupt(error):
            raise interrupted_after(published) from None
    release.published = published
    logger.info("published %s at %s, tag %s (commit %s)", release.repo_id, published.url, published.tag,
                published.commit)
    return published


def interrupted_after(published: Published) -> WorkDone:
    """A Ctrl-C once the release is complete: the command says so, and ends with status 0."""
    return WorkDone(f"the release was complete: published {published.url} tag {published.tag}")


class _Push:
    """One build publishing one version: what it has done so far, for the clean-up and the failure line."""

    def __init__(self, api: HfApi, repo_id: str, repo_type: str, tag: str) -> None:
        self.api, self.repo_id, self.repo_type, self.tag = api, repo_id, repo_type, tag
        self.created = False  # this run (perhaps) created the repo
        self.parent: str | None = None  # the head of main its last commit was sent onto
        self.commit: str | None = None  # its commit, once on main

    def create_repo(self, private: bool) -> None:
        """Create the repo unless it exists; ``created`` tells whether this run did (409: another build did)."""
        from huggingface_hub.errors import HfHubHTTPError

        if self.api.repo_exists(self.repo_id, repo_type=self.repo_type):
            return
        self.created = True  # until the Hub says otherwise: an interrupted request may have created it
        try:
            self.api.create_repo(self.repo_id, repo_type=self.repo_type, private=private)
        except HfHubHTTPError as error:
            if _status(error) != 409:
                raise
            self.created = False

    def commit_folder(self, folder: Path) -> None:
        """The folder as one commit onto the head of main, read again each time another commit came first."""
        for _ in range(COMMIT_ATTEMPTS):
            tags, self.parent = self._refs()
            if self.tag in tags:
                raise ReleaseError(f"{self._taken(tags[self.tag], 'building')}; {NEVER_REWRITTEN}")
            try:
                self.commit = self._commit_onto(self.parent, folder, f"Release {self.tag}")
                return
            except Exception as error:
                if _status(error) not in (409, 412):  # 412: main moved on; 409: another commit in progress
                    raise
            winner = self._wait_for_tag()
            if winner is not None:
                raise ReleaseError(f"{self._taken(winner, 'publishing')}; {NEVER_REWRITTEN}")
        raise ReleaseError(f"publishing {self.repo_id} {self.tag}: main kept moving under it ({COMMIT_ATTEMPTS} "
                           "commits refused as stale, other builds are committing); nothing was committed: run the "
                           "same command again")

    def create_tag(self) -> Published:
        """Tag this build's commit; a 409 means another build tagged this version first."""
        from huggingface_hub.errors import HfHubHTTPError

        assert self.commit is not None
        try:
            self.api.create_tag(self.repo_id, tag=self.tag, revision=self.commit, repo_type=self.repo_type,
                                tag_message=f"mcqforge release {self.tag}")
        except HfHubHTTPError as error:
            if _status(error) != 409:
                raise
            winner = self._refs()[0].get(self.tag)
            if winner is None:
                raise
            with interrupts_put_off("interrupted: putting the published release back on main"):
                undone = self._put_back(winner)
            raise ReleaseError(f"{self._taken(winner, 'publishing')}; {undone}; {NEVER_REWRITTEN}") from None
        return self._published()

    def settle(self, error: BaseException) -> Published:
        """After a failure or an interruption: the release when its tag is there after all; else the repo left
        as it was (an empty repo this run created deleted again), and the line that says what it holds."""
        tags, main = self._state()
        interrupted = raised_by_an_interrupt(error)
        if self.commit is not None and tags.get(self.tag) == self.commit:
            return self._published()
        if tags.get(self.tag) is not None:  # another build won meanwhile
            taken = f"{self._taken(tags[self.tag], 'publishing')}; {NEVER_REWRITTEN}"
            raise KeyboardInterrupt(taken) if interrupted else ReleaseError(taken)
        if self.commit is not None:
            left = f"the release is on main as commit {self.commit[:12]} without its tag"
        elif self.parent is not None and main not in (None, self.parent):
            left = f"main moved to commit {main[:12]} as this build was committing (it may be its commit, without its tag)"
        elif self.created:
            left = "nothing was committed: " + ("the repo this run created was deleted again" if self._remove_if_empty()
                                                else "the repo was created and is empty")
        else:
            left = "nothing was committed: the repo holds what it held before"
        if interrupted:
            raise KeyboardInterrupt(f"{left}; run the same command again to complete the release")
        hint = " (a Hub without Xet storage needs HF_HUB_DISABLE_XET=1)" if "xet" in str(error).lower() else ""
        raise ReleaseError(f"publishing {self.repo_id} {self.tag} failed ({type(error).__name__}: {_one_line(error)})"
                           f"{hint}; {left}; no tag was created: run the same command again to complete the release")

    # -- the Hub's state and what a build writes ------------------------------------------------------------

    def _refs(self) -> tuple[dict[str, str], str | None]:
        """(tag -> commit, the head of main)."""
        refs = self.api.list_repo_refs(self.repo_id, repo_type=self.repo_type)
        return ({t.name: t.target_commit for t in refs.tags},
                next((b.target_commit for b in refs.branches if b.name == BRANCH), None))

    def _state(self) -> tuple[dict[str, str], str | None]:
        """:meth:`_refs`, or nothing known where the Hub cannot say (the failure may be that it is gone)."""
        try:
            return self._refs()
        except Exception:  # noqa: BLE001  the failure being settled is the one to report
            logger.debug("could not read the refs of %s", self.repo_id, exc_info=True)
            return {}, None

    def _commit_onto(self, parent: str | None, folder: Path, message: str) -> str:
        """One commit onto ``parent`` that makes main hold exactly ``folder``'s files (and .gitattributes)."""
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        files = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}
        there = self.api.list_repo_files(self.repo_id, repo_type=self.repo_type, revision=parent or BRANCH)
        operations: list[CommitOperationAdd | CommitOperationDelete] = [
            CommitOperationDelete(path) for path in there if path not in files and path != ".gitattributes"]
        operations += [CommitOperationAdd(path, str(source)) for path, source in files.items()]
        info = self.api.create_commit(self.repo_id, operations, commit_message=message, repo_type=self.repo_type,
                                      revision=BRANCH, parent_commit=parent)
        return info.oid  # main's head when nothing changed (a re-run onto its own untagged commit)

    def _wait_for_tag(self) -> str | None:
        """The commit another build tagged this version at, if it does within :data:`TAG_GRACE_S`."""
        deadline = time.monotonic() + TAG_GRACE_S
        while True:
            winner = self._refs()[0].get(self.tag)
            if winner is not None or time.monotonic() > deadline:
                return winner
            time.sleep(POLL_S)

    def _put_back(self, winner: str) -> str:
        """After another build tagged the version at ``winner``: main holds ``winner``'s files again, by a commit
        onto this build's own (refused, and nothing done, when main has moved on since). What was done, for the
        failure line."""
        from huggingface_hub import snapshot_download

        assert self.commit is not None
        if self.commit == winner:
            return "that commit holds this build's files"
        mine = self.commit[:12]
        moved_on = f"main has moved on since this build's commit {mine}, and is left as it is"
        try:
            if self._refs()[1] != self.commit:
                return moved_on
            with tempfile.TemporaryDirectory(prefix="mcqforge-published-") as tmp:
                files = Path(snapshot_download(self.repo_id, repo_type=self.repo_type, revision=winner, cache_dir=tmp))
                restored = self._commit_onto(self.commit, files, f"Put {self.tag} back on main (commit {winner[:12]})")
        except Exception as error:  # noqa: BLE001  the refusal is the line; what main holds is said in it
            if _status(error) in (409, 412):
                return moved_on
            return f"main still holds this build's commit {mine}: putting {self.tag}'s files back failed " \
                   f"({_one_line(error)})"
        return f"this build's commit {mine} on main was undone by commit {restored[:12]}"

    def _remove_if_empty(self) -> bool:
        """Delete the repo this run created when it holds nothing yet (no tag, no file but .gitattributes),
        so that the Hub is left as it was; False where it holds more or the deletion fails."""
        try:
            tags, _ = self._refs()
            files = self.api.list_repo_files(self.repo_id, repo_type=self.repo_type)
            if tags or set(files) - {".gitattributes"}:
                return False
            self.api.delete_repo(self.repo_id, repo_type=self.repo_type, missing_ok=True)
        except Exception:  # noqa: BLE001  the upload's own failure is the one to report
            logger.debug("could not delete the empty repo %s", self.repo_id, exc_info=True)
            return False
        return True

    def _taken(self, winner: str, doing: str) -> str:
        return f"another build published {self.repo_id} {self.tag} at commit {winner[:12]} while this one was {doing} it"

    def _published(self) -> Published:
        assert self.commit is not None
        prefix = "datasets/" if self.repo_type == "dataset" else ""
        return Published(scrub_url(f"{self.api.endpoint}/{prefix}{self.repo_id}"), self.tag, self.commit)


def _status(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _one_line(error: BaseException) -> str:
    """The error on one line: the Hub's own reason where it gave one (the client puts it after lines of its own)."""
    reason = getattr(error, "server_message", None)
    if reason and _status(error) is not None:
        text = f"HTTP {_status(error)}: {reason}"
    else:
        text = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return " ".join(scrub_text(text).split())[:300]
