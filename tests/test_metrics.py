"""Ranking metrics (accuracy, RStd, ranks, k_τ), the predictions readers, and the metrics command line."""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import struct
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
from fixtures import write_jsonl
from scipy.stats import kendalltau

import builders.metrics as metrics_cli
from builders.core.sources.predictions import (
    Prediction,
    PredictionError,
    read_predictions,
    resolve_prediction,
    write_predictions,
)
from builders import perturbations
from builders.perturbations import ranking as metrics

REPO = Path(__file__).resolve().parents[1]

# ---- a hand-computed leaderboard ------------------------------------------------------------------------
#
# 8 items, two golds per position; the perturbation moves every gold one position on (A->B, ..., D->A).
# Correct answers (items 1-8):          original        perturbed
#   alpha                               1-6  (75%)      1-2  (25%)
#   beta                                1-4  (50%)      1-8  (100%)
#   gamma                               1-4  (50%)      1-4  (50%)
#   delta                               1    (12.5%)    1-6  (75%)
# Recall per gold position (A, B, C, D), original: alpha 100 100 50 50 (RStd 25), beta and gamma 50 each
# (RStd 0), delta 50 0 0 0 (mean 12.5, RStd sqrt((37.5² + 3·12.5²)/4) = 21.650635). Perturbed (positions
# B, C, D, A hold items 1-4 and again 5-8): alpha 50 50 0 0 (RStd 25), beta 100s (0), gamma 50s (0),
# delta 100 100 50 50 (25).
# Ranks: original alpha 1, beta = gamma = 2, delta 4; perturbed beta 1, delta 2, gamma 3, alpha 4.
# Pairs: alpha-beta, alpha-gamma, alpha-delta and gamma-delta swap order; beta-gamma is tied before (not
# discordant); beta-delta keeps its order. 4 discordant of 6: k_τ = 1 - 2·4/6 = -1/3.
ORIGINAL_GOLD = [0, 1, 2, 3, 0, 1, 2, 3]
PERTURBED_GOLD = [(g + 1) % 4 for g in ORIGINAL_GOLD]
CORRECT = {"alpha": (6, 2), "beta": (4, 8), "gamma": (4, 4), "delta": (1, 6)}
EXPECTED_CSV = """model,rank_before,rank_after,rank_change,accuracy_before,accuracy_after,delta_accuracy,rstd_before,rstd_after,delta_rstd,items
alpha,1,4,-3,75.000000,25.000000,-50.000000,25.000000,25.000000,0.000000,8
beta,2,1,1,50.000000,100.000000,50.000000,0.000000,0.000000,0.000000,8
gamma,2,3,-1,50.000000,50.000000,0.000000,0.000000,0.000000,0.000000,8
delta,4,2,2,12.500000,75.000000,62.500000,21.650635,25.000000,3.349365,8
"""


def side_predictions(gold: list[int], correct: int) -> dict[str, int]:
    """The first ``correct`` items answered right, the others with the option two places on."""
    return {f"q{i + 1}": g if i < correct else (g + 2) % 4 for i, g in enumerate(gold)}


def hand_sides() -> tuple[metrics.Side, metrics.Side]:
    sides = []
    for name, gold, which in (("original", ORIGINAL_GOLD, 0), ("perturbed", PERTURBED_GOLD, 1)):
        sides.append(metrics.Side(name, {f"q{i + 1}": g for i, g in enumerate(gold)},
                                  {m: side_predictions(gold, c[which]) for m, c in CORRECT.items()}))
    return sides[0], sides[1]


def test_hand_computed_ranking():
    ranking = metrics.rank_models(*hand_sides())
    assert [(r.model, r.rank_before, r.rank_after, r.move) for r in ranking.rows] == [
        ("alpha", 1, 4, -3), ("beta", 2, 1, 1), ("gamma", 2, 3, -1), ("delta", 4, 2, 2)]
    alpha, _, _, delta = ranking.rows
    assert alpha.before.recall_by_position == {0: 100.0, 1: 100.0, 2: 50.0, 3: 50.0}
    assert alpha.after.recall_by_position == {0: 0.0, 1: 50.0, 2: 50.0, 3: 0.0}
    assert delta.before.rstd == pytest.approx(math.sqrt((37.5 ** 2 + 3 * 12.5 ** 2) / 4))
    assert (ranking.items, ranking.discordant) == (8, 4)
    assert ranking.k_tau == pytest.approx(-1 / 3)
    assert (len(ranking.moved), ranking.largest_move, ranking.largest_movers) == (4, 3, ["alpha"])
    assert metrics.to_csv(ranking) == EXPECTED_CSV
    markdown = metrics.to_markdown(ranking)
    assert "8 items compared. k_τ = -0.3333 (4 discordant of 6 pairs); 4 of 4 models changed rank; largest move: " \
           "3 places (alpha)." in markdown
    assert "| delta | 4 | 2 | +2 | 12.50 | 75.00 | +62.50 | 21.65 | 25.00 | +3.35 |" in markdown


def test_an_unchanged_leaderboard_has_k_tau_one_and_no_moves():
    original, _ = hand_sides()
    ranking = metrics.rank_models(original, original)
    assert ranking.k_tau == 1.0 and ranking.moved == [] and ranking.largest_move == 0 and ranking.largest_movers == []


def test_competition_ranks_share_the_best_rank_of_a_tie():
    assert metrics.competition_ranks({"a": 3, "b": 5, "c": 3, "d": 1}) == {"b": 1, "a": 2, "c": 2, "d": 4}


# ---- k_τ against scipy -----------------------------------------------------------------------------------


def test_k_tau_equals_scipy_kendall_tau_without_ties():
    """Without ties k_τ = (C − D)/N0 = tau-a, which equals scipy's tau-b and tau-c (they differ only on ties)."""
    rng = random.Random(0)
    for n in range(2, 12):
        for _ in range(10):
            x, y = list(range(n)), rng.sample(range(n), n)
            k = metrics.kendall_k_tau(x, y)
            assert k == pytest.approx(kendalltau(x, y).statistic)
            assert k == pytest.approx(kendalltau(x, y, variant="c").statistic)
    assert metrics.kendall_k_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0


def tied_pairs(values) -> int:
    return sum(1 for a, b in itertools.combinations(values, 2) if a == b)


def test_k_tau_with_ties_is_tau_a_plus_the_share_of_tied_pairs():
    """With ties no scipy variant is k_τ: the formula counts a pair tied on either side as not discordant.

    scipy's tau-b = (C − D)/sqrt((N0 − n1)(N0 − n2)), with n1, n2 the pairs tied in x, in y. So tau-a =
    (C − D)/N0 follows from tau-b, and k_τ = 1 − 2D/N0 = (C − D + T)/N0 = tau-a + T/N0, where T = n1 + n2 − n12
    are the pairs tied on either side (n12: tied on both).
    """
    rng = random.Random(1)
    checked = 0
    for _ in range(200):
        n = rng.randint(3, 9)
        x = [rng.randint(0, 3) for _ in range(n)]
        y = [rng.randint(0, 3) for _ in range(n)]
        if len(set(x)) < 2 or len(set(y)) < 2:
            continue  # tau-b is undefined for a constant ranking
        pairs = n * (n - 1) // 2
        n1, n2, n12 = tied_pairs(x), tied_pairs(y), tied_pairs(list(zip(x, y, strict=True)))
        tau_a = kendalltau(x, y).statistic * math.sqrt((pairs - n1) * (pairs - n2)) / pairs
        assert metrics.kendall_k_tau(x, y) == pytest.approx(tau_a + (n1 + n2 - n12) / pairs)
        checked += 1
    assert checked > 150
    # one tie, no discordant pair: k_τ is 1, tau-b is 2/sqrt(6)
    assert metrics.kendall_k_tau([1, 1, 2], [1, 2, 3]) == 1.0
    assert kendalltau([1, 1, 2], [1, 2, 3]).statistic == pytest.approx(2 / math.sqrt(6))


def test_k_tau_needs_two_models():
    assert math.isnan(metrics.kendall_k_tau([1], [1]))


# ---- reading predictions ---------------------------------------------------------------------------------


def test_resolve_prediction_from_index_or_label():
    labels = ("$", "&", "#", "@")
    assert [resolve_prediction(p, labels) for p in (2, "&", " @ ", "(#)", "$.", 4, "B", None)] == [2, 1, 3, 2, 0, None, None, None]
    assert resolve_prediction("B", tuple("ABCD")) == 1


def test_jsonl_predictions_and_their_errors(tmp_path):
    path = write_jsonl(tmp_path / "p.jsonl", [{"model": "m", "id": "q1", "pred": 1}, {"model": "m", "id": 2, "output": "C"},
                                              {"model": "n", "id": "q1", "pred": None}])
    found = read_predictions([path])
    assert [(p.model, p.ref, p.output) for p in found] == [("m", {"id": "q1"}, 1), ("m", {"id": "2"}, "C"),
                                                          ("n", {"id": "q1"}, None)]
    assert [p.origin for p in found] == [f"{path}:1", f"{path}:2", f"{path}:3"]
    assert {p.model for p in read_predictions([path], model="renamed")} == {"renamed"}
    assert {p.model for p in read_predictions([f"spec-name={path}"], model="renamed")} == {"spec-name"}
    for number, (row, message) in enumerate([
            ({"model": "m", "id": "q2"}, "exactly one of 'output', 'pred' or 'answer'"),
            ({"model": "m", "id": "q2", "pred": 1, "output": "B"}, "exactly one of 'output', 'pred' or 'answer'"),
            ({"id": "q2", "pred": 1}, "'model' must be a non-empty string"),
            ({"model": "m", "pred": 1, "split": "test"}, "the row names no item"),
            ({"model": "m", "id": True, "pred": 1}, "'id' must be a string or an integer"),
            ({"model": "m", "question_index": "3", "pred": 1}, "'question_index' must be an integer"),
            ({"model": "m", "id": "q2", "pred": [1]}, "'pred' must be an option index, a label, a text or null"),
            ({"model": "m", "id": "q2", "output": "x", "output_kind": "parsed"}, "'output_kind' must be")]):
        bad = write_jsonl(tmp_path / f"bad{number}.jsonl", [{"model": "m", "id": "q1", "pred": 1}, row])
        with pytest.raises(PredictionError, match=rf"bad{number}.jsonl:2: .*{re.escape(message)}"):
            read_predictions([bad])
    (tmp_path / "broken.jsonl").write_text('{"model": "m", "id": "q1", "pred": 1}\n{not json\n')
    with pytest.raises(PredictionError, match=r"broken.jsonl:2: invalid JSON"):
        read_predictions([tmp_path / "broken.jsonl"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(PredictionError, match="no .jsonl file in this folder"):
        read_predictions([tmp_path / "empty"])
    with pytest.raises(PredictionError, match="no such file or folder"):
        read_predictions([f"m={tmp_path / 'missing.jsonl'}"])


def test_raw_line_separators_inside_strings_stay_in_their_row(tmp_path):
    """JSON lines end at "\\n" only: a raw U+2028 or U+0085 in a string (the real MMLU-Pro test row 5074 has
    one; json.dumps(ensure_ascii=False) writes them raw) is part of its row, and written predictions read back."""
    written = [Prediction("m", "first\u2028second\x85third", {"id": "q1"}, "generated"),
               Prediction("m", "D", {"question_index": 3, "split": "test"}, "generated", extracted=True)]
    write_predictions(written, tmp_path / "saved.jsonl")
    assert (tmp_path / "saved.jsonl").read_text(encoding="utf-8").count("\u2028") == 1
    found = read_predictions([tmp_path / "saved.jsonl"])
    assert [(p.model, p.output, p.ref, p.extracted) for p in found] == \
        [(p.model, p.output, p.ref, p.extracted) for p in written]
    assert [p.origin for p in found] == [f"{tmp_path / 'saved.jsonl'}:1", f"{tmp_path / 'saved.jsonl'}:2"]


STAMP = "2026-01-01T00-00-00.000001"


def lm_eval_sample(doc_id: int, item_id: str, gold: int, logliks, continuations, **logged) -> dict:
    return {"doc_id": doc_id, "doc": {"id": item_id, "answer": gold}, "target": str(gold),
            "arguments": {f"gen_args_{i}": {"arg_0": "Q?\nAnswer:", "arg_1": c} for i, c in enumerate(continuations)},
            "resps": [[[str(ll), "False"]] for ll in logliks], "filtered_resps": [[str(ll), "False"] for ll in logliks],
            "filter": "none", "metrics": list(logged), **logged}


def write_lm_eval_log(folder: Path, task: str, samples, model_name: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = write_jsonl(folder / f"samples_{task}_{STAMP}.jsonl", samples)
    if model_name is not None:
        (folder / f"results_{STAMP}.json").write_text(json.dumps({"model_name": model_name, "configs": {task: {}}}))
    return path


def test_lm_eval_logs_acc_and_acc_norm(tmp_path):
    # option 0 has the higher log-likelihood, option 1 the higher per character: -2/2 = -1 < -3/6 = -0.5
    sample = lm_eval_sample(0, "q1", 1, [-2.0, -3.0], [" ab", " abcdef"], acc=0.0, acc_norm=1.0)
    path = write_lm_eval_log(tmp_path / "run" / "models__smol", "mytask", [sample], "/models/smol")
    [auto] = read_predictions([tmp_path / "run"])
    assert (auto.model, auto.ref["id"], auto.ref["doc_id"], auto.output, auto.gold, auto.task) == ("smol", "q1", 0, 1, 1, "mytask")
    assert read_predictions([path], score="acc")[0].output == 0
    tampered = dict(sample, acc=1.0)  # a log whose metric disagrees with its log-likelihoods is refused
    write_lm_eval_log(tmp_path / "bad", "mytask", [tampered], "org/model")
    with pytest.raises(PredictionError, match="disagrees with the logged acc"):
        read_predictions([tmp_path / "bad"], score="acc")
    assert read_predictions([tmp_path / "bad"])[0].model == "org/model"
    no_results = write_lm_eval_log(tmp_path / "plain-folder", "mytask", [sample], None)
    assert read_predictions([no_results])[0].model == "plain-folder"


def test_lm_eval_generation_logs_give_the_filtered_text(tmp_path):
    """The task's filter is its answer extraction: a filtered answer is ``extracted``; a doc logged once per
    filter is one prediction (its first row); a generation's target is no option index."""
    sample = {"doc_id": 3, "doc": {"question": "2+2?"}, "target": "4", "arguments": {}, "resps": [["So 2+2 = 4."]],
              "filtered_resps": ["4"], "filter": "strict-match", "exact_match": 1.0}
    unfiltered = {"doc_id": 4, "doc": {"question": "3+3?"}, "target": "6", "arguments": {}, "resps": [["It is 6."]],
                  "filtered_resps": ["It is 6."], "filter": "none", "exact_match": 0.0}
    again = dict(sample, filtered_resps=["2"], filter="flexible-extract")
    found = read_predictions([write_lm_eval_log(tmp_path, "gen", [sample, again, unfiltered], "m")])
    assert [(p.ref, p.output, p.extracted, p.gold) for p in found] == [
        ({"question": "2+2?", "doc_id": 3}, "4", True, None), ({"question": "3+3?", "doc_id": 4}, "It is 6.", False, None)]


# ---- the command line -----------------------------------------------------------------------------------


def write_hand_logs(root: Path) -> tuple[Path, Path]:
    """The hand-computed leaderboard as lm-eval output folders, one per side."""
    for side, gold, which in (("original", ORIGINAL_GOLD, 0), ("perturbed", PERTURBED_GOLD, 1)):
        for model, correct in CORRECT.items():
            samples = []
            for i, (item_id, pred) in enumerate(side_predictions(gold, correct[which]).items()):
                logliks = [-1.0 if k == pred else -5.0 for k in range(4)]
                samples.append(lm_eval_sample(i, item_id, gold[i], logliks, [" A", " B", " C", " D"],
                                              acc=float(pred == gold[i])))
            write_lm_eval_log(root / side / model, f"task_{side}", samples, model)
    return root / "original", root / "perturbed"


def test_cli_ranking_from_lm_eval_logs(tmp_path, capsys):
    original, perturbed = write_hand_logs(tmp_path / "logs")
    out = tmp_path / "out"
    assert metrics_cli.main(["ranking", "--original", str(original), "--perturbed", str(perturbed), "--output", str(out),
                         "--perturbed-name", "shuffle"]) == 0
    assert (out / "ranking.csv").read_text() == EXPECTED_CSV
    printed = capsys.readouterr().out
    assert "## Ranking: original → shuffle" in printed and "k_τ = -0.3333" in printed
    summary = json.loads((out / "ranking.json").read_text())
    assert (summary["k_tau"], summary["models_moved"], summary["largest_movers"]) == (pytest.approx(-1 / 3), 4, ["alpha"])
    assert summary["models"][0]["recall_by_position_before"] == {"A": 100.0, "B": 100.0, "C": 50.0, "D": 50.0}
    png = (out / "ranking.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert width == 960 and height >= 360  # 8 x 3 inches at 120 dpi, or taller for more models


def test_cli_ranking_from_jsonl_with_the_dataset_gold(tmp_path):
    """JSONL labels are resolved against each config's labels; the gold comes from the release."""
    rows = [{"question": f"Question {i}?", "subject": "s", "choices": [f"{i}a", f"{i}b", f"{i}c", f"{i}d"], "answer": i % 4}
            for i in range(12)]
    write_jsonl(tmp_path / "src" / "test.jsonl", rows)
    release = tmp_path / "release"
    assert perturbations.main(["--source", str(tmp_path / "src"), "--only", "symbols_common_shuffled_content",
                               "--output", str(release)]) == 0
    config = "symbols_common_shuffled_content"
    sides = {name: {r["id"]: r for r in datasets.load_dataset(str(release), name, split="test")}
             for name in ("original", config)}
    files = {}
    for name, items in sides.items():
        lines = []
        for item_id, row in items.items():
            lines.append({"model": "oracle", "id": item_id, "pred": row["labels"][row["answer"]]})
            lines.append({"model": "first", "id": item_id, "pred": row["labels"][0]})
            lines.append({"model": "by_text", "id": item_id, "pred": row["choices"].index(f"{item_id.split('/')[-1]}a")})
        files[name] = write_jsonl(tmp_path / f"{name}.jsonl", lines)
    out = tmp_path / "out"
    assert metrics_cli.main(["ranking", "--original", str(files["original"]), "--perturbed", str(files[config]),
                         "--dataset", str(release), "--perturbed-config", config, "--output", str(out)]) == 0
    result = json.loads((out / "ranking.json").read_text())
    accuracy = {m["model"]: (m["accuracy_before"], m["accuracy_after"]) for m in result["models"]}
    at_first = {name: 100 * sum(r["answer"] == 0 for r in items.values()) / 12 for name, items in sides.items()}
    assert accuracy["oracle"] == (100.0, 100.0)
    assert accuracy["first"] == (at_first["original"], at_first[config])
    # `by_text` always picks the source's first option, which is the gold for items 0, 4 and 8
    assert accuracy["by_text"] == (25.0, 25.0) and result["items"] == 12


def test_cli_errors(tmp_path, capsys):
    path = write_jsonl(tmp_path / "p.jsonl", [{"model": "m", "id": "q1", "pred": 1}])
    assert metrics_cli.main(["ranking", "--original", str(path), "--perturbed", str(path), "--output", str(tmp_path / "o")]) == 2
    assert "plain JSONL predictions need --dataset" in capsys.readouterr().err
    original, perturbed = write_hand_logs(tmp_path / "logs")
    (perturbed / "delta").rename(perturbed.parent / "elsewhere")
    assert metrics_cli.main(["ranking", "--original", str(original), "--perturbed", str(perturbed), "--output", str(tmp_path / "o")]) == 2
    assert "different models: only original ['delta']" in capsys.readouterr().err
    assert metrics_cli.main(["no-such-subcommand"]) == 2
    assert capsys.readouterr().err.startswith("error: argument SUBCOMMAND: invalid choice: 'no-such-subcommand'")


def test_subcommands_are_a_plain_table(capsys):
    assert set(metrics_cli.SUBCOMMANDS) == {"ranking", "mmlu-pro-plus"}
    with pytest.raises(SystemExit):
        metrics_cli.main(["--help"])
    out = capsys.readouterr().out
    assert "ranking" in out and "mmlu-pro-plus" in out


def test_module_command_line_lists_the_subcommands():
    result = subprocess.run([sys.executable, "-m", "builders.metrics", "--help"], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0 and "ranking" in result.stdout
    result = subprocess.run([sys.executable, "-m", "builders.metrics", "ranking", "--help"], capture_output=True,
                            text=True, cwd=REPO)
    assert result.returncode == 0
    for option in ["--original", "--perturbed", "--output", "--dataset", "--revision", "--perturbed-config", "--score"]:
        assert option in result.stdout


# ---- one reader for every command ---------------------------------------------------------------------


def test_every_command_reads_predictions_with_the_one_reader(tmp_path, capsys):
    """The same file gives the same one-line error in every command that reads predictions
    (each had its own reader and message; PythonIO counted the row as unused)."""
    from test_gsm_mc import GSM8K_TEST
    from test_math_mc import MATH_TEST
    from test_python_io import write_sources

    from builders import gsm_mc
    from builders import math_mc
    from builders import python_io

    bad = write_jsonl(tmp_path / "preds.jsonl", [{"model": "m", "question_index": 0, "output": "1"},
                                                 {"model": "m", "question_index": 1}])
    sources = {"gsm8k": write_jsonl(tmp_path / "gsm8k" / "test.jsonl", GSM8K_TEST).parent,
               "math": write_jsonl(tmp_path / "math" / "test.jsonl", MATH_TEST).parent,
               "python": write_sources(tmp_path / "python")}
    out = str(tmp_path / "out")
    runs = {
        "ranking": lambda: metrics_cli.main(["ranking", "--original", str(bad), "--perturbed", str(bad), "--output", out]),
        "mmlu-pro-plus": lambda: metrics_cli.main(["mmlu-pro-plus", "--dataset", str(tmp_path / "none"), "--before",
                                                   str(bad), "--after", str(bad)]),
        "gsm_mc": lambda: gsm_mc.main(["--source", str(sources["gsm8k"]), "--predictions", str(bad), "--output", out]),
        "math_mc": lambda: math_mc.main(["--source", str(sources["math"]), "--predictions", str(bad), "--output", out]),
        "python_io": lambda: python_io.main(["--source", str(sources["python"]), "--unsafe-no-sandbox", "--predictions",
                                             str(bad), "--output", out]),
    }
    for command, run in runs.items():
        assert run() == 2, command
        assert capsys.readouterr().err.splitlines()[-1] == \
            f"error: {bad}:2: give the answer as exactly one of 'output', 'pred' or 'answer' (null for no answer)", command


@pytest.mark.parametrize("subcommand", ["ranking", "mmlu-pro-plus"])
@pytest.mark.parametrize("where, expected", [("a_file", "is a file, not a folder"),
                                             ("a_file/below", "cannot create it there")])
def test_a_bad_output_is_one_line_before_any_reading(tmp_path, capsys, subcommand, where, expected):
    """--output was only created after the whole computation, and a file there was a traceback."""
    (tmp_path / "a_file").write_text("x")
    missing = str(tmp_path / "no_such_predictions.jsonl")  # never read: the output is checked first
    argv = {"ranking": ["ranking", "--original", missing, "--perturbed", missing],
            "mmlu-pro-plus": ["mmlu-pro-plus", "--dataset", str(tmp_path), "--before", missing, "--after", missing]}
    assert metrics_cli.main([*argv[subcommand], "--output", str(tmp_path / where)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --output ") and expected in lines[0], lines


def test_an_empty_predictions_file_is_named(tmp_path, capsys):
    original, _ = write_hand_logs(tmp_path / "logs")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert metrics_cli.main(["ranking", "--original", str(original), "--perturbed", str(empty),
                             "--output", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == f"error: --perturbed {empty}: no predictions in it"
    assert not (tmp_path / "o").exists()
