"""The validator: every build runs it, and nothing is written or published when an invariant breaks.

The common invariants re-count what the build holds (ids, options, answers, rows in = rows out + rows
excluded); the builder adds its own checks, written independently of the code that made the items. The
shortcut audit (:mod:`.audit`) scores no-knowledge answering rules and a choices-only model
(:mod:`.adversary`) on every config; it warns, it does not fail a build.
"""

from __future__ import annotations

import itertools
import logging
import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from operator import itemgetter
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
    for config, split, records in build.records():
        for record in records:
            normalized = [option_spelling(c) for c in record.choices]
            if len(set(normalized)) == len(normalized):
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
          lambda b: _per_record(b, lambda r: any(not _visible(c) for c in r.choices) and "empty choice")),
    Check("no_duplicate_choices", "no two options are equal after normalising whitespace, invisible characters, "
          "Unicode composition and the spelling of numbers (\"128.1\", \"128.10\"), except in items "
          "copied unchanged from a source item that has them", _duplicates_only_as_copied),
    Check("key_text_once", "no item has its key's text twice among its options (a model picking the other copy "
          "would be scored wrong)", lambda b: _per_record(b, _key_text_once)),
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


# ---- options that refer to other options: a second detector, for the builders' checks ------------------
# Written apart from builders.core.items.referring (which decides what the builders skip), on a different method: the
# option is cut into words, each word keeps whether it was a label ("(a)", "a.", "A"), and the word sequence is
# read against small vocabularies. A check that reused the builder's patterns would pass whatever they miss.

_QUANTIFIERS = {"all", "none", "both", "neither", "nither", "nether", "either", "any", "each"}
_BARE = {"none", "both", "neither", "nither", "nether", "either"}
_OTHER_OPTIONS = {"above", "below", "these", "them", "those", "preceding", "foregoing", "options", "choices", "answers",
                  "others"}
_PHRASES = (("of", "the", "above"), ("of", "above"), ("listed", "above"), ("mentioned", "above"),
            ("given", "above"), ("combination", "of", "these"), ("combinations", "of", "these"))
_SPACED_PHRASES = tuple(f" {' '.join(phrase)} " for phrase in _PHRASES)
_LABEL_GLUE = {"and", "or", "nor", "&", "both", "either", "neither", "only", "above", "option", "options", "choice",
               "choices", "answer", "answers", "all", "of", "are", "is", "correct", "true", "will", "be", "right",
               "valid", "incorrect", "false", "wrong"}
_NUMBER_CUES = {"both", "either", "neither", "option", "options", "choice", "choices", "answer", "answers", "above"}
_JOINERS = {"and", "or", "nor", "&"}
_NAMING = {"option", "options", "choice", "choices", "answer", "answers"}


class _Word(tuple):
    """(text, raw): ``text`` lower case, without brackets and trailing punctuation; ``raw`` as written. A plain
    tuple underneath: a build reads hundreds of thousands of words."""

    __slots__ = ()
    text = property(itemgetter(0))
    raw = property(itemgetter(1))

    @property
    def letter(self) -> bool:
        return len(self.text) == 1 and self.text in "abcdefghij"

    @property
    def number(self) -> bool:
        return len(self.text) == 1 and self.text in "123456789"

    @property
    def bracketed(self) -> bool:
        return self.letter and self.raw.rstrip(".,;:").endswith(")")


@lru_cache(maxsize=1 << 18)
def _words(option: str) -> tuple[_Word, ...]:
    # A pure reading of one text, kept once per distinct text: a build reads each option in several configs.
    raws = _WORD_BREAK.split(option)
    texts = [raw.lower().strip("().:;!?\"'") for raw in raws]
    return tuple(map(_Word, [(text, raw) for text, raw in zip(texts, raws, strict=True) if text]))


_WORD_BREAK = re.compile(r"[\s,]+")


def refers_to_other_options(option: str, others: Iterable[str] = ()) -> bool:
    """Whether ``option`` refers to the other options: a bare quantifier ("Both"); a quantifier of the others
    ("None of these", "all the mentioned options", "All of (a) to (c) ..."); "of the above" anywhere; only
    option labels and joining words ("a. and b. above", "Both 2 and 3", and "1 and 2" when no other option
    holds a number); a list of bracketed letters opening the option ("(A), (B), and (C) are ..."); "both a and
    b are correct"; "option B"; or an option that is only "(a)". ``others``: the item's other options."""
    reading = _reading(option)
    if reading is not None:
        return reading
    others = list(others)
    return bool(others) and not any(ch.isdigit() for other in others for ch in other)


@lru_cache(maxsize=1 << 18)
def _reading(option: str) -> bool | None:
    """What ``option`` alone says: True, it refers to the others; False, it does not; None, it is only option
    numbers and joining words ("1 and 2"), which refer to the others when no other option holds a number."""
    words = _words(option)
    texts = [w.text for w in words]
    if not words:
        return False
    if len(words) == 1:
        return texts[0] in _BARE or words[0].bracketed
    if texts[0] in _QUANTIFIERS and (_OTHER_OPTIONS & set(texts[1:5]) or (texts[1] == "of" and len(words) > 2
                                                                         and words[2].letter)):
        return True
    spaced = f" {' '.join(texts)} "  # a word holds no space: a phrase's words in a row are its spaced text in this
    if any(phrase in spaced for phrase in _SPACED_PHRASES):
        return True
    for i in range(len(words) - 1):  # "option B", "choice (c)": an upper-case or bracketed letter
        if texts[i] in _NAMING and words[i + 1].letter and (words[i + 1].bracketed or words[i + 1].raw[:1].isupper()):
            return True
    for i in range(len(words) - 5):  # "... both A and B are correct"
        if (texts[i] in {"both", "either", "neither"} and words[i + 1].letter and texts[i + 2] in {"and", "or", "nor"}
                and words[i + 3].letter and texts[i + 4] in {"are", "is"} and texts[i + 5] in {"correct", "right"}):
            return True
    opening = 0  # bracketed letters and joiners that open the option
    while opening < len(words) and (words[opening].bracketed or texts[opening] in _JOINERS):
        opening += 1
    if sum(w.bracketed for w in words[:opening]) >= 2 and any(t in _JOINERS for t in texts[:opening]):
        return True
    if _closes_on_the_others(texts) or _quantifies_options(texts) or _by_place(texts) or _all_but_labels(words):
        return True
    letters = [w for w in words if w.letter]
    numbers = [w for w in words if w.number]
    rest = [w.text for w in words if not w.letter and not w.number]
    if not all(t in _LABEL_GLUE for t in rest) or (letters and numbers):  # "(a) 1, (b) 1": a question's parts
        return False
    if len(letters) >= 2:
        return True
    if len(letters) == 1 and letters[0].text in "abcdefgh" and (  # not "I only": the question's statement I
            {"only", "correct", "true", "right", "valid", "incorrect", "false", "wrong"} | _NAMING) & set(rest):
        return True
    if len(numbers) < 2:
        return False
    return True if _NUMBER_CUES & set(rest) else None


_COUNTS = {"two", "three", "four", "five", "six", "2", "3", "4", "5", "6"}
_VERDICTS = {"correct", "true", "right", "valid", "incorrect", "false", "wrong"}
_NOUNS_OF_OPTIONS = {"options", "choices", "answers", "alternatives", "statements", "listed", "mentioned",
                     "preceding", "foregoing"}
_ORDINALS = {"first", "second", "third", "fourth", "fifth", "last"}


def _is_verdict(texts: list[str]) -> bool:
    """Nothing, or "is/are [both/all] correct" (and the like)."""
    if not texts:
        return True
    rest = texts[1:] if texts[0] in {"is", "are"} else None
    if rest and rest[0] in {"both", "all"}:
        rest = rest[1:]
    return rest is not None and len(rest) == 1 and rest[0] in _VERDICTS


def _closes_on_the_others(texts: list[str]) -> bool:
    """The option ends with a quantifier of the others: "Older adults cannot do either of these", "... none of the
    statements" (not "remember all the answers", nor "each of those molecules will ...")."""
    if len(texts) >= 3 and texts[-3] in _QUANTIFIERS and texts[-2] == "of" and texts[-1] in {"these", "those"}:
        return True
    return (len(texts) >= 4 and texts[-4] in _QUANTIFIERS and texts[-3:-1] == ["of", "the"]
            and texts[-1] in _NOUNS_OF_OPTIONS)


def _quantifies_options(texts: list[str]) -> bool:
    """A quantifier over a count, a plural noun or a verdict, and nothing else: "All three", "all three structures",
    "Both of the interventions", "None of the listed", "Both statements are correct", "None is correct" (not "All
    three steps are exothermic": the predicate makes it a statement)."""
    if texts[0] not in _QUANTIFIERS or len(texts) == 1:
        return False
    rest = texts[1:]
    rest = rest[1:] if rest[0] == "of" else rest
    rest = rest[1:] if rest and rest[0] in {"the", "these", "those"} else rest
    if rest and rest[0] in _COUNTS:
        rest = rest[2:] if len(rest) > 1 and rest[1] not in {"is", "are"} else rest[1:]
    elif rest and rest[0] not in {"is", "are", "was", "has", "does"} and (rest[0].endswith("s") or rest[0] in {"listed", "mentioned",
                                                                                         "given", "stated"}):
        rest = rest[1:]
    return _is_verdict(rest)


def _by_place(texts: list[str]) -> bool:
    """Options named by their place: "The first two", "both the first and the third", "All but the last"."""
    if texts[0] == "all" and len(texts) >= 4 and texts[1] in {"except", "but"}:
        rest = texts[3:] if texts[2] == "the" else (texts[4:] if texts[2:4] == ["for", "the"] else [])
        return bool(rest) and rest[0] in _ORDINALS and all(t in {"one", "option", "choice", "answer"} for t in rest[1:])
    rest = [t for t in texts if t not in {"the", "of", "both", "all", "only", "either", "neither"}]
    if len(rest) < 2 or rest[0] not in _ORDINALS:
        return False
    if rest[1] in _COUNTS:
        rest = rest[2:]
    elif rest[1] in _JOINERS and len(rest) > 2 and rest[2] in _ORDINALS:
        rest = rest[3:]
    else:
        return False
    rest = rest[1:] if rest and rest[0] in _NAMING | {"statement", "statements"} else rest
    return rest == ["only"] or _is_verdict(rest)


def _all_but_labels(words: tuple[_Word, ...]) -> bool:
    """Every option but some named by label: "All except D", "all of the options except a and b"."""
    texts = [w.text for w in words]
    cut = next((i for i, t in enumerate(texts) if t in {"except", "but"}), None)
    if texts[0] not in {"all", "any", "each"} or cut is None or cut + 1 >= len(words):
        return False
    tail = [w for w in words[cut + 1:] if w.text not in {"not", "option", "options", "choice", "choices"}]
    return bool(tail) and all(w.letter or w.text in _JOINERS for w in tail) and any(w.letter for w in tail)


_NO_ANSWER_OPENINGS = (("there", "is"), ("there", "are"), ("i", "have"))
_NO_WHAT = {"comment", "exception", "exceptions", "objection", "objections", "answer", "answers"}
_THERE_IS = {("there", "is"), ("there", "are"), ("there", "was"), ("there", "were"), ("there's",), ("there’s",)}
_NOTHING_HAPPENS = {"change", "changes", "effect", "effects", "difference", "differences"}
_SHOWN = {"proven", "proved", "shown", "demonstrated", "confirmed", "found"}


@lru_cache(maxsize=1 << 18)
def says_no_answer(option: str) -> bool:
    """Whether ``option`` already says there is no answer: "None" as its first word, not followed by "of" ("None,
    because the statement is admissible.", "None are oncogenic per se"), or an opening "[There is / I have] no
    comment / exception / objection / [correct] answer" ("I have no comment."); or that nothing happens, there is
    no such thing, no one does, or it cannot be told (:func:`_says_nothing_or_no_one`). Read word by word, apart
    from the builder's detector."""
    texts = [w.text for w in _words(option)]
    if not texts:
        return False
    if texts[0] == "none":
        return len(texts) == 1 or texts[1] != "of"
    if _says_nothing_or_no_one(texts) and not option.lstrip(" \"'(").lower().startswith("no,"):  # "No, one of ..."
        return True
    if tuple(texts[:2]) in _NO_ANSWER_OPENINGS:
        texts = texts[2:]
    if len(texts) >= 2 and texts[0] == "no" and texts[1] in {"correct", "right"}:
        texts = texts[:1] + texts[2:]
    return (len(texts) >= 2 and texts[0] == "no" and texts[1] in _NO_WHAT) or _undecidable(option, texts)


_CANNOT = {"cannot", "can't"}
_DECIDED = {"determined", "calculated", "answered", "known", "computed", "found", "said"}
_NOT_LISTED = {"listed", "mentioned"}
_ALONE = {("not", "listed"), ("none", "listed"), ("not", "determinable")}  # not "Unknown." (content)


def _undecidable(option: str, texts: list[str]) -> bool:
    """ "None of these" in other words, as the option's whole claim: it opens with "[it / the answer] cannot be
    determined", "[it is] impossible to determine", "[there is] not enough / insufficient information"; it ends with
    "a [different] crime not listed"; or it is only "Not listed". A truth value beside it ("True, Not enough
    information") makes it a statement's value, not a verdict on the options."""
    if re.search(r",\s*(?:true|false|not|cannot)\b", option, re.I) or re.search(r"\b(?:true|false),", option, re.I):
        return False
    opening = texts[2:] if texts[:2] in (["the", "answer"], ["it", "is"], ["there", "is"]) else \
        texts[1:] if texts[:1] == ["it"] else texts
    if opening[:1] and opening[0] in _CANNOT and opening[1:2] == ["be"] and opening[2:3] and opening[2] in _DECIDED:
        return True
    if opening[:3] in (["can", "not", "be"],) and opening[3:4] and opening[3] in _DECIDED:
        return True
    if opening[:2] == ["impossible", "to"] and opening[2:3] and opening[2] in {"determine", "tell", "say", "know"}:
        return True
    if opening[:3] in (["not", "enough", "information"], ["not", "enough", "data"]) or \
            opening[:2] in (["insufficient", "information"], ["insufficient", "data"]):
        return True
    if len(texts) >= 3 and texts[-2] == "not" and texts[-1] in _NOT_LISTED and \
            {"a", "an", "some", "another"} & set(texts[-5:-2]):
        return True
    return tuple(texts) in _ALONE


def _says_nothing_or_no_one(texts: list[str]) -> bool:
    """ "Nothing [in particular happens]", "Nobody", "No one", "There is / There's no ...", "No change" alone, "No X
    has [ever] been proven ..." (within its first words); not "No crime." or "No contract
    was formed" (verdicts), nor "Neither assault nor battery." (content)."""
    if texts[0] in {"nothing", "nobody", "no-one"} or texts[:2] == ["no", "one"]:
        return True
    if any(tuple(texts[:len(opening)]) == opening and texts[len(opening):len(opening) + 1] == ["no"]
           for opening in _THERE_IS):
        return True
    if texts[0] != "no":
        return False
    if len(texts) == 2 and texts[1] in _NOTHING_HAPPENS:
        return True
    head = texts[:10]
    for i, word in enumerate(head):
        if word in {"has", "have"} and 2 <= i <= 5:
            rest = head[i + 1:i + 6]
            if rest[:1] == ["ever"]:
                rest = rest[1:]
            return rest[:1] == ["been"] and any(w in _SHOWN for w in rest[1:4])
    return False


def referring_options(choices: Iterable[str]) -> list[str]:
    """The options of an item that refer to the item's other options (see :func:`refers_to_other_options`)."""
    return list(_referring(tuple(choices)))


@lru_cache(maxsize=1 << 16)
def _referring(choices: tuple[str, ...]) -> tuple[str, ...]:
    # A pure reading of one item's options, kept once per distinct set: a check reads an original in every variant.
    return tuple(c for i, c in enumerate(choices) if refers_to_other_options(c, choices[:i] + choices[i + 1:]))
