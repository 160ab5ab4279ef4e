"""SBA metrics: ROC AUC, precision, recall and F1 for the positive class (SBA), the share of questions
flagged next to the share labelled SBA, the confusion matrix, and the threshold that reaches a target
recall together with the precision it costs."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np


@dataclass(frozen=True)
class Metrics:
    """Counts and rates at one threshold; SBA is the positive class."""

    threshold: float
    n: int
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def precision(self) -> float | None:
        """None when no question is flagged: there is nothing to be precise about (not 0.0)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """None when no question is labelled SBA."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def flagged_share(self) -> float | None:
        """Share of questions called SBA: WiCkeD copies these unchanged (None with no question)."""
        return (self.tp + self.fp) / self.n if self.n else None

    @property
    def labelled_share(self) -> float | None:
        """Share of questions labelled SBA: what a perfect classifier would flag (None with no question)."""
        return (self.tp + self.fn) / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        rates = {name: getattr(self, name) for name in ("precision", "recall", "f1", "flagged_share", "labelled_share")}
        return {**asdict(self), **{name: None if value is None else round(value, 4) for name, value in rates.items()}}


def shown(value: float | None, spec: str = ".3f") -> str:
    """A rate as the tables write it: "n/a" where there is nothing to count."""
    return "n/a" if value is None else format(value, spec)


def metrics_at(is_sba: Sequence[bool], scores: Sequence[float], threshold: float) -> Metrics:
    truth = np.asarray(is_sba, dtype=bool)
    predicted = np.asarray(scores, dtype=np.float64) >= threshold
    return Metrics(
        threshold=float(threshold), n=int(truth.size),
        tp=int(np.sum(truth & predicted)), fp=int(np.sum(~truth & predicted)),
        fn=int(np.sum(truth & ~predicted)), tn=int(np.sum(~truth & ~predicted)),
    )


def roc_auc(is_sba: Sequence[bool], scores: Sequence[float]) -> float | None:
    """The chance that a random SBA question scores above a random SCA one (ties count half); None
    unless both labels occur."""
    truth = np.asarray(is_sba, dtype=bool)
    values = np.asarray(scores, dtype=np.float64)
    positives, negatives = int(truth.sum()), int((~truth).sum())
    if not positives or not negatives:
        return None
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = ((ends - counts + 1 + ends) / 2)[inverse]  # 1-based ranks, ties at their average
    return float((ranks[truth].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def threshold_for_recall(is_sba: Sequence[bool], scores: Sequence[float], target_recall: float) -> float:
    """The highest threshold whose SBA recall is at least ``target_recall``.

    It is the score of the k-th highest-scored SBA question, k = ceil(target x positives): every
    threshold above it misses one SBA too many, and lower ones only cost precision.
    """
    if not 0.0 < target_recall <= 1.0:
        raise ValueError("target recall must be in (0, 1]")
    truth = np.asarray(is_sba, dtype=bool)
    positives = np.sort(np.asarray(scores, dtype=np.float64)[truth])[::-1]
    if positives.size == 0:
        raise ValueError("no SBA question among the labels: no threshold can be chosen for a recall target")
    needed = max(1, math.ceil(target_recall * positives.size - 1e-9))
    return float(positives[needed - 1])


def confusion_table(m: Metrics) -> str:
    return "\n".join([
        "| | predicted SBA | predicted SCA |",
        "|---|---|---|",
        f"| labelled SBA | {m.tp} | {m.fn} |",
        f"| labelled SCA | {m.fp} | {m.tn} |",
    ])


def metrics_row(name: str, m: Metrics, auc: float | None) -> str:
    return (f"| {name} | {m.n} | {m.tp + m.fn} | {shown(auc)} | {shown(m.precision)} | {shown(m.recall)} | "
            f"{shown(m.f1)} | {shown(m.flagged_share)} | {shown(m.labelled_share)} |")


METRICS_HEADER = ("| set | questions | labelled SBA | ROC AUC | precision | recall | F1 | share flagged SBA "
                  "| share labelled SBA |\n|---|---|---|---|---|---|---|---|---|")


@dataclass(frozen=True)
class Evaluation:
    """What ``evaluate`` reports: at the model's threshold and at the one chosen for a target recall."""

    model: str
    labels_file: str
    threshold: float
    target_recall: float
    chosen_threshold: float
    overall: Metrics
    at_target: Metrics
    per_source: dict[str, Metrics]
    per_source_at_target: dict[str, Metrics]
    auc: float | None
    per_source_auc: dict[str, float | None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "labels_file": self.labels_file, "threshold": self.threshold,
            "target_recall": self.target_recall, "chosen_threshold": self.chosen_threshold,
            "auc": self.auc, "per_source_auc": self.per_source_auc,
            "overall": self.overall.to_dict(), "at_target": self.at_target.to_dict(),
            "per_source": {k: v.to_dict() for k, v in self.per_source.items()},
            "per_source_at_target": {k: v.to_dict() for k, v in self.per_source_at_target.items()},
        }

    def to_markdown(self) -> str:
        lines = [
            f"SBA classifier `{self.model}` on `{self.labels_file}`.", "",
            f"### At the model's threshold {self.threshold:.4f}", "",
            METRICS_HEADER, metrics_row("all", self.overall, self.auc),
            *[metrics_row(source, m, self.per_source_auc[source]) for source, m in self.per_source.items()], "",
            confusion_table(self.overall), "",
            f"### At the threshold for recall >= {self.target_recall}: {self.chosen_threshold:.4f}", "",
            f"Reaching recall {shown(self.at_target.recall)} costs precision {shown(self.at_target.precision)} "
            f"(flags {shown(self.at_target.flagged_share, '.1%')} of the questions as SBA).", "",
            METRICS_HEADER, metrics_row("all", self.at_target, self.auc),
            *[metrics_row(source, m, self.per_source_auc[source]) for source, m in self.per_source_at_target.items()], "",
            confusion_table(self.at_target),
        ]
        return "\n".join(lines)


def evaluate_scores(model: str, labels_file: str, sources: Sequence[str], is_sba: Sequence[bool],
                    scores: Sequence[float], threshold: float, target_recall: float) -> Evaluation:
    truth = np.asarray(is_sba, dtype=bool)
    values = np.asarray(scores, dtype=np.float64)
    chosen = threshold_for_recall(truth, values, target_recall)
    names = np.asarray(sources)

    def by_source(t: float) -> dict[str, Metrics]:
        return {s: metrics_at(truth[names == s], values[names == s], t) for s in sorted(set(sources))}

    return Evaluation(
        model=model, labels_file=labels_file, threshold=float(threshold), target_recall=target_recall,
        chosen_threshold=chosen, overall=metrics_at(truth, values, threshold), at_target=metrics_at(truth, values, chosen),
        per_source=by_source(threshold), per_source_at_target=by_source(chosen), auc=roc_auc(truth, values),
        per_source_auc={s: roc_auc(truth[names == s], values[names == s]) for s in sorted(set(sources))},
    )
