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
