"""A small, real HTTP stand-in for the Hugging Face Hub, for tests.

`LocalHub` listens on 127.0.0.1 and answers the Hub routes that mcqforge's `huggingface_hub` and
`datasets` calls use, and no others (an unknown route is a 404 naming it):

- whoami-v2, auth-check, validate-yaml: the token preflight and the README check of uploads;
- repos/create, repos/delete, repo info, refs, tag: create_repo, delete_repo, repo_info/dataset_info/model_info,
  list_repo_refs, create_tag;
- preupload, the git-LFS batch API (basic PUT upload + verify), NDJSON commit: upload_folder/upload_file;
- tree listing and `resolve` (GET/HEAD): load_dataset, hf_hub_download and snapshot_download.

Storage is in memory. Every commit is an immutable snapshot (path -> file), so a tag points at an exact
snapshot. A revision is a branch, a tag or a full commit sha.

Both libraries read `HF_ENDPOINT` (and `HF_HUB_DISABLE_XET`, `HF_HOME`, ...) once, at import time, so the
port must be known before they are imported (see tests/conftest.py):

    from hub_server import LocalHub, free_port

    port = free_port()
    os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
    os.environ["HF_HUB_DISABLE_XET"] = "1"          # LocalHub has no Xet storage: uploads use LFS
    os.environ["HF_HOME"] = tempfile.mkdtemp()      # fresh caches, no stored token
    import huggingface_hub, datasets                # only now

    with LocalHub(port=port) as hub:                # hub.url, hub.token
        ...

Failure injection: `hub.fail_next("commit", 500)` makes the next request of that route kind fail with
that status before it touches any state. The client retries some calls on 5xx (preupload, LFS batch and
tree listings back off 1 s, 2 s, ...); use a 4xx status there to fail without retries.

Interleavings: `hub.hold("tag")` stops the next request of that kind before its handler runs
(`after=True`: after it ran, before the answer is sent) until `.release()`; `.reached` is set once
it is stopped there, so a test knows where a client is (and can send it a signal). `hub.meet("commit", 2)`
stops the next 2 requests of that kind until both have arrived, so that two clients really race.

Optimistic concurrency, as on the Hub: a commit whose header names a `parentCommit` that is not the
branch head is refused with 412 (nothing changes), and creating an existing tag or repo is a 409.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import logging
import re
import secrets
import socket
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml  # a dependency of huggingface_hub

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
DEFAULT_BRANCH = "main"
URL_PREFIXES = {"model": "", "dataset": "datasets/"}

# Same rule as the Hub: files of 10 MiB or more, binary files, and the default .gitattributes patterns go
# through LFS.
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
LFS_POINTER_TEMPLATE = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
LFS_PATTERNS = (
    "*.7z *.arrow *.bin *.bz2 *.ckpt *.gz *.h5 *.joblib *.lz4 *.model *.msgpack *.npy *.npz"
    " *.onnx *.ot *.parquet *.pb *.pickle *.pkl *.pt *.pth *.safetensors *.tar *.tflite *.tgz"
    " *.wasm *.xz *.zip *.zst *tfevents*"
).split()
DEFAULT_GITATTRIBUTES = "".join(f"{pattern} filter=lfs diff=lfs merge=lfs -text\n" for pattern in LFS_PATTERNS)

# Message the real Hub sends for a bad token; the client relies on it to NOT map the 401 to
# RepositoryNotFoundError.
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"
FRONT_MATTER_RE = re.compile(r"---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(\r?\n|$)", re.DOTALL)


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now (to export HF_ENDPOINT early)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


# ---------------------------------------------------------------------------------------------
# Storage model
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredFile:
    """One file version. For LFS files the git oid is the one of the pointer file, as in git."""

    data: bytes
    is_lfs: bool
    sha256: str
    git_oid: str
    pointer_size: int

    @classmethod
    def create(cls, data: bytes, is_lfs: bool) -> StoredFile:
        sha256 = hashlib.sha256(data).hexdigest()
        pointer = LFS_POINTER_TEMPLATE.format(oid=sha256, size=len(data)).encode() if is_lfs else b""
        blob = pointer if is_lfs else data
        git_oid = hashlib.sha1(b"blob %d\0" % len(blob) + blob).hexdigest()
        return cls(data=data, is_lfs=is_lfs, sha256=sha256, git_oid=git_oid, pointer_size=len(pointer))

    @property
    def etag(self) -> str:
        """ETag of `resolve` and `oid` of preupload: sha256 for LFS files, git blob sha1 otherwise."""
        return self.sha256 if self.is_lfs else self.git_oid


@dataclass(frozen=True)
class Commit:
    oid: str
    parent: str | None
    title: str
    date: str
    files: Mapping[str, StoredFile]  # read-only snapshot of the whole tree


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class LfsTicket:
    """A pending LFS upload: the unguessable ticket plays the role of a signed storage URL."""

    repo_key: tuple[str, str]
    oid: str
    size: int


@dataclass(frozen=True)
class RequestRecord:
    method: str
    kind: str
    path: str
    status: int


# ---------------------------------------------------------------------------------------------
# HTTP plumbing
# ---------------------------------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: Message
    body: bytes
    authed: bool = False

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null") or {}
        except ValueError as err:
            raise HubError(400, f"Invalid JSON body: {err}") from err


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})})


class HubError(Exception):
    """An error answered the way the Hub does: JSON body plus X-Error-Code/X-Error-Message, which the
    client maps to RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError..."""

    def __init__(self, status: int, message: str, error_code: str | None = None, commit: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.error_code, self.commit = status, message, error_code, commit

    def to_response(self) -> Response:
        headers = {"X-Error-Message": self.message.encode("latin-1", "replace").decode("latin-1")}
        if self.error_code:
            headers["X-Error-Code"] = self.error_code
        if self.commit:
            headers["X-Repo-Commit"] = self.commit
        return json_response({"error": self.message}, status=self.status, headers=headers)


def _revision_not_found(revision: str) -> HubError:
    return HubError(404, f"Invalid rev id: {revision}", error_code="RevisionNotFound")


def _entry_not_found(message: str, commit_oid: str) -> HubError:
    return HubError(404, message, error_code="EntryNotFound", commit=commit_oid)


Handler = Callable[[Request, dict[str, str]], Response]


@dataclass(frozen=True)
class Route:
    method: str
    pattern: re.Pattern[str]
    kind: str
    handler: Handler


_SEG = r"[^/]+"
_API_REPO = rf"/api/(?P<plural>models|datasets)/(?P<ns>{_SEG})/(?P<name>{_SEG})"
_URL_REPO = rf"/(?:(?P<prefix>datasets)/)?(?P<ns>{_SEG})/(?P<name>{_SEG})"
_GIT_REPO = rf"/(?:(?P<prefix>datasets)/)?(?P<ns>{_SEG})/(?P<name>[^/]+?)\.git"
_REV = r"(?P<rev>[^/]+)"


def _repo_key(params: dict[str, str]) -> tuple[str, str]:
    """(repo_type, repo_id) from the route groups of an /api/... or a /[datasets/]... url."""
    is_dataset = params.get("plural") == "datasets" or params.get("prefix") == "datasets"
    return ("dataset" if is_dataset else "model"), f"{unquote(params['ns'])}/{unquote(params['name'])}"


class _HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], hub: LocalHub) -> None:
        self.hub = hub
        super().__init__(address, _HubRequestHandler)


class _HubRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real client expects; every answer has a length
    server_version = "LocalHub/1.0"
    disable_nagle_algorithm = True  # headers and body are two writes: with Nagle's delay each answer waited 40 ms
    timeout = 30  # idle keep-alive connections release their thread after this many seconds
    server: _HubHTTPServer

    def do_GET(self) -> None:
        self._serve()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_GET

    def _serve(self) -> None:
        split = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        request = Request(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers=self.headers,
            body=self.rfile.read(length) if length > 0 else b"",
        )
        response = self.server.hub._dispatch(request)
        try:
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):  # a client gone meanwhile (interrupted) hears nothing
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        logger.debug("LocalHub %s - %s", self.address_string(), format % args)


# ---------------------------------------------------------------------------------------------
# The hub
# ---------------------------------------------------------------------------------------------


@dataclass
class Hold:
    """One request stopped on its way (see `LocalHub.hold`)."""

    after: bool
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)

    def release(self) -> None:
        self.released.set()

    def wait(self, timeout: float = 60.0) -> Hold:
        """Until the request is stopped there; AssertionError when no such request came within `timeout`."""
        assert self.reached.wait(timeout), "no request reached the hold"
        return self

    def _stop(self) -> None:
        self.reached.set()
        self.released.wait(HOLD_LIMIT_S)


HOLD_LIMIT_S = 120.0  # a hold or meeting nobody releases lets its request go after this long


class LocalHub:
    """In-memory Hub served over real HTTP on 127.0.0.1. One user; the token grants write access
    to every namespace. Use as a context manager or call start()/stop()."""

    username = "local-user"

    def __init__(self, port: int = 0, token: str = "hf_test_token") -> None:
        self.port = port
        self.token = token
        self.requests: list[RequestRecord] = []  # every request answered, in order
        self._repos: dict[tuple[str, str], Repo] = {}
        self._lfs_tickets: dict[str, LfsTicket] = {}
        self._failures: dict[str, deque[tuple[int, str]]] = {}
        self._holds: dict[str, deque[Hold]] = {}
        self._meetings: dict[str, deque[threading.Barrier]] = {}
        self._commit_counter = 0
        self._lock = threading.RLock()
        self._server: _HubHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._routes = [
            Route(method, re.compile(pattern), kind, handler) for method, pattern, kind, handler in self._route_table()
        ]
        self.route_kinds = frozenset(route.kind for route in self._routes)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port == 0:
            raise RuntimeError("LocalHub(port=0) has no url before start()")
        return f"http://{HOST}:{self.port}"

    def start(self) -> LocalHub:
        if self._server is None:
            self._server = _HubHTTPServer((HOST, self.port), self)
            self.port = self._server.server_address[1]
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="LocalHub", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server, self._thread = None, None

    def __enter__(self) -> LocalHub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- test helpers ---------------------------------------------------------------------------

    def fail_next(self, route_kind: str, status: int = 500, times: int = 1, message: str | None = None) -> None:
        """Make the next `times` requests of `route_kind` (one of `route_kinds`) fail with `status` (and
        `message`, as the Hub's error text), before any state change."""
        self._check_kind(route_kind)
        text = message or f"Injected failure for route kind '{route_kind}'"
        with self._lock:
            self._failures.setdefault(route_kind, deque()).extend([(status, text)] * times)

    def hold(self, route_kind: str, after: bool = False) -> Hold:
        """Stop the next request of `route_kind` before its handler runs (`after`: once it ran, before the
        answer goes out) until the returned hold is released."""
        self._check_kind(route_kind)
        hold = Hold(after)
        with self._lock:
            self._holds.setdefault(route_kind, deque()).append(hold)
        return hold

    def meet(self, route_kind: str, parties: int = 2) -> None:
        """The next `parties` requests of `route_kind` wait for each other, then all run (one at a time)."""
        self._check_kind(route_kind)
        barrier = threading.Barrier(parties, timeout=HOLD_LIMIT_S)
        with self._lock:
            self._meetings.setdefault(route_kind, deque()).extend([barrier] * parties)

    def _check_kind(self, route_kind: str) -> None:
        if route_kind not in self.route_kinds:
            raise ValueError(f"Unknown route kind {route_kind!r}; expected one of {sorted(self.route_kinds)}")

    def has_repo(self, repo_id: str, repo_type: str = "dataset") -> bool:
        with self._lock:
            return (repo_type, repo_id) in self._repos

    def tags(self, repo_id: str, repo_type: str = "dataset") -> list[str]:
        with self._lock:
            return sorted(self._existing_repo(repo_type, repo_id).tags)

    def commits(self, repo_id: str, revision: str = DEFAULT_BRANCH, repo_type: str = "dataset") -> list[str]:
        """Commit oids reachable from `revision`, newest first."""
        with self._lock:
            repo = self._existing_repo(repo_type, repo_id)
            chain = [self._resolve_revision(repo, revision)]
            while chain[-1].parent is not None:
                chain.append(repo.commits[chain[-1].parent])
            return [commit.oid for commit in chain]

    def paths_at(self, repo_id: str, revision: str, repo_type: str = "dataset") -> list[str]:
        with self._lock:
            return sorted(self._snapshot(repo_type, repo_id, revision).files)

    def file_at(self, repo_id: str, revision: str, path: str, repo_type: str = "dataset") -> bytes:
        """Content of `path` at `revision`; KeyError if the file does not exist there."""
        with self._lock:
            return self._snapshot(repo_type, repo_id, revision).files[path].data

    def is_lfs(self, repo_id: str, revision: str, path: str, repo_type: str = "dataset") -> bool:
        with self._lock:
            return self._snapshot(repo_type, repo_id, revision).files[path].is_lfs

    def commit_files(self, repo_id: str, files: Mapping[str, bytes | None], title: str = "Edited by hand",
                     repo_type: str = "dataset") -> str:
        """Commit onto main as a `git push` or the Hub's web editor would, without any client's checks (a card
        with invalid YAML gets in): `None` deletes a path. Returns the commit oid."""
        with self._lock:
            repo = self._existing_repo(repo_type, repo_id)
            head = repo.commits[repo.branches[DEFAULT_BRANCH]]
            tree = dict(head.files)
            for path, data in files.items():
                if data is None:
                    del tree[path]
                else:
                    tree[path] = StoredFile.create(data, is_lfs=_needs_lfs(path, len(data), data[:512]))
                    if tree[path].is_lfs:
                        repo.lfs_objects[tree[path].sha256] = data
            commit = self._new_commit(repo, head.oid, title, tree)
            repo.branches[DEFAULT_BRANCH] = commit.oid
            return commit.oid

    def _existing_repo(self, repo_type: str, repo_id: str) -> Repo:
        repo = self._repos.get((repo_type, repo_id))
        if repo is None:
            raise KeyError(f"No {repo_type} repo {repo_id!r} on this LocalHub")
        return repo

    def _snapshot(self, repo_type: str, repo_id: str, revision: str) -> Commit:
        return self._resolve_revision(self._existing_repo(repo_type, repo_id), revision)

    # -- dispatch -------------------------------------------------------------------------------

    def _route_table(self) -> list[tuple[str, str, str, Handler]]:
        """(method, path pattern, route kind, handler); kinds name what `fail_next` and `requests` see."""
        return [
            ("GET", "/api/whoami-v2", "whoami", self._whoami),
            ("POST", "/api/validate-yaml", "validate_yaml", self._validate_yaml),
            ("POST", "/api/repos/create", "create_repo", self._create_repo),
            ("DELETE", "/api/repos/delete", "delete_repo", self._delete_repo),
            ("GET", _API_REPO, "repo_info", self._repo_info),
            ("GET", _API_REPO + "/revision/" + _REV, "repo_info", self._repo_info),
            ("GET", _API_REPO + r"/auth-check(?P<write>/write)?", "auth_check", self._auth_check),
            ("GET", _API_REPO + "/refs", "refs", self._refs),
            ("POST", _API_REPO + "/tag/" + _REV, "tag", self._create_tag),
            ("GET", _API_REPO + "/tree/" + _REV + r"(?:/(?P<rest>.*))?", "tree", self._tree),
            ("POST", _API_REPO + "/preupload/" + _REV, "preupload", self._preupload),
            ("POST", _GIT_REPO + "/info/lfs/objects/batch", "lfs_batch", self._lfs_batch),
            ("PUT", r"/_lfs/upload/(?P<ticket>[0-9a-f]+)", "lfs_upload", self._lfs_upload),
            ("POST", r"/_lfs/verify/(?P<ticket>[0-9a-f]+)", "lfs_verify", self._lfs_verify),
            ("POST", _API_REPO + "/commit/" + _REV, "commit", self._commit),
            ("GET", _URL_REPO + r"/resolve/" + _REV + r"/(?P<rest>.+)", "resolve", self._resolve),
            ("HEAD", _URL_REPO + r"/resolve/" + _REV + r"/(?P<rest>.+)", "resolve", self._resolve),
        ]

    def _match(self, request: Request) -> tuple[Route | None, dict[str, str]]:
        for route in self._routes:
            match = route.pattern.fullmatch(request.path)
            if match and request.method == route.method:
                return route, {k: v for k, v in match.groupdict().items() if v is not None}
        return None, {}

    def _dispatch(self, request: Request) -> Response:
        route, params = self._match(request)
        kind = route.kind if route else "unknown"
        with self._lock:  # the waits happen outside the lock: the other requests go on meanwhile
            hold = self._holds[kind].popleft() if self._holds.get(kind) else None
            meeting = self._meetings[kind].popleft() if self._meetings.get(kind) else None
        if meeting is not None:
            meeting.wait()
        if hold is not None and not hold.after:
            hold._stop()
        try:
            if route is None:
                raise HubError(404, f"No LocalHub route for {request.method} {request.path}")
            with self._lock:
                pending = self._failures.get(kind)
                if pending:
                    raise HubError(*pending.popleft())
                request.authed = self._authenticate(request)
                response = route.handler(request, params)
        except HubError as err:
            response = err.to_response()
        except Exception:  # a LocalHub bug: answer 500 (the client raises) and keep the traceback in logs
            logger.exception("LocalHub failed on %s %s", request.method, request.path)
            response = json_response({"error": "LocalHub internal error"}, status=500)
        with self._lock:
            self.requests.append(RequestRecord(request.method, kind, request.path, response.status))
        if hold is not None and hold.after:
            hold._stop()
        return response

    def _authenticate(self, request: Request) -> bool:
        """True for the hub token, False without token, 401 for any other token (as the Hub)."""
        header = request.headers.get("Authorization")
        if not header:
            return False
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(value.strip(), self.token):
            raise HubError(401, INVALID_CREDENTIALS)
        return True

    # -- access and revisions -------------------------------------------------------------------

    def _readable_repo(self, request: Request, params: dict[str, str]) -> Repo:
        repo = self._repos.get(_repo_key(params))
        if repo is None or (repo.private and not request.authed):
            # Like the Hub: anonymous callers get 401, authenticated ones 404, so a private repo
            # cannot be told from a missing one.
            raise HubError(401 if not request.authed else 404, "Repository not found", error_code="RepoNotFound")
        return repo

    def _writable_repo(self, request: Request, params: dict[str, str]) -> Repo:
        self._require_token(request)
        return self._readable_repo(request, params)

    def _require_token(self, request: Request) -> None:
        if not request.authed:
            raise HubError(401, "Unauthorized: this operation requires a write token")

    def _resolve_revision(self, repo: Repo, revision: str) -> Commit:
        oid = repo.branches.get(revision) or repo.tags.get(revision) or revision
        if oid not in repo.commits:
            raise _revision_not_found(revision)
        return repo.commits[oid]

    def _new_commit(self, repo: Repo, parent: str | None, title: str, files: dict[str, StoredFile]) -> Commit:
        self._commit_counter += 1
        tree = sorted((path, stored.git_oid) for path, stored in files.items())
        oid = _sha1_hex(json.dumps([repo.repo_id, parent, title, tree, self._commit_counter]))
        commit = Commit(oid, parent, title, _now_iso(), MappingProxyType(dict(files)))
        repo.commits[oid] = commit
        return commit

    # -- user and card checks -------------------------------------------------------------------

    def _whoami(self, request: Request, params: dict[str, str]) -> Response:
        if not request.authed:
            raise HubError(401, INVALID_CREDENTIALS)
        return json_response(
            {
                "type": "user",
                "name": self.username,
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "local", "role": "write"}},
            }
        )

    def _validate_yaml(self, request: Request, params: dict[str, str]) -> Response:
        """The Hub refuses a README.md whose YAML front matter does not parse to a mapping."""
        match = FRONT_MATTER_RE.match(request.json().get("content") or "")
        try:
            metadata = yaml.safe_load(match.group(1)) if match else None
        except yaml.YAMLError as err:
            return json_response({"errors": [{"message": f"Invalid YAML in README.md metadata: {err}"}]}, status=400)
        if metadata is not None and not isinstance(metadata, dict):
            return json_response({"errors": [{"message": "README.md metadata must be a YAML mapping"}]}, status=400)
        return json_response({"errors": [], "warnings": []})

    # -- repos and refs -------------------------------------------------------------------------

    def _create_repo(self, request: Request, params: dict[str, str]) -> Response:
        self._require_token(request)
        body = request.json()
        repo_type = body.get("type") or "model"
        if repo_type not in URL_PREFIXES:
            raise HubError(400, f"LocalHub has no {repo_type} repos")
        repo_id = f"{body.get('organization') or self.username}/{body['name']}"
        url = f"{self.url}/{URL_PREFIXES[repo_type]}{repo_id}"
        if (repo_type, repo_id) in self._repos:
            return json_response({"error": f"You already created this {repo_type} repo", "url": url}, status=409)
        repo = Repo(repo_type, repo_id, private=body.get("visibility") == "private")
        # Like the Hub, a new repo starts with one commit holding the default .gitattributes.
        gitattributes = StoredFile.create(DEFAULT_GITATTRIBUTES.encode(), is_lfs=False)
        initial = self._new_commit(repo, None, "initial commit", {".gitattributes": gitattributes})
        repo.branches[DEFAULT_BRANCH] = initial.oid
        self._repos[(repo_type, repo_id)] = repo
        return json_response({"url": url, "name": repo_id})

    def _delete_repo(self, request: Request, params: dict[str, str]) -> Response:
        self._require_token(request)
        body = request.json()
        repo_id = f"{body.get('organization') or self.username}/{body['name']}"
        if self._repos.pop((body.get("type") or "model", repo_id), None) is None:
            raise HubError(404, "Repository not found", error_code="RepoNotFound")
        return Response(200)

    def _repo_info(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params.get("rev", DEFAULT_BRANCH)))
        return json_response(
            {
                "id": repo.repo_id,
                "sha": commit.oid,
                "private": repo.private,
                "lastModified": commit.date,
                "siblings": [{"rfilename": path} for path in sorted(commit.files)],
            }
        )

    def _auth_check(self, request: Request, params: dict[str, str]) -> Response:
        (self._writable_repo if params.get("write") else self._readable_repo)(request, params)
        return json_response({})

    def _refs(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)

        def refs(names: dict[str, str], kind: str) -> list[dict[str, str]]:
            return [{"name": n, "ref": f"refs/{kind}/{n}", "targetCommit": oid} for n, oid in sorted(names.items())]

        payload = {"branches": refs(repo.branches, "heads"), "converts": [], "tags": refs(repo.tags, "tags")}
        return json_response(payload)

    def _create_tag(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params["rev"]))
        tag = str(request.json().get("tag") or "")
        if tag in repo.tags:
            raise HubError(409, f"Tag {tag} already exists")
        repo.tags[tag] = commit.oid
        return json_response({"name": tag, "ref": f"refs/tags/{tag}", "targetCommit": commit.oid})

    def _tree(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params["rev"]))
        base = unquote(params.get("rest", "")).strip("/")
        recursive = (request.query.get("recursive") or [""])[-1].lower() == "true"
        entries = _tree_entries(commit, base, recursive)
        if base and not entries:
            raise _entry_not_found(f"{base} does not exist on {params['rev']}", commit.oid)
        return json_response([_tree_entry(commit, path, is_dir) for path, is_dir in entries])

    # -- uploads --------------------------------------------------------------------------------

    def _preupload(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        head = self._resolve_revision(repo, unquote(params["rev"]))
        answers = []
        for item in request.json().get("files", []):
            path, size, sample = item["path"], int(item["size"]), base64.b64decode(item.get("sample") or "")
            mode = "lfs" if _needs_lfs(path, size, sample) else "regular"
            existing = head.files.get(path)
            answers.append(
                {"path": path, "uploadMode": mode, "shouldIgnore": False, "oid": existing.etag if existing else None}
            )
        return json_response({"files": answers, "commitOid": head.oid})

    def _lfs_batch(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        objects = []
        for obj in request.json().get("objects", []):
            if obj["oid"] in repo.lfs_objects:  # no "actions": the client skips the upload
                objects.append({"oid": obj["oid"], "size": obj["size"]})
                continue
            ticket = secrets.token_hex(16)
            self._lfs_tickets[ticket] = LfsTicket((repo.repo_type, repo.repo_id), obj["oid"], obj["size"])
            actions = {"upload": {"href": f"{self.url}/_lfs/upload/{ticket}"},
                       "verify": {"href": f"{self.url}/_lfs/verify/{ticket}"}}
            objects.append({"oid": obj["oid"], "size": obj["size"], "authenticated": True, "actions": actions})
        return json_response(
            {"transfer": "basic", "objects": objects}, headers={"Content-Type": "application/vnd.git-lfs+json"}
        )

    def _lfs_upload(self, request: Request, params: dict[str, str]) -> Response:
        # Plays the storage bucket behind a signed URL: no Authorization header, the ticket is the secret.
        ticket = self._lfs_tickets.get(params["ticket"])
        if ticket is None or ticket.repo_key not in self._repos:
            raise HubError(403, "Unknown or expired LFS upload ticket")
        if len(request.body) != ticket.size or hashlib.sha256(request.body).hexdigest() != ticket.oid:
            raise HubError(400, f"Uploaded content does not match LFS object {ticket.oid} ({ticket.size} bytes)")
        self._repos[ticket.repo_key].lfs_objects[ticket.oid] = request.body
        return Response(200)

    def _lfs_verify(self, request: Request, params: dict[str, str]) -> Response:
        self._require_token(request)
        ticket = self._lfs_tickets.pop(params["ticket"], None)
        repo = self._repos.get(ticket.repo_key) if ticket else None
        if ticket is None or repo is None or ticket.oid not in repo.lfs_objects:
            raise HubError(404, "LFS object not found")
        return json_response({"success": True})

    def _commit(self, request: Request, params: dict[str, str]) -> Response:
        """An NDJSON body: a header line with the summary, then one line per file operation."""
        repo = self._writable_repo(request, params)
        branch = unquote(params["rev"])
        if branch not in repo.branches:
            raise _revision_not_found(branch)
        head = repo.commits[repo.branches[branch]]
        header, *operations = [json.loads(line) for line in request.body.splitlines() if line.strip()]
        parent = header["value"].get("parentCommit")
        if parent is not None and parent != head.oid:  # the Hub's optimistic concurrency: nothing changes
            raise HubError(412, "A commit has happened since. Please refresh and try again.")
        files = dict(head.files)
        for operation in operations:
            key, value = operation["key"], operation["value"]
            if key == "file":
                files[value["path"]] = StoredFile.create(base64.b64decode(value["content"]), is_lfs=False)
            elif key == "lfsFile":
                files[value["path"]] = StoredFile.create(repo.lfs_objects[value["oid"]], is_lfs=True)
            elif key != "deletedFile":
                raise HubError(400, f"LocalHub does not implement the commit operation {key!r}")
            elif files.pop(value["path"], None) is None:
                raise _entry_not_found(f"A file with this name doesn't exist: {value['path']}", head.oid)
        commit = self._new_commit(repo, head.oid, header["value"]["summary"], files)
        repo.branches[branch] = commit.oid
        commit_url = f"{self.url}/{URL_PREFIXES[repo.repo_type]}{repo.repo_id}/commit/{commit.oid}"
        return json_response({"success": True, "commitOid": commit.oid, "commitUrl": commit_url, "hookOutput": ""})

    # -- downloads ------------------------------------------------------------------------------

    def _resolve(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params["rev"]))
        stored = commit.files.get(unquote(params["rest"]))
        if stored is None:
            raise _entry_not_found("Entry not found", commit.oid)
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{stored.etag}"', "Content-Type": "application/octet-stream"}
        return Response(200, stored.data, headers)


# ---------------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------------


def _tree_entries(commit: Commit, base: str, recursive: bool) -> list[tuple[str, bool]]:
    """(path, is_dir) entries below `base`: direct children, or the whole sub-tree if recursive.
    Directories first, then files, each sorted (the Hub lists "tree first")."""
    prefix = base + "/" if base else ""
    dirs: set[str] = set()
    files: list[str] = []
    for path in commit.files:
        if not path.startswith(prefix):
            continue
        parts = path[len(prefix) :].split("/")
        if len(parts) == 1 or recursive:
            files.append(path)
        depth = len(parts) - 1 if recursive else min(1, len(parts) - 1)
        dirs.update(prefix + "/".join(parts[: i + 1]) for i in range(depth))
    return [(d, True) for d in sorted(dirs)] + [(f, False) for f in sorted(files)]


def _tree_entry(commit: Commit, path: str, is_dir: bool) -> dict[str, Any]:
    if is_dir:
        listing = "\n".join(f"{p} {s.git_oid}" for p, s in sorted(commit.files.items()) if p.startswith(path + "/"))
        return {"type": "directory", "oid": _sha1_hex(listing), "size": 0, "path": path}
    stored = commit.files[path]
    entry: dict[str, Any] = {"type": "file", "oid": stored.git_oid, "size": len(stored.data), "path": path}
    if stored.is_lfs:
        entry["lfs"] = {"oid": stored.sha256, "size": len(stored.data), "pointerSize": stored.pointer_size}
    return entry


def _needs_lfs(path: str, size: int, sample: bytes) -> bool:
    if size >= LFS_SIZE_THRESHOLD or b"\x00" in sample:
        return True
    basename = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(basename, pattern) for pattern in LFS_PATTERNS)
