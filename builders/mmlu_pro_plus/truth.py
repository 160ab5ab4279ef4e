"""The truth check of a new TPP option (``--validate-with MODEL``): a second model confirms that the option is a
correct answer before it becomes half of a key "Both X and Y are correct".

The form rules (:func:`.generation.rejection_reason`) and the similarity cut-off see an option's form, not its truth:
with a small generator, 16 of 25 options they accepted were false. So each option that passes them is shown to the
judge as one more option of its question, after the original ones, with the shared prompt of
:mod:`builders.core.llm.correct_options`: the judge names every option that answers the question correctly. The new
option is kept only when it is among them; otherwise it is rejected like any other option (the candidate falls back,
and the next one in the ranking is asked): ``judged_incorrect``, or ``judge_failed`` when the request failed or the
reply was no JSON list of letters, twice (an option no one confirmed is not used).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Sequence

from builders.core.items.record import LETTERS, MCQRecord
from builders.core.llm.correct_options import TEMPLATE_VERSION, judge_correct_options

logger = logging.getLogger(__name__)

JUDGED_INCORRECT, JUDGE_FAILED = "judged_incorrect", "judge_failed"


@dataclass
class TruthCheck:
    """The judge of the new TPP options, and its counts over the build's rounds."""

    client: Any  # builders.core.llm.settings.LLMClient
    asked: int = 0
    confirmed: int = 0
    rejected: int = 0
    failed: int = 0

    @property
    def model(self) -> str:
        return self.client.model

    def close(self) -> None:
        self.client.close()

    def confirm(self, records: Sequence[MCQRecord], proposals: list[Any]) -> list[Any]:
        """``proposals`` (:class:`.generation.Proposal`, one per record), with the accepted options the judge does
        not confirm rejected."""
        open_ = [i for i, p in enumerate(proposals) if p.accepted]
        questions = [(records[i].question, (*records[i].choices, proposals[i].option)) for i in open_]
        judgements = judge_correct_options(self.client, questions, desc="MMLU-Pro+ truth check")
        self.asked += len(open_)
        checked = list(proposals)
        for i, judgement in zip(open_, judgements, strict=True):
            new = len(records[i].choices)  # the new option's index, as the judge saw it
            if judgement.correct is None:
                self.failed += 1
                checked[i] = replace(proposals[i], reason=JUDGE_FAILED,
                                     detail=f"{self.model}: {judgement.error}"[:300])
            elif new in judgement.correct:
                self.confirmed += 1
            else:
                self.rejected += 1
                checked[i] = replace(proposals[i], reason=JUDGED_INCORRECT,
                                     detail=f"{self.model} called {judgement.letters()} correct, not the new option "
                                            f"{LETTERS[new]}")
        for i in open_:
            if not checked[i].accepted:
                logger.info("TPP option for %s not confirmed (%s) %s", checked[i].item_id, checked[i].reason,
                            checked[i].detail)
        return checked

    def card(self) -> dict[str, Any]:
        return {"model": self.model, "template": TEMPLATE_VERSION, "asked": self.asked, "confirmed": self.confirmed,
                "rejected": self.rejected, "failed": self.failed, "usage": self.client.usage_summary()}
