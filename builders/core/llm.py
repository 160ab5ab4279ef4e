"""The one client every LLM call in mcqforge goes through (SBA labelling, distractor predictions,
MMLU-Pro+ options).

It talks to any OpenAI-compatible endpoint (vLLM, TGI, a hosted API) with the real ``openai``
client and adds what long batch runs need:

* our own retries: exponential backoff with jitter on 429, 5xx, timeouts, dropped connections and
  200 answers that are not a chat completion (a cut body, an HTML page), honouring ``Retry-After``;
  any other 4xx fails that request at once. The SDK's retries are off (``max_retries=0``) so that
  every attempt is counted and logged here.
* a total deadline per HTTP request (``timeout``), however slowly the server sends its bytes;
* an endpoint that cannot be reached (connection refused, unknown host) gets one quick retry, then
  the run stops with one :class:`EndpointError` instead of minutes of backoff;
* a bounded thread pool that keeps the order of the requests, with a tqdm bar;
* an on-disk reply cache, one small JSON file per request written atomically the moment its
  reply arrives, so a killed run resumes without paying for any reply twice;
* an optional ``parse`` callback: a reply it rejects with ``ValueError`` is asked for again
  (bypassing the cache) and finally returned as ``ok=False, error="unparseable"``;
* running totals (calls, cache hits, retries, tokens, failures) for logs and dataset cards.

The API key is read from an environment variable and never printed or logged: it is not kept on
this object, not shown in any repr, and scrubbed (in any letter case) from error text a server sends
back before that text is cut to one line.

Every command that calls an LLM declares its endpoint options with :func:`add_llm_arguments`, reads
them with :meth:`LLMSettings.from_args`, checks the endpoint with :func:`check_endpoint` before it
loads anything, and builds its clients with :meth:`LLMSettings.client`.
"""

from __future__ import annotations

import argparse
import dataclasses
import email.utils
import hashlib
import json
import logging
import os
import random
import re
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Generic, Iterator, Mapping, Sequence, TypeVar, cast


if TYPE_CHECKING:
    import httpcore
    import httpx
    from openai.types.chat import ChatCompletionMessageParam

from .argtypes import MAX_TIMEOUT_S, nonnegative_int, positive_int, seconds, share
from .cache import DEFAULT_ROOT, cache_folder
from .errors import UserError
from .redact import scrub_text, scrub_url
from .progress import bar as progress_bar

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Part of every cache key: bump it when the key's payload or the cache file format changes.
CACHE_FORMAT_VERSION = 1
#: Sent as the key when ``api_key_env=None`` (keyless local servers: vLLM and TGI accept any).
PLACEHOLDER_API_KEY = "EMPTY"
#: Longest wait a server's ``Retry-After`` can impose, so a garbled header cannot hang a run.
MAX_RETRY_AFTER_S = 300.0
#: 4xx statuses worth retrying; every other 4xx is the request's own fault and fails at once.
RETRYABLE_4XX = frozenset({429})
#: Where requests go when no base URL is given and $OPENAI_BASE_URL is unset (as in the openai client).
OPENAI_API_URL = "https://api.openai.com/v1"

# The defaults of the endpoint options (add_llm_arguments), of LLMSettings and of LLMClient.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
DEFAULT_CACHE_DIR = DEFAULT_ROOT
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_RETRIES = 6
#: Share of a client's requests that may fail for good (an HTTP error, a timeout...) before the run stops.
DEFAULT_MAX_FAILURES = 0.1
#: Longest a connection may take to open: a reachable server accepts in well under this.
CONNECT_TIMEOUT_S = 10.0
#: All the time check_endpoint may take, both of its requests together.
CHECK_TIMEOUT_S = 5.0

UNPARSEABLE = "unparseable"
BAD_REPLY = "bad_reply"
# A connection that could not even be opened (refused, unknown host, connect timeout). Never in a
# ChatResult: the request's one quick retry failing too raises EndpointError.
_UNREACHABLE = "unreachable"


class MissingAPIKeyError(UserError):
    """The environment variable that should hold the API key is unset or empty."""


class EndpointError(UserError):
    """The endpoint cannot be reached, refuses the key or is not an OpenAI-compatible API."""


class TooManyFailures(EndpointError):
    """More of a client's requests failed than its ``max_failures`` share allows."""


# -- the endpoint options, declared once ----------------------------------------------------


def add_llm_arguments(group: argparse._ArgumentGroup) -> None:
    """The endpoint options of every command that calls an LLM, declared once; their defaults are
    shown by the parser's ArgumentDefaultsHelpFormatter. The model option is each command's own."""
    group.add_argument("--base-url", metavar="URL", default=None,
                       help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 for vLLM; "
                            "unset: $OPENAI_BASE_URL, else the OpenAI API")
    group.add_argument("--api-key-env", metavar="NAME", default=DEFAULT_API_KEY_ENV,
                       help="environment variable holding the API key (never printed or logged); "
                            "'none' for a keyless local server such as vLLM")
    group.add_argument("--llm-concurrency", metavar="N", type=positive_int, default=DEFAULT_CONCURRENCY,
                       help="requests in flight per model")
    group.add_argument("--llm-timeout", metavar="SECONDS", type=seconds, default=DEFAULT_TIMEOUT_S,
                       help="total deadline of one HTTP request, however slowly the server answers")
    group.add_argument("--llm-max-retries", metavar="N", type=nonnegative_int, default=DEFAULT_MAX_RETRIES,
                       help="retries of a request after a 429, a 5xx, a timeout or a malformed answer, with "
                            "backoff; an endpoint that cannot be reached stops the run after one quick retry")
    group.add_argument("--max-llm-failures", metavar="SHARE", type=share, default=DEFAULT_MAX_FAILURES,
                       help="stop when more than this share of a model's requests fail for good (an HTTP error, "
                            "a timeout...), naming the most common error; an unparseable reply is not a failure")
    group.add_argument("--cache-dir", metavar="DIR", default=DEFAULT_CACHE_DIR,
                       help="on-disk caches, each use in its own sub-folder (LLM replies in DIR/llm, so a killed "
                            "run resumes without paying for a reply twice); 'none' disables them")


@dataclass(frozen=True)
class LLMSettings:
    """Where and how fast an LLM is asked: everything but the model (each command names its own).

    ``api_key_env=None``: a keyless local server. ``cache_dir``: the root of the on-disk caches (None:
    none); replies go to ``<cache_dir>/llm``, other uses of the root take their own sub-folder.
    """

    base_url: str | None = None
    api_key_env: str | None = DEFAULT_API_KEY_ENV
    cache_dir: Path | None = field(default_factory=lambda: cache_folder(DEFAULT_CACHE_DIR))
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    max_failures: float | None = DEFAULT_MAX_FAILURES

    def __post_init__(self) -> None:
        _check_settings(self.concurrency, self.max_retries, self.timeout, self.max_failures)
        if self.base_url is not None and urllib.parse.urlsplit(self.base_url).scheme not in ("http", "https"):
            raise UserError(f"--base-url must start with http:// or https://, got {scrub_url(self.base_url)!r}")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LLMSettings:
        """The settings :func:`add_llm_arguments` parsed ('none' turns the key variable or the cache off)."""
        cache_dir = cache_folder(args.cache_dir)
        return cls(
            base_url=args.base_url or None,
            api_key_env=None if str(args.api_key_env).lower() == "none" else args.api_key_env,
            cache_dir=cache_dir,
            concurrency=args.llm_concurrency,
            timeout=args.llm_timeout,
            max_retries=args.llm_max_retries,
            max_failures=args.max_llm_failures,
        )

    @property
    def url(self) -> str:
        return endpoint_url(self.base_url)

    def client(self, model: str) -> LLMClient:
        """A client for ``model`` on this endpoint, its reply cache in ``<cache_dir>/llm``."""
        return LLMClient(
            model, base_url=self.base_url, api_key_env=self.api_key_env,
            cache_dir=self.cache_dir / "llm" if self.cache_dir is not None else None,
            concurrency=self.concurrency, max_retries=self.max_retries, timeout=self.timeout,
            max_failures=self.max_failures,
        )


def endpoint_url(base_url: str | None) -> str:
    """The URL requests go to, without a trailing slash: ``base_url``, else $OPENAI_BASE_URL, else the OpenAI API."""
    return (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_API_URL).rstrip("/")


# -- the endpoint check ---------------------------------------------------------------------


def check_endpoint(settings: LLMSettings) -> None:
    """One cheap request that fails in seconds, with one line, when the endpoint cannot be reached,
    refuses the key, or is not an OpenAI-compatible API. Meant to run before anything is loaded or
    paid for. (Model names are not checked: gateways and hosted APIs do not all list what they serve.)

    It asks ``GET /models`` with no retry and :data:`CHECK_TIMEOUT_S` in all. A server without
    ``/models`` (404) is sent ``POST /chat/completions`` with an empty body instead, which every
    OpenAI-compatible API refuses with a JSON error, without running a model.
    """
    import httpx

    url = settings.url
    headers = {"Authorization": f"Bearer {_read_api_key(settings.api_key_env)}"}
    where = f"the LLM endpoint {scrub_url(url)}"
    try:
        with _http_client(url, CHECK_TIMEOUT_S, connections=1) as http, _deadline(CHECK_TIMEOUT_S):
            response = http.get(f"{url}/models", headers=headers)
            if response.status_code == 404:
                response = http.post(f"{url}/chat/completions", json={}, headers=headers)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise EndpointError(f"cannot reach {where}: {_connection_reason(exc)}; is the server running "
                                  f"and --base-url right?") from None
    problem = _endpoint_problem(response, settings.api_key_env)
    if problem:
        raise EndpointError(f"{where} {problem}")


def _endpoint_problem(response: httpx.Response, api_key_env: str | None) -> str | None:
    """What is wrong with the answer to check_endpoint's request, or None."""
    status, asked = response.status_code, f"{response.request.method} {response.request.url.path}"
    if status in (401, 403):
        if api_key_env is None:
            return f"refused a request without a key (HTTP {status}); name the key's variable with --api-key-env"
        return f"refused the API key in ${api_key_env} (HTTP {status})"
    if status >= 500:
        return f"answered HTTP {status} to {asked}; try again later"
    if status == 429:
        return None  # reachable, and the key was taken: only busy
    body = _json_object(response)
    if response.request.method == "POST":  # the fallback: a JSON refusal of the empty body is an API speaking
        understood = body is not None and status != 404
    else:
        understood = status == 200 and body is not None and isinstance(body.get("data"), list)
    if understood:
        return None
    kind = response.headers.get("content-type", "no content type")
    return (f"answered {asked} with HTTP {status} ({kind}): not an OpenAI-compatible API "
            f"(its --base-url usually ends in /v1)")


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _connection_reason(exc: Exception) -> str:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {CHECK_TIMEOUT_S:g}s"
    return _one_line(scrub_text(str(exc))) or type(exc).__name__


# -- requests and results --------------------------------------------------------------------


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion to ask for. Everything here except the salts is sent to the server.

    ``template_version`` names the prompt template (e.g. ``"sba-label-v2"``) and ``cache_salt``
    anything else that must not share a cached reply, e.g. the sample index when the same prompt
    is sampled several times at ``temperature > 0``. Both only enter the cache key.
    """

    messages: Sequence[Mapping[str, Any]]
    temperature: float = 0.0
    max_tokens: int | None = None
    response_format: Mapping[str, Any] | None = None
    stop: str | Sequence[str] | None = None
    seed: int | None = None
    extra_body: Mapping[str, Any] | None = None
    template_version: str = ""
    cache_salt: str = ""

    def __post_init__(self) -> None:
        if not self.messages:
            raise ValueError("ChatRequest needs at least one message")
        for message in self.messages:
            if "role" not in message or "content" not in message:
                raise ValueError(f"each message needs 'role' and 'content', got keys {sorted(message)}")
        # Frozen copies, so a caller mutating its dicts later cannot change what was keyed.
        object.__setattr__(self, "messages", tuple(dict(m) for m in self.messages))
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        elif self.stop is not None:
            object.__setattr__(self, "stop", tuple(self.stop))

    @classmethod
    def from_prompt(cls, prompt: str, *, system: str | None = None, **options: Any) -> ChatRequest:
        """A single user turn, optionally after a system message."""
        messages = [{"role": "system", "content": system}] if system is not None else []
        messages.append({"role": "user", "content": prompt})
        return cls(messages=messages, **options)

    def api_params(self) -> dict[str, Any]:
        """Keyword arguments for ``chat.completions.create``, besides model and messages."""
        params: dict[str, Any] = {"temperature": float(self.temperature)}
        optional = {
            "max_tokens": self.max_tokens,
            "response_format": _plain(self.response_format),
            "stop": list(self.stop) if self.stop is not None else None,
            "seed": self.seed,
            "extra_body": _plain(self.extra_body),
        }
        params.update({name: value for name, value in optional.items() if value is not None})
        return params


@dataclass(frozen=True)
class TokenUsage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class ChatResult(Generic[T]):
    """What became of one request.

    ``text`` is the raw reply (kept even when unparseable), ``parsed`` what ``parse`` made of it.
    ``error`` is a short code: ``"unparseable"``, ``"http_<status>"``, ``"timeout"``,
    ``"connection"`` (dropped mid-request), ``"bad_reply"`` (a 200 that is not a chat completion),
    ``"no_choices"`` or ``"api_error"``; ``error_detail`` says more.
    ``attempts`` counts HTTP calls made for this request in this run (0 when served from cache).
    ``usage`` is the token count of the reply returned (as first billed, when it is cached).
    """

    key: str
    ok: bool
    text: str | None = None
    parsed: T | None = None
    error: str | None = None
    error_detail: str = ""
    usage: TokenUsage = field(default_factory=TokenUsage)
    cached: bool = False
    attempts: int = 0
    finish_reason: str | None = None


@dataclass(frozen=True)
class UsageTotals:
    """Running totals of one client. Tokens count only replies paid for in this process."""

    calls: int = 0  # HTTP requests sent, every attempt included
    cache_hits: int = 0
    retries: int = 0  # transport retries (429, 5xx, timeout, connection, bad reply)
    parse_retries: int = 0  # requests asked again because ``parse`` rejected the reply
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0  # results returned with ok=False


def request_key(model: str, request: ChatRequest) -> str:
    """sha256 of the canonical JSON of everything that determines a reply."""
    payload = {
        "format": CACHE_FORMAT_VERSION,
        "model": model,
        "messages": list(request.messages),
        "temperature": float(request.temperature),
        "max_tokens": request.max_tokens,
        "response_format": request.response_format,
        "stop": list(request.stop) if request.stop is not None else None,
        "seed": request.seed,
        "extra_body": request.extra_body,
        "template_version": request.template_version,
        "cache_salt": request.cache_salt,
    }
    canonical = json.dumps(_plain(payload), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _plain(value: Any) -> Any:
    """Mappings and sequences as dicts and lists, so json and the openai client accept them."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- the on-disk cache -----------------------------------------------------------------------


class ReplyCache:
    """One JSON file per request key, at ``<root>/<key[:2]>/<key>.json``.

    Files are written to a temporary name and moved into place with ``os.replace``, so a process
    killed mid-write leaves either the old state or the whole file, never half of one. A file that
    cannot be read (e.g. cut short by a power loss) counts as a miss and is rewritten.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self.path_for(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            logger.warning("unreadable cache file %s (%s); asking again", path, type(exc).__name__)
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            logger.warning("cache file %s has no reply text; asking again", path)
            return None
        return entry

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(entry, handle, ensure_ascii=False)
            os.replace(tmp_name, path)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise


# -- the client ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Reply:
    text: str
    usage: TokenUsage
    finish_reason: str | None
    cached: bool
    attempts: int


@dataclass(frozen=True)
class _Failure:
    error: str
    detail: str
    attempts: int


class LLMClient:
    """A retrying, caching, concurrent client for one model on one OpenAI-compatible endpoint.

    ``api_key_env`` names the environment variable holding the key; it must be set and non-empty.
    Pass ``api_key_env=None`` for a keyless local server (vLLM, TGI): the placeholder ``"EMPTY"``
    is sent. There is no silent fallback, so a forgotten key never turns into anonymous requests.
    ``timeout`` is the total deadline of one HTTP request (each retry gets a new one). Once it has
    found the endpoint unreachable, a client sends nothing more. ``max_failures`` (None: no limit) is the
    share of the client's requests that may fail for good (unparseable replies aside: those are the model's
    answers) before :meth:`complete_many` raises :class:`TooManyFailures`, so that an endpoint refusing every
    request never turns into a release built from no answers. Commands build their clients with
    :meth:`LLMSettings.client`.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = DEFAULT_API_KEY_ENV,
        cache_dir: Path | str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_retries: int = DEFAULT_MAX_RETRIES,
        timeout: float = DEFAULT_TIMEOUT_S,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        max_failures: float | None = None,
    ) -> None:
        _check_settings(concurrency, max_retries, timeout, max_failures)
        if backoff_base < 0 or backoff_max < 0:
            raise ValueError("backoff_base and backoff_max must be >= 0")
        self.model = model
        self.base_url = base_url
        self.url = endpoint_url(base_url)
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_failures = max_failures
        self._requests = 0  # requests answered, failed or not (each counted once, whatever its retries)
        self._planned = 0  # requests answered once the running complete_many is done
        self._call_failures: Counter[str] = Counter()  # requests failed for good, per error code
        self._failure_details: dict[str, str] = {}  # the first detail of each error code
        self._too_many_failures: str | None = None  # set once max_failures is passed: send nothing more
        self.cache = ReplyCache(Path(cache_dir)) if cache_dir is not None else None
        import openai  # 0.4 s: only once a model is called, never to parse a command line

        # The key lives only inside the openai client: never as an attribute of ours.
        # openai 3 annotates these with httpx2's classes; it runs with this httpx client all the same
        self._openai = openai.OpenAI(
            base_url=self.url, api_key=_read_api_key(api_key_env), max_retries=0,
            timeout=_timeouts(timeout),  # type: ignore[arg-type]
            http_client=_http_client(self.url, timeout, connections=concurrency),  # type: ignore[arg-type]
        )
        self._totals = UsageTotals()
        self._unreachable: str | None = None  # set once the endpoint could not be reached twice in a row
        self._lock = threading.Lock()
        self._rng = random.Random()

    def __repr__(self) -> str:
        return (
            f"LLMClient(model={self.model!r}, base_url={scrub_url(self.base_url) if self.base_url else None!r}, "
            f"api_key_env={self.api_key_env!r}, cache_dir={self._cache_root()!r}, "
            f"concurrency={self.concurrency}, max_retries={self.max_retries})"
        )

    def close(self) -> None:
        self._openai.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- totals --------------------------------------------------------------------------

    @property
    def usage(self) -> UsageTotals:
        with self._lock:
            return self._totals

    def usage_summary(self) -> str:
        u = self.usage
        return (
            f"{self.model}: {u.calls} API calls ({u.retries} retries, {u.parse_retries} parse retries), "
            f"{u.cache_hits} cache hits, {u.failures} failures, "
            f"{u.prompt_tokens} prompt + {u.completion_tokens} completion tokens"
        )

    def _count(self, **increments: int) -> None:
        with self._lock:
            self._totals = dataclasses.replace(
                self._totals,
                **{name: getattr(self._totals, name) + n for name, n in increments.items()},
            )

    # -- public calls --------------------------------------------------------------------

    def complete_many(
        self,
        requests: Sequence[ChatRequest],
        parse: Callable[[str], T] | None = None,
        parse_retries: int = 1,
        desc: str = "",
    ) -> list[ChatResult[T]]:
        """Run every request, ``concurrency`` at a time; results come back in request order.

        Raises :class:`EndpointError` as soon as a request finds the endpoint unreachable twice;
        the requests not yet sent are dropped (replies already received stay cached)."""
        if parse_retries < 0:
            raise ValueError("parse_retries must be >= 0")
        results: list[ChatResult[T] | None] = [None] * len(requests)
        if not requests:
            return []
        with self._lock:
            self._planned = self._requests + len(requests)
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)), thread_name_prefix="llm")
        try:
            with progress_bar(total=len(requests), desc=desc or self.model, unit="req") as bar:
                futures: dict[Future[ChatResult[T]], int] = {
                    pool.submit(self.complete, request, parse, parse_retries): index
                    for index, request in enumerate(requests)
                }
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update(1)
            if self._too_many_failures is not None:  # passed by the batch's last requests
                raise TooManyFailures(self._too_many_failures)
        except BaseException:
            # Ctrl-C or a bug in ``parse``: queued requests are dropped; those in flight still
            # finish and land in the cache, so a re-run resumes from there.
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        logger.info("%s%s", f"{desc}: " if desc else "", self.usage_summary())
        return [result for result in results if result is not None]

    def complete(
        self,
        request: ChatRequest,
        parse: Callable[[str], T] | None = None,
        parse_retries: int = 1,
    ) -> ChatResult[T]:
        """One request: cache, then the API with retries, then ``parse`` (asked again on ValueError).
        Raises :class:`EndpointError` when the endpoint cannot be reached, twice."""
        result = self._complete(request, parse, parse_retries)
        with self._lock:
            self._requests += 1
        return result

    def _complete(self, request: ChatRequest, parse: Callable[[str], T] | None, parse_retries: int) -> ChatResult[T]:
        key = request_key(self.model, request)
        attempts = 0
        rejected: _Reply | None = None
        rejection = ""
        for parse_try in range(parse_retries + 1):
            if parse_try:
                self._count(parse_retries=1)
                logger.info("reply %s… unparseable (%s); asking again", key[:12], rejection)
            # A retry must reach the model: the cached reply is the one that was rejected.
            fetched = self._fetch(key, request, use_cache=rejected is None)
            attempts += fetched.attempts
            if isinstance(fetched, _Failure):
                return self._failed(key, fetched.error, fetched.detail, attempts)
            try:
                parsed = parse(fetched.text) if parse is not None else None
            except ValueError as exc:
                rejected, rejection = fetched, _one_line(str(exc))
                continue
            if not fetched.cached:
                self._store(key, fetched)
            return ChatResult(
                key=key, ok=True, text=fetched.text, parsed=parsed, usage=fetched.usage,
                cached=fetched.cached, attempts=attempts, finish_reason=fetched.finish_reason,
            )
        assert rejected is not None
        self._count(failures=1)
        logger.warning("reply %s… still unparseable after %d tries: %s", key[:12], parse_retries + 1, rejection)
        return ChatResult(
            key=key, ok=False, text=rejected.text, error=UNPARSEABLE, error_detail=rejection,
            usage=rejected.usage, cached=rejected.cached, attempts=attempts,
            finish_reason=rejected.finish_reason,
        )

    # -- internals -----------------------------------------------------------------------

    def _failure_limit_passed(self) -> str | None:
        """Why no more request is sent, once more requests failed than ``max_failures`` allows of all this
        client will have asked by the end of the running batch (the outcome is then certain). Holding the lock."""
        failed, planned = sum(self._call_failures.values()), max(self._planned, self._requests + 1)
        if self.max_failures is None or failed <= self.max_failures * planned:
            return None
        error, count = self._call_failures.most_common(1)[0]
        return (f"{failed} of {planned} requests to {self.model} at {scrub_url(self.url)} failed, more than "
                f"--max-llm-failures {self.max_failures:g} allows ({self.max_failures:.0%}); most often {error} "
                f"({count}: {self._failure_details[error]})")

    def _failed(self, key: str, error: str, detail: str, attempts: int) -> ChatResult[Any]:
        self._count(failures=1)
        with self._lock:
            self._call_failures[error] += 1
            self._failure_details.setdefault(error, detail)
            # Decided here, in the worker, so that no request is sent after the one that passed the limit.
            self._too_many_failures = self._too_many_failures or self._failure_limit_passed()
        logger.warning("request %s… failed after %d attempt(s): %s %s", key[:12], attempts, error, detail)
        return ChatResult(key=key, ok=False, error=error, error_detail=detail, attempts=attempts)

    def _fetch(self, key: str, request: ChatRequest, *, use_cache: bool) -> _Reply | _Failure:
        if use_cache and self.cache is not None:
            entry = self.cache.get(key)
            if entry is not None:
                self._count(cache_hits=1)
                usage = entry.get("usage") or {}
                return _Reply(
                    text=entry["text"],
                    usage=TokenUsage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
                    finish_reason=entry.get("finish_reason"),
                    cached=True,
                    attempts=0,
                )
        return self._call_with_retries(request)

    def _store(self, key: str, reply: _Reply) -> None:
        if self.cache is None:
            return
        entry = {
            "format": CACHE_FORMAT_VERSION,
            "model": self.model,
            "text": reply.text,
            "finish_reason": reply.finish_reason,
            "usage": dataclasses.asdict(reply.usage),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        try:
            self.cache.put(key, entry)
        except OSError as exc:
            # The reply is still returned; only a re-run would have to pay for it again.
            logger.warning("could not write cache file for %s… (%s)", key[:12], exc)

    def _call_with_retries(self, request: ChatRequest) -> _Reply | _Failure:
        for attempt in range(1, self.max_retries + 2):
            if self._unreachable is not None:  # found by another request: send nothing more
                raise EndpointError(self._unreachable)
            if self._too_many_failures is not None:
                raise TooManyFailures(self._too_many_failures)
            self._count(calls=1)
            outcome, retryable, retry_after = self._call_once(request, attempt)
            if isinstance(outcome, _Reply):
                return outcome
            if outcome.error == _UNREACHABLE and attempt > min(1, self.max_retries):
                # No backoff for a server that is not there: a dead endpoint would hold every request
                # for minutes of retries. One retry (after the first, short step of the backoff) is all.
                stored = "; the replies received so far are cached: a re-run resumes" if self.cache else ""
                self._unreachable = f"cannot reach the LLM endpoint {scrub_url(self.url)} ({outcome.detail}){stored}"
                raise EndpointError(self._unreachable)
            if not retryable or attempt > self.max_retries:
                return outcome
            delay = self._backoff_delay(attempt, retry_after)
            self._count(retries=1)
            logger.info(
                "%s on attempt %d of %d; retrying in %.2fs", outcome.error, attempt, self.max_retries + 1, delay
            )
            time.sleep(delay)
        raise AssertionError("unreachable: the last attempt always returns")

    def _call_once(self, request: ChatRequest, attempt: int) -> tuple[_Reply | _Failure, bool, float | None]:
        """One HTTP call: (outcome, whether a failure is worth retrying, server's Retry-After)."""
        import httpx
        import openai

        try:
            with _deadline(self.timeout):
                # The raw answer: the SDK would crash on a 200 whose body is not a chat completion.
                # the messages are plain mappings in the API's shape; the SDK types each role's TypedDict
                messages = cast("list[ChatCompletionMessageParam]", list(request.messages))
                raw = self._openai.chat.completions.with_raw_response.create(
                    model=self.model, messages=messages, **request.api_params()
                )
        except openai.APIStatusError as exc:
            status = exc.status_code
            failure = _Failure(f"http_{status}", self._status_detail(exc), attempt)
            retryable = status in RETRYABLE_4XX or status >= 500
            return failure, retryable, _retry_after_seconds(exc.response.headers)
        except openai.APIConnectionError as exc:  # timeouts included (a subclass)
            cause = exc.__cause__
            if isinstance(cause, (httpx.ConnectError, httpx.ConnectTimeout)):
                return _Failure(_UNREACHABLE, self._detail(str(cause) or type(cause).__name__), attempt), True, None
            if isinstance(exc, openai.APITimeoutError):
                return _Failure("timeout", f"no whole reply within {self.timeout:g}s", attempt), True, None
            return _Failure("connection", self._detail(str(cause or exc)), attempt), True, None
        except openai.APIError as exc:
            return _Failure("api_error", self._detail(str(exc)), attempt), False, None
        # the response of our httpx client (openai 3 annotates it as httpx2's)
        return self._reply_from(raw.http_response, attempt)  # type: ignore[arg-type]

    def _reply_from(self, response: httpx.Response, attempt: int) -> tuple[_Reply | _Failure, bool, float | None]:
        """The reply in a 200 answer. One that is not a chat completion (a cut body, a web page from a
        wrong base URL) fails this attempt and is retried, like any other garbled answer."""
        body = _json_object(response)
        choices = body.get("choices") if body is not None else None
        if body is None or not isinstance(choices, list):
            kind = response.headers.get("content-type", "no content type")
            detail = f"HTTP 200 but not a chat completion ({kind}, {len(response.content)} bytes: {response.text!r})"
            return _Failure(BAD_REPLY, self._detail(detail), attempt), True, None
        usage = _token_usage(body.get("usage"))
        # Billed even when the reply turns out unusable.
        self._count(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)
        if not choices:
            return _Failure("no_choices", "the server answered with no choices", attempt), False, None
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message")
        text = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(text, (str, type(None))):
            detail = f"HTTP 200 but its first choice holds no text message: {json.dumps(choices[0])}"
            return _Failure(BAD_REPLY, self._detail(detail), attempt), True, None
        finish_reason = choice.get("finish_reason")
        reply = _Reply(
            text=text or "",
            usage=usage,
            finish_reason=finish_reason if isinstance(finish_reason, str) else None,
            cached=False,
            attempts=attempt,
        )
        return reply, False, None

    def _backoff_delay(self, attempt: int, retry_after: float | None) -> float:
        # "Equal jitter": half the exponential step plus a random half, so that concurrent
        # workers hit by the same 429 spread out but none retries immediately.
        step = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        delay = step / 2 + self._rng.uniform(0, step / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, MAX_RETRY_AFTER_S))
        return delay

    def _status_detail(self, exc: Any) -> str:  # an openai.APIStatusError
        if exc.status_code in (401, 403):
            # Some providers echo (part of) the key in auth errors: say nothing of theirs.
            source = f"${self.api_key_env}" if self.api_key_env else "the placeholder key (api_key_env=None)"
            return f"authentication refused (HTTP {exc.status_code}); check the key in {source}"
        return self._detail(exc.message)

    def _detail(self, text: str) -> str:
        """Text a server sent, fit for logs and ``error_detail``: the key scrubbed out in any letter case
        first (so that cutting the text cannot leave a piece of it), then cut to one line."""
        secret = self._openai.api_key
        if isinstance(secret, str) and secret and secret != PLACEHOLDER_API_KEY:
            text = re.sub(re.escape(secret), "***", text, flags=re.IGNORECASE)
        return _one_line(scrub_text(text))

    def _cache_root(self) -> str | None:
        return str(self.cache.root) if self.cache is not None else None


# -- HTTP with a total deadline -------------------------------------------------------------
#
# httpx's timeouts bound each socket operation, so a server sending a byte a second never trips
# them. The deadline is kept per thread (every request runs synchronously in its worker thread) and
# cuts the timeout of every connect, read and write the request makes; past it they raise httpx's
# own timeout errors, which the openai client reports as APITimeoutError.


class _Deadline(threading.local):
    at: float | None = None  # time.monotonic() by which this thread's request must be over


_DEADLINE = _Deadline()


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    _DEADLINE.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _DEADLINE.at = None


def _time_left(timeout: float | None, expired: type[Exception]) -> float | None:
    """One socket operation's timeout, cut to what is left before the thread's deadline."""
    if _DEADLINE.at is None:
        return timeout
    left = _DEADLINE.at - time.monotonic()
    if left <= 0:
        raise expired("the request's total deadline has passed")
    return left if timeout is None else min(timeout, left)


# httpx and httpcore (0.2 s with trio installed) are imported by the functions that make requests, so that a
# command line parses before they load; the wrappers below are duck-typed httpcore streams and backends (the
# pool calls their methods and never checks their classes).


class _DeadlineStream:  # an httpcore.NetworkStream
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _time_left(timeout, _httpcore().ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _time_left(timeout, _httpcore().WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> _DeadlineStream:
        tls = self._stream.start_tls(ssl_context, server_hostname, _time_left(timeout, _httpcore().ConnectTimeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend:  # an httpcore.NetworkBackend
    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> _DeadlineStream:
        stream = self._backend.connect_tcp(host, port, _time_left(timeout, _httpcore().ConnectTimeout),
                                           local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> _DeadlineStream:
        stream = self._backend.connect_unix_socket(path, _time_left(timeout, _httpcore().ConnectTimeout), socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _httpcore():
    import httpcore

    return httpcore


def _http_client(url: str, timeout: float, connections: int) -> httpx.Client:
    """An httpx client for ``url`` whose sockets keep to the calling thread's deadline, through the
    proxy the environment names for it (as httpx would pick it)."""
    import httpx

    transport = httpx.HTTPTransport(proxy=_environment_proxy(url),
                                    limits=httpx.Limits(max_connections=connections,
                                                        max_keepalive_connections=connections))
    # httpx's transport takes no network backend, so wrap its httpcore pool's (private attributes, as
    # of httpx 0.28 and httpcore 1.0: a change shows at once, as an AttributeError building any client).
    # duck-typed: it cannot subclass httpcore.NetworkBackend without importing httpcore when this module loads
    transport._pool._network_backend = cast("httpcore.NetworkBackend",
                                            _DeadlineBackend(transport._pool._network_backend))
    return httpx.Client(transport=transport, timeout=_timeouts(timeout), follow_redirects=True)


def _timeouts(timeout: float) -> httpx.Timeout:
    import httpx

    return httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))


def _environment_proxy(url: str) -> str | None:
    """$HTTPS_PROXY / $HTTP_PROXY / $ALL_PROXY for ``url`` unless $NO_PROXY exempts its host."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    proxies = urllib.request.getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")


def _read_api_key(env_name: str | None) -> str:
    if env_name is None:
        return PLACEHOLDER_API_KEY
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise MissingAPIKeyError(
            f"environment variable {env_name} is not set or empty; it must hold the API key "
            f"(for a keyless local server such as vLLM or TGI, pass --api-key-env none)"
        )
    return value


def _check_settings(concurrency: int, max_retries: int, timeout: float, max_failures: float | None) -> None:
    if concurrency < 1:
        raise UserError(f"--llm-concurrency (concurrency) must be at least 1, not {concurrency}")
    if max_retries < 0:
        raise UserError(f"--llm-max-retries (max_retries) must be at least 0, not {max_retries}")
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise UserError(f"--llm-timeout (timeout) must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, "
                        f"not {timeout}")
    if max_failures is not None and not 0 <= max_failures <= 1:
        raise UserError(f"--max-llm-failures (max_failures) must be a share between 0 and 1, not {max_failures}")


def _token_usage(usage: Any) -> TokenUsage:
    counts = usage if isinstance(usage, dict) else {}
    return TokenUsage(*(n if isinstance(n, int) else 0 for n in
                        (counts.get("prompt_tokens"), counts.get("completion_tokens"))))


def _retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a server asks for: ``retry-after-ms`` first (sub-second), then ``retry-after``
    as seconds or as an HTTP date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
