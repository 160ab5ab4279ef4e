"""The LLM endpoint: where requests go, with which key, the defaults of the endpoint options and their checks,
and the errors that stop a run. The bottom of the LLM modules (:mod:`.llm` declares the options,
:mod:`.llm_client` talks to the endpoint)."""

from __future__ import annotations

import os
import urllib.parse

from builders.core.errors import UserError
from builders.core.options.argtypes import MAX_TIMEOUT_S
from builders.core.runtime.cache import DEFAULT_ROOT
from builders.core.runtime.redact import remember_secret, scrub_url, url_secrets

#: Sent as the key when ``api_key_env=None`` (keyless local servers: vLLM and TGI accept any).
PLACEHOLDER_API_KEY = "EMPTY"
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


class MissingAPIKeyError(UserError):
    """The environment variable that should hold the API key is unset or empty."""


class EndpointError(UserError):
    """The endpoint cannot be reached, refuses the key or is not an OpenAI-compatible API."""


class TooManyFailures(EndpointError):
    """More of a client's requests failed than its ``max_failures`` share allows."""


def endpoint_url(base_url: str | None) -> str:
    """The URL requests go to, without a trailing slash: ``base_url``, else $OPENAI_BASE_URL, else the OpenAI API.

    A URL with user info (``https://user:password@host/v1``) is refused: HTTP clients send it as Basic auth, in
    the one Authorization header that must carry the API key, so the key would silently not be sent and the
    password would go to every server on the way; and a password in a URL ends in shell histories and process
    lists. The key belongs in the variable ``--api-key-env`` names."""
    where = "--base-url" if base_url else "$OPENAI_BASE_URL"
    url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_API_URL).rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise UserError(f"{where} must start with http:// or https://, got {scrub_url(url)!r}")
    credentials = url_secrets(url)
    if credentials:
        for secret in credentials:  # known from now on: hidden wherever a server may echo them
            remember_secret(secret)
        raise UserError(f"{where} {scrub_url(url)!r} holds credentials before its host, which would be sent as "
                        "Basic auth instead of the API key: remove them, and put the key in the environment "
                        "variable --api-key-env names")
    return url


def read_api_key(env_name: str | None) -> str:
    """The key in ``$env_name`` (the placeholder when None); never printed or logged in any spelling (it is
    remembered by :mod:`~builders.core.runtime.redact`)."""
    if env_name is None:
        return PLACEHOLDER_API_KEY
    value = os.environ.get(env_name, "").strip()
    if not value:
        raise MissingAPIKeyError(
            f"environment variable {env_name} is not set or empty; it must hold the API key "
            f"(for a keyless local server such as vLLM or TGI, pass --api-key-env none)"
        )
    remember_secret(value)
    return value


def check_settings(concurrency: int, max_retries: int, timeout: float, max_failures: float | None) -> None:
    """The checks of LLMSettings and LLMClient, named by their option and their argument."""
    if concurrency < 1:
        raise UserError(f"--llm-concurrency (concurrency) must be at least 1, not {concurrency}")
    if max_retries < 0:
        raise UserError(f"--llm-max-retries (max_retries) must be at least 0, not {max_retries}")
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise UserError(f"--llm-timeout (timeout) must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds, "
                        f"not {timeout}")
    if max_failures is not None and not 0 <= max_failures <= 1:
        raise UserError(f"--max-llm-failures (max_failures) must be a share between 0 and 1, not {max_failures}")


def one_line(text: str, limit: int = 300) -> str:
    """Text a server sent (already scrubbed of the key), on one line and cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
