"""Curated errata of a source, as corrections: ``--errata SPEC`` (a Hub id, or a local copy in the Hub's layout).

An errata source names what is wrong with some of a benchmark's items: MMLU-Redux 2.0 re-annotated 5,700 MMLU
questions (``error_type``, and for a wrong key the ``correct_answer``). Each errata source is one
:class:`ErrataSource`: where it lives, the benchmarks it corrects, how its rows are matched to their items (by
content, never by position) and what each row decides. What it decides is a
:class:`~builders.core.sources.corrections.Correction` by the errata's name (``by: mmlu-redux-2.0``), applied with
every other correction in the one place (:func:`builders.core.sources.corrections.apply_corrections`):

* a wrong key whose correction names one option: ``set_answer``, reason the error type;
* any other error, or a correction that cannot be read: ``exclude``, reason the error type;
* with ``keep_flagged``: no correction; the item is kept unchanged and listed as kept (:attr:`ErrataApplied.kept`).

GSM8K-Platinum re-read GSM8K's test questions the same way (``cleaning_status``): a revised answer repairs the key of
a build from plain GSM8K, a removed question is excluded.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.outcomes import Exclude
from builders.core.items.record import LETTERS, MCQRecord, OpenItem, normalize_text
from builders.core.items.tables import Table
from builders.core.sources.benchmarks import MMLU_SUBJECTS
from builders.core.sources.corrections import Correction
from builders.core.sources.loading import Benchmark, LoadedSource, RowContext
from builders.core.sources.reading import RawSource, read_hub, read_local
from builders.core.sources.spec import SourceSpec, parse_spec

logger = logging.getLogger(__name__)

OK = "ok"
WRONG_KEY = "wrong_groundtruth"


@dataclass(frozen=True)
class Finding:
    """What one errata row says of the item it matches: its error type and, for a wrong key, the corrected key (an
    option's text, None when the correction names no single option)."""

    error_type: str
    correct_option: str | None = None


@dataclass(frozen=True, kw_only=True)
class ErrataSource:
    """One errata source: where it lives, what it corrects, how its rows become findings, and ``item_key(item)``,
    the key that matches a source item to its rows (its subject and content: never its position)."""

    name: str  # the ``by`` of its corrections
    hub_id: str
    pretty_name: str
    corrects: tuple[str, ...]  # the benchmarks it corrects
    splits: tuple[str, ...]
    subconfigs: tuple[str, ...]  # its Hub configs (a local copy: one folder each); none: one config
    # {match key: [finding, ...]} of its rows; the source benchmark reads what it needs of them (GSM8K's gold)
    read_findings: Callable[[RawSource, Benchmark], Mapping[Any, Sequence[Finding]]]
    item_key: Callable[[Any], Any]
    repairs: str  # the error type whose correction repairs the key
    ok: tuple[str, ...] = (OK,)  # the error types that find nothing wrong
    config: str | None = None  # its Hub config, when it has one and no subconfigs


@dataclass(frozen=True)
class ErrataApplied:
    """What a build took from an errata source: where from (``spec`` as given, for the validator's own re-read;
    ``recorded`` and ``revision`` as the build config and card say it), the corrections it made, the items it
    flagged but kept (with ``keep_flagged``), and counts."""

    source: ErrataSource
    spec: str
    recorded: Any
    revision: str
    keep_flagged: bool
    corrections: tuple[Correction, ...]
    kept: tuple[tuple[str, str], ...]  # (item id, error type) of the items flagged and kept unchanged
    rows: int  # the errata's rows
    matched: Mapping[str, int] = field(default_factory=dict)  # {error type: source items it matched}
    unmatched_rows: int = 0  # errata rows that match no item of this build (another subset, reworded)
    configs: tuple[str, ...] = ()  # the errata's configs read from the Hub (a local copy: every folder)


def mmlu_key(subject: str | None, question: str, choices: Sequence[str]) -> tuple[str, str, tuple[str, ...]]:
    return (subject or "", normalize_text(question), tuple(normalize_text(c) for c in choices))


def read_option(choices: Sequence[str], written: Any) -> str | None:
    """The option that a correction names: a letter, a 0-based index as text, or an option's own text. None where
    it names no option, or where its readings name different options ("3" as index 3 and as the option "3")."""
    if written is None or isinstance(written, bool):
        return None
    text = normalize_text(str(written))
    named = set()
    if len(text) == 1 and text.upper() in LETTERS[: len(choices)]:
        named.add(LETTERS.index(text.upper()))
    if text.isdigit() and int(text) < len(choices):
        named.add(int(text))
    named.update(i for i, choice in enumerate(choices) if normalize_text(choice) == text)
    return choices[named.pop()] if len(named) == 1 else None


def redux_findings(raw: RawSource, benchmark: Benchmark) -> Mapping[Any, Sequence[Finding]]:
    found: dict[Any, list[Finding]] = defaultdict(list)
    for (subject, _), rows in raw.rows.items():
        for row in rows:
            choices = [str(c) for c in row.get("choices") or []]
            if not isinstance(row.get("question"), str) or not choices:
                continue
            error_type = str(row.get("error_type") or OK)
            correct = read_option(choices, row.get("correct_answer")) if error_type == WRONG_KEY else None
            key_index = row.get("answer")
            if correct is not None and isinstance(key_index, int) and 0 <= key_index < len(choices) \
                    and normalize_text(choices[key_index]) == normalize_text(correct):
                correct = None  # "the key is wrong, the key is right": no readable correction
            found[mmlu_key(subject, row["question"], choices)].append(Finding(error_type, correct))
    return found


def mmlu_item_key(item: Any) -> Any:
    return mmlu_key(item.subject, item.question, item.choices) if isinstance(item, MCQRecord) else None


MMLU_REDUX = ErrataSource(
    name="mmlu-redux-2.0", hub_id="edinburgh-dawg/mmlu-redux-2.0", pretty_name="MMLU-Redux 2.0", corrects=("mmlu",),
    splits=("test",), subconfigs=tuple(MMLU_SUBJECTS), read_findings=redux_findings, item_key=mmlu_item_key,
    repairs=WRONG_KEY)


def platinum_findings(raw: RawSource, benchmark: Benchmark) -> Mapping[Any, Sequence[Finding]]:
    """GSM8K-Platinum's ``cleaning_status`` of each question: ``consensus`` and ``verified`` keep GSM8K's answer,
    ``revised`` gives the answer of its ``answer`` field (read by GSM8K's own adapter, so that it is spelled as the
    build spells its gold), any other status (``removed``, ``rejected``) withdraws the question."""
    found: dict[Any, list[Finding]] = defaultdict(list)
    for (config, split), rows in raw.rows.items():
        for index, row in enumerate(rows):
            status = str(row.get("cleaning_status") or "").strip().lower()
            if not isinstance(row.get("question"), str) or not status:
                continue
            gold = None
            if status == "revised" and benchmark.to_item is not None:
                ctx = RowContext(benchmark.name, benchmark.hub_id, config or "main", split, index, 0, None)
                try:
                    gold = benchmark.to_item({"question": row["question"], "answer": row.get("answer")}, ctx).gold
                except (Exclude, UserError):
                    gold = None  # no readable answer: the question is withdrawn as revised
            found[normalize_text(row["question"])].append(Finding(status, gold))
    return found


def open_item_key(item: Any) -> Any:
    return normalize_text(item.question) if isinstance(item, OpenItem) else None


GSM8K_PLATINUM = ErrataSource(
    name="gsm8k-platinum", hub_id="madrylab/gsm8k-platinum", pretty_name="GSM8K-Platinum", corrects=("gsm8k",),
    splits=("test",), subconfigs=(), config="main", read_findings=platinum_findings, item_key=open_item_key,
    repairs="revised", ok=("consensus", "verified"))

ERRATA: dict[str, ErrataSource] = {}


def register(errata: ErrataSource) -> ErrataSource:
    """Make ``errata`` the errata source of the benchmarks it corrects."""
    for benchmark in errata.corrects:
        ERRATA[benchmark] = errata
    return errata


def errata_of(benchmark: str) -> ErrataSource:
    if benchmark not in ERRATA:
        known = ", ".join(f"{name} ({e.pretty_name})" for name, e in sorted(ERRATA.items()))
        raise UserError(f"--errata: benchmark {benchmark} has no errata source; errata exist for {known}")
    return ERRATA[benchmark]


def read_errata(errata: ErrataSource, spec_text: str, configs: tuple[str, ...]) -> tuple[RawSource, SourceSpec]:
    """The errata's rows from a Hub id or a local copy in its Hub layout (one folder per config; from the Hub,
    only ``configs``)."""
    spec = parse_spec(spec_text, errata.name)
    if spec.path is not None:
        return read_local(spec.path, errata.splits, errata.subconfigs), spec
    return read_hub(spec, errata.config, errata.splits, configs), spec


def configs_to_read(errata: ErrataSource, source: LoadedSource) -> tuple[str, ...]:
    """The errata's configs that can hold the build's items: those of the subjects it selected (MMLU's
    ``--subjects``), or all of them."""
    wanted = set(source.selection.subjects)
    return tuple(c for c in errata.subconfigs if c in wanted) if wanted & set(errata.subconfigs) else errata.subconfigs


def errata_corrections(source: LoadedSource, spec_text: str, keep_flagged: bool = False,
                       decided: Sequence[str] = ()) -> ErrataApplied:
    """The corrections that ``spec_text``'s errata make to ``source``'s items; items named in ``decided`` (by a
    person's ``--corrections``) are left to that decision."""
    errata = errata_of(source.benchmark.name)
    configs = configs_to_read(errata, source)
    raw, spec = read_errata(errata, spec_text, configs)
    findings = errata.read_findings(raw, source.benchmark)
    corrections, kept = [], []
    matched: Counter = Counter()
    used = set()
    for item in source.records():
        key = errata.item_key(item)
        found = findings.get(key)
        if not found:
            continue
        used.add(key)
        finding = found[0] if len(set(found)) == 1 else Finding("conflicting_errata")
        matched[finding.error_type] += 1
        if finding.error_type in errata.ok or item.id in decided or \
                (finding.error_type == errata.repairs and finding.correct_option == key_text(item)):
            continue
        if keep_flagged:
            kept.append((item.id, finding.error_type))
        elif finding.error_type == errata.repairs and finding.correct_option is not None:
            corrections.append(Correction(id=item.id, action="set_answer", answer=finding.correct_option,
                                          reason=finding.error_type, by=errata.name))
        else:
            corrections.append(Correction(id=item.id, action="exclude", reason=finding.error_type, by=errata.name))
    rows = sum(len(r) for r in raw.rows.values())
    unmatched = sum(len(v) for k, v in findings.items() if k not in used)
    logger.info("errata %s: %d rows, %d items matched, %d corrections", errata.name, rows, sum(matched.values()),
                len(corrections))
    recorded = spec.recorded() if spec.is_local else (spec.text if spec.revision else f"{spec.text}@{raw.revision}")
    return ErrataApplied(errata, spec_text, recorded, raw.revision, keep_flagged, tuple(corrections), tuple(kept),
                         rows, dict(sorted(matched.items())), unmatched, configs)


def key_text(item: Any) -> str:
    """An item's key as a finding names it: the keyed option's text, or an open-ended item's gold."""
    return item.choices[item.answer] if isinstance(item, MCQRecord) else item.gold


def errata_table(applied: ErrataApplied) -> Table:
    """Per error type: the items of the build the errata matched, and how many were repaired, excluded or kept."""
    done: Counter = Counter((c.reason, c.action) for c in applied.corrections)
    kept = Counter(error_type for _, error_type in applied.kept)
    rows = [(error_type, n, done[error_type, "set_answer"], done[error_type, "exclude"], kept[error_type])
            for error_type, n in applied.matched.items()]
    where = applied.recorded["local"] if isinstance(applied.recorded, dict) else applied.recorded
    note = (f"{applied.source.pretty_name} (`{applied.source.hub_id}`; read from `{where}`, revision "
            f"`{applied.revision}`): {applied.rows} rows, {applied.rows - applied.unmatched_rows} matched to items of "
            f"this build by subject and content, {applied.unmatched_rows} to none. "
            + ("Flagged items were kept unchanged (`--errata-keep-flagged`)." if applied.keep_flagged else
               "A wrong key with a readable correction is repaired; every other flagged item is excluded with its "
               "error type."))
    return Table("Errata applied", ("error type", "items matched", "repaired", "excluded", "kept unchanged"), rows,
                 note=note)


def errata_kept_table(applied: ErrataApplied) -> Table:
    return Table("Flagged by the errata and kept", ("id", "error type"), sorted(applied.kept))


register(MMLU_REDUX)
register(GSM8K_PLATINUM)
