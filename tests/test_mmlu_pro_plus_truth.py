"""MMLU-Pro+'s truth check (``--validate-with MODEL``): a second model, on the same llmock server as the generator
(another model name), confirms each new TPP option before it becomes half of a key; the options it rejects or cannot
judge fall back like any rejected option, counted with the reason, and the card says so."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from sample_releases import EMBEDDER_GROUP
from fixtures import write_jsonl
from test_mmlu_pro_plus import EXPECTED_REJECTIONS, build_argv, responder, source_rows

import builders.mmlu_pro_plus as mpp
from builders.core.errors import UserError
from builders.core.llm.correct_options import TEMPLATE_VERSION
from builders.mmlu_pro_plus.groups import TPP, UNCHANGED
from builders.mmlu_pro_plus.truth import JUDGE_FAILED, JUDGED_INCORRECT

pytestmark = EMBEDDER_GROUP  # its tests embed texts

KEYS = {row["question"]: row["options"][row["answer_index"]] for row in source_rows()}
FALSE_OPTIONS = ("What is 2 times 3?", "What is 3 times 3?")  # the judge calls only the key correct
UNJUDGEABLE = "Which condition is a persistently raised arterial pressure?"  # the judge answers in prose


def judge(call) -> str:
    """The judge's replies: the key and the new (last) option for every question, but the key alone for two, and
    prose for one."""
    text = call.user_text
    question = text.split("Question:\n", 1)[1].split("\n\nOptions:", 1)[0]
    lines = text.split("Options:\n", 1)[1].split("\n\n")[0].splitlines()
    letters = {line.split(". ", 1)[1]: line.split(". ", 1)[0] for line in lines}
    key, new = letters[KEYS[question]], lines[-1].split(". ", 1)[0]
    if question == UNJUDGEABLE:
        return f"Both {key} and {new} look right to me."
    return json.dumps([key] if question in FALSE_OPTIONS else [key, new])


@pytest.fixture
def source_dir(tmp_path) -> Path:
    return write_jsonl(tmp_path / "src" / "test.jsonl", source_rows()).parent


@pytest.fixture
def two_models(llm_server):
    """One server, two models: ``mock-model`` writes the options, ``judge-model`` judges them."""
    generate = responder(Counter())
    llm_server.respond_with(lambda call: judge(call) if call.body["model"] == "judge-model" else generate(call))
    return llm_server


def test_the_judge_rejects_the_options_it_does_not_confirm_and_they_fall_back(two_models, source_dir, tmp_path):
    out = tmp_path / "out"
    argv = build_argv(two_models, source_dir, tmp_path / "cache", out, "--ratios", "30:0:0:5",
                      "--validate-with", "judge-model", "--no-progress")
    assert mpp.main(argv) == 0
    # 32 questions can take a pair; every one is asked (the TPP share asks for 30). 9 options fail the form rules
    # and the similarity cut-off; the 23 others go to the judge, which confirms 20.
    judged = [b for b in two_models.chat_bodies if b["model"] == "judge-model"]
    assert len(judged) == 24  # 23 options, and the reply in prose asked once more
    assert all("Reply with a JSON list of the letters" in b["messages"][-1]["content"] for b in judged)

    import datasets

    test = datasets.load_dataset(str(out), "default", split="test")
    assert Counter(test["modification"]) == {TPP: 20, UNCHANGED: 15}
    reasons = Counter(m["tpp_rejection"] for m in test["metadata"] if m["tpp_rejection"])
    assert reasons == Counter(EXPECTED_REJECTIONS.values()) + Counter({JUDGED_INCORRECT: 2, JUDGE_FAILED: 1})
    by_question = {row["question"]: row for row in test}
    for question in FALSE_OPTIONS:
        assert by_question[question]["modification"] == UNCHANGED
        assert by_question[question]["metadata"]["unchanged_reason"] == f"tpp_rejected_{JUDGED_INCORRECT}"
    assert by_question[UNJUDGEABLE]["metadata"]["unchanged_reason"] == f"tpp_rejected_{JUDGE_FAILED}"
    assert by_question["What is 4 times 3?"]["modification"] == TPP
    rejected = {json.loads(line)["id"]: json.loads(line) for line in (out / "tpp_rejections.jsonl").read_text().splitlines()}
    assert sum(r["reason"] == JUDGED_INCORRECT for r in rejected.values()) == 2
    assert any(r["detail"] == "judge-model called C correct, not the new option F" for r in rejected.values())

    card = " ".join((out / "README.md").read_text().split())
    assert "**A second model, `judge-model`, confirmed the generated options**" in card
    assert f"(prompt `{TEMPLATE_VERSION}`;" in card
    assert ("Of 23 options judged, 20 were confirmed, 2 rejected (`judged_incorrect`) and 1 got no usable reply after "
            "one retry (`judge_failed`)") in card
    assert "checked by form rules only" not in card
    config = (out / "build_config.yaml").read_text()
    assert "validate_with: judge-model" in config and "127.0.0.1" not in config


def test_validate_with_needs_a_tpp_share_and_names_both_models(source_dir):
    options = mpp.BUILDER.options_from(["--source", str(source_dir), "--llm-model", "gen", "--validate-with", "judge"])
    assert options.llm_models() == ["gen", "judge"]
    with pytest.raises(UserError, match="--validate-with confirms the new TPP options, and the TPP share is 0"):
        mpp.BUILDER.options_from(["--source", str(source_dir), "--ratios", "0:1:1:1", "--validate-with", "judge"])
