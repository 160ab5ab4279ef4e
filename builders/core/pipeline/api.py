"""The Python API: build from data already in memory, with keyword options, no command line.

Every builder module has ``build_dataset(data, **options)``, which is :func:`build_dataset` with its
:class:`~builders.core.pipeline.builder.Builder`::

    from builders import wicked
    result = wicked.build_dataset(rows, seed=0, variants=5, sba_classifier="none")
    result.configs["variant_0"]["test"]     # a datasets.Dataset
    result.report.passed                     # the validation report
    result.write("out/wicked")               # the release folder, as --output writes it

``data`` is a ``datasets.Dataset`` (one split, ``split=`` names it), a ``DatasetDict``, a list of rows, or
``{split: rows}``, in the benchmark's Hub columns. Options are the builder's options, by their field names (the
command line's, with underscores: ``sba_classifier="none"``); unknown names are refused. The same checks, build and validation
run as on the command line, so the same inputs and seed give the same items.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from builders.core.errors import UserError
from builders.core.items.record import record_features
from builders.core.build.result import Build
from builders.core.release.build_config import parse_options
from builders.core.options.declare import declared_options
from builders.core.pipeline.cli import (Runnable, build_and_validate, builder_parser, check_options, rare_collections,
                                        selection)
from builders.core.pipeline.options import Delivery
from builders.core.release.card import ReleaseInfo
from builders.core.release.writer import release_rows, write_release
from builders.core.sources.loading import load_rows
from builders.core.validation.validate import ValidationReport

logger = logging.getLogger(__name__)


@dataclass
class BuildResult:
    build: Build
    report: ValidationReport

    @property
    def configs(self) -> dict[str, Any]:
        """{config: DatasetDict}, with the release's features."""
        import datasets

        result = {}
        for config, splits in self.build.configs.items():
            features = record_features(self.build.release.metadata_features.get(config, {}),
                                       self.build.release.extra_columns.get(config))
            result[config] = datasets.DatasetDict({
                split: datasets.Dataset.from_list(release_rows(records, features), features=features)
                for split, records in splits.items()})
        return result

    @property
    def statistics(self):
        return self.build.release.statistics

    def write(self, folder: str | Path, repo_id: str | None = None, version: str | None = None) -> Path:
        """The release folder, exactly as ``--output`` writes it (``repo_id``/``version`` pin its lm-eval tasks)."""
        return write_release(self.build, self.report, Path(folder), ReleaseInfo(repo_id, version))


def build_dataset(builder: Runnable, data: Any, *, benchmark: str | None = None, split: str = "test",
                  **options: Any) -> BuildResult:
    """Build ``builder`` from ``data`` with keyword ``options`` (the builder's options, by their names)."""
    parser = builder_parser(builder)
    known = {action.dest for action in parser._actions if action.option_strings} - {"help", "benchmark"} \
        - {d.name for d in declared_options(Delivery)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UserError(f"unknown options {unknown} for {builder.name}; options: {sorted(known)}")
    args = parse_options(parser, {**options, "benchmark": benchmark}, f"{builder.name}.build_dataset")
    built_with = check_options(builder, args)
    rows = _rows(data, split)
    source = load_rows(builder.benchmark(args.benchmark), rows, seed=args.seed, strict=args.strict,
                       options=builder.source_options(args, built_with), selection=selection(builder, args),
                       max_excluded=args.max_excluded)
    try:
        with rare_collections():
            result = BuildResult(*build_and_validate(builder, parser, args, built_with, source))
    finally:
        gc.unfreeze()  # the build froze what it held out of the cyclic collector's sight: a notebook goes on
    for warning in result.report.warnings:
        logger.warning("shortcut audit: %s", warning)
    return result


def _rows(data: Any, split: str) -> Mapping[str, Any]:
    import datasets

    if isinstance(data, datasets.DatasetDict):
        return {name: ds.to_list() for name, ds in data.items()}
    if isinstance(data, datasets.Dataset):
        return {split: data.to_list()}
    if isinstance(data, list):
        return {split: data}
    if isinstance(data, Mapping):
        return {name: (rows.to_list() if isinstance(rows, datasets.Dataset) else _rows(rows, split) if
                       isinstance(rows, (Mapping, datasets.DatasetDict)) else rows) for name, rows in data.items()}
    raise UserError(f"data must be a datasets.Dataset, a DatasetDict, a list of rows or {{split: rows}}, "
                    f"not {type(data).__name__}")
