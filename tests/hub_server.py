"""A small, real HTTP stand-in for the Hugging Face Hub, for tests (stdlib only).

`LocalHub` listens on 127.0.0.1 and speaks the subset of the Hub HTTP API that the installed
`huggingface_hub` (HfApi, hf_hub_download, snapshot_download, HfFileSystem) and
`datasets.load_dataset` use: repo create/delete/info/settings, preupload, the git-LFS batch
API (basic PUT upload + verify), NDJSON commits, tags, branches, refs, tree, paths-info,
commit listing and `resolve` downloads (GET/HEAD, ETag, X-Repo-Commit, Range).

Storage is in memory. Every commit is an immutable snapshot (path -> file), so a tag points
at an exact snapshot. Revisions can be a branch, a tag or a full 40-hex commit sha.

Both libraries read `HF_ENDPOINT` (and `HF_HUB_DISABLE_XET`, `HF_HOME`, ...) once, at import
time. The port must therefore be known before they are imported. The pattern (see
tests/conftest.py):

    from hub_server import LocalHub, free_port

    port = free_port()
    os.environ["HF_ENDPOINT"] = f"http://127.0.0.1:{port}"
    os.environ["HF_HUB_DISABLE_XET"] = "1"          # LocalHub has no Xet/CAS backend
    os.environ["HF_HOME"] = tempfile.mkdtemp()      # fresh caches, no stored token
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    import huggingface_hub, datasets                # only now

    with LocalHub(port=port) as hub:                # hub.url, hub.token
        ...

Failure injection: `hub.fail_next("commit", 500)` makes the next request of that route kind
fail with that status before it touches any state. Note that the client retries some calls
on 5xx (preupload, LFS batch, tree listings use a backoff with 1 s, 2 s, ... sleeps); use a
4xx status there to fail without retries.
"""

from __future__ import annotations

import base64
import binascii
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

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
DEFAULT_BRANCH = "main"
REPO_TYPES = ("model", "dataset", "space")
URL_PREFIXES = {"model": "", "dataset": "datasets/", "space": "spaces/"}
PLURAL_TO_TYPE = {"models": "model", "datasets": "dataset", "spaces": "space"}

# Same rule as the Hub: files of 10 MiB or more, or binary files, always go through LFS.
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
LFS_POINTER_TEMPLATE = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
LFS_CONTENT_TYPE = "application/vnd.git-lfs+json"
LFS_PATTERNS = (
    "*.7z *.arrow *.bin *.bz2 *.ckpt *.gz *.h5 *.joblib *.lz4 *.model *.msgpack *.npy *.npz"
    " *.onnx *.ot *.parquet *.pb *.pickle *.pkl *.pt *.pth *.safetensors *.tar *.tflite *.tgz"
    " *.wasm *.xz *.zip *.zst *tfevents*"
).split()
DEFAULT_GITATTRIBUTES = "".join(f"{pattern} filter=lfs diff=lfs merge=lfs -text\n" for pattern in LFS_PATTERNS)

# Message the real Hub sends for a bad token; the client relies on it to NOT map the 401 to
# RepositoryNotFoundError.
INVALID_CREDENTIALS = "Invalid credentials in Authorization header"
XET_UNSUPPORTED = (
    "LocalHub does not implement the Xet protocol: set HF_HUB_DISABLE_XET=1 before importing huggingface_hub"
)
REPO_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}")
REF_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,127}")
COMMIT_SHA_RE = re.compile(r"[0-9a-f]{40}")
SHA256_RE = re.compile(r"[0-9a-f]{64}")
RANGE_RE = re.compile(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", re.IGNORECASE)
TRUE_VALUES = {"1", "true", "yes", "on"}


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now (to export HF_ENDPOINT early)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _git_blob_oid(data: bytes) -> str:
    """Git object id of a blob: what the Hub reports as `oid`/ETag for non-LFS files."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


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
        git_oid = _git_blob_oid(pointer if is_lfs else data)
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
    message: str
    date: str
    files: Mapping[str, StoredFile]  # read-only snapshot of the whole tree


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    object_id: str
    created_at: str
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    lfs_objects: dict[str, bytes] = field(default_factory=dict)

    @property
    def url_path(self) -> str:
        return URL_PREFIXES[self.repo_type] + self.repo_id


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
            return json.loads(self.body or b"null")
        except ValueError as err:
            raise HubError(400, f"Invalid JSON body: {err}") from err

    def flag(self, name: str) -> bool:
        values = self.query.get(name) or [""]
        return values[-1].lower() in TRUE_VALUES


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return Response(status=status, body=json.dumps(payload).encode(), headers=all_headers)


class HubError(Exception):
    """An error answered the way the Hub does: JSON body plus X-Error-Code/X-Error-Message."""

    def __init__(
        self, status: int, message: str, error_code: str | None = None, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.error_code = error_code
        self.headers = headers or {}

    def to_response(self) -> Response:
        headers = {"X-Error-Message": _header_safe(self.message), **self.headers}
        if self.error_code:
            headers["X-Error-Code"] = self.error_code
        return json_response({"error": self.message}, status=self.status, headers=headers)


def _header_safe(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ").encode("latin-1", "replace").decode("latin-1")


def _revision_not_found(revision: str) -> HubError:
    return HubError(404, f"Invalid rev id: {revision}", error_code="RevisionNotFound")


def _entry_not_found(message: str, commit_oid: str | None = None) -> HubError:
    headers = {"X-Repo-Commit": commit_oid} if commit_oid else None
    return HubError(404, message, error_code="EntryNotFound", headers=headers)


@dataclass(frozen=True)
class Route:
    methods: frozenset[str]
    pattern: re.Pattern[str]
    kind: str
    handler: Callable[[Request, dict[str, str]], Response]


_SEG = r"[^/]+"
_API_REPO = rf"/api/(?P<plural>models|datasets|spaces)/(?P<ns>{_SEG})/(?P<name>{_SEG})"
_URL_REPO = rf"/(?:(?P<prefix>datasets|spaces)/)?(?P<ns>{_SEG})/(?P<name>{_SEG})"
_GIT_REPO = rf"/(?:(?P<prefix>datasets|spaces)/)?(?P<ns>{_SEG})/(?P<name>[^/]+?)\.git"
_REV = r"(?P<rev>[^/]+)"


def _repo_key(params: dict[str, str]) -> tuple[str, str]:
    """(repo_type, repo_id) from the route groups of an /api/... or a /{prefix}... url."""
    if params.get("plural"):
        repo_type = PLURAL_TO_TYPE[params["plural"]]
    else:
        repo_type = PLURAL_TO_TYPE.get(params.get("prefix") or "models", "model")
    return repo_type, f"{unquote(params['ns'])}/{unquote(params['name'])}"


class _HubHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], hub: LocalHub) -> None:
        self.hub = hub
        super().__init__(address, _HubRequestHandler)


class _HubRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real client expects; every answer has a length
    server_version = "LocalHub/1.0"
    timeout = 30  # idle keep-alive connections release their thread after this many seconds
    server: _HubHTTPServer

    def do_GET(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        split = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query, keep_blank_values=True),
            headers=self.headers,
            body=self._read_body(),
        )
        self._write(self.server.hub._dispatch(request))

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked_body()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked_body(self) -> bytes:
        chunks = []
        while True:
            size = int(self.rfile.readline(65537).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()  # CRLF closing the chunk

    def _write(self, response: Response) -> None:
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        if "Content-Length" not in response.headers:
            self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        logger.debug("LocalHub %s - %s", self.address_string(), format % args)


# ---------------------------------------------------------------------------------------------
# The hub
# ---------------------------------------------------------------------------------------------


class LocalHub:
    """In-memory Hub served over real HTTP on 127.0.0.1. One user; the token grants write access
    to every namespace. Use as a context manager or call start()/stop()."""

    username = "local-user"

    def __init__(self, port: int = 0, token: str = "hf_test_token") -> None:
        self.port = port
        self.token = token
        self.requests: list[RequestRecord] = []
        self._repos: dict[tuple[str, str], Repo] = {}
        self._lfs_tickets: dict[str, LfsTicket] = {}
        self._failures: dict[str, deque[int]] = {}
        self._commit_counter = 0
        self._lock = threading.RLock()
        self._server: _HubHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._routes = self._build_routes()
        self.route_kinds = frozenset(route.kind for route in self._routes)

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port == 0:
            raise RuntimeError("LocalHub(port=0) has no url before start()")
        return f"http://{HOST}:{self.port}"

    def start(self) -> LocalHub:
        if self._server is not None:
            return self
        self._server = _HubHTTPServer((HOST, self.port), self)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="LocalHub", daemon=True
        )
        self._thread.start()
        logger.debug("LocalHub listening on %s", self.url)
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

    def fail_next(self, route_kind: str, status: int = 500, times: int = 1) -> None:
        """Make the next `times` requests of `route_kind` fail with `status`, before any state change.

        Kinds: "commit", "tag", "preupload", "create_repo", "lfs_batch", "lfs_upload", "resolve",
        "repo_info", "tree", ... (see `route_kinds`).
        """
        if route_kind not in self.route_kinds:
            raise ValueError(f"Unknown route kind {route_kind!r}; expected one of {sorted(self.route_kinds)}")
        with self._lock:
            self._failures.setdefault(route_kind, deque()).extend([status] * times)

    def tags(self, repo_id: str, repo_type: str = "dataset") -> list[str]:
        with self._lock:
            return sorted(self._existing_repo(repo_type, repo_id).tags)

    def branches(self, repo_id: str, repo_type: str = "dataset") -> list[str]:
        with self._lock:
            return sorted(self._existing_repo(repo_type, repo_id).branches)

    def commits(self, repo_id: str, revision: str = DEFAULT_BRANCH, repo_type: str = "dataset") -> list[str]:
        """Commit oids reachable from `revision`, newest first."""
        with self._lock:
            repo = self._existing_repo(repo_type, repo_id)
            return [commit.oid for commit in self._history(repo, self._resolve_revision(repo, revision))]

    def paths_at(self, repo_id: str, revision: str, repo_type: str = "dataset") -> list[str]:
        with self._lock:
            repo = self._existing_repo(repo_type, repo_id)
            return sorted(self._resolve_revision(repo, revision).files)

    def file_at(self, repo_id: str, revision: str, path: str, repo_type: str = "dataset") -> bytes:
        """Content of `path` at `revision`; KeyError if the file does not exist there."""
        with self._lock:
            repo = self._existing_repo(repo_type, repo_id)
            return self._resolve_revision(repo, revision).files[path].data

    def is_lfs(self, repo_id: str, revision: str, path: str, repo_type: str = "dataset") -> bool:
        with self._lock:
            repo = self._existing_repo(repo_type, repo_id)
            return self._resolve_revision(repo, revision).files[path].is_lfs

    def reset(self) -> None:
        """Forget every repo, pending failure and logged request (the server keeps running)."""
        with self._lock:
            self._repos.clear()
            self._lfs_tickets.clear()
            self._failures.clear()
            self.requests.clear()

    def _existing_repo(self, repo_type: str, repo_id: str) -> Repo:
        repo = self._repos.get((repo_type, repo_id))
        if repo is None:
            raise KeyError(f"No {repo_type} repo {repo_id!r} on this LocalHub")
        return repo

    # -- dispatch -------------------------------------------------------------------------------

    def _build_routes(self) -> list[Route]:
        table: list[tuple[str, str, str, Callable[[Request, dict[str, str]], Response]]] = [
            ("GET", "/api/whoami-v2", "whoami", self._whoami),
            ("GET", "/api/agent-harnesses", "agent_harnesses", self._agent_harnesses),
            ("POST", "/api/validate-yaml", "validate_yaml", self._validate_yaml),
            ("POST", "/api/repos/create", "create_repo", self._create_repo),
            ("DELETE", "/api/repos/delete", "delete_repo", self._delete_repo),
            ("GET", _API_REPO, "repo_info", self._repo_info),
            ("GET", _API_REPO + "/revision/" + _REV, "repo_info", self._repo_info),
            ("PUT", _API_REPO + "/settings", "settings", self._settings),
            ("POST", _API_REPO + "/preupload/" + _REV, "preupload", self._preupload),
            ("POST", _API_REPO + "/commit/" + _REV, "commit", self._commit),
            ("POST", _API_REPO + "/tag/" + _REV, "tag", self._create_tag),
            ("DELETE", _API_REPO + "/tag/" + _REV, "tag", self._delete_tag),
            ("POST", _API_REPO + "/branch/" + _REV, "branch", self._create_branch),
            ("DELETE", _API_REPO + "/branch/" + _REV, "branch", self._delete_branch),
            ("GET", _API_REPO + "/refs", "refs", self._refs),
            ("GET", _API_REPO + "/tree/" + _REV + r"(?:/(?P<rest>.*))?", "tree", self._tree),
            ("POST", _API_REPO + "/paths-info/" + _REV, "paths_info", self._paths_info),
            ("GET", _API_REPO + "/commits/" + _REV, "commits", self._list_commits),
            ("GET POST", _API_REPO + r"/xet-(?:read|write)-token(?:/.*)?", "xet", self._xet),
            ("POST", _GIT_REPO + "/info/lfs/objects/batch", "lfs_batch", self._lfs_batch),
            ("PUT", r"/_lfs/upload/(?P<ticket>[0-9a-f]+)", "lfs_upload", self._lfs_upload),
            ("POST", r"/_lfs/verify/(?P<ticket>[0-9a-f]+)", "lfs_verify", self._lfs_verify),
            ("GET HEAD", _URL_REPO + r"/resolve/(?P<rest>.+)", "resolve", self._resolve),
        ]
        return [
            Route(frozenset(methods.split()), re.compile(pattern), kind, handler)
            for methods, pattern, kind, handler in table
        ]

    def _match(self, request: Request) -> tuple[Route | None, dict[str, str]]:
        for route in self._routes:
            match = route.pattern.fullmatch(request.path)
            if match and request.method in route.methods:
                return route, {k: v for k, v in match.groupdict().items() if v is not None}
        return None, {}

    def _dispatch(self, request: Request) -> Response:
        route, params = self._match(request)
        kind = route.kind if route else "unknown"
        try:
            if route is None:
                raise HubError(404, f"No LocalHub route for {request.method} {request.path}")
            with self._lock:
                self._raise_injected_failure(kind)
                request.authed = self._authenticate(request)
                response = route.handler(request, params)
        except HubError as err:
            response = err.to_response()
        except Exception:  # a LocalHub bug: answer 500 (the client raises) and keep the traceback in logs
            logger.exception("LocalHub failed on %s %s", request.method, request.path)
            response = json_response({"error": "LocalHub internal error"}, status=500)
        with self._lock:
            self.requests.append(RequestRecord(request.method, kind, request.path, response.status))
        return response

    def _raise_injected_failure(self, kind: str) -> None:
        pending = self._failures.get(kind)
        if pending:
            raise HubError(pending.popleft(), f"Injected failure for route kind '{kind}'")

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

    def _repo_not_found(self, request: Request) -> HubError:
        # Like the Hub: anonymous callers get 401, authenticated ones 404; same code either way,
        # so private repos are indistinguishable from missing ones.
        return HubError(401 if not request.authed else 404, "Repository not found", error_code="RepoNotFound")

    def _readable_repo(self, request: Request, params: dict[str, str]) -> Repo:
        repo = self._repos.get(_repo_key(params))
        if repo is None or (repo.private and not request.authed):
            raise self._repo_not_found(request)
        return repo

    def _writable_repo(self, request: Request, params: dict[str, str]) -> Repo:
        self._require_token(request)
        return self._readable_repo(request, params)

    def _require_token(self, request: Request) -> None:
        if not request.authed:
            raise HubError(401, "Unauthorized: this operation requires a write token")

    def _resolve_revision(self, repo: Repo, revision: str) -> Commit:
        for prefix, refs in (("refs/heads/", repo.branches), ("refs/tags/", repo.tags)):
            if revision.startswith(prefix) and revision[len(prefix) :] in refs:
                return repo.commits[refs[revision[len(prefix) :]]]
        if revision in repo.branches:
            return repo.commits[repo.branches[revision]]
        if revision in repo.tags:
            return repo.commits[repo.tags[revision]]
        if COMMIT_SHA_RE.fullmatch(revision) and revision in repo.commits:
            return repo.commits[revision]
        raise _revision_not_found(revision)

    def _branch_name(self, repo: Repo, revision: str) -> str:
        branch = revision.removeprefix("refs/heads/")
        if branch not in repo.branches:
            raise _revision_not_found(revision)
        return branch

    def _history(self, repo: Repo, commit: Commit) -> list[Commit]:
        chain = [commit]
        while chain[-1].parent is not None:
            chain.append(repo.commits[chain[-1].parent])
        return chain

    def _new_commit(self, repo: Repo, parent: str | None, title: str, message: str, files: dict) -> Commit:
        self._commit_counter += 1
        tree = sorted((path, stored.git_oid) for path, stored in files.items())
        oid = _sha1_hex(json.dumps([repo.repo_id, parent, title, message, tree, self._commit_counter]))
        commit = Commit(oid, parent, title, message, _now_iso(), MappingProxyType(dict(files)))
        repo.commits[oid] = commit
        return commit

    # -- user and misc --------------------------------------------------------------------------

    def _whoami(self, request: Request, params: dict[str, str]) -> Response:
        if not request.authed:
            raise HubError(401, INVALID_CREDENTIALS)
        return json_response(
            {
                "type": "user",
                "id": _sha1_hex(self.username)[:24],
                "name": self.username,
                "fullname": "LocalHub User",
                "email": f"{self.username}@localhost",
                "emailVerified": True,
                "isPro": False,
                "canPay": False,
                "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "local", "role": "write"}},
            }
        )

    def _agent_harnesses(self, request: Request, params: dict[str, str]) -> Response:
        # Fetched by huggingface_hub to build its user agent; an empty registry detects nothing.
        return json_response({"standardEnvVars": [], "harnesses": {}})

    def _validate_yaml(self, request: Request, params: dict[str, str]) -> Response:
        content = (request.json() or {}).get("content") or ""
        error = _parse_front_matter(content)[1]
        if error:
            return json_response({"errors": [{"message": error}], "warnings": []}, status=400)
        return json_response({"errors": [], "warnings": []})

    def _xet(self, request: Request, params: dict[str, str]) -> Response:
        raise HubError(501, XET_UNSUPPORTED)

    # -- repos ----------------------------------------------------------------------------------

    def _create_repo(self, request: Request, params: dict[str, str]) -> Response:
        self._require_token(request)
        body = request.json() or {}
        repo_type = body.get("type") or "model"
        name, namespace = body.get("name") or "", body.get("organization") or self.username
        if repo_type not in REPO_TYPES:
            raise HubError(400, f"Invalid repo type: {repo_type}")
        if not _valid_repo_name(name) or not _valid_repo_name(namespace):
            raise HubError(400, f"Invalid repo name: {namespace}/{name}")
        repo_id = f"{namespace}/{name}"
        url = f"{self.url}/{URL_PREFIXES[repo_type]}{repo_id}"
        if (repo_type, repo_id) in self._repos:
            return json_response({"error": f"You already created this {repo_type} repo", "url": url}, status=409)
        private = bool(body.get("private")) or body.get("visibility") == "private"
        repo = Repo(repo_type, repo_id, private, secrets.token_hex(12), _now_iso())
        # Like the Hub, a new repo starts with one commit holding the default .gitattributes.
        gitattributes = StoredFile.create(DEFAULT_GITATTRIBUTES.encode(), is_lfs=False)
        initial = self._new_commit(repo, None, "initial commit", "", {".gitattributes": gitattributes})
        repo.branches[DEFAULT_BRANCH] = initial.oid
        self._repos[(repo_type, repo_id)] = repo
        return json_response({"url": url, "name": repo_id, "id": repo.object_id})

    def _delete_repo(self, request: Request, params: dict[str, str]) -> Response:
        self._require_token(request)
        body = request.json() or {}
        key = (body.get("type") or "model", f"{body.get('organization') or self.username}/{body.get('name')}")
        if self._repos.pop(key, None) is None:
            raise self._repo_not_found(request)
        return json_response({})

    def _settings(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        body = request.json() or {}
        if "private" in body:
            repo.private = bool(body["private"])
        if body.get("visibility") in ("private", "public"):
            repo.private = body["visibility"] == "private"
        return json_response({})

    def _repo_info(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params.get("rev", DEFAULT_BRANCH)))
        info = self._repo_info_payload(repo, commit, with_blobs=request.flag("blobs"))
        expand = request.query.get("expand") or request.query.get("expand[]")
        if expand:
            info = {key: value for key, value in info.items() if key in {"_id", "id", *expand}}
        return json_response(info)

    def _repo_info_payload(self, repo: Repo, commit: Commit, with_blobs: bool) -> dict[str, Any]:
        info: dict[str, Any] = {
            "_id": repo.object_id,
            "id": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "sha": commit.oid,
            "lastModified": commit.date,
            "createdAt": repo.created_at,
            "private": repo.private,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": [_sibling(path, stored, with_blobs) for path, stored in sorted(commit.files.items())],
            "usedStorage": sum(len(stored.data) for stored in commit.files.values()),
        }
        if repo.repo_type == "model":
            info["modelId"] = repo.repo_id
        readme = commit.files.get("README.md")
        card_data = _parse_front_matter(readme.data.decode("utf-8", "replace"))[0] if readme else None
        if card_data:
            info["cardData"] = card_data
        return info

    # -- refs -----------------------------------------------------------------------------------

    def _refs(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        payload: dict[str, Any] = {
            "branches": [_ref(name, "heads", oid) for name, oid in sorted(repo.branches.items())],
            "converts": [],
            "tags": [_ref(name, "tags", oid) for name, oid in sorted(repo.tags.items())],
        }
        if request.flag("include_prs"):
            payload["pullRequests"] = []
        return json_response(payload)

    def _create_tag(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params["rev"]))
        tag = str((request.json() or {}).get("tag") or "")
        if not REF_NAME_RE.fullmatch(tag) or ".." in tag:
            raise HubError(400, f"Invalid tag name: {tag!r}")
        if tag in repo.tags:
            raise HubError(409, f"Tag {tag} already exists")
        repo.tags[tag] = commit.oid
        return json_response({"name": tag, "ref": f"refs/tags/{tag}", "targetCommit": commit.oid})

    def _delete_tag(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        tag = unquote(params["rev"])
        if repo.tags.pop(tag, None) is None:
            raise _revision_not_found(tag)
        return json_response({})

    def _create_branch(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        branch = unquote(params["rev"])
        start = (request.json() or {}).get("startingPoint") or DEFAULT_BRANCH
        commit = self._resolve_revision(repo, start)
        if not REF_NAME_RE.fullmatch(branch) or ".." in branch:
            raise HubError(400, f"Invalid branch name: {branch!r}")
        if branch in repo.branches:
            raise HubError(409, f"Branch {branch} already exists")
        repo.branches[branch] = commit.oid
        return json_response({})

    def _delete_branch(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        branch = unquote(params["rev"])
        if branch == DEFAULT_BRANCH:
            raise HubError(403, "Cannot delete the default branch")
        if repo.branches.pop(branch, None) is None:
            raise _revision_not_found(branch)
        return json_response({})

    def _list_commits(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        head = self._resolve_revision(repo, unquote(params["rev"]))
        return json_response([self._commit_payload(commit) for commit in self._history(repo, head)])

    def _commit_payload(self, commit: Commit) -> dict[str, Any]:
        return {
            "id": commit.oid,
            "title": commit.title,
            "message": commit.message,
            "date": commit.date,
            "authors": [{"user": self.username, "avatar": ""}],
        }

    # -- tree and paths-info --------------------------------------------------------------------

    def _tree(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params["rev"]))
        base = unquote(params.get("rest", "")).strip("/")
        if base in commit.files:  # listing a file returns the file itself, as the Hub does
            entries = [(base, False)]
        elif base and not _is_dir(commit, base):
            raise _entry_not_found(f"{base} does not exist on {params['rev']}", commit.oid)
        else:
            entries = _tree_entries(commit, base, recursive=request.flag("recursive"))
        expand = request.flag("expand")
        return json_response([self._entry_payload(repo, commit, path, is_dir, expand) for path, is_dir in entries])

    def _paths_info(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        commit = self._resolve_revision(repo, unquote(params["rev"]))
        paths, expand = _paths_info_arguments(request)
        payload = []
        for path in (p.strip("/") for p in paths):
            if path in commit.files:
                payload.append(self._entry_payload(repo, commit, path, False, expand))
            elif path and _is_dir(commit, path):
                payload.append(self._entry_payload(repo, commit, path, True, expand))
        return json_response(payload)

    def _entry_payload(self, repo: Repo, commit: Commit, path: str, is_dir: bool, expand: bool) -> dict[str, Any]:
        if is_dir:
            entry: dict[str, Any] = {"type": "directory", "oid": _tree_oid(commit, path), "size": 0, "path": path}
        else:
            stored = commit.files[path]
            entry = {"type": "file", "oid": stored.git_oid, "size": len(stored.data), "path": path}
            if stored.is_lfs:
                entry["lfs"] = {"oid": stored.sha256, "size": len(stored.data), "pointerSize": stored.pointer_size}
        if expand:
            last = self._last_commit_touching(repo, commit, path, is_dir)
            entry["lastCommit"] = {"id": last.oid, "title": last.title, "date": last.date}
            if not is_dir:
                entry["securityFileStatus"] = {"status": "safe", "avScan": None, "pickleImportScan": None}
        return entry

    def _last_commit_touching(self, repo: Repo, commit: Commit, path: str, is_dir: bool) -> Commit:
        def signature(c: Commit) -> str | None:
            if is_dir:
                return _tree_oid(c, path) if _is_dir(c, path) else None
            stored = c.files.get(path)
            return stored.git_oid if stored else None

        current = commit
        while current.parent is not None and signature(repo.commits[current.parent]) == signature(current):
            current = repo.commits[current.parent]
        return current

    # -- uploads --------------------------------------------------------------------------------

    def _preupload(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        head = self._resolve_revision(repo, unquote(params["rev"]))
        attributes = head.files.get(".gitattributes")
        lfs_patterns = _lfs_patterns(attributes.data.decode("utf-8", "replace") if attributes else "")
        answers = []
        for item in (request.json() or {}).get("files", []):
            path, size = str(item["path"]), int(item["size"])
            sample = base64.b64decode(item.get("sample") or "")
            mode = "lfs" if _needs_lfs(path, size, sample, lfs_patterns) else "regular"
            existing = head.files.get(path)
            answers.append(
                {"path": path, "uploadMode": mode, "shouldIgnore": False, "oid": existing.etag if existing else None}
            )
        return json_response({"files": answers, "commitOid": head.oid})

    def _lfs_batch(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._writable_repo(request, params)
        body = request.json() or {}
        if body.get("operation") != "upload":
            raise HubError(422, "LocalHub only implements the LFS 'upload' operation")
        objects = [self._lfs_batch_object(repo, obj) for obj in body.get("objects", [])]
        return json_response({"transfer": "basic", "objects": objects}, headers={"Content-Type": LFS_CONTENT_TYPE})

    def _lfs_batch_object(self, repo: Repo, obj: dict[str, Any]) -> dict[str, Any]:
        oid, size = str(obj.get("oid", "")), obj.get("size")
        if not SHA256_RE.fullmatch(oid) or not isinstance(size, int) or size < 0:
            invalid = {"code": 422, "message": "Invalid object"}
            return {"oid": oid, "size": size if isinstance(size, int) else 0, "error": invalid}
        if oid in repo.lfs_objects:
            return {"oid": oid, "size": size}  # no "actions": the client skips the upload
        ticket = secrets.token_hex(16)
        self._lfs_tickets[ticket] = LfsTicket((repo.repo_type, repo.repo_id), oid, size)
        return {
            "oid": oid,
            "size": size,
            "authenticated": True,
            "actions": {
                "upload": {"href": f"{self.url}/_lfs/upload/{ticket}"},
                "verify": {"href": f"{self.url}/_lfs/verify/{ticket}"},
            },
        }

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
        repo = self._writable_repo(request, params)
        if request.flag("create_pr"):
            raise HubError(501, "LocalHub does not implement pull requests (create_pr)")
        branch = self._branch_name(repo, unquote(params["rev"]))
        head = repo.commits[repo.branches[branch]]
        header, operations = _parse_commit_payload(request.body)
        parent = header.get("parentCommit")
        if parent and not head.oid.startswith(str(parent)):
            raise HubError(412, "A commit has happened since. Please refresh and try again.")
        files = dict(head.files)
        for key, value in operations:
            self._apply_operation(repo, files, key, value, head.oid)
        commit = self._new_commit(repo, head.oid, header["summary"], header.get("description") or "", files)
        repo.branches[branch] = commit.oid
        return json_response(
            {
                "success": True,
                "commitOid": commit.oid,
                "commitUrl": f"{self.url}/{repo.url_path}/commit/{commit.oid}",
                "hookOutput": "",
            }
        )

    def _apply_operation(self, repo: Repo, files: dict, key: str, value: dict[str, Any], head_oid: str) -> None:
        path = _checked_repo_path(str(value.get("path", "")))
        if key == "file":
            files[path] = StoredFile.create(_file_content(value), is_lfs=False)
        elif key == "lfsFile":
            files[path] = StoredFile.create(_lfs_content(repo, value), is_lfs=True)
        elif key == "deletedFile":
            if files.pop(path, None) is None:
                raise _entry_not_found(f"A file with this name doesn't exist: {path}", head_oid)
        elif key == "deletedFolder":
            doomed = [p for p in files if p.startswith(path.rstrip("/") + "/")]
            if not doomed:
                raise _entry_not_found(f"A folder with this name doesn't exist: {path}", head_oid)
            for doomed_path in doomed:
                del files[doomed_path]
        else:
            raise HubError(400, f"Unknown commit operation key: {key!r}")

    # -- downloads ------------------------------------------------------------------------------

    def _resolve(self, request: Request, params: dict[str, str]) -> Response:
        repo = self._readable_repo(request, params)
        revision, path = _split_resolve_path(params["rest"])
        commit = self._resolve_revision(repo, revision)
        stored = commit.files.get(path)
        if stored is None:
            raise _entry_not_found("Entry not found", commit.oid)
        headers = {
            "X-Repo-Commit": commit.oid,
            "ETag": f'"{stored.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if stored.is_lfs:  # the Hub sends these on LFS files; the client prefers them over ETag
            headers["X-Linked-Etag"] = f'"{stored.sha256}"'
            headers["X-Linked-Size"] = str(len(stored.data))
        return _ranged_response(stored.data, request.headers.get("Range"), headers)


# ---------------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------------


def _valid_repo_name(name: str) -> bool:
    return bool(REPO_NAME_RE.fullmatch(name)) and "--" not in name and ".." not in name and not name.endswith(".git")


def _sibling(path: str, stored: StoredFile, with_blobs: bool) -> dict[str, Any]:
    sibling: dict[str, Any] = {"rfilename": path}
    if with_blobs:
        sibling["size"] = len(stored.data)
        sibling["blobId"] = stored.git_oid
        if stored.is_lfs:
            sibling["lfs"] = {"sha256": stored.sha256, "size": len(stored.data), "pointerSize": stored.pointer_size}
    return sibling


def _ref(name: str, kind: str, oid: str) -> dict[str, str]:
    return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": oid}


def _is_dir(commit: Commit, path: str) -> bool:
    prefix = path.rstrip("/") + "/"
    return any(p.startswith(prefix) for p in commit.files)


def _tree_oid(commit: Commit, path: str) -> str:
    prefix = path.rstrip("/") + "/"
    listing = "\n".join(f"{p} {s.git_oid}" for p, s in sorted(commit.files.items()) if p.startswith(prefix))
    return _sha1_hex(listing)


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


def _paths_info_arguments(request: Request) -> tuple[list[str], bool]:
    """paths-info is sent form-encoded by HfApi (repeated `paths`); also accept a JSON body."""
    if "json" in request.headers.get("Content-Type", ""):
        body = request.json() or {}
        paths = body.get("paths") or []
        return ([paths] if isinstance(paths, str) else list(paths)), bool(body.get("expand"))
    form = parse_qs(request.body.decode(), keep_blank_values=True)
    expand = (form.get("expand") or [""])[-1].lower() in TRUE_VALUES
    return form.get("paths", []), expand


def _lfs_patterns(gitattributes: str) -> list[str]:
    patterns = []
    for line in gitattributes.splitlines():
        fields = line.split()
        if len(fields) >= 2 and not fields[0].startswith("#") and "filter=lfs" in fields[1:]:
            patterns.append(fields[0])
    return patterns


def _needs_lfs(path: str, size: int, sample: bytes, patterns: list[str]) -> bool:
    if size >= LFS_SIZE_THRESHOLD or b"\x00" in sample:
        return True
    basename = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(path if "/" in p else basename, p) for p in patterns)


def _parse_commit_payload(body: bytes) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """Split the NDJSON commit payload into its header value and its (key, value) operations."""
    try:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
    except ValueError as err:
        raise HubError(400, f"Invalid NDJSON commit payload: {err}") from err
    if not lines or lines[0].get("key") != "header" or not lines[0].get("value", {}).get("summary"):
        raise HubError(400, "Commit payload must start with a header line with a non-empty summary")
    operations = [(str(line.get("key")), line.get("value") or {}) for line in lines[1:]]
    return lines[0]["value"], operations


def _checked_repo_path(path: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..", ".git") for part in parts):
        raise HubError(400, f"Invalid path in repo: {path!r}")
    return path


def _file_content(value: dict[str, Any]) -> bytes:
    content = value.get("content", "")
    if value.get("encoding") != "base64":
        return str(content).encode()
    try:
        return base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError) as err:
        raise HubError(400, f"Invalid base64 content for {value.get('path')}") from err


def _lfs_content(repo: Repo, value: dict[str, Any]) -> bytes:
    oid = str(value.get("oid", ""))
    data = repo.lfs_objects.get(oid)
    if data is None:
        raise HubError(422, f"LFS object {oid} for {value.get('path')} was never uploaded to this repo")
    if "size" in value and int(value["size"]) != len(data):
        raise HubError(422, f"LFS object {oid} has {len(data)} bytes, commit says {value['size']}")
    return data


def _split_resolve_path(rest: str) -> tuple[str, str]:
    """'{revision}/{path}' of a resolve url. The revision is quoted as one segment by HfApi, but
    special refs may also arrive unquoted ('refs/convert/parquet/...')."""
    segments = rest.split("/")
    width = 3 if unquote(segments[0]) == "refs" and len(segments) > 3 else 1
    return unquote("/".join(segments[:width])), unquote("/".join(segments[width:]))


def _ranged_response(data: bytes, range_header: str | None, headers: dict[str, str]) -> Response:
    match = RANGE_RE.fullmatch(range_header or "")
    if range_header is None or match is None or match.group(1) == match.group(2) == "":
        return Response(200, data, headers)  # no (or an unsupported multi-) range: full content, allowed by RFC 9110
    start_text, end_text = match.groups()
    total = len(data)
    if start_text:
        start = int(start_text)
        end = min(int(end_text), total - 1) if end_text else total - 1
    else:  # suffix range: the last N bytes
        start, end = max(total - int(end_text), 0), total - 1
    if start >= total or start > end:
        return Response(416, b"", {**headers, "Content-Range": f"bytes */{total}"})
    return Response(206, data[start : end + 1], {**headers, "Content-Range": f"bytes {start}-{end}/{total}"})


def _parse_front_matter(readme: str) -> tuple[dict[str, Any] | None, str | None]:
    """(YAML metadata of a README, why it is invalid). Checked only when PyYAML happens to be importable:
    the server itself stays stdlib-only, and cardData is optional."""
    match = re.match(r"---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(\r?\n|$)", readme, re.DOTALL)
    try:
        import yaml
    except ImportError:
        return None, None
    if match is None:
        return None, None
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as err:
        return None, f"Invalid YAML in README.md metadata: {err}"
    if data is not None and not isinstance(data, dict):
        return None, "README.md metadata must be a YAML mapping"
    return data, None
