"""The SBA decision: the classifier or the judge, once per distinct item, and what the card says about it."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

from builders.core.items.record import MCQRecord
from builders.core.items.review import ReviewEntry, shown_item
from builders.core.llm import settings as llm
from classifiers.sba_model import EVALUATIONS_FILE

from .review_cues import best_answer_nota_keyed

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class KnownSBAShare:
    """What the project's SBA labels say of a source: of its labelled items that WiCkeD alters, how many are
    single-best-answer (with the key removed, a remaining option is still acceptable: keyed "None of the above",
    such an item has two defensible answers)."""

    nota_keyed: int  # labelled items WiCkeD alters: each is NOTA-keyed in the variants that remove its key
    still_acceptable: int  # of those, labelled SBA
    reading: str
    measured_on: str  # the source whose labels these are: the benchmark's own, or the closest one

    @property
    def share(self) -> float:
        return self.still_acceptable / self.nota_keyed


_LABELS = ("the project's SBA labels (version 2, train and eval: each item labelled SBA names the remaining option "
           "that would stay acceptable), over the labelled {source} items WiCkeD alters")
# Measured by benchmarks/sba_share.py on shared/data/sba_labels (an item's own skip rules applied first).
SBA_LABEL_SHARES = {
    "mmlu": KnownSBAShare(816, 59, _LABELS.format(source="MMLU"), "mmlu"),
    "mmlu_pro": KnownSBAShare(842, 162, _LABELS.format(source="MMLU-Pro"), "mmlu_pro"),
    "truthful_qa": KnownSBAShare(550, 3, _LABELS.format(source="TruthfulQA"), "truthful_qa"),
    "commonsense_qa": KnownSBAShare(857, 263, _LABELS.format(source="CommonsenseQA"), "commonsense_qa"),
}
# A source without labels of its own reads the closest labelled one, named as such: MMLU-Redux is a re-annotated
# MMLU subset; ARC, grade-school science exam questions, is closest to MMLU's exam questions.
CLOSEST_LABELLED = {"mmlu_redux": "mmlu", "arc_challenge": "mmlu"}
KNOWN_SBA_SHARES = {**SBA_LABEL_SHARES, **{name: SBA_LABEL_SHARES[closest] for name, closest in CLOSEST_LABELLED.items()}}


@dataclass(frozen=True)
class SBAVerdict:
    """What decided whether an item is SBA: a classifier score, a judge's label (None: the judgement failed)."""

    is_sba: bool
    score: float | None = None
    judge: str | None = None
    judge_failed: bool = False


NOT_JUDGED = SBAVerdict(False)


def sba_key(record: MCQRecord) -> tuple:
    return record.question, record.choices, record.answer


@dataclass
class SBADecisions:
    """The verdict for each distinct (question, choices, answer), and what the card says about how."""

    verdicts: dict[tuple, SBAVerdict]
    card: dict[str, Any] | None  # None: no SBA detection (--sba-classifier none)
    labelled: tuple[dict[str, Any], ...] = ()  # the classifier's recorded evaluations on labelled questions

    def verdict(self, record: MCQRecord) -> SBAVerdict:
        return self.verdicts.get(sba_key(record), NOT_JUDGED)


class SBASettings(Protocol):
    """What decides SBA, as WiCkeD's options give it: the classifier (``sba_classifier`` "none": no decision) or
    the judge, and the judge's endpoint."""

    sba_classifier: str  # a Hub id, a local folder, or "none"
    sba_threshold: float | None  # None: the classifier config's
    sba_batch_size: int
    sba_judge: str | None

    @property
    def classifies(self) -> bool: ...

    @property
    def llm(self) -> llm.LLMSettings: ...


def decide_sba(records: Sequence[MCQRecord], options: SBASettings, benchmark: str) -> SBADecisions:
    keys = list(dict.fromkeys(sba_key(r) for r in records))
    if options.sba_judge:
        return judge_sba(keys, options)
    if not options.classifies:
        return SBADecisions({}, None)
    return classify_sba(keys, options, benchmark)


def classify_sba(keys: Sequence[tuple], options: SBASettings, benchmark: str) -> SBADecisions:
    from classifiers.sba_model import SBAClassifier

    classifier = SBAClassifier.load(options.sba_classifier, threshold=options.sba_threshold)
    scores = classifier.scores(keys, batch_size=options.sba_batch_size)
    verdicts = {key: SBAVerdict(float(score) >= classifier.threshold, float(score)) for key, score in zip(keys, scores, strict=True)}
    card = {"method": "classifier", "name": classifier.name, "revision": classifier.revision,
            "threshold": classifier.threshold, "input": classifier.input_format}
    return SBADecisions(verdicts, card, labelled_shares(options.sba_classifier, classifier.revision, benchmark))


def judge_sba(keys: Sequence[tuple], options: SBASettings) -> SBADecisions:
    """Ask the judge about each distinct item with the version-2 labelling template, through the one LLM
    client (concurrency, retries, on-disk cache: a rerun pays for nothing twice). A reply that does not
    parse, names no valid alternative, or fails is no verdict: the item is copied unchanged."""
    from classifiers.labelling import label_with_llm, load_template

    template = load_template()
    rows = [{"id": f"item-{i}", "question": q, "choices": list(c), "answer": a} for i, (q, c, a) in enumerate(keys)]
    assert options.sba_judge is not None, "decide_sba asks the judge only when there is one"
    with options.llm.client(options.sba_judge) as client:
        run = label_with_llm(rows, client, template)
    logger.info("SBA judge: %s", run.usage)
    verdicts = {key: SBAVerdict(row["label"] == "SBA", judge=row["label"], judge_failed=row["label"] is None)
                for key, row in zip(keys, run.rows, strict=True)}
    counts = Counter(row["label"] or "failed" for row in run.rows)
    card = {"method": "judge", "name": options.sba_judge, "template": template.version, "questions": len(keys),
            "sba": counts["SBA"], "sca": counts["SCA"], "failed": counts["failed"]}
    return SBADecisions(verdicts, card)


def labelled_shares(classifier: str, revision: str, benchmark: str) -> tuple[dict[str, Any], ...]:
    """What ``classifiers.sba evaluate --record`` measured for this benchmark on labelled questions."""
    return tuple({"labels": Path(str(e.get("labels_file", "?"))).name, **e["per_source"][benchmark],
                  "model_threshold": e.get("threshold")}
                 for e in recorded_evaluations(classifier, revision) if benchmark in (e.get("per_source") or {}))


def recorded_evaluations(classifier: str, revision: str) -> list[dict[str, Any]]:
    """The evaluations stored with the classifier: in its folder, or in its Hub repo (none when absent)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    path = Path(classifier)
    try:
        if not path.is_dir():
            commit = revision if re.fullmatch(r"[0-9a-f]{40}", revision) else None
            path = Path(hf_hub_download(classifier, EVALUATIONS_FILE, revision=commit)).parent
        file = path / EVALUATIONS_FILE
        return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else []
    except (OSError, ValueError, EntryNotFoundError) as error:
        logger.info("no recorded evaluation for %s (%s)", classifier, str(error).splitlines()[0][:120])
        return []


def undetected_sba(benchmark: str, sba: SBADecisions, configs) -> dict[str, Any] | None:
    """Without SBA detection: the share of NOTA-keyed items expected to be incoherent (still having an acceptable
    option), from the project's labels of this source (or the closest labelled one), warned in the log and stated
    in the card of every benchmark."""
    known = KNOWN_SBA_SHARES.get(benchmark)
    if sba.card is not None or known is None:
        return None
    altered = [r for records in configs["variant_0"].values() for r in records if r.metadata["removed_index"] is not None]
    nota_keyed = sum(r.metadata["nota_is_answer"] for r in altered)
    expected = known.share * nota_keyed / len(altered) if altered else 0.0
    closest = known.measured_on != benchmark
    warning = {"reading": known.reading, "nota_keyed_read": known.nota_keyed, "still_acceptable": known.still_acceptable,
               "share_of_nota_keyed": known.share, "share_of_altered": expected,
               "measured_on": known.measured_on if closest else None,
               "best_answer_nota_keyed": len(best_answer_nota_keyed({"variant_0": configs["variant_0"]}))}
    instead = f" (no labels of {benchmark}: those of the closest labelled source, {known.measured_on})" if closest else ""
    logger.warning("--sba-classifier none on %s, without single-best-answer detection: in %s%s, %d of %d items are "
                   "SBA, so keyed 'None of the above' they still have an acceptable option; about %.1f%% of this "
                   "build's altered items (variant_0) are expected to have two defensible answers", benchmark,
                   known.reading, instead, known.still_acceptable, known.nota_keyed, 100 * expected)
    return warning


NEAR_THRESHOLD = 0.05  # an SBA score this close to the threshold: the classifier barely decided


def near_threshold(records: list[MCQRecord], sba: SBADecisions, threshold: float | None) -> list[ReviewEntry]:
    """The items whose SBA score lies within :data:`NEAR_THRESHOLD` of the threshold, for a person to look at: a
    little either way and the item would have been altered, or copied unchanged."""
    if threshold is None:
        return []
    entries = []
    for record in records:
        score = sba.verdict(record).score
        if score is not None and abs(score - threshold) < NEAR_THRESHOLD:
            status = "copied unchanged (SBA)" if score >= threshold else "altered"
            entries.append(ReviewEntry(record.id, "sba_near_threshold", status, shown_item(record),
                                       {"sba_score": round(score, 4), "sba_threshold": threshold}))
    return entries
