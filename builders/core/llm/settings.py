"""The LLM endpoint options every command that calls an LLM shares, and the one LLM client they lead to.

A builder's options extend :class:`LLMEndpoint`, the endpoint options declared once (a command that is no
builder adds them with :func:`add_llm_arguments` and reads them with :meth:`LLMSettings.from_args`); every
command checks the endpoint with :func:`check_endpoint` before it loads anything, and builds its clients with
:meth:`LLMSettings.client`. The client and its parts live in
modules of their own, whose public names this module also offers: :mod:`.llm_client` (retries, concurrency,
totals), :mod:`.llm_requests` (requests and results), :mod:`.llm_cache` (the reply cache), :mod:`.llm_http`
(HTTP with a total deadline) and :mod:`.llm_endpoint` (URL, key, defaults, errors).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import httpx

from builders.core.llm.client import LLMClient
from builders.core.llm.endpoint import (
    DEFAULT_API_KEY_ENV,
    DEFAULT_CACHE_DIR,
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_FAILURES,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_S,
    EndpointError,
    MissingAPIKeyError,
    TooManyFailures,
    check_settings,
    endpoint_url,
    one_line,
    read_api_key,
)
from builders.core.llm.http import http_client, json_object, total_deadline
from builders.core.llm.reply_cache import CACHE_FORMAT_VERSION, ReplyCache, request_key
from builders.core.llm.requests import BAD_REPLY, UNPARSEABLE, ChatRequest, ChatResult, TokenUsage, UsageTotals
from builders.core.options.argtypes import nonnegative_int, positive_int, seconds, share
from builders.core.options.declare import add_option_arguments, from_arguments, option
from builders.core.runtime.cache import cache_folder
from builders.core.runtime.redact import scrub_text, scrub_url

__all__ = [
    "BAD_REPLY", "CACHE_FORMAT_VERSION", "UNPARSEABLE", "ChatRequest", "ChatResult", "EndpointError", "LLMClient",
    "LLMEndpoint", "LLMSettings", "MissingAPIKeyError", "ReplyCache", "TokenUsage", "TooManyFailures", "UsageTotals",
    "add_llm_arguments", "check_endpoint", "endpoint_url", "request_key",
]

#: All the time check_endpoint may take, both of its requests together.
CHECK_TIMEOUT_S = 5.0


@dataclass(frozen=True, kw_only=True)
class LLMEndpoint:
    """The endpoint options of every command that calls an LLM, declared once: a mixin of a builder's options (the
    model option is each builder's own). Runtime options: where and how fast an LLM is asked is never recorded."""

    GROUP: ClassVar[str] = "LLM endpoint"
    RUNTIME: ClassVar[bool] = True

    base_url: str | None = option(None, metavar="URL",
                                  help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 for vLLM; "
                                       "unset: $OPENAI_BASE_URL, else the OpenAI API")
    api_key_env: str = option(DEFAULT_API_KEY_ENV, metavar="NAME",
                              help="environment variable holding the API key (never printed or logged); "
                                   "'none' for a keyless local server such as vLLM")
    llm_concurrency: int = option(DEFAULT_CONCURRENCY, metavar="N", type=positive_int,
                                  help="requests in flight per model")
    llm_timeout: float = option(DEFAULT_TIMEOUT_S, metavar="SECONDS", type=seconds,
                                help="total deadline of one HTTP request, however slowly the server answers")
    llm_max_retries: int = option(DEFAULT_MAX_RETRIES, metavar="N", type=nonnegative_int,
                                  help="retries of a request after a 429, a 5xx, a timeout or a malformed answer, with "
                                       "backoff; an endpoint that cannot be reached stops the run after one quick "
                                       "retry")
    max_llm_failures: float = option(DEFAULT_MAX_FAILURES, metavar="SHARE", type=share,
                                     help="stop when more than this share of a model's requests fail for good (an "
                                          "HTTP error, a timeout...), naming the most common error; an unparseable "
                                          "reply is not a failure")
    cache_dir: str = option(DEFAULT_CACHE_DIR, metavar="DIR",
                            help="on-disk caches, each use in its own sub-folder (LLM replies in DIR/llm, so a killed "
                                 "run resumes without paying for a reply twice); 'none' disables them")

    @property
    def llm(self) -> LLMSettings:
        """The settings these options give ('none' turns the key variable or the cache off)."""
        return LLMSettings(
            base_url=self.base_url or None,
            api_key_env=None if str(self.api_key_env).lower() == "none" else self.api_key_env,
            cache_dir=cache_folder(self.cache_dir),
            concurrency=self.llm_concurrency,
            timeout=self.llm_timeout,
            max_retries=self.llm_max_retries,
            max_failures=self.max_llm_failures,
        )


def add_llm_arguments(group: argparse._ArgumentGroup) -> None:
    """The endpoint options (:class:`LLMEndpoint`) in ``group``, for a command that is no builder."""
    add_option_arguments(group, LLMEndpoint)


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
        check_settings(self.concurrency, self.max_retries, self.timeout, self.max_failures)
        endpoint_url(self.base_url)  # refuses a URL that is not http(s) or holds credentials, before any work

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LLMSettings:
        """The settings :func:`add_llm_arguments` parsed."""
        return from_arguments(LLMEndpoint, args).llm

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
    headers = {"Authorization": f"Bearer {read_api_key(settings.api_key_env)}"}
    where = f"the LLM endpoint {scrub_url(url)}"
    try:
        with http_client(url, CHECK_TIMEOUT_S, connections=1) as http, total_deadline(CHECK_TIMEOUT_S):
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
    body = json_object(response)
    if response.request.method == "POST":  # the fallback: a JSON refusal of the empty body is an API speaking
        understood = body is not None and status != 404
    else:
        understood = status == 200 and body is not None and isinstance(body.get("data"), list)
    if understood:
        return None
    kind = response.headers.get("content-type", "no content type")
    return (f"answered {asked} with HTTP {status} ({kind}): not an OpenAI-compatible API "
            f"(its --base-url usually ends in /v1)")


def _connection_reason(exc: Exception) -> str:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"no answer within {CHECK_TIMEOUT_S:g}s"
    return one_line(scrub_text(str(exc))) or type(exc).__name__
