"""What a new user meets in the first hour: honest card metadata, options that do what they say,
a quick and quiet command line."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sample_releases import EMBEDDER_GROUP
import yaml
from fixtures import write_benchmark
from huggingface_hub import DatasetCard

from builders import wicked
from builders.registry import BUILDERS
from builders.__main__ import commands
from builders.contrast_sets import builder as contrast_sets
from builders.core.pipeline import cli
from builders.core.sources.spec import SAMPLES_DIR

REPO = Path(__file__).resolve().parents[1]


def card(folder: Path) -> DatasetCard:
    return DatasetCard((folder / "README.md").read_text(encoding="utf-8"))


# ---- honest metadata -------------------------------------------------------------------------------------


def test_a_card_built_from_the_sample_claims_no_benchmark_license_or_source(tmp_path):
    """A card built from `--source sample` said `license: mit` and `source_datasets: [cais/mmlu]`, although the
    samples were written for mcqforge; a card built from a copy of the benchmark still says both."""
    sample, copy = tmp_path / "sample", tmp_path / "copy"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(sample)]) == 0
    assert wicked.main(["--source", str(write_benchmark("mmlu", tmp_path)), "--sba-classifier", "none",
                        "--output", str(copy)]) == 0
    built = card(sample)
    assert (built.data.license, built.data.source_datasets) == ("apache-2.0", None)
    assert "mcqforge's own sample in the `cais/mmlu` layout (written for mcqforge, Apache-2.0: not the " \
           "benchmark's data)" in built.text
    assert "> Built from mcqforge's own small sample in the layout of `cais/mmlu`,\n> not from the benchmark" in built.text
    assert "Built from mcqforge's own small sample" not in card(copy).text
    assert (card(copy).data.license, card(copy).data.source_datasets) == ("mit", ["cais/mmlu"])


def test_the_readmes_first_build_warns_of_no_shortcut_and_the_samples_keys_sit_at_every_letter(tmp_path):
    """The embedded MMLU sample was written with 23 of its 30 keys at B or C (MMLU-Pro's 12 at A-C only): the
    README's first build rightly warned that a choices-only model answered 60% of `variant_3` (chance 25%) from
    the options alone. The keys now sit evenly, and the first build's audit is quiet."""
    def keys(name: str, split: str, column: str) -> Counter:
        lines = (SAMPLES_DIR / name / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
        return Counter(json.loads(line)[column] for line in lines)

    assert keys("mmlu", "test", "answer") == {0: 8, 1: 7, 2: 7, 3: 8}
    assert keys("mmlu", "dev", "answer") == {0: 2, 1: 1, 2: 2, 3: 1}
    assert sorted(keys("mmlu_pro", "test", "answer_index")) == list(range(10))
    out = tmp_path / "wicked-sample"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(out)]) == 0
    report = json.loads((out / "validation_report.json").read_text())
    assert report["warnings"] == [] and len(report["adversary"]) == 6


@EMBEDDER_GROUP  # builds the contrast sets, which embed texts
def test_a_card_with_license_other_names_it(tmp_path):
    """The contrast-sets card said `license: other` with no `license_name`, which the Hub asks for."""
    source = shutil.copytree(SAMPLES_DIR / "unifiedqa", tmp_path / "unifiedqa")
    assert cli.main(contrast_sets.BUILDER, ["--source", str(source), "--output", str(tmp_path / "out"),
                                            "--log-level", "WARNING"]) == 0
    data = card(tmp_path / "out").data
    assert (data.license, data.license_name, data.license_link) == (
        "other", "unifiedqa-source-licenses", "https://github.com/allenai/unifiedqa")


def test_a_rebuild_from_a_build_config_refuses_another_source(tmp_path, capsys):
    """`--config build_config.yaml --source OTHER` rebuilt from another source without a word, although the
    recorded content hash differed."""
    first = write_benchmark("mmlu", tmp_path / "a")
    other = write_benchmark("mmlu", tmp_path / "b")
    (other / "test.jsonl").write_text((other / "test.jsonl").read_text().replace("?", " ?", 1))
    base = ["--sba-classifier", "none", "--log-level", "WARNING"]
    assert wicked.main(["--source", str(first), "--output", str(tmp_path / "release"), *base]) == 0
    config = str(tmp_path / "release" / "build_config.yaml")
    capsys.readouterr()
    # a local source is recorded by base name and content hash, never by path: a rebuild must name it again
    assert wicked.main(["--config", config, "--output", str(tmp_path / "again")]) == 2
    capsys.readouterr()
    assert wicked.main(["--config", config, "--source", str(other), "--output", str(tmp_path / "again")]) == 2
    recorded = yaml.safe_load(Path(config).read_text())["source"]["spec"]
    assert capsys.readouterr().err == (
        f"error: {config} was built from local copy 'mmlu' ({recorded['content']}); --source {other} is another "
        "source. Rebuild from the recorded source, or build from the new one without --config (passing its "
        "options)\n")
    assert wicked.main(["--config", config, "--source", "sample", "--output", str(tmp_path / "again")]) == 2
    assert not (tmp_path / "again").exists()
    # the recorded source, given again, rebuilds the same release
    assert wicked.main(["--config", config, "--source", str(first), "--output", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "variant_0" / "test-00000-of-00001.parquet").read_bytes() == \
        (tmp_path / "release" / "variant_0" / "test-00000-of-00001.parquet").read_bytes()


def test_a_version_without_its_v_suggests_the_tag(local_hub, tmp_path, capsys):
    """`REPO@1.0.0` failed with RevisionNotFoundError; releases are tagged v1.0.0."""
    from builders import evaluate

    repo = "mcqforge/wicked-tag-hint"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--push", repo, "--version", "1.0.0",
                        "--log-level", "WARNING"]) == 0
    capsys.readouterr()
    assert evaluate.main([f"{repo}@1.0.0", "--model", "dummy"]) == 2
    assert capsys.readouterr().err == (f"error: cannot fetch {repo}@1.0.0 from the Hub (RevisionNotFoundError); "
                                       "did you mean @v1.0.0? (releases are tagged vX.Y.Z)\n")
    assert wicked.main(["--source", f"{repo}@1.0.0", "--sba-classifier", "none", "--output",
                        str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (f"error: {repo} has no revision '1.0.0'; did you mean @v1.0.0? (releases are "
                                       "tagged vX.Y.Z)\n")


@pytest.mark.slow  # evaluations in other processes
def test_offline_a_release_not_fetched_yet_is_one_line_that_says_why(local_hub, tmp_path):
    """With HF_HUB_OFFLINE=1 (offline clusters), `evaluate REPO@TAG` said only "cannot fetch ... from the Hub
    (LocalEntryNotFoundError)", and `@1.0.0` got no hint; a release fetched once stays readable offline."""
    import os

    repo = "mcqforge/wicked-offline"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--push", repo, "--version", "1.0.0",
                        "--log-level", "WARNING"]) == 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MCQFORGE_CACHE": str(tmp_path / "cache")}

    def evaluate(spec: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "builders.evaluate", spec, "--model", "dummy", "--limit", "2"],
                              capture_output=True, text=True, cwd=REPO, env=env, timeout=600)

    for spec, hint in ((f"{repo}@v1.0.0", ""), (f"{repo}@1.0.0", "; did you mean @v1.0.0? (releases are tagged vX.Y.Z)")):
        result = evaluate(spec)
        cache = tmp_path / "cache" / "releases" / f"{repo.replace('/', '--')}--{spec.partition('@')[2]}"
        assert (result.returncode, result.stderr) == (2, f"error: cannot read {spec}: HF_HUB_OFFLINE is set and it is "
                                                         f"not in the release cache ({cache}); fetch it once where the "
                                                         f"Hub is reachable{hint}\n")
    online = subprocess.run([sys.executable, "-m", "builders.evaluate", f"{repo}@v1.0.0", "--model", "dummy", "--limit",
                             "2"], capture_output=True, text=True, cwd=REPO, timeout=600,
                            env={**env, "HF_HUB_OFFLINE": "0"})
    assert online.returncode == 0, online.stderr[-2000:]
    assert evaluate(f"{repo}@v1.0.0").returncode == 0  # fetched once: read from the cache, offline


def test_open_ended_scores_that_name_no_evaluated_model_are_refused(tmp_path, capsys):
    """Keys of --open-ended-scores that matched no model were ignored ("0 models have both scores")."""
    from builders import evaluate
    from builders.gsm_mc import BUILDER as GSM_MC

    assert cli.main(GSM_MC, ["--source", "sample", "--output", str(tmp_path / "release"), "--log-level",
                             "WARNING"]) == 0
    scores = tmp_path / "scores.json"
    scores.write_text('{"dummy": 0.4, "llama-3-8b": 0.5, "gpt-4o": 0.9}')
    capsys.readouterr()
    assert evaluate.main([str(tmp_path / "release"), "--model", "dummy", "--open-ended-scores", str(scores)]) == 2
    assert capsys.readouterr().err == (f"error: --open-ended-scores {scores}: ['gpt-4o', 'llama-3-8b'] name no "
                                       "evaluated model; its keys must be the models' names: ['dummy']\n")


def test_limit_counts_per_subject_when_subjects_are_named(tmp_path):
    """`--subjects anatomy virology --limit 20` gave 20 anatomy items and 0 virology, while the card listed both."""
    out = tmp_path / "out"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--subjects", "astronomy", "nutrition",
                        "--limit", "2", "--output", str(out), "--log-level", "WARNING"]) == 0
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "original" / "test-00000-of-00001.parquet").to_pylist()
    assert sorted((r["subject"], r["id"]) for r in rows) == [
        ("astronomy", "mmlu/test/0"), ("astronomy", "mmlu/test/1"), ("nutrition", "mmlu/test/25"),
        ("nutrition", "mmlu/test/26")]  # the sample holds 5 rows of each subject, sorted by subject
    assert "| subset | subjects astronomy, nutrition first 2 rows per subject and evaluation split |" in \
        (out / "README.md").read_text()


@pytest.mark.slow
def test_another_builder_replaces_a_release_folder_only_with_force(tmp_path, capsys):
    """A build of another builder silently replaced an existing release folder."""
    from builders.gsm_mc import BUILDER as GSM_MC

    out = tmp_path / "release"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(out),
                        "--log-level", "WARNING"]) == 0
    before = (out / "build_config.yaml").read_bytes()
    capsys.readouterr()
    assert cli.main(GSM_MC, ["--source", "sample", "--output", str(out)]) == 2
    assert capsys.readouterr().err == (f"error: --output {out} holds a wicked release; a gsm_mc build would replace "
                                       "it: choose another folder, or pass --force\n")
    assert (out / "build_config.yaml").read_bytes() == before
    # the same builder rebuilds in place; --force lets another builder replace the folder, and is not recorded
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(out), "--seed", "1",
                        "--log-level", "WARNING"]) == 0
    assert cli.main(GSM_MC, ["--source", "sample", "--output", str(out), "--force", "--log-level", "WARNING"]) == 0
    recorded = yaml.safe_load((out / "build_config.yaml").read_text())
    assert recorded["builder"] == "gsm_mc" and "force" not in recorded["params"]


@pytest.mark.slow
def test_changelog_entries_are_readable_and_take_a_message(local_hub, tmp_path):
    """Changelog entries were Python-repr dumps of every parameter ("wicked from cais/mmlu @ sha256:... (limit=None,
    max_excluded=0.5, ...)")."""
    from builders.core.release.card import read_changelog
    from builders.core.runtime.content import content_revision

    repo = "mcqforge/wicked-changelog"
    base = ["--source", "sample", "--sba-classifier", "none", "--push", repo, "--log-level", "WARNING"]
    assert wicked.main([*base, "--version", "1.0.0", "--message", "First release:\n the paper's setup."]) == 0
    assert wicked.main([*base, "--version", "1.1.0", "--seed", "3"]) == 0
    text = local_hub.file_at(repo, "v1.1.0", "README.md").decode()
    revision = content_revision(SAMPLES_DIR / "mmlu").removeprefix("sha256:")[:12]
    (newer, newer_summary), older = [(e.version, e.summary) for e in read_changelog(text)]
    # the new version's entry goes on with what changed against the previous tag
    assert newer == "1.1.0" and newer_summary.startswith(
        f"Built with wicked from mcqforge's sample (revision {revision}), seed 3. Against v1.0.0: original dev: 0 added, "
        "0 removed, 0 changed;")
    assert older == ("1.0.0", f"First release: the paper's setup. Built with wicked from mcqforge's sample (revision "
                              f"{revision}), seed 0.")
    assert "message" not in yaml.safe_load(local_hub.file_at(repo, "v1.1.0", "build_config.yaml"))["params"]


# ---- a quick, quiet command line ---------------------------------------------------------------------------

HEAVY = ("torch", "datasets", "transformers", "sentence_transformers", "lm_eval", "matplotlib", "sklearn", "openai",
         "pyarrow", "pandas", "scipy", "networkx", "httpx", "httpcore", "huggingface_hub.hf_api")
COMMANDS = tuple(commands().values())


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_flag_and_help_load_no_heavy_library(command):
    """Every flag typo cost 1.9 s of CPU (torch, datasets, openai, huggingface_hub... were imported before the
    arguments were parsed); now about 0.3 s. Imports, not seconds, are checked: timings move with the load."""
    for flag in ("--no-such-flag", "--help"):
        result = subprocess.run([sys.executable, "-X", "importtime", "-m", command, flag], capture_output=True,
                                text=True, cwd=REPO, timeout=120)
        assert result.returncode == (0 if flag == "--help" else 2), result.stderr[-2000:]
        imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
        assert sorted(name for name in imported if name.split(".")[0] in HEAVY or name in HEAVY) == []


def command_parsers(monkeypatch) -> dict[str, argparse.ArgumentParser]:
    """``{"evaluate": parser, "metrics ranking": parser, ...}``: the parser of every command of ``mcqforge`` and of
    each of its subcommands, as ``mcqforge COMMAND --help`` builds and prints it."""
    from builders.__main__ import commands
    from builders.__main__ import main as mcqforge

    printed: list[argparse.ArgumentParser] = []
    print_help = argparse.ArgumentParser.print_help
    monkeypatch.setattr(argparse.ArgumentParser, "print_help",
                        lambda parser, file=None: (printed.append(parser), print_help(parser, file))[1])
    parsers = {}
    for command in commands():
        with pytest.raises(SystemExit) as exited:
            mcqforge([command, "--help"])
        assert exited.value.code == 0 and printed, command
        parsers[command] = printed.pop()
    for command, parser in list(parsers.items()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.update({f"{command} {name}": sub for name, sub in action.choices.items()})
    return parsers


def test_every_commands_help_shows_every_default_the_seed_included(monkeypatch, capsys):
    """`--help` hid every default equal to 0 (`0 in (None, False, ...)` is true): --seed among them; and evaluate,
    export, metrics and sba showed none of theirs (`evaluate --batch-size`: 8, `--log-level`: WARNING)."""
    monkeypatch.setenv("COLUMNS", "400")
    parsers = command_parsers(monkeypatch)
    assert {"evaluate", "export", "metrics ranking", "sba label", "sba train", *BUILDERS} <= set(parsers)
    hidden = []
    for name, parser in parsers.items():
        text = parser.format_help()
        blocks = {}  # each option's lines: the option, and its help (group titles are not indented)
        for block in re.split(r"\n  (?=-)", text)[1:]:
            first, *rest = block.splitlines()
            blocks[first.split()[0].rstrip(",")] = " ".join([first, *(line for line in rest if line[:1] == " ")])
        for action in parser._actions:
            if action.option_strings and not (action.default is None or action.default is False
                                              or action.default in ([], argparse.SUPPRESS)):
                if "default" not in blocks[action.option_strings[0]]:
                    hidden.append(f"{name} {action.option_strings[0]}")
        if "--seed" in blocks:
            assert blocks["--seed"].endswith("(default: 0)"), name
    assert hidden == []
    seeded = sorted(name for name, parser in parsers.items() if "--seed" in parser.format_help())
    assert seeded == sorted([*BUILDERS, "sba sample", "sba train"])
    assert "--batch-size BATCH_SIZE requests per forward pass of an hf: model (default: 8 on a GPU, 4 on the CPU," \
        in " ".join(parsers["evaluate"].format_help().split())


def test_no_help_says_a_default_twice_and_train_lists_its_presets_one_line_each(monkeypatch):
    """`sba train --help` showed "(default: bert-base-uncased) (default: bert-base-uncased)" where the help text said
    it already (argparse added its own), and the recipe presets as one raw dict of 20 lines."""
    monkeypatch.setenv("COLUMNS", "400")
    parsers = command_parsers(monkeypatch)
    doubled = []
    for name, parser in parsers.items():
        for block in re.split(r"\n  (?=-)", parser.format_help())[1:]:
            first, *rest = block.splitlines()
            text = " ".join([first, *(line for line in rest if line[:1] == " ")])
            if len(re.findall(r"\(default[: ]", text)) > 1:
                doubled.append(f"{name} {first.split()[0]}")
    assert doubled == []
    text = parsers["sba train"].format_help()
    blocks = {block.splitlines()[0].split()[0]: " ".join(block.split()) for block in re.split(r"\n  (?=-)", text)[1:]}
    assert blocks["--backbone"].count("(default: bert-base-uncased)") == 1
    assert blocks["--seed"] == "--seed SEED seed of every random draw (default: 0)"
    presets = text.split("Each defaults to the --recipe preset's:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split(":")[0].strip() for line in presets] == ["cross_encoder", "mcqforge", "paper"]
    assert presets[2].strip().startswith("paper: sequence on question, all layers, top 1 trained, 2 epochs at lr 0.0001")
    assert "{'name'" not in text and "'learning_rate':" not in text


def _stderr_of(command: list[str], terminal: bool) -> str:
    """The command's stderr, written to a pseudo-terminal or to a pipe (a log file)."""
    import os

    from builders.core.runtime.progress import LIBRARY_SWITCHES

    # a build that ran in this process with bars off set these variables, and a child inherits them (CI failed so)
    environment = {name: value for name, value in os.environ.items() if name not in LIBRARY_SWITCHES}
    if not terminal:
        return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300, env=environment).stderr
    import fcntl
    import struct
    import termios

    controller, terminal_end = os.openpty()
    fcntl.ioctl(terminal_end, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))  # a new one is 0 wide
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=terminal_end, cwd=REPO, env=environment)
    os.close(terminal_end)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.wait(timeout=300) == 0
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.slow  # three builds in other processes
def test_progress_bars_show_on_a_terminal_only_and_no_progress_turns_them_off(tmp_path):
    """With stderr going to a file, the bars wrote `read mmlu/test: 0it` joined by `\\r` into the log lines."""
    def build(out: str, *extra: str) -> list[str]:
        return [sys.executable, "-m", BUILDERS["wicked"], "--source", "sample", "--sba-classifier", "none",
                "--output", str(tmp_path / out), *extra]

    logged = _stderr_of(build("a"), terminal=False)
    assert "\r" not in logged and "read mmlu" not in logged and "loaded mmlu" in logged
    shown = _stderr_of(build("b"), terminal=True)
    assert "read mmlu/test" in shown and "\r" in shown
    quiet = _stderr_of(build("c", "--no-progress"), terminal=True)
    assert "read mmlu" not in quiet and "loaded mmlu" in quiet


@pytest.mark.slow  # an lm-eval run in another process
def test_lm_eval_says_nothing_about_git_or_a_chat_template_the_model_does_not_have(tmp_path):
    """Outside a git checkout lm-eval's `git describe` printed "fatal: not a git repository", and a model named
    "...-Instruct" whose tokenizer has no chat template got "chat template is not applied": noise, both."""
    release, model = tmp_path / "release", tmp_path / "Tiny-Instruct"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--variants", "1", "--output", str(release),
                        "--log-level", "WARNING"]) == 0
    model.mkdir()
    (model / "tokenizer_config.json").write_text("{}")
    script = ("import json, sys; from pathlib import Path; from builders import evaluate\n"
              "folder = Path(sys.argv[1]); manifest = json.loads((folder / 'lm_eval/manifest.json').read_text())\n"
              "spec = evaluate.ModelSpec('tiny', 'dummy', {'pretrained': sys.argv[2]})\n"
              "print(sorted(evaluate.evaluate_model(folder, manifest, spec, evaluate.RunSettings(limit=2, device='cpu'))))\n")
    import os

    result = subprocess.run([sys.executable, "-c", script, str(release), str(model)], capture_output=True, text=True,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "['wicked_mmlu_original', 'wicked_mmlu_variant_0']"
    assert "not a git repository" not in result.stderr and "chat template" not in result.stderr


def test_the_summary_of_a_perturbations_build_groups_configs_that_behave_alike(tmp_path, capsys):
    """The summary of a perturbations build listed 58 rows (29 configs x 2 splits) of the same numbers."""
    from builders.perturbations.builder import BUILDER as PERTURBATIONS

    source = write_benchmark("mmlu", tmp_path)
    import json

    rows = (source / "test.jsonl").read_text().splitlines()
    malformed = {**json.loads(rows[0]), "answer": 9}  # excluded with its reason, in every config
    (source / "test.jsonl").write_text("\n".join(rows + [json.dumps(malformed)]) + "\n")
    assert cli.main(PERTURBATIONS, ["--source", str(source), "--output", str(tmp_path / "out"),
                                    "--log-level", "WARNING"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert table == ["| config | split | rows in | rows out | excluded |",
                     "| all 29 configs | test | 9 | 8 | 1 |",
                     "| all 29 configs | dev | 3 | 3 | 0 |"]
    report = (tmp_path / "out" / "validation_report.json").read_text()
    assert report.count('"excluded": 1') == 29  # the report keeps every config


@pytest.mark.slow
def test_the_suite_caches_in_a_temporary_folder_and_marks_model_runs_slow(pytestconfig):
    """The tests left 565 MB in ~/.cache/mcqforge (SmolLM2 dequantised, LLM replies, embeddings)."""
    import os

    from builders.core.runtime.cache import cache_root

    home_cache = Path.home() / ".cache" / "mcqforge"
    assert cache_root() == Path(os.environ["MCQFORGE_CACHE"]) and cache_root() != home_cache
    assert "HF_HUB_OFFLINE" not in os.environ and os.environ["HF_ENDPOINT"].startswith("http://127.0.0.1:")
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "-m", "not slow", "tests/test_wicked.py", "tests/test_evaluate.py"],
                               capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "test_the_gguf_smollm2_ships" not in collected.stdout and "test_lm_eval_runs_the_release_tasks" not in collected.stdout
    assert "test_configs_counts_and_skip_reasons" in collected.stdout


def test_an_embedder_that_cannot_be_loaded_is_refused_before_the_source_is_read(local_hub, tmp_path, capsys):
    assert cli.main(contrast_sets.BUILDER, ["--source", "sample", "--embedder", "someone/no-such-embedder",
                                            "--threshold", "0.9", "--output", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.err == ("error: cannot load embedder 'someone/no-such-embedder': the Hub has no such model; pass "
                            "--embedder PATH to a local sentence-transformers folder, or leave --embedder out for the "
                            "packaged all-MiniLM-L6-v2\n")
    assert not (tmp_path / "out").exists()
