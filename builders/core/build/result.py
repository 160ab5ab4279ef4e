"""What a build made, as validation, the release writer and the publisher read it, and the builder's checks of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from builders.core.items.record import MCQRecord
from builders.core.items.tables import Statistics
from builders.core.items.outcomes import ExclusionLog, Outcomes
from builders.core.sources.loading import LoadedSource

Configs = dict[str, dict[str, list[MCQRecord]]]


@dataclass(frozen=True)
class Check:
    """A builder invariant: ``find_violations`` yields one message per broken item."""

    name: str
    description: str
    find_violations: Callable[["Build"], Iterable[str]]


@dataclass(frozen=True)
class Baseline:
    """A no-knowledge answering rule for the shortcut audit: ``predict`` picks an option index from what a
    model sees (question and options), or None where the rule does not apply (it abstains: the rule is scored
    over the items it applies to). ``mirror`` names the rule that picks the opposite (shortest for longest).
    ``predict_all``, where given, is the same rule over a whole split at once, for speed: given the split's
    columns (:class:`builders.core.validation.audit.SplitColumns`), an array of picks, -1 where it abstains;
    it picks what ``predict`` picks, item by item."""

    name: str
    description: str
    predict: Callable[[MCQRecord], int | None]
    mirror: str | None = None
    predict_all: Callable[[Any], Any] | None = None


def only_two_options(rule: Callable[[MCQRecord], int | None]) -> Callable[[MCQRecord], int | None]:
    """The mirror of a rule that picks a marked option: in a 2-option item where it applies, the other option;
    elsewhere it abstains (from 3 options no single option is the opposite of a marked one). Here, beside
    :class:`Baseline`, not in the audit: a builder declares its rules with it, and its ``--help`` imports no numpy."""
    def predict(record: MCQRecord) -> int | None:
        picked = rule(record) if len(record.choices) == 2 else None
        return None if picked is None else 1 - picked
    return predict


@dataclass(frozen=True)
class TaskLocation:
    """Where the lm-eval tasks of a release read it: the published repo and tag, or (None) the release
    folder the tasks sit in."""

    repo_id: str | None = None
    revision: str | None = None  # the release tag, "vX.Y.Z"


@dataclass(frozen=True)
class About:
    """What a builder declares of itself, filled in by the core: its name, the release's title, the method's
    citation, its card (``cards/<builder>.md`` unless named) and the config that holds the source unchanged (a
    shortcut it carries is the source's, and another config no further above chance on that rule is marked as
    inheriting it: :func:`builders.core.validation.audit.inherit_from_source`)."""

    builder: str
    title: str
    citation: str
    card_template: str | None = None
    unchanged_config: str | None = None
    default_config: str | None = None  # the config its paper evaluates, which `load_dataset(repo)` returns

@dataclass(kw_only=True)
class Release:
    """What a builder's ``build`` returns beside the configs, which the core's run made.

    ``metadata_features``: {config: {field: feature}} of the records' metadata; ``extra_columns``: {config:
    {column: feature}}, top-level columns beyond the base ones, read from ``MCQRecord.columns``. ``checks``: the
    builder's invariants, written independently of the code that built the items. ``statistics``: tables of
    numbers, rendered once by the release writer. ``lm_eval_tasks`` renders the release's lm-eval task folder for
    where the release is read from. ``baselines``: the builder's own shortcut-audit rules; ``inherent_baselines``
    names the baselines (or the choices-only model, ``choices_only_model``) that beat chance by design, with the
    reason (keyed ``"<config>/<name>"`` or ``"<name>"``). ``rows_in``: the rows per split, when they are not the
    source's (PythonIO counts one row per assert).
    """

    metadata_features: Mapping[str, Mapping[str, Any]]
    extra_columns: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    statistics: Statistics = field(default_factory=Statistics)
    extra_files: dict[str, bytes] = field(default_factory=dict)
    card_context: dict[str, Any] = field(default_factory=dict)
    lm_eval_tasks: Callable[[TaskLocation], dict[str, bytes]] | None = None
    baselines: list[Baseline] = field(default_factory=list)
    inherent_baselines: dict[str, str] = field(default_factory=dict)
    rows_in: dict[str, int] | None = None
    # items the builder doubts, for the release's review queue (builders.core.items.review.ReviewEntry)
    review: list[Any] = field(default_factory=list)


@dataclass(kw_only=True)
class Build:
    """One build, before validation and writing: what the builder declares of itself, the source, the options it
    records, the configs and what became of every row (the outcome counts per config and split, and the
    exclusions: an exclusion whose ``config`` is None applies to every config), and the builder's release parts."""

    about: About
    source: LoadedSource
    params: dict[str, Any]
    configs: Configs
    exclusions: ExclusionLog
    outcomes: Outcomes
    rows_in: dict[str, int]
    release: Release

    def records(self) -> Iterable[tuple[str, str, list[MCQRecord]]]:
        for config, splits in self.configs.items():
            for split, records in splits.items():
                yield config, split, records

    @property
    def default_config(self) -> str:
        """The config ``load_dataset(repo)`` returns, with no config named: the builder's, or the first."""
        default = self.about.default_config or next(iter(self.configs))
        if default not in self.configs:
            raise ValueError(f"{self.about.builder}: the default config {default!r} is not one of the build's configs")
        return default
