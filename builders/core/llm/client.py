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
* an optional ``parse`` callback: a reply it rejects with ``ValueError`` is asked for again and finally
  returned as ``ok=False, error="unparseable"``. Each attempt's reply is kept under a key of its own (the
  request's, then :func:`attempt_key`), the rejected ones too, so that a rerun reads the same replies in the same
  order and pays for none of them again (delete the cache folder to ask again);
* running totals (calls, cache hits, retries, tokens, failures) for logs and dataset cards.

The API key is read from an environment variable and never printed or logged: it is not kept on
this object, not shown in any repr, and scrubbed (in any letter case) from error text a server sends
back before that text is cut to one line.

Commands build their clients with :meth:`builders.core.llm.settings.LLMSettings.client`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import threading
import time
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar, cast

if TYPE_CHECKING:
    import httpx
    from openai.types.chat import ChatCompletionMessageParam

from builders.core.llm.endpoint import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    EndpointError,
    TooManyFailures,
    check_settings,
    endpoint_url,
    one_line,
    read_api_key,
)
from builders.core.llm.http import http_client, json_object, timeouts, total_deadline
from builders.core.llm.reply_cache import ReplyCache, attempt_key, request_key
from builders.core.llm.requests import BAD_REPLY, UNPARSEABLE, ChatRequest, ChatResult, TokenUsage, UsageTotals
from builders.core.runtime.progress import bar as progress_bar
from builders.core.runtime.redact import scrub_text, scrub_url

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Longest wait a server's ``Retry-After`` can impose, so a garbled header cannot hang a run.
MAX_RETRY_AFTER_S = 300.0
#: 4xx statuses worth retrying; every other 4xx is the request's own fault and fails at once.
RETRYABLE_4XX = frozenset({429})
# A connection that could not even be opened (refused, unknown host, connect timeout). Never in a
# ChatResult: the request's one quick retry failing too raises EndpointError.
_UNREACHABLE = "unreachable"


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
        check_settings(concurrency, max_retries, timeout, max_failures)
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
        read_api_key(api_key_env)  # a missing key is refused here, before any request; the SDK client reads it again
        self._sdk: Any = None  # the openai client, made at the first request that the reply cache cannot answer
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
        if self._sdk is not None:
            self._sdk.close()

    def _openai(self) -> Any:
        """The openai client, made once, at the first request that goes to the endpoint: importing openai (about
        2 CPU s) is no cost of a build whose every reply is cached. The key lives only inside it: never as an
        attribute of ours."""
        with self._lock:
            if self._sdk is None:
                import openai

                # openai 3 annotates these with httpx2's classes; it runs with this httpx client all the same
                self._sdk = openai.OpenAI(
                    base_url=self.url, api_key=read_api_key(self.api_key_env), max_retries=0,
                    timeout=timeouts(self.timeout),  # type: ignore[arg-type]
                    http_client=http_client(self.url, self.timeout, connections=self.concurrency),  # type: ignore[arg-type]
                )
            return self._sdk

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
        pool = None
        try:
            with progress_bar(total=len(requests), desc=desc or self.model, unit="req") as bar:
                # replies already kept are read here, one after another: a thread each costs more than the read
                for index, request in enumerate(requests):
                    results[index] = self._kept_result(request, parse)
                asked = [index for index, result in enumerate(results) if result is None]
                bar.update(len(requests) - len(asked))
                if asked:
                    pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(asked)), thread_name_prefix="llm")
                    futures: dict[Future[ChatResult[T]], int] = {
                        pool.submit(self.complete, requests[index], parse, parse_retries): index for index in asked}
                    for future in as_completed(futures):
                        results[futures[future]] = future.result()
                        bar.update(1)
            if self._too_many_failures is not None:  # passed by the batch's last requests
                raise TooManyFailures(self._too_many_failures)
        except BaseException:
            # Ctrl-C or a bug in ``parse``: queued requests are dropped; those in flight still
            # finish and land in the cache, so a re-run resumes from there.
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
            raise
        if pool is not None:
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
            # A retry asks the model again (the reply kept under the request's key is the one rejected), and its
            # reply is kept under a key of its own: a rerun reads it instead of asking once more.
            kept_under = attempt_key(key, parse_try)
            fetched = self._fetch(kept_under, request)
            attempts += fetched.attempts
            if isinstance(fetched, _Failure):
                return self._failed(key, fetched.error, fetched.detail, attempts)
            if not fetched.cached:
                self._store(kept_under, fetched)
            try:
                parsed = parse(fetched.text) if parse is not None else None
            except ValueError as exc:
                rejected, rejection = fetched, one_line(str(exc))
                continue
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

    def _fetch(self, key: str, request: ChatRequest) -> _Reply | _Failure:
        kept = self._kept_reply(key)
        if kept is not None:
            self._count(cache_hits=1)
            return kept
        return self._call_with_retries(request)

    def _kept_reply(self, key: str) -> _Reply | None:
        kept = self.cache.reply(key) if self.cache is not None else None
        return None if kept is None else _Reply(*kept, cached=True, attempts=0)

    def _kept_result(self, request: ChatRequest, parse: Callable[[str], T] | None) -> ChatResult[T] | None:
        """:meth:`complete`'s result of ``request`` from a kept reply that ``parse`` takes, or None (not kept, or
        unparseable: :meth:`complete` asks again)."""
        key = request_key(self.model, request)
        kept = self._kept_reply(key)
        if kept is None:
            return None
        try:
            parsed = parse(kept.text) if parse is not None else None
        except ValueError:
            return None
        self._count(cache_hits=1)
        with self._lock:
            self._requests += 1
        return ChatResult(key=key, ok=True, text=kept.text, parsed=parsed, usage=kept.usage, cached=True, attempts=0,
                          finish_reason=kept.finish_reason)

    def _store(self, key: str, reply: _Reply) -> None:
        if self.cache is not None:
            self.cache.keep_reply(key, self.model, reply.text, reply.usage, reply.finish_reason)

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
            with total_deadline(self.timeout):
                # The raw answer: the SDK would crash on a 200 whose body is not a chat completion.
                # the messages are plain mappings in the API's shape; the SDK types each role's TypedDict
                messages = cast("list[ChatCompletionMessageParam]", list(request.messages))
                raw = self._openai().chat.completions.with_raw_response.create(
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
        body = json_object(response)
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
        """Text a server sent, fit for logs and ``error_detail``: the key (remembered when it was read) scrubbed
        out in every spelling first (so that cutting the text cannot leave a piece of it), then cut to one line."""
        return one_line(scrub_text(text))

    def _cache_root(self) -> str | None:
        return str(self.cache.root) if self.cache is not None else None


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
    from email.utils import parsedate_to_datetime  # an HTTP date is rare: email and socket load when one comes

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
