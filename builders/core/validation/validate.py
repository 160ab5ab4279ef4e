"""The validator: every build runs it, and nothing is written or published when an invariant breaks.

The common invariants re-count what the build holds (ids, options, answers, rows in = rows out + rows
excluded); the builder adds its own checks, written independently of the code that made the items. The
shortcut audit (:mod:`.audit`) scores no-knowledge answering rules and a choices-only model
(:mod:`.adversary`) on every config; it warns, it does not fail a build.
"""

from __future__ import annotations

import itertools
import logging
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterable

from builders.core.errors import ValidationFailed
from builders.core.items.record import LETTERS, MCQRecord
from builders.core.items.tables import Table
from builders.core.build.result import Build, Check
from builders.core.validation.spelling import option_spelling
from builders.core.validation.errata import errata_contradictions

if TYPE_CHECKING:
    from types import ModuleType

    from builders.core.validation.adversary import AdversaryRow
    from builders.core.validation.audit import AuditRow

logger = logging.getLogger(__name__)
MAX_EXAMPLES = 10


def _unique_ids(build: Build) -> Iterable[str]:
    for config, splits in build.configs.items():
        counts = Counter(r.id for records in splits.values() for r in records)
        yield from (f"{config}: id {i!r} appears {n} times" for i, n in counts.items() if n > 1)


def _per_record(build: Build, problem) -> Iterable[str]:
    for config, split, records in build.records():
        for record in records:
            message = problem(record)
            if message:
                yield f"{config}/{split} {record.id}: {message}"


def _per_options(build: Build, problem) -> Iterable[str]:
    """:func:`_per_record` of a ``problem`` that reads only a record's options and key: read once per distinct
    (choices, answer) of the check's run. The configs of a release share most items' options (a perturbation
    release's 29 configs hold 14 orders of each item at most), and their text, so the second reading is a lookup."""
    memo: dict[tuple[tuple[str, ...], int], str | None] = {}

    def read_once(record):
        key = (tuple(record.choices), record.answer)  # tuple(): the same object for a tuple
        if key not in memo:
            memo[key] = problem(record)
        return memo[key]

    return _per_record(build, read_once)


def _accounting(build: Build) -> Iterable[str]:
    rows_per_split = build.rows_in
    for config, split, records in build.records():
        rows_in = rows_per_split.get(split, 0)
        excluded = build.exclusions.count(split, config)
        if rows_in != len(records) + excluded:
            yield f"{config}/{split}: {rows_in} rows in != {len(records)} out + {excluded} excluded"
    for split, rows_in in rows_per_split.items():
        for config, splits in build.configs.items():
            if split not in splits and rows_in != build.exclusions.count(split, config):
                yield f"{config}: split {split!r} ({rows_in} rows in) is missing"


def _outcomes_accounting(build: Build) -> Iterable[str]:
    """Every config and split has its outcome counts (the core's runner keeps them: a config made without it has
    none), and they re-count the records: altered + copied unchanged = records out, and + excluded = rows in."""
    for config, splits in build.configs.items():
        for split, rows_in in build.rows_in.items():
            if not build.outcomes.covers(config, split):
                yield f"{config}/{split}: no outcome counts (a config made without the core's runner of steps)"
                continue
            kept, excluded = build.outcomes.total(split=split, config=config), build.exclusions.count(split, config)
            out = len(splits.get(split, ()))
            if kept != out:
                yield f"{config}/{split}: {kept} altered or copied unchanged != {out} records out"
            elif rows_in != kept + excluded:
                yield f"{config}/{split}: {rows_in} rows in != {kept} altered or copied unchanged + {excluded} excluded"


def _duplicates_only_as_copied(build: Build) -> Iterable[str]:
    """Two equal options (after whitespace normalisation; case matters) are allowed only in an item copied
    unchanged from a source item that has them."""
    sources = {item.id: item for item in build.source.records() if isinstance(item, MCQRecord)}
    duplicated: dict[tuple[str, ...], bool] = {}  # options -> two of them are equal, read once per distinct options
    for config, split, records in build.records():
        for record in records:
            choices = tuple(record.choices)
            found = duplicated.get(choices)
            if found is None:
                found = duplicated[choices] = len({option_spelling(c) for c in choices}) != len(choices)
            if not found:
                continue
            original = sources.get(record.id)
            if original is None or (original.question, original.choices) != (record.question, record.choices):
                yield f"{config}/{split} {record.id}: two options are equal and the item is not the source's unchanged"


@lru_cache(maxsize=1 << 18)
def _visible(text: str) -> bool:
    """Whether ``text`` shows anything: a character that is neither a space nor an invisible format character
    (a zero-width space)."""
    return any(not (char.isspace() or unicodedata.category(char) == "Cf") for char in text)


def _key_text_once(record: Any) -> str | None:
    """The key's text appears once among the options, read with the validator's own spelling of an option."""
    if not isinstance(record, MCQRecord) or not 0 <= record.answer < len(record.choices):
        return None
    key = option_spelling(record.choices[record.answer])
    copies = sum(1 for choice in record.choices if option_spelling(choice) == key)
    return f"the key's text appears {copies} times among the options" if copies > 1 else None


COMMON_CHECKS = [
    Check("unique_ids", "every id appears once per config", _unique_ids),
    Check("at_least_two_choices", "every item has at least 2 choices",
          lambda b: _per_record(b, lambda r: len(r.choices) < 2 and f"{len(r.choices)} choices")),
    Check("answer_in_range", "0 <= answer < len(choices)",
          lambda b: _per_record(b, lambda r: not 0 <= r.answer < len(r.choices) and f"answer {r.answer}")),
    Check("choices_have_labels", f"at most {len(LETTERS)} options, so that every option has a letter in the release's "
          "tasks (a builder that adds an option may pass the source's limit)",
          lambda b: _per_record(b, lambda r: len(r.choices) > len(LETTERS) and f"{len(r.choices)} options")),
    Check("no_empty_choice", "no choice is empty or whitespace",
          lambda b: _per_options(b, lambda r: any(not _visible(c) for c in r.choices) and "empty choice")),
    Check("no_duplicate_choices", "no two options are equal after normalising whitespace, invisible characters, "
          "Unicode composition and the spelling of numbers (\"128.1\", \"128.10\"), except in items "
          "copied unchanged from a source item that has them", _duplicates_only_as_copied),
    Check("key_text_once", "no item has its key's text twice among its options (a model picking the other copy "
          "would be scored wrong)", lambda b: _per_options(b, _key_text_once)),
    Check("rows_accounted", "rows in = rows out + rows excluded, per config and split", _accounting),
    Check("outcomes_accounted", "every config and split has its outcome counts, and altered + copied unchanged = "
          "rows out, + excluded = rows in", _outcomes_accounting),
]
# a build with --errata: its report lists the check, a build without has none to run
ERRATA_CHECK = Check("errata_respected", "no released item keeps a key its errata call wrong, or is released while "
                     "they flag it (the errata read again, on their own)", errata_contradictions)


@dataclass
class CheckResult:
    name: str
    description: str
    passed: bool
    violations: int
    examples: list[str] = field(default_factory=list)


@dataclass
class ValidationReport:
    passed: bool
    checks: list[CheckResult]
    counts: dict[str, dict[str, dict[str, int]]]
    answer_positions: dict[str, dict[str, dict[str, int]]]
    exclusion_reasons: dict[str, dict[str, int]]
    audit: list[AuditRow] = field(default_factory=list)
    adversary: list[AdversaryRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    statistics: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

    def rows_table(self) -> Table:
        return Table("Rows per config", ("config", "split", "rows in", "rows out", "excluded"),
                     [(config, split, n["in"], n["out"], n["excluded"])
                      for config, splits in self.counts.items() for split, n in splits.items()])

    def tables(self) -> list[Table]:
        """The report as tables: checks, answer positions, the shortcut audit."""
        letters = sorted({letter for splits in self.answer_positions.values() for p in splits.values() for letter in p})
        positions = [(config, split, *[p.get(letter, 0) / (sum(p.values()) or 1) for letter in letters])
                     for config, splits in self.answer_positions.items() for split, p in splits.items()]
        shortcut_audit, choices_only = _shortcut_readers()
        return [
            Table("Checks", ("check", "description", "result", "violations"),
                  [(c.name, c.description, "pass" if c.passed else "FAIL", c.violations) for c in self.checks]),
            Table("Answer positions", ("config", "split", *letters), positions,
                  note="Share of items whose gold is at each position.", percent=tuple(letters)),
            shortcut_audit.audit_table(self.audit),
            choices_only.adversary_table(self.adversary),
        ]

    def shortcut_summary(self) -> str:
        """The card's sentence about shortcuts, generated from the audit tables."""
        return _shortcut_readers()[0].summary_sentence(self.audit, self.adversary)

    def to_markdown(self) -> str:
        return "\n\n".join(f"#### {table.title}\n\n{table.to_markdown()}" for table in self.tables())


def _shortcut_readers() -> tuple[ModuleType, ModuleType]:
    """The shortcut audit and the choices-only model, imported when a build is validated or a report shown (numpy
    and scikit-learn), not to parse a command line."""
    from builders.core.validation import adversary, audit

    return audit, adversary


def validate(build: Build) -> ValidationReport:
    """Run the common invariants and the builder's own; raise ValidationFailed if any breaks."""
    shortcut_audit, choices_only = _shortcut_readers()
    # In stages: a builder's checks and the audit read every item as well-formed (two options or more, its gold in
    # range), so a broken common invariant stops the build with its name, before they raise on it.
    results = _run_stage(COMMON_CHECKS + ([ERRATA_CHECK] if build.source.errata is not None else []), build)
    results += _run_stage(build.release.checks, build)
    audit_rows = shortcut_audit.audit(build)
    adversary_rows = choices_only.assess(build)
    rows_in = build.rows_in
    report = ValidationReport(
        passed=True,  # a stage that failed raised
        checks=results,
        counts={config: {split: {"in": rows_in.get(split, 0), "out": len(records),
                                 "excluded": build.exclusions.count(split, config)}
                         for split, records in splits.items()}
                for config, splits in build.configs.items()},
        answer_positions={config: {split: _positions(records) for split, records in splits.items()}
                          for config, splits in build.configs.items()},
        exclusion_reasons=build.exclusions.reasons(),
        audit=audit_rows,
        adversary=adversary_rows,
        warnings=shortcut_audit.warnings(audit_rows) + choices_only.warnings(adversary_rows),
        statistics=build.release.statistics.to_list(),
    )
    return report  # its warnings are shown once: the command's summary, or build_dataset's log


def _run_stage(checks: Iterable[Check], build: Build) -> list[CheckResult]:
    results = [_run_check(check, build) for check in checks]
    failed = [f"{r.name} ({r.violations}: {r.examples[0]})" for r in results if not r.passed]
    if failed:
        raise ValidationFailed("validation failed, nothing written: " + "; ".join(failed))
    return results


def _run_check(check: Check, build: Build) -> CheckResult:
    violations = iter(check.find_violations(build))
    examples = list(itertools.islice(violations, MAX_EXAMPLES))
    total = len(examples) + sum(1 for _ in violations)
    for example in examples:
        logger.error("invariant %s broken: %s", check.name, example)
    return CheckResult(check.name, check.description, total == 0, total, examples)


def _positions(records) -> dict[str, int]:
    counts = Counter(LETTERS[r.answer] for r in records if 0 <= r.answer < len(LETTERS))
    return dict(sorted(counts.items()))
