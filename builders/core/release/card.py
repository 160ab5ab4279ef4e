"""The dataset card of a release: its YAML metadata (configs, features, license, changelog) and its text, rendered
from ``cards/dataset.md`` and the builder's ``cards/<name>.md`` (Jinja), with what is known of the release it
describes (:class:`ReleaseInfo`).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builders.core.items.record import features_yaml, release_features
from builders.core.build.result import Build, TaskLocation
from builders.core.release.build_config import build_config_text
from builders.core.items.outcomes import ALTERED, COPIED, EXCLUDED, outcome_table
from builders.core.release.figure import FIGURE_FILE, row_outcomes
from builders.core.sources.corrections import CORRECTIONS_FILE, corrections_table
from builders.core.sources.errata import errata_kept_table, errata_table
from builders.core.validation.validate import ValidationReport
from builders.core.version import PACKAGE_DIR, __version__

if TYPE_CHECKING:
    from huggingface_hub import DatasetCard

# The top-level cards/ folder, linked as builders/cards so that a wheel carries it (a checkout whose link
# was flattened into a file still finds the top-level folder).
CARDS_DIR = next(folder for folder in (PACKAGE_DIR / "cards", PACKAGE_DIR.parent / "cards") if folder.is_dir())
TASK_CATEGORIES = ["multiple-choice", "question-answering"]
TASK_IDS = ["multiple-choice-qa"]


@dataclass(frozen=True)
class ChangelogEntry:
    version: str
    summary: str


@dataclass(frozen=True)
class Published:
    """A version on the Hub: its repo's URL, its tag and the commit the tag is on."""

    url: str
    tag: str
    commit: str


@dataclass
class ReleaseInfo:
    """What is known about the release being written: set when publishing, empty for --output only."""

    repo_id: str | None = None
    version: str | None = None
    changelog: list[ChangelogEntry] = field(default_factory=list)
    message: str | None = None  # --message: what changed, in the changelog entry of this release
    published: Published | None = None  # set by publish_folder the moment the tag is there
    previous_tag: str | None = None  # the repo's newest earlier release, which the new one is compared with
    diff: dict | None = None  # what changed since it (builders.core.release.diff): diff.json and the changelog
    diff_summary: str = ""

    @property
    def tag(self) -> str | None:
        return f"v{self.version}" if self.version else None

    @property
    def task_location(self) -> TaskLocation:
        """Published: the tasks read the repo at the tag; otherwise the folder they sit in."""
        return TaskLocation(self.repo_id, self.tag) if self.repo_id and self.version else TaskLocation()


def git_commit(package: Path | None = None) -> str:
    """The commit of the mcqforge checkout this package runs from ("-dirty" with uncommitted changes), or
    "unknown". An installed package that merely sits inside some other git repository (a virtual environment
    in a user's project) is "unknown": that repository's commit says nothing about mcqforge."""
    package = Path(package or PACKAGE_DIR).resolve()

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=package, capture_output=True, text=True, timeout=10)

    try:
        top = git("rev-parse", "--show-toplevel")
        tracked = git("ls-files", "--error-unmatch", "--", "__init__.py")
        result = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != package.parent or tracked.returncode != 0 \
            or result.returncode != 0:
        return "unknown"
    return result.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _size_category(n: int) -> str:
    for limit, name in [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                        (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")]:
        if n < limit:
            return name
    return "10M<n<100M"


def dataset_info(build: Build, sizes: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """The card's ``dataset_info``: features, rows and bytes per config and split, as the Hub reads them
    (``num_bytes`` is the Arrow size of the written split; without it ``datasets`` ignores the splits)."""
    entries = []
    for config, splits in build.configs.items():
        features = release_features(build.release.metadata_features.get(config, {}),
                                    build.release.extra_columns.get(config))
        # as datasets.DatasetInfo(features=..., splits=..., config_name=...)._to_yaml_dict() writes it
        entries.append({"features": features_yaml(features), "config_name": config, "splits": [
            {"name": split, "num_bytes": sizes[config, split], "num_examples": len(records)}
            for split, records in splits.items()]})
    return entries


def render_card(build: Build, report: ValidationReport, release: ReleaseInfo,
                sizes: dict[tuple[str, str], int]) -> DatasetCard:
    from huggingface_hub import DatasetCard, DatasetCardData

    benchmark = build.source.benchmark
    largest = max((len(records) for _, _, records in build.records()), default=0)
    summary = " ".join(filter(None, (_change_summary(build, release.message), release.diff_summary)))
    changelog = [ChangelogEntry(release.version or "unreleased", summary)] + [
        e for e in release.changelog if e.version != release.version
    ]
    card_data = DatasetCardData(
        **card_license(build),
        language=["en"],
        source_datasets=list(dict.fromkeys(p.dataset for p in build.source.provenance if p.spec != "sample")) or None,
        task_categories=TASK_CATEGORIES,
        task_ids=TASK_IDS,
        tags=["mcqforge", build.about.builder, benchmark.name],
        size_categories=[_size_category(largest)],
        pretty_name=build.about.title,
        configs=[{"config_name": config,
                  "data_files": [{"split": split, "path": f"{config}/{split}-*.parquet"} for split in splits],
                  **({"default": True} if config == build.default_config else {})}
                 for config, splits in build.configs.items()],
        dataset_info=dataset_info(build, sizes),
        mcqforge={"builder": build.about.builder, "version": release.version,
                  "changelog": [{"version": e.version, "summary": e.summary} for e in changelog]},
    )
    context = {
        "build": build,
        "benchmark": benchmark,
        "title": build.about.title,
        "repo_id": release.repo_id,
        "version": release.version,
        "default_config": build.default_config,
        "mcqforge_version": __version__,
        "git_commit": git_commit(),
        "provenance": build.source.provenance,
        "from_sample": all(p.spec == "sample" for p in build.source.provenance),
        "selection": build.source.selection,
        "build_config_yaml": build_config_text(build).strip(),
        "report": report,
        "validation_markdown": report.to_markdown(),
        "outcome_table": outcome_table(build.outcomes, build.exclusions, list(build.configs)),
        "statistics": build.release.statistics,
        "has_lm_eval": build.release.lm_eval_tasks is not None,
        "changelog": changelog,
        "glance": at_a_glance(build, report),
        "figure_file": FIGURE_FILE,
        **build.release.card_context,
    }
    context["corrections_section"] = corrections_section(build, context)
    context["source_checks"] = source_check_tables(build)
    context["method_section"] = _render_fragment(build.about.card_template or f"{build.about.builder}.md", context)
    return DatasetCard.from_template(card_data, template_path=str(CARDS_DIR / "dataset.md"), **context)


def corrections_section(build: Build, context: dict[str, Any]) -> str:
    """The card's section on the corrections applied to the source (``cards/corrections.md``), empty without any."""
    errata = build.source.errata
    has_file = CORRECTIONS_FILE in build.release.extra_files
    if not build.source.corrections and errata is None and not has_file:
        return ""
    return _render_fragment("corrections.md", {
        **context, "has_corrections_file": has_file, "errata": errata,
        "corrections_table": corrections_table(build.source.corrections),
        "errata_table": errata_table(errata) if errata else None,
        "errata_kept_table": errata_kept_table(errata) if errata else None})


def source_check_tables(build: Build) -> list[Any]:
    """The tables of what the source's own checks found: its duplicates, and the models' consensus on its keys."""
    duplicates, consensus = build.source.duplicates, build.source.consensus
    return [*(duplicates.tables() if duplicates is not None else ()),
            *((consensus.table(),) if consensus is not None else ())]


def at_a_glance(build: Build, report: ValidationReport) -> dict[str, Any]:
    """What the card's summary states: the default config's rows and what became of them, the share altered, the
    checks, the warnings, and the columns no record of the release fills (with the reason they are there)."""
    default = build.default_config
    counts = row_outcomes(build)[default]
    total = sum(counts.values())
    return {"config": default, "splits": {split: len(records) for split, records in build.configs[default].items()},
            "altered": counts[ALTERED], "copied": counts[COPIED], "excluded": counts[EXCLUDED], "rows": total,
            "altered_share": counts[ALTERED] / total if total else 0.0,
            "copied_reasons": sorted(build.outcomes.reasons(config=default).items(), key=lambda kv: -kv[1])[:3],
            "checks": len(report.checks), "warnings": report.warnings, "empty_columns": empty_columns(build)}


def empty_columns(build: Build) -> list[str]:
    """The columns (``metadata.<field>`` for the metadata struct's) that are null in every record of every config:
    the schema is the builder's, the same whatever the source and the options, so that releases concatenate."""
    records = [record for _, _, split in build.records() for record in split]
    columns = [name for name in ("subject", "category") if all(getattr(r, name) is None for r in records)]
    fields = dict.fromkeys(name for features in build.release.metadata_features.values() for name in features)
    return columns + [f"metadata.{name}" for name in fields if all(r.metadata.get(name) is None for r in records)]


# The embedded samples were written for mcqforge and are released with it (builders/data/samples/README.md).
SAMPLE_LICENSE = "apache-2.0"


def card_license(build: Build) -> dict[str, Any]:
    """The card's license fields: the source benchmark's, or mcqforge's for a build from its own samples; with
    ``license: other`` the Hub needs ``license_name`` (and a link)."""
    if all(p.spec == "sample" for p in build.source.provenance):
        return {"license": SAMPLE_LICENSE}
    benchmark = build.source.benchmark
    named = {"license_name": benchmark.license_name, "license_link": benchmark.license_link}
    return {"license": benchmark.license, **{k: v for k, v in named.items() if v and benchmark.license == "other"}}


def _render_fragment(name: str, context: dict[str, Any]) -> str:
    import jinja2

    path = CARDS_DIR / name
    return jinja2.Template(path.read_text(encoding="utf-8"), undefined=jinja2.StrictUndefined).render(**context).strip()


def _change_summary(build: Build, message: str | None = None) -> str:
    """One readable line: the user's --message, then what was built from what (every option is in the build
    configuration below it, not repeated here)."""
    first = build.source.provenance[0]
    source = "mcqforge's sample" if first.spec == "sample" else build.source.dataset
    built = f"{build.about.builder} from {source} (revision {first.revision.removeprefix('sha256:')[:12]}), seed " \
            f"{build.params.get('seed', 0)}"
    message = " ".join((message or "").split()).rstrip(".")  # one line in the card's YAML and list
    return f"{message}. Built with {built}." if message else f"Built with {built}."


def read_changelog(card_text: str) -> list[ChangelogEntry]:
    """The changelog of a previous release, from its card's YAML metadata: every entry that reads as one (a mapping
    with a version and a summary). A card edited by hand on the Hub may have lost its metadata, hold invalid YAML or
    be another tool's: what cannot be read is left out, never an error."""
    import yaml
    from huggingface_hub.repocard import REGEX_YAML_BLOCK

    match = REGEX_YAML_BLOCK.search(card_text)
    try:
        data = yaml.safe_load(match.group(2)) if match else None
    except (yaml.YAMLError, RecursionError):
        return []
    block = data.get("mcqforge") if isinstance(data, dict) else None
    entries = block.get("changelog") if isinstance(block, dict) else None
    readable = [e for e in entries or [] if isinstance(e, dict) and e.get("version") is not None
                and e.get("summary") is not None] if isinstance(entries, list) else []
    return [ChangelogEntry(str(e["version"]), " ".join(str(e["summary"]).split())) for e in readable]
