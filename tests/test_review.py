"""A source's errors found by the models and by its own duplicates, queued for review, corrected and diffed: model
consensus (``--predictions`` in MMLU-Pro's, lm-eval's and plain layouts), conflicting and exact duplicates, the review
queue (``review.jsonl``, ``review.html`` in a real headless browser), and the loop build, review, correct, rebuild,
diff, each one command, with exact counts (and ``--push``'s changelog and ``diff.json``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fixtures import write_jsonl

from builders import perturbations, wicked
from builders import diff as diff_command
from builders.core.release.diff import diff_releases, read_release
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.consensus import find_suspect_keys
from builders.core.sources.loading import load_source

MODELS = [f"model-{n:02d}" for n in range(22)]
LETTERS = "ABCDEFGHIJ"
# question_id -> (question, options, key); the comments say what each item is for
ITEMS = {
    10: ("Which gas do plants take in?", ["Oxygen", "Nitrogen", "Carbon dioxide", "Helium"], 0),  # key wrong: 21 of 22 say C
    11: ("What is 7 x 6?", ["40", "42", "44", "48"], 1),  # 17 of 22 against the key: 77%, noise
    12: ("What is the capital of Peru?", ["Lima", "Quito", "Bogota", "Santiago"], 0),  # all agree with the key
    13: ("Which planet is largest?", ["Mars", "Jupiter", "Venus", "Mercury"], 1),  # exact duplicate of 14
    14: ("which planet is  largest", ["Jupiter", "Mars", "Mercury", "Venus"], 0),
    15: ("What is the capital of France?", ["Paris", "Lyon", "Nice", "Lille"], 0),  # conflicts with 16
    16: ("What is the capital of France", ["Paris", "Lyon", "Nice", "Lille"], 1),
    17: ("Compute 100 / 0.768 to one decimal.", ["128.1", "130.2", "128.10", "12.8"], 1),  # twins: copied unchanged
    18: ("What is 3 + 4?", ["6", "7", "8", "9"], 1),
    19: ("Which metal is liquid at room temperature?", ["Iron", "Mercury", "Gold", "Zinc"], 1),
}


def write_mmlu_pro(root: Path) -> Path:
    rows = [{"question_id": qid, "question": q, "options": options, "answer": LETTERS[key], "answer_index": key,
             "cot_content": "", "category": "other", "src": "test"} for qid, (q, options, key) in ITEMS.items()]
    write_jsonl(root / "mmlu_pro" / "test.jsonl", rows)
    return root / "mmlu_pro"


def answers(qid: int) -> list[int]:
    """What the 22 models answer to an item (option indices)."""
    _, options, key = ITEMS[qid]
    if qid == 10:
        return [2] * 21 + [0]
    if qid == 11:
        return [0] * 17 + [1] * 5
    return [key] * 22


def write_mmlu_pro_predictions(path: Path) -> Path:
    """MMLU-Pro's published layout: {question_id, model, pred} with a letter, null when no answer was extracted."""
    rows = [{"question_id": qid, "model": model, "pred": LETTERS[a] if not (qid == 18 and n == 0) else None}
            for qid in ITEMS for n, (model, a) in enumerate(zip(MODELS, answers(qid), strict=True))]
    return write_jsonl(path, rows)


def write_plain_text_predictions(path: Path) -> Path:
    """Plain JSON lines that name the item by its question and give the option's text as ``answer``."""
    rows = [{"model": model, "question": ITEMS[qid][0], "answer": ITEMS[qid][1][a]}
            for qid in (10, 11, 12) for model, a in zip(MODELS, answers(qid), strict=True)]
    return write_jsonl(path, rows)


def write_lm_eval_logs(folder: Path) -> Path:
    """lm-eval sample logs of an MMLU-Pro multiple-choice task, one model per folder (its results file names it)."""
    for model in MODELS:
        rows = []
        for doc_id, qid in enumerate((10, 11, 12)):
            question, options, key = ITEMS[qid]
            chosen = answers(qid)[MODELS.index(model)]
            logliks = [[-1.0 if i == chosen else -5.0, False] for i in range(len(options))]
            rows.append({"doc_id": doc_id, "doc": {"question_id": qid, "question": question, "options": options,
                                                   "answer_index": key}, "target": key, "filtered_resps": logliks,
                         "resps": [[pair] for pair in logliks], "acc": float(chosen == key),
                         "arguments": {f"gen_args_{i}": {"arg_0": question, "arg_1": f" {o}"}
                                       for i, o in enumerate(options)}})
        stamp = "2025-01-01T00-00-00.000000"
        write_jsonl(folder / model / f"samples_mmlu_pro_mc_{stamp}.jsonl", rows)
        (folder / model / f"results_{stamp}.json").write_text(json.dumps({"model_name": model}))
    return folder


def build(source: Path, out: Path, *extra: str, builder=wicked) -> int:
    options = ("--sba-classifier", "none", "--variants", "2") if builder is wicked else ()
    return builder.main(["--benchmark", "mmlu_pro", "--source", str(source), *options, "--output", str(out), *extra])


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture()
def mmlu_pro(tmp_path) -> Path:
    return write_mmlu_pro(tmp_path / "data")


@pytest.mark.parametrize("layout", ["mmlu_pro", "plain_text", "lm_eval"])
def test_the_three_layouts_give_the_same_votes_and_the_rule_flags_only_near_unanimity(tmp_path, mmlu_pro, layout):
    writers = {"mmlu_pro": lambda: write_mmlu_pro_predictions(tmp_path / "p.jsonl"),
               "plain_text": lambda: write_plain_text_predictions(tmp_path / "p.jsonl"),
               "lm_eval": lambda: write_lm_eval_logs(tmp_path / "logs")}
    source = load_source(BENCHMARKS["mmlu_pro"], str(mmlu_pro))
    found = find_suspect_keys(source, [str(writers[layout]())], keep=False)
    assert found.models == 22
    assert found.votes["mmlu_pro/test/10"].counts == (1, 0, 21, 0)
    assert found.votes["mmlu_pro/test/11"].counts == (17, 5, 0, 0)
    assert [s.item.id for s in found.suspects] == ["mmlu_pro/test/10"]  # 95% flagged, 77% not
    assert [(c.id, c.action, c.reason, c.by) for c in found.corrections] == [
        ("mmlu_pro/test/10", "exclude", "suspect_key", "consensus")]


def test_wicked_excludes_suspect_keys_and_conflicts_counts_duplicates_and_queues_them(tmp_path, mmlu_pro):
    predictions = write_mmlu_pro_predictions(tmp_path / "p.jsonl")
    out = tmp_path / "v1"
    assert build(mmlu_pro, out, "--predictions", str(predictions)) == 0
    excluded = {e["id"]: e for e in lines(out / "exclusions.jsonl")}
    assert set(excluded) == {"mmlu_pro/test/10", "mmlu_pro/test/15", "mmlu_pro/test/16"}
    assert (excluded["mmlu_pro/test/10"]["reason"], excluded["mmlu_pro/test/10"]["detail"]) == (
        "suspect_key", "by consensus")
    assert excluded["mmlu_pro/test/15"]["reason"] == "conflicting_duplicate"
    assert "mmlu_pro/test/16" in excluded["mmlu_pro/test/15"]["detail"]
    assert "mmlu_pro/test/15" in excluded["mmlu_pro/test/16"]["detail"]
    report = json.loads((out / "validation_report.json").read_text())
    assert report["counts"]["variant_0"]["test"] == {"in": 10, "out": 7, "excluded": 3}
    card = (out / "README.md").read_text()
    assert "### Suspect keys (model consensus)" in card and "at least 90% of the models" in card
    # the conflicting pair is out before the models are counted
    assert "22 models answered 8 of the 8 items" in card and "1 item (12.5%) is suspect" in card
    assert "2 items are 1 questions asked more than once" in card and "mmlu_pro/test/13, mmlu_pro/test/14" in card
    assert "### Conflicting duplicates in the source" in card
    queue = lines(out / "review.jsonl")
    assert [(e["id"], e["evidence"]["queued_for"], e["evidence"]["status"]) for e in queue] == [
        ("mmlu_pro/test/10", "suspect_key", "excluded"), ("mmlu_pro/test/15", "conflicting_duplicate", "excluded"),
        ("mmlu_pro/test/16", "conflicting_duplicate", "excluded")]
    suspect = queue[0]
    assert (suspect["action"], suspect["answer"], suspect["by"]) == ("", None, "")
    assert suspect["evidence"]["votes"] == {"A": 1, "C": 21}
    assert suspect["evidence"]["suggestion"] == {"action": "set_answer", "answer": 2}
    assert suspect["evidence"]["item"]["choices"][2] == "Carbon dioxide"
    twins = [r for r in read_release(out).items["variant_0"]["test"].items() if r[0] == "mmlu_pro/test/17"]
    assert twins[0][1].choices == tuple(ITEMS[17][1])  # "128.1" and "128.10": copied unchanged


def test_keep_suspect_keys_keeps_them_and_still_lists_them(tmp_path, mmlu_pro):
    predictions = write_mmlu_pro_predictions(tmp_path / "p.jsonl")
    out = tmp_path / "kept"
    assert build(mmlu_pro, out, "--predictions", str(predictions), "--keep-suspect-keys") == 0
    assert "mmlu_pro/test/10" in read_release(out).items["original"]["test"]
    assert "mmlu_pro/test/10" not in {e["id"] for e in lines(out / "exclusions.jsonl")}
    assert lines(out / "review.jsonl")[0]["evidence"]["status"] == "kept"
    assert "they are kept (--keep-suspect-keys)" in (out / "README.md").read_text()


def test_perturbations_read_predictions_too(tmp_path, mmlu_pro):
    predictions = write_mmlu_pro_predictions(tmp_path / "p.jsonl")
    out = tmp_path / "perturbed"
    assert build(mmlu_pro, out, "--predictions", str(predictions), builder=perturbations) == 0
    assert {e["id"] for e in lines(out / "exclusions.jsonl") if e["reason"] == "suspect_key"} == {"mmlu_pro/test/10"}


def test_build_review_correct_rebuild_diff_round_trips_with_exact_counts(tmp_path, mmlu_pro, capsys):
    predictions = write_mmlu_pro_predictions(tmp_path / "p.jsonl")
    first, second = tmp_path / "v1.0.0", tmp_path / "v1.1.0"
    assert build(mmlu_pro, first, "--predictions", str(predictions)) == 0
    # the reviewer takes the models' answer for the suspect, keeps 15's key, and excludes 18 too
    reviewed = []
    for entry in lines(first / "review.jsonl"):
        if entry["id"] == "mmlu_pro/test/10":
            entry.update(action="set_answer", answer=entry["evidence"]["suggestion"]["answer"],
                         reason="wrong key: plants take in carbon dioxide", by="jo")
        elif entry["id"] == "mmlu_pro/test/15":
            entry.update(action="set_answer", answer="Paris", reason="the capital is Paris", by="jo")
        elif entry["id"] == "mmlu_pro/test/16":
            entry.update(action="exclude", reason="duplicate with a wrong key", by="jo")
        reviewed.append(entry)
    reviewed.append({"id": "mmlu_pro/test/18", "action": "exclude", "reason": "too easy", "by": "jo"})
    corrections = write_jsonl(tmp_path / "reviewed.jsonl", reviewed)
    assert build(mmlu_pro, second, "--predictions", str(predictions), "--corrections", str(corrections)) == 0
    assert lines(second / "review.jsonl") == []  # every queued item was decided
    capsys.readouterr()
    assert diff_command.main([str(first), str(second), "--output", str(tmp_path / "diff.json"), "--list"]) == 0
    printed = capsys.readouterr().out
    diff = json.loads((tmp_path / "diff.json").read_text())
    for config in ("original", "variant_0", "variant_1"):
        found = diff["configs"][config]["test"]
        assert (found["counts"]["added"], found["counts"]["removed"]) == (2, 1), config
        assert [a["id"] for a in found["added"]] == ["mmlu_pro/test/10", "mmlu_pro/test/15"]
        assert found["added"][0]["reason"] == "correction by jo: wrong key: plants take in carbon dioxide"
        assert found["removed"] == [{"id": "mmlu_pro/test/18", "reason": "excluded: too easy (by jo)"}]
        assert found["counts"]["changed"] == 0 and found["counts"]["unchanged"] == 6
    assert "original/test added mmlu_pro/test/10: correction by jo" in printed
    assert "every config test: 2 added, 1 removed, 0 changed" in printed
    assert diff_releases(read_release(second), read_release(second))["totals"]["unchanged"] == 3 * 8


def test_a_key_corrected_in_place_is_a_change_of_key_with_its_reason(tmp_path, mmlu_pro):
    first, second = tmp_path / "a", tmp_path / "b"
    assert build(mmlu_pro, first) == 0
    fix = write_jsonl(tmp_path / "fix.jsonl", [{"id": "mmlu_pro/test/12", "action": "set_answer", "answer": 1,
                                               "reason": "test", "by": "ann"}])
    assert build(mmlu_pro, second, "--corrections", str(fix)) == 0
    diff = diff_releases(read_release(first), read_release(second))
    original = diff["configs"]["original"]["test"]
    assert original["counts"] == {"added": 0, "removed": 0, "changed": 1, "changed_text": 0, "changed_options": 0,
                                  "changed_key": 1, "unchanged": 7}
    assert original["changed"] == [{"id": "mmlu_pro/test/12", "changes": ["key"], "reason": "correction by ann: test",
                                    "key": [0, 1]}]


@pytest.mark.slow
def test_a_push_over_an_earlier_tag_puts_the_diff_in_the_changelog_and_the_release(local_hub, tmp_path, mmlu_pro):
    repo = "mcqforge/wicked-mmlu-pro-review"
    assert wicked.main(["--benchmark", "mmlu_pro", "--source", str(mmlu_pro), "--sba-classifier", "none",
                        "--variants", "1", "--push", repo, "--version", "1.0.0"]) == 0
    fix = write_jsonl(tmp_path / "fix.jsonl", [{"id": "mmlu_pro/test/18", "action": "exclude", "reason": "easy",
                                               "by": "jo"}])
    assert wicked.main(["--benchmark", "mmlu_pro", "--source", str(mmlu_pro), "--sba-classifier", "none",
                        "--variants", "1", "--corrections", str(fix), "--push", repo, "--version", "1.1.0"]) == 0
    released = json.loads(local_hub.file_at(repo, "v1.1.0", "diff.json"))
    assert released["old"] == f"{repo}@v1.0.0"
    assert released["configs"]["variant_0"]["test"]["removed"] == [{"id": "mmlu_pro/test/18",
                                                                     "reason": "excluded: easy (by jo)"}]
    card = local_hub.file_at(repo, "v1.1.0", "README.md").decode()
    assert "Against v1.0.0: every config test: 0 added, 1 removed, 0 changed; reasons: excluded: easy (1)." in card


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no headless browser (CI installs Debian's chromium)")
def test_review_page_shows_each_queued_item_with_its_evidence_in_a_real_browser(tmp_path, mmlu_pro):
    predictions = write_mmlu_pro_predictions(tmp_path / "p.jsonl")
    out = tmp_path / "v1"
    assert build(mmlu_pro, out, "--predictions", str(predictions)) == 0
    page = out / "review.html"
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text and "<script" not in text  # readable offline
    dom = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                          page.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "3 items to review" in dom
    assert dom.count("<article") == 3
    assert '<li class="key">A. Oxygen (key)</li>' in dom
    assert '<li class="agreed">C. Carbon dioxide (suggested)</li>' in dom
    assert "A: 1, C: 21" in dom
    assert "same_question_as" in dom and "mmlu_pro/test/16" in dom


def test_a_missing_predictions_file_is_one_error_before_the_source_is_read(tmp_path, capsys):
    assert build(tmp_path / "no-source", tmp_path / "out", "--predictions", str(tmp_path / "none.jsonl")) == 2
    assert capsys.readouterr().err.strip() == f"error: --predictions {tmp_path / 'none.jsonl'}: no such file or folder"


def test_sba_scores_near_the_threshold_are_queued_with_the_score():
    from builders.core.items.record import MCQRecord
    from builders.wicked.sba import SBADecisions, SBAVerdict, near_threshold, sba_key

    records = [MCQRecord(f"mmlu/test/{i}", f"Question {i}?", ("a", "b", "c", "d"), 0, "s", "c", "test", i)
               for i in range(3)]
    scores = [0.47, 0.8, 0.53]
    sba = SBADecisions({sba_key(r): SBAVerdict(s >= 0.5, s) for r, s in zip(records, scores, strict=True)}, None)
    entries = near_threshold(records, sba, 0.5)
    assert [(e.id, e.status, e.evidence["sba_score"]) for e in entries] == [
        ("mmlu/test/0", "altered", 0.47), ("mmlu/test/2", "copied unchanged (SBA)", 0.53)]
    assert entries[0].to_json()["action"] == "" and entries[0].to_json()["reason"] == "sba_near_threshold"
    assert near_threshold(records, sba, None) == []
