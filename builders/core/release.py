"""The release folder: Parquet per config and split, the dataset card, and the build's records.

``datasets.load_dataset(DIR, "<config>")`` loads the folder, because the card's YAML ``configs:`` block
maps each config to its files. The same build gives byte-identical Parquet files.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import pyarrow as pa
import pyarrow.parquet as pq
import yaml
from huggingface_hub import DatasetCard, DatasetCardData

import builders

from .build import Build
from .record import record_features
from .validate import ValidationReport

logger = logging.getLogger(__name__)

CARDS_DIR = Path(__file__).resolve().parents[2] / "cards"
BUILD_CONFIG_FILE = "build_config.yaml"
REPORT_FILE = "validation_report.json"
EXCLUSIONS_FILE = "exclusions.jsonl"
TASK_CATEGORIES = ["multiple-choice", "question-answering"]


@dataclass(frozen=True)
class ChangelogEntry:
    version: str
    summary: str


@dataclass
class ReleaseInfo:
    """What is known about the release being written: set when publishing, empty for --output only."""

    repo_id: str | None = None
    version: str | None = None
    changelog: list[ChangelogEntry] = field(default_factory=list)


def parquet_path(config: str, split: str) -> str:
    return f"{config}/{split}-00000-of-00001.parquet"


def write_release(build: Build, report: ValidationReport, out_dir: Path, release: ReleaseInfo | None = None) -> Path:
    """Write the whole folder; refuse to write into a non-empty folder that is not a release."""
    release = release or ReleaseInfo()
    out_dir = Path(out_dir)
    _prepare(out_dir)
    for config, split, records in build.records():
        write_parquet(records, build.metadata_features.get(config, {}), out_dir / parquet_path(config, split),
                      build.extra_columns.get(config))
    (out_dir / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
    build.exclusions.write_jsonl(out_dir / EXCLUSIONS_FILE)
    (out_dir / BUILD_CONFIG_FILE).write_text(yaml.safe_dump(build_config(build), sort_keys=True, allow_unicode=True))
    for relative, content in sorted(build.extra_files.items()):
        path = out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    render_card(build, report, release).save(out_dir / "README.md")
    logger.info("wrote release folder %s", out_dir)
    return out_dir


def _prepare(out_dir: Path) -> None:
    if out_dir.exists() and any(out_dir.iterdir()):
        if not (out_dir / BUILD_CONFIG_FILE).exists():
            from .errors import UserError

            raise UserError(f"{out_dir} is not empty and is not an mcqforge release folder; choose another --output")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)


def write_parquet(records, metadata_features, path: Path, column_features=None) -> None:
    """Arrow table with the explicit features in the schema metadata, as ``datasets`` writes it."""
    features = record_features(metadata_features, column_features)
    rows = [record.to_row() for record in records]
    if "metadata" not in features:
        for row in rows:
            row.pop("metadata")
    schema = features.arrow_schema.with_metadata(
        {"huggingface": json.dumps({"info": {"features": features.to_dict()}})}
    )
    table = pa.Table.from_pylist(rows, schema=schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")


def build_config(build: Build) -> dict[str, Any]:
    """The plain file that records how to rebuild this release (``--config`` reads it back)."""
    return {
        "builder": build.builder,
        "mcqforge_version": builders.__version__,
        "source": {"benchmark": build.source.benchmark.name, "spec": build.source.source_description,
                   "dataset": build.source.dataset, "revision": build.source.revision},
        "params": build.params,
    }


def git_commit() -> str:
    try:
        result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                                text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=Path(__file__).parent,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if result.returncode != 0:
        return "unknown"
    return result.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _size_category(n: int) -> str:
    for limit, name in [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")]:
        if n < limit:
            return name
    return "10M<n<100M"


def render_card(build: Build, report: ValidationReport, release: ReleaseInfo) -> DatasetCard:
    benchmark = build.source.benchmark
    largest = max((len(records) for _, _, records in build.records()), default=0)
    changelog = [ChangelogEntry(release.version or "unreleased", _change_summary(build))] + [
        e for e in release.changelog if e.version != release.version
    ]
    card_data = DatasetCardData(
        license=benchmark.license,
        language=["en"],
        source_datasets=[benchmark.hub_id],
        task_categories=TASK_CATEGORIES,
        size_categories=[_size_category(largest)],
        pretty_name=build.title,
        configs=[{"config_name": config,
                  "data_files": [{"split": split, "path": f"{config}/{split}-*.parquet"} for split in splits],
                  **({"default": True} if i == 0 else {})}
                 for i, (config, splits) in enumerate(build.configs.items())],
        mcqforge={"builder": build.builder, "version": release.version,
                  "changelog": [{"version": e.version, "summary": e.summary} for e in changelog]},
    )
    context = {
        "build": build,
        "benchmark": benchmark,
        "title": build.title,
        "repo_id": release.repo_id or "<your-namespace>/<dataset>",
        "version": release.version,
        "first_config": next(iter(build.configs)),
        "mcqforge_version": builders.__version__,
        "git_commit": git_commit(),
        "build_config_yaml": yaml.safe_dump(build_config(build), sort_keys=True, allow_unicode=True).strip(),
        "validation_markdown": report.to_markdown(),
        "exclusion_reasons": report.exclusion_reasons,
        "statistics": build.statistics,
        "changelog": changelog,
        **build.card_context,
    }
    context["method_section"] = _render_fragment(build.card_template or f"{build.builder}.md", context)
    return DatasetCard.from_template(card_data, template_path=str(CARDS_DIR / "dataset.md"), **context)


def _render_fragment(name: str, context: dict[str, Any]) -> str:
    path = CARDS_DIR / name
    return jinja2.Template(path.read_text(encoding="utf-8"), undefined=jinja2.StrictUndefined).render(**context).strip()


def _change_summary(build: Build) -> str:
    params = ", ".join(f"{k}={v}" for k, v in sorted(build.params.items()) if k not in ("source",))
    return f"{build.builder} from {build.source.benchmark.hub_id} @ {build.source.revision[:19]} ({params})"


def load_build_config(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        from .errors import UserError

        raise UserError(f"cannot read build config {path}: {error}") from None
    return data or {}


def read_changelog(card_text: str) -> list[ChangelogEntry]:
    """The changelog of a previous release, from its card's YAML metadata."""
    from huggingface_hub import RepoCard

    data = RepoCard(card_text).data.to_dict().get("mcqforge") or {}
    return [ChangelogEntry(str(e["version"]), str(e["summary"])) for e in data.get("changelog") or []]
