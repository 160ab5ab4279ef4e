"""MMLU-Pro+: rejection rules, exact group counts with fallbacks, answer tracking, determinism, audit, Hub.

TPP options come from a real HTTP server (llmock) answering by question; the similarity rule uses the real
packaged all-MiniLM-L6-v2 (loaded once per test process).
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
from collections import Counter
from pathlib import Path

import datasets
import pytest
from sample_releases import EMBEDDER_GROUP
from fixtures import outcome_rows, read_lm_eval_task, write_jsonl
from llm_server import ScriptedError, fast_client

import builders.mmlu_pro_plus as mpp
from builders.core.errors import UserError, ValidationFailed
from builders.core.items.outcomes import ExclusionLog
from builders.core.items.record import MCQRecord
from builders.core.pipeline.steps import Run
from builders.core.sources.loading import load_source
from builders.core.validation.validate import validate
from builders.mmlu_pro_plus.audit import AUDIT_FIELDS, wilson_interval
from builders.mmlu_pro_plus.baselines import first_named_member, pair_if_just_before, pair_if_twelve_options
from builders.mmlu_pro_plus.card_statistics import pair_counts
from builders.mmlu_pro_plus.generation import (
    Proposal,
    TPPGenerator,
    max_option_chars,
    normalize_option,
    parse_reply,
    rejection_reason,
)
from builders.mmlu_pro_plus.groups import CFPP, GROUPS, PFPP, TPP, UNCHANGED, apportion, parse_ratios, with_group
from builders.mmlu_pro_plus.layout import (
    can_take,
    make_cfpp,
    make_pfpp,
    make_tpp,
    pair_order,
    pair_text,
    pairable,
    tpp_position,
    wrong_pairable,
)
from builders.mmlu_pro_plus.similarity import CALIBRATION_PAIRS, DEFAULT_SIMILARITY_CUTOFF, SimilarityScorer
from builders.mmlu_pro_plus.source import MMLU_PRO

pytestmark = EMBEDDER_GROUP  # its tests embed texts

LETTERS = "ABCDEFGHIJKL"


def row(qid: int, question: str, options: list[str], answer: int, category: str) -> dict:
    return {"question_id": qid, "question": question, "options": options, "answer": LETTERS[answer],
            "answer_index": answer, "cot_content": "", "category": category, "src": "test"}


def math_rows() -> list[dict]:
    rows = []
    for k in range(20):
        product = (k + 2) * 3
        options = [str(product + d) for d in (-2, -1, 0, 1, 2)]
        shift = k % 5  # rotate so that the answer sits at every position
        rows.append(row(1000 + k, f"What is {k + 2} times 3?", options[shift:] + options[:shift], (2 - shift) % 5, "math"))
    return rows


# question -> reply: JSON text, a ScriptedError, or a list of replies for successive calls.
TOO_LONG = "A remarkably long and wordy description that goes on " * 4
REPLIES: dict[str, object] = {
    **{f"What is {k + 2} times 3?": json.dumps({"option": f"{(k + 2) * 12}/4", "rationale": "x"}) for k in range(20)},
    "Which condition is a persistently raised arterial pressure?": json.dumps({"option": "Hypertension"}),
    "Which organelle makes most of a cell's ATP?": json.dumps({"option": "The powerhouse of the cell"}),
    "At what temperature does water boil at sea level?": "The answer is 212 F, obviously",
    "At what temperature does water freeze at sea level?": ["not json at all", json.dumps({"option": "32 F"})],
    "Which gas do plants take in?": ScriptedError(400, message="bad request"),
    "Which metal is liquid at room temperature?": json.dumps({"option": "   "}),
    "What does a rise in price do to quantity supplied?": json.dumps({"option": "Both of the listed effects"}),
    "Which planet is largest?": json.dumps({"option": "Same as option B"}),
    "Which ocean is largest?": json.dumps({"option": "None of the above"}),
    "Who wrote the Ninety-five Theses?": json.dumps({"option": TOO_LONG.strip()}),
    "What is 4 plus 5?": json.dumps({"option": "9.0"}),
    "What does a fall in consumer income do to demand for a normal good?": json.dumps({"option": "reduction in demand"}),
}
EXPECTED_REJECTIONS = {
    "At what temperature does water boil at sea level?": "malformed_reply",
    "Which gas do plants take in?": "llm_error",
    "Which metal is liquid at room temperature?": "empty",
    "What does a rise in price do to quantity supplied?": "contains_both",
    "Which planet is largest?": "letter_reference",
    "Which ocean is largest?": "refers_to_other_options",
    "Who wrote the Ninety-five Theses?": "too_long",
    "What is 4 plus 5?": "duplicate",
    "What does a fall in consumer income do to demand for a normal good?": "too_similar",
}


def source_rows() -> list[dict]:
    return math_rows() + [
        row(2000, "Which condition is a persistently raised arterial pressure?",
            ["Hypotension", "Increased blood pressure", "Anemia", "Bradycardia"], 1, "health"),
        row(2001, "Which organelle makes most of a cell's ATP?",
            ["Ribosome", "Endoplasmic reticulum", "Mitochondrion", "Lysosome", "Nucleus"], 2, "biology"),
        row(2002, "At what temperature does water boil at sea level?", ["50 C", "100 C", "150 C", "200 C"], 1, "chemistry"),
        row(2003, "At what temperature does water freeze at sea level?", ["0 C", "10 C", "-10 C", "4 C"], 0, "chemistry"),
        row(2004, "Which gas do plants take in?", ["Oxygen", "Carbon dioxide", "Helium", "Neon"], 1, "biology"),
        row(2005, "Which metal is liquid at room temperature?", ["Iron", "Mercury", "Copper", "Zinc"], 1, "chemistry"),
        row(2006, "What does a rise in price do to quantity supplied?",
            ["It falls", "It rises", "It stays the same", "It becomes zero"], 1, "economics"),
        row(2007, "Which planet is largest?", ["Mars", "Jupiter", "Venus", "Mercury"], 1, "physics"),
        row(2008, "Which ocean is largest?", ["Atlantic", "Indian", "Pacific", "Arctic"], 2, "other"),
        row(2009, "Who wrote the Ninety-five Theses?", ["Martin Luther", "John Calvin", "Erasmus", "Thomas More"], 0, "history"),
        row(2010, "What is 4 plus 5?", ["7", "8", "9", "10"], 2, "math"),
        row(2011, "What does a fall in consumer income do to demand for a normal good?",
            ["increase in demand", "decrease in demand", "no change in demand", "doubling of demand"], 1, "economics"),
        row(2012, "Which of these is a primary color?", ["Red", "Brown", "Pink", "None of the above"], 0, "other"),
        row(2013, "Which numbers are odd?", ["1", "2", "Both 1 and 3 are correct", "4"], 2, "math"),
        row(2014, "Which letter comes first in the alphabet?", ["A", "B", "C", "D"], 0, "other"),
    ]


def responder(calls: Counter):
    def respond(call):
        question = call.user_text.split("Question:\n", 1)[1].split("\n\nOptions:", 1)[0]
        reply = REPLIES[question]
        calls[question] += 1
        if isinstance(reply, list):
            return reply[min(calls[question], len(reply)) - 1]
        return reply
    return respond


@pytest.fixture
def source_dir(tmp_path) -> Path:
    return write_jsonl(tmp_path / "src" / "test.jsonl", source_rows()).parent


@pytest.fixture
def scripted(llm_server):
    calls: Counter = Counter()
    llm_server.respond_with(responder(calls))
    llm_server.calls = calls
    return llm_server


def build_argv(server, source: Path, cache: Path, out: Path | None, *extra: str) -> list[str]:
    argv = ["--source", str(source), "--llm-model", "mock-model", "--base-url", server.openai_base_url,
            "--api-key-env", "none", "--cache-dir", str(cache), "--llm-concurrency", "4", *extra]
    return argv + (["--output", str(out)] if out else [])


def build(server, source: Path, cache: Path, *extra: str):
    """The build (not yet validated) that the command line's words give, as the core makes it."""
    options = mpp.BUILDER.options_from(build_argv(server, source, cache, None, *extra))
    return mpp.BUILDER.make_build(load_source(MMLU_PRO, str(source)), options)


def records_by_question(build_) -> dict[str, MCQRecord]:
    return {r.question: r for r in build_.configs["default"]["test"]}


def parquet_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


# ---- rejection rules, one by one -------------------------------------------------------------------------


def record(choices, answer=0, category="other") -> MCQRecord:
    return MCQRecord("x/1", "Q?", tuple(choices), answer, "s", "c", "test", 0, category=category)


@pytest.mark.parametrize("option, reason", [
    ("", "empty"),
    ("Both are right", "contains_both"),
    ("it holds for both species", "contains_both"),
    ("Same as option C", "letter_reference"),
    ("(B)", "letter_reference"),
    ("B", "letter_reference"),
    ("the value in (C), doubled", "letter_reference"),
    ("A and C", "letter_reference"),
    ("None of the above", "refers_to_other_options"),
    ("All of the above", "refers_to_other_options"),
    ("x" * 26, "too_long"),
    ("nine", None),
    ("9.0", "duplicate"),
    (" 9. ", "duplicate"),
    ("ELEVEN", "duplicate"),
    ("1,000", "duplicate"),
    ("P(A) = 9", None),
    ("36/4", None),
])
def test_rejection_rules(option, reason):
    item = record(["9", "eleven", "1000", "7"])
    found = rejection_reason(option, item, max_chars=16)
    assert (found[0] if found else None) == reason


def test_length_limit_follows_the_longest_option():
    assert max_option_chars(record(["9", "eleven", "1000", "7"]), 1.5, 10) == 16  # 6 + 10 > ceil(1.5 * 6)
    assert max_option_chars(record(["a" * 100, "b"]), 1.5, 10) == 150


def test_number_formats_normalise_to_one_option():
    assert {normalize_option(t) for t in ["9", "9.0", "9.", " 9 ", "+9", "9.000", "09"]} == {"9"}
    assert normalize_option("1,000.50") == "1000.5"
    assert normalize_option("Paris.") == normalize_option("  paris ") == "paris"
    assert normalize_option("36/4") == "36/4"


def test_reply_parsing():
    assert parse_reply('{"option": "36/4", "rationale": "x"}') == "36/4"
    assert parse_reply('```json\n{"option": "36/4"}\n```') == "36/4"
    for bad in ["36/4", '{"answer": "36/4"}', '["36/4"]', '{"option": 9}', ""]:
        with pytest.raises(ValueError):
            parse_reply(bad)


def test_similarity_cutoff_separates_the_calibration_pairs(tmp_path):
    scorer = SimilarityScorer(None, tmp_path)
    restatements = scorer.scores(CALIBRATION_PAIRS["restatement"])
    acceptable = scorer.scores(CALIBRATION_PAIRS["acceptable"])
    assert min(restatements) >= DEFAULT_SIMILARITY_CUTOFF > max(acceptable)
    assert scorer.computed == 14
    again = SimilarityScorer(None, tmp_path)  # a fresh scorer reads the cache and never embeds
    assert again.scores(CALIBRATION_PAIRS["restatement"]) == restatements and again.computed == 0


def test_every_rejection_rule_through_the_llm(scripted, source_dir, tmp_path):
    source = load_source(MMLU_PRO, str(source_dir))
    records = [r for r in source.items["test"] if r.question in REPLIES]
    generator = TPPGenerator(fast_client(scripted, cache_dir=tmp_path / "llm"), SimilarityScorer(None, tmp_path),
                                 frozenset({"math"}), 0.85, 1.5, 10, 300)
    proposals = {r.question: p for r, p in zip(records, generator.propose(records), strict=True)}
    reasons = {q: p.reason for q, p in proposals.items() if not p.accepted}
    assert reasons == EXPECTED_REJECTIONS
    assert proposals["At what temperature does water freeze at sea level?"].option == "32 F"  # recovered on retry
    assert proposals["What is 4 plus 5?"].detail == "of option C"
    assert proposals["Which condition is a persistently raised arterial pressure?"].similarity == pytest.approx(0.7149, abs=2e-3)
    assert proposals["What is 2 times 3?"].template_version == "tpp-math-v1"
    assert proposals["Which planet is largest?"].template_version == "tpp-general-v1"
    # malformed twice (one parse retry), the freeze question twice, every other question once
    assert len(scripted.chat_requests) == len(records) + 2
    body = scripted.chat_bodies[0]
    assert body["response_format"] == {"type": "json_object"} and body["temperature"] == 0.0


# ---- groups and answer tracking ------------------------------------------------------------------------------


def test_apportion_and_ratios():
    paper = parse_ratios("3718:2124:2029:4161")
    assert apportion(12032, paper) == {TPP: 3718, PFPP: 2124, CFPP: 2029, UNCHANGED: 4161}
    assert apportion(12014, paper) == {TPP: 3712, PFPP: 2121, CFPP: 2026, UNCHANGED: 4155}
    assert apportion(3, parse_ratios("1:1:1:1")) == {TPP: 1, PFPP: 1, CFPP: 1, UNCHANGED: 0}
    for bad in ["1:2:3", "a:b:c:d", "0:0:0:0", "-1:1:1:1"]:
        with pytest.raises(UserError):
            parse_ratios(bad)


def test_answer_tracking_in_all_four_groups():
    original = record(["1", "9", "12", "15"], answer=1, category="math")
    tpp = make_tpp(original, Proposal("x/1", "tpp-math-v1", "36/4", similarity=0.4039), "gpt-4o")
    assert tpp.choices == ("1", "9", "12", "15", "36/4", "Both 9 and 36/4 are correct") and tpp.answer == 5
    assert {k: tpp.metadata[k] for k in ("pair_indices", "pair_option_index", "original_answer_index",
                                         "added_option_index", "generator_model", "template_version")} == {
        "pair_indices": [1, 4], "pair_option_index": 5, "original_answer_index": 1, "added_option_index": 4,
        "generator_model": "gpt-4o", "template_version": "tpp-math-v1"}
    assert tpp.columns == {"modification": TPP, "is_modified": True, "is_modified_non_llm": False,
                           "modification_type_non_llm": None}

    pfpp = make_pfpp(original, seed=0)
    assert pfpp.choices[:4] == original.choices and pfpp.answer == 1 and pfpp.gold == "9"
    x, y = pfpp.metadata["pair_indices"]
    assert x == 1 and y in (0, 2, 3) and pfpp.choices[4] == f"Both 9 and {original.choices[y]} are correct"
    assert pfpp.metadata["added_option_index"] is None and pfpp.metadata["pair_option_index"] == 4
    assert pfpp.columns["modification_type_non_llm"] == "correct_and_wrong" and pfpp.columns["is_modified_non_llm"]

    cfpp = make_cfpp(original, seed=0)
    x, y = cfpp.metadata["pair_indices"]
    assert cfpp.answer == 1 and cfpp.gold == "9" and 1 not in (x, y) and x != y
    assert cfpp.choices[4] == f"Both {original.choices[x]} and {original.choices[y]} are correct"
    assert cfpp.columns["modification_type_non_llm"] == "two_wrong" and not cfpp.columns["is_modified"]

    unchanged = with_group(original, UNCHANGED)
    assert (unchanged.choices, unchanged.answer, unchanged.metadata["pair_indices"]) == (original.choices, 1, None)
    assert unchanged.columns == {"modification": UNCHANGED, "is_modified": False, "is_modified_non_llm": False,
                                 "modification_type_non_llm": None}
    # Pinned draws: a change of RNG or algorithm would silently change every published dataset.
    assert (pfpp.metadata["pair_indices"], cfpp.metadata["pair_indices"]) == ([1, 3], [2, 0])


def test_bare_letters_are_never_paired():
    letters = record(["A", "B", "C", "D"])
    assert not any(can_take(g, letters) for g in (TPP, PFPP, CFPP))
    mixed = record(["A", "Paris", "Rome", "B"], answer=1)
    assert wrong_pairable(mixed) == [2] and can_take(PFPP, mixed) and not can_take(CFPP, mixed)


def test_exact_counts_after_fallbacks(scripted, source_dir, tmp_path):
    result = build(scripted, source_dir, tmp_path / "cache", "--ratios", "12:6:6:11")
    records = result.configs["default"]["test"]
    assert Counter(r.columns["modification"] for r in records) == {TPP: 12, PFPP: 6, CFPP: 6, UNCHANGED: 11}
    tried = [r for r in records if r.columns["modification"] == TPP or r.metadata["tpp_rejection"]]
    rejected = [r for r in records if r.metadata["tpp_rejection"]]
    assert all(r.columns["modification"] != TPP for r in rejected)
    assert {r.metadata["tpp_rejection"] for r in rejected} <= set(EXPECTED_REJECTIONS.values())
    assert all(EXPECTED_REJECTIONS[r.question] == r.metadata["tpp_rejection"] for r in rejected)
    retried = sum(r.question in ("At what temperature does water boil at sea level?",
                                 "At what temperature does water freeze at sea level?") for r in tried)
    assert len(scripted.chat_requests) == len(tried) + retried
    by_question = records_by_question(result)
    assert by_question["Which of these is a primary color?"].metadata["ineligible_reason"] == "has_none_of_the_above"
    assert by_question["Which numbers are odd?"].metadata["ineligible_reason"] == "has_pair_option"
    for question in ("Which of these is a primary color?", "Which numbers are odd?", "Which letter comes first in the alphabet?"):
        assert by_question[question].columns["modification"] == UNCHANGED
    for r in records:
        if r.columns["modification"] == TPP:
            assert r.metadata["generator_model"] == "mock-model" and r.gold.startswith("Both ")
            assert r.choices[r.metadata["added_option_index"]] == json.loads(REPLIES[r.question] if not isinstance(
                REPLIES[r.question], list) else REPLIES[r.question][1])["option"]
    report = validate(result)
    assert report.passed and report.counts["default"]["test"] == {"in": 35, "out": 35, "excluded": 0}
    assert result.release.statistics["Modification groups"].row("test", TPP)["built"] == 12


def test_every_rule_falls_back_and_a_shortfall_is_reported(scripted, source_dir, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        result = build(scripted, source_dir, tmp_path / "cache", "--ratios", "30:0:0:5")
    records = result.configs["default"]["test"]
    # 32 questions can take a pair, 9 of them get a rejected option: 23 TPP instead of 30, every candidate asked.
    assert Counter(r.columns["modification"] for r in records) == {TPP: 23, UNCHANGED: 12}
    assert Counter(r.metadata["tpp_rejection"] for r in records if r.metadata["tpp_rejection"]) == Counter(
        EXPECTED_REJECTIONS.values())
    assert "differ from the requested" in caplog.text
    assert result.release.statistics["Modification groups"].row("test", TPP) == {
        "split": "test", "group": TPP, "requested": 30, "built": 23}
    assert result.release.statistics["TPP generation"].row("too_similar")["TPP candidates"] == 1
    lines = [json.loads(line) for line in result.release.extra_files["tpp_rejections.jsonl"].decode().splitlines()]
    assert sorted(line["reason"] for line in lines) == sorted(EXPECTED_REJECTIONS.values())
    assert validate(result).passed


def test_tpp_needs_a_model_before_the_source_is_read(source_dir):
    with pytest.raises(UserError, match="--llm-model"):
        mpp.BUILDER.options_from(["--source", str(source_dir / "missing")])
    options = mpp.BUILDER.options_from(["--source", str(source_dir), "--ratios", "0:1:1:1"])
    no_tpp = mpp.BUILDER.make_build(load_source(MMLU_PRO, str(source_dir)), options)
    assert Counter(r.columns["modification"] for r in no_tpp.configs["default"]["test"]) == {
        PFPP: 12, CFPP: 12, UNCHANGED: 11}


def test_validation_refuses_broken_items(scripted, source_dir, tmp_path):
    result = build(scripted, source_dir, tmp_path / "cache", "--ratios", "12:6:6:11")
    records = result.configs["default"]["test"]
    tpp = next(i for i, r in enumerate(records) if r.columns["modification"] == TPP)
    records[tpp] = records[tpp].replace(answer=records[tpp].metadata["original_answer_index"])
    with pytest.raises(ValidationFailed, match="one_answer"):
        validate(result)
    records[tpp] = records[tpp].replace(answer=len(records[tpp].choices) - 1)
    pfpp = next(i for i, r in enumerate(records) if r.columns["modification"] == PFPP)
    wrong_pair = list(records[pfpp].choices)
    wrong_pair[-1] = "Both Oxygen and Helium are correct"
    records[pfpp] = records[pfpp].replace(choices=wrong_pair)
    with pytest.raises(ValidationFailed, match="pair_names_two_options"):
        validate(result)


# ---- determinism ----------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_build_is_byte_identical_with_a_cold_or_a_warm_reply_cache(scripted, source_dir, tmp_path):
    for out, cache in (("out1", "cache1"), ("out2", "cache2"), ("out3", "cache1")):  # cold, cold, warm
        assert mpp.main(build_argv(scripted, source_dir, tmp_path / cache, tmp_path / out, "--ratios", "12:6:6:11")) == 0
    first = parquet_hashes(tmp_path / "out1")
    assert first == parquet_hashes(tmp_path / "out2") == parquet_hashes(tmp_path / "out3") and len(first) == 2
    loaded = datasets.load_dataset(str(tmp_path / "out1"), "default")["test"]
    assert loaded.num_rows == 35 and loaded.features["is_modified"] == datasets.Value("bool")
    assert (tmp_path / "out1" / "tpp_rejections.jsonl").exists()


# ---- audit ------------------------------------------------------------------------------------------------


def test_audit_export_and_import_into_the_next_card(scripted, source_dir, tmp_path, capsys):
    argv = build_argv(scripted, source_dir, tmp_path / "cache", tmp_path / "v1", "--ratios", "12:6:6:11")
    assert mpp.main(argv) == 0
    assert mpp.main(["export-audit", str(tmp_path / "v1"), "--output", str(tmp_path / "audit"), "--per-group", "4"]) == 0
    with open(tmp_path / "audit" / "audit_sample.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert Counter(r["modification"] for r in rows) == {g: 4 for g in GROUPS}
    assert list(rows[0]) == AUDIT_FIELDS and all(r["verdict"] == "" for r in rows)
    jsonl = [json.loads(line) for line in (tmp_path / "audit" / "audit_sample.jsonl").read_text().splitlines()]
    assert [r["id"] for r in jsonl] == [r["id"] for r in rows]
    tpp = next(r for r in rows if r["modification"] == TPP)
    assert tpp["pair_option"].endswith("are correct") and tpp["answer"] == tpp["pair_option"]
    for r, verdict in zip(rows, ["ok", "ok", "wrong", ""] * 4, strict=False):
        r["verdict"], r["reviewer_notes"] = verdict, "Y is not equal" if verdict == "wrong" else ""
    with open(tmp_path / "audit" / "audit_sample.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=AUDIT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    verdicts = tmp_path / "audit" / "verdicts.json"
    assert mpp.main(["import-audit", str(tmp_path / "audit" / "audit_sample.csv"), "--output", str(verdicts)]) == 0
    summary = json.loads(verdicts.read_text())
    assert summary["groups"][TPP] == {"sampled": 4, "reviewed": 3, "ok": 2, "wrong": 1, "unsure": 0,
                                         "ok_rate": 0.6667, "ok_rate_ci95": wilson_interval(2, 3)}
    assert len(summary["wrong_items"]) == 4 and summary["manifest"]["per_group"] == 4
    assert mpp.main(argv[:-2] + ["--output", str(tmp_path / "v2"), "--audit-verdicts", str(verdicts)]) == 0
    card = (tmp_path / "v2" / "README.md").read_text()
    assert "### Human audit of the previous release" in card and "| true_positive_pair | 4 | 3 | 2 | 1 | 0 | 66.7% |" in card
    assert json.loads((tmp_path / "v2" / "audit" / "previous_release_verdicts.json").read_text()) == summary
    rows[0]["verdict"] = "maybe"
    write_jsonl(tmp_path / "bad.jsonl", rows)
    assert mpp.main(["import-audit", str(tmp_path / "bad.jsonl"), "--output", str(tmp_path / "x.json")]) == 2
    assert "verdicts must be one of ['ok', 'wrong', 'unsure']" in capsys.readouterr().err


# ---- the Hub ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_publish_and_load_back_with_the_compatibility_columns(local_hub, scripted, source_dir, tmp_path):
    repo = "mcqforge/mmlu-pro-plus"
    argv = build_argv(scripted, source_dir, tmp_path / "cache", None, "--ratios", "12:6:6:11")
    assert mpp.main(argv + ["--push", repo, "--version", "1.0.0"]) == 0
    loaded = datasets.load_dataset(repo, "default", revision="v1.0.0")["test"]
    assert loaded.num_rows == 35
    for column in ("modification", "is_modified", "is_modified_non_llm", "modification_type_non_llm"):
        assert column in loaded.column_names
    assert Counter(loaded["modification"]) == {TPP: 12, PFPP: 6, CFPP: 6, UNCHANGED: 11}
    assert Counter(loaded["modification_type_non_llm"]) == {"correct_and_wrong": 6, "two_wrong": 6, None: 23}
    assert sum(loaded["is_modified"]) == 12 and sum(loaded["is_modified_non_llm"]) == 12
    assert "tpp_rejections.jsonl" in local_hub.paths_at(repo, "v1.0.0")


def test_help_lists_the_other_commands(capsys):
    with pytest.raises(SystemExit):
        mpp.main(["--help"])
    assert "other commands: export-audit, import-audit (each with --help)" in capsys.readouterr().out


@pytest.mark.slow
def test_build_config_rebuilds_the_same_release(scripted, source_dir, tmp_path):
    runtime = ["--base-url", scripted.openai_base_url, "--api-key-env", "none", "--cache-dir", str(tmp_path / "cache")]
    assert mpp.main(build_argv(scripted, source_dir, tmp_path / "cache", tmp_path / "out1", "--ratios", "12:6:6:11",
                               "--seed", "3")) == 0
    config = tmp_path / "out1" / "build_config.yaml"
    assert "base_url" not in config.read_text() and "cache_dir" not in config.read_text()
    # the local source is recorded by name and content hash: a rebuild names it again
    assert mpp.main(["--config", str(config), *runtime, "--source", str(source_dir), "--output", str(tmp_path / "out2")]) == 0
    assert parquet_hashes(tmp_path / "out1") == parquet_hashes(tmp_path / "out2")


# ---- pair texts and layout ---------------------------------------------------------------


def test_pair_texts_strip_trailing_periods_and_spaces():
    # Regressions: "Both  16.3923 and …" (a leading space kept) and "…palatini. and …" (a trailing period kept).
    assert pair_text(" 16.3923", "12.5") == "Both 16.3923 and 12.5 are correct"
    assert pair_text("Lacus palatini.", "Mare nostrum . ") == "Both Lacus palatini and Mare nostrum are correct"
    original = record([" 16.3923", "Lacus palatini.", "Mare  nostrum", "U.S."], answer=0)
    pfpp = make_pfpp(original, seed=0, layout="paper")
    y = pfpp.metadata["pair_indices"][1]
    assert pfpp.choices[-1] == "Both 16.3923 and " + {1: "Lacus palatini", 2: "Mare nostrum", 3: "U.S"}[y] + " are correct"
    assert pfpp.choices[:4] == original.choices  # the options themselves stay as written
    assert not pairable("...") and pairable("3.")


def layout_records(n: int = 400) -> list[MCQRecord]:
    return [MCQRecord(f"mmlu_pro/test/{k}", f"Question number {k}?", tuple(f"answer {k}-{j}" for j in range(10)),
                      k % 10, "s", "c", "test", k, category="other", metadata={"question_id": k, "src": "t"})
            for k in range(n)]


def accept_all(batch):
    return [Proposal(r.id, "t", f"new option {r.id}", similarity=0.1) for r in batch]


def default_config(records: list[MCQRecord], ratios: str, layout: str, propose=None) -> list[MCQRecord]:
    """The ``default`` config of a test split, made by the builder's steps in the core's runner."""
    groups = mpp.Groups(parse_ratios(ratios), {"test"}, 0, layout, propose, "m" if propose else None)
    return Run({"test": records}, ExclusionLog()).make("default", groups.steps, copy=groups.copied)["default"]["test"]


def layout_figures(layout: str) -> tuple[int, ...]:
    """(PFPP, PFPP whose first-named member is the answer, TPP, TPP with a pair member just before the pair,
    modified, modified answered by the just-before rule), from the released options only."""
    out = default_config(layout_records(), "3718:2124:2029:4161", layout, accept_all)
    pfpp = [r for r in out if r.columns["modification"] == PFPP]
    tpp = [r for r in out if r.columns["modification"] == TPP]
    modified = [r for r in out if r.columns["modification"] != UNCHANGED]
    just_before = [r for r in tpp if r.choices[len(r.choices) - 2] in
                   {r.choices[i] for i in r.metadata["pair_indices"]}]
    return (len(pfpp), sum(first_named_member(r) == r.answer for r in pfpp), len(tpp), len(just_before),
            len(modified), sum(pair_if_just_before(r) == r.answer for r in modified))


def test_the_paper_layout_has_the_positional_shortcut():
    # Figure 5: the answer always named first, the new option always just before the pair. The rule "the pair if
    # it names the option before it, else its first-named option" answers every TPP and PFPP item whose wrong
    # member is not the last original option: 179 of 262 (68%, the 67%).
    assert layout_figures("paper") == (71, 71, 124, 124, 262, 179)


def test_the_default_layout_breaks_it():
    pfpp, first, tpp, before, modified, rule = layout_figures("random")
    assert (pfpp, first, tpp, before, modified, rule) == (71, 37, 124, 26, 262, 51)
    assert 0.35 <= first / pfpp <= 0.65 and before / tpp <= 0.35 and rule / modified < 0.25


def pair_rule_audit(layout: str, declared: bool) -> dict[str, object]:
    """The pair rules' audit rows of a `--ratios 0:1:1:1` modification of 400 records, with the builder's inherent
    declarations or without them."""
    from types import SimpleNamespace

    from builders.core.validation import audit
    from builders.mmlu_pro_plus.baselines import BASELINES, PAIR_MEMBER_RULES, inherent_baselines

    records = default_config(layout_records(), "0:1:1:1", layout)
    inherent = inherent_baselines(*pair_counts({"test": records}), layout) if declared else {}
    build = SimpleNamespace(release=SimpleNamespace(baselines=BASELINES, inherent_baselines=inherent),
                            about=SimpleNamespace(unchanged_config=None), params={"seed": 0},
                            source=SimpleNamespace(benchmark=SimpleNamespace(fewshot_split=None)),
                            configs={"default": {"test": records}})
    return {row.baseline: row for row in audit.audit(build) if row.baseline in PAIR_MEMBER_RULES}


def test_without_tpp_a_named_option_answers_half_the_pfpp_items_and_is_declared_inherent():
    """At `--ratios 0:1:1:1` a rule that picks one of the pair's named options answers 25% of the items
    with a pair (chance about 9%): a PFPP pair names the answer by definition and a CFPP pair does not, so no
    layout can hide it. It warns when nothing declares it; the builder declares it inherent in the random layout
    with the figure the shares give, and not in the paper's layout, whose order cue (the answer named first) is
    not the design's (nor is the choices-only model declared there, as it reads that order too)."""
    from builders.mmlu_pro_plus.baselines import inherent_baselines

    undeclared = pair_rule_audit("random", declared=False)
    assert undeclared["pair_first_named"].warns and undeclared["pair_second_named"].warns
    first, second = (round(undeclared[rule].accuracy * undeclared[rule].applies)
                     for rule in ("pair_first_named", "pair_second_named"))
    assert (undeclared["pair_first_named"].applies, first, second) == (267, 51, 83)  # 51 + 83: all 134 PFPP items
    declared = pair_rule_audit("random", declared=True)
    assert not any(row.warns for row in declared.values())
    assert all("half of the 134 PFPP items of the 267 with a pair, 25.1%" in row.inherent for row in declared.values())
    paper = pair_rule_audit("paper", declared=True)
    assert paper["pair_first_named"].warns and paper["pair_first_named"].inherent is None
    assert "default/choices_only_model" not in inherent_baselines(134, 267, "paper")
    assert "default/choices_only_model" in inherent_baselines(134, 267, "random")
    assert round(paper["pair_first_named"].accuracy * 267) == 134  # every PFPP item: the answer is named first


def test_tpp_position_and_pair_order_are_drawn_per_item_content():
    records = layout_records(60)
    positions = {tpp_position(0, r, "random") for r in records}
    assert positions == set(range(11)) and {tpp_position(0, r, "paper") for r in records} == {10}
    # Keyed by content and seed: the same item gets the same draw whatever surrounds it; another seed differs.
    assert [tpp_position(0, r, "random") for r in records] == [tpp_position(0, r, "random") for r in records[::-1]][::-1]
    assert [tpp_position(1, r, "random") for r in records] != [tpp_position(0, r, "random") for r in records]
    orders = Counter(pair_order(0, r, 1, 2, "random") for r in records)
    assert set(orders) == {(1, 2), (2, 1)} and {pair_order(0, r, 1, 2, "paper") for r in records} == {(1, 2)}


def test_random_tpp_layout_keeps_the_gold_and_the_originals():
    original = record(["1", "9", "12", "15"], answer=1, category="math")
    tpp = make_tpp(original, Proposal("x/1", "t", "36/4", similarity=0.4), "m", seed=3, layout="random")
    added = tpp.metadata["added_option_index"]
    assert tpp.choices[added] == "36/4" and tpp.answer == 5 == tpp.metadata["pair_option_index"]
    assert tuple(c for i, c in enumerate(tpp.choices) if i not in (added, 5)) == original.choices
    x, y = tpp.metadata["pair_indices"]
    assert {tpp.choices[x], tpp.choices[y]} == {"9", "36/4"} and tpp.metadata["original_answer_index"] == 1
    assert tpp.choices[5] == f"Both {tpp.choices[x]} and {tpp.choices[y]} are correct"


def test_the_checks_follow_the_random_layout(scripted, source_dir, tmp_path):
    result = build(scripted, source_dir, tmp_path / "cache", "--ratios", "12:6:6:11")
    report = validate(result)
    assert report.passed and {c.name for c in report.checks} >= {"pair_answer_by_group", "originals_kept", "hub_columns",
                                                                "original_config"}
    moved = [r for r in result.configs["default"]["test"] if r.metadata["added_option_index"] is not None
             and r.metadata["added_option_index"] < r.metadata["original_answer_index"]]
    assert moved  # some TPP options sit before the original answer: the checks must follow the shift
    # A pair naming the original answer's unshifted place (the layout before the shift) is caught.
    records = result.configs["default"]["test"]
    at = next(i for i, r in enumerate(records) if r.id == moved[0].id)
    victim = records[at]
    unshifted = victim.metadata["original_answer_index"]
    added = victim.metadata["added_option_index"]
    choices = list(victim.choices)
    choices[-1] = pair_text(choices[unshifted], choices[added])
    records[at] = victim.replace(choices=choices).with_metadata(pair_indices=[unshifted, added])
    with pytest.raises(ValidationFailed, match="pair_answer_by_group"):
        validate(result)
    records[at] = victim.with_columns(answer="A" if victim.columns["answer"] != "A" else "B")
    with pytest.raises(ValidationFailed, match="hub_columns"):
        validate(result)


def load_release(folder: Path, *config: str):
    """A release folder through datasets; never from its cache (two folders named alike may share a cache entry
    within one process)."""
    return datasets.load_dataset(str(folder), *config, download_mode="force_redownload")


# ---- the sample, offline, with pre-generated TPP options --------------------------


def test_the_sample_builds_offline_with_its_pregenerated_options(sample_releases):
    out = sample_releases.release("mmlu_pro_plus")
    test = load_release(out, "default")["test"]
    assert Counter(test["modification"]) == {TPP: 4, PFPP: 2, CFPP: 2, UNCHANGED: 4}
    # MMLU-Pro's Hub columns, the answer as a letter, next to the compatibility flags.
    for row in test:
        assert row["options"] == row["choices"] and row["answer"] == LETTERS[row["answer_index"]]
        assert row["question_id"] == row["metadata"]["question_id"] and row["src"] and row["cot_content"] == ""
        assert row["is_modified"] == (row["modification"] == TPP)
    validation = load_release(out, "default")["validation"]
    assert validation.num_rows == 4 and all(c.startswith("A: Let's think step by step.") for c in validation["cot_content"])
    original = load_release(out, "original")["test"]
    assert original.num_rows == 12 and set(original["question_id"]) == set(test["question_id"])
    rejected = [json.loads(line) for line in (out / "tpp_rejections.jsonl").read_text().splitlines()]
    assert [(r["id"], r["reason"]) for r in rejected] == [("mmlu_pro/test/9004", "too_long")]
    card = (out / "README.md").read_text()
    assert "**Layout: `random`.**" in card and "`tpp_options.jsonl` (no LLM was called)" in card
    manifest = json.loads((out / "lm_eval" / "manifest.json").read_text())
    assert sorted((t["role"], t["config"]) for t in manifest["tasks"]) == [("original", "original"), ("plus", "default")]
    report = json.loads((out / "validation_report.json").read_text())
    # Each rule over the items it applies to: the pair rules over the 8 items with a pair.
    audit = {(r["config"], r["baseline"]): (r["applies"], round(r["accuracy"] * r["applies"]), bool(r["inherent"]))
             for r in report["audit"]}
    assert audit[("default", "always_both")] == (8, 4, True)  # the TPP share, declared inherent
    assert audit[("default", "always_last")] == (12, 5, True)  # the 4 TPP pairs, and 9003 left unchanged with its key at J
    # a named option is the answer in half of the PFPP items by the groups' design: declared inherent
    assert audit[("default", "pair_first_named")] == (8, 1, True)
    assert audit[("default", "pair_second_named")] == (8, 1, True)
    assert audit[("default", "pair_if_just_before_else_first_named")] == (8, 2, True)
    assert audit[("default", "pair_if_twelve_options")] == (8, 4, True)  # the option-count cue, declared inherent
    assert ("original", "pair_first_named") not in audit
    models = {r["config"]: r for r in report["adversary"]}
    # The sample's keys sit at every letter (they were at A-C only, which the choices-only model learnt on
    # `original`): nothing in the source's options gives the answer away; the pair option is the design's.
    # (the gradient-boosted trees answer 3 of the 12 at a chance of 10.4%: far from significant, no warning below)
    original = models["original"]
    assert models["default"]["inherent"] and round(original["accuracy"] * original["scored"]) <= 3 == original["scored"] / 4
    assert models["original"]["inherent"] is None
    assert report["warnings"] == []


def test_pregenerated_options_are_checked_and_exclusive(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": 1}\n')
    assert mpp.main(["--source", "sample", "--tpp-options", str(bad), "--output", str(tmp_path / "o")]) == 2
    assert "bad.jsonl line 1: expected {question_id, option}" in capsys.readouterr().err
    good = write_jsonl(tmp_path / "good.jsonl", [{"question_id": 9001, "option": "30/2"}])
    assert mpp.main(["--source", "sample", "--tpp-options", str(good), "--llm-model", "m",
                     "--output", str(tmp_path / "o")]) == 2
    assert "exclude each other" in capsys.readouterr().err


def test_the_paper_layout_is_kept_on_request_and_said_in_the_card(tmp_path):
    out = tmp_path / "release"
    assert mpp.main(["--source", "sample", "--layout", "paper", "--output", str(out),
                     "--cache-dir", str(tmp_path / "cache")]) == 0
    test = load_release(out, "default")["test"]
    for row in test:
        meta = row["metadata"]
        if row["modification"] == TPP:
            assert meta["added_option_index"] == len(row["choices"]) - 2
        if row["modification"] in (TPP, PFPP):
            assert meta["pair_indices"][0] == meta["original_answer_index"]
    assert "**Layout: `paper`.** The paper's Figure 5 layout" in (out / "README.md").read_text()


def _upstream_utils():
    """lm-eval's own ``mmlu_pro_plus`` task functions (its folder name has a dash: loaded from its path)."""
    import importlib.util

    import lm_eval

    path = Path(lm_eval.__file__).parent / "tasks" / "mmlu-pro-plus" / "utils.py"
    spec = importlib.util.spec_from_file_location("upstream_mmlu_pro_plus_utils", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_upstream_lm_eval_task_reads_the_release(sample_releases):
    out = sample_releases.release("mmlu_pro_plus")
    upstream = _upstream_utils()
    release = load_release(out)  # the default config, as the upstream task loads it
    math = upstream.process_math(release["test"])
    assert sorted(math["question_id"]) == [9001, 9006]
    row = next(r for r in release["test"] if r["modification"] == TPP)
    prompt = upstream.doc_to_text(row)
    assert prompt.startswith("Question:\n" + row["question"]) and prompt.endswith("Answer: Let's think step by step.")
    assert f"{row['answer']}. {row['options'][row['answer_index']]}" in prompt and row["answer"] == "L"
    shot = release["validation"][0]
    assert upstream.fewshot_to_target(shot).endswith("The answer is (B).")


@pytest.mark.slow
def test_evaluate_runs_the_release_tasks_in_lm_eval(sample_releases, tmp_path):
    """The release's own lm-eval tasks run in the real lm_eval (its dummy model), and ``evaluate`` reads them by
    their manifest roles (plus / original) into the paper's tables: per group, per category, SSR and CPI."""
    from builders import evaluate

    out = sample_releases.release("mmlu_pro_plus")
    assert evaluate.main([str(out), "--model", "dummy", "--output", str(tmp_path / "eval")]) == 0
    text = (tmp_path / "eval" / "evaluation.md").read_text()
    assert "| dummy | true_positive_pair | 4 |" in text and "| dummy | complete_false_positive_pair | 2 |" in text
    assert "| dummy | math | 2 |" in text and "| dummy | law | 1 |" in text and "SSR_wrong" in text and "CPI" in text


def test_each_category_is_shown_demonstrations_of_its_own_category(tmp_path):
    """As in MMLU-Pro's evaluation (the review found every question shown the first validation rows, whatever
    their category): one task per category, its demonstrations that category's validation rows."""
    import importlib.util

    import yaml
    from datasets import Dataset

    out = tmp_path / "release"
    assert mpp.main(["--source", "sample", "--output", str(out), "--cache-dir", str(tmp_path / "cache")]) == 0
    tasks = out / "lm_eval"
    group = yaml.safe_load((tasks / "mmlu_pro_plus_default.yaml").read_text())
    test = load_release(out, "default")["test"]
    validation = Counter(load_release(out, "default")["validation"]["category"])
    assert group["aggregate_metric_list"][0]["weight_by_size"] is True
    slug = {c: c.replace(" ", "_") for c in set(test["category"])}  # "computer science"
    assert sorted(group["task"]) == sorted(f"mmlu_pro_plus_default_{s}" for s in slug.values())
    spec = importlib.util.spec_from_file_location("release_utils", tasks / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    for category in set(test["category"]):
        task = read_lm_eval_task(tasks / f"mmlu_pro_plus_default_{slug[category]}.yaml")
        assert task["num_fewshot"] == min(5, validation[category])
        assert task["description"] == f"The following are multiple choice questions (with answers) about {category}.\n\n"
        kept = getattr(utils, f"only_{slug[category]}")(Dataset.from_dict({"category": ["math", "law", category]}))
        assert kept["category"] == [category] * (1 + (category in ("math", "law")))


# ---- regressions from the adversarial review (real MMLU-Pro has such rows: question 8584 repeats an option) --


def alike_rows() -> list[dict]:
    return [
        row(3000, "Which is prime?", ["4", "7", "7", "9"], 1, "math"),  # the answer repeated: excluded at load
        row(3001, "Which is a mammal?", ["Whale", "Shark", "Trout", "Shark "], 0, "biology"),  # a wrong one, spaced
        row(3002, "Which number is largest?", ["12.", "12", "3", "5"], 0, "math"),  # "12." is named "12" in a pair
        row(3003, "Which is a gas?", ["Neon", "Iron", "Zinc", "Lead"], 0, "chemistry"),
        row(3004, "Which is a fruit?", ["Pear", "Leek", "Kale", "Okra"], 0, "other"),
        row(3005, "Which is a planet?", ["Mars", "Moon", "Sun", "Vega"], 0, "physics"),
    ]


def test_options_that_read_alike_in_a_pair_are_never_modified(tmp_path):
    """Before the fix a PFPP/CFPP draw on an item with a repeated option failed validation for the whole build
    ("no_duplicate_choices"), and "12." / "12" gave a pair that could name the answer or a wrong option."""
    source = write_jsonl(tmp_path / "src" / "test.jsonl", alike_rows()).parent
    out = tmp_path / "release"
    assert mpp.main(["--source", str(source), "--ratios", "0:1:1:0", "--output", str(out)]) == 0
    rows = {r["question_id"]: r for r in load_release(out, "default")["test"]}
    assert Counter(r["modification"] for r in rows.values()) == {PFPP: 3, UNCHANGED: 2}
    assert 3000 not in rows  # its key's text is twice among its options (duplicated_key, in every config)
    for qid in (3001, 3002):
        assert rows[qid]["modification"] == UNCHANGED
        assert rows[qid]["metadata"]["ineligible_reason"] == "options_read_alike"
        assert rows[qid]["choices"] == alike_rows()[qid - 3000]["options"]
    for qid in (3003, 3004, 3005):
        assert rows[qid]["modification"] == PFPP and rows[qid]["metadata"]["ineligible_reason"] is None
    card = (out / "README.md").read_text()
    assert "| options_read_alike | 2 |" in card and "duplicated_key" in card


def test_twin_options_inside_a_longer_option_are_never_modified(tmp_path):
    """Real MMLU-Pro 3182 has "0.60 for L^m and 0.40 for L^n" and "0.6 for L^m and 0.4 for L^n": the pair reading
    saw two options, the validator one, and the full MMLU-Pro build stopped on no_duplicate_choices."""
    twins = ["0.65 for L^m and 0.35 for L^n", "0.60 for L^m and 0.40 for L^n", "0.7 for L^m and 0.3 for L^n",
             "0.6 for L^m and 0.4 for L^n"]
    rows = [*alike_rows()[3:], row(3007, "Which frequencies hold?", twins, 2, "biology")]
    source = write_jsonl(tmp_path / "src" / "test.jsonl", rows).parent
    out = tmp_path / "release"
    assert mpp.main(["--source", str(source), "--ratios", "0:1:1:0", "--output", str(out)]) == 0
    by_id = {r["question_id"]: r for r in load_release(out, "default")["test"]}
    assert Counter(r["modification"] for r in by_id.values()) == {PFPP: 2, CFPP: 1, UNCHANGED: 1}
    assert by_id[3007]["metadata"]["ineligible_reason"] == "options_read_alike" and by_id[3007]["choices"] == twins


def test_a_blank_question_is_a_malformed_row(tmp_path, capsys):
    rows = alike_rows()[3:] + [row(3006, "   ", ["Mars", "Moon", "Sun", "Vega"], 0, "physics")]
    source = write_jsonl(tmp_path / "src" / "test.jsonl", rows).parent
    out = tmp_path / "release"
    assert mpp.main(["--source", str(source), "--ratios", "0:1:1:0", "--output", str(out)]) == 0
    excluded = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    assert [(e["id"], e["field"], e["detail"]) for e in excluded] == [("mmlu_pro/test/3006", "question", "empty question")]
    assert load_release(out, "default")["test"].num_rows == 3
    assert mpp.main(["--source", str(source), "--ratios", "0:1:1:0", "--strict", "--output", str(tmp_path / "o2")]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert errors == ["error: malformed row mmlu_pro/test/3006: field 'question': empty question"]


def test_the_option_count_tells_a_tpp_item_apart():
    """Review finding on the real MMLU-Pro build (seed 0): all 3,095 items with 12 options are TPP items, and no
    PFPP/CFPP item has 12; the audit rule makes the cue visible in every release."""
    ten = record([f"v{i}" for i in range(10)], answer=3)
    tpp = make_tpp(ten, Proposal("x/1", "pregenerated", "w"), "m", seed=0, layout="random")
    pfpp, cfpp = make_pfpp(ten, seed=0, layout="random"), make_cfpp(ten, seed=0)
    assert (len(tpp.choices), len(pfpp.choices), len(cfpp.choices)) == (12, 11, 11)
    assert pair_if_twelve_options(tpp) == tpp.answer == 11
    assert pair_if_twelve_options(pfpp) == pfpp.metadata["pair_indices"][0] != 10
    assert pair_if_twelve_options(cfpp) == cfpp.metadata["pair_indices"][0] != cfpp.answer
    assert pair_if_twelve_options(ten) is None


# ---- items read on the real MMLU-Pro build ---------------------------------------------------------


def real_item_rows() -> list[dict]:
    """MMLU-Pro test items (texts shortened) that the real build mishandled, and plain items beside them."""
    return [
        # 1304: "Both are guilty, ..." was named inside a pair: "Both Both are guilty, ... and ... are correct"
        row(1304, "Which co-defendants are guilty?",
            ["Both are guilty, because each participated in the planning of the crime.",
             "Only the co-defendant who built the bomb is guilty.", "Neither is guilty, because they did not intend it.",
             "Both are not guilty, because they intended to defuse the bomb."], 0, "law"),
        # 2055: already has a "Both ... are correct" option, with a tail after "correct"
        row(2055, "Have studies on learning supported the Incremental or the One-trial Theory of learning?",
            ["Incremental Theory is supported in cognitive tasks.", "Neither theories of learning are correct.",
             "Both theories of learning are correct, depending on the context.",
             "Only Incremental Theory of learning is supported."], 2, "psychology"),
        # 10443: "1" and "1.0" (and "'1'") read alike once named in a pair
        row(10443, "Let l = [1,2,3,4]. What is min(l) in Python3?", ["'1'", "0", "1", "1.0"], 2, "computer science"),
        # 8057: eligible but unchanged, with no reason recorded; here no option can be named in a pair (the answer
        # and two wrong options are bare letters), and the item says so
        row(8057, "Which of these vowels does NOT have a vertical axis of symmetry?", ["U", "E", "I", "A"], 1, "math"),
        row(3003, "Which is a gas?", ["Neon", "Iron", "Zinc", "Lead"], 0, "chemistry"),
        row(3004, "Which is a fruit?", ["Pear", "Leek", "Kale", "Okra"], 0, "other"),
    ]


def test_real_items_are_left_unchanged_each_with_its_reason(tmp_path):
    source = write_jsonl(tmp_path / "src" / "test.jsonl", real_item_rows()).parent
    out = tmp_path / "release"
    assert mpp.main(["--source", str(source), "--ratios", "0:1:1:0", "--output", str(out)]) == 0
    rows = {r["question_id"]: r for r in load_release(out, "default")["test"]}
    reasons = {qid: (r["modification"], r["metadata"]["unchanged_reason"]) for qid, r in rows.items()}
    # 10443's key "1" is also its option "1.0": a key written twice is left out at load, with its reason
    excluded = [json.loads(line) for line in (out / "exclusions.jsonl").read_text().splitlines()]
    assert [(e["id"], e["reason"]) for e in excluded] == [("mmlu_pro/test/10443", "duplicated_key")]
    assert reasons == {2055: (UNCHANGED, "has_pair_option"),
                       8057: (UNCHANGED, "no_pairable_option"), 1304: (CFPP, None), 3003: (PFPP, None),
                       3004: (PFPP, None)}
    # 1304 is modified, but its two options that start with "Both" (its answer among them) are never named
    assert sorted(rows[1304]["metadata"]["pair_indices"]) == [1, 2]
    assert not rows[1304]["choices"][-1].startswith("Both Both")
    card = (out / "README.md").read_text()
    assert outcome_rows(card)[:3] == [  # 3 altered, 2 copied unchanged with their `unchanged_reason`
        ("default", "test", "altered", "–", 3), ("default", "test", "copied unchanged", "has_pair_option", 1),
        ("default", "test", "copied unchanged", "no_pairable_option", 1)]


def test_an_option_starting_with_both_is_never_named_in_a_pair():
    assert not pairable("Both are guilty, because each participated in the planning of the crime.")
    assert not pairable("both of them")
    assert pairable("Bothwell Castle") and pairable("The two are both guilty")
    item = record(["Both are guilty.", "Neither is guilty.", "Only the first is guilty.", "Both are not guilty."], 1)
    assert wrong_pairable(item) == [2]
    assert not can_take(CFPP, item)


@pytest.mark.parametrize("options", [
    ["Both theories of learning are correct, depending on the context.", "x", "y", "z"],
    ["x", "Both statements are true in most cases", "y", "z"],
    ["x", "y", "1", "1.0"],
    ["x", "y", "'1'", "1"],
    ["x", "y", "Twelve", "twelve."],
])
def test_items_whose_options_clash_with_a_pair_are_ineligible(options):
    from builders.mmlu_pro_plus.layout import ineligible_reason
    assert ineligible_reason(record(options, 0)) in ("has_pair_option", "options_read_alike")


def test_the_validator_refuses_each_kind_when_the_builder_s_rules_are_blinded(tmp_path, monkeypatch):
    """The validator's checks are written apart from the builder's rules: with those rules switched off, each
    real item above makes the build fail validation."""
    from builders.mmlu_pro_plus import layout
    monkeypatch.setattr(layout, "_PAIR_OPTION", __import__("re").compile(r"(?!)"))
    monkeypatch.setattr(layout, "_STARTS_WITH_BOTH", __import__("re").compile(r"(?!)"))
    monkeypatch.setattr(layout, "normalize_option", lambda text: text)
    rows = real_item_rows()
    for case in (rows[0], rows[1]):  # rows[2], whose key is written twice ("1", "1.0"), is left out at load
        with pytest.raises(ValidationFailed, match="pair_is_unambiguous"):
            mpp.build_dataset({"test": [case]}, ratios="0:1:0:0", layout="random")


def test_the_validator_reads_a_comma_as_thousands_only_between_groups_of_three(tmp_path):
    """The full MMLU-Pro build failed validation (pair_is_unambiguous) on 8001 and 8800: the validator dropped
    every comma, so it read the list "0,1" as 1 (beside "1") and "305,61" as 30,561 (beside "30,561"). Neither
    pair reads alike; "1,000" beside "1000" still does."""
    from builders.mmlu_pro_plus.checks import _reads_as
    assert _reads_as("0,1") != _reads_as("1") and _reads_as("305,61") != _reads_as("30,561")
    assert _reads_as("1,000") == _reads_as("1000") == _reads_as("1000.0") and _reads_as("-1,234.5") == _reads_as("-1234.5")
    rows = [row(8001, "Which elements of Z_4 are zeros of x^2 + x?",
                ["1,2", "0,1,2,3", "1", "3,4", "0,1,2", "0,4", "0", "0,3", "2,3", "0,1"], 7, "math"),
            row(8800, "Write 30 thousand 561 in standard form.",
                ["3,561", "30,561,000", "30,561", "35,610,000", "3,056,100", "300,561", "305,61", "305,610", "35,610"],
                2, "math")]
    result = mpp.build_dataset({"test": rows}, ratios="0:1:0:0", layout="random")
    assert result.report.passed
    assert [r.columns["modification"] for r in result.build.configs["default"]["test"]] == [PFPP, PFPP]


# ---- the generated option is checked before it becomes part of a key -------------------------------

SAMPLE_ROWS = [json.loads(line) for line in
               (Path(mpp.__file__).resolve().parents[1] / "data" / "samples" / "mmlu_pro" / "test.jsonl").read_text().splitlines()]
LABELS = ["{letter}. {text}", "({letter}) {text}", "{number}) {text}", "Option {letter}: {text}"]


def _labelled_copies(path: Path) -> Path:
    """A pre-generated options file of letter- or number-labelled copies of each key, as the prompt shows options."""
    return write_jsonl(path, [{"question_id": row["question_id"], "option": LABELS[i % len(LABELS)].format(
        letter=row["answer"], number=row["answer_index"] + 1, text=row["options"][row["answer_index"]])}
        for i, row in enumerate(SAMPLE_ROWS)])


def test_letter_labelled_copies_of_the_key_are_never_accepted(tmp_path):
    """With a small generator, 8 of 25 accepted options were the answer again behind a label ("B. 0.5" beside 0.5),
    and a file of letter-labelled copies of every key had 2,747 of 11,752 accepted: none is now."""
    out = tmp_path / "release"
    assert mpp.main(["--source", "sample", "--tpp-options", str(_labelled_copies(tmp_path / "copies.jsonl")),
                     "--output", str(out), "--cache-dir", str(tmp_path / "cache")]) == 0
    test = load_release(out, "default")["test"]
    assert TPP not in Counter(test["modification"])
    rejected = [json.loads(line) for line in (out / "tpp_rejections.jsonl").read_text().splitlines()]
    # "(F) 60 km/h" and "Option C: price elastic" name a letter: the older rule takes them first
    assert Counter(r["reason"] for r in rejected) == {"labelled_copy": 6, "letter_reference": 6}
    assert [r["detail"] for r in rejected][:1] == ["of option A, behind the label 'A.'"]
    assert "**The generated options were checked by form rules only: no second model confirmed that they are " \
           "correct**" in " ".join((out / "README.md").read_text().split())


@pytest.mark.parametrize("option", ["The new option", "Another correct answer", "the answer", "A new option"])
def test_an_option_that_names_the_task_is_rejected(option):
    record = MCQRecord("x", "q?", ("15", "9", "18"), 0, "mmlu_pro", "default", "test", 0)
    assert rejection_reason(option, record, 100) == ("names_the_task", "")


@pytest.mark.parametrize("option, unlabelled", [("B. 0.5", "0.5"), ("(b) 0.5", "0.5"), ("10) The mitochondrion.",
                                                                 "the mitochondrion"), ("Option C: price elastic",
                                                                                         "price elastic"),
                                               ("0.5", None), ("3.5 m", None), ("A cat", None), ("B.Sc. degree", None)])
def test_the_validator_reads_a_label_its_own_way(option, unlabelled):
    """The validator's added_option_unique strips a first word that is a label, word by word, apart from the
    builder's pattern."""
    from builders.mmlu_pro_plus.checks import _unlabelled

    assert _unlabelled(option) == unlabelled


def test_a_build_of_validation_alone_takes_no_demonstrations_from_the_scored_split(tmp_path):
    """Built with ``--splits validation``, the tasks scored validation and drew their demonstrations from it too
    (``fewshot_split: validation``): every demonstration was a scored item. They are zero-shot then."""
    from lm_eval.tasks import TaskManager

    from builders.core.pipeline import cli

    out = tmp_path / "release"
    assert cli.main(mpp.BUILDER, ["--source", "sample", "--splits", "validation", "--output", str(out),
                                  "--log-level", "WARNING", "--no-progress"]) == 0
    loaded = TaskManager(include_path=str(out / "lm_eval"), include_defaults=False).load(["mmlu_pro_plus_default"])
    assert len(loaded["tasks"]) == 4
    for name, task in loaded["tasks"].items():
        assert task.config.test_split == "validation" and len(task.eval_docs) == 1, name
        assert (task.config.fewshot_split, task.config.num_fewshot) == (None, 0), name
