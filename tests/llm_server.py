"""A real OpenAI-compatible server on 127.0.0.1 for tests of anything that calls an LLM.

Built on llmock (``llmock.testing.LLMockServer``): real uvicorn, real sockets, so the real
``openai`` client goes through its whole HTTP stack. What llmock gives as is, through the
:class:`MockLLM` handle (a subclass of llmock's own pytest handle):

* failures, consumed in FIFO order: ``fail(500)``, ``rate_limit(retry_after=0.05)``,
  ``fail(400, times=None)`` (permanent), ``delay(seconds)`` (for client timeouts);
* scripted replies, FIFO: ``replies("A", "B")``;
* a journal of every request the server received: ``chat_requests``, ``chat_bodies``.

What llmock cannot do, and this module adds: scripted replies are a FIFO shared by all
requests, so with concurrent clients nobody knows which request gets which reply, and a
failure cannot be decided by what was asked or by how many calls came before. So
:meth:`MockLLM.respond_with` takes a function of the request (:class:`ChatCall`) returning the
reply text, a :class:`ScriptedError`, or None for llmock's default answer. It is served by a
route put in front of llmock's own ``/v1/chat/completions``; llmock's middleware still wraps it,
so queued failures still fire first and every request is journaled. The route reuses llmock
internals (``routers.openai.chat_completions`` and the plan the middleware attaches to the
request), checked against llmock 0.2.2.

Default answers use llmock's ``echo`` style: ``"Hello! You said: <all message contents>"``.
llmock's token counts are ``len(text) // 4`` of the prompt contents joined by spaces, and
``max(1, len(reply) // 4)`` of the reply.

Use from a test module::

    from builders.core.llm.settings import ChatRequest
    from llm_server import fast_client  # the `llm_server` fixture comes from conftest (pytest_plugins)

    def test_labels(llm_server, tmp_path):
        llm_server.respond_with(lambda call: "B" if "photosynthesis" in call.user_text else "A")
        client = fast_client(llm_server, cache_dir=tmp_path / "cache")
        results = client.complete_many([ChatRequest.from_prompt("...photosynthesis...")])
        assert results[0].text == "B"
        assert len(llm_server.chat_requests) == 1

or, without pytest fixtures: ``with start_llmock(responder=...) as server: ...``.

One server serves every test of a session (:class:`SharedLLMockServer`; starting and stopping one per test cost
about 0.2 s a test). What one test did cannot reach the next: each test has its own handle (a fresh
:class:`MockLLM`: its own responder, counters and attributes) and its own path prefix (``/test-<n>/v1``), the
server is reset (journal, queued behaviours, settings) before each test, a request to a finished test's prefix is
answered 410 before it reaches llmock, and a test's turn ends only once every request it sent has been served; a
test whose request is still being served after :data:`IDLE_TIMEOUT` leaves that server behind, and the next test
gets another.

For answers no real server library gives (a 200 whose JSON is cut short, an HTML page with status
200, a response sent one byte a second), :func:`start_raw_server` runs a plain ``http.server``
whose answer function writes each response by hand (:class:`RawExchange`).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from llmock.journal import RequestRecord
from llmock.pytest_plugin import LLMock
from llmock.routers.openai import ChatCompletionRequest, chat_completions
from llmock.scenarios import Reply
from llmock.simulation import MockResponseSettings, build_error_response
from llmock.testing import BASE_PATHS, LLMockServer
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from builders.core.llm.settings import LLMClient

CHAT_PATH = "/v1/chat/completions"
# How long a finished test's requests may still be served before the next test gets another server: a test's
# requests are all answered by the time its client returns, but a client that timed out leaves the server working.
IDLE_TIMEOUT = 5.0


@dataclass(frozen=True)
class ScriptedError:
    """An HTTP error a responder answers with (``retry_after`` sets the Retry-After headers)."""

    status: int
    retry_after: float | None = None
    message: str | None = None


@dataclass(frozen=True)
class ChatCall:
    """One chat request as the responder sees it. ``index`` counts responder calls from 0."""

    index: int
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def user_text(self) -> str:
        """Content of the last user message."""
        users = [m for m in self.messages if m.get("role") == "user"]
        return str(users[-1].get("content", "")) if users else ""


Responder = Callable[[ChatCall], "str | ScriptedError | None"]


class MockLLM(LLMock):
    """llmock's handle (``fail``, ``rate_limit``, ``delay``, ``reply``, ``requests``...) plus
    per-request scripting and chat-specific views of the journal."""

    def __init__(self, server: LLMockServer, response_style: str, prefix: str) -> None:
        super().__init__(server)
        self.prefix = prefix  # this test's path prefix on the shared server, "/test-<n>"
        self._response_style = response_style
        self._responder: Responder | None = None
        self._lock = threading.Lock()
        self._counter = itertools.count()

    @property
    def url(self) -> str:
        """Root URL of this test's handle, e.g. ``http://127.0.0.1:53412/test-3``."""
        return self._server.url + self.prefix

    def base_url(self, provider: str = "openai") -> str:
        return self.url + BASE_PATHS[provider]

    @property
    def openai_base_url(self) -> str:
        """What to pass as ``base_url`` to the openai client or :class:`LLMClient`."""
        return self.base_url("openai")

    def respond_with(self, responder: Responder | None) -> MockLLM:
        with self._lock:
            self._responder = responder
            self._counter = itertools.count()
        return self

    def replies(self, *texts: str) -> MockLLM:
        """Queue reply texts, handed out in arrival order (FIFO) before any responder."""
        for text in texts:
            self.reply(text)
        return self

    @property
    def chat_requests(self) -> list[RequestRecord]:
        """Every chat completion request received, in arrival order, failed ones included."""
        return [record for record in self.requests if record.path == CHAT_PATH]

    @property
    def chat_bodies(self) -> list[dict[str, Any]]:
        return [record.body for record in self.chat_requests]

    def reset(self) -> MockLLM:
        super().reset()
        self._server.app.state.mock_response_settings = _settings(self._response_style)
        return self.respond_with(None)

    def _answer(self, body: dict[str, Any], headers: dict[str, str]) -> str | ScriptedError | None:
        with self._lock:
            responder, index = self._responder, next(self._counter)
        return responder(ChatCall(index=index, body=body, headers=headers)) if responder else None


class _Turns:
    """Whose turn it is on a shared server (the handle of the test running, None between tests), and how many of
    the requests let in are still being served."""

    def __init__(self) -> None:
        self.current: MockLLM | None = None
        self._in_flight = 0
        self._idle = threading.Condition()

    def let_in(self, path: str) -> MockLLM | None:
        with self._idle:
            mock = self.current
            if mock is None or not path.startswith(mock.prefix + "/"):
                return None
            self._in_flight += 1
            return mock

    def served(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def wait_until_idle(self, timeout: float) -> bool:
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout=timeout)


class _CurrentTestOnly:
    """The outermost ASGI middleware: a request under the running test's prefix goes on to llmock with the prefix
    cut off and that test's handle in its state (``request.state.mock_llm``); any other, such as a finished test's
    client still retrying, is answered 410 and reaches none of llmock's state."""

    def __init__(self, app: Any, turns: _Turns) -> None:
        self.app, self.turns = app, turns

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        mock = self.turns.let_in(scope["path"])
        if mock is None:
            body = json.dumps({"error": {"message": f"no running test serves {scope['path']}"}}).encode()
            await send({"type": "http.response.start", "status": 410,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]})
            await send({"type": "http.response.body", "body": body})
            return
        cut = len(mock.prefix)
        inner = dict(scope, path=scope["path"][cut:], state={**(scope.get("state") or {}), "mock_llm": mock})
        if "raw_path" in scope:
            inner["raw_path"] = scope["raw_path"][cut:]
        try:
            await self.app(inner, receive, send)
        finally:
            self.turns.served()


class SharedLLMockServer:
    """One llmock server that tests take turns on (:meth:`next_test`, :meth:`finish`), started when first asked."""

    def __init__(self, response_style: str = "echo", idle_timeout: float = IDLE_TIMEOUT) -> None:
        self._response_style, self._idle_timeout = response_style, idle_timeout
        self._server: LLMockServer | None = None
        self._turns = _Turns()
        self._left_behind: list[LLMockServer] = []  # still serving a finished test's request; stopped at the end
        self._numbers = itertools.count(1)

    def next_test(self) -> MockLLM:
        """A clean handle for the next test, under a prefix no test had before."""
        if self._server is None:
            self._server, self._turns = self._start()
        mock = MockLLM(self._server, self._response_style, prefix=f"/test-{next(self._numbers)}")
        mock.reset()  # a new journal generation, no queued behaviour, default settings
        self._turns.current = mock
        return mock

    def finish(self, mock: MockLLM) -> None:
        """End ``mock``'s turn: refuse its requests from now on, and wait for those being served."""
        if self._turns.current is mock:
            self._turns.current = None
        if not self._turns.wait_until_idle(self._idle_timeout) and self._server is not None:
            self._left_behind.append(self._server)
            self._server = None

    def stop(self) -> None:
        for server in [*self._left_behind, *([self._server] if self._server else [])]:
            server.stop()
        self._server, self._left_behind = None, []

    def _start(self) -> tuple[LLMockServer, _Turns]:
        server = LLMockServer(responses=_settings(self._response_style))
        turns = _Turns()
        server.app.add_middleware(_CurrentTestOnly, turns=turns)  # added last, so outermost: before llmock's own
        _install_scripted_chat_route(server)
        return server.start(), turns


@contextmanager
def start_llmock(
    *,
    responder: Responder | None = None,
    replies: tuple[str, ...] = (),
    response_style: str = "echo",
) -> Iterator[MockLLM]:
    """Start a fresh llmock server on a free 127.0.0.1 port; stop it on exit."""
    server = SharedLLMockServer(response_style)
    try:
        yield server.next_test().respond_with(responder).replies(*replies)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def shared_llm_server() -> Iterator[SharedLLMockServer]:
    """The session's llmock server, which the tests asking for ``llm_server`` take turns on."""
    server = SharedLLMockServer()
    yield server
    server.stop()


@pytest.fixture
def llm_server(shared_llm_server: SharedLLMockServer) -> Iterator[MockLLM]:
    """This test's own handle on the session's server: a path no other test uses, a clean journal, nothing
    queued."""
    mock = shared_llm_server.next_test()
    yield mock
    shared_llm_server.finish(mock)


def fast_client(server: MockLLM, **overrides: Any) -> LLMClient:
    """An :class:`LLMClient` on ``server`` with test-speed retries, no key needed."""
    settings: dict[str, Any] = {
        "model": "mock-model",
        "base_url": server.openai_base_url,
        "api_key_env": None,
        "concurrency": 4,
        "max_retries": 3,
        "timeout": 5.0,
        "backoff_base": 0.001,
        "backoff_max": 0.01,
    }
    settings.update(overrides)
    if isinstance(settings.get("cache_dir"), str):
        settings["cache_dir"] = Path(settings["cache_dir"])
    return LLMClient(**settings)


def _settings(response_style: str) -> MockResponseSettings:
    return MockResponseSettings(response_style=response_style, tool_mode="off").validated()


def _install_scripted_chat_route(server: LLMockServer) -> None:
    app = server.app

    # A plain ``def``: FastAPI runs it in a worker thread, so a slow responder blocks nobody.
    def scripted_chat(request: Request) -> Response:
        body = dict(getattr(request.state, "llmock_body", None) or {})
        plan = request.state.llmock_plan
        if plan.reply is None:  # a reply queued with ``reply()`` wins, as in llmock
            mock: MockLLM = request.state.mock_llm  # the handle of the test that sent it (_CurrentTestOnly)
            outcome = mock._answer(body, {k.lower(): v for k, v in request.headers.items()})
            if isinstance(outcome, ScriptedError):
                return build_error_response(
                    request.url.path, outcome.status, retry_after=outcome.retry_after, message=outcome.message
                )
            if outcome is not None:
                request.state.llmock_plan = replace(plan, reply=Reply(text=outcome))
        try:
            parsed = ChatCompletionRequest.model_validate(body)
        except ValidationError as exc:
            return build_error_response(request.url.path, 422, message=str(exc).splitlines()[0])
        result = chat_completions(request, parsed)
        return result if isinstance(result, Response) else JSONResponse(result.model_dump(mode="json"))

    app.add_api_route(CHAT_PATH, scripted_chat, methods=["POST"])
    # Routes match in order: move ours in front of llmock's handler for the same path.
    app.router.routes.insert(0, app.router.routes.pop())


# -- plain http.server endpoints, for answers llmock cannot give -------------------------------------


class RawExchange:
    """One request to a :func:`start_raw_server`, answered by hand. ``index`` counts requests from 0."""

    def __init__(self, handler: BaseHTTPRequestHandler, index: int, stopping: threading.Event) -> None:
        self.index = index
        self.method = handler.command
        self.path = handler.path
        self.headers = handler.headers
        self._handler = handler
        self._stopping = stopping

    def send(self, status: int, body: str | bytes, content_type: str = "application/json") -> None:
        """A whole, well-framed response (its Content-Length is the body's), whatever the body holds."""
        data = body.encode() if isinstance(body, str) else body
        self._handler.send_response(status)
        self._handler.send_header("Content-Type", content_type)
        self._handler.send_header("Content-Length", str(len(data)))
        self._handler.end_headers()
        self._handler.wfile.write(data)

    def drip(self, response: bytes, every: float = 1.0, at_once: int = 0) -> None:
        """Write ``response`` (status line, headers and body as they go on the wire): its first ``at_once``
        bytes at once, then one byte every ``every`` seconds, until it is all out, the client hangs up or
        the server stops."""
        pieces = [response[:at_once]] + [response[i : i + 1] for i in range(at_once, len(response))]
        for number, piece in enumerate(piece for piece in pieces if piece):
            if self._stopping.wait(every if number else 0):
                return
            try:
                self._handler.wfile.write(piece)
                self._handler.wfile.flush()
            except OSError:
                return


@dataclass
class RawServer:
    base_url: str  # what to pass as ``base_url``: http://127.0.0.1:<port>/v1
    requests: list[str] = field(default_factory=list)  # "METHOD /path" of every request, in arrival order


@contextmanager
def start_raw_server(answer: Callable[[RawExchange], None]) -> Iterator[RawServer]:
    """A plain ``http.server`` on a free 127.0.0.1 port; ``answer`` writes the whole response of each request."""
    stopping, counter, lock = threading.Event(), itertools.count(), threading.Lock()
    server_info = RawServer(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            self._answer()

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._answer()

        def _answer(self) -> None:
            with lock:
                index = next(counter)
                server_info.requests.append(f"{self.command} {self.path}")
            answer(RawExchange(self, index, stopping))

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server_info.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, name="raw-http-server", daemon=True)
    thread.start()
    try:
        yield server_info
    finally:
        stopping.set()
        server.shutdown()
        server.server_close()
        thread.join()


def chat_completion_json(text: str, model: str = "mock-model") -> str:
    """The body of a well-formed chat completion whose reply is ``text``."""
    return json.dumps({
        "id": "chatcmpl-raw", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    })


def http_response_bytes(status_line: str, body: str, content_type: str = "application/json") -> bytes:
    """A whole HTTP/1.1 response as it goes on the wire, for :meth:`RawExchange.drip`."""
    data = body.encode()
    headers = [f"HTTP/1.1 {status_line}", f"Content-Type: {content_type}", f"Content-Length: {len(data)}",
               "Connection: close"]
    return ("\r\n".join(headers) + "\r\n\r\n").encode() + data
