"""The table `python -m builders evaluate` reports, as the paper's: each model's accuracy on every set, their mean
and spread (and, with ``--open-ended-scores``, the correlation with the models' open-ended accuracy)."""

from __future__ import annotations

from builders.from_predictions.tasks import sets_table as evaluation_table

__all__ = ["evaluation_table"]
