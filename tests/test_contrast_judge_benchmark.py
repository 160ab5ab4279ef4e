"""benchmarks/contrast_judge.py: a judge's precision and recall on the labelled pairs, asked through the builder's
``--validate-with`` code (against llmock on 127.0.0.1), and the minimal OpenAI-compatible server it serves a local
model with (a tiny random Llama with SmolLM2's tokenizer, through the real LLM client)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from builders.core.llm.correct_options import judge_correct_options
from builders.core.llm.settings import LLMSettings, check_endpoint

REPO = Path(__file__).resolve().parents[1]
LABELS = [json.loads(line) for line in (REPO / "tests" / "data" / "contrast_screen_pairs.jsonl").read_text().splitlines()]


def load_benchmark():
    spec = importlib.util.spec_from_file_location("contrast_judge_benchmark", REPO / "benchmarks" / "contrast_judge.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_labelled_pair_has_its_two_questions():
    assert len(LABELS) == 24 and sum(row["two_answers"] for row in LABELS) == 12
    assert all(row["first_question"].endswith("?") and row["second_question"].endswith("?") for row in LABELS)
    pairs = load_benchmark().labelled_pairs()
    assert [(p.first.gold, p.second.gold, label) for p, label in pairs] == [
        (row["first"], row["second"], row["two_answers"]) for row in LABELS]
    assert all(set(p.first.choices) == set(p.second.choices) for p, _ in pairs)


def scripted_judge(call) -> str:
    """Both options for the first question of the first 10 two-answer pairs (the last 2 are missed); the other option
    for the second question of the first one-answer pair, prose for the first question of the second; else the key."""
    text = call.user_text
    question = text.split("Question:\n", 1)[1].split("\n", 1)[0]
    options = dict(line.split(". ", 1)[::-1] for line in text.split("Options:\n", 1)[1].split("\n\n")[0].splitlines())
    n, member = next((n, m) for n, row in enumerate(LABELS) for m in ("first", "second") if row[f"{m}_question"] == question)
    key = options[LABELS[n][member]]
    other = next(letter for letter in options.values() if letter != key)
    if n < 10 and member == "first":
        return json.dumps([key, other])
    if n == 12 and member == "second":
        return json.dumps([other])
    if n == 13 and member == "first":
        return f"It is {key}."
    return json.dumps([key])


def test_precision_and_recall_of_a_judge_through_the_builders_code(llm_server, tmp_path):
    llm_server.respond_with(scripted_judge)
    settings = LLMSettings(base_url=llm_server.openai_base_url, api_key_env=None, cache_dir=None, concurrency=2)
    measured = load_benchmark().measure(settings, "judge-model")
    assert {k: v for k, v in measured.items() if k != "usage"} == {
        "model": "judge-model", "template": "correct-options-v1", "seed": 0, "pairs": 24, "two_answer_pairs": 12,
        "flagged": 12, "true_flags": 10, "precision": 0.8333, "recall": 0.8333,
        "dropped": {"judge_two_answers": 10, "judge_other_answer": 1, "judge_failed": 1}, "failed_replies": 1,
        "questions": 48}
    assert len([c for c in llm_server.chat_requests if c.status == 200]) == 49  # the prose asked once more
    assert all(body["model"] == "judge-model" for body in llm_server.chat_bodies)


def test_an_endpoint_without_a_model_name_is_one_error_line(capsys):
    assert load_benchmark().main(["--base-url", "http://127.0.0.1:9/v1", "--api-key-env", "none"]) == 2
    assert capsys.readouterr().err == "error: --base-url needs --model (the judge's model name)\n"


@pytest.mark.slow  # loads a model
def test_the_local_server_answers_the_llm_client(tiny_lm):
    bench = load_benchmark()
    chat = bench.ChatModel(str(tiny_lm))
    with bench.serve(chat, "tiny") as url:
        settings = LLMSettings(base_url=url, api_key_env=None, cache_dir=None, concurrency=1, max_retries=0)
        check_endpoint(settings)  # GET /v1/models lists it
        with settings.client("tiny") as client:
            judgements = judge_correct_options(client, [("Which planet is the hottest?", ["Venus", "Mars"])])
            usage = client.usage
    assert len(judgements) == 1 and judgements[0].reply is not None  # a random model's reply: text, rarely a list
    assert usage.calls == 2 and usage.retries == 0  # the reply, and once more when it does not parse
    assert usage.completion_tokens <= 2 * 100 and usage.prompt_tokens > 2 * 100
