"""Publish a release folder that was built and reviewed, as it is, without a rebuild.

    python -m builders.wicked ... --output release/ --push ORG/NAME --version 1.0.0 --no-upload
    # review release/: its card, its tables, its tasks (which read ORG/NAME at v1.0.0)
    python -m builders publish release/ --push ORG/NAME --version 1.0.0

The same checks as ``--push`` come first (the version, the repo id, the token, the Hub, a tag not taken yet), then
those of the folder: an mcqforge release that passed validation, written for this repo and version, whose card
continues the Hub's changelog. Then the same upload: every file of the folder, byte for byte, in one commit, then
the tag on exactly that commit (:mod:`builders.core.release.publish`). The folder's lock is held throughout, so
that no build replaces it while it is uploaded.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Sequence

from builders.core.errors import UserError
from builders.core.pipeline.cli import ArgumentParser, exit_code


def check_release_folder(folder: Path, repo_id: str, version: str) -> None:
    """A release folder of mcqforge, validated, and written for ``repo_id`` at ``version`` (``--push`` and
    ``--version`` with ``--no-upload``): its card and tasks say where they are read from."""
    from builders.core.release.build_config import BUILD_CONFIG_FILE
    from builders.core.release.writer import REPORT_FILE

    if not (folder / BUILD_CONFIG_FILE).is_file() or not (folder / "README.md").is_file():
        raise UserError(f"{folder} is not a release folder of mcqforge (no {BUILD_CONFIG_FILE} or README.md)")
    report = json.loads((folder / REPORT_FILE).read_text(encoding="utf-8")) if (folder / REPORT_FILE).is_file() else {}
    if report.get("passed") is not True:
        raise UserError(f"{folder}: {REPORT_FILE} does not say the release passed validation")
    written_for = card_release(folder)
    if written_for != (repo_id, version):
        where = f"{written_for[0]} v{written_for[1]}" if all(written_for) else "no repo and version (--output only)"
        raise UserError(f"{folder} was written for {where}, not {repo_id} v{version}: its card and tasks say where "
                        f"they are read from; build it with --output {folder} --push {repo_id} --version {version} "
                        "--no-upload")


def card_release(folder: Path) -> tuple[str | None, str | None]:
    """(repo id, version) the folder's card was written for: its YAML ``mcqforge.version`` and its Loading line."""
    import re

    import yaml
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    text = (folder / "README.md").read_text(encoding="utf-8")
    match = REGEX_YAML_BLOCK.search(text)
    data = yaml.safe_load(match.group(2)) if match else None
    block = data.get("mcqforge") if isinstance(data, dict) else None
    version = block.get("version") if isinstance(block, dict) else None
    loading = re.search(r'^ds = load_dataset\("([^"]+)", revision="v([^"]+)"\)', text, re.MULTILINE)
    repo_id = loading.group(1) if loading and loading.group(2) == str(version) else None
    return repo_id, None if version is None else str(version)


def check_changelog_continues(folder: Path, hub_versions: list[str], version: str) -> None:
    """The folder's card lists the versions the Hub holds: a version released since it was written is missing."""
    from builders.core.release.card import read_changelog

    listed = [e.version for e in read_changelog((folder / "README.md").read_text(encoding="utf-8"))]
    if listed[1:] != [v for v in hub_versions if v != version]:
        raise UserError(f"{folder}'s changelog lists {listed[1:] or 'no earlier version'}, the Hub's "
                        f"{hub_versions or 'none'}: another version was published since it was written; rebuild "
                        "it with --no-upload")


def publish(folder: Path, repo_id: str, version: str, private: bool = False) -> str:
    """Every check of ``--push`` and of the folder, then the folder published as it is: the line that says where."""
    from builders.core.release.publish import check_repo_id, prepare_release, publish_folder, version_tag
    from builders.core.release.writer import output_lock

    version_tag(version)
    check_repo_id(repo_id)
    folder = Path(folder).expanduser()
    with output_lock(folder):
        check_release_folder(folder, repo_id, version)
        release = prepare_release(repo_id, version)
        check_changelog_continues(folder, [e.version for e in release.changelog], version)
        published = publish_folder(folder, release, private=private)
    return f"published {published.url} tag {published.tag} (the files of {folder}, as they are)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m builders publish", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the release folder, written with --push ... --no-upload")
    parser.add_argument("--push", required=True, metavar="REPO_ID", help="the Hub dataset repo it was written for")
    parser.add_argument("--version", required=True, metavar="X.Y.Z", help="the version it was written for")
    parser.add_argument("--private", action="store_true", help="create the Hub repo as private")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    def run() -> None:
        args = parser.parse_args(argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        print(publish(args.folder, args.push, args.version, args.private))

    return exit_code(run)


if __name__ == "__main__":
    sys.exit(main())
