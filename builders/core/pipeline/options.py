"""The options every build shares, and the hooks of a builder's options.

A builder's ``Options`` is a frozen dataclass that extends :class:`BuildOptions` (and the mixins of the option
groups it shares with other builders: the LLM endpoint, a source's own options), each option a field declared
with :func:`~builders.core.options.declare.option`. The core makes it once from the command line, the Python API's
keywords or a ``--config`` file, then calls, on every class of its hierarchy that defines them, base classes first:

* ``check(self)``: the rules between options, one :class:`~builders.core.errors.UserError` line each, before any
  source is read (an option's own range is its type);
* ``derived(self) -> Options``: the options with the defaults that depend on other options filled in (the
  sample's own predictions, a classifier's calibrated threshold), by :func:`dataclasses.replace`. It fills only
  options left unset (None or empty), and what it puts there is what ``build_config.yaml`` records.

The build and everything it calls take the options, never the command line's namespace. The options that say
where a build goes (:class:`Delivery`) are the command line's alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from builders.core.llm.settings import LLMEndpoint, LLMSettings
from builders.core.options.argtypes import positive_int, share
from builders.core.options.declare import option
from builders.core.runtime.models import ModelToLoad
from builders.core.errors import UserError
from builders.core.sources.corrections import read_corrections
from builders.core.sources.errata import errata_of
from builders.core.sources.loading import DEFAULT_MAX_EXCLUDED

SHARED = "source and release (shared by every builder)"


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """The options of every build: the source (``benchmark`` and ``source`` are recorded as the source, not as
    options), the subset of it, the seed, and how malformed rows are treated."""

    GROUP: ClassVar[str] = SHARED

    benchmark: str | None = option(None, recorded=False,
                                   help="source benchmark; each has a default Hub source")
    source: str | None = option(None, metavar="SPEC", recorded=False,
                                help="HUB_ID[:CONFIG][@REVISION], a local file or folder in the Hub dataset's columns "
                                     "(json/jsonl/csv/parquet, one file per split named after the split), or 'sample' "
                                     "for the small sample shipped in the package; default: the benchmark's Hub id")
    seed: int = option(0, help="build seed; every random choice derives from (seed, item content)")
    strict: bool = option(False, help="stop at the first malformed source row instead of excluding it with its reason")
    max_excluded: float = option(DEFAULT_MAX_EXCLUDED, type=share, metavar="SHARE",
                                 help="stop when more than this share of the source rows would be excluded")
    splits: tuple[str, ...] | None = option(None, metavar="SPLIT", help="build only these splits of the source")
    subjects: tuple[str, ...] | None = option(None, metavar="SUBJECT",
                                              help="build only these subjects (MMLU subjects, MMLU-Pro categories, "
                                                   "MATH types, sub-configs)")
    limit: int | None = option(None, type=positive_int, metavar="N",
                               help="build only the first N rows of each evaluation split (of each subject, with "
                                    "--subjects)")
    corrections: Path | None = option(None, metavar="FILE",
                                      help="JSON lines of decisions about items, in the release's ids, applied "
                                           "before the transform: {\"id\", \"action\": \"set_answer\" or "
                                           "\"exclude\", \"answer\": an option's index or text, \"reason\", "
                                           "\"by\"}; copied into the release as corrections.jsonl")
    errata: str | None = option(None, metavar="SPEC",
                                help="the source's curated errata, applied as corrections (MMLU: MMLU-Redux 2.0, "
                                     "edinburgh-dawg/mmlu-redux-2.0): a Hub id or a local copy in its Hub layout. "
                                     "A wrong key that the errata correct is repaired; any other flagged item is "
                                     "excluded with its error type")
    errata_keep_flagged: bool = option(False, help="with --errata: keep the items the errata flag unchanged "
                                                   "(listed in the card) instead of repairing or excluding them")

    def check(self) -> None:
        if self.corrections is not None:
            read_corrections(self.corrections)  # its own faults, before any source is read
        if self.errata is not None and self.benchmark is not None:
            errata_of(self.benchmark)
        if self.errata_keep_flagged and self.errata is None:
            raise UserError("--errata-keep-flagged needs --errata SPEC")

    def llm_models(self) -> list[str]:
        """The LLM models the build will call (their endpoint, the options' ``llm``, is checked before loading)."""
        return []

    def models(self) -> list[ModelToLoad]:
        """The models the build loads on this machine (a classifier, an embedder), checked before loading."""
        return []


@dataclass(frozen=True, kw_only=True)
class Delivery:
    """Where a build goes and how the command line runs it: never an option of the build, never recorded."""

    GROUP: ClassVar[str] = SHARED

    output: Path | None = option(None, metavar="DIR", help="write the release folder here")
    wait_for_output: bool = option(False,
                                   help="when another build is writing --output, wait for it instead of stopping")
    force: bool = option(False, help="let --output replace a release folder that another builder wrote")
    push: str | None = option(None, metavar="REPO_ID",
                              help="validate, publish to this Hub dataset repo and tag the version")
    version: str | None = option(None, metavar="X.Y.Z",
                                 help="release version, required with --push; tagged vX.Y.Z")
    private: bool = option(False, help="create the Hub repo as private")
    message: str | None = option(None, metavar="TEXT",
                                 help="what changed in this release, for the card's changelog")
    config: Path | None = option(None, metavar="FILE",
                                 help="build_config.yaml of an earlier release: its options become the defaults")
    preview: int | None = option(None, type=positive_int, metavar="K",
                                 help="print K transformed items and write nothing (built from the first K items "
                                      "where the builder allows, so that a preview costs few LLM calls)")
    log_level: str = option("INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    no_progress: bool = option(False, help="no progress bars (they show only when stderr is a terminal)")


# The shared options that a build records only when they are set: a build without corrections records what it did
# before they existed, and so rebuilds byte for byte.
RECORDED_WHEN_SET = ("corrections", "errata", "errata_keep_flagged")


def recorded_when_set(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` without the options of :data:`RECORDED_WHEN_SET` left unset."""
    return {name: value for name, value in params.items()
            if name not in RECORDED_WHEN_SET or value not in (None, False)}


def llm_settings(options: BuildOptions) -> LLMSettings:
    """The LLM endpoint of options that name LLM models: they extend the endpoint's options."""
    if not isinstance(options, LLMEndpoint):
        raise TypeError(f"{type(options).__qualname__} names LLM models but has no LLM endpoint options "
                        "(extend builders.core.llm.settings.LLMEndpoint)")
    return options.llm
