"""The contrast sets' judge (``--validate-with MODEL``), end to end against llmock on 127.0.0.1: the pairs it finds
two answers in, or the other answer, or cannot judge, are dropped with the reason and counted; the card says so."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fixtures import outcome_rows
from test_contrast_sets import UNIFIEDQA, uid, write_unifiedqa

from builders import contrast_sets as cs
from builders.contrast_sets.validation import FAILED, NO_ANSWER, OTHER_ANSWER, TWO_ANSWERS, question_reason
from builders.core.llm.correct_options import TEMPLATE_VERSION, Judgement, parse_letters

GOLDS = {row["question"]: row["choices"]["ABCDEFGH".index(row["answer"])] for rows in UNIFIEDQA.values() for row in rows}
TWO_ANSWER_QUESTION = "Which planet is the hottest?"  # pair sci/test/1 + sci/test/3
OTHER_ANSWER_QUESTION = "What color is a clear daytime sky?"  # pair misc/test/0 + misc/test/1 or /4
UNJUDGEABLE_QUESTION = "Which planet is home to Olympus Mons?"  # pair misc/test/2 + sci/test/4


def judge(call) -> str:
    """The judge's replies: both options for one question, the other option for another, prose (unparseable) for a
    third; the key alone (in a ```json fence for one of them) for every other question."""
    text = call.user_text
    question = text.split("Question:\n", 1)[1].split("\n", 1)[0]
    options = dict(line.split(". ", 1)[::-1] for line in text.split("Options:\n", 1)[1].split("\n\n")[0].splitlines())
    key = options[GOLDS[question]]
    other = next(letter for letter in options.values() if letter != key)
    if question == TWO_ANSWER_QUESTION:
        return json.dumps(sorted([key, other]))
    if question == OTHER_ANSWER_QUESTION:
        return json.dumps([other])
    if question == UNJUDGEABLE_QUESTION:
        return f"I would say {key}."
    if question == "Which planet is called the morning star?":
        return f'```json\n["{key.lower()}"]\n```'
    return json.dumps([key])


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


@pytest.mark.slow
def test_the_judge_drops_the_pairs_it_does_not_validate_and_the_card_counts_them(llm_server, tmp_path):
    llm_server.respond_with(judge)
    source = str(write_unifiedqa(tmp_path))
    argv = ["--source", source, "--validate-with", "judge-model", "--base-url", llm_server.openai_base_url,
            "--api-key-env", "none", "--cache-dir", str(tmp_path / "cache"), "--llm-concurrency", "2", "--no-progress"]
    assert cs.main([*argv, "--output", str(tmp_path / "out1")]) == 0

    # 5 matched pairs, 10 questions, and the unparseable reply asked once more: 11 requests.
    asked = [c for c in llm_server.chat_requests if c.status == 200]
    assert len(asked) == 11
    prompts = [body["messages"][-1]["content"] for body in llm_server.chat_bodies]
    assert sum(UNJUDGEABLE_QUESTION in p for p in prompts) == 2
    assert all(body["model"] == "judge-model" for body in llm_server.chat_bodies)
    assert all(p.count("\nA. ") == 1 and p.count("\nB. ") == 1 and "\nC. " not in p for p in prompts)

    out = tmp_path / "out1"
    exclusions = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    judged = {e["id"]: e for e in exclusions if e["reason"].startswith("judge_")}
    assert {i: e["reason"] for i, e in judged.items() if e["reason"] != OTHER_ANSWER} == {
        uid("sci", "test", 1): TWO_ANSWERS, uid("sci", "test", 3): TWO_ANSWERS,
        uid("misc", "test", 2): FAILED, uid("sci", "test", 4): FAILED}
    others = sorted(i for i, e in judged.items() if e["reason"] == OTHER_ANSWER)
    assert len(others) == 2 and others[0] == uid("misc", "test", 0)
    assert "judge: A+B for this question" in judged[uid("sci", "test", 1)]["detail"]
    assert "judge: failed for this question" in judged[uid("sci", "test", 4)]["detail"]

    card = (out / "README.md").read_text()
    flat = " ".join(card.split())
    assert "**Validation: a judge, `judge-model`, validated this release, after a screen.**" in flat
    assert f"(prompt `{TEMPLATE_VERSION}`;" in flat
    assert "**2 of 5 pairs kept (40.0%)**; dropped: `judge_two_answers` 1, `judge_other_answer` 1, `judge_failed` 1." in flat
    assert "(questions without a usable reply: 1)" in flat
    assert "it flags 5 of 5 pairs (`near_synonym` 5), of which the judge dropped 3." in flat
    assert "the screen's precision is 71.4% and its recall 83.3%" in flat
    assert "This release is not validated" not in flat
    assert "The 2 flagged pairs the judge kept are queued for review, both questions of each (4 entries of " \
           "`review.jsonl`, `contrast_screen_<reason>`, with the judge's verdicts)." in flat
    queued = [json.loads(line) for line in (out / "review.jsonl").read_text().splitlines()]
    assert [(e["id"], e["reason"]) for e in queued] == [
        (uid(source, split, i), "contrast_screen_near_synonym")
        for source, split, i in (("sci", "test", 0), ("sci", "test", 2), ("sci", "train", 0), ("sci", "train", 1))]
    assert all(e["evidence"]["judge"].startswith("judge-model kept the pair: ") for e in queued)
    every = "all 4 configs"
    assert outcome_rows(card) == [
        (every, "train", "altered", "–", 2), (every, "train", "excluded", "no_contrast_partner", 1),
        (every, "test", "altered", "–", 2), (every, "test", "excluded", "judge_failed", 2),
        (every, "test", "excluded", "judge_other_answer", 2), (every, "test", "excluded", "judge_two_answers", 2),
        (every, "test", "excluded", "no_contrast_partner", 1), (every, "test", "excluded", "position_dependent_gold", 1),
        (every, "test", "excluded", "unmatched_in_maximum_matching", 1)]
    config = (out / "build_config.yaml").read_text()
    assert "validate_with: judge-model" in config and "127.0.0.1" not in config and "base_url" not in config

    # The kept pairs are the two the judge validated, in every config.
    import datasets

    contrast = datasets.load_dataset(str(out), "contrast")
    assert sorted(contrast["test"]["id"]) == [uid("sci", "test", 0), uid("sci", "test", 2)]
    assert sorted(contrast["train"]["id"]) == [uid("sci", "train", 0), uid("sci", "train", 1)]

    # A rebuild with the same cache asks nothing, not even the question without a usable reply (both of its replies
    # are kept, each under its attempt), and writes the same release.
    assert cs.main([*argv, "--output", str(tmp_path / "out2")]) == 0
    assert len(llm_server.chat_requests) == len(asked)
    assert _digests(out) == _digests(tmp_path / "out2")


def test_the_judge_is_asked_through_the_endpoint_checked_before_loading(tmp_path, capsys):
    """--validate-with names an LLM model: the endpoint is checked before any source is read (nothing listens)."""
    argv = ["--source", str(write_unifiedqa(tmp_path)), "--validate-with", "judge-model", "--base-url",
            "http://127.0.0.1:9/v1", "--api-key-env", "none", "--cache-dir", str(tmp_path / "cache"),
            "--output", str(tmp_path / "out")]
    assert cs.BUILDER.options_from(argv).llm_models() == ["judge-model"]
    assert cs.main(argv) == 2
    assert "error: cannot reach the LLM endpoint" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("reply", "count", "expected"), [
    ('["B"]', 2, {1}), ('["A", "B"]', 2, {0, 1}), ("[]", 2, set()), ('```json\n["a"]\n```', 2, {0}),
    (' ["C"] ', 4, {2}),
])
def test_a_reply_is_a_json_list_of_option_letters(reply, count, expected):
    assert parse_letters(reply, count) == expected


@pytest.mark.parametrize("reply", ['["C"]', '["A", "A"]', "A", '{"correct": ["A"]}', '["AB"]', "[1]", "The answer is A"])
def test_anything_else_is_unparseable(reply):
    with pytest.raises(ValueError):
        parse_letters(reply, 2)


def test_a_question_passes_only_when_its_key_is_the_one_correct_option():
    assert question_reason(Judgement(frozenset({1})), 1) is None
    assert question_reason(Judgement(frozenset({0, 1})), 1) == TWO_ANSWERS
    assert question_reason(Judgement(frozenset({0})), 1) == OTHER_ANSWER
    assert question_reason(Judgement(frozenset()), 1) == NO_ANSWER
    assert question_reason(Judgement(None, "unparseable"), 1) == FAILED
