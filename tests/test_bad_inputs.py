"""No input unread: every bad input is refused in one short line with status 2, or excluded and counted, and none
is read as something else (benchmarks/bad_inputs.py tries each against the command line and tabulates them)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from fixtures import MMLU_DEV, MMLU_TEST, write_jsonl

from builders import wicked
from builders.core.pipeline import cli
from builders.core.pipeline.options import MAX_SEED

DEEP = 100_000
HUGE = "7" * 5000  # past Python's 4,300-digit limit of int(str)


# 9**8 strings once expanded, the anchors under a key a build config holds
ALIAS_BOMB = "\n".join(['mcqforge_version:', '- &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] +
                       [f"- &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]" for i in range(7)] +
                       ["builder: wicked", "source: {spec: sample}", "params: {seed: *h}"])


def error_lines(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def mmlu_folder(root: Path, test_rows: list[dict] | None = None, first_line: str | None = None) -> Path:
    folder = root / "mmlu"
    write_jsonl(folder / "dev.jsonl", MMLU_DEV)
    write_jsonl(folder / "test.jsonl", test_rows or MMLU_TEST)
    if first_line is not None:
        (folder / "test.jsonl").write_text(first_line + "\n" + (folder / "test.jsonl").read_text())
    return folder


# ---- options and --config --------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", ["-1", str(10 ** 30), str(MAX_SEED + 1)])
def test_a_seed_out_of_range_is_refused_as_it_is_parsed(tmp_path, capsys, seed):
    """--seed -1 and --seed 10**30 went through the whole build and then raised a traceback."""
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--seed", seed,
                        "--output", str(tmp_path / "o")]) == 2
    assert error_lines(capsys) == [f"error: argument --seed: must be between 0 and {MAX_SEED}, got {seed}"]
    assert not (tmp_path / "o").exists()
    assert cli.builder_parser(wicked.BUILDER).parse_args(["--seed", str(MAX_SEED)]).seed == MAX_SEED


@pytest.mark.parametrize("option, items", [("splits", ["test", "--seed=7"]), ("subjects", ["--seed=7"]),
                                           ("splits", ["-s", "test"])])
def test_a_config_list_item_that_looks_like_a_flag_is_refused(tmp_path, capsys, option, items):
    """``splits: [test, --seed=7]`` became the words ``--splits test --seed=7``: the file said seed 0, the build
    used 7."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"builder": "wicked", "source": {"benchmark": "mmlu", "spec": "sample"},
                                    "params": {"seed": 0, option: items}}))
    assert wicked.main(["--config", str(path), "--sba-classifier", "none", "--output", str(tmp_path / "o")]) == 2
    flag_like = next(item for item in items if item.startswith("-"))
    assert error_lines(capsys) == [f"error: {path}: option {option}: item {flag_like!r} looks like an option, "
                                   "not a value"]
    assert not (tmp_path / "o").exists()


def test_a_config_list_of_negative_numbers_is_still_read(tmp_path):
    from builders.core.release.build_config import option_words

    parser = cli.builder_parser(wicked.BUILDER)
    assert option_words(parser, {"subjects": ["-3", "-0.5", "astronomy"]}, "c.yaml") == \
        ["--subjects", "-3", "-0.5", "astronomy"]


def test_an_alias_bomb_in_a_config_is_one_short_line(tmp_path, capsys):
    """A YAML alias bomb expanded into a 25-million-character error line."""
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    assert wicked.main(["--config", str(path), "--output", str(tmp_path / "o")]) == 2
    assert error_lines(capsys) == [f"error: {path} holds 102,908,577 values once its YAML aliases are expanded; a build "
                                   "config holds at most 100,000"]


def test_a_deeply_nested_config_is_one_line(tmp_path, capsys):
    path = tmp_path / "deep.yaml"
    path.write_text("builder: wicked\nparams: " + "[" * DEEP + "]" * DEEP)
    assert wicked.main(["--config", str(path), "--output", str(tmp_path / "o")]) == 2
    assert error_lines(capsys) == [f"error: cannot read build config {path}: nested too deeply"]


def test_every_error_line_is_one_short_line():
    assert cli.error_line("a\nb") == "a b"
    assert cli.error_line("x" * cli.MAX_ERROR_CHARS) == "x" * cli.MAX_ERROR_CHARS
    cut = cli.error_line("y" * 10 ** 6)
    assert len(cut) <= cli.MAX_ERROR_CHARS and cut.endswith("... (1,000,000 characters in all)")


# ---- source rows ---------------------------------------------------------------------------------------------


def load_mmlu(folder: Path):
    from builders.core.sources.benchmarks import BENCHMARKS
    from builders.core.sources.loading import load_source

    return load_source(BENCHMARKS["mmlu"], str(folder), max_excluded=1.0)


def excluded_rows(loaded) -> list[tuple[str, str, str, str]]:
    return [(e.id, e.reason, e.field, e.detail) for e in loaded.exclusions.entries]


@pytest.mark.parametrize("option", ["\u200b", "\u00ad\u2060", "\ufeff ", "\u00a0\u3000"])
def test_an_option_of_invisible_characters_is_empty(tmp_path, option):
    """An option of only a zero-width space was kept: an item with an option nobody can see."""
    rows = [dict(MMLU_TEST[0], choices=["4", option, "6", "7"]), *MMLU_TEST[1:]]
    loaded = load_mmlu(mmlu_folder(tmp_path, rows))
    assert excluded_rows(loaded) == [("mmlu/test/0", "malformed_row", "choices[1]", "empty option")]
    assert len(loaded.items["test"]) == len(MMLU_TEST) - 1


def test_a_question_of_invisible_characters_is_empty(tmp_path):
    rows = [dict(MMLU_TEST[0], question="\u200b\u200b"), *MMLU_TEST[1:]]
    assert excluded_rows(load_mmlu(mmlu_folder(tmp_path, rows))) == [
        ("mmlu/test/0", "malformed_row", "question", "empty question")]


def test_the_validator_finds_an_invisible_option_on_its_own():
    from builders.core.validation.validate import COMMON_CHECKS, _visible

    assert not _visible("\u200b \u2060") and _visible("\u200bx") and _visible("0")
    assert next(c for c in COMMON_CHECKS if c.name == "no_empty_choice")


def test_the_option_checks_report_every_record_of_options_they_read_once():
    """The validator reads each distinct (options, key) once per check: a problem in options that several configs
    share is still reported in every config that holds them, and the same options with another key are read again."""
    from builders.core.items.record import MCQRecord
    from builders.core.validation.validate import COMMON_CHECKS

    def record(choices, answer, index=0):
        return MCQRecord(id=f"q{index}", question="?", choices=choices, answer=answer, source="s",
                         source_config="c", source_split="test", source_index=index)

    shared = ("4", "\u200b", "4 ", "6")  # an invisible option, and the key "4" twice once whitespace is read

    class Released:
        def records(self):
            yield "variant_0", "test", [record(shared, 0), record(shared, 3, 1)]
            yield "variant_1", "test", [record(tuple(shared), 0), record(("4", "5"), 0, 1)]

    checks = {c.name: c for c in COMMON_CHECKS}
    assert list(checks["no_empty_choice"].find_violations(Released())) == [
        "variant_0/test q0: empty choice", "variant_0/test q1: empty choice", "variant_1/test q0: empty choice"]
    assert list(checks["key_text_once"].find_violations(Released())) == [
        "variant_0/test q0: the key's text appears 2 times among the options",
        "variant_1/test q0: the key's text appears 2 times among the options"]


def test_more_options_than_letters_are_refused_at_the_source(tmp_path):
    """A 30-option item passed validation, and the release's lm-eval helper raised IndexError at the 27th label.
    The letters A to Z label every option everywhere (lm-eval, inspect, the export layouts): a source item with
    more options is malformed, for every builder; 26 options are labelled to Z."""
    from builders.core.tasks.lm_eval_utils import lettered_options

    rows = [dict(MMLU_TEST[0], choices=[f"option {i}" for i in range(30)]),
            dict(MMLU_TEST[1], choices=[f"option {i}" for i in range(26)]), *MMLU_TEST[2:]]
    loaded = load_mmlu(mmlu_folder(tmp_path, rows))
    assert excluded_rows(loaded) == [("mmlu/test/0", "malformed_row", "choices",
                                      "30 choices; at most 26 can be labelled A to Z")]
    widest = loaded.items["test"][0]
    assert len(widest.choices) == 26 and lettered_options({"choices": widest.choices})[-1] == "Z. option 25"


# ---- numbers too long and nesting too deep, in every file a build reads ---------------------------------------

ROW = '{"question": "Q?", "subject": "astronomy", "choices": ["a", "b", "c", "d"], "answer": %s}'


@pytest.mark.parametrize("value, problem", [(HUGE, "a number too long to read (more than 4,300 digits)"),
                                            ("[" * DEEP + "]" * DEEP, "JSON nested too deeply to read")])
@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_a_json_source_with_a_huge_number_or_deep_nesting_is_one_line(tmp_path, capsys, value, problem, suffix):
    folder = mmlu_folder(tmp_path)
    test = folder / "test.jsonl"
    if suffix == ".json":
        test.unlink()
        test = folder / "test.json"
        test.write_text(f"[{ROW % value}]")
    else:
        test.write_text(ROW % value + "\n")
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--output", str(tmp_path / "o")]) == 2
    assert error_lines(capsys) == [f"error: {test}{':1' if suffix == '.jsonl' else ''}: {problem}"]


def test_a_csv_cell_with_a_huge_number_or_deep_nesting_is_a_malformed_row(tmp_path):
    folder = mmlu_folder(tmp_path)
    (folder / "test.jsonl").unlink()
    (folder / "test.csv").write_text("question,subject,choices,answer\n"
                                     f'Q1?,astronomy,"[""a"", ""b""]",{HUGE}\n'
                                     f'Q2?,astronomy,"{"[" * 20_000 + "]" * 20_000}",0\n'  # within csv's field limit
                                     'Q3?,astronomy,"[""a"", ""b""]",1\n')
    loaded = load_mmlu(folder)
    assert [(row_id, reason, field) for row_id, reason, field, _ in excluded_rows(loaded)] == [
        ("mmlu/test/0", "malformed_row", "answer"), ("mmlu/test/1", "malformed_row", "choices")]
    assert [item.question for item in loaded.items["test"]] == ["Q3?"]


@pytest.mark.parametrize("index, problem", [(HUGE, "a number too long to read (more than 4,300 digits)"),
                                            ("[" * DEEP + "]" * DEEP, "JSON nested too deeply to read")])
def test_a_predictions_file_with_a_huge_number_or_deep_nesting_is_one_line(tmp_path, capsys, index, problem):
    from builders import gsm_mc

    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"benchmark": "gsm8k", "split": "test", "question_index": %s, "model": "m", '
                           '"output": "5"}\n' % index)
    assert gsm_mc.main(["--source", "sample", "--predictions", str(predictions), "--output", str(tmp_path / "o")]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("error: ") and lines[0].endswith(f"{predictions}:1: {problem}"), \
        lines


# ---- where the release and the caches go ---------------------------------------------------------------------


def _bwrap_works() -> bool:
    import shutil
    import subprocess

    return shutil.which("bwrap") is not None and subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", "true"], capture_output=True).returncode == 0


needs_bwrap = pytest.mark.skipif(not _bwrap_works(), reason="the mounts are made with bubblewrap")


def run_mounted(mounts: list[str], *argv: str):
    """A build from the embedded sample inside bubblewrap's ``mounts`` (a tmpfs, a read-only folder)."""
    import os
    import subprocess
    import sys

    from builders.registry import BUILDERS

    repo = Path(__file__).resolve().parents[1]
    return subprocess.run(["bwrap", "--dev-bind", "/", "/", *mounts, sys.executable, "-m", BUILDERS["gsm_mc"],
                           "--source", "sample", "--log-level", "ERROR", *argv], capture_output=True, text=True,
                          cwd=repo, env={**os.environ, "PYTHONPATH": str(repo)}, timeout=300)


def one_line(result) -> str:
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@needs_bwrap
def test_an_output_that_is_a_mount_point_is_refused_before_any_work(tmp_path):
    """The swap of a new release into a mount point's place failed with EBUSY after the whole build."""
    out = tmp_path / "out"
    out.mkdir()
    assert one_line(run_mounted(["--tmpfs", str(out)], "--output", str(out))) == (
        f"error: --output {out} is a mount point, which a new release cannot take the place of; write it into a "
        "folder under it")


@needs_bwrap
def test_an_output_on_a_full_disk_is_refused_before_any_work(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    line = one_line(run_mounted(["--size", "65536", "--tmpfs", str(disk)], "--output", str(disk / "out")))
    assert line == f"error: --output {disk / 'out'}: 0.1 MiB free there; the new release needs about 4.0 MiB beside " \
                   "the previous one"


@needs_bwrap
@pytest.mark.parametrize("kind", ["file", "read-only"])
def test_a_cache_folder_that_cannot_be_written_is_refused_before_any_work(tmp_path, kind):
    folder = tmp_path / "ro"
    folder.mkdir()
    if kind == "file":
        cache, blocker, mounts, why = folder / "cache", folder / "cache", [], "is a file, not a folder"
        cache.write_text("x")
    else:
        cache, blocker, mounts, why = folder / "cache", folder, ["--ro-bind", str(folder), str(folder)], "is not writable"
    assert one_line(run_mounted(mounts, "--cache-dir", str(cache), "--output", str(tmp_path / "o"))) == \
        f"error: --cache-dir {cache}: {blocker} {why}"


def test_a_write_that_fails_late_is_one_line_and_leaves_the_previous_release_whole(tmp_path):
    """A full disk found while the release was written was a traceback; the old release must stay in place."""
    import errno

    from builders.core.errors import UserError
    from builders.core.release.writer import write_folder_atomically

    out = tmp_path / "release"
    out.mkdir()
    (out / "build_config.yaml").write_text("old\n")

    def fill(staging: Path) -> None:
        staging.mkdir()
        (staging / "half.parquet").write_bytes(b"PAR1")
        raise OSError(errno.ENOSPC, "Error writing bytes to file")

    with pytest.raises(UserError) as raised:
        write_folder_atomically(out, fill)
    assert str(raised.value) == (f"--output {out}: writing failed (No space left on device); the previous one is "
                                 "left as it was")
    assert [p.name for p in tmp_path.iterdir()] == ["release"] and (out / "build_config.yaml").read_text() == "old\n"


# ---- a damaged release -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gsm_release(tmp_path_factory) -> Path:
    from builders import gsm_mc

    out = tmp_path_factory.mktemp("gsm") / "release"
    assert gsm_mc.main(["--source", "sample", "--output", str(out), "--log-level", "WARNING"]) == 0
    return out


def _rewrite(parquet: Path, change) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = pq.read_table(parquet).to_pylist()
    change(rows)
    pq.write_table(pa.Table.from_pylist(rows), parquet)


@pytest.mark.parametrize("damage, problem", [
    (lambda p: p.write_bytes(p.read_bytes()[:500]), "not a readable Parquet file"),
    (lambda p: _rewrite(p, lambda rows: rows[0].update(answer=9)),
     "row 0: not an mcqforge release row (the answer 9 is not the index of one of its 4 options)"),
    (lambda p: _rewrite(p, lambda rows: [row.pop("choices") for row in rows]),
     "row 0: not an mcqforge release row ('choices' must be 2 to 26 options of text)"),
    (lambda p: _rewrite(p, lambda rows: rows[0].update(choices=[str(i) for i in range(27)])),
     "row 0: not an mcqforge release row ('choices' must be 2 to 26 options of text)"),
])
def test_an_export_of_a_damaged_release_is_one_line(gsm_release, tmp_path, capsys, damage, problem):
    import shutil

    from builders import export

    release = tmp_path / "release"
    shutil.copytree(gsm_release, release)
    damage(next((release / "default").glob("*.parquet")))
    assert export.main([str(release), "--layout", "mc-evaluation", "--output", str(tmp_path / "out")]) == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and lines[0].startswith("error: ") and problem in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_the_validator_refuses_an_item_with_more_options_than_letters():
    """The loader refuses a source item of more than 26 options; a builder that adds one (MMLU-Pro+) could still
    reach 27, which the release's lm-eval helper cannot label: the validator refuses it on its own."""
    from builders.core.errors import ValidationFailed
    from builders.core.items.record import LETTERS
    from builders.core.validation.validate import validate
    from builders.wicked import build_dataset

    row = {"question": "Which is right?", "subject": "biology", "answer": 0,
           "choices": ["Mitochondria make ATP", "Ribosomes make lipids", "The nucleus digests food", "Bones are soft"]}
    result = build_dataset([row], sba_classifier="none", variants=1)
    record = result.build.configs["variant_0"]["test"][0]
    wide = record.replace(choices=tuple(f"option {k}" for k in range(len(LETTERS) + 1)))
    result.build.configs["variant_0"]["test"][0] = wide
    with pytest.raises(ValidationFailed, match="choices_have_labels"):
        validate(result.build)
