"""Every builder's embedded sample, built as the README says, as a new user meets it: the build prints each line
once and no warning, the card opens with a short summary and a picture, and ``load_dataset`` with no config
name returns the config the builder's paper evaluates."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from sample_releases import every_builder

from builders.registry import BUILDERS, load_builder

REPO = Path(__file__).resolve().parent.parent
# The shortcuts the choices-only model finds in two samples' own distractors (the samples' predictions, written
# for mcqforge, make PythonIO's wrong outputs longer than the right ones): real, so printed, once each, a warning
# naming every config it applies to (PythonIO's: one for test, one for train, where 11 lines named one set each).
LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ [\w.]+: ")  # a log line's time, level and logger
SAMPLE_WARNINGS = {"python_io": 2, "gsm_mc": 1}
# WiCkeD's sample is built without SBA detection: it warns once, with the share measured on the project's labels.
OTHER_WARNINGS = {"wicked": 1}


def sample_build(name: str, out: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    builder = load_builder(name)
    return subprocess.run([sys.executable, "-m", BUILDERS[name], "--source", "sample", *builder.sample_options,
                           "--output", str(out)], capture_output=True, text=True, cwd=REPO, timeout=600,
                          env=None if env is None else {**os.environ, **env})


@pytest.fixture(scope="module", params=list(BUILDERS))
def built(request, tmp_path_factory) -> tuple[str, Path, subprocess.CompletedProcess]:
    """The sample built in another process, as the README's command does, for what only its printed lines show."""
    out = tmp_path_factory.mktemp(request.param) / "release"
    return request.param, out, sample_build(request.param, out)


@pytest.fixture(params=every_builder())
def release(request, sample_releases) -> tuple[str, Path]:
    """The same sample release, built in-process once per session and shared with the conformance suite, which
    holds it to the other process's files (``test_a_build_in_another_process_writes_the_same_bytes``)."""
    return request.param, sample_releases.release(request.param)


@pytest.mark.slow
def test_a_sample_build_prints_each_line_once_and_no_warning(built):
    """PythonIO's sample printed 11 shortcut warnings, each twice (the log and the summary), GSM-MC's one, and
    GSM-MC's log said "30 unmatched" of the predictions on a split it does not build; PythonIO's title said
    "from sample, sample"."""
    name, out, build = built
    assert build.returncode == 0, build.stderr[-3000:]
    lines = [LOG_PREFIX.sub("", line) for line in (build.stderr + build.stdout).splitlines() if line.strip()]
    repeated = [line for line, n in Counter(lines).items() if n > 1 and not line.startswith("|")]
    assert repeated == []
    printed = (build.stderr + build.stdout).count("WARNING")
    audit = SAMPLE_WARNINGS.get(name, 0)
    assert printed == audit + OTHER_WARNINGS.get(name, 0) and f"shortcut audit: {audit} warning(s)" in build.stdout
    assert "unmatched" not in build.stderr and "sample, sample" not in build.stdout
    assert "\x1b[" not in build.stderr + build.stdout  # neither stream is a terminal


def test_load_dataset_with_no_config_returns_the_config_the_paper_evaluates(release):
    """`default: true` sat on `original`, the source unchanged, and the card's snippet loaded it: a user who named
    no config evaluated plain MMLU as WiCkeD. The default is the builder's declared config, and the snippet loads
    it with no config name."""
    import datasets
    import pandas as pd

    name, out = release
    builder = load_builder(name)
    expected = builder.default_config  # "{options.default_config}": the options name it
    if "{" in expected:
        expected = expected.format(options=builder.options_from(["--source", "sample", *builder.sample_options]))
    assert expected != getattr(builder, "unchanged_config", None)
    loaded = datasets.load_dataset(str(out))
    split = next(iter(loaded))
    assert loaded[split].info.config_name == expected
    written = pd.concat(pd.read_parquet(path) for path in sorted((out / expected).glob(f"{split}-*.parquet")))
    assert loaded[split]["id"] == written["id"].tolist()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f'ds = load_dataset("path/to/this/folder")  # the `{expected}` config' in card
    assert card.count("default: true") == 1


def test_the_card_opens_with_a_short_summary_and_a_picture(release):
    """The card of a 30-item sample was 637 lines, its shortcut audit first in 40 rows of "too few items to
    judge". It opens with a summary of at most 40 lines (what, how to load and evaluate it, what was altered,
    whether it passed, with the warnings, the columns always empty) and a picture kept in the folder."""
    name, out = release
    card = (out / "README.md").read_text(encoding="utf-8").split("\n---\n", 1)[1]
    summary = card[card.index("## At a glance"):card.index("![")]
    assert len(summary.splitlines()) <= 40
    for part in ("- **What**:", "- **Load**:", "- **Evaluate**:", "- **Altered**:", "- **Validation**: passed"):
        assert part in summary
    assert f"shortcut audit: {SAMPLE_WARNINGS.get(name, 0)} warning(s)" in summary
    assert card.index("![") < card.index("## Loading") < card.index("## Statistics")
    assert "](summary.png)" in card
    assert (out / "summary.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_summary_names_the_columns_no_record_fills(release):
    """`category` is null in every MMLU record, `sba_score` in every build without a classifier: the card says
    so, and why they are there."""
    name, out = release
    card = (out / "README.md").read_text(encoding="utf-8")
    if name == "wicked":
        assert "- **Always empty** (null in every record): `category`, `metadata.sba_score`, `metadata.sba_judge`. " \
               "The schema is the builder's" in card
    if name == "python_io":
        assert "- **Always empty** (null in every record): `subject`." in card


@pytest.mark.slow
def test_the_picture_is_the_same_bytes_on_every_build(built, tmp_path):
    """Drawn again, in an empty cache (a rebuild would read the picture the first build kept)."""
    name, out, build = built
    if name != "wicked":
        pytest.skip("one builder is enough: the picture is drawn by the core")
    again = sample_build(name, tmp_path / "again", env={"MCQFORGE_CACHE": str(tmp_path / "cache")})
    assert list((tmp_path / "cache" / "figures").rglob("*.png"))
    assert again.returncode == 0
    assert (tmp_path / "again" / "summary.png").read_bytes() == (out / "summary.png").read_bytes()


# ---- publishing what was reviewed ------------------------------------------------------------------------


@pytest.mark.slow
def test_a_reviewed_folder_is_published_as_it_is_with_the_checks_of_push(local_hub, tmp_path, capsys):
    """`--push` rebuilt (22 minutes for WiCkeD MMLU): `--no-upload` writes the folder exactly as `--push` would
    publish it and uploads nothing; `builders publish` then publishes those files, byte for byte, with the
    same refusals (a folder written for another version, a tag taken), each one line."""
    from builders import publish, wicked

    repo, out = "mcqforge/reviewed", tmp_path / "reviewed"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(out), "--push", repo,
                        "--version", "1.0.0", "--no-upload", "--log-level", "WARNING"]) == 0
    assert f"publish {out} --push {repo} --version 1.0.0` publishes it" in capsys.readouterr().out
    assert not local_hub.has_repo(repo)  # nothing uploaded
    reviewed = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    assert publish.main([str(out), "--push", repo, "--version", "1.0.1"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {out} was written for {repo} v1.0.0, not {repo} v1.0.1: its card and tasks say where they are read "
        f"from; build it with --output {out} --push {repo} --version 1.0.1 --no-upload"]
    assert publish.main([str(out), "--push", repo, "--version", "1.0.0"]) == 0
    assert "tag v1.0.0 (the files of" in capsys.readouterr().out
    assert local_hub.tags(repo) == ["v1.0.0"]
    assert {path: local_hub.file_at(repo, "v1.0.0", path) for path in local_hub.paths_at(repo, "v1.0.0")
            if path != ".gitattributes"} == reviewed
    assert publish.main([str(out), "--push", repo, "--version", "1.0.0"]) == 2
    assert "already has tag v1.0.0" in capsys.readouterr().err


def test_a_folder_written_with_output_only_is_not_published(tmp_path, capsys):
    from builders import publish, wicked

    out = tmp_path / "local"
    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(out),
                        "--log-level", "WARNING"]) == 0
    assert publish.main([str(out), "--push", "a/b", "--version", "1.0.0"]) == 2
    assert "was written for no repo and version (--output only)" in capsys.readouterr().err
    assert publish.main([str(tmp_path), "--push", "a/b", "--version", "1.0.0"]) == 2
    assert "is not a release folder of mcqforge" in capsys.readouterr().err


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_the_classifiers_files_are_written_with_the_users_umask(tmp_path, umask):
    """`classifiers.sba sample` wrote train.jsonl and eval.jsonl with mode 0600 (a temporary file's), beside a
    sample.json of 0644: on a shared cluster colleagues could not read them."""
    import os

    from classifiers.data import write_jsonl

    before = os.umask(umask)
    try:
        write_jsonl(tmp_path / "train.jsonl", [{"id": "a"}])
    finally:
        os.umask(before)
    assert (tmp_path / "train.jsonl").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_long_stage_logs_a_line_at_a_steady_interval_without_a_terminal(monkeypatch, caplog):
    """Bars show only on a terminal: the WiCkeD MMLU build ran 22 minutes with two log lines. Without one, a
    stage longer than the interval logs what it has done at that interval; a short one logs nothing."""
    import time

    from builders.core.runtime import progress

    monkeypatch.setattr(progress, "_enabled", False)
    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 0.2)
    with caplog.at_level("INFO", logger=progress.__name__):
        for _ in progress.bar(range(3), desc="quick", unit="item"):
            pass
        for _ in progress.bar(range(6), desc="embed", unit="batch"):
            time.sleep(0.15)
    lines = [record.getMessage() for record in caplog.records]
    assert lines and all(line.startswith("embed: ") and "/6 batch (" in line for line in lines)
    assert 2 <= len(lines) <= 5 and not any("\r" in line or "\x1b" in line for line in lines)


def test_no_upload_without_push_and_output_is_one_line(tmp_path, capsys):
    from builders import wicked

    assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--output", str(tmp_path / "o"),
                        "--no-upload"]) == 2
    assert capsys.readouterr().err == ("error: --no-upload writes --output as --push would publish it: pass "
                                       "--output DIR and --push REPO_ID\n")
    assert not (tmp_path / "o").exists()
