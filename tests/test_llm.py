"""builders.core.llm.settings against a real HTTP server on 127.0.0.1 (llmock), with the real openai client."""

from __future__ import annotations

import argparse
import json
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

import pytest
from fixtures import reveals, spellings
from llm_server import (
    ChatCall,
    RawExchange,
    ScriptedError,
    SharedLLMockServer,
    chat_completion_json,
    fast_client,
    http_response_bytes,
    start_llmock,
    start_raw_server,
)

from builders.core.errors import UserError
from builders.core.options.declare import add_option_arguments, declared_options
from builders.core.llm.settings import (
    ChatRequest,
    EndpointError,
    LLMClient,
    LLMEndpoint,
    LLMSettings,
    MissingAPIKeyError,
    TooManyFailures,
    add_llm_arguments,
    check_endpoint,
    request_key,
)
from builders.core.release import build_config
from builders.core.pipeline import cli

SECRET = "sk-test-Zq8v1X7pLw0-never-log-me"


def cache_files(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.json"))


def prompts(n: int) -> list[ChatRequest]:
    return [ChatRequest.from_prompt(f"question {i}") for i in range(n)]


def dead_port() -> int:
    """A 127.0.0.1 port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def leaked_pieces(text: str, secret: str = SECRET, size: int = 6) -> list[str]:
    """Every ``size``-character piece of ``secret`` found in ``text``, in any letter case."""
    lowered = text.lower()
    return [secret[i : i + size] for i in range(len(secret) - size + 1) if secret[i : i + size].lower() in lowered]


def test_greedy_round_trip_sends_exactly_the_request(llm_server):
    llm_server.respond_with(lambda call: "Paris")
    client = fast_client(llm_server)
    request = ChatRequest.from_prompt(
        "Capital of France?", system="Be brief.", max_tokens=5, stop="\n",
        response_format={"type": "json_object"}, template_version="t1",
    )

    [result] = client.complete_many([request])

    assert (result.ok, result.text, result.error, result.cached, result.attempts) == (True, "Paris", None, False, 1)
    assert result.finish_reason == "stop"
    assert result.key == request_key("mock-model", request)
    # llmock counts len(content) // 4 per message: 9 // 4 + 18 // 4 = 6; the reply is max(1, 5 // 4).
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (6, 1)
    assert llm_server.chat_bodies == [{
        "model": "mock-model",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}],
        "temperature": 0.0,
        "max_tokens": 5,
        "stop": ["\n"],
        "response_format": {"type": "json_object"},
    }]
    usage = client.usage
    assert (usage.calls, usage.cache_hits, usage.retries, usage.failures) == (1, 0, 0, 0)
    assert (usage.prompt_tokens, usage.completion_tokens) == (6, 1)
    assert client.usage_summary() == (
        "mock-model: 1 API calls (0 retries, 0 parse retries), 0 cache hits, 0 failures, "
        "6 prompt + 1 completion tokens"
    )


def test_retries_429_then_500_then_succeeds_and_waits_retry_after(llm_server):
    llm_server.rate_limit(times=1, retry_after=0.2).fail(500, times=1)
    client = fast_client(llm_server)

    [result] = client.complete_many(prompts(1))

    assert (result.ok, result.attempts) == (True, 2 + 1)
    calls = llm_server.chat_requests
    assert [c.status for c in calls] == [429, 500, 200]
    assert calls[1].started_at - calls[0].ended_at >= 0.2  # Retry-After honoured
    assert (client.usage.calls, client.usage.retries, client.usage.failures) == (3, 2, 0)
    llm_server.assert_resilient()  # llmock's own verdict: no retry storm, Retry-After respected


def test_gives_up_after_max_retries_on_permanent_503(llm_server):
    llm_server.fail(503, times=None, retry_after=0)
    client = fast_client(llm_server, max_retries=2)

    [result] = client.complete_many(prompts(1))

    assert (result.ok, result.error, result.attempts, result.text) == (False, "http_503", 3, None)
    assert len(llm_server.chat_requests) == 3
    assert (client.usage.calls, client.usage.retries, client.usage.failures) == (3, 2, 1)


def test_timeout_is_retried(llm_server):
    llm_server.delay(0.6, times=1)
    client = fast_client(llm_server, timeout=0.2)

    [result] = client.complete_many(prompts(1))

    assert (result.ok, result.attempts) == (True, 2)
    assert (client.usage.calls, client.usage.retries) == (2, 1)
    assert len(llm_server.chat_requests) == 2  # the timed-out one, once the server finished it


@pytest.mark.slow
@pytest.mark.parametrize("head_at_once", [False, True], ids=["status-line-dripped", "body-dripped"])
def test_a_server_sending_a_byte_a_second_hits_the_total_deadline(head_at_once):
    """Every byte arrives well within the read timeout, so only a total deadline ends the request."""
    response = http_response_bytes("200 OK", chat_completion_json("too slow"))
    head = len(response) - len(chat_completion_json("too slow")) if head_at_once else 0
    with start_raw_server(lambda exchange: exchange.drip(response, every=1.0, at_once=head)) as server:
        client = LLMClient("m", base_url=server.base_url, api_key_env=None, timeout=1.5, max_retries=0)
        started = time.monotonic()

        [result] = client.complete_many(prompts(1))

    assert time.monotonic() - started < 3
    assert (result.ok, result.error, result.error_detail) == (False, "timeout", "no whole reply within 1.5s")
    assert server.requests == ["POST /v1/chat/completions"]


CUT_SHORT = chat_completion_json("cut")[:60]  # a 200 whose JSON ends mid-string (Content-Length says so)
HTML_PAGE = "<!doctype html><html><head><title>Welcome</title></head><body>It works!</body></html>"


@pytest.mark.parametrize(("body", "content_type", "detail"), [
    (CUT_SHORT, "application/json", f"HTTP 200 but not a chat completion (application/json, 60 bytes: {CUT_SHORT!r})"),
    (HTML_PAGE, "text/html", f"HTTP 200 but not a chat completion (text/html, 85 bytes: {HTML_PAGE!r})"),
], ids=["truncated-json", "html-page"])
def test_a_200_that_is_not_a_chat_completion_is_retried_then_reported(body, content_type, detail, caplog):
    """The first request gets garbage twice and is reported; the second gets a real reply. No traceback."""
    def garbage_twice(exchange: RawExchange) -> None:
        if exchange.index < 2:
            exchange.send(200, body, content_type)
        else:
            exchange.send(200, chat_completion_json("real answer"))

    with start_raw_server(garbage_twice) as server:
        client = LLMClient("m", base_url=server.base_url, api_key_env=None, concurrency=1, max_retries=1,
                           backoff_base=0.001, backoff_max=0.01)
        results = client.complete_many(prompts(2))

    assert [(r.ok, r.error, r.attempts, r.text) for r in results] == [
        (False, "bad_reply", 2, None), (True, None, 1, "real answer")]
    assert results[0].error_detail == detail
    assert (client.usage.calls, client.usage.retries, client.usage.failures) == (3, 1, 1)
    assert f"failed after 2 attempt(s): bad_reply {detail}" in caplog.text


def test_a_key_echoed_in_another_case_late_in_a_long_500_never_shows(llm_server, monkeypatch, caplog):
    """The key sits across the 300-character cut of the detail line: scrubbed before cutting, in any case."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MCQ_TEST_KEY", SECRET)
    mixed_case = "".join(c.upper() if i % 2 else c.lower() for i, c in enumerate(SECRET))
    padding = "upstream timed out " * 13  # the key starts 14 characters before the 300-character cut
    llm_server.fail(500, times=None, message=f"{padding}while forwarding key {mixed_case} and {SECRET.upper()}")
    client = fast_client(llm_server, api_key_env="MCQ_TEST_KEY", max_retries=1)

    [result] = client.complete_many(prompts(1))

    assert (result.ok, result.error, result.attempts) == (False, "http_500", 2)
    assert result.error_detail == f"Error code: 500 - {padding}while forwarding key *** and ***"
    shown = [result.error_detail, caplog.text, repr(result), client.usage_summary()]
    assert [leaked_pieces(text) for text in shown] == [[]] * len(shown)


def test_check_endpoint_accepts_a_live_api_with_one_cheap_request(llm_server, monkeypatch):
    monkeypatch.setenv("MCQ_TEST_KEY", SECRET)
    settings = LLMSettings(base_url=llm_server.openai_base_url, api_key_env="MCQ_TEST_KEY", cache_dir=None)

    check_endpoint(settings)

    assert [(r.method, r.path, r.status) for r in llm_server.requests] == [("GET", "/v1/models", 200)]
    assert llm_server.chat_requests == []


def test_check_endpoint_falls_back_to_an_empty_chat_request_without_models(llm_server):
    llm_server.fail(404, times=1)  # a server with no /models route

    check_endpoint(LLMSettings(base_url=llm_server.openai_base_url, api_key_env=None))

    assert [(r.method, r.path, r.status) for r in llm_server.requests] == [
        ("GET", "/v1/models", 404), ("POST", "/v1/chat/completions", 422)]


def test_check_endpoint_fails_in_seconds_when_nothing_listens():
    port = dead_port()
    started = time.monotonic()
    with pytest.raises(EndpointError) as raised:
        check_endpoint(LLMSettings(base_url=f"http://127.0.0.1:{port}/v1", api_key_env=None))
    assert time.monotonic() - started < 2
    assert str(raised.value) == (f"cannot reach the LLM endpoint http://127.0.0.1:{port}/v1: [Errno 111] Connection "
                                 "refused; is the server running and --base-url right?")


def test_check_endpoint_names_the_variable_of_a_refused_key(llm_server, monkeypatch):
    monkeypatch.setenv("MCQ_TEST_KEY", SECRET)
    llm_server.fail(401, times=None, message=f"Incorrect API key provided: {SECRET}")
    url = llm_server.openai_base_url
    with pytest.raises(EndpointError) as raised:
        check_endpoint(LLMSettings(base_url=url, api_key_env="MCQ_TEST_KEY"))
    assert str(raised.value) == f"the LLM endpoint {url} refused the API key in $MCQ_TEST_KEY (HTTP 401)"
    with pytest.raises(EndpointError, match=r"refused a request without a key \(HTTP 401\); name the key's "
                                                  r"variable with --api-key-env"):
        check_endpoint(LLMSettings(base_url=url, api_key_env=None))


def test_check_endpoint_refuses_a_failing_server_and_what_is_not_an_openai_api(llm_server):
    url = llm_server.openai_base_url
    llm_server.fail(503, times=1)
    with pytest.raises(EndpointError, match=rf"answered HTTP 503 to GET {llm_server.prefix}/v1/models; try again later$"):
        check_endpoint(LLMSettings(base_url=url, api_key_env=None))

    def web_page(status: int) -> Callable[[RawExchange], None]:
        return lambda exchange: exchange.send(status, HTML_PAGE, "text/html")

    with start_raw_server(web_page(200)) as site:
        with pytest.raises(EndpointError) as raised:
            check_endpoint(LLMSettings(base_url=site.base_url, api_key_env=None))
    assert str(raised.value) == (f"the LLM endpoint {site.base_url} answered GET /v1/models with HTTP 200 (text/html): "
                                 "not an OpenAI-compatible API (its --base-url usually ends in /v1)")
    with start_raw_server(web_page(404)) as site:
        with pytest.raises(EndpointError, match=r"answered POST /v1/chat/completions with HTTP 404 \(text/html\)"):
            check_endpoint(LLMSettings(base_url=site.base_url, api_key_env=None))
    assert site.requests == ["GET /v1/models", "POST /v1/chat/completions"]


def test_unreachable_endpoint_stops_a_long_run_in_seconds_with_one_error(tmp_path):
    """Connection refused: one quick retry per request in flight, then one EndpointError; the
    queued requests are never sent (with the backoff of other failures this took minutes)."""
    port = dead_port()
    client = LLMClient("m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=None, concurrency=8,
                       max_retries=6, backoff_base=0.2, backoff_max=60, cache_dir=tmp_path)
    started = time.monotonic()

    with pytest.raises(EndpointError) as raised:
        client.complete_many(prompts(200))

    assert time.monotonic() - started < 3
    assert str(raised.value) == (f"cannot reach the LLM endpoint http://127.0.0.1:{port}/v1 ([Errno 111] Connection "
                                 "refused); the replies received so far are cached: a re-run resumes")
    assert client.usage.calls <= 2 * 8  # the requests in flight, each tried twice; none of the 192 queued
    assert client.usage.retries <= 8


@pytest.mark.parametrize("status", [400, 404, 422])
def test_non_retryable_4xx_fails_fast(llm_server, status):
    llm_server.fail(status, times=None, message="bad thing")
    client = fast_client(llm_server, max_retries=5)

    results = client.complete_many(prompts(2))

    assert [(r.ok, r.error, r.attempts) for r in results] == [(False, f"http_{status}", 1)] * 2
    assert results[0].error_detail == f"Error code: {status} - bad thing"
    assert len(llm_server.chat_requests) == 2
    assert (client.usage.calls, client.usage.retries, client.usage.failures) == (2, 0, 2)


def test_order_preserved_and_concurrency_bounded(llm_server):
    in_flight, peak, lock = 0, 0, threading.Lock()

    def slow_echo(call: ChatCall) -> str:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        index = int(call.user_text.split()[-1])
        time.sleep(0.02 * (12 - index))  # early requests answer last
        with lock:
            in_flight -= 1
        return f"answer {index}"

    llm_server.respond_with(slow_echo)
    client = fast_client(llm_server, concurrency=4)

    results = client.complete_many(prompts(12), desc="order")

    assert [r.text for r in results] == [f"answer {i}" for i in range(12)]
    assert peak == 4


def test_second_run_is_served_from_cache(llm_server, tmp_path):
    cache = tmp_path / "cache"
    first = fast_client(llm_server, cache_dir=cache).complete_many(prompts(5))
    assert len(llm_server.chat_requests) == 5
    assert len(cache_files(cache)) == 5
    assert {p.name for p in cache_files(cache)} == {f"{r.key}.json" for r in first}
    assert all(p.parent.name == p.name[:2] for p in cache_files(cache))

    again = fast_client(llm_server, cache_dir=cache)
    second = again.complete_many(prompts(5))

    assert len(llm_server.chat_requests) == 5  # zero new server calls
    assert [r.text for r in second] == [r.text for r in first]
    assert [(r.cached, r.attempts) for r in second] == [(True, 0)] * 5
    assert [r.usage for r in second] == [r.usage for r in first]
    assert (again.usage.calls, again.usage.cache_hits, again.usage.prompt_tokens) == (0, 5, 0)
    assert again._sdk is None  # a run whose every reply is cached never makes (nor imports) the openai client
    again.close()
    third = again.complete_many(prompts(6))  # the first request the cache cannot answer makes it
    assert again._sdk is not None and len(llm_server.chat_requests) == 6 and third[5].cached is False
    again.close()


def test_cache_key_covers_sampling_and_template_version(llm_server, tmp_path):
    client = fast_client(llm_server, cache_dir=tmp_path)
    base = ChatRequest.from_prompt("q", template_version="v1")
    variants = [
        base,
        ChatRequest.from_prompt("q", template_version="v2"),
        ChatRequest.from_prompt("q", template_version="v1", temperature=0.7),
        ChatRequest.from_prompt("q", template_version="v1", cache_salt="sample-1"),
        ChatRequest.from_prompt("q", template_version="v1", max_tokens=3),
    ]
    client.complete_many(variants)
    client.complete_many([base])  # the same request again: a hit

    assert len(llm_server.chat_requests) == 5
    assert len(cache_files(tmp_path)) == 5
    assert client.usage.cache_hits == 1


def test_request_key_is_canonical():
    a = ChatRequest(messages=[{"role": "user", "content": "x"}], response_format={"type": "json_object", "b": 1})
    b = ChatRequest(messages=[{"content": "x", "role": "user"}], response_format={"b": 1, "type": "json_object"})
    assert request_key("m", a) == request_key("m", b)
    assert request_key("m", a) != request_key("other-model", a)
    assert len(request_key("m", a)) == 64


def test_killed_run_resumes_without_asking_again(llm_server, tmp_path):
    """The server dies for good after 3 replies; a re-run asks only for the 3 that failed, and each
    reply was on disk before the next request left (so a kill at any point loses nothing paid)."""
    cache = tmp_path / "cache"
    files_on_arrival: list[int] = []

    def dies_after_three(call: ChatCall) -> str | ScriptedError:
        files_on_arrival.append(len(cache_files(cache)))
        return f"ok {call.user_text}" if call.index < 3 else ScriptedError(500)

    llm_server.respond_with(dies_after_three)
    first = fast_client(llm_server, cache_dir=cache, concurrency=1, max_retries=1).complete_many(prompts(6))

    assert [r.ok for r in first] == [True] * 3 + [False] * 3
    assert files_on_arrival == [0, 1, 2, 3, 3, 3, 3, 3, 3]  # 3 successes + 3 x (1 try + 1 retry)
    assert len(cache_files(cache)) == 3

    llm_server.respond_with(lambda call: f"ok {call.user_text}")
    before = len(llm_server.chat_requests)
    rerun = fast_client(llm_server, cache_dir=cache, concurrency=2).complete_many(prompts(6))

    asked_again = [body["messages"][0]["content"] for body in llm_server.chat_bodies[before:]]
    assert sorted(asked_again) == ["question 3", "question 4", "question 5"]
    assert [r.text for r in rerun] == [f"ok question {i}" for i in range(6)]
    assert [r.cached for r in rerun] == [True] * 3 + [False] * 3


def test_kept_replies_are_read_without_a_thread_and_counted_as_before(llm_server, tmp_path, monkeypatch):
    """A rebuild's replies are on disk: they are read in the caller's thread, one after another (a thread per
    request cost an MMLU-Pro+ rebuild 0.5 CPU s), in request order and counted as hits; only the requests not kept
    go to the pool. A kept reply the parser refuses goes there too, and is asked again."""
    from builders.core.llm import client as llm_client

    llm_server.respond_with(lambda call: json.dumps({"label": call.user_text}))
    fast_client(llm_server, cache_dir=tmp_path).complete_many(prompts(4))
    pools = []
    executor = llm_client.ThreadPoolExecutor
    monkeypatch.setattr(llm_client, "ThreadPoolExecutor", lambda **k: pools.append(k) or executor(**k))
    warm = fast_client(llm_server, cache_dir=tmp_path)
    before = len(llm_server.chat_requests)
    results = warm.complete_many(prompts(4), parse=json.loads)
    assert [r.parsed for r in results] == [{"label": f"question {i}"} for i in range(4)] and all(r.cached for r in results)
    assert pools == [] and len(llm_server.chat_requests) == before
    assert (warm.usage.cache_hits, warm.usage.calls) == (4, 0)
    mixed = warm.complete_many(prompts(6), parse=lambda text: json.loads(text) if "3" not in text else int("x"))
    assert [r.cached for r in mixed] == [True, True, True, False, False, False]
    assert [p["max_workers"] for p in pools] == [3] and len(llm_server.chat_requests) == before + 3  # 3 asked again
    assert (warm.usage.cache_hits, warm.usage.calls, warm.usage.parse_retries) == (8, 3, 1)


def test_unparseable_reply_is_retried_once_then_reported_raw(llm_server, tmp_path):
    llm_server.replies("not json", "still not json")
    client = fast_client(llm_server, cache_dir=tmp_path)

    [result] = client.complete_many(prompts(1), parse=json.loads)

    assert (result.ok, result.error, result.text, result.parsed) == (False, "unparseable", "still not json", None)
    assert result.error_detail.startswith("Expecting value")
    assert result.attempts == 2
    assert len(llm_server.chat_requests) == 2
    assert (client.usage.parse_retries, client.usage.failures) == (1, 1)
    # each attempt's reply is kept under its own key: a rerun reads both, in order, and asks nothing
    assert sorted(json.loads(f.read_text())["text"] for f in cache_files(tmp_path)) == ["not json", "still not json"]
    rerun = fast_client(llm_server, cache_dir=tmp_path)
    [again] = rerun.complete_many(prompts(1), parse=json.loads)
    assert (again.ok, again.error, again.text, again.attempts) == (False, "unparseable", "still not json", 0)
    assert len(llm_server.chat_requests) == 2 and (rerun.usage.cache_hits, rerun.usage.parse_retries) == (2, 1)


def test_parse_retry_bypasses_a_cached_bad_reply(llm_server, tmp_path):
    llm_server.replies("oops", '{"label": "B"}')
    fast_client(llm_server, cache_dir=tmp_path).complete_many(prompts(1))  # no parser: "oops" cached

    client = fast_client(llm_server, cache_dir=tmp_path)
    [result] = client.complete_many(prompts(1), parse=json.loads)

    assert (result.ok, result.parsed, result.cached, result.attempts) == (True, {"label": "B"}, False, 1)
    assert (client.usage.cache_hits, client.usage.calls, client.usage.parse_retries) == (1, 1, 1)
    # the good reply is kept beside the rejected one, under the retry's key: a rerun reads it without asking
    assert sorted(json.loads(f.read_text())["text"] for f in cache_files(tmp_path)) == ["oops", '{"label": "B"}']
    [again] = fast_client(llm_server, cache_dir=tmp_path).complete_many(prompts(1), parse=json.loads)
    assert (again.ok, again.parsed, again.cached) == (True, {"label": "B"}, True) and len(llm_server.chat_requests) == 2


def test_api_key_is_sent_but_never_logged_or_shown(llm_server, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)  # every logger: ours, openai, httpx, httpcore
    monkeypatch.setenv("MCQ_TEST_KEY", SECRET)
    auth_headers: list[str] = []

    def record_auth(call: ChatCall) -> ScriptedError | None:
        auth_headers.append(call.headers.get("authorization", ""))
        if "leak" in call.user_text:
            return ScriptedError(400, message=f"bad request for key {SECRET}")
        return None

    llm_server.respond_with(record_auth).rate_limit(times=1, retry_after=0.01)
    llm_server.fail(401, times=1, message=f"Incorrect API key provided: {SECRET}")
    client = fast_client(llm_server, api_key_env="MCQ_TEST_KEY", concurrency=1)
    requests = [ChatRequest.from_prompt("first"), ChatRequest.from_prompt("second"),
                ChatRequest.from_prompt("leak")]

    results = client.complete_many(requests)

    # Failures are FIFO: "first" gets the 429, then (retried) the 401; the others reach the responder.
    assert auth_headers == [f"Bearer {SECRET}"] * 2
    assert [(r.error, r.attempts) for r in results] == [("http_401", 2), (None, 1), ("http_400", 1)]
    assert results[0].error_detail == "authentication refused (HTTP 401); check the key in $MCQ_TEST_KEY"
    assert results[2].error_detail == "Error code: 400 - bad request for key ***"
    assert len(caplog.records) > 10  # the stack did log, at debug level
    shown = [caplog.text, repr(client), str(client), client.usage_summary(), repr(client.usage),
             *map(repr, results)]
    assert [SECRET in text for text in shown] == [False] * len(shown)


def test_missing_api_key_names_the_variable(monkeypatch, llm_server):
    monkeypatch.delenv("MCQ_ABSENT_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match=r"environment variable MCQ_ABSENT_KEY is not set"):
        LLMClient("m", base_url=llm_server.openai_base_url, api_key_env="MCQ_ABSENT_KEY")
    monkeypatch.setenv("MCQ_ABSENT_KEY", "  ")
    with pytest.raises(MissingAPIKeyError, match="MCQ_ABSENT_KEY"):
        LLMClient("m", base_url=llm_server.openai_base_url, api_key_env="MCQ_ABSENT_KEY")


def test_keyless_local_server_gets_the_placeholder(llm_server):
    seen: list[str] = []
    llm_server.respond_with(lambda call: seen.append(call.headers["authorization"]) or "hi")

    [result] = fast_client(llm_server, api_key_env=None).complete_many(prompts(1))

    assert (result.ok, seen) == (True, ["Bearer EMPTY"])


def test_start_llmock_context_manager_scripts_replies_in_order():
    with start_llmock(replies=("one", "two")) as server:
        results = fast_client(server, concurrency=1).complete_many(prompts(3))
    assert [r.text for r in results] == ["one", "two", "Hello! You said: question 2"]


def test_a_test_on_the_shared_server_sees_nothing_the_test_before_it_left():
    """What the ``llm_server`` fixture does between two tests: the first leaves a request in flight, a responder,
    queued replies and failures, other settings, and a client that still sends; the second sees none of it."""
    shared = SharedLLMockServer()
    try:
        first = shared.next_test()
        first_calls: list[int] = []
        first.delay(0.4).respond_with(lambda call: first_calls.append(call.index) or "the first test's responder")
        [timed_out] = fast_client(first, max_retries=0, timeout=0.1).complete_many(prompts(1))
        first.replies("the first test's reply").fail(500, times=None).tool_mode("auto").limits(rpm=1)
        shared.finish(first)  # returns once the delayed request has been served
        assert (timed_out.error, first_calls) == ("timeout", [0])

        second = shared.next_test()
        assert urlsplit(second.url).port == urlsplit(first.url).port and second.prefix != first.prefix
        [refused] = fast_client(first, max_retries=0).complete_many(prompts(1))  # the first test's client, late
        [answered, again] = fast_client(second).complete_many(prompts(2))

        assert (refused.ok, refused.error) == (False, "http_410")
        assert [a.text for a in (answered, again)] == ["Hello! You said: question 0", "Hello! You said: question 1"]
        assert sorted((c.status, c.body["messages"][-1]["content"]) for c in second.chat_requests) == [
            (200, "question 0"), (200, "question 1")]
        assert first_calls == [0]
    finally:
        shared.stop()


def test_a_request_still_served_when_its_test_ends_leaves_that_server_behind():
    shared = SharedLLMockServer(idle_timeout=0.05)
    try:
        first = shared.next_test()
        first.delay(0.5)
        [timed_out] = fast_client(first, max_retries=0, timeout=0.1).complete_many(prompts(1))
        shared.finish(first)  # the delayed request is still being served

        second = shared.next_test()
        [answered] = fast_client(second).complete_many(prompts(1))

        assert timed_out.error == "timeout" and answered.ok
        assert urlsplit(second.url).port != urlsplit(first.url).port
        assert [c.status for c in first.chat_requests] == [200]  # waits for the delayed one to end
        assert len(second.chat_requests) == 1
    finally:
        shared.stop()


def test_empty_request_list_and_bad_settings(llm_server):
    client = fast_client(llm_server)
    assert client.complete_many([]) == []
    assert llm_server.chat_requests == []
    with pytest.raises(UserError, match=r"^--llm-concurrency \(concurrency\) must be at least 1, not 0$"):
        fast_client(llm_server, concurrency=0)
    with pytest.raises(ValueError, match="at least one message"):
        ChatRequest(messages=[])


# -- the endpoint options, declared once ------------------------------------------------------------

LLM_DESTS = {"base_url", "api_key_env", "llm_concurrency", "llm_timeout", "llm_max_retries", "max_llm_failures",
             "cache_dir"}


def llm_parser() -> argparse.ArgumentParser:
    parser = cli.ArgumentParser(prog="x", formatter_class=cli.HelpFormatter)
    add_option_arguments(parser, LLMEndpoint)
    return parser


def test_endpoint_options_defaults_and_settings(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("MCQFORGE_CACHE")  # the tests' temporary cache (conftest); checked below
    parser = llm_parser()
    args = parser.parse_args([])

    assert {k: v for k, v in vars(args).items()} == {
        "base_url": None, "api_key_env": "OPENAI_API_KEY", "llm_concurrency": 8, "llm_timeout": 120.0,
        "llm_max_retries": 6, "max_llm_failures": 0.1, "cache_dir": "~/.cache/mcqforge"}
    assert {d.name for d in declared_options(LLMEndpoint) if not d.recorded} == LLM_DESTS  # never recorded
    labelled = argparse.ArgumentParser()
    add_llm_arguments(labelled.add_argument_group("LLM endpoint"))  # a command that is no builder: the same options
    assert LLMSettings.from_args(labelled.parse_args([])) == LLMSettings.from_args(args)
    assert LLMSettings.from_args(args) == LLMSettings(
        base_url=None, api_key_env="OPENAI_API_KEY", cache_dir=tmp_path / ".cache" / "mcqforge", concurrency=8,
        timeout=120.0, max_retries=6, max_failures=0.1)

    keyless = LLMSettings.from_args(parser.parse_args(
        ["--base-url", "http://localhost:8000/v1", "--api-key-env", "none", "--cache-dir", "None",
         "--llm-concurrency", "32", "--llm-timeout", "30", "--llm-max-retries", "0"]))
    assert keyless == LLMSettings("http://localhost:8000/v1", None, None, 32, 30.0, 0)
    assert keyless.url == "http://localhost:8000/v1"
    client = keyless.client("served-model")
    assert repr(client) == ("LLMClient(model='served-model', base_url='http://localhost:8000/v1', api_key_env=None, "
                            "cache_dir=None, concurrency=32, max_retries=0)")
    assert client.timeout == 30.0

    cached = LLMSettings.from_args(parser.parse_args(["--cache-dir", str(tmp_path / "c"), "--api-key-env", "none"]))
    assert cached.client("m").cache.root == tmp_path / "c" / "llm"  # each use of the root has its own folder
    # $MCQFORGE_CACHE moves the default root (the tests left 565 MB in ~/.cache/mcqforge), not a folder given
    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "moved"))
    assert LLMSettings.from_args(parser.parse_args([])).cache_dir == tmp_path / "moved"
    assert LLMSettings().cache_dir == tmp_path / "moved"
    assert cached == LLMSettings.from_args(parser.parse_args(["--cache-dir", str(tmp_path / "c"), "--api-key-env",
                                                              "none"]))


def test_endpoint_options_help_shows_each_default_once():
    text = " ".join(llm_parser().format_help().split())
    for default in ("OPENAI_API_KEY", "8", "120.0", "6", "0.1", "~/.cache/mcqforge"):
        assert text.count(f"(default: {default})") == 1, default
    assert "default: None" not in text and text.count("default") == 6
    assert "LLM endpoint (runtime: not recorded in build_config.yaml)" in text


@pytest.mark.parametrize(("argv", "message"), [
    (["--llm-concurrency", "0"], "argument --llm-concurrency: must be at least 1, got 0"),
    (["--llm-timeout", "0"], "argument --llm-timeout: must be a finite number above 0 and at most 86400, got 0"),
    # beyond what the platform's waits take: before, every request failed, blamed on the endpoint
    (["--llm-timeout", "1e12"], "argument --llm-timeout: must be a finite number above 0 and at most 86400, got 1e12"),
    (["--max-llm-failures", "1.5"], ("argument --max-llm-failures: must be a finite number at least 0 and at most "
                                     "1, got 1.5")),
    (["--llm-max-retries", "-1"], "argument --llm-max-retries: must be at least 0, got -1"),
    (["--base-url", "localhost:8000/v1"], "--base-url must start with http:// or https://, got 'localhost:8000/v1'"),
    (["--base-url", "ftp://user:secret@host/v1"], "--base-url must start with http:// or https://, got 'ftp://***@host/v1'"),
])
def test_bad_endpoint_options_are_user_errors(argv, message):
    with pytest.raises(UserError) as raised:
        LLMSettings.from_args(llm_parser().parse_args(argv))
    assert str(raised.value) == message


def test_every_command_that_calls_an_llm_takes_the_same_endpoint_options():
    from builders.registry import BUILDERS, load_builder
    from classifiers import sba

    def endpoint_options(parser: argparse.ArgumentParser) -> dict[str, tuple[str, object]]:
        return {a.dest: (a.option_strings[0], a.default) for a in parser._actions if a.dest in LLM_DESTS}

    expected = endpoint_options(llm_parser())
    parsers = [cli.builder_parser(load_builder(name)) for name in BUILDERS]
    calling = [p for p in parsers if "base_url" in endpoint_options(p)]
    labeller = sba.build_parser()._subparsers._group_actions[0].choices["label"]
    assert len(calling) >= 5 and [endpoint_options(p) for p in [*calling, labeller]] == [expected] * (len(calling) + 1)
    assert all(build_config.not_recorded_options(p) >= LLM_DESTS for p in calling)  # never in build_config.yaml


# -- requests that fail beyond a stated share stop the run ------------------------------------------


def failing_on(numbers: set[int]) -> Callable[[ChatCall], object]:
    return lambda call: ScriptedError(400, message="no such model") if int(call.user_text[1:]) in numbers else "ok"


def test_a_client_stops_once_more_requests_fail_than_its_share_allows(llm_server):
    requests = [ChatRequest.from_prompt(f"q{i}") for i in range(10)]
    llm_server.respond_with(failing_on({4}))
    results = fast_client(llm_server, concurrency=1, max_failures=0.1).complete_many(requests)
    assert [r.error for r in results] == [None] * 4 + ["http_400"] + [None] * 5  # 1 of 10: at the share, not beyond

    llm_server.respond_with(failing_on({4, 8}))
    with pytest.raises(TooManyFailures) as raised:
        fast_client(llm_server, concurrency=1, max_failures=0.1).complete_many(requests)
    assert str(raised.value).startswith(
        f"2 of 10 requests to mock-model at {llm_server.openai_base_url} failed, more than --max-llm-failures 0.1 "
        "allows (10%); most often http_400 (2: ")
    assert "no such model" in str(raised.value)

    client = fast_client(llm_server, concurrency=1, max_failures=0.2)  # a stated share of 0.2 takes 2 of 10
    assert sum(not r.ok for r in client.complete_many(requests)) == 2
    assert sum(not r.ok for r in fast_client(llm_server, concurrency=1).complete_many(requests)) == 2  # no limit


def test_a_dead_endpoint_is_stopped_as_soon_as_the_share_is_certain_to_be_passed(llm_server):
    llm_server.respond_with(lambda call: ScriptedError(400))
    requests = [ChatRequest.from_prompt(f"q{i}") for i in range(50)]
    with pytest.raises(TooManyFailures, match=r"^6 of 50 requests"):
        fast_client(llm_server, concurrency=1, max_failures=0.1).complete_many(requests)
    assert len(llm_server.chat_requests) == 6  # 6 > 0.1 x 50: the other 44 are never sent


def test_unparseable_replies_are_answers_not_failed_calls(llm_server):
    def refuse(text: str) -> str:
        raise ValueError("not a label")

    results = fast_client(llm_server, max_failures=0.1).complete_many(
        [ChatRequest.from_prompt(f"q{i}") for i in range(5)], parse=refuse)
    assert [r.error for r in results] == ["unparseable"] * 5


# -- credentials, in whatever spelling a server echoes them --------------------------------------------------------


KEY = "sk-test/Zq8+v1X7=pLw0_never~log.me"  # "/", "+", "=", "~" and "." spell differently in each encoding


def with_credentials(url: str) -> str:
    return url.replace("http://", "http://user:hunter2-secret@")


def test_reveals_finds_every_spelling_it_is_given():
    """The checker itself: each spelling of KEY inside a longer text is found, and a text without it is not."""
    assert all(reveals(f"error: bad key <{spelling}>.", KEY) for spelling in spellings(KEY))
    assert not reveals("error: bad key <***>, sk-test and Zq8 apart", KEY)


def test_a_key_the_server_echoes_in_any_spelling_never_reaches_a_result_or_the_log(llm_server, monkeypatch, caplog):
    """A key echoed URL-encoded, base64-encoded or half-quoted reached the error detail and the log."""
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("MCQ_ECHOED_KEY", KEY)

    def echo(call: ChatCall) -> ScriptedError:
        received = call.headers["authorization"].removeprefix("Bearer ")
        return ScriptedError(400, message=f"unknown key: {' | '.join(spellings(received))}")

    llm_server.respond_with(echo)
    client = fast_client(llm_server, api_key_env="MCQ_ECHOED_KEY", max_retries=0)
    [result] = client.complete_many(prompts(1))
    assert result.error == "http_400" and result.error_detail.startswith("Error code: 400 - unknown key: *** | ***")
    shown = [result.error_detail, caplog.text, repr(result), repr(client)]
    assert [reveals(text, KEY) for text in shown] == [False] * len(shown)


@pytest.mark.slow
def test_a_command_shows_no_spelling_of_an_echoed_key_in_its_error_line_or_logs(llm_server, tmp_path):
    from fixtures import write_benchmark
    from test_cli import one_error_line, run_cli

    llm_server.respond_with(lambda call: ScriptedError(
        400, message=" ".join(spellings(call.headers["authorization"].removeprefix("Bearer ")))))
    result = run_cli("--source", str(write_benchmark("mmlu", tmp_path)), "--sba-judge", "m", "--base-url",
                     llm_server.openai_base_url, "--api-key-env", "MCQ_CLI_KEY", "--cache-dir", "none",
                     "--output", str(tmp_path / "out"), "--log-level", "DEBUG", env={"MCQ_CLI_KEY": KEY})
    line = one_error_line(result)
    assert "requests to m at" in line and "***" in line
    assert not reveals(result.stderr + result.stdout, KEY)


def test_a_proxys_echo_of_its_basic_auth_never_shows(monkeypatch):
    """Proxy credentials (``$HTTP_PROXY``) travel as Basic auth, base64 of ``user:password``: a proxy that
    quotes that header back in its error page shows them in no spelling."""
    received: list[str] = []

    def proxy(exchange: RawExchange) -> None:
        basic = exchange.headers.get("proxy-authorization", "")
        received.append(basic)
        exchange.send(502, json.dumps({"error": {"message": f"upstream refused {basic} for {exchange.path}"}}))

    with start_raw_server(proxy) as server:
        monkeypatch.setenv("HTTP_PROXY", server.base_url.replace("http://", "http://proxyuser:pr0xy-pa55@")[:-3])
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client = LLMClient("m", base_url=f"http://127.0.0.1:{dead_port()}/v1", api_key_env=None, max_retries=0)
        result = client.complete(ChatRequest.from_prompt("q"))
    import base64

    assert received == ["Basic " + base64.b64encode(b"proxyuser:pr0xy-pa55").decode()]
    assert result.error == "http_502" and "upstream refused Basic *** for" in result.error_detail
    assert not reveals(result.error_detail, "pr0xy-pa55") and not reveals(result.error_detail, "proxyuser:pr0xy")


def test_redaction_covers_every_secret_the_process_knows(monkeypatch):
    """The Hub token, API keys in the environment (read or not), and the credentials of every URL in the
    environment, in every spelling; ordinary text is left as it is."""
    from builders.core.runtime.redact import remember_secret, scrub_text

    secrets = {"HF_TOKEN": "hf_Abc/def+ghi=jklmnop", "OPENAI_API_KEY": "sk-proj-Q1w2E3r4T5y6=", "remembered": KEY,
               "password": "s3cr3t~pw", "user:password": "svc:s3cr3t~pw"}
    monkeypatch.setenv("HF_TOKEN", secrets["HF_TOKEN"])
    monkeypatch.setenv("OPENAI_API_KEY", secrets["OPENAI_API_KEY"])
    monkeypatch.setenv("HF_ENDPOINT", "https://svc:s3cr3t~pw@hub.internal")
    remember_secret(KEY)
    for name, secret in secrets.items():
        for spelling in spellings(secret):
            scrubbed = scrub_text(f"HTTP 401: the token <{spelling}> was refused")
            assert not reveals(scrubbed, secret), (name, spelling, scrubbed)
    plain = "HTTP 404 for https://hub.internal/api/datasets/a/b: Repository Not Found (git@github.com, 2024-05-01)"
    assert scrub_text(plain) == plain


def test_a_base_url_with_credentials_is_refused_before_any_request(monkeypatch):
    """A password in --base-url was sent as Basic auth in place of the API key (and its base64 echo leaked). The URL
    is refused in one line, before anything is sent: an OpenAI-compatible API takes its key in the Authorization
    header, which the URL's credentials would take over."""
    with start_raw_server(lambda exchange: exchange.send(200, '{"data": []}')) as server:
        url = with_credentials(server.base_url)
        for make in (lambda: LLMSettings(base_url=url, api_key_env=None), lambda: LLMClient("m", base_url=url)):
            with pytest.raises(UserError) as raised:
                make()
            assert str(raised.value) == (f"--base-url 'http://***@{server.base_url[7:]}' holds credentials before "
                                         "its host, which would be sent as Basic auth instead of the API key: remove "
                                         "them, and put the key in the environment variable --api-key-env names")
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        with pytest.raises(UserError, match=r"^\$OPENAI_BASE_URL 'http://\*\*\*@127\.0\.0\.1:\d+/v1' holds credentials"):
            LLMSettings(api_key_env=None)
        assert server.requests == []


def test_a_command_with_credentials_in_its_base_url_is_one_line_and_sends_nothing(tmp_path):
    from fixtures import write_benchmark
    from test_cli import one_error_line, run_cli

    with start_raw_server(lambda exchange: exchange.send(200, '{"data": []}')) as server:
        result = run_cli("--source", str(write_benchmark("mmlu", tmp_path)), "--sba-judge", "m", "--base-url",
                         with_credentials(server.base_url), "--api-key-env", "none", "--cache-dir", "none",
                         "--output", str(tmp_path / "out"), "--log-level", "DEBUG")
        assert server.requests == []
    assert one_error_line(result).startswith("error: --base-url 'http://***@127.0.0.1:")
    assert not reveals(result.stderr + result.stdout, "hunter2-secret")


def test_the_user_info_of_a_url_a_server_quotes_is_scrubbed(llm_server):
    other = with_credentials(llm_server.openai_base_url).replace("/v1", "/upstream")
    llm_server.respond_with(lambda call: ScriptedError(400, message=f"cannot forward to {other}/chat/completions"))
    result = fast_client(llm_server).complete(ChatRequest.from_prompt("q"))
    assert "hunter2" not in result.error_detail and "http://***@127.0.0.1" in result.error_detail


def test_scrub_text_hides_every_urls_user_info_and_nothing_else():
    from builders.core.runtime.redact import scrub_text, scrub_url

    assert scrub_url("https://user:p@ss@host:8/v1?x=1") == "https://***@host:8/v1?x=1"
    assert scrub_text("a http://u:p@h/x and HTTPS://token@h2 but git@github.com, mail@x.org and "
                      "http://h/x@y") == "a http://***@h/x and HTTPS://***@h2 but git@github.com, mail@x.org and http://h/x@y"
