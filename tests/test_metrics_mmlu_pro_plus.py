"""MMLU-Pro+ metrics on hand-computed examples, and the command line on a built release."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import write_jsonl

import builders.metrics as metrics
from builders.core.errors import UserError
from builders.core.sources.predictions import Prediction, read_predictions
from builders.mmlu_pro_plus import metrics as mm
from builders.mmlu_pro_plus.groups import CFPP, PFPP, TPP, UNCHANGED


def hand_items() -> dict[str, mm.PlusItem]:
    # question_id, record id, group, answer (MMLU-Pro+), original answer, original options, options, pair option
    return mm.items_by_question([
        mm.PlusItem("1", "mmlu_pro/test/1", TPP, 5, 1, 4, 6, 5),
        mm.PlusItem("2", "mmlu_pro/test/2", TPP, 5, 0, 4, 6, 5),
        mm.PlusItem("3", "mmlu_pro/test/3", TPP, 5, 2, 4, 6, 5),
        mm.PlusItem("4", "mmlu_pro/test/4", PFPP, 0, 0, 4, 5, 4),
        mm.PlusItem("5", "mmlu_pro/test/5", CFPP, 3, 3, 4, 5, 4),
        mm.PlusItem("6", "mmlu_pro/test/6", UNCHANGED, 2, 2, 4, 4, None),
    ])


def preds(model: str, values: dict[str, object]) -> list[Prediction]:
    return [Prediction(model, pred, {"question_id": int(qid)}, f"{model}:{qid}") for qid, pred in values.items()]


BEFORE = {"1": "B", "2": "C", "3": "A", "4": "A", "5": "D", "6": "C"}
# q1 stays on the original answer alone, q2 on its wrong option, q3 takes the right pair, q4 the wrong pair,
# q5 stays right, q6 gives no answer.
AFTER = {"1": "B", "2": "C", "3": "F", "4": "E", "5": "D", "6": None}


def test_hand_computed_example():
    report = mm.compute(hand_items(), preds("m", BEFORE), preds("m", AFTER))
    [m] = report.models
    assert (m.overall.items, m.overall.correct_before, m.overall.correct_after) == (6, 4, 2)
    assert m.overall.drop == pytest.approx(4 / 6 - 2 / 6)
    expected = {TPP: (3, 1, 1, 0.0), PFPP: (1, 1, 0, 1.0), CFPP: (1, 1, 1, 0.0), UNCHANGED: (1, 1, 0, 1.0)}
    for group, (items, before, after, drop) in expected.items():
        g = m.groups[group]
        assert (g.items, g.correct_before, g.correct_after, g.drop) == (items, before, after, drop)
    assert (m.tpp_total, m.tpp_before_correct, m.tpp_before_wrong, m.tpp_stayed_wrong, m.tpp_stayed_partial) == (3, 1, 2, 1, 1)
    assert (m.ssr_wrong, m.ssr_partial) == (1 / 3, 1 / 3)
    assert (m.tpp_pair_chosen, m.pfpp_pair_chosen, m.cfpp_pair_chosen, m.cpi) == (1, 1, 0, 1.0)
    assert (m.no_answer_before, m.no_answer_after) == (0, 1)
    assert report.notes == []


def test_indices_and_letters_agree_and_a_zero_denominator_is_reported():
    as_indices = {q: "ABCDEF".index(p) if p else None for q, p in AFTER.items()}
    letters = mm.compute(hand_items(), preds("m", BEFORE), preds("m", AFTER)).models[0]
    indices = mm.compute(hand_items(), preds("m", BEFORE), preds("m", as_indices)).models[0]
    assert letters.to_dict() == indices.to_dict()
    # Never a pair on PFPP/CFPP: CPI is undefined, with its counts, not infinite.
    careful = mm.compute(hand_items(), preds("c", BEFORE), preds("c", {**AFTER, "4": "A"})).models[0]
    data = careful.to_dict()
    assert (data["cpi"], data["cpi_numerator"], data["cpi_denominator"]) == (None, 1, 0)
    assert data["cpi_note"].startswith("undefined")
    ratios = mm.metrics_tables([careful])["Shortcut selection and pair identification"].row("c")
    assert (ratios["TPP pair chosen"], ratios["PFPP pair chosen"], ratios["CFPP pair chosen"], ratios["CPI"]) == \
        (1, 0, 0, None)
    assert "| c | 3 | 1 | 0.3333 | 1 | 0.3333 | 1 | 0 | 0 | – |" in mm.to_markdown(mm.Report("x", [careful], []))
    # A wrong-option "stay" needs the same option: moving to another wrong option is no shortcut.
    moved = mm.compute(hand_items(), preds("w", BEFORE), preds("w", {**AFTER, "2": "D"})).models[0]
    assert (moved.tpp_stayed_wrong, moved.ssr_wrong) == (0, 0.0)


def test_a_letter_beyond_the_original_options_is_no_answer_on_mmlu_pro():
    report = mm.compute(hand_items(), preds("m", {**BEFORE, "1": "F"}), preds("m", AFTER)).models[0]
    assert (report.no_answer_before, report.tpp_before_correct, report.tpp_stayed_partial) == (1, 0, 0)


def test_models_and_missing_predictions_are_accounted():
    before = preds("a", BEFORE) + preds("b", BEFORE)
    after = preds("a", {q: p for q, p in AFTER.items() if q != "6"}) + preds("c", AFTER)
    report = mm.compute(hand_items(), before, after, "ds")
    assert [m.model for m in report.models] == ["a"] and report.models[0].overall.items == 5
    assert report.notes == ["only on the before side (left out): ['b']", "only on the after side (left out): ['c']",
                            "a: 1 of 6 questions lack a prediction on one side (left out)"]
    with pytest.raises(UserError, match=r"before: a model has two predictions for one question: a:1 \(a second prediction of a on 1\)"):
        mm.compute(hand_items(), before + preds("a", {"1": "A"}), after)
    with pytest.raises(UserError, match="no model has predictions on both sides"):
        mm.compute(hand_items(), preds("a", BEFORE), preds("z", AFTER))


def test_prediction_ids_may_be_question_ids_or_record_ids(tmp_path):
    before = write_jsonl(tmp_path / "before.jsonl", [{"question_id": int(q), "model": "m", "pred": p} for q, p in BEFORE.items()])
    after = write_jsonl(tmp_path / "after.jsonl", [{"id": f"mmlu_pro/test/{q}", "model": "m", "pred": p} for q, p in AFTER.items()])
    report = mm.compute(hand_items(), read_predictions([before]), read_predictions([after]))
    assert report.models[0].to_dict() == mm.compute(hand_items(), preds("m", BEFORE), preds("m", AFTER)).models[0].to_dict()


def lm_eval_log(folder: Path, task: str, docs_and_answers: list[tuple[dict, str | None]]) -> Path:
    stamp = "2025-01-01T00-00-00.000000"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"results_{stamp}.json").write_text(json.dumps({"model_name": "org/model-7b"}))
    rows = [{"doc_id": i, "doc": doc, "target": "X", "arguments": [], "resps": [[answer]], "filtered_resps": [answer],
             "exact_match": 0.0} for i, (doc, answer) in enumerate(docs_and_answers)]
    return write_jsonl(folder / f"samples_{task}_{stamp}.jsonl", rows)


def test_lm_eval_logs_join_on_question_id_and_record_id(tmp_path):
    before = lm_eval_log(tmp_path / "pro", "mmlu_pro_biology", [({"question_id": int(q), "options": []}, p)
                                                                 for q, p in BEFORE.items()])
    after = lm_eval_log(tmp_path / "plus", "mmlu_pro_plus", [({"id": f"mmlu_pro/test/{q}"}, p) for q, p in AFTER.items()])
    report = mm.compute(hand_items(), read_predictions([before.parent]), read_predictions([after.parent]))
    assert [m.model for m in report.models] == ["org/model-7b"]
    assert (report.models[0].ssr_wrong, report.models[0].cpi) == (1 / 3, 1.0)
    bad = lm_eval_log(tmp_path / "bad", "t", [({"question": "?"}, "A")])  # its doc_id 0 is a row, not a question
    with pytest.raises(UserError, match=r"none of the 1 predictions names a question of the dataset by 'question_id' "
                                        r"or record 'id' \(after\): \{'no_match': 1\}"):
        mm.compute(hand_items(), read_predictions([before.parent]), read_predictions([bad]))


def test_command_on_a_built_release(tmp_path, capsys):
    from test_mmlu_pro_plus import source_rows

    import builders.mmlu_pro_plus as mmlu_pro_plus

    source = write_jsonl(tmp_path / "src" / "test.jsonl", source_rows()).parent
    assert mmlu_pro_plus.main(["--source", str(source), "--ratios", "0:1:1:1", "--output", str(tmp_path / "rel")]) == 0
    rows = source_rows()
    before = write_jsonl(tmp_path / "before.jsonl", [{"question_id": r["question_id"], "model": "perfect",
                                                      "pred": r["answer"]} for r in rows])
    # On MMLU-Pro+ the perfect model still gives the original letter: right for every group without TPP.
    after = write_jsonl(tmp_path / "after.jsonl", [{"id": f"mmlu_pro/test/{r['question_id']}", "model": "perfect",
                                                    "pred": r["answer_index"]} for r in rows])
    argv = ["--dataset", str(tmp_path / "rel"), "--before", str(before), "--after", str(after), "--output", str(tmp_path / "m")]
    assert metrics.main(["mmlu-pro-plus", *argv]) == 0
    data = json.loads((tmp_path / "m" / "mmlu_pro_plus_metrics.json").read_text())
    [m] = data["models"]
    assert m["overall"] == {"items": 35, "correct_before": 35, "correct_after": 35, "accuracy_before": 1.0,
                            "accuracy_after": 1.0, "drop": 0.0}
    assert {g: v["items"] for g, v in m["groups"].items()} == {TPP: 0, PFPP: 12, CFPP: 12, UNCHANGED: 11}
    assert (m["ssr_wrong"], m["ssr_partial"], m["cpi"], m["cpi_denominator"]) == (None, None, None, 0)
    assert m["groups"][TPP]["accuracy_after"] is None
    out = capsys.readouterr().out
    assert "| perfect | all | 35 | 100.0% | 100.0% | 0.0% |" in out
    assert (tmp_path / "m" / "mmlu_pro_plus_metrics.md").read_text() in out
    # One spelling of the command: the builder's own `metrics` alias is gone, and says so in one line.
    assert mmlu_pro_plus.main(["metrics", *argv]) == 2


def test_ranking_reads_the_mmlu_pro_predictions_that_mmlu_pro_plus_reads(tmp_path):
    """MMLU-Pro's own result rows ``{question_id, model, pred}`` (letters) are read by both metrics
    commands; ranking maps a question_id to the release record that carries it."""
    from test_mmlu_pro_plus import source_rows

    import builders.mmlu_pro_plus as mmlu_pro_plus
    import builders.perturbations as perturbations

    rows = source_rows()
    source = write_jsonl(tmp_path / "src" / "test.jsonl", rows).parent
    assert mmlu_pro_plus.main(["--source", str(source), "--ratios", "0:1:1:1", "--output", str(tmp_path / "plus")]) == 0
    assert perturbations.main(["--benchmark", "mmlu_pro", "--source", str(source), "--only", "shuffle",
                               "--output", str(tmp_path / "perturbed")]) == 0
    mmlu_pro = write_jsonl(tmp_path / "mmlu_pro_test.jsonl", [
        {"question_id": r["question_id"], "model": model, "pred": pred}
        for r in rows for model, pred in (("perfect", r["answer"]), ("always_a", "A"), ("silent", None))])
    ranking = ["ranking", "--dataset", str(tmp_path / "perturbed"), "--original", str(mmlu_pro), "--perturbed",
               str(mmlu_pro), "--perturbed-config", "original", "--output", str(tmp_path / "ranking")]
    assert metrics.main(ranking) == 0
    result = json.loads((tmp_path / "ranking" / "ranking.json").read_text())
    at_a = 100 * sum(r["answer_index"] == 0 for r in rows) / len(rows)
    assert result["items"] == len(rows) == 35
    assert {m["model"]: m["accuracy_before"] for m in result["models"]} == {"perfect": 100.0, "always_a": at_a,
                                                                           "silent": 0.0}
    after = write_jsonl(tmp_path / "plus.jsonl", [{"id": f"mmlu_pro/test/{r['question_id']}", "model": model,
                                                   "output": r["answer_index"] if model == "perfect" else pred}
                                                  for r in rows for model, pred in (("perfect", 0), ("always_a", 0),
                                                                                    ("silent", None))])
    assert metrics.main(["mmlu-pro-plus", "--dataset", str(tmp_path / "plus"), "--before", str(mmlu_pro),
                         "--after", str(after), "--output", str(tmp_path / "m")]) == 0
    data = json.loads((tmp_path / "m" / "mmlu_pro_plus_metrics.json").read_text())
    assert {m["model"]: m["overall"]["correct_before"] for m in data["models"]} == \
        {"always_a": sum(r["answer_index"] == 0 for r in rows), "perfect": 35, "silent": 0}


def test_added_option_before_the_originals_shifts_their_letters_and_categories_are_tallied():
    # q7: added option at B, so MMLU-Pro's C (the answer) is D on MMLU-Pro+: staying on it is SSR_partial.
    # q8: added at A, MMLU-Pro's wrong D is E on MMLU-Pro+: staying on it is SSR_wrong. q9: PFPP, right on both.
    items = mm.items_by_question([
        mm.PlusItem("7", "mmlu_pro/test/7", TPP, 5, 2, 4, 6, 5, added_option=1, category="math"),
        mm.PlusItem("8", "mmlu_pro/test/8", TPP, 5, 0, 4, 6, 5, added_option=0, category="math"),
        mm.PlusItem("9", "mmlu_pro/test/9", PFPP, 1, 1, 4, 5, 4, category="law"),
    ])
    [m] = mm.compute(items, preds("m", {"7": "C", "8": "D", "9": "B"}),
                     preds("m", {"7": "D", "8": "E", "9": "B"})).models
    assert (m.tpp_total, m.tpp_stayed_partial, m.tpp_stayed_wrong) == (2, 1, 1)
    assert items["7"].original_answer_after == 3 and items["8"].after_index(3) == 4 and items["9"].after_index(3) == 3
    tallies = {c: (t.items, t.correct_before, t.correct_after) for c, t in m.categories.items()}
    assert tallies == {"math": (2, 1, 0), "law": (1, 1, 1)}
    assert m.to_dict()["categories"]["math"]["drop"] == 0.5
    categories = mm.metrics_tables([m])["Accuracy per category"]
    assert categories.records() == [
        {"model": "m", "category": "law", "items": 1, "MMLU-Pro": 1.0, "MMLU-Pro+": 1.0, "drop": 0.0},
        {"model": "m", "category": "math", "items": 2, "MMLU-Pro": 0.5, "MMLU-Pro+": 0.0, "drop": 0.5}]


def test_item_from_a_row_with_the_hub_columns():
    row = {"id": "mmlu_pro/test/7", "question_id": 7, "answer": "F", "answer_index": 5, "category": "math",
           "modification": TPP, "choices": ["a", "new", "b", "c", "d", "Both b and new are correct"],
           "metadata": {"question_id": 7, "original_answer_index": 1, "pair_option_index": 5, "added_option_index": 1}}
    item = mm.item_from_row(row)
    assert (item.answer, item.original_answer, item.original_options, item.added_option, item.category) == (5, 1, 4, 1, "math")
    assert item.original_answer_after == 2
