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

from builders import wicked
from builders.core.benchmarks import BENCHMARKS
from builders.core.sources import load_source
from fixtures import MMLU_TEST, write_benchmark, write_jsonl

REPO = Path(__file__).resolve().parents[1]


def run_cli(*argv: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "builders.wicked", *argv], capture_output=True, text=True, cwd=REPO,
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


def test_an_existing_tag_is_refused_before_loading(local_hub, tmp_path):
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--push", "mcqforge/cli-tag",
                        "--version", "1.0.0"]) == 0
    result = run_cli("--source", "sample", "--sba-classifier", "none", "--push", "mcqforge/cli-tag",
                     "--version", "1.0.0", env={"HF_TOKEN": local_hub.token})
    assert "already has tag v1.0.0" in one_error_line(result) and "read mmlu" not in result.stderr


# ---- releases are written whole -----------------------------------------------------------------------------

SLOW_WRITER = """
import sys, time
from builders.core import release
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
    full = wicked.build(load_source(BENCHMARKS["mmlu"], str(write_jsonl(tmp_path / "a" / "mmlu" / "test.jsonl", rows).parent)),
                        wicked_args())
    part = wicked.build(load_source(BENCHMARKS["mmlu"], str(write_jsonl(tmp_path / "b" / "mmlu" / "test.jsonl",
                                                                       rows[20:45]).parent)), wicked_args())
    view = lambda r: (r.question, r.choices, r.answer, r.metadata["removed_index"])  # noqa: E731
    for variant in ("variant_0", "variant_3"):
        whole = {r.question: view(r) for r in full.configs[variant]["test"]}
        assert [view(r) for r in part.configs[variant]["test"]] == [whole[r["question"]] for r in rows[20:45]]


def wicked_args(*argv: str):
    from builders.core import cli

    return cli.builder_parser(wicked.BUILDER).parse_args(["--sba-classifier", "none", *argv])


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


def test_the_summary_says_rows_reasons_audit_and_where(tmp_path, capsys):
    rows = MMLU_TEST + [{**MMLU_TEST[0], "answer": 7}]
    folder = write_jsonl(tmp_path / "mmlu" / "test.jsonl", rows).parent
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--variants", "1",
                        "--output", str(tmp_path / "o")]) == 0
    printed = capsys.readouterr().out
    assert "| variant_0 | test | 9 | 8 | 1 |" in printed
    assert "top exclusion reasons: malformed_row (1)" in printed
    assert "shortcut audit: 0 warning(s)" in printed and f"wrote {tmp_path / 'o'}" in printed


def test_help_prints_each_default_once():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "(default: None)" not in result.stdout
    text = " ".join(result.stdout.split())
    assert text.count("(default: 5)") == 1  # --variants
    assert "default: the benchmark's Hub id" in text and text.count("(default:") == text.count("(default: ") > 3


def test_the_console_command_runs_a_builder(tmp_path):
    result = subprocess.run([sys.executable, "-m", "builders", "wicked", "--source", "sample", "--sba-classifier",
                             "none", "--output", str(tmp_path / "o")], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "o" / "build_config.yaml").exists()
    listing = subprocess.run([sys.executable, "-m", "builders", "--help"], capture_output=True, text=True, cwd=REPO)
    assert listing.returncode == 0 and "wicked" in listing.stdout and "perturbations" in listing.stdout
