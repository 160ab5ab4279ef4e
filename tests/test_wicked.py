"""WiCkeD: the paper's algorithm, the gold tracked by index, and the bugs of the reference code."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from functools import partial
from pathlib import Path

import datasets
import pytest
import yaml
from fixtures import MMLU_TEST, outcome_rows, read_lm_eval_task, write_benchmark, write_jsonl
from fixtures_mmlu_references import (FORMS, NONE_LIKE, PROSE_REFERENCES, TRUTHFUL_QA_NO_COMMENT,
                                     TRUTHFUL_QA_NONE_LIKE_KEYS)

from builders import wicked
from builders.core.errors import ValidationFailed
from builders.core.items.referring import NOTA_TEXT
from builders.core.items.outcomes import ExclusionLog
from builders.core.pipeline import cli
from builders.core.pipeline.steps import Run
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import load_source
from builders.core.validation.validate import validate
from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parents[1]


def wicked_args(**overrides) -> wicked.Options:
    parser = cli.builder_parser(wicked.BUILDER)
    args = parser.parse_args(["--sba-classifier", "none"])
    for key, value in overrides.items():
        setattr(args, key, value)
    return wicked.BUILDER.options_of(args)


def wicked_build(source, options: wicked.Options):
    """The build of ``options`` from ``source``, as the command line makes it (the core runs WiCkeD's steps)."""
    return wicked.BUILDER.make_build(source, options)


def build_fixture(tmp_path, name="mmlu", **overrides):
    source = load_source(BENCHMARKS[name], str(write_benchmark(name, tmp_path)))
    return wicked_build(source, wicked_args(**overrides))


def test_configs_counts_and_skip_reasons(tmp_path):
    build = build_fixture(tmp_path)
    assert list(build.configs) == ["original"] + [f"variant_{k}" for k in range(5)]
    for splits in build.configs.values():
        assert {split: len(records) for split, records in splits.items()} == {"test": 8, "dev": 3}
    skips = [r.metadata["skip_reason"] for r in build.configs["variant_0"]["test"]]
    assert skips == [None, None, None, None, "has_all_of_the_above", "has_none_of_the_above",
                     "has_option_combination", None]
    report = validate(build)
    assert report.passed and report.counts["variant_3"]["test"] == {"in": 8, "out": 8, "excluded": 0}


def test_add_nota_replaces_one_option_and_tracks_the_gold(tmp_path):
    build = build_fixture(tmp_path, variants=40)
    originals = {r.id: r for r in build.configs["original"]["test"]}
    removed_positions, nota_answers = set(), 0
    for k in range(40):
        for record in build.configs[f"variant_{k}"]["test"]:
            original, meta = originals[record.id], record.metadata
            if meta["skip_reason"]:
                assert record == original.with_metadata(**meta)
                continue
            assert len(record.choices) == len(original.choices) and record.choices[-1] == NOTA_TEXT
            removed = meta["removed_index"]
            removed_positions.add(removed)
            expected = [c for i, c in enumerate(original.choices) if i != removed] + [NOTA_TEXT]
            assert list(record.choices) == expected
            if removed == original.answer:
                nota_answers += 1
                assert record.answer == 3 and meta["nota_is_answer"] and original.gold not in record.choices
            else:
                assert record.gold == original.gold and not meta["nota_is_answer"]
    assert removed_positions == {0, 1, 2, 3}
    assert 0.15 < nota_answers / (40 * 5) < 0.35  # 5 altered items, NOTA is the answer ~1/4 of the time


def test_golden_output_is_stable_across_releases(tmp_path):
    # A change of RNG or algorithm would silently change every published dataset: pin one item.
    record = build_fixture(tmp_path, seed=7).configs["variant_2"]["test"][0]
    assert (record.choices, record.answer, record.metadata["removed_index"]) == (("4", "6", "7", NOTA_TEXT), 3, 1)


@pytest.mark.slow
def test_random_nota_position_keeps_the_gold(tmp_path):
    build = build_fixture(tmp_path, variants=30, nota_position="random")
    originals = {r.id: r for r in build.configs["original"]["test"]}
    positions = set()
    for k in range(30):
        for record in build.configs[f"variant_{k}"]["test"]:
            if record.metadata["skip_reason"]:
                continue
            nota = record.metadata["nota_index"]
            positions.add(nota)
            assert record.choices[nota] == NOTA_TEXT and record.choices.count(NOTA_TEXT) == 1
            if record.metadata["nota_is_answer"]:
                assert record.answer == nota
            else:
                assert record.gold == originals[record.id].gold
    assert positions == {0, 1, 2, 3}
    assert validate(build).passed


def test_regression_arc_gold_is_found_by_label_not_text(tmp_path):
    """The reference code compared ARC's integer index to option texts: every altered item got NOTA."""
    build = build_fixture(tmp_path, name="arc_challenge", variants=20)
    altered = [r for k in range(20) for r in build.configs[f"variant_{k}"]["test"]]
    assert all(r.metadata["removed_index"] is not None for r in altered)
    for record in altered:
        assert record.metadata["nota_is_answer"] == (record.metadata["removed_index"] == record.metadata["original_answer_index"])
    rate = sum(r.metadata["nota_is_answer"] for r in altered) / len(altered)
    assert 0.1 < rate < 0.45
    assert validate(build).passed


def test_regression_gold_is_read_before_any_mutation(tmp_path):
    """The reference code read the gold from a list it had already edited through a shallow copy."""
    folder = write_benchmark("mmlu", tmp_path)
    source = load_source(BENCHMARKS["mmlu"], str(folder))
    before = {split: list(records) for split, records in source.items.items()}
    build = wicked_build(source, wicked_args())
    assert source.items == before == load_source(BENCHMARKS["mmlu"], str(folder)).items
    assert build.configs["original"] == before
    record = before["test"][0]
    with pytest.raises(AttributeError):
        record.choices.remove("4")  # choices are a tuple: no transform can mutate them in place


def test_regression_no_second_nota(tmp_path):
    rows = [dict(MMLU_TEST[0], choices=["4", "5", "6", "none of these"]), MMLU_TEST[1]]
    source = load_source(BENCHMARKS["mmlu"], str(write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows).parent))
    build = wicked_build(source, wicked_args(variants=10))
    for k in range(10):
        first, second = build.configs[f"variant_{k}"]["test"]
        assert first.choices == ("4", "5", "6", "none of these") and first.metadata["skip_reason"] == "has_none_of_the_above"
        assert second.choices.count(NOTA_TEXT) == 1


def test_validation_refuses_a_broken_build(tmp_path):
    build = build_fixture(tmp_path)
    records = build.configs["variant_0"]["test"]
    altered = next(i for i, r in enumerate(records) if r.metadata["removed_index"] is not None and not r.metadata["nota_is_answer"])
    records[altered] = records[altered].replace(answer=(records[altered].answer + 1) % 3)
    with pytest.raises(ValidationFailed, match="gold_tracked"):
        validate(build)
    del records[0]
    with pytest.raises(ValidationFailed, match="rows_accounted"):
        validate(build)


def test_validation_refuses_an_outcome_table_that_loses_a_row(tmp_path):
    """The card's outcome table is checked like the configs: altered + copied = rows out, + excluded =
    rows in, per config and split."""
    build = build_fixture(tmp_path)
    assert validate(build).passed
    build.outcomes.counts["variant_2", "test", "altered", ""] -= 1
    with pytest.raises(ValidationFailed, match="variant_2/test: 7 altered or copied unchanged != 8 records out"):
        validate(build)


def _parquet_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


def test_the_cli_build_loads_in_datasets_with_its_features(tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--output", str(tmp_path / "out1")]) == 0
    assert len(list((tmp_path / "out1").rglob("*.parquet"))) == 12
    loaded = datasets.load_dataset(str(tmp_path / "out1"), "variant_0")
    assert loaded["test"].num_rows == 8 and loaded["dev"].num_rows == 3
    assert loaded["test"].features["metadata"]["nota_is_answer"] == datasets.Value("bool")
    row = loaded["test"][0]
    assert row["id"] == "mmlu/test/0" and row["choices"][-1] == NOTA_TEXT


VARIANTS = "variant_0, variant_1, variant_2"


@pytest.mark.slow
def test_card_shows_the_outcome_table_with_exact_counts(tmp_path):
    """The card's one table of what became of every row, per config (the variants, whose counts are the
    same, share their rows): altered, copied unchanged with the reason (`metadata.skip_reason`; `original` holds the
    source unchanged), excluded with the reason."""
    folder = write_benchmark("mmlu", tmp_path)
    write_jsonl(folder / "test.jsonl", [*MMLU_TEST, {**MMLU_TEST[0], "choices": ["4"]}])  # one option: malformed
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--variants", "3",
                        "--output", str(tmp_path / "out")]) == 0
    assert outcome_rows((tmp_path / "out" / "README.md").read_text()) == [
        ("original", "test", "copied unchanged", "source_unchanged", 8),
        ("original", "test", "excluded", "malformed_row", 1),
        ("original", "dev", "copied unchanged", "source_unchanged", 3),
        (VARIANTS, "test", "altered", "–", 5),
        (VARIANTS, "test", "copied unchanged", "has_all_of_the_above", 1),
        (VARIANTS, "test", "copied unchanged", "has_none_of_the_above", 1),
        (VARIANTS, "test", "copied unchanged", "has_option_combination", 1),
        (VARIANTS, "test", "excluded", "malformed_row", 1),
        (VARIANTS, "dev", "altered", "–", 3)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mmlu", "mmlu_pro", "mmlu_redux", "commonsense_qa", "truthful_qa", "arc_challenge"])
def test_every_benchmark_builds(tmp_path, name):
    folder = write_benchmark(name, tmp_path)
    assert wicked.main(["--benchmark", name, "--source", str(folder), "--sba-classifier", "none",
                        "--variants", "2", "--output", str(tmp_path / "out")]) == 0
    card = (tmp_path / "out" / "README.md").read_text()
    assert "NOTA-answer rate" in card and "| gold_tracked |" in card


@pytest.mark.slow
@pytest.mark.parametrize("name, shots", [("mmlu", 5), ("truthful_qa", 0)])
def test_card_mentions_nota_demonstrations_only_where_the_tasks_show_some(tmp_path, name, shots):
    """Regression: the card of a source without a few-shot split (TruthfulQA, the local MMLU-Pro copy) said
    "few-shot prompts drawn from the few-shot split contain NOTA examples too" while its tasks are zero-shot."""
    folder = write_benchmark(name, tmp_path)
    assert wicked.main(["--benchmark", name, "--source", str(folder), "--sba-classifier", "none", "--variants", "1",
                        "--output", str(tmp_path / "out")]) == 0
    card = " ".join((tmp_path / "out" / "README.md").read_text().split())
    folder = tmp_path / "out" / "lm_eval"
    members = yaml.safe_load((folder / f"wicked_{name}_variant_0.yaml").read_text())["task"]
    tasks = [read_lm_eval_task(folder / f"{member}.yaml") for member in members]
    # the fixture's subjects have 0 to 3 demonstrations each: a subject shows those it has
    assert {task.get("fewshot_split") for task in tasks} - {None} == ({"dev"} if shots else set())
    assert (max(task["num_fewshot"] for task in tasks) > 0) == (shots == 5)
    assert ("few-shot prompts drawn from the dev split contain NOTA examples too" in card) == (shots == 5)
    assert ("its lm-eval tasks show no demonstrations" in card) == (shots == 0)
    assert "from the few-shot split" not in card


def test_offline_hub_classifier_gives_a_clear_error(tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", BUILDERS["wicked"], "--source", str(folder), "--output", str(tmp_path / "out")],
        capture_output=True, text=True, cwd=REPO,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot load SBA classifier 'ahmedselhady/bert-base-uncased-sba-clf'")
    assert "--sba-classifier none" in last and "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_classifier_is_checked_before_the_source_is_read(tmp_path, local_hub):
    """Offline, WiCkeD with the default SBA classifier read the whole source (24 s on MMLU) before it said that
    the classifier could not be loaded; a Hub id the Hub does not have, or a folder that holds no model, too."""
    folder = write_benchmark("mmlu", tmp_path)
    command = [sys.executable, "-m", BUILDERS["wicked"], "--source", str(folder), "--output", str(tmp_path / "out")]
    offline = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cases = [([], offline, "error: cannot load SBA classifier 'ahmedselhady/bert-base-uncased-sba-clf': "
                           "HF_HUB_OFFLINE is set and the model is not in the local Hub cache"),
             (["--sba-classifier", "someone/no-such-classifier"], os.environ,
              "error: cannot load SBA classifier 'someone/no-such-classifier': the Hub has no such model; "),
             (["--sba-classifier", str(tmp_path)], os.environ,
              f"error: SBA classifier {tmp_path}: no model folder there (no config.json); ")]
    for extra, env, expected in cases:
        result = subprocess.run(command + extra, capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
        assert result.returncode == 2 and result.stderr.startswith(expected), result.stderr
        assert len(result.stderr.splitlines()) == 1  # nothing was read: no "loaded mmlu" line, no progress bar
    assert not (tmp_path / "out").exists()


def _reference_source(tmp_path):
    from fixtures_mmlu_references import REFERENCES

    for split in ("test", "dev"):
        rows = [{k: item[k] for k in ("question", "subject", "choices", "answer")} for item in REFERENCES
                if item["split"] == split]
        write_jsonl(tmp_path / "mmlu" / f"{split}.jsonl", rows)
    return load_source(BENCHMARKS["mmlu"], str(tmp_path / "mmlu")), REFERENCES


def test_real_mmlu_references_are_copied_unchanged_with_the_reason(tmp_path):
    """Regression: "Both a and c", "a. and b. above", "both a and b." ... are never altered (79 real MMLU items)."""
    source, references = _reference_source(tmp_path)
    build = wicked_build(source, wicked_args(variants=3))
    expected = [item["reason"] for item in references if item["split"] == "test"]
    for k in range(3):
        records = build.configs[f"variant_{k}"]["test"]
        assert [r.metadata["skip_reason"] for r in records] == expected and len(records) == 78
        assert all(r.metadata["removed_index"] is None for r in records)
        assert [(r.question, r.choices, r.answer) for r in records] == [
            (o.question, o.choices, o.answer) for o in build.configs["original"]["test"]]
        assert build.configs[f"variant_{k}"]["dev"][0].metadata["skip_reason"] == "has_option_combination"
    shares = build.release.statistics.tables[0]
    assert shares.title == "Altered and flagged SBA"
    assert shares.rows[0][:3] == ("test", 78, 0.0) and shares.rows[0][4] == 1.0
    # counted in every variant: the outcome table's copies are the skip reasons, none altered
    for k in range(3):
        assert build.outcomes.reasons("test", f"variant_{k}") == dict(sorted(Counter(expected).items()))
        assert build.outcomes.total(config=f"variant_{k}") == 79
    assert build.outcomes.total("altered") == 0 and build.outcomes.reasons("test", "original") == {"source_unchanged": 78}
    assert validate(build).passed


def test_validator_catches_a_reference_the_builder_misses(tmp_path, monkeypatch):
    """The validator's reference check is independent: with the builder's detector blinded, the 79 real
    reference items are altered in each of 2 variants, and the build is refused."""
    monkeypatch.setattr(wicked.transform, "position_dependent_reason", lambda choices: None)
    monkeypatch.setattr(wicked.transform, "none_like_option", lambda choices: None)  # it would keep the bare "None." items
    source, _ = _reference_source(tmp_path)
    build = wicked_build(source, wicked_args(variants=2))
    assert all(r.metadata["removed_index"] is not None for r in build.configs["variant_0"]["test"])
    checks = {check.name: check for check in wicked.CHECKS}
    assert sum(1 for _ in checks["no_reference_altered"].find_violations(build)) == 2 * 79
    with pytest.raises(ValidationFailed, match="no_reference_altered"):
        validate(build)


def test_validator_catches_an_altered_reference_in_a_mixed_build(tmp_path, monkeypatch):
    """One missed form ("both a and b." only), everything else detected: exactly that item is caught, per variant."""
    from builders.core.items import referring as options

    def blind(choices):
        missed = any(c.strip().lower() == "both a and b." for c in choices)
        return None if missed else options.position_dependent_reason(choices)

    monkeypatch.setattr(wicked.transform, "position_dependent_reason", blind)
    source, references = _reference_source(tmp_path)
    missed = sum(any(c.strip().lower() == "both a and b." for c in item["choices"]) for item in references)
    assert missed == 11
    build = wicked_build(source, wicked_args(variants=2))
    violations = list({c.name: c for c in wicked.CHECKS}["no_reference_altered"].find_violations(build))
    assert len(violations) == 2 * missed and "'both a and b.' refers to the others" in violations[0]
    with pytest.raises(ValidationFailed, match="no_reference_altered"):
        validate(build)


# ---- lm-eval tasks -------------------------------------------------------------------------------------

CAPITALS = [("France", ["Paris", "Lyon", "Nice", "Lille"], 0), ("Spain", ["Seville", "Madrid", "Bilbao", "Malaga"], 1),
            ("Japan", ["Osaka", "Kyoto", "Tokyo", "Nagoya"], 2), ("Egypt", ["Luxor", "Giza", "Aswan", "Cairo"], 3),
            ("Peru", ["Lima", "Cusco", "Arequipa", "Trujillo"], 0),
            ("Chile", ["Arica", "Santiago", "Talca", "Tacna"], 1)]
RIVERS = [("Egypt", ["Nile", "Volga", "Rhine", "Seine"]), ("France", ["Seine", "Nile", "Danube", "Po"]),
          ("Italy", ["Po", "Thames", "Elbe", "Nile"]), ("England", ["Thames", "Seine", "Po", "Ebro"]),
          ("Germany", ["Rhine", "Nile", "Ganges", "Volga"]), ("Russia", ["Volga", "Po", "Seine", "Thames"])]


def lm_eval_source(root: Path) -> Path:
    """6 test and 6 dev items of one subject: 5 demonstrations per prompt, as in the paper."""
    subject = "high_school_geography"
    test = [{"question": f"What is the capital of {c}?", "subject": subject, "choices": ch, "answer": a}
            for c, ch, a in CAPITALS]
    dev = [{"question": f"Which river flows through {c}?", "subject": subject, "choices": ch, "answer": 0}
           for c, ch in RIVERS]
    write_jsonl(root / "mmlu" / "test.jsonl", test)
    write_jsonl(root / "mmlu" / "dev.jsonl", dev)
    return root / "mmlu"


def expected_prompt(release: Path, config: str, index: int) -> str:
    """lm-eval's MMLU prompt, written out here from the release's Parquet files: the description, the first 5 dev
    items of the subject (of this config, so transformed) answered, then the item."""
    data = datasets.load_dataset("parquet", data_files={s: str(release / config / f"{s}-00000-of-00001.parquet")
                                                        for s in ("test", "dev")})

    def block(row):
        return "\n".join([row["question"], *[f"{'ABCD'[i]}. {c}" for i, c in enumerate(row["choices"])], "Answer:"])

    demos = "".join(f"{block(row)} {'ABCD'[row['answer']]}\n\n" for row in data["dev"].select(range(5)))
    header = "The following are multiple choice questions (with answers) about high school geography.\n\n"
    return header + demos + block(data["test"][index])


def test_task_folder_builds_the_five_shot_mmlu_prompt_with_lm_evals_few_shot_machinery(tmp_path):
    """The 5 demonstrations were baked into a `prompt` column, so lm-eval said "n-shot 0" and --num_fewshot did
    nothing. lm-eval's own first_n sampler, per subject, builds the very prompt written out by expected_prompt."""
    from lm_eval.tasks import TaskManager

    release = tmp_path / "release"
    assert wicked.main(["--source", str(lm_eval_source(tmp_path)), "--sba-classifier", "none", "--variants", "2",
                        "--output", str(release)]) == 0
    folder = release / "lm_eval"
    configs = ("original", "variant_0", "variant_1")
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["README.md", "manifest.json", "utils.py", "_default_template_yaml", "wicked_mmlu_variants.yaml",
         *[f"wicked_mmlu_{c}.yaml" for c in configs],
         *[f"wicked_mmlu_{c}_high_school_geography.yaml" for c in configs]])
    manifest = json.loads((folder / "manifest.json").read_text())
    assert [(t["task"], t["config"], t["role"]) for t in manifest["tasks"]] == [
        ("wicked_mmlu_original", "original", "original"), ("wicked_mmlu_variant_0", "variant_0", "variant"),
        ("wicked_mmlu_variant_1", "variant_1", "variant")]
    assert manifest["groups"] == [{"group": "wicked_mmlu_variants",
                                   "tasks": ["wicked_mmlu_variant_0", "wicked_mmlu_variant_1"],
                                   "original": "wicked_mmlu_original", "reports": ["mean", "std", "drop"]}]
    group = yaml.safe_load((folder / "wicked_mmlu_variants.yaml").read_text())
    assert group["task"] == ["wicked_mmlu_variant_0", "wicked_mmlu_variant_1"]
    assert group["aggregate_metric_list"] == [{"metric": "acc", "aggregation": "mean", "weight_by_size": False}]

    manager = TaskManager(include_path=str(folder), include_defaults=False)
    for config in configs:
        task = read_lm_eval_task(folder / f"wicked_mmlu_{config}_high_school_geography.yaml")
        assert (task["num_fewshot"], task["fewshot_split"]) == (5, "dev")
        assert task["fewshot_config"] == {"sampler": "first_n"}
        [subject_task] = manager.load([f"wicked_mmlu_{config}"])["tasks"].values()
        docs = list(subject_task.test_docs())
        prompts = [subject_task.fewshot_context(doc, subject_task.config.num_fewshot) for doc in docs]
        assert len(prompts) == 6 and all(p.count("Answer:") == 6 for p in prompts)
        assert prompts == [expected_prompt(release, config, i) for i in range(6)]
        demos = prompts[0].rsplit("\n\n", 1)[0]
        assert ("None of the above" in demos) == (config != "original")  # the few-shot split is transformed too




@pytest.mark.slow
def test_lm_eval_runs_the_release_tasks(tiny_lm, tmp_path):
    """The real lm-eval, unchanged, on the task folder of a built release, with a tiny Llama (SmolLM2's tokenizer)."""
    release = tmp_path / "release"
    assert wicked.main(["--source", str(lm_eval_source(tmp_path)), "--sba-classifier", "none", "--variants", "2",
                        "--output", str(release)]) == 0
    command = [sys.executable, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tiny_lm},dtype=float32",
               "--device", "cpu", "--batch_size", "16", "--include_path", str(release / "lm_eval"),
               "--tasks", "wicked_mmlu_original,wicked_mmlu_variants", "--log_samples",
               "--output_path", str(tmp_path / "results")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=900, env=env)
    assert result.returncode == 0, result.stderr[-3000:]

    logged = json.loads(next((tmp_path / "results").rglob("results_*.json")).read_text())["results"]
    tasks = ["wicked_mmlu_original", "wicked_mmlu_variant_0", "wicked_mmlu_variant_1"]
    assert set(logged) == {*tasks, *[f"{t}_high_school_geography" for t in tasks], "wicked_mmlu_variants"}
    n_shot = json.loads(next((tmp_path / "results").rglob("results_*.json")).read_text())["n-shot"]
    assert {task: n_shot[f"{task}_high_school_geography"] for task in tasks} == {task: 5 for task in tasks}
    for task in tasks:
        samples = [json.loads(line) for line in
                   next((tmp_path / "results").rglob(f"samples_{task}_high_school_geography_*.jsonl")).open()]
        assert len(samples) == 6
        config = task.removeprefix("wicked_mmlu_")
        for sample in samples:
            arguments = sample["arguments"]
            context = arguments["gen_args_0"]["arg_0"] if isinstance(arguments, dict) else arguments[0][0]
            assert context == expected_prompt(release, config, sample["doc_id"])
        assert logged[task]["acc,none"] == pytest.approx(sum(s["acc"] for s in samples) / 6)
    variants = [logged[t]["acc,none"] for t in tasks[1:]]
    assert logged["wicked_mmlu_variants"]["acc,none"] == pytest.approx(sum(variants) / 2)


# ---- the LLM judge, end to end against llmock -----------------------------------------------


def judge_reply(call) -> str:
    """SBA for the plants question (naming the option after the key), an unusable reply for Italy, SCA otherwise."""
    text = call.user_text
    if "Capital of Italy?" in text:
        return "I am not sure."
    if "Which gas do plants absorb?" in text:
        key = "ABCD".index(text.split("Keyed answer: (")[1][0])
        return json.dumps({"label": "SBA", "alternative": "ABCD"[(key + 1) % 4], "confidence": "high"})
    return json.dumps({"label": "SCA", "alternative": None, "confidence": "high"})


@pytest.mark.slow
def test_sba_judge_end_to_end_against_llmock(llm_server, tmp_path):
    llm_server.respond_with(judge_reply)
    folder = write_benchmark("mmlu", tmp_path)
    argv = ["--source", str(folder), "--sba-judge", "mock-model", "--base-url", llm_server.openai_base_url,
            "--api-key-env", "none", "--cache-dir", str(tmp_path / "cache"), "--llm-concurrency", "2",
            "--variants", "2"]
    assert wicked.main([*argv, "--output", str(tmp_path / "out1")]) == 0
    # 8 distinct coherent items (5 test, 3 dev; the 3 items whose options refer to others are never asked),
    # and one more request: the unusable reply is asked again once.
    asked = [c for c in llm_server.chat_requests if c.status == 200]
    assert len(asked) == 9
    prompts = [body["messages"][-1]["content"] for body in llm_server.chat_bodies]
    assert not any("Which are primes?" in p or "Both A and B" in p for p in prompts)
    assert all("Label SBA only if you can name the remaining option" in p for p in prompts)

    data = datasets.load_dataset(str(tmp_path / "out1"), "variant_1", split="test")
    by_question = {row["question"]: row["metadata"] for row in data}
    plants, italy = by_question["Which gas do plants absorb?"], by_question["Capital of Italy?"]
    assert (plants["skip_reason"], plants["sba_judge"], plants["is_sba"]) == ("single_best_answer", "SBA", True)
    assert (italy["skip_reason"], italy["removed_index"], italy["sba_judge"]) == ("sba_judge_failed", None, None)
    altered = [q for q, m in by_question.items() if m["removed_index"] is not None]
    assert sorted(altered) == ["What is 10 / 2?", "What is 2 + 3?", "Which is a mammal?"]
    assert all(by_question[q]["sba_judge"] == "SCA" for q in altered)

    card = (tmp_path / "out1" / "README.md").read_text()
    assert "model `mock-model`" in card and "`sba-label-v2`" in card
    assert "Of 8 distinct items, 1 were judged SBA and 6 SCA;\n  1 got no usable answer" in card
    config = (tmp_path / "out1" / "build_config.yaml").read_text()
    assert "sba_judge: mock-model" in config

    # A rebuild with the same cache asks nothing, not even about the item without a usable answer (both of its
    # replies are kept, each under its attempt), and writes the same release.
    assert wicked.main([*argv, "--output", str(tmp_path / "out2")]) == 0
    assert len([c for c in llm_server.chat_requests if c.status == 200]) == 9
    assert _parquet_hashes(tmp_path / "out1") == _parquet_hashes(tmp_path / "out2")


def test_card_reports_altered_flagged_and_labelled_shares(tmp_path):
    """The share altered, the share flagged SBA, and the labelled share the classifier's recorded
    evaluation measured on this benchmark (read from the model folder's evaluations file)."""
    from classifiers.sba_model import EVALUATIONS_FILE

    model = tmp_path / "model"
    model.mkdir()
    metrics = {"n": 40, "labelled_share": 0.2, "flagged_share": 0.25, "precision": 0.8, "recall": 1.0}
    (model / EVALUATIONS_FILE).write_text(json.dumps([
        {"labels_file": "/somewhere/eval.jsonl", "threshold": 0.31, "per_source": {"mmlu": metrics, "arc": metrics}},
        {"labels_file": "/somewhere/other.jsonl", "threshold": 0.31, "per_source": {"arc": metrics}}]))
    labelled = wicked.labelled_shares(str(model), "rev", "mmlu")
    assert labelled == ({"labels": "eval.jsonl", **metrics, "model_threshold": 0.31},)

    build = build_fixture(tmp_path)
    records = [r for records in build.configs["original"].values() for r in records]
    flagged = {wicked.sba_key(r): wicked.SBAVerdict(r.question == "Capital of Italy?", 0.9) for r in records
               if wicked.skip_reason(r) is None}
    sba = wicked.SBADecisions(flagged, {"method": "classifier", "name": str(model), "revision": "rev", "threshold": 0.5,
                                        "input": "question_choices"}, labelled)
    originals = build.configs["original"]
    run = Run(originals, ExclusionLog())
    run.unchanged("original")
    run.make("variant_0", [wicked.variant_step(sba, {r.id: wicked.skip_reason(r) for r in records}, 0, 0, "last")],
             copy=partial(wicked.transform.copied, sba))
    configs, outcomes = run.configs, run.outcomes
    assert outcomes.total("altered", split="test") == 4 and outcomes.reasons("test", "variant_0") == {
        "has_all_of_the_above": 1, "has_none_of_the_above": 1, "has_option_combination": 1, "single_best_answer": 1}
    tables = {table.title: table for table in wicked.statistics(configs, sba).tables}
    shares = tables["Altered and flagged SBA"]
    assert shares.rows[0] == ("test", 8, 4 / 8, 1 / 8, 3 / 8, 0.0, 0.0, 0.0)
    assert list(tables["SBA on labelled questions"].rows) == [("eval.jsonl", 40, 0.2, 0.25, 0.8, 1.0, 0.31)]
    assert "scored 8 distinct items; 1 reached the threshold 0.5" in shares.note


# ---- options that refer to others in prose, and options that already mean "none" ------------------

CONTENT_LOOKALIKES = [  # content, altered as before
    ["All three steps are exothermic.", "Step 1 only is exothermic.", "Steps 1 and 2 are exothermic.", "None is needed"][:3]
    + ["Step 3 is endothermic."],
    ["I only", "II only", "I and III only", "II and III only"],  # the question's statements
    ["(i) only", "(ii) only", "(i) and (iii) only", "(ii) and (iv) only"],
    ["None of the offspring will be affected", "All males are affected", "Half the females", "Every child"],
    ["Only a single virus", "Only three viruses", "Many viruses", "No virus"],
    ["The Krebs cycle, as each of those molecules releases ATP", "Glycolysis", "Fermentation", "Photolysis"],
    ["all", "liberty", "justice", "indivisible"],  # the last word of the Pledge of Allegiance
    ["No choice", "Anything goes", "Principled relativism", "The end justifies the means"],
    ["The hearsay rule applies with no exception.", "Hearsay.", "Privilege.", "Relevance."],
]


def _mmlu_rows(items):
    return [{k: item[k] for k in ("question", "subject", "choices", "answer")} for item in items]


def test_real_prose_references_and_none_like_options_are_copied_unchanged():
    """Mmlu/test 216, 9419, 9677, 6288 (prose references, broken in 4-5 of 5 variants before) and 1646,
    11109, 13740 (an option that already means "none") are copied unchanged in all 5 variants, with the reason."""
    items = PROSE_REFERENCES + NONE_LIKE
    result = wicked.build_dataset(_mmlu_rows(items), sba_classifier="none", variants=5)
    assert result.report.passed
    originals = result.build.configs["original"]["test"]
    for k in range(5):
        records = result.build.configs[f"variant_{k}"]["test"]
        assert [r.metadata["skip_reason"] for r in records] == [item["reason"] for item in items]
        assert [(r.choices, r.answer) for r in records] == [(o.choices, o.answer) for o in originals]
    outcomes = {table.title: table for table in result.build.release.statistics.tables}["Altered and flagged SBA"]
    assert list(outcomes.rows) == [("test", 7, 0.0, 0.0, 4 / 7, 3 / 7, 0.0, 0.0)]


def test_truthful_qa_no_comment_is_none_like():
    """TruthfulQA's "I have no comment." (56 of 817 items) beside an added NOTA was a second answer."""
    result = wicked.build_dataset([TRUTHFUL_QA_NO_COMMENT], benchmark="truthful_qa", split="validation",
                                  sba_classifier="none", variants=5)
    for k in range(5):
        (record,) = result.build.configs[f"variant_{k}"]["validation"]
        assert record.metadata["skip_reason"] == "none_like_option" and record.metadata["removed_index"] is None
    assert result.report.passed


def test_truthful_qa_keys_saying_nothing_happens_or_there_is_none_get_no_nota():
    """"Nothing in particular happens ...", "There is no ...", "There's no ...", "No one ...", "No UFO report
    has been proven ...", "There are no ..." keys are copied unchanged in all 5 variants, beside a content item that
    is altered; with the builder's detector blinded, the validator's own reading refuses all 6 in each variant."""
    rows = [{"question": question, "mc1_targets": {"choices": choices, "labels": [1, 0, 0, 0]},
             "mc2_targets": {"choices": choices, "labels": [1, 0, 0, 0]}} for question, choices in TRUTHFUL_QA_NONE_LIKE_KEYS]
    content = ["Paris is the capital of France.", "Lyon is.", "Nice is.", "Lille is."]
    rows.append({"question": "What is the capital of France?", "mc1_targets": {"choices": content, "labels": [1, 0, 0, 0]},
                 "mc2_targets": {"choices": content, "labels": [1, 0, 0, 0]}})
    result = wicked.build_dataset(rows, benchmark="truthful_qa", split="validation", sba_classifier="none", variants=5)
    assert result.report.passed
    for k in range(5):
        records = result.build.configs[f"variant_{k}"]["validation"]
        assert [r.metadata["skip_reason"] for r in records] == ["none_like_option"] * 6 + [None]
        assert NOTA_TEXT in records[6].choices and not any(NOTA_TEXT in r.choices for r in records[:6])


def test_validator_reads_none_like_keys_on_its_own(monkeypatch):
    monkeypatch.setattr(wicked.transform, "none_like_option", lambda choices: None)
    rows = [{"question": question, "mc1_targets": {"choices": choices, "labels": [1, 0, 0, 0]},
             "mc2_targets": {"choices": choices, "labels": [1, 0, 0, 0]}} for question, choices in TRUTHFUL_QA_NONE_LIKE_KEYS]
    with pytest.raises(ValidationFailed, match="no_reference_altered \\(12: "):
        wicked.build_dataset(rows, benchmark="truthful_qa", split="validation", sba_classifier="none", variants=2)


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_is_copied_unchanged_in_a_four_option_build(form):
    """Each form a 4-option build_dataset call altered with the report passed is now copied unchanged,
    and the validator's own reading agrees (the build passes)."""
    row = {"question": "Which of these is right?", "subject": "biology", "answer": 0,
           "choices": ["Mitochondria make ATP", "Ribosomes make lipids", "The nucleus digests food", form]}
    result = wicked.build_dataset([row], sba_classifier="none", variants=3)
    assert [result.build.configs[f"variant_{k}"]["test"][0].metadata["skip_reason"] for k in range(3)] == [FORMS[form]] * 3
    assert result.report.passed


@pytest.mark.parametrize("choices", CONTENT_LOOKALIKES, ids=lambda choices: choices[0][:30])
def test_content_that_looks_like_a_reference_is_still_altered(choices):
    row = {"question": "Which is right?", "subject": "biology", "answer": 1, "choices": choices}
    result = wicked.build_dataset([row], sba_classifier="none", variants=2)
    assert [r.metadata["skip_reason"] for r in result.build.configs["variant_0"]["test"]] == [None]
    assert result.report.passed


def test_validator_refuses_a_build_whose_builder_rules_are_blinded(monkeypatch):
    """With the builder's detectors returning nothing, every real item and every form above is altered in
    each of 2 variants, and the validator's separately written reading refuses the build: one violation per
    item and variant."""
    monkeypatch.setattr(wicked.transform, "position_dependent_reason", lambda choices: None)
    monkeypatch.setattr(wicked.transform, "none_like_option", lambda choices: None)
    rows = _mmlu_rows(PROSE_REFERENCES + NONE_LIKE) + [
        {"question": f"Question {i}?", "subject": "biology", "answer": 0,
         "choices": ["Mitochondria make ATP", "Ribosomes make lipids", "The nucleus digests food", form]}
        for i, form in enumerate(FORMS)]
    with pytest.raises(ValidationFailed, match=f"no_reference_altered \\({2 * len(rows)}: "):
        wicked.build_dataset(rows, sba_classifier="none", variants=2)


def test_regression_a_split_whose_only_row_is_excluded_has_statistics(tmp_path):
    """A source whose only test row is excluded (a non-string subject) ended in ZeroDivisionError in
    the statistics; the split now reports 0 items."""
    write_jsonl(tmp_path / "mmlu" / "test.jsonl", [{"question": "Q?", "subject": 5, "choices": ["a", "b", "c", "d"],
                                                    "answer": 0}])
    write_jsonl(tmp_path / "mmlu" / "dev.jsonl", [{"question": "D?", "subject": "x", "choices": ["a", "b", "c", "d"],
                                                   "answer": 0}])
    source = load_source(BENCHMARKS["mmlu"], str(tmp_path / "mmlu"))
    assert source.items["test"] == [] and source.exclusions.count("test", "original") == 1
    build = wicked_build(source, wicked_args(variants=1))
    shares = {table.title: table for table in build.release.statistics.tables}["Altered and flagged SBA"]
    assert list(shares.rows)[0] == ("test", 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


SBA_LABEL_FIGURES = {  # (SBA, labelled items WiCkeD alters, the source the labels are of)
    "mmlu": (59, 816, None), "mmlu_pro": (162, 842, None), "truthful_qa": (3, 550, None),
    "commonsense_qa": (263, 857, None), "mmlu_redux": (59, 816, "mmlu"), "arc_challenge": (59, 816, "mmlu")}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SBA_LABEL_FIGURES))
def test_no_sba_detection_warns_in_log_and_card_with_the_labels_figure(tmp_path, caplog, name):
    """every benchmark built with --sba-classifier none warns, in the log and the card, with the share of
    SBA items among the project's labels of that source (CommonsenseQA measured again: 263 of 857, not 6 of 11), or
    of the closest labelled source, named as such (MMLU-Redux and ARC read MMLU's)."""
    sba_items, labelled, closest = SBA_LABEL_FIGURES[name]
    folder = write_benchmark(name, tmp_path)
    with caplog.at_level("WARNING", logger=BUILDERS["wicked"]):
        assert wicked.main(["--benchmark", name, "--source", str(folder), "--sba-classifier", "none", "--variants", "1",
                            "--output", str(tmp_path / "out")]) == 0
    card = " ".join((tmp_path / "out" / "README.md").read_text().split())
    (warned,) = [r.getMessage() for r in caplog.records if "without single-best-answer detection" in r.getMessage()]
    assert "Warning: no single-best-answer detection." in card
    assert f"{sba_items} of {labelled} items are SBA" in warned
    assert f"{sba_items} of {labelled} items are single-best-answer" in card
    assert (f"those of the closest labelled source, `{closest}`" in card) == (closest is not None)
    assert (f"those of the closest labelled source, {closest})" in warned) == (closest is not None)
    build = build_fixture(tmp_path, name, variants=1)
    altered = [r for records in build.configs["variant_0"].values() for r in records
               if r.metadata["removed_index"] is not None]
    expected = sba_items / labelled * sum(r.metadata["nota_is_answer"] for r in altered) / len(altered)
    assert f"about {100 * expected:.1f}% of this build's altered items" in warned
    assert (f"about {100 * sba_items / labelled:.1f}% of this release's NOTA-keyed items" in card
            and f"about {100 * expected:.1f}% of its altered items" in card)


def test_nota_keyed_items_asking_for_the_best_answer_are_listed_for_review(tmp_path):
    from builders.wicked.review_cues import best_answer_cue, best_answer_nota_keyed

    assert best_answer_cue("Which of the following is the MOST likely cause?") == "most likely"
    assert best_answer_cue("What is the primary function of the liver?") == "primary"
    assert best_answer_cue("Which gas do plants absorb?") is None
    rows = [{"question": f"Which is the best {noun}?", "subject": "biology", "answer": 0,
             "choices": [f"{noun} one", f"{noun} two", f"{noun} three", f"{noun} four"]} for noun in
            ("tool", "plan", "route", "rule", "food", "book", "song", "game")]
    rows += [{"question": f"Which is {noun}?", "subject": "biology", "answer": 0,
              "choices": [f"{noun} one", f"{noun} two", f"{noun} three", f"{noun} four"]} for noun in ("a", "b", "c")]
    result = wicked.build_dataset(rows, sba_classifier="none", variants=4)
    entries = best_answer_nota_keyed(result.build.configs)
    nota_keyed = [(config, r.id) for config, split, records in result.build.records() for r in records
                  if r.metadata.get("nota_is_answer") and r.question.startswith("Which is the best")]
    assert sorted((e["config"], e["id"]) for e in entries) == sorted(nota_keyed) and nota_keyed
    assert {e["cue"] for e in entries} == {"best"}
    # the release's review queue: one entry per source item (a decision applies to every variant), with the cue
    # and the variants where "None of the above" is its key; the card counts them
    out = tmp_path / "release"
    result.write(out)
    queue = [json.loads(line) for line in (out / "review.jsonl").read_text().splitlines()]
    assert [(q["id"], q["reason"], q["evidence"]["cue"], q["evidence"]["nota_keyed_in"], q["evidence"]["removed_key"])
            for q in queue] == [
        ("mmlu/test/1", "nota_keyed_best_answer_question", "best", ["variant_0"], "plan one"),
        ("mmlu/test/2", "nota_keyed_best_answer_question", "best", ["variant_2", "variant_3"], "route one"),
        ("mmlu/test/3", "nota_keyed_best_answer_question", "best", ["variant_3"], "rule one"),
        ("mmlu/test/4", "nota_keyed_best_answer_question", "best", ["variant_0", "variant_3"], "food one")]
    assert len(nota_keyed) == 6 and all(q["action"] == "" and q["evidence"]["status"] == "altered" for q in queue)
    assert queue[0]["evidence"]["item"] == {"question": "Which is the best plan?", "answer": 0,
                                            "choices": ["plan one", "plan two", "plan three", "plan four"]}
    card = " ".join((out / "README.md").read_text().split())
    assert ('The review queue (`review.jsonl`, `review.html`) lists 4 such item(s), keyed "None of the above" in 6 '
            "item-variant(s) of this release") in card
    assert "4 items to review" in (out / "review.html").read_text()
