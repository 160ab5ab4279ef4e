"""GSM-MC's sources: GSM8K (the gold is the ``#### N`` line of its ``answer``) and GSM8K-Platinum, its revision
with relabelled and removed questions."""

from __future__ import annotations

import re

from builders.core.errors import MalformedRow
from builders.core.items.outcomes import Exclude
from builders.core.items.record import OpenItem, Value
from builders.core.sources import fields
from builders.core.sources.loading import Benchmark, RowContext

from .answers import NUMBER, gold_answer

NAME = "gsm_mc"

GSM8K_CITATION = """@article{cobbe2021gsm8k,
  title={Training Verifiers to Solve Math Word Problems},
  author={Cobbe, Karl and Kosaraju, Vineet and Bavarian, Mohammad and Chen, Mark and Jun, Heewoo and Kaiser, Lukasz and Plappert, Matthias and Tworek, Jerry and Hilton, Jacob and Nakano, Reiichiro and Hesse, Christopher and Schulman, John},
  journal={arXiv preprint arXiv:2110.14168},
  year={2021}
}"""


PLATINUM_CITATION = """@article{vendrow2025platinum,
  title={Do Large Language Model Benchmarks Test Reliability?},
  author={Vendrow, Joshua and Vendrow, Edward and Beery, Sara and Madry, Aleksander},
  journal={arXiv preprint arXiv:2502.03461},
  year={2025}
}"""


_GOLD_LINE = re.compile(r"####\s*(.+?)\s*$", re.MULTILINE)
# The whole key line is one number as GSM8K writes it ("1,500", "-3", "$18", "3.5"): "1e999", "1,5" or "12 or 13"
# would otherwise be read by their first number.
_PLAIN_KEY = re.compile(r"\$?\s*(?:" + NUMBER + ")")


def gsm8k_item(row: dict, ctx: RowContext, metadata: dict | None = None) -> OpenItem:
    row_id = f"{ctx.benchmark}/{ctx.split}/{ctx.index}"
    question = fields.text(row, "question", row_id, non_empty=True)
    answer = fields.text(row, "answer", row_id, non_empty=True)
    gold = gold_answer(answer)
    if gold is None:
        raise Exclude("no_gold_answer", "answer", "no '#### N' line with a number")
    gold_text = _GOLD_LINE.findall(answer)[-1]
    if not _PLAIN_KEY.fullmatch(gold_text):
        raise Exclude("gold_not_a_number", "answer", f"'#### {gold_text:.40}' is not one plain number")
    return OpenItem(row_id, ctx.split, ctx.index, question, gold, gold_text, answer, ctx.config,
                    metadata=metadata or {})


# GSM8K-Platinum's ``cleaning_status``, as its dataset card describes it: "consensus" (every model of the
# authors' panel gave the key, so nobody re-read it), "verified" (re-read by hand and kept), "revised" (re-read
# and relabelled or reworded). Questions the authors judged poorly written were removed from the dataset; a
# row that still carries such a status is excluded with it.
PLATINUM_KEPT = ("consensus", "verified", "revised")


PLATINUM_REMOVED = ("removed", "rejected")


def platinum_item(row: dict, ctx: RowContext) -> OpenItem:
    row_id = f"{ctx.benchmark}/{ctx.split}/{ctx.index}"
    status = fields.text(row, "cleaning_status", row_id, non_empty=True).strip().lower()
    if status in PLATINUM_REMOVED:
        raise Exclude("removed_by_platinum", "cleaning_status", f"GSM8K-Platinum marks the question {status!r}")
    if status not in PLATINUM_KEPT:
        raise MalformedRow(row_id, "cleaning_status", f"unknown status {status!r:.40} (expected one of "
                           f"{', '.join(PLATINUM_KEPT + PLATINUM_REMOVED)})")
    return gsm8k_item(row, ctx, {"cleaning_status": status})


GSM8K = Benchmark(name="gsm8k", hub_id="openai/gsm8k", config="main", splits=("train", "test"), to_item=gsm8k_item,
                  license="mit", citation=GSM8K_CITATION, pretty_name="GSM8K")


GSM8K_PLATINUM = Benchmark(name="gsm8k_platinum", hub_id="madrylab/gsm8k-platinum", config="main", splits=("test",),
                           to_item=platinum_item, license="mit", citation=PLATINUM_CITATION + "\n\n" + GSM8K_CITATION,
                           pretty_name="GSM8K-Platinum",
                           metadata_features={"cleaning_status": Value("string")})
