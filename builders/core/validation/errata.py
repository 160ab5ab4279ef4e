"""The errata check: a build made with ``--errata`` releases no item that its errata contradict.

Written apart from :mod:`builders.core.sources.errata` (which decides the corrections): the errata rows are read
again from where the build read them, matched to the source's items on their own key, and their corrections read on
their own rules. Each released record of every config is then held against its item's rows: an item the errata flag
for anything but a wrong key is not released; one whose key they call wrong does not keep that key, and shows the
corrected option as its key wherever that option is shown. Items a person decided (``--corrections``) and items
kept under ``--errata-keep-flagged`` are the person's: they are not held against the errata.
"""

from __future__ import annotations

import string
from collections import defaultdict
from typing import Any, Iterable

from builders.core.build.result import Build
from builders.core.items.record import MCQRecord
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


def _errata_rows(build: Build) -> dict[tuple, list[dict[str, Any]]]:
    errata = build.source.errata
    spec = parse_spec(errata.spec, errata.source.name)
    raw = read_local(spec.path, errata.source.splits, errata.source.subconfigs) if spec.path is not None else \
        read_hub(spec, None, errata.source.splits, errata.source.subconfigs)
    rows: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for (subject, _), split_rows in raw.rows.items():
        for row in split_rows:
            if isinstance(row.get("question"), str) and row.get("choices"):
                key = (subject, _plain(row["question"]), tuple(_plain(c) for c in row["choices"]))
                rows[key].append(row)
    return rows


def errata_contradictions(build: Build) -> Iterable[str]:
    errata = build.source.errata
    if errata is None or errata.keep_flagged:
        return
    rows = _errata_rows(build)
    decided_by_a_person = {a.correction.id for a in build.source.corrections if a.correction.by != errata.source.name}
    sources = {item.id: item for item in build.source.records() if isinstance(item, MCQRecord)}
    name = errata.source.name
    for config, split, records in build.records():
        for record in records:
            item = sources.get(record.id)
            if item is None or record.id in decided_by_a_person:
                continue
            key = (item.subject or "", _plain(item.question), tuple(_plain(c) for c in item.choices))
            for row in rows.get(key, ()):
                problem = _contradiction(row, record)
                if problem:
                    yield f"{config}/{split} {record.id}: {name} {problem}"


def _contradiction(row: dict[str, Any], record: MCQRecord) -> str | None:
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
