"""The command-line contract every builder shares: checks before any work, bad input in one line, releases
written whole, subsets that keep every item's draws, previews, the end-of-run summary, the console command."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fixtures import MMLU_TEST, with_default_ctrl_c, write_benchmark, write_jsonl

from builders import wicked
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.loading import load_source
from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parents[1]


def run_cli(*argv: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", BUILDERS["wicked"], *argv], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


# ---- bad sources: one line, status 2, no release ----------------------------------------------------------


def _bad_sources(root: Path) -> dict[str, tuple[Path, str]]:
    """Each bad source, and what its one line says."""
    cases = {}
    folder = root / "utf8" / "mmlu"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_bytes(b'{"question": "caf\xe9", "subject": "s", "choices": ["a", "b"], "answer": 0}\n')
    cases["invalid UTF-8"] = (folder, "test.jsonl:1: not UTF-8 text")
    folder = root / "binary" / "mmlu"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_bytes(bytes(range(256)) * 4)
    cases["a binary file named .jsonl"] = (folder, "a binary file")
    folder = root / "parquet" / "mmlu"
    folder.mkdir(parents=True)
    (folder / "test.parquet").write_bytes(b"PAR1" + b"\x00garbage" * 50)
    cases["a corrupt Parquet file"] = (folder, "not a readable Parquet file")
    folder = root / "surrogate" / "mmlu"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text('{"question": "a \\ud800 b", "subject": "s", "choices": ["a", "b"], "answer": 0}\n')
    cases["a lone surrogate"] = (folder, "lone UTF-16 surrogate")
    rows = [{**row, "subject": 7} for row in MMLU_TEST]
    cases["a non-string subject"] = (write_jsonl(root / "subject" / "mmlu" / "test.jsonl", rows).parent,
                                     "field 'subject'")
    folder = root / "empty" / "mmlu"
    folder.mkdir(parents=True)
    (folder / "test.jsonl").write_text("")
    cases["an empty file"] = (folder, "has no rows")
    cases["another benchmark's layout"] = (write_benchmark("mmlu", root / "layout"), "is this the mmlu_pro layout?")
    return cases


@pytest.mark.slow
def test_bad_sources_get_one_line_status_2_and_no_release(tmp_path):
    for name, (folder, expected) in _bad_sources(tmp_path / "sources").items():
        out = tmp_path / "out"
        benchmark = "mmlu_pro" if name == "another benchmark's layout" else "mmlu"
        result = run_cli("--benchmark", benchmark, "--source", str(folder), "--sba-classifier", "none",
                         "--output", str(out))
        line = one_error_line(result)
        assert expected in line, (name, line)
        assert not out.exists(), name


def test_an_output_that_cannot_be_a_folder_is_refused_before_loading(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    source = write_benchmark("mmlu", tmp_path)
    for output, expected in [(a_file, "is a file"), (a_file / "below", "cannot create a folder there")]:
        line = one_error_line(run_cli("--source", str(source), "--sba-classifier", "none", "--output", str(output)))
        assert expected in line
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    line = one_error_line(run_cli("--source", str(source), "--sba-classifier", "none", "--output", str(tmp_path / "notes")))
    assert "is not an mcqforge release folder" in line and (tmp_path / "notes" / "mine.txt").exists()


@pytest.mark.slow
def test_most_rows_excluded_stops_unless_allowed(tmp_path):
    rows = [dict(MMLU_TEST[0])] + [{**row, "answer": 9} for row in MMLU_TEST[1:]]
    folder = write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows).parent
    line = one_error_line(run_cli("--source", str(folder), "--sba-classifier", "none", "--output", str(tmp_path / "o")))
    assert "7 of 8 source rows (88%) would be excluded, most often for malformed_row in field 'answer'" in line
    assert not (tmp_path / "o").exists()
    result = run_cli("--source", str(folder), "--sba-classifier", "none", "--max-excluded", "0.9",
                     "--output", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr[-2000:]


# ---- checks before any work ---------------------------------------------------------------------------------


def test_a_bad_version_is_refused_even_without_push(tmp_path):
    line = one_error_line(run_cli("--source", "sample", "--sba-classifier", "none", "--version", "banana",
                                  "--output", str(tmp_path / "o")))
    assert "--version must look like X.Y.Z" in line and not (tmp_path / "o").exists()


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_push_problems_stop_in_seconds_before_loading(tmp_path):
    """An unreachable Hub, an invalid repo id or a missing token: one line, in seconds, nothing built."""
    cases = [
        ({"HF_ENDPOINT": f"http://127.0.0.1:{_dead_port()}", "HF_TOKEN": "hf_x"}, "someone/data", "cannot reach the Hub"),
        ({"HF_TOKEN": "hf_x"}, "bad/repo/x", "a Hub repo id is NAMESPACE/NAME"),
        ({"HF_TOKEN": "hf_x"}, "bad..name/x", "is not a valid Hub repo id"),
        ({"HF_TOKEN": ""}, "someone/data", "no Hub token"),
    ]
    for env, repo, expected in cases:
        started = time.monotonic()
        result = run_cli("--source", "sample", "--sba-classifier", "none", "--push", repo, "--version", "1.0.0",
                         env=env)
        assert expected in one_error_line(result)
        assert time.monotonic() - started < 15
        assert "read mmlu" not in result.stderr  # refused before the source was read


@pytest.mark.slow
def test_an_existing_tag_is_refused_before_loading(local_hub, tmp_path):
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--push", "mcqforge/cli-tag",
                        "--version", "1.0.0"]) == 0
    result = run_cli("--source", "sample", "--sba-classifier", "none", "--push", "mcqforge/cli-tag",
                     "--version", "1.0.0", env={"HF_TOKEN": local_hub.token})
    assert "already has tag v1.0.0" in one_error_line(result) and "read mmlu" not in result.stderr


# ---- releases are written whole -----------------------------------------------------------------------------

SLOW_WRITER = """
import sys, time
from builders.core.release import writer as release
write = release.write_parquet
def slow(*args, **kwargs):
    time.sleep(0.15)
    return write(*args, **kwargs)
release.write_parquet = slow
from builders import wicked
raise SystemExit(wicked.main(sys.argv[1:]))
"""


def _release_state(folder: Path) -> dict[str, str]:
    """Every file's bytes hash, plus a check that the card lists exactly the Parquet files present."""
    import hashlib

    assert (folder / "build_config.yaml").exists() and (folder / "README.md").exists()
    state = {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(folder.rglob("*")) if p.is_file()}
    for parquet in (p for p in state if p.endswith(".parquet")):
        pq.read_table(folder / parquet)  # whole, readable
    return state


@pytest.mark.slow
def test_a_killed_rebuild_leaves_the_old_or_the_new_release_whole(tmp_path):
    source = write_benchmark("mmlu", tmp_path)
    out = tmp_path / "release"
    script = tmp_path / "slow.py"
    script.write_text(SLOW_WRITER)
    argv = ["--source", str(source), "--sba-classifier", "none", "--output", str(out), "--log-level", "WARNING"]
    old = [sys.executable, str(script), *argv, "--seed", "1"]
    new = [sys.executable, str(script), *argv, "--seed", "2"]
    assert subprocess.run(old, cwd=REPO, capture_output=True).returncode == 0
    old_state = _release_state(out)
    assert subprocess.run(new, cwd=REPO, capture_output=True).returncode == 0
    new_state = _release_state(out)
    assert subprocess.run(old, cwd=REPO, capture_output=True).returncode == 0
    seen = set()
    for delay in (1.0, 2.2, 2.8, 3.6):  # during imports, the writes, the swap
        process = subprocess.Popen(new, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        state = _release_state(out)  # whole, whatever the moment
        assert state in (old_state, new_state)
        seen.add("new" if state == new_state else "old")
        assert subprocess.run(old, cwd=REPO, capture_output=True).returncode == 0  # and a re-run completes
        assert _release_state(out) == old_state
        assert not list(tmp_path.glob(".release.*"))


# ---- randomness keyed by content ---------------------------------------------------------------------------


def test_the_same_item_gets_the_same_draws_whatever_rows_surround_it(tmp_path):
    rows = [{"question": f"Question {i}?", "subject": "s", "choices": [f"a{i}", f"b{i}", f"c{i}", f"d{i}"],
             "answer": i % 4} for i in range(60)]
    full = wicked.BUILDER.make_build(load_source(BENCHMARKS["mmlu"], str(write_jsonl(tmp_path / "a" / "mmlu" /
                                                                                   "test.jsonl", rows).parent)),
                                     wicked_args())
    part = wicked.BUILDER.make_build(load_source(BENCHMARKS["mmlu"], str(write_jsonl(tmp_path / "b" / "mmlu" /
                                                                                   "test.jsonl", rows[20:45]).parent)),
                                     wicked_args())
    view = lambda r: (r.question, r.choices, r.answer, r.metadata["removed_index"])  # noqa: E731
    for variant in ("variant_0", "variant_3"):
        whole = {r.question: view(r) for r in full.configs[variant]["test"]}
        assert [view(r) for r in part.configs[variant]["test"]] == [whole[r["question"]] for r in rows[20:45]]


def wicked_args(*argv: str) -> wicked.Options:
    return wicked.BUILDER.options_from(["--sba-classifier", "none", *argv])


# ---- subsets, previews, the summary, --help ------------------------------------------------------------------


def test_limit_and_subjects_build_a_subset_with_the_same_ids(tmp_path):
    source = write_benchmark("mmlu", tmp_path)
    assert wicked.main(["--source", str(source), "--sba-classifier", "none", "--subjects", "elementary_mathematics",
                        "--limit", "2", "--output", str(tmp_path / "o")]) == 0
    rows = pq.read_table(tmp_path / "o" / "variant_0" / "test-00000-of-00001.parquet").to_pylist()
    assert [r["id"] for r in rows] == ["mmlu/test/0", "mmlu/test/4"]
    config = (tmp_path / "o" / "build_config.yaml").read_text()
    assert "limit: 2" in config and "- elementary_mathematics" in config
    report = json.loads((tmp_path / "o" / "validation_report.json").read_text())
    assert report["counts"]["original"]["test"] == {"in": 2, "out": 2, "excluded": 0}


def test_preview_prints_items_and_writes_nothing(tmp_path, capsys):
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--preview", "3",
                        "--output", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out
    assert printed.count("--- variant_0/test ") == 3 and "nothing written" in printed
    assert not (tmp_path / "o").exists()


def redux_rows(error_types: list[str]) -> list[dict]:
    return [{"question": f"Which planet is number {i}?", "choices": ["Venus", "Earth", "Mars", "Jupiter"], "answer": 1,
             "error_type": kind, "source": None, "correct_answer": None, "potential_reason": None}
            for i, kind in enumerate(error_types)]


def test_preview_counts_kept_items_and_says_what_changed_in_each(tmp_path, capsys):
    """`--preview 2` on MMLU-Redux read 2 rows, its first two, both flagged errors, and stopped with "is this the
    mmlu_redux layout?"; and a preview showed the result but not what changed."""
    folder = tmp_path / "redux"
    write_jsonl(folder / "astronomy" / "test.jsonl", redux_rows(["wrong_groundtruth", "bad_question_clarity",
                                                                  "wrong_groundtruth", "ok", "ok", "ok"]))
    argv = ["--benchmark", "mmlu_redux", "--source", str(folder), "--sba-classifier", "none", "--variants", "1"]
    assert wicked.main([*argv, "--preview", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if line.startswith("--- ")] == [
        "--- variant_0/test mmlu_redux/astronomy/test/3", "--- variant_0/test mmlu_redux/astronomy/test/4"]
    assert printed.count("changed: removed C 'Mars'; added D 'None of the above'; gold stays B") == 2
    # a source in another layout still stops a preview: it read every row and kept none
    write_jsonl(folder / "astronomy" / "test.jsonl", redux_rows(["wrong_groundtruth"] * 6))
    assert wicked.main([*argv, "--preview", "2"]) == 2
    assert "6 of 6 source rows (100%) would be excluded" in capsys.readouterr().err


def test_item_changes_name_the_options_removed_and_added_and_where_the_gold_went():
    from builders.core.items.record import MCQRecord
    from builders.core.pipeline.console import item_changes

    before = MCQRecord(id="x", question="Q?", choices=("Venus", "Earth", "Mars"), answer=1, source="s",
                       source_config="c", source_split="test", source_index=0)
    assert item_changes(before, before) == "nothing (copied as the source has it); gold stays B"
    moved = before.replace(choices=("Earth", "Mars", "Venus"), answer=0)
    assert item_changes(before, moved) == "options reordered; gold moves B -> A"
    rekeyed = before.replace(choices=("Venus", "Earth", "None of the above"), answer=2)
    assert item_changes(before, rekeyed) == ("removed C 'Mars'; added C 'None of the above'; gold changes from B "
                                             "'Earth' to C 'None of the above'")
    assert item_changes(None, before) == "a new item (no source item of its id): 3 options, gold B 'Earth'"


def test_the_summary_says_rows_reasons_audit_and_where(tmp_path, capsys):
    rows = MMLU_TEST + [{**MMLU_TEST[0], "answer": 7}]
    folder = write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows).parent
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--variants", "1",
                        "--output", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out
    assert "| original, variant_0 | test | 9 | 8 | 1 |" in printed  # configs with the same counts share a row
    assert "top exclusion reasons: malformed_row (1)" in printed
    assert "shortcut audit: 0 warning(s)" in printed and f"wrote {tmp_path / 'o'}" in printed


def test_help_prints_each_default_once():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "(default: None)" not in result.stdout
    text = " ".join(result.stdout.split())
    assert text.count("(default: 5)") == 1  # --variants
    assert "default: the benchmark's Hub id" in text and text.count("(default:") == text.count("(default: ") > 3


@pytest.mark.slow  # a build in another process
def test_the_console_command_runs_a_builder(tmp_path):
    result = subprocess.run([sys.executable, "-m", "builders", "wicked", "--source", "sample", "--sba-classifier",
                             "none", "--output", str(tmp_path / "o")], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "o" / "build_config.yaml").exists()
    listing = subprocess.run([sys.executable, "-m", "builders", "--help"], capture_output=True, text=True, cwd=REPO)
    assert listing.returncode == 0 and "wicked" in listing.stdout and "perturbations" in listing.stdout


# ---- a careless or hostile command line (one line, status 2, before any work) ------------------------------


def _config(tmp_path: Path, name: str, params: dict | None = None, source: object = None, **top) -> Path:
    import yaml

    data = {"builder": "wicked", "source": {"benchmark": "mmlu", "spec": "sample"} if source is None else source,
            "params": {"sba_classifier": "none", **(params or {})}, **top}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("name, config, expected", [
    ("seed list", {"params": {"seed": [1, 2]}}, "option seed takes one value, got [1, 2]"),
    ("limit float", {"params": {"limit": 2.5}}, "argument --limit: expected a whole number, got '2.5'"),
    ("unknown benchmark", {"source": {"benchmark": "nosuch", "spec": "sample"}}, "argument --benchmark: invalid choice"),
    ("bad choice", {"params": {"nota_position": "middle"}}, "argument --nota-position: invalid choice: 'middle'"),
    ("switch as text", {"params": {"strict": "yes"}}, "option strict is a switch (true or false), got 'yes'"),
    ("list as text", {"params": {"splits": "test"}}, "option splits takes a list of values, got 'test'"),
    ("another builder's", {"builder": "gsm_mc"}, "is the build config of 'gsm_mc', not of wicked"),
    ("a delivery option", {"params": {"output": "/tmp/elsewhere"}}, "options ['output'] are never recorded"),
    ("an endpoint option", {"params": {"base_url": "http://attacker.example/v1"}}, "options ['base_url'] are never recorded"),
    ("params not a mapping", {"params": [1]}, "'params' and 'source' must be mappings"),
    # Options at the top level were ignored without a word (the build used the defaults)
    ("options at the top level", {"variants": 2, "seed": 4},
     ("unknown top-level keys ['seed', 'variants']; a build config holds only builder, mcqforge_version, source, "
      "params (options go under 'params:')")),
])
def test_a_bad_build_config_is_one_line_naming_the_file(tmp_path, capsys, name, config, expected):
    """A config file is checked as if its options had been typed: types, choices, switches and lists; options
    that are never recorded (where the build goes, which endpoint gets the API key) are refused."""
    params = config.get("params")
    path = _config(tmp_path, "c", params if isinstance(params, dict) else None, config.get("source"),
                   **{k: v for k, v in config.items() if k not in ("params", "source")})
    if not isinstance(params, dict) and params is not None:
        import yaml

        path.write_text(yaml.safe_dump({"builder": "wicked", "source": {"spec": "sample"}, "params": params}))
    assert wicked.main(["--config", str(path), "--output", str(tmp_path / "o")]) == 2, name
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}") and expected in lines[0], (name, lines)
    assert not (tmp_path / "o").exists()


def test_a_config_without_params_is_refused_not_ignored(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("variants: 2\n")
    assert wicked.main(["--config", str(path), "--source", "sample", "--sba-classifier", "none",
                        "--output", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        (f"error: {path}: unknown top-level keys ['variants']; a build config holds only builder, mcqforge_version, "
         "source, params (options go under 'params:')")]
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("module, flag", [("wicked", "--llm-timeout"), ("python_io", "--call-timeout"),
                                          ("math_mc", "--equivalence-timeout")])
def test_a_timeout_beyond_a_day_is_refused_naming_its_flag(module, flag, capsys):
    """--call-timeout 1e12 made every verification fail (a wait beyond threading.TIMEOUT_MAX overflows), and the
    error blamed the predictions."""
    from builders.core.pipeline import cli
    from builders.registry import builder_module

    builder = builder_module(module)
    for value in ("1e12", "86401", "inf"):
        assert builder.main(["--source", "sample", flag, value, "--output", "unused"]) == 2
        assert capsys.readouterr().err.splitlines() == [
            f"error: argument {flag}: must be a finite number above 0 and at most 86400, got {value}"]
    assert getattr(cli.builder_parser(builder.BUILDER).parse_args([flag, "86400"]), flag[2:].replace("-", "_")) == 86400


def test_a_good_build_config_sets_typed_defaults_and_flags_still_win(tmp_path):
    from builders import contrast_sets
    from builders.core.pipeline import cli

    path = _config(tmp_path, "good", {"seed": 3, "variants": 2, "nota_position": "random", "strict": True,
                                      "splits": ["test"], "sba_threshold": 0.25})
    args = cli.parse_args(cli.builder_parser(wicked.BUILDER), ["--config", str(path)])
    assert (args.seed, args.variants, args.nota_position, args.strict, args.splits, args.sba_threshold,
            args.source, args.benchmark) == (3, 2, "random", True, ["test"], 0.25, "sample", "mmlu")
    args = cli.parse_args(cli.builder_parser(wicked.BUILDER), ["--config", str(path), "--seed", "4", "--splits", "dev"])
    assert (args.seed, args.splits, args.variants) == (4, ["dev"], 2)
    import yaml

    path.write_text(yaml.safe_dump({"builder": "contrast_sets", "source": {"benchmark": "unifiedqa", "spec": "sample"},
                                    "params": {"cross_source": False, "cross_split": True}}))
    args = cli.parse_args(cli.builder_parser(contrast_sets.BUILDER), ["--config", str(path)])
    assert (args.cross_source, args.cross_split) == (False, True)


@pytest.mark.parametrize("argv, expected", [
    (["--preview", "0"], "argument --preview: must be at least 1, got 0"),
    (["--preview", "-3"], "argument --preview: must be at least 1, got -3"),
    (["--limit", "0", "--output", "{tmp}/o"], "argument --limit: must be at least 1, got 0"),
    (["--output", "{src}/inside"], "is inside the source folder"),
    (["--output", "{src}"], "is not an mcqforge release folder"),
])
def test_bad_options_are_one_line_before_loading(tmp_path, capsys, argv, expected):
    source = write_benchmark("mmlu", tmp_path)
    argv = [a.format(tmp=tmp_path, src=source) for a in argv]
    assert wicked.main(["--source", str(source), "--sba-classifier", "none", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], lines
    assert sorted(p.name for p in source.iterdir()) == ["dev.jsonl", "test.jsonl"]  # nothing written into the source


def test_a_source_inside_the_output_is_refused(tmp_path, capsys):
    """The release replaces --output whole: a source read from inside it would be deleted."""
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--variants", "1",
                        "--output", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    assert wicked.main(["--source", str(tmp_path / "out" / "original"), "--sba-classifier", "none",
                        "--output", str(tmp_path / "out")]) == 2
    assert "is inside --output" in capsys.readouterr().err
    assert (tmp_path / "out" / "original").is_dir()


def test_an_error_raised_while_interrupted_is_an_interruption(capsys):
    from builders.core.pipeline.cli import exit_code

    def broken_import():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise ImportError("partially initialized module")  # noqa: B904 (the interrupt must stay its context)

    assert exit_code(broken_import) == 130
    assert capsys.readouterr().err == "interrupted\n"
    with pytest.raises(ValueError):
        exit_code(lambda: int("x"))


def test_ctrl_c_while_the_libraries_import_is_one_line(tmp_path):
    """Regression: Ctrl-C in the first seconds of a command (torch, datasets importing, before exit_code runs)
    printed Python's traceback. A `numpy` that sleeps on import holds the command there, and the signal is sent
    once it has started to import (the SBA tool's help loads numpy with its training recipes; no builder's help
    loads it any more)."""
    started = tmp_path / "importing"
    (tmp_path / "numpy.py").write_text(f"import pathlib, time\npathlib.Path({str(started)!r}).touch()\ntime.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    process = subprocess.Popen([sys.executable, "-m", "builders", "sba", "--help"], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=with_default_ctrl_c)
    deadline = time.monotonic() + 30
    while not started.exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.exists(), "the command never imported numpy: hold it in another import"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert (process.returncode, err, out) == (130, "interrupted\n", "")


@pytest.mark.parametrize("kind, make, expected", [
    ("folder", lambda t: t / "a_file", "is a file, not a folder"),
    ("folder", lambda t: t / "a_file" / "below", "cannot create it there"),
    ("file", lambda t: t, "is a folder, not a file"),
    ("file", lambda t: t / "a_file" / "x.jsonl", "cannot create it there"),
])
def test_output_paths_are_checked_before_any_work(tmp_path, kind, make, expected):
    from builders.core.errors import UserError
    from builders.core.pipeline.cli import check_writable_file, check_writable_folder

    (tmp_path / "a_file").write_text("x")
    check = check_writable_folder if kind == "folder" else check_writable_file
    with pytest.raises(UserError, match=expected):
        check(make(tmp_path))
    check(tmp_path / "new" / "deeper")  # not there yet: fine


@pytest.mark.parametrize("argv, expected", [([], "error: no command given"), (["nope"], "error: unknown command 'nope'")])
def test_the_console_command_names_a_bad_command_in_one_line(argv, expected):
    result = subprocess.run([sys.executable, "-m", "builders", *argv], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 2 and result.stderr.splitlines()[-1] == expected
    assert [line for line in result.stderr.splitlines() if line.startswith("error:")] == [expected]


def _last_error(module: str, *args: str) -> tuple[int, str]:
    result = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=REPO)
    return result.returncode, result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize("module, args, expected", [
    # counts that would make millions of configs (16.8 GB before the cap)
    (BUILDERS["gsm_mc"], ["--sets", "100000000"], "error: argument --sets: must be between 1 and 1000, got 100000000"),
    (BUILDERS["wicked"], ["--variants", "1000000000", "--sba-classifier", "none"],
     "error: argument --variants: must be between 1 and 1000, got 1000000000"),
    # numbers that must be positive, refused by argparse before any work
    (BUILDERS["math_mc"], ["--equivalence-timeout", "0"], "argument --equivalence-timeout: must be a finite number above 0"),
    (BUILDERS["math_mc"], ["--equivalence-workers", "0"], "argument --equivalence-workers: must be at least 1, got 0"),
    (BUILDERS["math_mc"], ["--max-tokens", "-1"], "argument --max-tokens: must be at least 1, got -1"),
    (BUILDERS["python_io"], ["--sandbox-workers", "0"], "argument --sandbox-workers: must be at least 1, got 0"),
    (BUILDERS["mmlu_pro_plus"], ["--embedder-batch-size", "0"], "argument --embedder-batch-size: must be at least 1"),
    (BUILDERS["mmlu_pro_plus"], ["--max-length-ratio", "-1"], "argument --max-length-ratio: must be a finite number"),
    # a negative slack would refuse every new option; a share above 1 or a cut-off of 0 means nothing
    (BUILDERS["mmlu_pro_plus"], ["--length-slack", "-5"], "error: argument --length-slack: must be at least 0, got -5"),
    (BUILDERS["mmlu_pro_plus"], ["--similarity-cutoff", "0"],
     "error: argument --similarity-cutoff: must be a finite number above 0 and at most 1, got 0"),
    (BUILDERS["wicked"], ["--max-excluded", "1.5"], "error: argument --max-excluded: must be a finite number at least 0 "
                                                   "and at most 1, got 1.5"),
    (BUILDERS["wicked"], ["--sba-threshold", "nan"], "error: argument --sba-threshold: must be a finite number"),
    (BUILDERS["contrast_sets"], ["--threshold", "1.5"], "error: argument --threshold: must be a finite number above 0"),
    (BUILDERS["perturbations"], ["--shots", "-1"], "error: argument --shots: must be at least 0, got -1"),
    # a task name with a space or a comma cannot be passed to lm_eval --tasks
    (BUILDERS["perturbations"], ["--task-prefix", "my tasks"],
     "error: argument --task-prefix: letters, digits, '_' and '-', starting with a letter; got 'my tasks'"),
    (BUILDERS["perturbations"], ["--task-prefix", "a,b"], "error: argument --task-prefix: letters, digits"),
    (BUILDERS["python_io"], ["--call-timeout", "0"], "error: argument --call-timeout: must be a finite number above 0"),
    (BUILDERS["gsm_mc"], ["--llm-concurrency", "0"], "error: argument --llm-concurrency: must be at least 1, got 0"),
])
def test_bad_counts_are_one_line_before_any_work(tmp_path, module, args, expected):
    code, line = _last_error(module, "--source", "sample", *args, "--output", str(tmp_path / "out"))
    assert code == 2 and expected in line and not (tmp_path / "out").exists()


def test_files_written_at_the_end_are_checked_first_and_an_empty_predictions_file_is_named(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = str(tmp_path / "out")
    assert _last_error(BUILDERS["gsm_mc"], "--source", "sample", "--pool", str(tmp_path), "--output", out) == (
        2, f"error: --pool {tmp_path} is a folder, not a file")
    assert _last_error(BUILDERS["gsm_mc"], "--source", "sample", "--predictions", str(empty), "--output", out) == (
        2, f"error: --predictions {empty}: no predictions in it")


@pytest.mark.slow
def test_evaluate_and_export_check_their_arguments_before_any_model_runs(tmp_path):
    release = tmp_path / "release"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(release),
                        "--log-level", "ERROR"]) == 0
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert _last_error("builders.evaluate", str(release), "--model", "dummy", "--limit", "0")[1].endswith(
        "argument --limit: must be a count of at least 1 or a share between 0 and 1, got 0")
    assert _last_error("builders.evaluate", str(release), "--model", "dummy", "--output", str(a_file)) == (
        2, f"error: --output {a_file} is a file, not a folder")
    assert _last_error("builders.evaluate", str(release), "--model", "dummy", "--open-ended-scores", str(a_file)) == (
        2, "error: --open-ended-scores applies to gsm_mc, math_mc, python_io releases, not wicked")
    assert _last_error("builders.export", str(release), "--layout", "mc-evaluation", "--output",
                       str(release / "export")) == (
        2, f"error: --output {release / 'export'} is inside the release {release}: the export would change the release")


def test_the_cyclic_collector_collects_rarely_during_a_build_and_as_before_after_it(tmp_path, monkeypatch):
    """A build allocates tens of millions of objects and makes almost no cycles: at the default threshold the
    collector spent 1.9 of a perturbation build's 28 CPU seconds visiting them. During a build it collects the young
    generation every 100,000 allocations; the caller's thresholds are back afterwards, also when the build fails."""
    import gc

    from builders.core.pipeline import cli

    seen = []
    make_build = type(wicked.BUILDER).make_build
    monkeypatch.setattr(type(wicked.BUILDER), "make_build",
                        lambda *a: seen.append(gc.get_threshold()) or make_build(*a))
    before = gc.get_threshold()
    assert before[0] < cli.YOUNG_COLLECTION
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(tmp_path / "o")]) == 0
    assert seen == [(cli.YOUNG_COLLECTION, *before[1:])] and gc.get_threshold() == before
    assert wicked.main(["--source", str(tmp_path / "missing.jsonl"), "--output", str(tmp_path / "p")]) == 2
    assert gc.get_threshold() == before
