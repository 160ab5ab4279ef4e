"""An item a person should look at: what the release's review queue (``review.jsonl``, ``review.html``) holds.

Each entry is a correction with its decision left empty (the corrections file's format,
:mod:`builders.core.sources.corrections`): the reviewer fills in ``action`` (``set_answer`` with ``answer``, or
``exclude``), ``reason`` and ``by``, and passes the file back as ``--corrections``. ``evidence`` says why the item is
queued (``queued_for``), shows the item as the source has it (``item``) and what was found (the models' votes, the
other item of a conflicting pair, the errata's error type, the SBA score); ``suggestion`` is the decision the
evidence points to, when it points to one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from builders.core.items.record import MCQRecord


@dataclass(frozen=True)
class ReviewEntry:
    """One queued item: its id, why it is queued, what became of it in this build, and the evidence."""

    id: str
    queued_for: str  # suspect_key, conflicting_duplicate, errata_kept, sba_near_threshold, ...
    status: str  # what this build did with it: "excluded", "kept", "altered"...
    item: Mapping[str, Any]  # {question, choices, answer} as the source has it
    evidence: Mapping[str, Any] = field(default_factory=dict)
    suggestion: Mapping[str, Any] = field(default_factory=dict)  # {action, answer?}: what the evidence points to

    def to_json(self) -> dict[str, Any]:
        """The entry as a line of ``review.jsonl``: an undecided correction carrying its evidence."""
        evidence = {"queued_for": self.queued_for, "status": self.status, "item": dict(self.item),
                    **dict(self.evidence)}
        if self.suggestion:
            evidence["suggestion"] = dict(self.suggestion)
        return {"id": self.id, "action": "", "answer": None, "reason": self.queued_for, "by": "", "evidence": evidence}


def shown_item(record: MCQRecord) -> dict[str, Any]:
    """An item as a reader of the source sees it: the question, the options, the key's index."""
    return {"question": record.question, "choices": list(record.choices), "answer": record.answer}
