"""``python -m builders.export``: each layout is read back with the reader logic of the paper's own evaluation code,
re-implemented here (MC-Evaluation's 4-option JSONL prompt and MATH ``Type`` demonstrations; MMLU-Pro's Hub
columns as its evaluation code and lm-eval's upstream ``mmlu_pro_plus`` task read them)."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sample_releases import EMBEDDER_GROUP

from builders import export
from builders.core.items.record import LETTERS
from builders import gsm_mc
import builders.mmlu_pro_plus as mmlu_pro_plus


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def release_records(folder: Path, config: str, split: str) -> list[dict]:
    return pq.read_table(next((folder / config).glob(f"{split}-*.parquet"))).to_pylist()


# ---- MC-Evaluation (Zhang et al., 2024) --------------------------------------------------------------------------


def mc_evaluation_reader(rows: list[dict]) -> list[tuple[str, list[str], int]]:
    """Their reader: ``Question``, the option keys A, B, C, D ..., ``Answer`` a letter among them; the prompt
    "Question: …\\nA: …\\n…\\n\\nAnswer: " and the gold index of the letter."""
    out = []
    for row in rows:
        letters = [k for k in "ABCDEFGHIJ" if k in row]
        assert letters == list("ABCDEFGHIJ"[: len(letters)]), "options must be consecutive letters from A"
        prompt = f"Question: {row['Question']}\n" + "".join(f"{k}: {row[k]}\n" for k in letters) + "\nAnswer: "
        out.append((prompt, [row[k] for k in letters], letters.index(row["Answer"])))
    return out


@pytest.fixture(scope="module")
def gsm_release(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gsm") / "release"
    assert gsm_mc.main(["--source", "sample", "--splits", "train", "test", "--sets", "2", "--output", str(out),
                        "--log-level", "WARNING"]) == 0
    return out


def test_mc_evaluation_layout_reads_back(gsm_release, tmp_path):
    assert export.main([str(gsm_release), "--layout", "mc-evaluation", "--output", str(tmp_path / "x")]) == 0
    files = sorted(str(p.relative_to(tmp_path / "x")) for p in (tmp_path / "x").rglob("*.jsonl"))
    assert files == [f"{c}/{s}.jsonl" for c in ("default", "set_0", "set_1") for s in ("test", "train")]
    for config in ("set_0", "set_1"):
        for split, size in (("train", 6), ("test", 12)):
            exported = read_jsonl(tmp_path / "x" / config / f"{split}.jsonl")
            read = mc_evaluation_reader(exported)
            records = release_records(gsm_release, config, split)
            assert len(read) == len(records) == size
            for (prompt, options, gold), record in zip(read, records, strict=True):
                assert options == record["choices"] and gold == record["answer"]
                assert options[gold] == record["choices"][record["answer"]]
                assert prompt.startswith(f"Question: {record['question']}\nA: ") and prompt.endswith("\n\nAnswer: ")
            assert all("Type" not in row for row in exported)  # GSM-MC has no Type


def write_release(folder: Path, builder: str, configs: dict[str, dict[str, list[dict]]]) -> Path:
    """A small release folder as the release writer lays it out: build_config.yaml and Parquet per config."""
    folder.mkdir(parents=True)
    (folder / "build_config.yaml").write_text(f"builder: {builder}\n")
    for config, splits in configs.items():
        (folder / config).mkdir()
        for split, rows in splits.items():
            pq.write_table(pa.Table.from_pylist(rows), folder / config / f"{split}-00000-of-00001.parquet")
    return folder


def math_row(k: int, split: str, subject: str, answer: int) -> dict:
    return {"id": f"math/{split}/{k}", "question": f"Compute problem {k}.", "choices": [f"{k}", f"{k + 1}", f"{k + 2}", f"{k + 3}"],
            "answer": answer, "source": "EleutherAI/hendrycks_math", "source_config": "default", "source_split": split,
            "source_index": k, "subject": subject, "category": None}


def test_mc_evaluation_layout_carries_the_math_type(tmp_path):
    train = [math_row(k, "train", subject, k % 4) for k, subject in enumerate(["Algebra", "Geometry", "Algebra", "Precalculus"])]
    test = [math_row(10 + k, "test", subject, (k + 1) % 4) for k, subject in enumerate(["Geometry", "Algebra", "Algebra"])]
    release = write_release(tmp_path / "math", "math_mc", {"set_0": {"train": train, "test": test}})
    assert export.main([str(release), "--layout", "mc-evaluation", "--output", str(tmp_path / "x")]) == 0
    exported_train = read_jsonl(tmp_path / "x" / "set_0" / "train.jsonl")
    exported_test = read_jsonl(tmp_path / "x" / "set_0" / "test.jsonl")
    # Their MATH reader: demonstrations of the test question's Type.
    by_type = Counter(row["Type"] for row in exported_train)
    assert by_type == {"Algebra": 2, "Geometry": 1, "Precalculus": 1}
    demos = {row["Question"]: [d["Question"] for d in exported_train if d["Type"] == row["Type"]] for row in exported_test}
    assert demos == {"Compute problem 10.": ["Compute problem 1."],
                     "Compute problem 11.": ["Compute problem 0.", "Compute problem 2."],
                     "Compute problem 12.": ["Compute problem 0.", "Compute problem 2."]}
    assert [gold for _, _, gold in mc_evaluation_reader(exported_test)] == [1, 2, 3]


def test_mc_evaluation_needs_a_train_or_test_split(tmp_path, capsys):
    release = write_release(tmp_path / "r", "gsm_mc", {"set_0": {"validation": [math_row(0, "validation", "x", 0)]}})
    assert export.main([str(release), "--layout", "mc-evaluation", "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "no train or test split" in err[0]


# ---- MMLU-Pro+ (Taghanaki et al., 2024) -------------------------------------------------------------------------


def mmlu_pro_reader(rows: list[dict]) -> dict[str, list[tuple[str, str]]]:
    """MMLU-Pro's evaluation code: drop "N/A" options, letter the rest, compare the extracted letter with
    ``answer``; MMLU-Pro+'s adds the groups from its flags. Returns group -> [(prompt, gold letter)]."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        options = [o for o in row["options"] if o != "N/A"]
        assert row["answer"] == "ABCDEFGHIJKLMNOP"[row["answer_index"]]
        prompt = "Question:\n" + row["question"] + "\nOptions:\n" + "".join(
            f"{'ABCDEFGHIJKLMNOP'[i]}. {o}\n" for i, o in enumerate(options)) + "Answer: Let's think step by step."
        group = ("true_positive_pair" if row.get("is_modified") else
                 {"correct_and_wrong": "partial_false_positive_pair", "two_wrong": "complete_false_positive_pair"}
                 .get(row.get("modification_type_non_llm"), "unchanged"))
        groups.setdefault(group, []).append((prompt, row["answer"]))
    return groups


@pytest.fixture(scope="module")
def plus_release(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("plus")
    assert mmlu_pro_plus.main(["--source", "sample", "--output", str(root / "release"), "--cache-dir", str(root / "cache"),
                               "--log-level", "WARNING"]) == 0
    return root / "release"


@pytest.mark.slow
def test_mmlu_pro_plus_layout_reads_back(plus_release, tmp_path):
    assert export.main([str(plus_release), "--layout", "mmlu-pro-plus", "--output", str(tmp_path / "x")]) == 0
    files = sorted(str(p.relative_to(tmp_path / "x")) for p in (tmp_path / "x").rglob("*.jsonl"))
    assert files == ["default/test.jsonl", "default/validation.jsonl", "original/test.jsonl", "original/validation.jsonl"]
    exported = read_jsonl(tmp_path / "x" / "default" / "test.jsonl")
    assert list(exported[0]) == ["question_id", "question", "options", "answer", "answer_index", "cot_content",
                                 "category", "src", "is_modified", "is_modified_non_llm", "modification_type_non_llm"]
    groups = mmlu_pro_reader(exported)
    assert {g: len(v) for g, v in groups.items()} == {"true_positive_pair": 4, "partial_false_positive_pair": 2,
                                                       "complete_false_positive_pair": 2, "unchanged": 4}
    records = {r["metadata"]["question_id"]: r for r in release_records(plus_release, "default", "test")}
    for row in exported:
        record = records[row["question_id"]]
        assert row["options"] == record["choices"] and row["answer_index"] == record["answer_index"]
        if row["is_modified"]:  # the TPP gold is the pair, last
            assert row["options"][row["answer_index"]].startswith("Both ")
            assert row["answer_index"] == len(row["options"]) - 1 and row["answer"] == LETTERS[row["answer_index"]]
    # The unmodified MMLU-Pro questions, with their 'N/A' padding dropped as MMLU-Pro's reader drops it.
    original = read_jsonl(tmp_path / "x" / "original" / "test.jsonl")
    assert len(original) == 12 and all("is_modified" not in row for row in original)
    assert all("N/A" not in row["options"] for row in original)
    shots = read_jsonl(tmp_path / "x" / "default" / "validation.jsonl")
    assert [s["cot_content"].endswith(f"The answer is ({s['answer']}).") for s in shots] == [True] * 4


def test_mmlu_pro_plus_layout_refuses_a_release_not_made_from_mmlu_pro(gsm_release, tmp_path, capsys):
    assert export.main([str(gsm_release), "--layout", "mmlu-pro-plus", "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no question_id" in err[0]


@pytest.mark.parametrize("spec", ["mcqforge/gsm-mc@", "@v1.0.0", "mcqforge/gsm-mc"])
def test_a_release_spec_without_a_repo_or_a_tag_is_one_line(tmp_path, capsys, spec):
    """`REPO@` (no tag) went to the Hub client with an empty revision and came back as "(IsADirectoryError)"."""
    assert export.main([spec, "--layout", "mc-evaluation", "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {spec}: expected a release folder or REPO@vX.Y.Z"]
    assert not (tmp_path / "x").exists()


# ---- writing: whole or not at all, never two releases in one folder ---------------------------------------------


@EMBEDDER_GROUP  # plus_release builds MMLU-Pro+, which embeds texts
def test_a_failed_export_leaves_no_folder_and_keeps_an_earlier_export_whole(gsm_release, plus_release, tmp_path,
                                                                            capsys):
    """A failing layout left a folder holding a 0-byte JSONL (4 of 4 failing layouts tried)."""
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "x"
    assert export.main([str(gsm_release), "--layout", "mmlu-pro-plus", "--output", str(out)]) == 2
    assert list((tmp_path / "out").iterdir()) == []  # no folder, no staging folder
    release = tmp_path / "plus"
    shutil.copytree(plus_release, release)
    assert export.main([str(release), "--layout", "mmlu-pro-plus", "--output", str(out)]) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert len(before) == 5  # 4 JSONL files and export.json
    # a row without a question_id in the last config read: the layout fails after other files were written
    pq.write_table(pa.Table.from_pylist([{"question": "q", "choices": ["a", "b"], "answer": 0}]),
                   release / "original" / "zzz-00000-of-00001.parquet")
    capsys.readouterr()
    assert export.main([str(release), "--layout", "mmlu-pro-plus", "--output", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: the release has no question_id (column or metadata): not made from MMLU-Pro"]
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["x"]


@EMBEDDER_GROUP  # plus_release builds MMLU-Pro+, which embeds texts
def test_an_export_into_another_releases_export_is_refused(gsm_release, plus_release, tmp_path, capsys):
    """Exporting into a folder holding another release's export mixed them (11 GSM-MC + 6 WiCkeD configs)."""
    out = tmp_path / "x"

    def from_out(release: Path) -> str:
        return os.path.relpath(Path(release).resolve(), out.resolve())

    assert export.main([str(gsm_release), "--layout", "mc-evaluation", "--output", str(out)]) == 0
    files = sorted(p.relative_to(out) for p in out.rglob("*.jsonl"))
    for spec, layout in ((plus_release, "mmlu-pro-plus"), (gsm_release, "mmlu-pro-plus")):
        assert export.main([str(spec), "--layout", layout, "--output", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: --output {out} holds the mc-evaluation export of {from_out(gsm_release)}; choose "
                       f"another folder for the {layout} export of {from_out(spec)}"]
    assert sorted(p.relative_to(out) for p in out.rglob("*.jsonl")) == files
    (out / "set_0" / "stale.jsonl").write_text("{}\n")  # an export of the same release is replaced whole
    assert export.main([str(gsm_release), "--layout", "mc-evaluation", "--output", str(out)]) == 0
    assert sorted(p.relative_to(out) for p in out.rglob("*.jsonl")) == files
    manifest = json.loads((out / export.EXPORT_FILE).read_text())
    assert manifest == {"release": from_out(gsm_release), "layout": "mc-evaluation",  # no machine's path
                        "files": [str(f) for f in files]}


def test_an_export_into_a_folder_that_is_not_an_export_is_refused(gsm_release, tmp_path, capsys):
    out = tmp_path / "x"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert export.main([str(gsm_release), "--layout", "mc-evaluation", "--output", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: --output {out} is not empty and is not an mcqforge export; choose another folder"]
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_help_says_what_each_layout_is_for_which_builders_and_what_output_holds(capsys, monkeypatch):
    """`builders.export --help` left --layout and --output unexplained."""
    from builders import export as export_command

    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        export_command.main(["--help"])
    text = capsys.readouterr().out
    options = text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    blocks = {block.split()[0]: " ".join(block.split()) for block in re.split(r"\n  (?=-)", "\n" + options)[1:]}
    assert sorted(export_command.LAYOUT_USERS) == sorted(export_command.LAYOUTS)
    assert "'mc-evaluation' for GSM-MC, MATH-MC and PythonIO releases" in blocks["--layout"]
    assert "'mmlu-pro-plus' for MMLU-Pro+ releases" in blocks["--layout"]
    assert blocks["--output"].startswith("--output DIR the export folder") and "export.json" in blocks["--output"]
    for layout in export_command.LAYOUTS:  # the epilog describes each (what files, which columns)
        assert f"- {layout} (" in text
