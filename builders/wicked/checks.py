"""The builder's invariants: written independently of the code that built the items."""

from __future__ import annotations

from builders.core.items.referring import NOTA_TEXT
from builders.core.build.result import Build, Check
from builders.core.validation.referring import referring_options, says_no_answer
from builders.core.validation.validate import option_spelling


def _pairs(build: Build):
    originals = {r.id: r for records in build.configs["original"].values() for r in records}
    for config, split, records in build.records():
        if config != "original":
            for record in records:
                yield config, split, record, originals[record.id]


def _altered(build: Build):
    return ((c, s, r, o) for c, s, r, o in _pairs(build) if r.metadata["removed_index"] is not None)


def _altered_shape(build: Build):
    for config, split, record, original in _altered(build):
        referring = referring_options(record.choices)
        if referring != [NOTA_TEXT]:
            yield f"{config}/{split} {record.id}: options referring to the others: {referring}"
        if len(record.choices) != len(original.choices):
            yield f"{config}/{split} {record.id}: {len(record.choices)} choices, original had {len(original.choices)}"


def _no_reference_altered(build: Build):
    problems: dict[str, list[str]] = {}  # an original's problems, read once for all its variants
    for config, split, record, original in _altered(build):
        if original.id not in problems:
            problems[original.id] = _reference_problems(original.choices)
        for problem in problems[original.id]:
            yield f"{config}/{split} {record.id}: altered, but {problem}"


def _reference_problems(choices: tuple[str, ...]) -> list[str]:
    found = []
    referring = referring_options(choices)
    none_like = [c for c in choices if says_no_answer(c)]
    if referring:
        found.append(f"option {referring[0]!r} refers to the others")
    elif none_like:  # "None is correct" is one problem, not two
        found.append(f"option {none_like[0]!r} already says there is no answer")
    if len({option_spelling(c) for c in choices}) < len(choices):
        found.append("two options are the same text")
    return found


def _gold_tracked(build: Build):
    for config, split, record, original in _altered(build):
        nota_answer = record.choices[record.answer] == NOTA_TEXT
        if nota_answer != record.metadata["nota_is_answer"]:
            yield f"{config}/{split} {record.id}: nota_is_answer flag disagrees with the answer"
        elif not nota_answer and record.choices[record.answer] != original.gold:
            yield f"{config}/{split} {record.id}: answer text changed from {original.gold!r}"
        elif nota_answer and original.gold in record.choices:
            yield f"{config}/{split} {record.id}: NOTA is the answer but the gold text is still present"


def _unaltered_equal(build: Build):
    for config, split, record, original in _pairs(build):
        if record.metadata["removed_index"] is None and (
            (record.question, record.choices, record.answer) != (original.question, original.choices, original.answer)
        ):
            yield f"{config}/{split} {record.id}: copied item differs from the original"


def _sba_copied(build: Build):
    for config, split, record, _ in _pairs(build):
        if record.metadata["is_sba"] and record.metadata["removed_index"] is not None:
            yield f"{config}/{split} {record.id}: flagged SBA but altered"


CHECKS = [
    Check("one_nota_same_length", "every altered item has as many choices as the original, and its only option that "
          "refers to the others is the added NOTA (the validator's word-level detector, not the builder's)", _altered_shape),
    Check("no_reference_altered", "no altered item had an option referring to the others, an option that already "
          "says there is no answer (\"None, because ...\", \"I have no comment.\"), or two equal options (the same "
          "word-level reading)", _no_reference_altered),
    Check("gold_tracked", "choices[answer] is the original gold text, or NOTA when the gold was removed (then absent)", _gold_tracked),
    Check("unaltered_equal_original", "items copied unchanged (SBA or skipped) equal the original", _unaltered_equal),
    Check("sba_copied_unchanged", "no item flagged SBA was altered", _sba_copied),
]
