"""The Python API: the README's example runs exactly as written, and builds what the command line builds."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from builders import wicked
from builders.core.errors import UserError
from fixtures import MMLU_TEST, write_jsonl

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_python_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_the_readme_notebook_example_runs_as_written(tmp_path, capsys, monkeypatch):
    example = next(block for block in readme_python_examples() if "build_dataset" in block)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(README), "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "True" and "None of the above" in printed[1]
    assert (tmp_path / "release" / "wicked-notebook" / "build_config.yaml").exists()


def _parquet(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*.parquet"))}


def test_the_api_and_the_command_line_build_the_same_release(tmp_path):
    folder = write_jsonl(tmp_path / "src" / "mmlu" / "test.jsonl", MMLU_TEST).parent
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--seed", "4", "--variants", "2",
                        "--output", str(tmp_path / "cli")]) == 0
    result = wicked.build_dataset(MMLU_TEST, seed=4, variants=2, sba_classifier="none")
    assert result.report.passed and list(result.configs) == ["original", "variant_0", "variant_1"]
    assert result.configs["variant_1"]["test"].num_rows == len(MMLU_TEST)
    result.write(tmp_path / "api")
    assert _parquet(tmp_path / "api") == _parquet(tmp_path / "cli")


def test_list_options_may_be_tuples():
    """The API parses options as the command line would; a tuple is a list of values there, as in Python."""
    result = wicked.build_dataset(MMLU_TEST, subjects=("high_school_biology",), variants=1, sba_classifier="none")
    biology = sum(row["subject"] == "high_school_biology" for row in MMLU_TEST)
    assert biology >= 2 and result.configs["variant_0"]["test"].num_rows == biology


def test_unknown_options_and_bad_data_are_refused():
    with pytest.raises(UserError, match="unknown options \\['varients'\\]"):
        wicked.build_dataset(MMLU_TEST, varients=3, sba_classifier="none")
    # the options go through the command line's own types, as a build config does
    with pytest.raises(UserError, match=r"^wicked.build_dataset: argument --variants: must be between 1 and 1000, got 0$"):
        wicked.build_dataset(MMLU_TEST, variants=0, sba_classifier="none")
    with pytest.raises(UserError, match=r"argument --limit: expected a whole number, got '2.5'$"):
        wicked.build_dataset(MMLU_TEST, limit=2.5, sba_classifier="none")
    with pytest.raises(UserError, match=r"argument --nota-position: invalid choice: 'middle'"):
        wicked.build_dataset(MMLU_TEST, nota_position="middle", sba_classifier="none")
    with pytest.raises(UserError, match=r"option subjects takes a list of values, got 'anatomy'"):
        wicked.build_dataset(MMLU_TEST, subjects="anatomy", sba_classifier="none")
    with pytest.raises(UserError, match="must be a datasets.Dataset"):
        wicked.build_dataset("not rows", sba_classifier="none")
