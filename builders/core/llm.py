"""The one client every LLM call in mcqforge goes through (SBA labelling, distractor predictions,
MMLU-Pro+ options).

It talks to any OpenAI-compatible endpoint (vLLM, TGI, a hosted API) with the real ``openai``
client and adds what long batch runs need:

* our own retries: exponential backoff with jitter on 429, 5xx, timeouts and connection errors,
  honouring ``Retry-After``; any other 4xx fails that request at once. The SDK's retries are off
  (``max_retries=0``) so that every attempt is counted and logged here.
* a bounded thread pool that keeps the order of the requests, with a tqdm bar;
* an on-disk reply cache, one small JSON file per request written atomically the moment its
  reply arrives, so a killed run resumes without paying for any reply twice;
* an optional ``parse`` callback: a reply it rejects with ``ValueError`` is asked for again
  (bypassing the cache) and finally returned as ``ok=False, error="unparseable"``;
* running totals (calls, cache hits, retries, tokens, failures) for logs and dataset cards.

The API key is read from an environment variable and never printed or logged: it is not kept on
this object, not shown in any repr, and scrubbed from error text a server sends back.
"""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import json
import logging
import os
import random
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

import openai
from tqdm import tqdm

from .errors import UserError

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

UNPARSEABLE = "unparseable"


class MissingAPIKeyError(UserError):
    """The environment variable that should hold the API key is unset or empty."""


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
    ``"connection"``, ``"no_choices"`` or ``"api_error"``; ``error_detail`` says more.
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
    retries: int = 0  # transport retries (429, 5xx, timeout, connection)
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
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        cache_dir: Path | str | None = None,
        concurrency: int = 8,
        max_retries: int = 6,
        timeout: float = 60.0,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
    ) -> None:
        _check_settings(concurrency, max_retries, timeout, backoff_base, backoff_max)
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.cache = ReplyCache(Path(cache_dir)) if cache_dir is not None else None
        # The key lives only inside the openai client: never as an attribute of ours.
        self._openai = openai.OpenAI(
            base_url=base_url, api_key=_read_api_key(api_key_env), max_retries=0, timeout=timeout
        )
        self._totals = UsageTotals()
        self._lock = threading.Lock()
        self._rng = random.Random()

    def __repr__(self) -> str:
        return (
            f"LLMClient(model={self.model!r}, base_url={self.base_url!r}, "
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
        """Run every request, ``concurrency`` at a time; results come back in request order."""
        if parse_retries < 0:
            raise ValueError("parse_retries must be >= 0")
        results: list[ChatResult[T] | None] = [None] * len(requests)
        if not requests:
            return []
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests)), thread_name_prefix="llm")
        try:
            with tqdm(total=len(requests), desc=desc or self.model, unit="req") as bar:
                futures: dict[Future[ChatResult[T]], int] = {
                    pool.submit(self.complete, request, parse, parse_retries): index
                    for index, request in enumerate(requests)
                }
                for future in as_completed(futures):
                    results[futures[future]] = future.result()
                    bar.update(1)
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
        """One request: cache, then the API with retries, then ``parse`` (asked again on ValueError)."""
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

    def _failed(self, key: str, error: str, detail: str, attempts: int) -> ChatResult[Any]:
        self._count(failures=1)
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
            self._count(calls=1)
            outcome, retryable, retry_after = self._call_once(request, attempt)
            if isinstance(outcome, _Reply) or not retryable or attempt > self.max_retries:
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
        try:
            response = self._openai.chat.completions.create(
                model=self.model, messages=list(request.messages), **request.api_params()
            )
        except openai.APIStatusError as exc:
            status = exc.status_code
            failure = _Failure(f"http_{status}", self._status_detail(exc), attempt)
            retryable = status in RETRYABLE_4XX or status >= 500
            return failure, retryable, _retry_after_seconds(exc.response.headers)
        except openai.APITimeoutError:
            return _Failure("timeout", f"no reply within {self.timeout}s", attempt), True, None
        except openai.APIConnectionError as exc:
            return _Failure("connection", self._scrub(_one_line(str(exc.__cause__ or exc))), attempt), True, None
        except openai.APIError as exc:  # e.g. a 200 whose body is not a chat completion
            return _Failure("api_error", self._scrub(_one_line(str(exc))), attempt), False, None
        return self._reply_from(response, attempt)

    def _reply_from(self, response: Any, attempt: int) -> tuple[_Reply | _Failure, bool, float | None]:
        usage = TokenUsage(
            prompt_tokens=int(getattr(response.usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(response.usage, "completion_tokens", 0) or 0),
        )
        # Billed even when the reply turns out unusable.
        self._count(prompt_tokens=usage.prompt_tokens, completion_tokens=usage.completion_tokens)
        if not response.choices:
            return _Failure("no_choices", "the server answered with no choices", attempt), False, None
        choice = response.choices[0]
        reply = _Reply(
            text=choice.message.content or "",
            usage=usage,
            finish_reason=choice.finish_reason,
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

    def _status_detail(self, exc: openai.APIStatusError) -> str:
        if exc.status_code in (401, 403):
            # Some providers echo (part of) the key in auth errors: say nothing of theirs.
            source = f"${self.api_key_env}" if self.api_key_env else "the placeholder key (api_key_env=None)"
            return f"authentication refused (HTTP {exc.status_code}); check the key in {source}"
        return self._scrub(_one_line(exc.message))

    def _scrub(self, text: str) -> str:
        secret = self._openai.api_key
        if isinstance(secret, str) and secret and secret != PLACEHOLDER_API_KEY:
            text = text.replace(secret, "***")
        return text

    def _cache_root(self) -> str | None:
        return str(self.cache.root) if self.cache is not None else None


def _read_api_key(env_name: str | None) -> str:
    if env_name is None:
        return PLACEHOLDER_API_KEY
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise MissingAPIKeyError(
            f"environment variable {env_name} is not set or empty; it must hold the API key "
            f"(for a keyless local server such as vLLM or TGI, pass api_key_env=None)"
        )
    return value


def _check_settings(concurrency: int, max_retries: int, timeout: float, base: float, cap: float) -> None:
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    if max_retries < 0:
        raise ValueError("max_retries must be >= 0")
    if timeout <= 0:
        raise ValueError("timeout must be > 0")
    if base < 0 or cap < 0:
        raise ValueError("backoff_base and backoff_max must be >= 0")


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
