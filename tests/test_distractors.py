"""builders.distractors: pools, answer extraction, equivalence, predictions, generation, hard timeouts."""

from __future__ import annotations

import json
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from builders.core.errors import UserError
from builders.core.items.record import OpenItem
from builders.core.llm.settings import LLMSettings
from builders.core.runtime.workers import HardTimeoutPool, WorkerPoolError
from builders.core.sources.predictions import match_predictions, read_predictions, require_texts, write_predictions
from builders.from_predictions.collect import item_of
from builders.from_predictions.consensus import RULE
from builders.from_predictions.generate import generate_predictions
from builders.from_predictions.pools import Candidate, build_pool, pool_report, pool_rows, respell, summarize_pools
from builders.gsm_mc import answers as gsm8k
from builders.gsm_mc.prompts import GSM8K_EXEMPLARS, gsm8k_request
from builders.math_mc import forms as math_answers
from builders.math_mc.equivalence import MathEquivalence
from builders.math_mc.prompts import MATH_EXEMPLARS, math_request
from builders.registry import load_builder


class Numbers:
    """Keys only: numbers by value, anything else invalid."""

    def key(self, answer):
        try:
            return float(answer)
        except ValueError:
            return None


class Parity(Numbers):
    """Keys, plus a pairwise check: two numbers are 'the same' when they have the same parity."""

    def __init__(self):
        self.asked = []

    def same(self, a, b):
        self.asked.append((a, b))
        return int(float(a)) % 2 == int(float(b)) % 2


# ---- pools -----------------------------------------------------------------------------------------


def test_pool_groups_ranks_and_counts():
    outputs = [("m1", "3"), ("m2", "3.0"), ("m3", "5"), ("m4", "5"), ("m5", "5.0"), ("m6", "7"),
               ("m7", "x"), ("m8", None), ("m9", "  "), ("m1b", "4")]
    pool = build_pool("q1", "4", outputs, Numbers())
    assert pool.candidates == [
        Candidate("5", ("m3", "m4", "m5"), ("5.0",)),
        Candidate("3", ("m1", "m2"), ("3.0",)),
        Candidate("7", ("m6",)),
    ]
    assert [c.count for c in pool.candidates] == [3, 2, 1]
    assert pool.invalid == {"m7": 1, "m8": 1, "m9": 1}
    assert pool.correct == {"m1b": 1}
    assert (pool.merges, pool.gold_merges, pool.size) == (2, 0, 3)


def test_pool_order_does_not_depend_on_input_order():
    outputs = [("a", "1"), ("b", "2"), ("c", "2"), ("d", "9"), ("e", "8")]
    assert build_pool("q", "5", outputs, Numbers()) == build_pool("q", "5", outputs[::-1], Numbers())


def test_pairwise_engine_merges_classes_and_gold():
    engine = Parity()
    pool = build_pool("q", "2", [("a", "4"), ("b", "3"), ("c", "5"), ("d", "5"), ("e", "7"), ("f", "2")], engine)
    # 4 is "the same" as the gold 2; 3, 5 and 7 are one class, shown as its most frequent spelling
    assert pool.candidates == [Candidate("5", ("b", "c", "d", "e"), ("3", "7"))]
    assert pool.correct == {"a": 1, "f": 1}
    assert (pool.merges, pool.gold_merges) == (3, 1)
    assert ("2", "4") in engine.asked


def test_pool_report_and_summary():
    pools = [build_pool("q1", "1", [("a", "2"), ("b", "3"), ("c", "z")], Numbers()),
             build_pool("q2", "1", [("a", "1")], Numbers())]
    rows = [json.loads(line) for line in pool_report(pools).splitlines()]
    assert rows == pool_rows(pools)
    assert rows[0] == {"question_id": "q1", "gold": "1", "pool_size": 2,
                       "candidates": [{"text": "2", "count": 1, "models": ["a"], "variants": []},
                                      {"text": "3", "count": 1, "models": ["b"], "variants": []}],
                       "invalid": {"c": 1}, "correct": {}, "merges": 0, "gold_merges": 0, "left_out": []}
    summary = summarize_pools(pools)
    assert summary.eligible_by_choices == {2: 1, 3: 1, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0}
    assert summary.size_histogram == {0: 1, 2: 1}
    assert summary.answers_by_model == {"a": 2, "b": 1, "c": 1}
    assert summary.correct_by_model == {"a": 1}


def test_respell_keeps_models_and_spellings():
    pool = build_pool("q", "10", [("a", "1,000"), ("b", "1000.0")], gsm8k.NumericEquivalence())
    spelled = respell(pool, gsm8k.NumericEquivalence().spell)
    assert spelled.candidates == [Candidate("1000", ("a", "b"), ("1,000", "1000.0"))]


def test_invalid_gold_is_refused():
    with pytest.raises(ValueError, match="not a valid answer"):
        build_pool("q", "abc", [], Numbers())


# ---- GSM8K answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("output, answer", [
    ("She makes 9 * 2 = $18 every day.\n#### 18", "18"),
    ("#### 1,234\nThe answer is 7", "1234"),
    ("So the total is \\boxed{$\\$120$}", "120"),
    ("Thus 3 + 4 = 7. The answer is 1,000.50 dollars.", "1000.5"),
    ("A: 18.0", "18"),
    ("It costs $3,000 in total.", "3000"),
    ("3/4 of the class, i.e. 15 students, and -2 left", "-2"),
    ("The answer is: $ 45", "45"),
    ("I cannot tell.", None),
])
def test_gsm8k_extraction(output, answer):
    assert gsm8k.extract_answer(output) == answer


def test_gsm8k_numbers():
    assert [gsm8k.normalize_number(t) for t in ["0.50", "1/3", "6/4", "-0", "12,345", "1/0"]] == \
        ["0.5", "1/3", "1.5", "0", "12345", None]
    assert gsm8k.gold_answer("Janet sells 9 eggs.\n#### 1,018") == "1018"
    assert gsm8k.gold_answer("no final line") is None
    equivalence = gsm8k.NumericEquivalence()
    assert equivalence.key("$18.00") == equivalence.key("18") and equivalence.key("7%") == equivalence.key("7")


def test_gsm8k_random_distractors_stay_in_their_interval():
    rng = np.random.default_rng(0)
    for gold, interval in [("18", ("8", "28")), ("3", ("0", "13")), ("1000", ("500", "1500")), ("-5", ("-15", "5"))]:
        assert gsm8k.random_interval(gold) == interval
        drawn = gsm8k.random_distractors(gold, 7, rng)
        assert len(set(drawn)) == 7 and gold not in drawn
        low, high = (float(v) for v in interval)
        assert all(low <= float(d) <= high for d in drawn)
    assert gsm8k.random_distractors("2.5", 3, np.random.default_rng(1)) == \
        gsm8k.random_distractors("2.5", 3, np.random.default_rng(1))
    assert all(d.endswith(".5") for d in gsm8k.random_distractors("2.5", 3, rng))



def test_random_distractors_of_a_small_gold_leave_its_rank_uniform():
    """A gold below the window's half-width (3 to 9: GSM8K has many) has fewer non-negative integers below it than
    above; rejecting the draws that left the interval made such a gold the smallest of 4 options in 34% of the
    draws and the largest in 12% (a full --distractors random build: 28% against 22%, one set warned)."""
    ranks = Counter()
    for gold in range(3, 10):
        for seed in range(1500):
            drawn = gsm8k.random_distractors(str(gold), 3, np.random.default_rng([gold, seed]))
            ranks[sum(int(d) < gold for d in drawn)] += 1
    shares = [ranks[r] / 10_500 for r in range(4)]
    assert all(abs(share - 0.25) < 0.02 for share in shares), shares
    # its window shrinks to 4 integers around it (offsets -3..3), never past the interval's low end 0
    assert all(0 <= int(d) <= 6 for seed in range(200) for d in gsm8k.random_distractors("3", 3, np.random.default_rng(seed)))


# ---- MATH answers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("output, answer", [
    (r"so $\boxed{\frac{1}{2}}$ and then $\fbox{ 3 }$.", "3"),
    (r"$\boxed{\left(1, \frac{9}{2}\right)}$", r"\left(1, \frac{9}{2}\right)"),
    (r"$\boxed 5$", "5"),
    ("Final Answer: The final answer is $897$. I hope it is correct.", "897"),
    (r"\boxed{\text{a}{b}", None),  # unbalanced
    (r"\boxed{}", None),
    ("no answer here", None),
])
def test_math_extraction(output, answer):
    assert math_answers.extract_answer(output) == answer


def test_math_spellings():
    assert math_answers.display_form(r" $\dfrac{9}{7}$. ") == r"\frac{9}{7}"
    assert math_answers.display_form(r"{(9,11)}") == "(9,11)"
    assert math_answers.display_form(r"\{1,2\}") == r"\{1,2\}"  # a set, not grouping braces
    assert math_answers.answer_key(r"\left( 1,\! 2 \right)") == math_answers.answer_key("(1,2)")
    assert math_answers.answer_key("  ") is None


@pytest.mark.slow
def test_math_equivalence_under_hard_limits():
    with MathEquivalence(workers=2, timeout=5.0) as equivalence:  # 2 s flaked on a loaded machine
        started = time.monotonic()
        equivalence.prepare([[r"\frac{1}{2}", "0.5", "1/2", "3", r"9^{9^{9^{9}}}", "(0, 1]", r"x+1", "1+x"]])
        assert time.monotonic() - started < 30
        assert equivalence.same(r"\frac{1}{2}", "0.5") and equivalence.same("0.5", "1/2")
        assert equivalence.same("x+1", "1+x") and equivalence.same(r"\dfrac{1}{2}", r"\frac{1}{2}")
        assert not equivalence.same(r"\frac{1}{2}", "3") and not equivalence.same("3", "(0, 1]")
        assert not equivalence.same(r"9^{9^{9^{9}}}", "3")
        stats = equivalence.stats
        assert stats.hanging == [r"9^{9^{9^{9}}}"]
        assert stats.pairs == 28 and stats.skipped == 7
        assert stats.prejudged >= 7  # pairs of plain numbers never reach math-verify (symbolic pairs always do)


# ---- the worker pool ---------------------------------------------------------------------------------


def test_hard_timeout_pool_kills_and_goes_on():
    with HardTimeoutPool("time:sleep", workers=2, timeout=1.0, memory_limit=None) as pool:
        started = time.monotonic()
        outcomes = pool.map([0, 30, 0.01, 30, 0])
        assert time.monotonic() - started < 10
        assert [o.ok for o in outcomes] == [True, False, True, False, True]
        assert [o.error for o in outcomes] == [None, "timeout", None, "timeout", None]
        assert pool.timeouts == 2
        assert pool.run(0).ok  # replaced workers still serve


def test_hard_timeout_pool_reports_errors_and_crashes():
    with HardTimeoutPool("math:sqrt", workers=1, timeout=5.0) as pool:
        assert [o.value for o in pool.map([4, 9])] == [2.0, 3.0]
        outcome = pool.run(-1)
        assert (outcome.ok, outcome.error) == (False, "error") and "ValueError" in outcome.detail
    with HardTimeoutPool("os:_exit", workers=1, timeout=5.0) as pool:
        with pytest.raises(WorkerPoolError, match="in a row died"):
            pool.map([3] * 10)


def test_a_free_worker_takes_the_task_nearest_to_what_it_ran():
    """``affinity``: a task goes, where it can, to the worker that ran tasks on the same keys (whose caches hold
    them); the outcomes are the same, in payload order."""
    with HardTimeoutPool("math:sqrt", workers=2, timeout=5.0) as pool:
        assert [o.value for o in pool.map([4, 9], affinity=[{"a"}, {"b"}])] == [2.0, 3.0]
        assert [w.served for w in pool._workers] == [{"a"}, {"b"}]
        # both free: the first worker skips the queue's head for the task on its key
        assert [o.value for o in pool.map([16, 25], affinity=[{"b"}, {"a"}])] == [4.0, 5.0]
        assert [w.served for w in pool._workers] == [{"a"}, {"b"}]
        assert [o.value for o in pool.map([36, 49])] == [6.0, 7.0]  # no affinity: in order


def test_a_worker_leaves_ctrl_c_to_its_parent():
    """Regression: Ctrl-C reaches the whole process group, and each worker printed a traceback from inside
    sympy before the parent's one "interrupted" line. A worker now ignores it; the parent closes the pool."""
    import os
    import signal

    with HardTimeoutPool("math:sqrt", workers=1, timeout=5.0) as pool:
        assert pool.run(4).value == 2.0
        [worker] = pool._workers
        os.kill(worker.process.pid, signal.SIGINT)
        time.sleep(0.3)
        assert (pool.run(9).value, pool.crashes, worker.process.is_alive()) == (3.0, 0, True)


# ---- predictions -----------------------------------------------------------------------------------


QUESTIONS = ["What is 1 + 1?", "What is  2 + 2?", "What is 3 + 3?"]


def items(questions=QUESTIONS, split="test") -> list[OpenItem]:
    return [OpenItem(f"gsm8k/{split}/{i}", split, i, q, str(2 * (i + 1)), str(2 * (i + 1)), "", "main")
            for i, q in enumerate(questions)]


def match(predictions, built=None):
    return match_predictions(predictions, item_of(built or items(), lambda doc: doc.get("question")))


def write_jsonl(path: Path, rows) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_plain_predictions_by_index_and_text(tmp_path):
    path = write_jsonl(tmp_path / "preds.jsonl", [
        {"question_index": 0, "model": "a", "output": "#### 2"},
        {"question": "What is 2 +   2?", "model": "a", "output": "4"},  # whitespace differs
        {"question_index": 0, "model": "a", "output": "#### 3"},  # a second answer of a to question 0
        {"question_index": 7, "model": "b", "output": "1"},  # no such row
        {"question": "Unknown?", "model": "b", "output": "1"},
        {"question_index": 2, "question": "What is 1 + 1?", "model": "b", "output": "6"},  # index and text disagree
        {"question_index": 2, "model": "c", "output": "6", "output_kind": "extracted"},
        {"question_index": 1, "model": "c", "output": None},  # no answer: matched, and counts as invalid
    ])
    matched, report = match(read_predictions([path]))
    assert (report.read.total(), report.matched.total(), report.unmatched.total(), report.duplicates.total()) == (8, 4, 3, 1)
    assert report.matched == {"a": 2, "c": 2} and report.unmatched == {"b": 3} and report.duplicates == {"a": 1}
    assert report.reasons == {"no_item_at_question_index": 1, "question_not_found": 1,
                              "question_index_and_text_disagree": 1, "duplicate_model_item": 1}
    assert [(p.model, p.output) for p in matched["gsm8k/test/0"]] == [("a", "#### 2")]
    assert [(p.model, p.output) for p in matched["gsm8k/test/1"]] == [("a", "4"), ("c", None)]
    assert [(p.model, p.extracted) for p in matched["gsm8k/test/2"]] == [("c", True)]


def test_a_prediction_for_an_excluded_row_says_so(tmp_path):
    """Predictions for rows the build excluded (an ambiguous MATH gold, say) are counted as such, not as naming
    no row at all."""
    path = write_jsonl(tmp_path / "preds.jsonl", [{"question_index": 5, "model": "a", "output": "1"},
                                                  {"question_index": 7, "model": "a", "output": "1"}])
    _, report = match_predictions(read_predictions([path]), item_of(items(), lambda doc: doc.get("question"),
                                                                    excluded=[("test", 5)]))
    assert report.reasons == {"item_excluded": 1, "no_item_at_question_index": 1}


def test_harness_sample_logs_match_by_doc(tmp_path):
    folder = tmp_path / "results" / "org__model-7b"
    write_jsonl(folder / "samples_gsm8k_2024-05-01T00-00-00.jsonl", [
        {"doc_id": 5, "doc": {"question": "What is 3 + 3?", "answer": "#### 6"}, "resps": [["The answer is 6."]],
         "filtered_resps": ["6"]},
        {"doc_id": 0, "doc": {"question": "What is 1 + 1?", "answer": "#### 2"}, "resps": [["The answer is 3."]],
         "filtered_resps": ["The answer is 3."]},
    ])
    by_folder = read_predictions([tmp_path / "results"])
    assert [(p.model, p.ref["question"], p.output, p.extracted) for p in by_folder] == [
        ("org__model-7b", "What is 3 + 3?", "6", True), ("org__model-7b", "What is 1 + 1?", "The answer is 3.", False)]
    named = read_predictions([f"mine={folder}"])
    matched, report = match(named)
    assert report.matched == {"mine": 2}
    assert matched["gsm8k/test/2"][0].output == "6"  # doc_id 5 is not trusted: the question text is


def test_bad_prediction_files(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        read_predictions([tmp_path / "missing.jsonl"])
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"model": "a", "output": "1"}])
    with pytest.raises(UserError, match=r"bad.jsonl:1: the row names no item"):
        read_predictions([bad])
    predictions = read_predictions([write_jsonl(tmp_path / "p.jsonl", [{"question_index": 0, "model": "a", "output": "1"}])])
    with pytest.raises(UserError, match=r"p.jsonl:1: a prediction by question_index needs a \"split\""):
        match(predictions, items(["q"], "train") + items(["q"], "test"))


def test_a_file_of_another_benchmark_is_one_error(tmp_path):
    """MATH predictions given to GSM-MC stop the read, instead of 1,625 unmatched rows."""
    path = write_jsonl(tmp_path / "preds.jsonl", [{"benchmark": "math", "question_index": 0, "model": "a", "output": "x"}])
    with pytest.raises(UserError, match=r"preds.jsonl:1: this row is a 'math' prediction; this command reads gsm8k "
                                        r"predictions"):
        read_predictions([path], benchmark="gsm8k")
    assert len(read_predictions([path], benchmark="MATH")) == 1
    with pytest.raises(UserError, match="reads humaneval or mbpp predictions"):
        read_predictions([path], benchmark=("humaneval", "mbpp"))


def test_gsm_mc_refuses_math_predictions_in_one_line(tmp_path, capsys):
    from test_gsm_mc import GSM8K_TEST

    from builders import gsm_mc

    source = write_jsonl(tmp_path / "gsm8k" / "test.jsonl", GSM8K_TEST).parent
    math = write_jsonl(tmp_path / "math_test.jsonl", [
        {"benchmark": "math", "question_index": i, "model": "gpt-4", "output": "$\\boxed{2}$", "output_kind": "raw"}
        for i in range(3)])
    assert gsm_mc.main(["--source", str(source), "--predictions", str(math), "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"error: {math}:1: this row is a 'math' prediction; this command reads gsm8k predictions"
    assert not (tmp_path / "out").exists()


def test_option_indices_are_no_generated_answers(tmp_path):
    path = write_jsonl(tmp_path / "preds.jsonl", [{"question_index": 0, "model": "a", "pred": 2}])
    with pytest.raises(UserError, match=r"preds.jsonl:1: the answer is an option index \(2\), not text"):
        require_texts(read_predictions([path]), "gsm8k")


# ---- generation ------------------------------------------------------------------------------------


def test_prompts_are_the_standard_few_shot_turns():
    request = gsm8k_request("How many?")
    assert len(request.messages) == 2 * len(GSM8K_EXEMPLARS) + 1 == 17
    assert request.messages[-1] == {"role": "user", "content": "Q: How many?\nA:"}
    assert request.temperature == 0.0
    math = math_request("Find x.")
    assert len(math.messages) == 2 * len(MATH_EXEMPLARS) + 1 == 9
    assert all(r"\boxed{" in m["content"] for m in math.messages if m["role"] == "assistant")


def test_generation_uses_the_cache_on_a_second_run(llm_server, tmp_path):
    answers = {"What is 1 + 1?": "1 + 1 = 2. The answer is 2.", "What is 3 + 3?": "The answer is 5."}
    llm_server.respond_with(lambda call: answers[call.user_text.removeprefix("Q: ").removesuffix("\nA:")]
                            if call.body["model"] == "m1" else "I don't know")
    settings = LLMSettings(llm_server.openai_base_url, api_key_env=None, cache_dir=tmp_path / "cache", concurrency=2)
    questions = {"test": {0: "What is 1 + 1?", 1: "What is 3 + 3?"}}
    run = generate_predictions(["m1", "m2"], questions, gsm8k_request, settings)
    assert [(p.model, p.ref["question_index"], p.output) for p in run.predictions] == [
        ("m1", 0, answers["What is 1 + 1?"]), ("m1", 1, answers["What is 3 + 3?"]),
        ("m2", 0, "I don't know"), ("m2", 1, "I don't know")]
    assert run.failures == {"m1": 0, "m2": 0} and len(llm_server.chat_requests) == 4
    assert all(body["temperature"] == 0.0 for body in llm_server.chat_bodies)
    again = generate_predictions(["m1", "m2"], questions, gsm8k_request, settings)
    assert again.predictions == run.predictions and len(llm_server.chat_requests) == 4
    write_predictions(run.predictions, tmp_path / "saved.jsonl")
    saved = read_predictions([tmp_path / "saved.jsonl"])
    assert [(p.model, p.ref, p.output) for p in saved] == [(p.model, p.ref, p.output) for p in run.predictions]
    matched, report = match(saved, items(["What is 1 + 1?", "What is 3 + 3?"]))
    assert report.matched.total() == 4 and [p.model for p in matched["gsm8k/test/1"]] == ["m1", "m2"]
    as_list = generate_predictions(["m1"], {"test": ["What is 3 + 3?"]}, gsm8k_request, settings)
    assert [(p.ref["question_index"], p.output) for p in as_list.predictions] == [(0, answers["What is 3 + 3?"])]


# ---- the shared kernel ----------------------------------------------------------------

def scattered_pools(items: int) -> list:
    """Pools as models' wrong answers make them: near misses around the key (given by 1 to 3 models each) and
    outliers (by one model), 3 to 7 distinct numbers."""
    from builders.from_predictions.pools import Pool

    rng = np.random.default_rng(7)
    pools = []
    for i in range(items):
        key, wrong = int(rng.integers(2000, 9000)), {}
        for _ in range(int(rng.integers(3, 8))):
            outlier = rng.random() < 0.3
            value = key + int(round(rng.normal(0, 600 if outlier else 100)))
            if value != key:
                wrong[str(value)] = 1 if outlier else int(rng.integers(1, 4))
        candidates = sorted((Candidate(text, tuple(f"m{k}" for k in range(n))) for text, n in wrong.items()),
                            key=lambda c: (-c.count, c.text))
        if len(candidates) >= 3:
            pools.append(Pool(f"q{i}", str(key), candidates))
    return pools


def drawn_records(pools, draw) -> list:
    from builders.core.items.rng import item_rng
    from builders.from_predictions import sets as mc

    records = []
    for index, pool in enumerate(pools):
        rng = item_rng(0, pool.question_id, "test", "set", 0)
        item = OpenItem(pool.question_id, "test", index, "q", pool.gold, pool.gold, "")
        records.append(mc.make_record(item, [mc.Option(c.text, mc.POOL, c.models) for c in draw(pool, rng)], rng, 0,
                                      pool.size, "x"))
    return records


@pytest.mark.slow
def test_the_balanced_draw_hides_the_key_that_the_weighted_draw_leaves_in_the_middle():
    """Drawn by frequency, the key sat near the middle of its options and was rarely the outlier; a
    choices-only model found it in 33-38% of GSM-MC's items (chance 25%). The balanced draw, its tilt fitted on
    one half of the pools, leaves the logistic ranking at chance on the other half."""
    from builders.core.validation import adversary
    from builders.from_predictions import sets as mc

    pools = scattered_pools(600)
    assert len(pools) == 599
    fitting, held_out = pools[:300], pools[300:]
    weighted = adversary.evaluate(drawn_records(held_out, lambda p, rng: mc.draw_from_pool(p, 3, rng, "weighted")), 0)
    assert weighted.low > 0.30 and weighted.warns and "the number nearer the options' median" in weighted.features
    tilt = mc.fit_balance_tilt(fitting, 3, float)
    balanced = adversary.evaluate(drawn_records(held_out, lambda p, rng: mc.draw_balanced(p, 3, rng, float, tilt)), 0)
    # The weighted sum of the features is back near chance; the gradient-boosted trees still read 29.8% (357 of 4
    # draws of 299), short of a warning on 299 items: what the balanced draw leaves, as on GSM-MC's full sets.
    linear, trees = dict(balanced.accuracies)["logistic regression"], dict(balanced.accuracies)["gradient-boosted trees"]
    assert linear < 0.28 and round(trees * 4 * 299) == 357 and not balanced.warns, balanced
    # the untilted draw is the weighted draw over subsets: the key is as central as with the weighted draw
    untilted = adversary.evaluate(drawn_records(held_out, lambda p, rng: mc.draw_balanced(p, 3, rng, float,
                                                                                         (0.0,) * 7)), 0)
    assert untilted.accuracy > 0.33


def test_the_balanced_draw_takes_distractors_of_the_keys_kind_where_the_pool_has_enough():
    """An integer key among fractions (or the only positive number) needs no knowledge: GSM8K's keys are
    integers, and "an integer among non-integers" was among the choices-only model's strongest features."""
    from builders.from_predictions.pools import Pool
    from builders.from_predictions.sets import draw_balanced, of_the_keys_kind

    def pool(gold: str, texts: str) -> Pool:
        return Pool("q", gold, [Candidate(t, ("m",)) for t in texts.split()])

    mixed = pool("12", "11 13.5 -12 14 2.5 24 6")
    assert [c.text for c in of_the_keys_kind(mixed, 3, float)] == ["11", "14", "24", "6"]
    assert all(float(c.text).is_integer() and float(c.text) > 0
               for seed in range(50) for c in draw_balanced(mixed, 3, np.random.default_rng(seed), float))
    assert [c.text for c in of_the_keys_kind(pool("2.5", "1.5 3.5 4 5 -1.5"), 2, float)] == ["1.5", "3.5"]
    # too few of the key's kind: every candidate stays, so that the item is not lost
    assert len(of_the_keys_kind(pool("12", "11 13.5 -12 2.5"), 3, float)) == 4


def test_the_balanced_draw_is_weighted_by_frequency_and_bounded_on_large_pools():
    from builders.from_predictions.pools import Pool
    from builders.from_predictions.sets import MAX_SUBSETS, balanced_subsets

    frequent = Pool("q", "10", [Candidate("9", tuple("abcdef")), Candidate("11", ("a",)), Candidate("12", ("a",))])
    candidates, subsets, probabilities = balanced_subsets(frequent, 2, float, (0.0,) * 7)
    chance_of = {tuple(candidates[i].text for i in row): p for row, p in zip(subsets.tolist(), probabilities, strict=True)}
    assert chance_of == pytest.approx({("9", "11"): 6 / 13, ("9", "12"): 6 / 13, ("11", "12"): 1 / 13})
    large = Pool("q", "0", [Candidate(str(k), ("m",) * (1 + k % 3)) for k in range(1, 41)])
    candidates, subsets, _ = balanced_subsets(large, 7, float)
    assert len(subsets) <= MAX_SUBSETS and len(candidates) == 14  # C(14, 7) = 3432, C(15, 7) = 6435


def test_random_distractors_leave_no_cue_in_the_values():
    """Offsets drawn over the whole interval at once left the gold closest to the options' mean in 48% of the
    real build's items (chance 25%) and in the middle ranks in 74%."""
    golds = ["7", "18", "40", "72", "150", "1200", "2880000", "3.5"]
    ranks, closest, total = [0] * 4, 0, 0
    for gold in golds:
        value = float(gold)
        for seed in range(300):
            options = [value] + [float(x) for x in gsm8k.random_distractors(gold, 3, np.random.default_rng(seed))]
            distance = [abs(option - sum(options) / 4) for option in options]
            # options equally near the mean share the pick: a small gold's window of consecutive integers ties two
            # of them often, and counting every tie for the gold would credit the rule with a cue it has not
            tied = [i for i in range(4) if distance[i] == min(distance)]
            closest += (0 in tied) / len(tied)
            ranks[sum(v < value for v in options)] += 1
            total += 1
    assert closest / total <= 0.30, closest / total
    assert all(0.20 <= n / total <= 0.30 for n in ranks), ranks
    # never the gold in another unit: 3 weeks is 21 days
    assert all("21" not in gsm8k.random_distractors("3", 7, np.random.default_rng(s), [Fraction(21), Fraction(3, 7)])
               for s in range(300))


def test_rounded_golds():
    from builders.from_predictions.pools import rounds_to

    assert rounds_to(Fraction(193, 512), Fraction("0.377"), 3) and rounds_to(Fraction("15.588457268119894"),
                                                                                Fraction("15.588"), 3)
    assert not rounds_to(Fraction(21, 2), Fraction(11), 0)  # 11 beside 10.5 is another answer
    assert not rounds_to(Fraction(7, 2), Fraction("3.5"), 2)  # the gold itself
    assert not rounds_to(Fraction("2.5"), Fraction("2.4"), 1)  # the gold has 1 decimal: 2.4 is wrong


ADVERSARIAL = {  # 1 MB each: the shapes that made extraction quadratic or worse
    "unclosed boxes": "\\boxed{" * 150_000,
    "nested boxes": "\\boxed{" * 60_000 + "1" + "}" * 60_000,
    "bare boxes": "\\boxed " * 150_000,
    "answer is, spaces": "The answer is" + " " * 1_000_000 + "x",
    "hashes, spaces": "####" + " " * 1_000_000 + "x",
    "braces": "{" * 1_000_000,
}


@pytest.mark.parametrize("name", ADVERSARIAL)
def test_answer_extraction_is_linear(name):
    """Regression: every ``\\boxed{`` sliced and scanned the rest of the text, so a 140 KB output took
    106 s of a GSM-MC build and a 5 MB one ran past 400 s. Now the braces are matched once: 1 MB takes well under
    a second, where the quadratic scan took hours."""
    text = ADVERSARIAL[name]
    for extract in (gsm8k.extract_answer_text, math_answers.extract_answer, math_answers.boxed_contents):
        start = time.perf_counter()
        extract(text)
        assert time.perf_counter() - start < 3.0, extract.__name__


def test_brace_matching_reads_boxes_as_before():
    from builders.from_predictions.extract import brace_pairs

    assert brace_pairs("a{b{c}d}e}{") == {3: 5, 1: 7}
    assert brace_pairs("\\{x{y}\\}", escapes=True) == {3: 5}
    assert gsm8k.last_boxed("\\boxed{1} then \\boxed{\\frac{2}{3}} and \\boxed{4") == "\\frac{2}{3}"
    assert math_answers.boxed_contents("\\boxed{\\{1, 2\\}} \\fbox{x} \\boxed 5$ \\boxed{") == ["\\{1, 2\\}", "x", "5"]
    assert math_answers.boxed_contents("\\boxed{" + "1" * 2000 + "} \\boxed{2}") == ["2"]  # too long: no answer


def test_consensus_rule_on_pools_of_any_engine():
    """The consensus check reads only a pool's counts, so MATH-MC's pools (any engine) get the same rule."""
    from builders.core.items.record import MCQRecord
    from builders.from_predictions import consensus
    from builders.from_predictions.pools import LeftOut, leave_out

    def pool(gold, answers):
        return build_pool("q", gold, [(f"m{i}", a) for i, a in enumerate(answers)], Numbers())

    assert consensus.suspect(pool("1", ["2", "2", "2", "1", "1", "5"])) is None  # 3 < 3 x 2 models on the key
    found = consensus.suspect(pool("1", ["2", "2", "2", "5", "6"]))
    assert (found.values, found.agreeing, found.key_models, found.valid_models) == (("2",), 3, 0, 5)
    assert found.exclusion().detail == "3 of 5 models answer 2, 0 the key 1"
    assert consensus.suspect(pool("1", ["2", "2", "2"] + ["1"] * 2 + [str(n) for n in range(10, 20)])) is None  # 3 < 20%
    # the key in another form is valid, never a wrong value: 3 models saying 100 (cents) back a key of 1 (dollar)
    cents = leave_out(pool("1", ["100", "100", "100", "7"]), lambda c: "unit_multiple:100" if c.text == "100" else None)
    assert cents.left_out == (LeftOut(Candidate("100", ("m0", "m1", "m2")), "unit_multiple:100"),)
    assert consensus.suspect(cents) is None
    # the validator's check reads the pool report, not the builder's rule
    flagged = pool("1", ["2", "2", "2", "5", "6"])
    check = consensus.no_suspect_check(pool_rows([flagged]))

    class Released:
        def records(self):
            yield "set_0", "test", [MCQRecord(id="q", question="?", choices=("1", "2"), answer=0, source="s",
                                              source_config="c", source_split="test", source_index=0)]

    assert list(check.find_violations(Released())) == ["set_0/test q: 3 of 5 models answer '2', 0 the key"]


def test_consensus_counts_models_not_samples_and_no_rows_of_errors_only():
    """MATH-MC's 3 suspect keys each rested on 8 samples of one model, counted as 8 models; GSM-MC's flags fired on
    GSM8K-Platinum's prediction rows, which hold its panel's errors only. A model counts once, and a model that
    gives no key on any of the 10 or more items it answers counts not at all, in the builder and the validator."""
    from collections import Counter

    from builders.core.items.record import MCQRecord
    from builders.from_predictions import consensus

    samples = build_pool("q", "1", [(f"one#{k}", "2") for k in range(8)] + [("other", "1")], Numbers())
    assert consensus.answer_counts(samples) == (1, Counter({"2": 1}), 2)
    assert consensus.suspect(samples) is None
    errors = [(f"errs{k}", "2") for k in range(3)]  # three error-only models, agreeing on 2 everywhere
    pools = {f"q{i}": build_pool(f"q{i}", "1", [*errors, ("a", "1"), *([("b", "5"), ("c", "5"), ("d", "5")]
                                                                       if i == 0 else [])], Numbers())
             for i in range(10)}
    assert consensus.error_only_models(pools.values()) == {"errs0", "errs1", "errs2"}
    found = consensus.suspects(pools)
    assert list(found) == ["q0"] and (found["q0"].values, found["q0"].agreeing, found["q0"].key_models,
                                      found["q0"].valid_models) == (("5",), 3, 1, 4)
    nine = {item: pool for item, pool in pools.items() if item != "q9"}  # 9 items: too few to call them errors only
    assert sorted(consensus.suspects(nine)) == [f"q{i}" for i in range(9)]
    check = consensus.no_suspect_check(pool_rows(pools.values()))

    class Released:
        def records(self):
            yield "set_0", "test", [MCQRecord(id=f"q{i}", question="?", choices=("1", "2"), answer=0, source="s",
                                              source_config="c", source_split="test", source_index=i)
                                    for i in range(10)]

    assert list(check.find_violations(Released())) == ["set_0/test q0: 3 of 4 models answer '5', 1 the key"]
    three_samples = build_pool("q0", "1", [(f"one#{k}", "2") for k in range(3)] + [("other", "1")], Numbers())
    assert consensus.suspect(three_samples) is None
    assert list(consensus.no_suspect_check(pool_rows([three_samples])).find_violations(Released())) == []


@pytest.mark.parametrize("name", ["gsm_mc", "math_mc"])
def test_help_of_the_prediction_builders_shows_the_consensus_rule(name, capsys):
    """The consensus rule's description holds a percent sign ("20% of"): argparse reads it as a format code unless
    it is escaped, and --help died with 'TypeError: %o format' (GSM-MC and MATH-MC alike)."""
    main = load_builder(name).main
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"--keep-suspect-keys keep the items whose key most models contradict (consensus check: {RULE.describe()})" in text


def test_the_rank_draw_makes_the_keys_rank_uniform_where_the_weighted_draw_centres_it():
    """Models' wrong answers scatter around the key (frequent ones close to it): drawn by frequency, the key sat
    in the middle of its options; the rank draw (kept to rebuild releases made before the balanced draw) first
    draws the key's rank, uniformly."""
    from builders.from_predictions.sets import draw_by_rank, draw_from_pool

    counts = {"8": 6, "9": 9, "11": 9, "12": 6, "2": 1, "3": 1, "17": 1, "18": 1, "25": 1}
    pool = build_pool("q", "10", [(f"{text}-{k}", text) for text, n in counts.items() for k in range(n)], Numbers())

    def ranks(draw) -> list[int]:
        found = [0] * 4
        for seed in range(2000):
            found[sum(float(c.text) < 10 for c in draw(np.random.default_rng(seed)))] += 1
        return found

    rank = ranks(lambda rng: draw_by_rank(pool, 3, rng, float))
    weighted = ranks(lambda rng: draw_from_pool(pool, 3, rng, "weighted"))
    assert all(450 <= n <= 550 for n in rank), rank
    assert weighted[0] + weighted[3] < 500, weighted  # the key at either end in under a quarter of the sets
    # a pool with 1 candidate below the key allows ranks 0 and 1 only, each half the time
    lopsided = build_pool("q", "10", [("a", "9"), ("b", "11"), ("c", "12"), ("d", "13")], Numbers())
    drawn = [sum(float(c.text) < 10 for c in draw_by_rank(lopsided, 3, np.random.default_rng(s), float))
             for s in range(400)]
    assert set(drawn) == {0, 1} and 170 <= drawn.count(0) <= 230


