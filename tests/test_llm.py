"""builders.core.llm against a real HTTP server on 127.0.0.1 (llmock), with the real openai client."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from pathlib import Path

import pytest

from builders.core.llm import ChatRequest, LLMClient, MissingAPIKeyError, request_key
from llm_server import ChatCall, ScriptedError, fast_client, start_llmock

SECRET = "sk-test-Zq8v1X7pLw0-never-log-me"


def cache_files(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.json"))


def prompts(n: int) -> list[ChatRequest]:
    return [ChatRequest.from_prompt(f"question {i}") for i in range(n)]


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


def test_connection_errors_are_retried_then_reported(tmp_path):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = LLMClient("m", base_url=f"http://127.0.0.1:{port}/v1", api_key_env=None,
                       max_retries=2, backoff_base=0.001, backoff_max=0.01)

    [result] = client.complete_many(prompts(1))

    assert (result.ok, result.error, result.attempts) == (False, "connection", 3)
    assert (client.usage.calls, client.usage.retries, client.usage.failures) == (3, 2, 1)


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


def test_unparseable_reply_is_retried_once_then_reported_raw(llm_server, tmp_path):
    llm_server.replies("not json", "still not json")
    client = fast_client(llm_server, cache_dir=tmp_path)

    [result] = client.complete_many(prompts(1), parse=json.loads)

    assert (result.ok, result.error, result.text, result.parsed) == (False, "unparseable", "still not json", None)
    assert result.error_detail.startswith("Expecting value")
    assert result.attempts == 2
    assert len(llm_server.chat_requests) == 2
    assert cache_files(tmp_path) == []  # an unparseable reply is never cached
    assert (client.usage.parse_retries, client.usage.failures) == (1, 1)


def test_parse_retry_bypasses_a_cached_bad_reply(llm_server, tmp_path):
    llm_server.replies("oops", '{"label": "B"}')
    fast_client(llm_server, cache_dir=tmp_path).complete_many(prompts(1))  # no parser: "oops" cached

    client = fast_client(llm_server, cache_dir=tmp_path)
    [result] = client.complete_many(prompts(1), parse=json.loads)

    assert (result.ok, result.parsed, result.cached, result.attempts) == (True, {"label": "B"}, False, 1)
    assert (client.usage.cache_hits, client.usage.calls, client.usage.parse_retries) == (1, 1, 1)
    [stored] = cache_files(tmp_path)
    assert json.loads(stored.read_text())["text"] == '{"label": "B"}'  # the good reply replaced it


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


def test_empty_request_list_and_bad_settings(llm_server):
    client = fast_client(llm_server)
    assert client.complete_many([]) == []
    assert llm_server.chat_requests == []
    with pytest.raises(ValueError, match="concurrency"):
        fast_client(llm_server, concurrency=0)
    with pytest.raises(ValueError, match="at least one message"):
        ChatRequest(messages=[])
