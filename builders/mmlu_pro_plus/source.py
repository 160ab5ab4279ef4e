"""The source: MMLU-Pro, keeping ``cot_content`` for the release's MMLU-Pro Hub columns."""

from __future__ import annotations

import dataclasses
from typing import Any

from builders.core.items.record import MCQRecord, Value
from builders.core.sources.benchmarks import BENCHMARKS, mmlu_pro_record
from builders.core.sources.loading import RowContext


def _mmlu_pro_with_cot(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    record = mmlu_pro_record(row, ctx)
    cot = row.get("cot_content")
    return record.with_metadata(cot_content=cot if isinstance(cot, str) else "")


MMLU_PRO = dataclasses.replace(BENCHMARKS["mmlu_pro"], to_item=_mmlu_pro_with_cot,
                               metadata_features={**BENCHMARKS["mmlu_pro"].metadata_features,
                                                  "cot_content": Value("string")})
