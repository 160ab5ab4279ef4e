"""The card's picture, ``summary.png`` in the release folder (the Hub renders images kept in the repo): what
became of the rows of every config (altered, copied unchanged, excluded) and where the answers sit in the default
config, against an even spread.

The same build gives the same bytes: matplotlib's Agg renderer with its own font, no date or software version in
the PNG's metadata, and figures drawn from counts only. So the PNG is kept in the mcqforge cache by what it is drawn
from (:mod:`builders.core.runtime.cache`): a rebuild neither imports matplotlib nor draws (half a CPU second).
"""

from __future__ import annotations

import io
from functools import lru_cache

from builders.core.build.result import Build
from builders.core.items.outcomes import ALTERED, COPIED, EXCLUDED
from builders.core.items.record import LETTERS
from builders.core.runtime import cache
from builders.core.validation.validate import ValidationReport

FIGURE_FILE = "summary.png"
MAX_CONFIGS = 30  # a perturbations release has 29 configs; more would not be legible, and the tables hold them all
COLOURS = {ALTERED: "#2b6cb0", COPIED: "#a0aec0", EXCLUDED: "#c53030"}
DPI = 100
CACHE_FOLDER = "figures"


def row_outcomes(build: Build) -> dict[str, dict[str, int]]:
    """{config: {outcome: items over every split}}, in release order."""
    outcomes = {}
    for config in build.configs:
        excluded = sum(1 for entry in build.exclusions.entries if entry.config in (None, config))
        outcomes[config] = {ALTERED: build.outcomes.total(ALTERED, config=config),
                            COPIED: build.outcomes.total(COPIED, config=config), EXCLUDED: excluded}
    return outcomes


def summary_figure(build: Build, report: ValidationReport) -> bytes:
    """The PNG: left, the outcome of the rows per config; right, the default config's answer positions."""
    outcomes = list(row_outcomes(build).items())[:MAX_CONFIGS]
    positions = report.answer_positions.get(build.default_config, {})
    key = cache.key_of([_code_version(), outcomes, build.default_config, positions]) + ".png"
    png = cache.read_kept(CACHE_FOLDER, key)
    if png is None:
        png = _drawn(outcomes, build.default_config, positions)
        cache.keep(CACHE_FOLDER, key, png)
    return png


@lru_cache(maxsize=1)
def _code_version() -> str:
    return cache.code_version(["core/release/figure.py"], ["matplotlib", "pillow", "numpy"])


def _drawn(outcomes: list[tuple[str, dict[str, int]]], config: str, positions: dict[str, dict[str, int]]) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, max(3.0, 1.2 + 0.24 * len(outcomes))), dpi=DPI)
    FigureCanvasAgg(figure)
    rows, columns = figure.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    _outcome_bars(rows, outcomes)
    _position_bars(columns, config, positions)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def _outcome_bars(axes, outcomes: list[tuple[str, dict[str, int]]]) -> None:
    names = [name for name, _ in outcomes][::-1]
    left = [0] * len(names)
    for outcome, colour in COLOURS.items():
        widths = [counts[outcome] for _, counts in outcomes][::-1]
        axes.barh(names, widths, left=left, color=colour, label=outcome)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axes.set_title("What became of the rows, per config", fontsize=10)
    axes.set_xlabel("items (every split)", fontsize=9)
    axes.tick_params(labelsize=8)
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=3, frameon=False)


def _position_bars(axes, config: str, splits: dict[str, dict[str, int]]) -> None:
    letters = [letter for letter in LETTERS if any(letter in counts for counts in splits.values())]
    width = 0.8 / max(len(splits), 1)
    for i, (split, counts) in enumerate(splits.items()):
        total = sum(counts.values()) or 1
        axes.bar([j + i * width for j in range(len(letters))], [counts.get(letter, 0) / total for letter in letters],
                 width=width, label=f"{split} ({total})")
    if letters:
        axes.axhline(1 / len(letters), color="black", linestyle="--", linewidth=1, label="even spread")
    axes.set_xticks([j + 0.4 - width / 2 for j in range(len(letters))], letters)
    axes.set_title(f"Answer positions in `{config}`", fontsize=10)
    axes.set_ylabel("share of items", fontsize=9)
    axes.tick_params(labelsize=8)
    axes.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=4, frameon=False)
