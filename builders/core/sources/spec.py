"""A SPEC: where a benchmark's rows come from.

A SPEC is a Hub dataset id with an optional ``:config`` and ``@revision`` (``cais/mmlu:all@main``), a local
file or folder (json, jsonl, csv or parquet; one file per split, named after the split; for multi-config
sources one sub-folder per config), or ``sample`` for the small sample shipped inside the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from builders.core.errors import SourceError
from builders.core.runtime.content import content_revision

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "data" / "samples"
LOCAL_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet")
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")


@dataclass(frozen=True)
class SourceSpec:
    """Where a benchmark's rows come from."""

    hub_id: str | None = None
    config: str | None = None
    revision: str | None = None
    path: Path | None = None
    text: str = ""  # as the user wrote it

    @property
    def is_local(self) -> bool:
        return self.path is not None

    def recorded(self) -> str | dict[str, str]:
        """What the build config and card say: a Hub spec as written, ``sample``, or a local copy's base
        name and content hash (never a path of this machine)."""
        if self.path is None or self.text == "sample":
            return self.text
        return {"local": self.path.resolve().name, "content": content_revision(self.path)}

    def describe(self) -> str:
        if self.path is not None and self.text != "sample":
            return f"local copy '{self.path.resolve().name}'"
        return self.text or (self.hub_id or "")


def parse_spec(spec: str, benchmark: str | None = None) -> SourceSpec:
    """Parse a SPEC string; a path that exists always wins over a Hub id."""
    if spec == "sample":
        path = SAMPLES_DIR / (benchmark or "")
        if not benchmark or not path.is_dir():
            raise SourceError(f"no embedded sample for benchmark {benchmark!r}; samples: {_sample_names()}")
        return SourceSpec(path=path, text="sample")
    path = Path(spec).expanduser()
    if path.exists():
        return SourceSpec(path=path, text=spec)
    if spec.startswith((".", "/", "~")) or spec.endswith(LOCAL_SUFFIXES):
        raise SourceError(f"source path {spec} does not exist")
    repo, _, revision = spec.partition("@")
    repo, _, config = repo.partition(":")
    if not _HUB_ID.match(repo) or (spec.count("@") > 1):
        raise SourceError(f"cannot read source {spec!r}: expected an existing path or HUB_ID[:CONFIG][@REVISION]")
    return SourceSpec(hub_id=repo, config=config or None, revision=revision or None, text=spec)


def _sample_names() -> list[str]:
    return sorted(p.name for p in SAMPLES_DIR.iterdir() if p.is_dir()) if SAMPLES_DIR.is_dir() else []
