"""Versioned publishing with the real huggingface_hub and datasets clients, against the local Hub."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import datasets
import pytest
import yaml
from fixtures import MMLU_TEST, reveals, spellings, with_default_ctrl_c, write_benchmark
from huggingface_hub import DatasetCard, HfApi
from huggingface_hub.errors import HfHubHTTPError

from builders import wicked
from builders.core.pipeline import cli
from builders.core.errors import ReleaseError
from builders.core.release.card import ReleaseInfo, read_changelog
from builders.core.release.publish import Published, prepare_release, publish_folder
from builders.core.sources.benchmarks import BENCHMARKS
from builders.core.sources.spec import SAMPLES_DIR
from builders.core.sources.loading import load_source
from builders.gsm_mc import BUILDER as GSM_MC
from builders.python_io.builder import BUILDER as PYTHON_IO

REPO = Path(__file__).resolve().parents[1]
BUILDERS = {"gsm_mc": GSM_MC, "python_io": PYTHON_IO}


def push(folder, repo, version, *extra):
    return wicked.main(["--source", str(folder), "--sba-classifier", "none", "--push", repo, "--version", version, *extra])


@pytest.mark.slow
def test_publish_tag_and_load_back(local_hub, tmp_path, capsys):
    folder = write_benchmark("mmlu", tmp_path)
    assert push(folder, "mcqforge/wicked-mmlu", "1.0.0", "--output", str(tmp_path / "out")) == 0
    printed = capsys.readouterr().out
    assert f"published {local_hub.url}/datasets/mcqforge/wicked-mmlu tag v1.0.0" in printed
    assert local_hub.token not in printed

    assert local_hub.tags("mcqforge/wicked-mmlu") == ["v1.0.0"]
    remote = datasets.load_dataset("mcqforge/wicked-mmlu", "variant_0", revision="v1.0.0")
    local = datasets.load_dataset(str(tmp_path / "out"), "variant_0")
    assert remote["test"].to_list() == local["test"].to_list() and remote["dev"].num_rows == 3
    card = DatasetCard(local_hub.file_at("mcqforge/wicked-mmlu", "v1.0.0", "README.md").decode())
    assert 'ds = load_dataset("mcqforge/wicked-mmlu", revision="v1.0.0")  # the `variant_0` config' in card.text
    # with no config named, the Hub's release opens on the config the paper evaluates, not the source unchanged
    default = datasets.load_dataset("mcqforge/wicked-mmlu", revision="v1.0.0")
    assert default["test"].info.config_name == "variant_0" and default["test"].to_list() == local["test"].to_list()
    assert [e.version for e in read_changelog(str(card))] == ["1.0.0"]
    assert card.data.license == "mit" and card.data.source_datasets == ["cais/mmlu"]
    paths = local_hub.paths_at("mcqforge/wicked-mmlu", "v1.0.0")
    assert sorted(path for path in paths if not path.startswith(("lm_eval/", "inspect/"))) == sorted(
        [".gitattributes", "README.md", "build_config.yaml", "exclusions.jsonl", "review.html", "review.jsonl",
         "summary.png", "validation_report.json"]
        + [f"{config}/{split}-00000-of-00001.parquet" for config in ["original"] + [f"variant_{k}" for k in range(5)]
           for split in ("test", "dev")]
    )
    # the published task folder is pinned to the repo and the tag
    assert {"lm_eval/manifest.json", "lm_eval/utils.py"} <= set(paths)
    assert sorted(path for path in paths if path.startswith("inspect/")) == [
        "inspect/README.md", "inspect/mcqforge_inspect.py", "inspect/tasks.py"]
    manifest = json.loads(local_hub.file_at("mcqforge/wicked-mmlu", "v1.0.0", "lm_eval/manifest.json"))
    assert (manifest["repo"], manifest["revision"]) == ("mcqforge/wicked-mmlu", "v1.0.0")


def test_the_cards_dataset_info_is_read_by_datasets(tmp_path, caplog):
    """Rows and bytes per split in the card's YAML, in the form ``datasets`` accepts (it ignored the splits
    without ``num_bytes``, with a warning on every load)."""
    folder = write_benchmark("mmlu", tmp_path)
    assert wicked.main(["--source", str(folder), "--sba-classifier", "none", "--output", str(tmp_path / "out")]) == 0
    card = DatasetCard.load(tmp_path / "out" / "README.md")
    info = {entry["config_name"]: {split["name"]: split for split in entry["splits"]} for entry in card.data.dataset_info}
    assert {name: split["num_examples"] for name, split in info["variant_0"].items()} == {"test": 8, "dev": 3}
    assert all(split["num_bytes"] > 0 for splits in info.values() for split in splits.values())
    with caplog.at_level("WARNING"):
        loaded = datasets.load_dataset(str(tmp_path / "out"), "variant_0")
    assert loaded["test"].num_rows == 8 and "dataset_info" not in caplog.text


@pytest.mark.slow
def test_second_version_keeps_the_first_and_carries_the_changelog(local_hub, tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-versions"
    assert push(folder, repo, "1.0.0") == 0
    assert push(folder, repo, "1.1.0", "--seed", "5", "--variants", "2") == 0
    assert local_hub.tags(repo) == ["v1.0.0", "v1.1.0"]
    old = datasets.load_dataset(repo, "variant_0", revision="v1.0.0")["test"]
    new = datasets.load_dataset(repo, "variant_0", revision="v1.1.0")["test"]
    assert old["choices"] != new["choices"]
    with pytest.raises(ValueError):
        datasets.load_dataset(repo, "variant_4", revision="v1.1.0")  # the new release has 2 variants only
    assert datasets.load_dataset(repo, "variant_4", revision="v1.0.0")["test"].num_rows == 8
    card = local_hub.file_at(repo, "v1.1.0", "README.md").decode()
    assert [e.version for e in read_changelog(card)] == ["1.1.0", "1.0.0"]


@pytest.mark.slow
def test_an_existing_tag_is_refused_before_any_upload(local_hub, tmp_path, capsys):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-refuse"
    assert push(folder, repo, "1.0.0") == 0
    commits = local_hub.commits(repo)
    assert push(folder, repo, "1.0.0", "--seed", "9") == 2
    assert "already has tag v1.0.0" in capsys.readouterr().err
    assert local_hub.commits(repo) == commits


@pytest.mark.slow
def test_a_failed_upload_leaves_no_tag_and_a_rerun_completes(local_hub, tmp_path, capsys):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-retry"
    local_hub.fail_next("commit", status=500)
    assert push(folder, repo, "2.0.0") == 2
    assert "no tag was created" in capsys.readouterr().err
    assert not local_hub.has_repo(repo)  # the repo the run created, empty, was deleted again
    assert push(folder, repo, "2.0.0") == 0
    assert local_hub.tags(repo) == ["v2.0.0"]


@pytest.mark.slow
def test_a_failed_tag_leaves_no_tag_and_a_rerun_completes(local_hub, tmp_path):
    folder = write_benchmark("mmlu", tmp_path)
    repo = "mcqforge/wicked-tag-retry"
    local_hub.fail_next("tag", status=500)
    assert push(folder, repo, "1.0.0") == 2
    assert local_hub.tags(repo) == []
    assert push(folder, repo, "1.0.0") == 0
    assert local_hub.tags(repo) == ["v1.0.0"]


def test_a_hub_error_that_echoes_the_token_shows_it_in_no_spelling(local_hub, tmp_path, capsys, caplog):
    """The Hub token, like an API key, is hidden in every spelling a server may quote it in."""
    local_hub.fail_next("commit", 400, message="token refused: " + " ".join(spellings(local_hub.token)))
    assert push(write_benchmark("mmlu", tmp_path), "mcqforge/echoed-token", "1.0.0") == 2
    captured = capsys.readouterr()
    [line] = [line for line in captured.err.splitlines() if line.startswith("error: ")]
    assert line.startswith("error: publishing mcqforge/echoed-token v1.0.0 failed (") and "token refused: ***" in line
    assert not reveals(captured.err + captured.out + caplog.text, local_hub.token)


@pytest.mark.slow
def test_private_repo_needs_the_token(local_hub, tmp_path, monkeypatch):
    folder = write_benchmark("mmlu", tmp_path)
    assert push(folder, "mcqforge/wicked-private", "1.0.0", "--private") == 0
    assert HfApi().repo_info("mcqforge/wicked-private", repo_type="dataset").private
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(HfHubHTTPError):
        HfApi(token=False).repo_info("mcqforge/wicked-private", repo_type="dataset")
    assert push(folder, "mcqforge/wicked-private", "1.0.1") == 2  # no token: refused with a clear line


def test_invalid_version_is_refused(local_hub, tmp_path, capsys):
    assert push(write_benchmark("mmlu", tmp_path), "mcqforge/wicked-bad", "1.0") == 2
    assert "X.Y.Z" in capsys.readouterr().err


def test_a_hub_source_records_its_resolved_revision(local_hub, tmp_path):
    """Sources load from the Hub with `datasets`; the card records the commit sha the revision resolved to."""
    folder = write_benchmark("mmlu", tmp_path)
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: all\n  data_files:\n  - split: test\n    path: test.jsonl\n"
        "  - split: dev\n    path: dev.jsonl\n---\n"
    )
    api = HfApi()
    api.create_repo("someone/mmlu-copy", repo_type="dataset")
    commit = api.upload_folder(repo_id="someone/mmlu-copy", repo_type="dataset", folder_path=str(folder))
    api.create_tag("someone/mmlu-copy", tag="v1", repo_type="dataset", revision=commit.oid)
    loaded = load_source(BENCHMARKS["mmlu"], "someone/mmlu-copy:all@v1")
    assert loaded.revision == commit.oid and loaded.dataset == "someone/mmlu-copy"
    assert [r.id for r in loaded.items["test"]][:2] == ["mmlu/test/0", "mmlu/test/1"]
    local = load_source(BENCHMARKS["mmlu"], str(folder))
    content = lambda source: [(r.id, r.question, r.choices, r.answer) for r in source.items["test"]]  # noqa: E731
    assert content(loaded) == content(local) and loaded.items["test"][0].source == "someone/mmlu-copy"


@pytest.mark.slow  # builds and pushes in other processes
def test_a_push_logs_no_request_lines_and_a_refused_push_is_one_line(local_hub):
    """The HTTP client logged every request at INFO with its full URL (32 lines for this sample push, the
    signed LFS upload URLs among them, and 2 before the `error:` line of a refusal); they show at DEBUG only."""
    repo = "mcqforge/gsm-mc-quiet"
    command = [sys.executable, "-m", "builders", "gsm_mc", "--source", "sample", "--push", repo, "--version", "1.0.0"]
    first = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "HTTP Request" not in first.stderr and "/_lfs/" not in first.stderr + first.stdout
    assert local_hub.token not in first.stderr + first.stdout
    assert local_hub.tags(repo) == ["v1.0.0"]
    again = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr.splitlines() == [f"error: {repo} already has tag v1.0.0; a released version is never "
                                         "rewritten: choose a new --version"]
    debug = subprocess.run(command + ["--log-level", "DEBUG"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert debug.returncode == 2
    assert [line.split("HTTP Request: ")[1].split(" ")[:2] for line in debug.stderr.splitlines()
            if "HTTP Request" in line] == [["GET", f"{local_hub.url}/api/whoami-v2"],
                                           ["GET", f"{local_hub.url}/api/datasets/{repo}/refs"]]


@pytest.mark.slow
@pytest.mark.parametrize("builder, parquet_files", [("gsm_mc", 11), ("python_io", 22)])
def test_a_sample_build_rebuilds_from_its_build_config_with_the_samples_predictions(tmp_path, builder, parquet_files):
    """`--source sample` reads the predictions shipped with the sample; build_config.yaml records them by base
    name and hash like any local file, and `--config` refused the rebuild ("pass them again: --predictions")
    although the package still holds them."""
    first, again = tmp_path / "first", tmp_path / "again"
    assert cli.main(BUILDERS[builder], ["--source", "sample", "--output", str(first), "--log-level", "WARNING"]) == 0
    config = first / "build_config.yaml"
    [recorded] = yaml.safe_load(config.read_text())["params"]["predictions"]
    assert recorded["local"] == "predictions.jsonl" and recorded["content"].startswith("sha256:")
    assert cli.main(BUILDERS[builder], ["--config", str(config), "--output", str(again), "--log-level", "WARNING"]) == 0
    files = sorted(path.relative_to(first) for path in first.rglob("*.parquet"))
    assert len(files) == parquet_files
    assert all((first / f).read_bytes() == (again / f).read_bytes() for f in files)
    assert (again / "build_config.yaml").read_bytes() == config.read_bytes()
    # a recorded file the sample does not hold (other content) must still be passed again
    changed = tmp_path / "changed.yaml"
    changed.write_text(config.read_text().replace(recorded["content"], "sha256:" + "0" * 64))
    assert cli.main(BUILDERS[builder], ["--config", str(changed), "--output", str(tmp_path / "x")]) == 2


def test_the_card_records_no_commit_of_a_repository_that_merely_holds_the_installed_package(tmp_path):
    """`git rev-parse HEAD` from the package folder answered for ANY enclosing repository: mcqforge installed in
    a virtual environment inside a user's project recorded that project's commit as "mcqforge git commit"."""
    from builders.core.release.card import git_commit

    def git(*args, cwd=tmp_path / "project"):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                              capture_output=True, text=True).stdout.strip()

    (tmp_path / "project").mkdir()
    git("init", "-q")
    (tmp_path / "project" / "app.py").write_text("print(1)\n")
    (tmp_path / "project" / ".gitignore").write_text(".venv/\n")
    git("add", "app.py", ".gitignore")
    git("commit", "-q", "-m", "project")
    installed = tmp_path / "project" / ".venv" / "lib" / "site-packages" / "builders"
    (installed / "core").mkdir(parents=True)
    (installed / "__init__.py").write_text("")
    assert len(git("rev-parse", "HEAD", cwd=installed)) == 40  # git does answer there: the project's commit
    assert git_commit(installed) == "unknown"
    # the checkout itself still records its commit
    head = git("rev-parse", "HEAD", cwd=REPO)
    assert git_commit() in (head, f"{head}-dirty")


@pytest.mark.slow
def test_the_cards_commands_fetch_task_files_that_lm_eval_can_load(local_hub, tmp_path):
    """The card said `lm_eval --include_path lm_eval` without saying how to get the folder; fetched into the Hub
    cache (the default of `hf download` / `snapshot_download`), lm-eval resolves each YAML file's link into
    blobs/ and fails: "Cannot import module 'utils' for function 'load_release'"."""
    import shlex

    from lm_eval.tasks import TaskManager

    repo = "mcqforge/wicked-card-commands"
    assert push(write_benchmark("mmlu", tmp_path), repo, "1.0.0") == 0
    card = local_hub.file_at(repo, "v1.0.0", "README.md").decode()
    block = card.split("## Evaluating with lm-evaluation-harness")[1].split("```bash\n")[1].split("```")[0]
    download, run = block.strip().splitlines()
    assert download == (f'hf download {repo} --repo-type dataset --revision v1.0.0 --include "lm_eval/*" '
                        "--local-dir wicked-card-commands")
    work = tmp_path / "user"
    work.mkdir()
    subprocess.run(shlex.split(download), cwd=work, check=True, capture_output=True, timeout=120)
    include = shlex.split(run)[shlex.split(run).index("--include_path") + 1]
    assert not any(path.is_symlink() for path in (work / include).iterdir())
    manager = TaskManager(include_path=str(work / include), include_defaults=False)
    leaves = {**manager.load(["wicked_mmlu_original"])["tasks"], **manager.load(["wicked_mmlu_variants"])["tasks"]}
    configs = ["original"] + [f"variant_{k}" for k in range(5)]
    subjects = sorted({row["subject"] for row in MMLU_TEST})  # each config: a group of one task per subject
    assert sorted(leaves) == sorted(f"wicked_mmlu_{c}_{s}" for c in configs for s in subjects)
    assert [sum(len(list(leaves[f"wicked_mmlu_{c}_{s}"].test_docs())) for s in subjects) for c in configs] == [8] * 6


@pytest.mark.slow
def test_predictions_given_with_a_config_replace_the_recorded_ones(tmp_path):
    """`--predictions` accumulates (action "extend"): given with `--config`, it was added to the config's list, and
    the rebuild read both files (180 predictions, 60 of them "a second prediction" of the same model)."""
    first = tmp_path / "first"
    assert cli.main(GSM_MC, ["--source", "sample", "--output", str(first), "--log-level", "WARNING"]) == 0
    mine = tmp_path / "mine.jsonl"
    mine.write_bytes((SAMPLES_DIR / "gsm8k" / "predictions.jsonl").read_bytes())
    again = tmp_path / "again"
    assert cli.main(GSM_MC, ["--config", str(first / "build_config.yaml"), "--predictions", str(mine),
                             "--output", str(again), "--log-level", "WARNING"]) == 0
    [recorded] = yaml.safe_load((again / "build_config.yaml").read_text())["params"]["predictions"]
    assert recorded["local"] == "mine.jsonl"
    assert (again / "set_0" / "test-00000-of-00001.parquet").read_bytes() == \
        (first / "set_0" / "test-00000-of-00001.parquet").read_bytes()  # the same predictions, the same sets


def _push_command(repo: str, version: str = "1.0.0") -> list[str]:
    return [sys.executable, "-m", "builders", "wicked", "--source", "sample", "--sba-classifier", "none",
            "--push", repo, "--version", version, "--log-level", "WARNING"]


def test_hf_hub_offline_refuses_a_push_in_one_line_before_any_work(local_hub):
    """HF_HUB_OFFLINE=1, which offline clusters export, turned --push into a 45-line OfflineModeIsEnabled
    traceback with status 1."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(_push_command("mcqforge/offline"), capture_output=True, text=True, cwd=REPO, env=env,
                            timeout=300)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "error: HF_HUB_OFFLINE is set: --push needs the Hub; unset HF_HUB_OFFLINE (or point HF_ENDPOINT at a Hub "
        "you can reach), or build with --output only"]
    assert not any(r.kind == "create_repo" and "offline" in r.path for r in local_hub.requests)


@pytest.mark.slow
def test_an_upload_error_that_is_not_an_http_error_is_one_line_and_says_how_to_complete(local_hub):
    """The real Hub uploads through Xet by default, and the Xet client raises its own errors (a ConnectionError
    for "xet-write-token 404"): that was a traceback with status 1 that left an empty repo behind. The
    local Hub has no Xet storage, so a client not told HF_HUB_DISABLE_XET=1 fails exactly so."""
    repo = "mcqforge/xet-failure"
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_XET"}
    failed = subprocess.run(_push_command(repo), capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert (failed.returncode, failed.stdout) == (2, "")
    assert "Traceback" not in failed.stderr
    [line] = [line for line in failed.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: publishing {repo} v1.0.0 failed (")
    assert line.endswith("(a Hub without Xet storage needs HF_HUB_DISABLE_XET=1); nothing was committed: the repo "
                         "this run created was deleted again; no tag was created: run the same command again to "
                         "complete the release")
    assert not local_hub.has_repo(repo)  # the Hub is as it was: no empty repo left behind
    # the same command, with the client told to upload through LFS, completes the release
    completed = subprocess.run(_push_command(repo), capture_output=True, text=True, cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert local_hub.tags(repo) == ["v1.0.0"] and "README.md" in local_hub.paths_at(repo, "v1.0.0")


@pytest.mark.slow
def test_an_upload_that_fails_into_an_existing_repo_leaves_it_as_it_was(local_hub, tmp_path):
    repo = "mcqforge/xet-failure-existing"
    assert push(write_benchmark("mmlu", tmp_path), repo, "1.0.0") == 0
    before = local_hub.commits(repo)
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_XET"}
    failed = subprocess.run(_push_command(repo, "1.1.0"), capture_output=True, text=True, cwd=REPO, env=env,
                            timeout=300)
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert len([line for line in failed.stderr.splitlines() if line.startswith("error:")]) == 1
    assert "nothing was committed: the repo holds what it held before" in failed.stderr
    assert local_hub.commits(repo) == before and local_hub.tags(repo) == ["v1.0.0"]


# ---- one release per tag, whatever runs at once ----------------------------------------------------------------


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory) -> list[Path]:
    """Two release folders with different files (seeds 0 and 1), to be published as the same version."""
    root = tmp_path_factory.mktemp("builds")
    folders = [root / f"seed-{seed}" for seed in (0, 1)]
    for seed, folder in enumerate(folders):
        assert wicked.main(["--source", "sample", "--sba-classifier", "none", "--seed", str(seed), "--output",
                            str(folder), "--log-level", "WARNING"]) == 0
    return folders


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def files_at(hub, repo: str, revision: str) -> dict[str, bytes]:
    return {path: hub.file_at(repo, revision, path) for path in hub.paths_at(repo, revision) if path != ".gitattributes"}


def publish_at_once(folders: list[Path], repo: str) -> list[Published | ReleaseError]:
    """Each folder published as v1.0.0 of ``repo`` by its own thread, all passing the tag check first and all
    starting at the same moment."""
    releases = [prepare_release(repo, "1.0.0") for _ in folders]
    start = threading.Barrier(len(folders))
    outcomes: list[Published | ReleaseError] = []

    def publish(folder: Path, release: ReleaseInfo) -> None:
        start.wait()
        try:
            outcomes.append(publish_folder(folder, release))
        except ReleaseError as refused:
            outcomes.append(refused)

    threads = [threading.Thread(target=publish, args=pair) for pair in zip(folders, releases, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(outcomes) == len(folders)
    return outcomes


def assert_one_release(hub, repo: str, outcomes, folders: list[Path]) -> Published:
    """Exactly one build published; the tag is on its commit, which holds its files, and so does main; the other
    was told, in one line, who published the version; a re-run is told the version exists."""
    [published] = [o for o in outcomes if isinstance(o, Published)]
    [refused] = [str(o) for o in outcomes if isinstance(o, ReleaseError)]
    assert refused.startswith(f"another build published {repo} v1.0.0 at commit {published.commit[:12]} while this "
                              "one was ")
    assert refused.endswith("; a released version is never rewritten: choose a new --version")
    assert "\n" not in refused
    assert hub.tags(repo) == ["v1.0.0"] and hub.commits(repo, "v1.0.0")[0] == published.commit
    assert published.commit in hub.commits(repo, "main")  # main holds that commit, or one after it
    assert files_at(hub, repo, "v1.0.0") == files_at(hub, repo, "main") in [files_of(f) for f in folders]
    with pytest.raises(ReleaseError, match=f"{repo} already has tag v1.0.0"):
        prepare_release(repo, "1.0.0")
    return published


@pytest.mark.slow
@pytest.mark.parametrize("meet", [None, "preupload", "commit"])
def test_two_builds_publishing_one_version_at_once_give_one_release_and_one_refusal(local_hub, two_builds, meet):
    """Two builds of one version at once: the tag ended on one build's commit and main on the other's, and the
    losing run was told to run again, which then said the tag exists. Both threads start together (and, with
    `meet`, the Hub holds their first request of that kind until both have sent it, so that both read the same
    main before either commits); repeated, so that every interleaving has its chance."""
    for attempt in range(6 if meet is None else 3):
        repo = f"mcqforge/race-{meet}-{attempt}"
        if meet is not None:
            local_hub.meet(meet, 2)
        assert_one_release(local_hub, repo, publish_at_once(two_builds, repo), two_builds)


@pytest.mark.slow
def test_two_builds_of_the_same_files_at_once_still_publish_once(local_hub, two_builds):
    """Identical builds: the second may find its files on main already (the client then commits nothing and
    answers with main's commit); exactly one tags it."""
    for attempt in range(3):
        repo = f"mcqforge/race-same-{attempt}"
        local_hub.meet("preupload", 2)
        published = assert_one_release(local_hub, repo, publish_at_once([two_builds[0]] * 2, repo), two_builds)
        assert files_at(local_hub, repo, published.commit) == files_of(two_builds[0])


def _publish_in_thread(folder: Path, release: ReleaseInfo, outcomes: dict) -> threading.Thread:
    def publish() -> None:
        try:
            outcomes[folder] = publish_folder(folder, release)
        except ReleaseError as refused:
            outcomes[folder] = refused

    thread = threading.Thread(target=publish)
    thread.start()
    return thread


@pytest.mark.slow
@pytest.mark.parametrize("tagged_first", ["the first to commit", "the second to commit"])
def test_a_build_that_committed_onto_an_untagged_release_and_lost_the_tag_puts_the_release_back(
        local_hub, two_builds, tagged_first):
    """The second build reads main while the first is tagging its commit: it commits onto it. Whichever tag then
    lands, main ends holding the files of the tagged commit: the loser puts them back by a commit onto its own,
    or, when main has moved past its commit, leaves main alone."""
    repo = f"mcqforge/late-tag-{tagged_first.split()[1]}"
    first, second = two_builds
    releases = [prepare_release(repo, "1.0.0") for _ in two_builds]
    holds = [local_hub.hold("tag"), local_hub.hold("tag")]  # each build's tag request, in the order they come
    outcomes: dict[Path, Published | ReleaseError] = {}
    threads = [_publish_in_thread(first, releases[0], outcomes)]
    holds[0].wait()  # the first has committed and is tagging
    threads.append(_publish_in_thread(second, releases[1], outcomes))
    holds[1].wait()  # the second has committed onto the first's commit
    order = [0, 1] if tagged_first == "the first to commit" else [1, 0]
    for index in order:
        holds[index].release()
        threads[index].join(60)
    winner, loser = (first, second) if order[0] == 0 else (second, first)
    published = assert_one_release(local_hub, repo, list(outcomes.values()), two_builds)
    assert files_at(local_hub, repo, "main") == files_of(winner)
    main = local_hub.commits(repo, "main")
    refused = str(outcomes[loser])
    if winner is first:  # main was the loser's commit: one more commit puts the winner's files back
        assert main[2] == published.commit and f"this build's commit {main[1][:12]} on main was undone by commit " \
            f"{main[0][:12]}" in refused
    else:  # main is the winner's commit already, on top of the loser's
        assert main[0] == published.commit and f"main has moved on since this build's commit {main[1][:12]}" in refused


# ---- a card edited by hand on the Hub -------------------------------------------------------------------------


CARD_EDITS = {
    "front matter changed": lambda card: card.replace("license: apache-2.0", "license: cc-by-4.0").replace(
        "summary: Built with", "summary: Edited by hand. Built with"),
    "mcqforge block not a mapping": lambda card: card.replace("mcqforge:\n", "mcqforge: hand-written\nold:\n"),
    "changelog entries broken": lambda card: card.replace(
        "  changelog:\n", "  changelog:\n  - just a line\n  - version: 0.9.0\n  - {summary: no version}\n"),
    "sections removed": lambda card: card.split("\n---\n", 1)[1].split("\n## ")[0],
    "invalid YAML": lambda card: card.replace("mcqforge:\n", "mcqforge: [unclosed\n", 1),
    "not a mapping": lambda card: "---\n- just\n- a list\n---\n# Hand-written\n",
    "not ours": lambda card: "---\nlicense: mit\npretty_name: Someone's dataset\n---\n# Someone's dataset\n",
    "no card": lambda card: None,
}


@pytest.mark.slow
@pytest.mark.parametrize("edit", list(CARD_EDITS))
def test_a_card_edited_by_hand_on_the_hub_never_blocks_the_next_release(local_hub, capsys, caplog, edit):
    """Each form of hand edit gave a traceback (yaml's ParserError, AttributeError, TypeError, KeyError...) at
    every later --push. The next version is published beside it; its changelog continues the one on main, or,
    where that cannot be read, the one of the newest release."""
    repo = f"mcqforge/edited-{edit.replace(' ', '-')}"
    command = ["--source", "sample", "--sba-classifier", "none", "--variants", "1", "--push", repo,
               "--log-level", "WARNING"]
    assert wicked.main([*command, "--version", "1.0.0"]) == 0
    card = local_hub.file_at(repo, "main", "README.md").decode()
    edited = CARD_EDITS[edit](card)
    assert edited != card
    local_hub.commit_files(repo, {"README.md": edited.encode() if edited is not None else None})
    capsys.readouterr()
    assert wicked.main([*command, "--version", "1.1.0"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "error:" not in err
    assert local_hub.tags(repo) == ["v1.0.0", "v1.1.0"]
    assert local_hub.file_at(repo, "v1.0.0", "README.md").decode() == card  # the earlier release as it was
    changelog = read_changelog(local_hub.file_at(repo, "v1.1.0", "README.md").decode())
    assert [e.version for e in changelog] == ["1.1.0", "1.0.0"]
    edited_by_hand = edit == "front matter changed"
    assert changelog[1].summary.startswith("Edited by hand. Built with" if edited_by_hand else "Built with")
    from_the_tag = edit not in ("front matter changed", "changelog entries broken")
    assert ("the new card's continues from v1.0.0's" in caplog.text) == from_the_tag


# ---- Ctrl-C during a push ---------------------------------------------------------------------------------------


def _push_child(repo: str) -> subprocess.Popen:
    """A real push in a child process that Ctrl-C reaches as it reaches a terminal's command."""
    return subprocess.Popen(_push_command(repo), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=with_default_ctrl_c)


@pytest.mark.slow
def test_ctrl_c_early_in_an_upload_leaves_no_new_empty_repo(local_hub):
    """Ctrl-C during the upload left the repo the run had created, empty, until a re-run."""
    repo = "mcqforge/ctrl-c-early"
    held = local_hub.hold("preupload")
    child = _push_child(repo)
    held.wait(240)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    held.release()
    assert (child.returncode, out) == (130, "")
    assert err.splitlines()[-1] == ("interrupted: nothing was committed: the repo this run created was deleted "
                                    "again; run the same command again to complete the release")
    assert "Traceback" not in err and not local_hub.has_repo(repo)


def _message_line(stream) -> str:
    """The next line of ``stream`` that is the command's own message, not a log line (the build's warnings)."""
    line = stream.readline()
    while re.match(r"\d{4}-\d\d-\d\d [\d:,]+ [A-Z]+ ", line):
        line = stream.readline()
    return line


@pytest.mark.slow
def test_ctrl_c_twice_prints_no_traceback_and_the_clean_up_still_finishes(local_hub):
    """A second Ctrl-C while the first one's clean-up runs is put off (the repo is still deleted); one while the
    process ends exits at once, with status 130 (it was a death by SIGINT or a traceback)."""
    repo = "mcqforge/ctrl-c-twice"
    held, deleting = local_hub.hold("preupload"), local_hub.hold("delete_repo")
    child = _push_child(repo)
    held.wait(240)
    child.send_signal(signal.SIGINT)
    deleting.wait(60)
    child.send_signal(signal.SIGINT)  # during the clean-up
    time.sleep(0.3)
    deleting.release()
    assert _message_line(child.stderr).startswith("interrupted: finishing the clean-up of the upload; press Ctrl-C "
                                              "again to stop at once")
    assert _message_line(child.stderr).startswith("interrupted: nothing was committed: the repo this run created was "
                                              "deleted again")
    child.send_signal(signal.SIGINT)  # while the process ends
    out, err = child.communicate(timeout=120)
    held.release()
    assert (child.returncode, out, err) == (130, "", "")
    assert not local_hub.has_repo(repo)


@pytest.mark.slow
def test_ctrl_c_once_the_tag_is_created_ends_with_status_0(local_hub):
    """Ctrl-C just after the tag was created gave status 130 for a release that is complete."""
    repo = "mcqforge/ctrl-c-tagged"
    tagged = local_hub.hold("tag", after=True)  # the tag is there; its answer has not reached the client yet
    child = _push_child(repo)
    tagged.wait(240)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    tagged.release()
    assert (child.returncode, out) == (0, "")
    assert err.splitlines()[-1] == (f"interrupted: the release was complete: published {local_hub.url}/datasets/"
                                    f"{repo} tag v1.0.0")
    assert "Traceback" not in err and local_hub.tags(repo) == ["v1.0.0"]


@pytest.mark.slow
def test_ctrl_c_just_after_a_publish_ends_with_status_0(local_hub):
    """The signal lands as the tag's answer arrives or after (the summary, the clean-up of the temporary folder):
    wherever it lands, the release is complete."""
    repo = "mcqforge/ctrl-c-after"
    tagged = local_hub.hold("tag", after=True)
    child = _push_child(repo)
    tagged.wait(240)
    tagged.release()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0 and "Traceback" not in err
    assert local_hub.tags(repo) == ["v1.0.0"]


@pytest.mark.slow
def test_ctrl_c_before_the_tag_says_the_release_is_on_main_without_its_tag(local_hub):
    repo = "mcqforge/ctrl-c-committed"
    local_hub.fail_next("tag", 503)  # the held tag request, once let go, fails: the client is gone by then
    tagging = local_hub.hold("tag")
    child = _push_child(repo)
    tagging.wait(240)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    tagging.release()
    assert child.returncode == 130 and "Traceback" not in err
    [commit] = local_hub.commits(repo)[:1]
    assert err.splitlines()[-1] == (f"interrupted: the release is on main as commit {commit[:12]} without its tag; "
                                    "run the same command again to complete the release")
    completed = subprocess.run(_push_command(repo), capture_output=True, text=True, cwd=REPO, timeout=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert local_hub.commits(repo, "v1.0.0")[0] == commit  # the same files: the re-run tags that commit


@pytest.mark.slow
def test_ctrl_c_while_the_commit_is_sent_says_what_main_holds(local_hub):
    """The commit reached the Hub, its answer did not reach the build: it cannot know the commit is its own."""
    repo = "mcqforge/ctrl-c-committing"
    committed = local_hub.hold("commit", after=True)
    child = _push_child(repo)
    committed.wait(240)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    committed.release()
    assert child.returncode == 130 and "Traceback" not in err
    [commit] = local_hub.commits(repo)[:1]
    assert err.splitlines()[-1] == (f"interrupted: main moved to commit {commit[:12]} as this build was committing "
                                    "(it may be its commit, without its tag); run the same command again to complete "
                                    "the release")
    assert local_hub.tags(repo) == []
