"""The builder's invariants, written apart from the code that built the items: how a reader takes the options
(:func:`_reads_as`, :func:`_as_named`) is this module's own, not the builder's normaliser or layout code."""

from __future__ import annotations

import re
from typing import Iterable

from builders.core.build.result import Build, Check
from builders.core.items.record import LETTERS, MCQRecord

from .groups import CFPP, CONFIG, NON_LLM_TYPE, ORIGINAL_CONFIG, PFPP, TPP, UNCHANGED


def _originals(build: Build) -> dict[str, MCQRecord]:
    return {r.id: r for records in build.source.items.values() for r in records}


def _each(build: Build):
    originals = _originals(build)
    for config, split, records in build.records():
        if config != CONFIG:
            continue
        for record in records:
            yield f"{config}/{split} {record.id}", record, originals[record.id]


def _one_answer(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        group, meta = record.columns["modification"], record.metadata
        pairs = sum(1 for c in record.choices if c.startswith("Both ") and c.endswith(" are correct"))
        expected_pairs = 0 if group == UNCHANGED else 1
        expected_answer = meta["pair_option_index"] if group == TPP else original.answer
        if pairs - sum(1 for c in original.choices if c.startswith("Both ") and c.endswith(" are correct")) != expected_pairs:
            yield f"{where}: {pairs} pair options for group {group}"
        elif record.answer != expected_answer:
            yield f"{where}: answer {record.answer}, expected {expected_answer} for group {group}"


def _pair_names_two_options(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        meta = record.metadata
        if record.columns["modification"] == UNCHANGED:
            if meta["pair_indices"] is not None or meta["pair_option_index"] is not None:
                yield f"{where}: unchanged item has pair fields"
            continue
        x, y = meta["pair_indices"]
        pair = meta["pair_option_index"]
        if not (0 <= x < pair and 0 <= y < pair and x != y and pair == len(record.choices) - 1):
            yield f"{where}: pair indices {[x, y]} / pair option {pair} out of place"
        elif record.choices[pair] != f"Both {_as_named(record.choices[x])} and {_as_named(record.choices[y])} are correct":
            yield f"{where}: the pair option does not name options {LETTERS[x]} and {LETTERS[y]}"


def _as_named(option: str) -> str:
    """How a pair must name an option, written here apart from the builder's layout code: whitespace folded,
    trailing spaces and periods dropped."""
    return " ".join(option.split()).rstrip(" .")


def _pair_answer_by_group(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        group, meta = record.columns["modification"], record.metadata
        if group == UNCHANGED:
            continue
        x, y = meta["pair_indices"]
        added = meta["added_option_index"]
        # Where the original answer sits now: one further on when the added TPP option went before it.
        answer_now = original.answer + (added is not None and original.answer >= added)
        pair_is_answer = record.answer == meta["pair_option_index"]
        if pair_is_answer != (group == TPP):
            yield f"{where}: pair option {'is' if pair_is_answer else 'is not'} the answer in group {group}"
        elif group == TPP and {x, y} != {answer_now, added}:
            yield f"{where}: TPP pair is not (original answer, added option)"
        elif group == PFPP and (answer_now not in (x, y) or x == y):
            yield f"{where}: PFPP pair is not (answer, wrong option)"
        elif group == CFPP and answer_now in (x, y):
            yield f"{where}: CFPP pair contains the answer"


def _originals_kept(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        size = len(original.choices)
        added = {record.metadata["added_option_index"], record.metadata["pair_option_index"]}
        kept = tuple(c for i, c in enumerate(record.choices) if i not in added)
        if kept != original.choices or record.question != original.question:
            yield f"{where}: the original question or options changed"
        elif record.metadata["original_answer_index"] != original.answer:
            yield f"{where}: original_answer_index {record.metadata['original_answer_index']} != {original.answer}"
        elif len(record.choices) - size != {TPP: 2, PFPP: 1, CFPP: 1, UNCHANGED: 0}[record.columns["modification"]]:
            yield f"{where}: {len(record.choices) - size} options added for group {record.columns['modification']}"


def _added_option_unique(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        added = record.metadata["added_option_index"]
        if added is None:
            continue
        # a plainer rule than the builder's rejection (no number canonicalisation), so it can only flag less
        folded = _folded(record.choices[added])
        if any(_folded(c) == folded for c in original.choices):
            yield f"{where}: the added option duplicates an original option"
        unlabelled = _unlabelled(record.choices[added])
        if unlabelled and any(_folded(c) == unlabelled for c in original.choices):
            yield f"{where}: the added option is an original option behind a label"


_LABEL_WORDS = {"option", "choice", "answer"}


def _unlabelled(option: str) -> str | None:
    """The option's words after a first word that is a label ("b.", "(b)", "2)", "b:"), folded; read word by word,
    apart from the builder's rule."""
    words = option.split()
    if words and words[0].casefold() in _LABEL_WORDS:
        words = words[1:]
    if len(words) < 2:
        return None
    label = words[0].strip("()")
    marked = words[0] != label or words[0].endswith((".", ":"))
    label = label.rstrip(".:")
    if marked and (len(label) == 1 and label.isalpha() or label.isdigit() and len(label) <= 2):
        return _folded(" ".join(words[1:]))
    return None


def _folded(option: str) -> str:
    return " ".join(option.split()).casefold().strip(" .,;:!?\"'`")


def _compatibility_columns(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        group, columns = record.columns["modification"], record.columns
        expected = (group == TPP, group in NON_LLM_TYPE, NON_LLM_TYPE.get(group))
        if (columns["is_modified"], columns["is_modified_non_llm"], columns["modification_type_non_llm"]) != expected:
            yield f"{where}: compatibility flags disagree with modification {group}"


def _hub_columns(build: Build) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            columns = record.columns
            if (columns.get("options") != list(record.choices) or columns.get("answer_index") != record.answer
                    or columns.get("answer") != LETTERS[record.answer]
                    or columns.get("question_id") != record.metadata.get("question_id")):
                yield f"{config}/{split} {record.id}: MMLU-Pro columns disagree with the choices and answer"


def _original_config(build: Build) -> Iterable[str]:
    originals = _originals(build)
    for split, records in build.configs.get(ORIGINAL_CONFIG, {}).items():
        for record in records:
            source = originals.get(record.id)
            if source is None or (record.question, record.choices, record.answer) != \
                    (source.question, source.choices, source.answer):
                yield f"{ORIGINAL_CONFIG}/{split} {record.id}: differs from the MMLU-Pro item"


_BOTH_WORD = re.compile(r"(?i)^[^\w]*both(?!\w)")
_THOUSANDS = re.compile(r"[+-]?\d{1,3}(?:,\d{3})+(?:\.\d*)?")
_SAYS_CORRECT = re.compile(r"(?i)(?<!\w)(?:correct|true|right|valid)(?!\w)")


def _reads_as(option: str) -> str:
    """How a reader takes an option named in a pair, written apart from the builder's normaliser: folded case,
    spacing and outer punctuation, and a number as its value ("1", "1.0" and "'1'" read alike). A comma is read
    as a thousands separator only between groups of three digits: "0,1" is a list and "305,61" is not 30,561."""
    folded = " ".join(option.split()).casefold().strip(" .,;:!?\"'`")
    if "," in folded and not _THOUSANDS.fullmatch(folded):
        return folded
    try:
        return repr(float(folded.replace(",", "")))
    except ValueError:
        return folded


def _pair_is_unambiguous(build: Build) -> Iterable[str]:
    for where, record, original in _each(build):
        if record.columns["modification"] == UNCHANGED:
            continue
        x, y = record.metadata["pair_indices"]
        read = [_reads_as(c) for c in original.choices]
        if any(_BOTH_WORD.match(record.choices[i]) for i in (x, y)):
            yield f"{where}: the pair names an option that starts with 'Both'"
        elif any(_BOTH_WORD.match(c) and _SAYS_CORRECT.search(c) for c in original.choices):
            yield f"{where}: modified although an original option already says both are correct"
        elif len(set(read)) < len(read):
            yield f"{where}: modified although two original options read alike"


def _unchanged_have_reason(build: Build) -> Iterable[str]:
    for where, record, _ in _each(build):
        if record.columns["modification"] == UNCHANGED and not record.metadata.get("unchanged_reason"):
            yield f"{where}: unchanged without a reason"


CHECKS = [
    Check("one_answer", "exactly one answer: the pair option for TPP, the original answer otherwise, and one pair "
                        "option per modified item", _one_answer),
    Check("pair_names_two_options", "the pair option is last and reads \"Both X and Y are correct\" with two "
                                    "distinct existing options", _pair_names_two_options),
    Check("pair_answer_by_group", "the pair is the answer for TPP only; PFPP pairs the answer with a wrong option, "
                                  "CFPP two wrong options", _pair_answer_by_group),
    Check("originals_kept", "the question and original options are unchanged and in place; the original answer "
                            "index is recorded", _originals_kept),
    Check("added_option_unique", "the added TPP option duplicates no original option (case, spacing, punctuation "
                                 "and number format ignored), nor one behind a letter or number label (\"B. 0.5\" beside 0.5)",
          _added_option_unique),
    Check("compatibility_columns", "is_modified / is_modified_non_llm / modification_type_non_llm agree with "
                                   "modification", _compatibility_columns),
    Check("hub_columns", "MMLU-Pro's options / answer letter / answer_index / question_id agree with the choices, "
                         "the answer and the metadata", _hub_columns),
    Check("pair_is_unambiguous", "no pair names an option starting with 'Both'; no item that already says both "
                                 "are correct, or whose options read alike, is modified", _pair_is_unambiguous),
    Check("unchanged_have_reason", "every unchanged item says why (`unchanged_reason`)", _unchanged_have_reason),
    Check("original_config", f"the `{ORIGINAL_CONFIG}` config holds the MMLU-Pro items unchanged", _original_config),
]
