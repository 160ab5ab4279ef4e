"""The release folder as a writer sees it: one writer per folder, staging folders cleaned only when
their writer is gone, everything on disk before the swap; nothing empty or built from failed LLM calls
published."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fixtures import write_benchmark
from llm_server import ScriptedError
from test_cli import REPO, _release_state, one_error_line, run_cli

from builders import wicked
from builders.core.release import writer as release
from builders import gsm_mc
from builders import math_mc
from builders.registry import BUILDERS

SCA = json.dumps({"label": "SCA", "alternative": None, "confidence": "high"})


def wicked_argv(source: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", BUILDERS["wicked"], "--source", str(source), "--output", str(out),
            "--log-level", "WARNING", *extra]


def wait_for(condition, seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# ---- one writer per release folder (25.3) -------------------------------------------------------------------


@pytest.mark.slow  # builds in other processes
def test_a_second_build_on_the_same_output_refuses_or_waits_and_the_release_is_whole(llm_server, tmp_path):
    """Two real builds on one --output: the first, held inside its build by a judge that does not answer yet,
    writes the whole release; a second refuses in one line naming the folder and the first's pid, and a
    third with --wait-for-output waits for the first, then replaces its release whole."""
    source = write_benchmark("mmlu", tmp_path)
    out = tmp_path / "release"
    asked, gate = threading.Event(), threading.Event()

    def held_judge(call) -> str:
        asked.set()
        gate.wait(120)
        return SCA

    llm_server.respond_with(held_judge)
    judge = ["--sba-judge", "mock-model", "--base-url", llm_server.openai_base_url, "--api-key-env", "none",
             "--cache-dir", "none", "--llm-concurrency", "1", "--variants", "2"]
    first = subprocess.Popen(wicked_argv(source, out, *judge), cwd=REPO, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    third = None
    try:
        wait_for(lambda: asked.is_set() or first.poll() is not None)  # the first is building
        assert first.poll() is None, first.communicate()
        second = run_cli("--source", str(source), "--sba-classifier", "none", "--output", str(out))
        assert one_error_line(second) == (f"error: --output {out} is being written by another build "
                                          f"(pid {first.pid}); wait for it to end or pass --wait-for-output")
        assert not out.exists() and second.stdout == ""
        third = subprocess.Popen(wicked_argv(source, out, "--sba-classifier", "none", "--wait-for-output"),
                                 cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(4)
        assert third.poll() is None  # waiting for the lock
    finally:
        gate.set()
    assert first.wait(120) == 0, first.communicate()[1][-2000:]
    assert third.wait(120) == 0, third.communicate()[1][-2000:]
    state = _release_state(out)
    assert sum(name.endswith(".parquet") for name in state) == 12  # original + 5 variants, test and dev
    assert "sba_classifier: none" in (out / "build_config.yaml").read_text()  # the third's, written last
    assert sorted(p.name for p in tmp_path.glob(".release*")) == []  # no lock file, no staging folder left


def test_clean_up_removes_only_the_staging_folders_whose_writer_is_gone(tmp_path):
    source = write_benchmark("mmlu", tmp_path)
    out = tmp_path / "release"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        gone_tag = release.owner_tag(gone.pid)
        gone.kill()
        gone.wait()
        pid, started, boot = release.owner_tag(live.pid).split(".")
        staging = {name: tmp_path / f".release.incoming-{tag}-0123abcd" for name, tag in {
            "live": f"{pid}.{started}.{boot}",
            "gone": gone_tag,
            "pid reused": f"{pid}.{int(started) + 1}.{boot}",  # the same pid, another process
            "earlier boot": f"{pid}.{started}.000000000000",
            "unreadable": "x",
        }.items()}
        staging["older mcqforge"] = tmp_path / ".release.incoming-0123abcd"
        for folder in staging.values():
            (folder / "test").mkdir(parents=True)
        assert wicked.main(["--source", str(source), "--sba-classifier", "none", "--output", str(out),
                            "--log-level", "WARNING"]) == 0
        assert sorted(name for name, folder in staging.items() if folder.exists()) == ["live"]
        _release_state(out)
    finally:
        live.kill()
        live.wait()


def test_every_file_and_folder_is_on_disk_before_the_swap(tmp_path, monkeypatch):
    """fsync of every file and folder of the staging folder, then of the parent once the swap is done: a power
    loss leaves the old release or the new one."""
    source = write_benchmark("mmlu", tmp_path)
    out = tmp_path / "release"
    assert wicked.main(["--source", str(source), "--sba-classifier", "none", "--output", str(out),
                        "--log-level", "WARNING"]) == 0  # an old release, to be swapped out
    events: list[tuple[str, str]] = []
    fsync, exchange = os.fsync, release._exchange
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}"))),
                                                 fsync(fd))[1])
    monkeypatch.setattr(release, "_exchange", lambda a, b: (events.append(("swap", str(a))), exchange(a, b))[1])
    assert wicked.main(["--source", str(source), "--sba-classifier", "none", "--output", str(out), "--seed", "3",
                        "--log-level", "WARNING"]) == 0
    swap = events.index(next(e for e in events if e[0] == "swap"))
    staging = events[swap][1]
    before = {path[len(staging):] or "/" for kind, path in events[:swap] if kind == "fsync" and path.startswith(staging)}
    written = {"/" + str(p.relative_to(out)) for p in out.rglob("*")} | {"/"}
    assert written <= before and len(written) > 20
    assert events[swap + 1:] == [("fsync", str(tmp_path))]


@pytest.mark.parametrize("plant", ["symlink", "dangling symlink", "hard link", "fifo"])
def test_a_lock_file_is_never_opened_through_a_link(tmp_path, capsys, plant):
    """The lock file beside --output followed a symlink: `.release.lock -> victim.txt` truncated the victim to the
    builder's pid. It is opened with O_NOFOLLOW (and created with O_EXCL): a link, or anything but a plain file of
    its own, is refused in one line, and what it leads to is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    lock = tmp_path / ".release.lock"
    {"symlink": lambda: lock.symlink_to(victim), "dangling symlink": lambda: lock.symlink_to(tmp_path / "absent"),
     "hard link": lambda: os.link(victim, lock), "fifo": lambda: os.mkfifo(lock)}[plant]()
    source = write_benchmark("mmlu", tmp_path)
    status = wicked.main(["--source", str(source), "--sba-classifier", "none", "--output", str(tmp_path / "release")])
    assert status == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: --output {tmp_path / 'release'}: its lock file {lock} is ")
    assert victim.read_text() == "precious\n" and not (tmp_path / "absent").exists()
    assert not (tmp_path / "release").exists()


def test_a_lock_file_left_by_a_killed_build_is_taken_over(tmp_path):
    """A plain lock file that its holder did not remove (killed) is no one's: the next build locks it."""
    (tmp_path / ".release.lock").write_text("12345\n")
    with release.output_lock(tmp_path / "release"):
        assert (tmp_path / ".release.lock").read_text() == f"{os.getpid()}\n"
    assert not (tmp_path / ".release.lock").exists()


# ---- nothing empty published (25.4) ---------------------------------------------------------------------


GSM8K = [{"question": f"What is {n} + {n}?", "answer": f"#### {2 * n}"} for n in range(1, 13)]


def test_a_build_that_excludes_every_item_writes_and_pushes_nothing(local_hub, tmp_path, capsys):
    """GSM-MC with the predictions of one model: 12 of 12 items pool_too_small; the release would hold only
    empty splits (Parquet files of 0 rows, which load_dataset cannot load)."""
    source = tmp_path / "gsm8k"
    source.mkdir()
    (source / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in GSM8K))
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("".join(json.dumps({"question_index": i, "model": "a", "output": str(2 * n + 1)}) + "\n"
                                   for i, n in enumerate(range(1, 13))))
    repo = "mcqforge/empty"
    common = ["--source", str(source), "--predictions", str(predictions), "--push", repo, "--version", "1.0.0",
              "--log-level", "WARNING", "--max-excluded", "1"]  # let every row go: the empty release must stop it
    for where in (["--output", str(tmp_path / "out")], []):  # written and pushed, or pushed only
        status = gsm_mc.main([*common, *where])
        error = capsys.readouterr().err
        lines = [line for line in error.splitlines() if line.startswith("error: ")]
        assert status == 2 and len(lines) == 1 and "Traceback" not in error
        assert lines[0] == ("error: nothing to publish: 11 empty config(s) or split(s): default/test, set_0/test, "
                            "set_1/test, set_2/test, set_3/test; most common exclusions: pool_too_small (12); "
                            "nothing was written")
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))
    with pytest.raises(KeyError, match="No dataset repo"):
        local_hub.tags(repo)  # never created, nothing tagged


# ---- LLM calls that fail are not a release (25.4) -----------------------------------------------------------


def test_a_judge_that_answers_every_call_with_400_stops_the_build(llm_server, tmp_path, capsys):
    """WiCkeD --sba-judge: before, 30 of 30 variant items were copied unchanged and the build exited 0."""
    llm_server.respond_with(lambda call: ScriptedError(400, message="model not found"))
    source = write_benchmark("mmlu", tmp_path)
    status = wicked.main(["--source", str(source), "--sba-judge", "mock-model", "--base-url",
                          llm_server.openai_base_url, "--api-key-env", "none", "--cache-dir", "none",
                          "--llm-concurrency", "1", "--output", str(tmp_path / "out")])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith(f"error: 1 of 8 requests to mock-model at {llm_server.openai_base_url} failed, "
                               "more than --max-llm-failures 0.1 allows (10%); most often http_400 (1: ")
    assert "model not found" in lines[0]
    assert len(llm_server.chat_requests) == 1  # stopped as soon as the share was certain to be passed
    assert not (tmp_path / "out").exists()


def test_generated_predictions_that_all_fail_stop_the_build_and_the_share_is_an_option(llm_server, tmp_path, capsys):
    """MATH-MC --generate-with: before, an empty release and status 0."""
    source = tmp_path / "math"
    source.mkdir()
    (source / "test.jsonl").write_text("".join(json.dumps(
        {"problem": f"Compute {n} + {n}.", "level": "Level 1", "type": "Algebra",
         "solution": rf"It is $\boxed{{{2 * n}}}$."}) + "\n" for n in range(10)))
    failing = {f"Compute {n} + {n}." for n in (3, 7)}
    llm_server.respond_with(lambda call: ScriptedError(400) if any(q in call.user_text for q in failing)
                            else None if "Compute 0 +" in call.user_text else r"$\boxed{1}$")
    common = ["--source", str(source), "--generate-with", "m1", "--base-url", llm_server.openai_base_url,
              "--api-key-env", "none", "--cache-dir", "none", "--llm-concurrency", "1", "--log-level", "WARNING"]
    assert math_mc.main([*common, "--output", str(tmp_path / "a")]) == 2
    line = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(line) == 1 and "2 of 10 requests to m1" in line[0] and "http_400 (2: " in line[0]
    assert not (tmp_path / "a").exists()
    # 2 of 10 is within a stated share of 0.2: the build goes on (and stops later: one model's answers give
    # no pool of distractors, so nothing is left to publish)
    assert math_mc.main([*common, "--max-llm-failures", "0.2", "--max-excluded", "1", "--output",
                         str(tmp_path / "b")]) == 2
    line = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(line) == 1 and line[0].startswith("error: nothing to publish: ")


@pytest.mark.parametrize("with_nulls", [False, True])
def test_string_columns_written_in_chunks_give_the_bytes_and_size_of_one_array(tmp_path: Path, with_nulls: bool):
    """A string column is converted 1,024 rows at a time (a perturbation's prompts are never all held); the file and
    the size the card reports are those of the whole column converted at once. 2,600 rows of 700 distinct
    characters: more than a 1 MiB dictionary page, so the writer falls back to plain pages inside the column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from builders.core.items.record import MCQRecord, Value

    def prompt(i: int) -> str | None:
        return None if with_nulls and i % 997 == 0 else f"{i:05d} ∑ " + "".join(chr(65 + (i * k) % 58) for k in range(700))

    records = [MCQRecord(f"s/test/{i}", f"question {i}", ("a", "b"), 0, "s", "default", "test", i,
                         subject=None if i % 3 else "math", columns={"prompt": prompt(i)}) for i in range(2600)]
    columns = {"prompt": Value("string")}
    size = release.write_parquet(records, {}, tmp_path / "chunked.parquet", columns)

    features = release.release_features({}, columns)  # the schema write_parquet writes
    schema = release.arrow_schema(features).with_metadata(
        {"huggingface": json.dumps({"info": {"features": release.features_json(features)}})})
    whole = pa.Table.from_arrays([release._column(records, name, {"prompt"}) for name in schema.names], schema=schema)
    pq.write_table(whole, tmp_path / "whole.parquet", compression="zstd")
    assert (tmp_path / "chunked.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    assert size == whole.nbytes
    converted = release._arrow_column(records, schema.field("prompt"), {"prompt"})  # 3 chunks, or one with nulls
    assert isinstance(converted, pa.Array) if with_nulls else [len(c) for c in converted.chunks] == [1024, 1024, 552]
    assert pq.read_table(tmp_path / "chunked.parquet")["prompt"].null_count == (3 if with_nulls else 0)
    assert pq.ParquetFile(tmp_path / "chunked.parquet").metadata.row_group(0).column(
        schema.names.index("prompt")).encodings == ("PLAIN", "RLE", "RLE_DICTIONARY")


def test_the_schema_written_without_datasets_is_datasets_own():
    """The Arrow schema, the Parquet metadata's JSON and the card's YAML of a release's features, made from their
    descriptions, are ``datasets``' own for every kind a builder declares (each dtype, lists of values, of structs
    and of lists, nested structs, a builder's extra columns) and for every builder's declared features; a feature
    of ``datasets``' own is read by ``datasets``."""
    import datasets

    from builders.core.items import record
    from builders.core.items.record import ListOf, Value
    from builders.registry import load_builder

    kinds = {"flag": Value("bool"), "score": Value("float32"), "count": Value("int32"), "big": Value("int64"),
             "names": ListOf(Value("string")), "pairs": ListOf({"a": Value("int32"), "b": ListOf(Value("bool"))}),
             "grid": ListOf(ListOf(Value("int64"))), "nested": {"inner": {"x": Value("string")}}}
    declared = [(kinds, {"prompt": Value("string")}), ({}, None), ({"own": datasets.Value("int16")}, None)]
    for name in BUILDERS:
        for benchmark in load_builder(name).benchmarks:
            declared.append((dict(benchmark.metadata_features), None))
    for metadata, columns in declared:
        features = record.release_features(metadata, columns)
        theirs = record.record_features(metadata, columns)
        assert record.arrow_schema(features).equals(theirs.arrow_schema, check_metadata=False)
        assert json.dumps(record.features_json(features)) == json.dumps(theirs.to_dict())
        assert record.features_yaml(features) == theirs._to_yaml_list()


def test_the_picture_is_kept_by_what_it_is_drawn_from(tmp_path, monkeypatch):
    """The card's picture is read back from the mcqforge cache when the same counts are drawn again (nothing is
    drawn); other counts are another picture; a damaged or unwritable cache is as none."""
    from builders.core.pipeline import cli
    from builders.core.release import figure

    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "cache"))
    builder = gsm_mc.BUILDER
    args = cli.builder_parser(builder).parse_args(["--source", "sample", "--output", str(tmp_path / "out")])
    options = builder.options_of(args)
    build, report = cli.build_and_validate(builder, cli.builder_parser(builder), args, options,
                                           cli.load(builder, args, options))
    drawn = []
    draw = figure._drawn
    monkeypatch.setattr(figure, "_drawn", lambda *a: drawn.append(a) or draw(*a))
    first = figure.summary_figure(build, report)
    assert first.startswith(b"\x89PNG") and figure.summary_figure(build, report) == first and len(drawn) == 1
    split = next(iter(report.answer_positions[build.default_config]))
    report.answer_positions[build.default_config][split]["A"] += 1
    assert figure.summary_figure(build, report) != first and len(drawn) == 2
    report.answer_positions[build.default_config][split]["A"] -= 1
    for kept in (tmp_path / "cache" / figure.CACHE_FOLDER).rglob("*.png"):
        kept.write_bytes(kept.read_bytes()[:-1] + b"!")
    assert figure.summary_figure(build, report) == first and len(drawn) == 3
    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "a file"))
    (tmp_path / "a file").write_text("")
    assert figure.summary_figure(build, report) == first and len(drawn) == 4
