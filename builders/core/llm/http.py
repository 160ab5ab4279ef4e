"""HTTP with a total deadline per request, through the proxy the environment names.

httpx's timeouts bound each socket operation, so a server sending a byte a second never trips
them. The deadline is kept per thread (every request runs synchronously in its worker thread) and
cuts the timeout of every connect, read and write the request makes; past it they raise httpx's
own timeout errors, which the openai client reports as APITimeoutError.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, cast

if TYPE_CHECKING:
    import httpcore
    import httpx

#: Longest a connection may take to open: a reachable server accepts in well under this.
CONNECT_TIMEOUT_S = 10.0


def json_object(response: httpx.Response) -> dict[str, Any] | None:
    """The answer's body when it is a JSON object, else None."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


class _Deadline(threading.local):
    at: float | None = None  # time.monotonic() by which this thread's request must be over


_DEADLINE = _Deadline()


@contextmanager
def total_deadline(seconds: float) -> Iterator[None]:
    """The requests of this thread inside the block end within ``seconds``, all their socket operations together."""
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


def http_client(url: str, timeout: float, connections: int) -> httpx.Client:
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
    return httpx.Client(transport=transport, timeout=timeouts(timeout), follow_redirects=True)


def timeouts(timeout: float) -> httpx.Timeout:
    import httpx

    return httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S))


def _environment_proxy(url: str) -> str | None:
    """$HTTPS_PROXY / $HTTP_PROXY / $ALL_PROXY for ``url`` unless $NO_PROXY exempts its host."""
    from urllib.request import getproxies, proxy_bypass  # here: http.client, ssl and email are not for a command line

    parts = urllib.parse.urlsplit(url)
    if proxy_bypass(parts.hostname or ""):
        return None
    proxies = getproxies()
    return proxies.get(parts.scheme) or proxies.get("all")
