"""The errata check: a build made with ``--errata`` releases no item that its errata contradict.

Written apart from :mod:`builders.core.sources.errata` (which decides the corrections): the errata rows are read
again from where the build read them, matched to the source's items on their own key, and their corrections read on
their own rules. Each released record of every config is then held against its item's rows: an item the errata flag
for anything but a wrong key is not released; one whose key they call wrong does not keep that key, and shows the
corrected option as its key wherever that option is shown (GSM8K-Platinum: a removed question is not released, a
revised one is keyed with the revised answer). Items a person decided (``--corrections``) and items
kept under ``--errata-keep-flagged`` are the person's: they are not held against the errata.
"""

from __future__ import annotations

import re
import string
from collections import defaultdict
from fractions import Fraction
from typing import Any, Callable, Iterable

from builders.core.build.result import Build
from builders.core.items.record import MCQRecord, OpenItem
from builders.core.sources.reading import read_hub, read_local
from builders.core.sources.spec import parse_spec


def _plain(text: Any) -> str:
    return " ".join(str(text).split())


def _corrected_text(choices: list[str], written: Any) -> str | None:
    """The one option text that ``written`` can mean (a letter, an index, an option's text), or None."""
    if written is None or isinstance(written, bool) or not _plain(written):
        return None
    word = _plain(written)
    meanings = {_plain(c) for c in choices if _plain(c) == word}
    if word.upper() in string.ascii_uppercase[: len(choices)] and len(word) == 1:
        meanings.add(_plain(choices[string.ascii_uppercase.index(word.upper())]))
    if word.isdecimal() and int(word) < len(choices):
        meanings.add(_plain(choices[int(word)]))
    return meanings.pop() if len(meanings) == 1 else None


def _errata_rows(build: Build, row_key: Callable[[str, dict[str, Any]], Any]) -> dict[Any, list[dict[str, Any]]]:
    errata = build.source.errata
    spec = parse_spec(errata.spec, errata.source.name)
    raw = read_local(spec.path, errata.source.splits, errata.source.subconfigs) if spec.path is not None else \
        read_hub(spec, errata.source.config, errata.source.splits, errata.configs)
    rows: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for (config, _), split_rows in raw.rows.items():
        for row in split_rows:
            if isinstance(row.get("question"), str):
                rows[row_key(config, row)].append(row)
    return rows


def errata_contradictions(build: Build) -> Iterable[str]:
    errata = build.source.errata
    if errata is None or errata.keep_flagged:
        return
    row_key, item_key, contradiction = RULES[errata.source.name]
    rows = _errata_rows(build, row_key)
    decided_by_a_person = {a.correction.id for a in build.source.corrections if a.correction.by != errata.source.name}
    sources = {item.id: item for item in build.source.records()}
    for config, split, records in build.records():
        for record in records:
            item = sources.get(record.id)
            if item is None or record.id in decided_by_a_person:
                continue
            for row in rows.get(item_key(item), ()):
                problem = contradiction(row, record)
                if problem:
                    yield f"{config}/{split} {record.id}: {errata.source.name} {problem}"


# ---- MMLU-Redux 2.0: one row per question, matched by subject, question and options ---------------------------


def _redux_row_key(subject: str, row: dict[str, Any]) -> Any:
    return subject, _plain(row["question"]), tuple(_plain(c) for c in row.get("choices") or ())


def _redux_item_key(item: Any) -> Any:
    return (item.subject or "", _plain(item.question), tuple(_plain(c) for c in item.choices)) \
        if isinstance(item, MCQRecord) else None


def _redux_contradiction(row: dict[str, Any], record: MCQRecord) -> str | None:
    error = row.get("error_type") or "ok"
    if error == "ok":
        return None
    if error != "wrong_groundtruth":
        return f"flags it {error}, and it is released"
    choices = [str(c) for c in row["choices"]]
    answer = row.get("answer")
    wrong = _plain(choices[answer]) if isinstance(answer, int) and 0 <= answer < len(choices) else None
    correct = _corrected_text(choices, row.get("correct_answer"))
    gold = _plain(record.choices[record.answer])
    if correct is None or correct == wrong:
        return "calls its key wrong and names no option as right, and it is released"
    if gold == wrong:
        return f"calls the key {wrong!r} wrong, and it is still the key"
    shown = [_plain(c) for c in record.choices]
    if correct in shown and gold != correct:
        return f"names {correct!r} as the key, which is shown but not keyed (the key is {gold!r})"
    return None


# ---- GSM8K-Platinum: a cleaning status per question, matched by its text -----------------------------------------


def _platinum_row_key(config: str, row: dict[str, Any]) -> Any:
    return _plain(row["question"])


def _platinum_item_key(item: Any) -> Any:
    return _plain(item.question) if isinstance(item, OpenItem) else None


def _number(text: Any) -> Fraction | None:
    cleaned = str(text).strip().replace(",", "").lstrip("$").rstrip(".%")
    try:
        return Fraction(cleaned)
    except (ValueError, ZeroDivisionError):
        return None


def _platinum_contradiction(row: dict[str, Any], record: MCQRecord) -> str | None:
    status = str(row.get("cleaning_status") or "").strip().lower()
    if status in ("consensus", "verified"):
        return None
    if status != "revised":
        return f"marks it {status!r}, and it is released"
    finals = re.findall(r"####\s*(.+?)\s*$", str(row.get("answer") or ""), flags=re.MULTILINE)
    revised = _number(finals[-1]) if finals else None
    if revised is None:
        return "revised it with no readable answer, and it is released"
    gold = _number(record.choices[record.answer])
    return None if gold == revised else f"revised its answer to {finals[-1]!r}, and the key is {record.gold!r}"


RULES: dict[str, tuple[Callable[[str, dict[str, Any]], Any], Callable[[Any], Any],
                       Callable[[dict[str, Any], MCQRecord], str | None]]] = {
    "mmlu-redux-2.0": (_redux_row_key, _redux_item_key, _redux_contradiction),
    "gsm8k-platinum": (_platinum_row_key, _platinum_item_key, _platinum_contradiction),
}
