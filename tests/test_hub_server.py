"""End-to-end checks of LocalHub with the real huggingface_hub and datasets clients over HTTP.

Every test also asserts that no socket lookup or connection left 127.0.0.1 while it ran.
"""

import hashlib
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import pytest
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile, RepoFolder
from huggingface_hub.utils.sha import git_hash

from hub_server import LocalHub

# ---------------------------------------------------------------------------------------------
# Outbound traffic guard: an audit hook sees every name lookup and connect of the process.
# ---------------------------------------------------------------------------------------------

LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}
OUTBOUND: list[tuple[str, str]] = []


def _record_outbound(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.getaddrinfo":
        host = args[0]
    elif event == "socket.connect" and isinstance(args[1], tuple):
        host = args[1][0]
    else:
        return
    host = host.decode() if isinstance(host, bytes) else str(host)
    if host not in LOOPBACK_HOSTS:
        OUTBOUND.append((event, host))


sys.addaudithook(_record_outbound)  # hooks cannot be removed; it only appends to a list


@pytest.fixture(autouse=True)
def no_outbound_traffic() -> Iterator[None]:
    already_seen = len(OUTBOUND)
    yield
    assert OUTBOUND[already_seen:] == []


def test_outbound_guard_records_non_loopback_lookups() -> None:
    already_seen = len(OUTBOUND)
    socket.getaddrinfo("192.0.2.1", 80)  # numeric TEST-NET address: no DNS query is sent
    assert OUTBOUND[already_seen:] == [("socket.getaddrinfo", "192.0.2.1")]
    del OUTBOUND[already_seen:]


# ---------------------------------------------------------------------------------------------
# Fixtures: a dataset published twice (v1.0.0 then v1.1.0) with the real client
# ---------------------------------------------------------------------------------------------

README = """---
configs:
- config_name: cfg_a
  data_files:
  - split: test
    path: data/cfg_a.parquet
- config_name: cfg_b
  data_files:
  - split: test
    path: data/cfg_b.parquet
---
# Test benchmark
"""
V1_ROWS = {
    "cfg_a": {"question": ["2+2?", "Capital of France?"], "answer": ["4", "Paris"]},
    "cfg_b": {"question": ["Largest planet?"], "answer": ["Jupiter"]},
}
V2_CFG_A_ROWS = {"question": ["2+3?", "Capital of Italy?", "3*3?"], "answer": ["5", "Rome", "9"]}


@dataclass(frozen=True)
class Published:
    repo_id: str
    first_commit: str
    second_commit: str
    readme: bytes
    v1_parquet: dict[str, bytes]
    first_upload_kinds: list[str]
    second_upload_kinds: list[str]


def _unique_repo_id(hub: LocalHub, label: str) -> str:
    return f"{hub.username}/{label}-{uuid.uuid4().hex[:8]}"


def _write_parquet(path: Path, rows: dict[str, list[str]]) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(rows).to_parquet(str(path))
    return path.read_bytes()


def _kinds_since(hub: LocalHub, start: int) -> list[str]:
    return [record.kind for record in hub.requests[start:]]


@pytest.fixture(scope="session")
def api(local_hub: LocalHub) -> HfApi:
    return HfApi(endpoint=local_hub.url, token=local_hub.token)


@pytest.fixture(scope="module")
def published(local_hub: LocalHub, api: HfApi, tmp_path_factory: pytest.TempPathFactory) -> Published:
    repo_id = _unique_repo_id(local_hub, "bench")
    folder = tmp_path_factory.mktemp("dataset")
    (folder / "README.md").write_text(README)
    v1_parquet = {name: _write_parquet(folder / "data" / f"{name}.parquet", rows) for name, rows in V1_ROWS.items()}
    api.create_repo(repo_id, repo_type="dataset", private=False)

    start = len(local_hub.requests)
    first = api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="dataset", commit_message="v1")
    first_kinds = _kinds_since(local_hub, start)
    api.create_tag(repo_id, tag="v1.0.0", repo_type="dataset")

    _write_parquet(folder / "data" / "cfg_a.parquet", V2_CFG_A_ROWS)  # README and cfg_b unchanged
    start = len(local_hub.requests)
    second = api.upload_folder(folder_path=folder, repo_id=repo_id, repo_type="dataset", commit_message="v1.1")
    second_kinds = _kinds_since(local_hub, start)
    api.create_tag(repo_id, tag="v1.1.0", repo_type="dataset")
    return Published(repo_id, first.oid, second.oid, README.encode(), v1_parquet, first_kinds, second_kinds)


# ---------------------------------------------------------------------------------------------
# Publishing and loading a dataset
# ---------------------------------------------------------------------------------------------


def test_publish_creates_two_commits_and_two_tags(local_hub: LocalHub, api: HfApi, published: Published) -> None:
    refs = api.list_repo_refs(published.repo_id, repo_type="dataset")
    assert [(ref.name, ref.target_commit) for ref in refs.branches] == [("main", published.second_commit)]
    assert [(ref.name, ref.target_commit) for ref in refs.tags] == [
        ("v1.0.0", published.first_commit),
        ("v1.1.0", published.second_commit),
    ]
    assert local_hub.tags(published.repo_id) == ["v1.0.0", "v1.1.0"]
    assert local_hub.commits(published.repo_id)[:2] == [published.second_commit, published.first_commit]
    assert len(local_hub.commits(published.repo_id)) == 3  # and the repo's initial commit
    assert api.dataset_info(published.repo_id, revision="v1.0.0").sha == published.first_commit
    assert api.repo_info(published.repo_id, repo_type="dataset").sha == published.second_commit


def test_upload_goes_through_preupload_lfs_batch_and_commit(published: Published) -> None:
    # upload_folder validates README.md twice (when listing the folder, then in create_commit).
    # The two parquet files are uploaded in parallel threads: compare counts, then the phases' order.
    assert Counter(published.first_upload_kinds) == Counter(
        {"validate_yaml": 2, "preupload": 1, "lfs_batch": 1, "lfs_upload": 2, "lfs_verify": 2, "commit": 1}
    )
    assert published.first_upload_kinds[:4] == ["validate_yaml", "validate_yaml", "preupload", "lfs_batch"]
    assert published.first_upload_kinds[-1] == "commit"
    # Second upload: the client skips README.md and cfg_b (same remote oid) and uploads cfg_a only.
    assert published.second_upload_kinds == [
        "validate_yaml",
        "validate_yaml",
        "preupload",
        "lfs_batch",
        "lfs_upload",
        "lfs_verify",
        "commit",
    ]


def test_parquet_files_are_lfs_and_readme_is_a_git_blob(local_hub: LocalHub, api: HfApi, published: Published) -> None:
    tree = api.list_repo_tree(published.repo_id, revision="v1.0.0", repo_type="dataset", recursive=True)
    by_path = {entry.path: entry for entry in tree}
    assert list(by_path) == ["data", ".gitattributes", "README.md", "data/cfg_a.parquet", "data/cfg_b.parquet"]
    readme, parquet, folder = by_path["README.md"], by_path["data/cfg_a.parquet"], by_path["data"]
    assert isinstance(readme, RepoFile) and readme.lfs is None
    assert readme.blob_id == git_hash(published.readme)
    assert isinstance(parquet, RepoFile) and parquet.lfs is not None
    assert parquet.lfs.sha256 == hashlib.sha256(published.v1_parquet["cfg_a"]).hexdigest()
    assert parquet.size == len(published.v1_parquet["cfg_a"])
    assert isinstance(folder, RepoFolder)
    assert local_hub.is_lfs(published.repo_id, "v1.0.0", "data/cfg_a.parquet")
    top_level = api.list_repo_tree(published.repo_id, revision="v1.0.0", repo_type="dataset")
    assert [entry.path for entry in top_level] == ["data", ".gitattributes", "README.md"]
    with pytest.raises(EntryNotFoundError):
        list(api.list_repo_tree(published.repo_id, path_in_repo="absent", revision="v1.0.0", repo_type="dataset"))


@pytest.mark.parametrize(
    ("revision", "config", "expected"),
    [
        ("v1.0.0", "cfg_a", V1_ROWS["cfg_a"]),
        ("v1.0.0", "cfg_b", V1_ROWS["cfg_b"]),
        ("v1.1.0", "cfg_a", V2_CFG_A_ROWS),
        ("v1.1.0", "cfg_b", V1_ROWS["cfg_b"]),
        ("main", "cfg_a", V2_CFG_A_ROWS),
    ],
)
def test_load_dataset_returns_the_rows_of_the_requested_revision(
    published: Published, revision: str, config: str, expected: dict[str, list[str]]
) -> None:
    loaded = datasets.load_dataset(published.repo_id, config, revision=revision, split="test")
    assert loaded.to_dict() == expected


def test_tagged_snapshot_is_immutable(local_hub: LocalHub, published: Published) -> None:
    assert local_hub.file_at(published.repo_id, "v1.0.0", "data/cfg_a.parquet") == published.v1_parquet["cfg_a"]
    assert local_hub.file_at(published.repo_id, published.first_commit, "README.md") == published.readme
    assert local_hub.file_at(published.repo_id, "main", "data/cfg_a.parquet") != published.v1_parquet["cfg_a"]
    assert local_hub.paths_at(published.repo_id, "v1.0.0") == [
        ".gitattributes",
        "README.md",
        "data/cfg_a.parquet",
        "data/cfg_b.parquet",
    ]


def test_creating_an_existing_tag_is_a_409_conflict(local_hub: LocalHub, api: HfApi, published: Published) -> None:
    with pytest.raises(HfHubHTTPError) as raised:
        api.create_tag(published.repo_id, tag="v1.0.0", revision="main", repo_type="dataset")
    assert raised.value.response.status_code == 409
    api.create_tag(published.repo_id, tag="v1.0.0", repo_type="dataset", exist_ok=True)
    refs = api.list_repo_refs(published.repo_id, repo_type="dataset")
    assert {ref.name: ref.target_commit for ref in refs.tags}["v1.0.0"] == published.first_commit


def test_hf_hub_download_and_file_metadata(api: HfApi, published: Published) -> None:
    path = hf_hub_download(published.repo_id, "README.md", repo_type="dataset", revision="v1.0.0")
    assert Path(path).read_bytes() == published.readme

    readme_meta = get_hf_file_metadata(hf_hub_url(published.repo_id, "README.md", repo_type="dataset"))
    assert (readme_meta.etag, readme_meta.size) == (git_hash(published.readme), len(published.readme))
    assert readme_meta.commit_hash == published.second_commit

    parquet_url = hf_hub_url(published.repo_id, "data/cfg_a.parquet", repo_type="dataset", revision="v1.0.0")
    parquet_meta = get_hf_file_metadata(parquet_url)
    assert parquet_meta.etag == hashlib.sha256(published.v1_parquet["cfg_a"]).hexdigest()
    assert parquet_meta.commit_hash == published.first_commit


# ---------------------------------------------------------------------------------------------
# Errors and authentication
# ---------------------------------------------------------------------------------------------


def test_private_repo_needs_the_token(local_hub: LocalHub, api: HfApi) -> None:
    repo_id = _unique_repo_id(local_hub, "private")
    api.create_repo(repo_id, repo_type="dataset", private=True)
    api.upload_file(path_or_fileobj=README.encode(), path_in_repo="README.md", repo_id=repo_id, repo_type="dataset")
    anonymous = HfApi(endpoint=local_hub.url, token=False)

    with pytest.raises(RepositoryNotFoundError) as raised:
        anonymous.dataset_info(repo_id)
    assert raised.value.response.status_code == 401
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download(repo_id, "README.md", repo_type="dataset", token=False)
    with pytest.raises(datasets.exceptions.DatasetNotFoundError):
        datasets.load_dataset(repo_id, "cfg_a", token=False)
    assert api.dataset_info(repo_id).private is True


def test_wrong_token_is_rejected_without_hiding_the_repo(local_hub: LocalHub, published: Published) -> None:
    wrong = HfApi(endpoint=local_hub.url, token="hf_wrong_token")
    with pytest.raises(HfHubHTTPError) as raised:
        wrong.dataset_info(published.repo_id)
    assert raised.value.response.status_code == 401
    assert not isinstance(raised.value, RepositoryNotFoundError)
    with pytest.raises(HfHubHTTPError) as raised:
        wrong.whoami()
    assert raised.value.response.status_code == 401


def test_whoami_with_the_hub_token(local_hub: LocalHub, api: HfApi) -> None:
    assert api.whoami()["name"] == local_hub.username


def test_auth_check_reads_and_writes_existing_repos_only(local_hub: LocalHub, api: HfApi, published: Published) -> None:
    api.auth_check(published.repo_id, repo_type="dataset")
    api.auth_check(published.repo_id, repo_type="dataset", write=True)
    with pytest.raises(HfHubHTTPError) as raised:
        HfApi(endpoint=local_hub.url, token=False).auth_check(published.repo_id, repo_type="dataset", write=True)
    assert raised.value.response.status_code == 401
    with pytest.raises(RepositoryNotFoundError):
        api.auth_check(_unique_repo_id(local_hub, "absent"), repo_type="dataset")


def test_readme_with_invalid_yaml_is_refused(local_hub: LocalHub, api: HfApi) -> None:
    repo_id = _unique_repo_id(local_hub, "bad-card")
    api.create_repo(repo_id, repo_type="dataset")
    with pytest.raises(ValueError, match="Invalid metadata in README.md"):
        api.upload_file(path_or_fileobj=b"---\nconfigs: [\n---\n", path_in_repo="README.md",
                        repo_id=repo_id, repo_type="dataset")
    assert local_hub.paths_at(repo_id, "main") == [".gitattributes"]


def test_unknown_routes_are_404(local_hub: LocalHub, api: HfApi, published: Published) -> None:
    with pytest.raises(HfHubHTTPError) as raised:
        api.list_repo_commits(published.repo_id, repo_type="dataset")
    assert raised.value.response.status_code == 404
    assert "No LocalHub route for GET" in raised.value.response.text


def test_missing_repo_revision_and_file_map_to_client_errors(local_hub: LocalHub, published: Published) -> None:
    with pytest.raises(RepositoryNotFoundError) as raised:
        hf_hub_download(_unique_repo_id(local_hub, "absent"), "README.md", repo_type="dataset")
    assert raised.value.response.status_code == 404
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(published.repo_id, "README.md", repo_type="dataset", revision="v9.9.9")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(published.repo_id, "absent.txt", repo_type="dataset", revision="v1.0.0")


def test_create_repo_twice_conflicts_unless_exist_ok(local_hub: LocalHub, api: HfApi) -> None:
    repo_id = _unique_repo_id(local_hub, "twice")
    url = api.create_repo(repo_id, repo_type="dataset")
    assert (url.repo_id, url.repo_type, str(url)) == (repo_id, "dataset", f"{local_hub.url}/datasets/{repo_id}")
    with pytest.raises(HfHubHTTPError) as raised:
        api.create_repo(repo_id, repo_type="dataset")
    assert raised.value.response.status_code == 409
    assert api.create_repo(repo_id, repo_type="dataset", exist_ok=True).repo_id == repo_id


# ---------------------------------------------------------------------------------------------
# Failure injection
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def tagged_repo(local_hub: LocalHub, api: HfApi) -> str:
    """A dataset repo with one commit (README.md v1) tagged v1.0.0."""
    repo_id = _unique_repo_id(local_hub, "inject")
    api.create_repo(repo_id, repo_type="dataset")
    api.upload_file(path_or_fileobj=b"v1\n", path_in_repo="README.md", repo_id=repo_id, repo_type="dataset")
    api.create_tag(repo_id, tag="v1.0.0", repo_type="dataset")
    return repo_id


def test_injected_commit_failure_leaves_no_commit_and_no_tag(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    commits_before = local_hub.commits(tagged_repo)
    local_hub.fail_next("commit", 500)
    with pytest.raises(HfHubHTTPError) as raised:
        api.upload_file(path_or_fileobj=b"v2\n", path_in_repo="README.md", repo_id=tagged_repo, repo_type="dataset")
    assert raised.value.response.status_code == 500
    assert local_hub.commits(tagged_repo) == commits_before
    assert local_hub.tags(tagged_repo) == ["v1.0.0"]
    assert local_hub.file_at(tagged_repo, "main", "README.md") == b"v1\n"
    # The failure was consumed: the same upload now succeeds.
    api.upload_file(path_or_fileobj=b"v2\n", path_in_repo="README.md", repo_id=tagged_repo, repo_type="dataset")
    assert local_hub.file_at(tagged_repo, "main", "README.md") == b"v2\n"


def test_injected_tag_failure_leaves_no_tag(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    local_hub.fail_next("tag", 503)
    with pytest.raises(HfHubHTTPError) as raised:
        api.create_tag(tagged_repo, tag="v2.0.0", repo_type="dataset")
    assert raised.value.response.status_code == 503
    assert local_hub.tags(tagged_repo) == ["v1.0.0"]


def test_injected_preupload_failure_stops_before_any_commit(
    local_hub: LocalHub, api: HfApi, tagged_repo: str
) -> None:
    commits_before = local_hub.commits(tagged_repo)
    local_hub.fail_next("preupload", 403)  # 4xx: the client does not retry it
    with pytest.raises(HfHubHTTPError) as raised:
        api.upload_file(path_or_fileobj=b"x", path_in_repo="notes.txt", repo_id=tagged_repo, repo_type="dataset")
    assert raised.value.response.status_code == 403
    assert local_hub.commits(tagged_repo) == commits_before


def test_injected_create_repo_failure_creates_nothing(local_hub: LocalHub, api: HfApi) -> None:
    repo_id = _unique_repo_id(local_hub, "never")
    local_hub.fail_next("create_repo", 500)
    with pytest.raises(HfHubHTTPError):
        api.create_repo(repo_id, repo_type="dataset")
    assert api.repo_exists(repo_id, repo_type="dataset") is False


def test_an_injected_failure_carries_its_message(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    local_hub.fail_next("tag", 400, message="the Hub's own reason")
    with pytest.raises(HfHubHTTPError) as raised:
        api.create_tag(tagged_repo, tag="v2.0.0", repo_type="dataset")
    assert raised.value.server_message == "the Hub's own reason"


def test_commit_files_writes_what_no_client_check_would_let_through(local_hub: LocalHub, tagged_repo: str) -> None:
    """As a git push or the web editor: a card with invalid YAML, a deletion."""
    oid = local_hub.commit_files(tagged_repo, {"README.md": b"---\na: [unclosed\n---\n", "notes.bin": b"\0\1"})
    assert local_hub.commits(tagged_repo)[0] == oid and local_hub.is_lfs(tagged_repo, "main", "notes.bin")
    local_hub.commit_files(tagged_repo, {"README.md": None})
    assert local_hub.paths_at(tagged_repo, "main") == [".gitattributes", "notes.bin"]


def test_fail_next_rejects_unknown_route_kinds(local_hub: LocalHub) -> None:
    with pytest.raises(ValueError, match="Unknown route kind"):
        local_hub.fail_next("comit")
    with pytest.raises(ValueError, match="Unknown route kind"):
        local_hub.hold("taggg")


# ---------------------------------------------------------------------------------------------
# Optimistic concurrency and interleavings
# ---------------------------------------------------------------------------------------------


def test_a_commit_on_a_stale_parent_is_a_412_and_changes_nothing(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    """create_commit(parent_commit=...) as huggingface_hub sends it: the header's parentCommit must be the head."""
    [head] = local_hub.commits(tagged_repo)[:1]
    api.upload_file(path_or_fileobj=b"v2\n", path_in_repo="README.md", repo_id=tagged_repo, repo_type="dataset",
                    parent_commit=head)
    with pytest.raises(HfHubHTTPError) as raised:  # head moved: the same parent is stale now
        api.upload_file(path_or_fileobj=b"v3\n", path_in_repo="README.md", repo_id=tagged_repo, repo_type="dataset",
                        parent_commit=head)
    assert raised.value.response.status_code == 412
    assert local_hub.file_at(tagged_repo, "main", "README.md") == b"v2\n"
    assert len(local_hub.commits(tagged_repo)) == 3  # initial, v1, v2


def test_a_held_request_waits_where_it_was_stopped(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    before, after = local_hub.hold("tag"), local_hub.hold("tag", after=True)
    first = threading.Thread(target=api.create_tag, args=(tagged_repo,), kwargs={"tag": "v2", "repo_type": "dataset"})
    first.start()
    before.wait()
    assert local_hub.tags(tagged_repo) == ["v1.0.0"]  # stopped before its handler ran
    before.release()
    first.join(30)
    second = threading.Thread(target=api.create_tag, args=(tagged_repo,), kwargs={"tag": "v3", "repo_type": "dataset"})
    second.start()
    after.wait()
    assert local_hub.tags(tagged_repo) == ["v1.0.0", "v2", "v3"] and second.is_alive()  # done, not yet answered
    after.release()
    second.join(30)
    assert not second.is_alive()


def test_requests_that_meet_run_after_both_arrived(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    local_hub.meet("tag", 2)
    errors: list[int] = []

    def tag(name: str) -> None:
        try:
            api.create_tag(tagged_repo, tag=name, repo_type="dataset")
        except HfHubHTTPError as error:
            errors.append(error.response.status_code)

    first = threading.Thread(target=tag, args=("v9",))
    first.start()
    time.sleep(0.3)
    assert local_hub.tags(tagged_repo) == ["v1.0.0"]  # the first waits for the second
    tag("v9")
    first.join(30)
    assert local_hub.tags(tagged_repo) == ["v1.0.0", "v9"] and errors == [409]


# ---------------------------------------------------------------------------------------------
# Other commit operations and model repos
# ---------------------------------------------------------------------------------------------


def test_unchanged_upload_creates_no_commit(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    commits_before = local_hub.commits(tagged_repo)
    info = api.upload_file(path_or_fileobj=b"v1\n", path_in_repo="README.md", repo_id=tagged_repo, repo_type="dataset")
    assert info.oid == commits_before[0]
    assert local_hub.commits(tagged_repo) == commits_before


def test_deleting_a_file_keeps_it_in_the_tagged_snapshot(local_hub: LocalHub, api: HfApi, tagged_repo: str) -> None:
    api.delete_file("README.md", repo_id=tagged_repo, repo_type="dataset")
    assert local_hub.paths_at(tagged_repo, "main") == [".gitattributes"]
    assert api.list_repo_files(tagged_repo, repo_type="dataset", revision="v1.0.0") == [".gitattributes", "README.md"]
    with pytest.raises(EntryNotFoundError):
        api.delete_file("README.md", repo_id=tagged_repo, repo_type="dataset")


def test_model_repo_upload_tag_and_snapshot_download(local_hub: LocalHub, api: HfApi, tmp_path: Path) -> None:
    repo_id = _unique_repo_id(local_hub, "model")
    weights = bytes(range(256)) * 4  # binary => LFS
    api.create_repo(repo_id)
    api.upload_file(path_or_fileobj=b'{"v": 1}', path_in_repo="config.json", repo_id=repo_id)
    api.upload_file(path_or_fileobj=weights, path_in_repo="weights/model.bin", repo_id=repo_id)
    api.create_tag(repo_id, tag="v1")
    api.upload_file(path_or_fileobj=b'{"v": 2}', path_in_repo="config.json", repo_id=repo_id)

    tagged = Path(snapshot_download(repo_id, revision="v1", cache_dir=tmp_path))
    latest = Path(snapshot_download(repo_id, cache_dir=tmp_path))
    assert sorted(str(p.relative_to(tagged)) for p in tagged.rglob("*") if p.is_file()) == [
        ".gitattributes",
        "config.json",
        "weights/model.bin",
    ]
    assert (tagged / "config.json").read_bytes() == b'{"v": 1}'
    assert (tagged / "weights" / "model.bin").read_bytes() == weights
    assert (latest / "config.json").read_bytes() == b'{"v": 2}'
    assert local_hub.is_lfs(repo_id, "v1", "weights/model.bin", repo_type="model")
    assert local_hub.tags(repo_id, repo_type="model") == ["v1"]
