"""What changed between two releases: per config and split, the items added, removed and changed, with the reason.

``python -m builders diff OLD NEW`` (:mod:`builders.diff`) compares two release folders or ``REPO@vX.Y.Z``; ``--push``
of a new version to a repo with an earlier tag compares the new build with that release, puts the summary into the
card's changelog and ``diff.json`` into the release. Items are matched by id. An item changed when its question
(``text``), its options (``options``) or its key (``key``: the key's index or text) differ. The reason is the new
release's where it knows one: the exclusion log's reason for a removed item (a correction, the errata, the model
consensus, a builder rule), the correction that moved a key (``metadata.answer_corrected_by``), and for an item added
back, the reason the old release had excluded it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

DIFF_FILE = "diff.json"
RELEASE_FILES = ("*/*.parquet", "exclusions.jsonl", "corrections.jsonl", "build_config.yaml")
KINDS = ("text", "options", "key")


@dataclass(frozen=True)
class Shown:
    """An item as a release holds it, for comparing: question, options, key, and why its key is what it is."""

    question: str
    choices: tuple[str, ...]
    answer: int
    corrected_by: str | None = None
    correction_reason: str | None = None


@dataclass
class ReleaseContent:
    """A release's items ({config: {split: {id: Shown}}}) and its exclusions ({id: reason}, every config's)."""

    items: dict[str, dict[str, dict[str, Shown]]] = field(default_factory=dict)
    excluded: dict[str, dict[str, str]] = field(default_factory=dict)  # config ("" for every config) -> id -> reason

    def excluded_reason(self, config: str, item_id: str) -> str | None:
        return self.excluded.get(config, {}).get(item_id) or self.excluded.get("", {}).get(item_id)


def shown(row: Mapping[str, Any]) -> Shown:
    metadata = row.get("metadata") or {}
    return Shown(row["question"], tuple(row["choices"]), int(row["answer"]), metadata.get("answer_corrected_by"),
                 metadata.get("correction_reason"))


def exclusion_reason(entry: Mapping[str, Any]) -> str:
    detail = f" ({entry['detail']})" if entry.get("detail") else ""
    return f"excluded: {entry['reason']}{detail}"


def read_release(folder: Path) -> ReleaseContent:
    """The items and exclusions of a release folder."""
    import pyarrow.parquet as pq

    content = ReleaseContent()
    for path in sorted(Path(folder).glob("*/*.parquet")):
        config, split = path.parent.name, re.sub(r"-\d+-of-\d+$", "", path.name.removesuffix(".parquet"))
        rows = content.items.setdefault(config, {}).setdefault(split, {})
        for row in pq.read_table(path).to_pylist():
            rows[row["id"]] = shown(row)
    exclusions = Path(folder) / "exclusions.jsonl"
    if exclusions.is_file():
        for line in exclusions.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                content.excluded.setdefault(entry.get("config") or "", {})[entry["id"]] = exclusion_reason(entry)
    return content


def build_content(build: Any) -> ReleaseContent:
    """The items and exclusions of a build not yet written (:class:`builders.core.build.result.Build`)."""
    content = ReleaseContent()
    for config, split, records in build.records():
        content.items.setdefault(config, {})[split] = {r.id: shown(r.to_row()) for r in records}
    for entry in build.exclusions.entries:
        content.excluded.setdefault(entry.config or "", {})[entry.id] = exclusion_reason(
            {"reason": entry.reason, "detail": entry.detail})
    return content


def changes(old: Shown, new: Shown) -> list[str]:
    found = []
    if old.question != new.question:
        found.append("text")
    if old.choices != new.choices:
        found.append("options")
    if old.answer != new.answer or old.choices[old.answer] != new.choices[new.answer]:
        found.append("key")
    return found


def change_reason(old: Shown, new: Shown) -> str | None:
    if new.corrected_by and (new.corrected_by, new.correction_reason) != (old.corrected_by, old.correction_reason):
        return f"correction by {new.corrected_by}" + (f": {new.correction_reason}" if new.correction_reason else "")
    return None


def diff_releases(old: ReleaseContent, new: ReleaseContent) -> dict[str, Any]:
    """{configs: {config: {split: {added, removed, changed, counts}}}, totals}: every item listed, counts exact."""
    configs: dict[str, Any] = {}
    totals: Counter = Counter()
    for config in sorted(set(old.items) | set(new.items)):
        old_splits, new_splits = old.items.get(config, {}), new.items.get(config, {})
        for split in sorted(set(old_splits) | set(new_splits)):
            before, after = old_splits.get(split, {}), new_splits.get(split, {})
            added = [{"id": i, "reason": _added_reason(old, new, config, i, after[i])}
                     for i in sorted(set(after) - set(before), key=_id_order)]
            removed = [{"id": i, "reason": new.excluded_reason(config, i)}
                       for i in sorted(set(before) - set(after), key=_id_order)]
            changed: list[dict[str, Any]] = []
            for i in sorted(set(before) & set(after), key=_id_order):
                kinds = changes(before[i], after[i])
                if kinds:
                    changed.append({"id": i, "changes": kinds, "reason": change_reason(before[i], after[i]),
                                    "key": [before[i].answer, after[i].answer]})
            counts = {"added": len(added), "removed": len(removed), "changed": len(changed),
                      **{f"changed_{kind}": sum(kind in c["changes"] for c in changed) for kind in KINDS},
                      "unchanged": len(set(before) & set(after)) - len(changed)}
            totals.update(counts)
            configs.setdefault(config, {})[split] = {"counts": counts, "added": added, "removed": removed,
                                                     "changed": changed}
    return {"configs": configs, "totals": dict(totals)}


def _added_reason(old: ReleaseContent, new: ReleaseContent, config: str, item_id: str, item: Shown) -> str | None:
    was = old.excluded_reason(config, item_id)
    if item.corrected_by:
        return f"correction by {item.corrected_by}" + (f": {item.correction_reason}" if item.correction_reason else "")
    return f"previously {was}" if was else None


def _id_order(item_id: str) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in item_id.split("/"))


def summary(diff: Mapping[str, Any], against: str) -> str:
    """One line for the changelog: the counts per group of configs whose counts are the same."""
    groups: dict[tuple, list[str]] = {}
    for config, splits in diff["configs"].items():
        key = tuple((split, tuple(sorted(v["counts"].items()))) for split, v in splits.items())
        groups.setdefault(key, []).append(config)
    parts = []
    for key, configs in groups.items():
        where = "every config" if len(configs) == len(diff["configs"]) else ", ".join(configs)
        for split, counts in key:
            c = dict(counts)
            kinds = ", ".join(f"{c[f'changed_{k}']} {k}" for k in KINDS if c[f"changed_{k}"])
            parts.append(f"{where} {split}: {c['added']} added, {c['removed']} removed, {c['changed']} changed"
                         + (f" ({kinds})" if kinds else ""))
    reasons_by_item = {(entry["id"], entry["reason"].split(" (")[0]) for splits in diff["configs"].values()
                       for v in splits.values() for entry in (*v["removed"], *v["added"], *v["changed"])
                       if entry.get("reason")}
    reasons = Counter(reason for _, reason in reasons_by_item)  # items, not items times configs
    why = "; reasons: " + ", ".join(f"{r} ({n})" for r, n in sorted(reasons.items())) if reasons else ""
    return f"Against {against}: " + "; ".join(parts) + why + "."


def diff_table_rows(diff: Mapping[str, Any]) -> Iterable[tuple]:
    for config, splits in diff["configs"].items():
        for split, v in splits.items():
            c = v["counts"]
            yield (config, split, c["added"], c["removed"], c["changed"], c["changed_key"], c["changed_options"],
                   c["changed_text"], c["unchanged"])


DIFF_COLUMNS = ("config", "split", "added", "removed", "changed", "key", "options", "text", "unchanged")
