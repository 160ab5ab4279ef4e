"""The release's review queue: ``review.jsonl`` (undecided corrections with their evidence) and ``review.html``.

Every build queues the items a person should look at: the keys the models contradict (with their votes), the
conflicting duplicates, the items the errata flag but a ``--errata-keep-flagged`` build kept, and whatever the builder
doubts (:attr:`builders.core.build.result.Release.review`: WiCkeD's SBA scores near the threshold). Each line of
``review.jsonl`` is a correction whose ``action`` is empty (:class:`builders.core.items.review.ReviewEntry`): decide
it, and pass the file back as ``--corrections`` to build the next version. ``review.html`` shows each item as a reader
sees it, with its evidence: one static page, no script and nothing fetched, readable offline.
"""

from __future__ import annotations

import html
import json
from typing import Any, Iterable

from builders.core.build.result import Build
from builders.core.items.record import LETTERS, MCQRecord
from builders.core.items.review import ReviewEntry, shown_item

REVIEW_FILE = "review.jsonl"
REVIEW_PAGE = "review.html"


def review_entries(build: Build) -> list[ReviewEntry]:
    """Every queued item of the build, one entry per item (the first reason it is queued for), in id order."""
    entries: list[ReviewEntry] = [*_suspects(build), *_conflicts(build), *_errata_kept(build), *build.release.review]
    first: dict[str, ReviewEntry] = {}
    for entry in entries:
        first.setdefault(entry.id, entry)
    return sorted(first.values(), key=lambda e: _id_order(e.id))


def _id_order(item_id: str) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in item_id.split("/"))


def _suspects(build: Build) -> Iterable[ReviewEntry]:
    consensus = build.source.consensus
    if consensus is None:
        return
    status = "kept" if consensus.kept else "excluded"
    for suspect in consensus.suspects:
        yield ReviewEntry(suspect.item.id, "suspect_key", status, shown_item(suspect.item), suspect.evidence(),
                          {"action": "set_answer", "answer": suspect.option})


def _conflicts(build: Build) -> Iterable[ReviewEntry]:
    duplicates = build.source.duplicates
    if duplicates is None:
        return
    for conflict in duplicates.conflicts:
        for item in (conflict.first, conflict.second):
            yield ReviewEntry(item.id, "conflicting_duplicate", "excluded", shown_item(item), conflict.evidence(item))


def _errata_kept(build: Build) -> Iterable[ReviewEntry]:
    errata = build.source.errata
    if errata is None or not errata.kept:
        return
    items = {item.id: item for item in build.source.records() if isinstance(item, MCQRecord)}
    for item_id, error_type in errata.kept:
        if item_id in items:
            yield ReviewEntry(item_id, "errata_kept", "kept", shown_item(items[item_id]),
                              {"errata": errata.source.name, "error_type": error_type})


def review_files(build: Build) -> dict[str, bytes]:
    """``review.jsonl`` and ``review.html`` of the build (both written, empty queue or not)."""
    entries = review_entries(build)
    lines = "".join(json.dumps(e.to_json(), ensure_ascii=False, sort_keys=True) + "\n" for e in entries)
    return {REVIEW_FILE: lines.encode("utf-8"), REVIEW_PAGE: review_page(build.about.title, entries).encode("utf-8")}


# ---- the page ---------------------------------------------------------------------------------------------

_STYLE = """body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}
article{border:1px solid #ccc;border-radius:6px;padding:1em;margin:1em 0}
h2{font-size:1.05em;margin:0 0 .5em}.why{color:#a33}.status{color:#666;font-weight:normal}
ol.choices{list-style:none;padding:0}ol.choices li{padding:.15em .4em}
li.key{background:#e6f4e6;font-weight:bold}li.agreed{background:#fdf0d5}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left}"""


def review_page(title: str, entries: list[ReviewEntry]) -> str:
    """One static HTML page: every queued item as a reader sees it (its options lettered, the key marked) with its
    evidence. Every text from the source is escaped: it is data."""
    count = f"{len(entries)} item{'s' if len(entries) != 1 else ''} to review"
    body = "\n".join(_article(entry) for entry in entries) or "<p>Nothing to review.</p>"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Review: {_text(title)}</title>'
            f"<style>{_STYLE}</style></head>\n<body><h1>Review: {_text(title)}</h1>\n<p id=\"count\">{count}. Decide "
            f"each in <code>{REVIEW_FILE}</code> (<code>action</code>: <code>set_answer</code> with "
            f"<code>answer</code>, or <code>exclude</code>; <code>reason</code>; <code>by</code>) and pass it back as "
            f"<code>--corrections</code>.</p>\n{body}\n</body></html>\n")


def _article(entry: ReviewEntry) -> str:
    item = entry.item
    agreed = entry.suggestion.get("answer") if entry.suggestion.get("action") == "set_answer" else None
    options = "".join(
        f'<li class="{"key" if i == item.get("answer") else "agreed" if i == agreed else "option"}">'
        f"{LETTERS[i] if i < len(LETTERS) else i}. {_text(choice)}"
        f"{' (key)' if i == item.get('answer') else ' (suggested)' if i == agreed else ''}</li>"
        for i, choice in enumerate(item.get("choices", [])))
    evidence = "".join(f"<tr><th>{_text(name)}</th><td>{_value(value)}</td></tr>"
                       for name, value in entry.evidence.items())
    return (f'<article id="{_text(entry.id)}"><h2>{_text(entry.id)} <span class="why">{_text(entry.queued_for)}</span>'
            f' <span class="status">({_text(entry.status)} in this release)</span></h2>'
            f'<p class="question">{_text(item.get("question", ""))}</p><ol class="choices">{options}</ol>'
            f"<table class=\"evidence\">{evidence}</table></article>")


def _value(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{_text(k)}: {_value(v)}" for k, v in value.items())
    if isinstance(value, list):
        return "; ".join(_value(v) for v in value)
    return _text(value)


def _text(value: Any) -> str:
    return html.escape(str(value)).replace("\n", "<br>")
