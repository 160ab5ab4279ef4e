"""The human audit: export a stratified sample of a release for review, import the verdicts for the next card.

    python -m builders.mmlu_pro_plus export-audit out/ --output audit/
    python -m builders.mmlu_pro_plus import-audit audit/audit_sample.csv --output audit/verdicts.json

The next build takes the verdicts as ``--audit-verdicts`` and shows them in its card (:func:`audit_table`).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import math
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS
from builders.core.items.rng import item_rng
from builders.core.items.tables import Table
from builders.core.options import argtypes
from builders.core.pipeline import cli
from builders.core.release.reader import load_release_split

from .groups import CFPP, CONFIG, GROUPS, NAME, PFPP, TPP, UNCHANGED

logger = logging.getLogger(__name__)

VERDICTS = ("ok", "wrong", "unsure")
AUDIT_FIELDS = ["audit_id", "id", "question_id", "modification", "category", "question", "options", "answer",
                "pair_option", "added_option", "original_answer", "generator_model", "template_version",
                "added_option_similarity", "what_to_check", "verdict", "reviewer_notes"]
WHAT_TO_CHECK = {
    TPP: "Is the added option correct, and more than a restatement of the original answer, so that the pair "
         "option is the one right answer?",
    PFPP: "Is the second option named in the pair wrong, so that the original answer alone is right?",
    CFPP: "Are both options named in the pair wrong, so that the original answer alone is right?",
    UNCHANGED: "Is the answer right?",
}


# ---- export a stratified sample --------------------------------------------------------------------------------


def _letter(index: int | None, choices: Sequence[str]) -> str:
    return "" if index is None else f"{LETTERS[index]}. {choices[index]}"


def audit_row(row: Mapping[str, Any], number: int) -> dict[str, Any]:
    choices, meta = row["choices"], row.get("metadata") or {}
    return {
        "audit_id": f"{number:04d}", "id": row["id"], "question_id": meta.get("question_id"),
        "modification": row["modification"], "category": row.get("category"), "question": row["question"],
        "options": "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices)),
        "answer": _letter(row["answer_index"] if row.get("answer_index") is not None else row["answer"], choices),
        "pair_option": _letter(meta.get("pair_option_index"), choices),
        "added_option": _letter(meta.get("added_option_index"), choices),
        "original_answer": _letter(meta.get("original_answer_index"), choices),
        "generator_model": meta.get("generator_model"), "template_version": meta.get("template_version"),
        "added_option_similarity": meta.get("added_option_similarity"),
        "what_to_check": WHAT_TO_CHECK[row["modification"]], "verdict": "", "reviewer_notes": "",
    }


def stratified_sample(rows: Sequence[Mapping[str, Any]], per_group: int, seed: int) -> list[Mapping[str, Any]]:
    """``per_group`` rows of each group (all of a smaller group), by the per-item ranking; in group order."""
    sample = []
    for group in GROUPS:
        members = sorted((r for r in rows if r["modification"] == group),
                         key=lambda r: (float(item_rng(seed, r["id"], NAME, "audit").random()), r["id"]))
        sample.extend(members[:per_group])
    return sample


def export_audit(release: str, output: Path, per_group: int = 100, seed: int = 0, config: str = CONFIG,
                 split: str = "test", revision: str | None = None) -> dict[str, int]:
    rows = list(load_release_split(release, config, split, revision))
    sample = [audit_row(r, i + 1) for i, r in enumerate(stratified_sample(rows, per_group, seed))]
    output.mkdir(parents=True, exist_ok=True)
    with open(output / "audit_sample.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=AUDIT_FIELDS)
        writer.writeheader()
        writer.writerows(sample)
    with open(output / "audit_sample.jsonl", "w", encoding="utf-8") as handle:
        for row in sample:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    counts = dict(Counter(r["modification"] for r in sample))
    manifest = {"release": Path(release).name if Path(release).exists() else release, "revision": revision,
                "config": config, "split": split, "per_group": per_group, "seed": seed, "sampled": counts,
                "verdicts": list(VERDICTS)}
    (output / "audit_manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    logger.info("wrote %d audit rows to %s", len(sample), output)
    return counts


# ---- import the verdicts ---------------------------------------------------------------------------------------


def read_audit_file(path: Path) -> list[dict[str, Any]]:
    text = Path(path).read_text(encoding="utf-8-sig")
    if Path(path).suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if Path(path).suffix == ".csv":
        return list(csv.DictReader(io.StringIO(text)))
    raise UserError(f"{path}: expected the .csv or .jsonl written by export-audit")


def wilson_interval(successes: int, n: int, z: float = 1.96) -> list[float] | None:
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(centre - half, 4), round(centre + half, 4)]


def summarize_verdicts(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    bad = [f"{r.get('audit_id')}: {r.get('verdict')!r}" for r in rows
           if (str(r.get("verdict") or "").strip().lower()) not in ("", *VERDICTS)]
    if bad:
        raise UserError(f"verdicts must be one of {list(VERDICTS)} or empty; got {bad[:5]}"
                        + (f" and {len(bad) - 5} more" if len(bad) > 5 else ""))
    groups = {}
    for group in GROUPS:
        members = [r for r in rows if r["modification"] == group]
        verdicts = Counter(str(r.get("verdict") or "").strip().lower() for r in members)
        reviewed = sum(verdicts[v] for v in VERDICTS)
        decided = verdicts["ok"] + verdicts["wrong"]
        groups[group] = {"sampled": len(members), "reviewed": reviewed, **{v: verdicts[v] for v in VERDICTS},
                         "ok_rate": round(verdicts["ok"] / decided, 4) if decided else None,
                         "ok_rate_ci95": wilson_interval(verdicts["ok"], decided)}
    wrong = [{"id": r["id"], "modification": r["modification"], "notes": r.get("reviewer_notes") or ""}
             for r in rows if str(r.get("verdict") or "").strip().lower() == "wrong"]
    return {"groups": groups, "wrong_items": sorted(wrong, key=lambda w: w["id"])}


def import_audit(path: Path, output: Path) -> dict[str, Any]:
    rows = read_audit_file(path)
    summary = summarize_verdicts(rows)
    manifest_file = Path(path).with_name("audit_manifest.json")
    summary["manifest"] = json.loads(manifest_file.read_text()) if manifest_file.exists() else None
    summary["file"] = {"name": Path(path).name, "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def read_verdicts(path: Path) -> dict[str, Any]:
    try:
        summary = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"--audit-verdicts {path}: {error}") from None
    if not isinstance(summary, dict) or "groups" not in summary:
        raise UserError(f"--audit-verdicts {path}: not a file written by `import-audit`")
    return summary


def verdicts_files(summary: Mapping[str, Any] | None) -> dict[str, bytes]:
    """The previous release's verdicts, as the release carries them (none without ``--audit-verdicts``)."""
    if summary is None:
        return {}
    return {"audit/previous_release_verdicts.json": (json.dumps(summary, indent=2, sort_keys=True) + "\n").encode()}


def audit_table(summary: Mapping[str, Any]) -> Table:
    manifest = summary.get("manifest") or {}
    origin = f"release `{manifest.get('release')}`" + (f" at `{manifest['revision']}`" if manifest.get("revision") else "")
    note = (f"Reviewers judged a stratified sample of {origin} (file `{summary['file']['name']}`, sha256 "
            f"`{summary['file']['sha256'][:16]}…`). The ok rate is ok / (ok + wrong).")
    if summary.get("wrong_items"):
        note += " Items judged wrong: " + ", ".join(f"`{w['id']}`" for w in summary["wrong_items"][:50]) + \
            (" …" if len(summary["wrong_items"]) > 50 else "")
    rows = [(group, g["sampled"], g["reviewed"], g["ok"], g["wrong"], g["unsure"], g["ok_rate"],
             g["ok_rate_ci95"][0] if g["ok_rate_ci95"] else None, g["ok_rate_ci95"][1] if g["ok_rate_ci95"] else None)
            for group, g in summary["groups"].items()]
    return Table("Human audit of the previous release",
                 ("group", "sampled", "reviewed", "ok", "wrong", "unsure", "ok rate", "95% CI low", "95% CI high"),
                 rows, note=note, percent=("ok rate", "95% CI low", "95% CI high"))


# ---- commands --------------------------------------------------------------------------------------------------


def export_audit_command(argv: Sequence[str]) -> int:
    parser = cli.ArgumentParser(prog="python -m builders.mmlu_pro_plus export-audit",
                                     description="Write a stratified sample of a release for human review.")
    parser.add_argument("release", help="release folder or Hub dataset repo id")
    parser.add_argument("--output", type=Path, required=True, help="folder for audit_sample.csv/.jsonl")
    parser.add_argument("--per-group", type=argtypes.positive_int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--split", default="test")
    parser.add_argument("--revision", default=None, help="tag of a Hub release, e.g. v1.0.0")
    args = parser.parse_args(argv)
    counts = export_audit(args.release, args.output, args.per_group, args.seed, args.config, args.split, args.revision)
    print(f"wrote {sum(counts.values())} rows ({counts}) to {args.output}")
    return 0


def import_audit_command(argv: Sequence[str]) -> int:
    parser = cli.ArgumentParser(prog="python -m builders.mmlu_pro_plus import-audit",
                                     description="Summarise reviewed verdicts for the next release's card "
                                                 "(pass the output to the build as --audit-verdicts).")
    parser.add_argument("audit_file", type=Path, help="the filled audit_sample.csv or .jsonl")
    parser.add_argument("--output", type=Path, required=True, help="verdict summary (JSON)")
    args = parser.parse_args(argv)
    summary = import_audit(args.audit_file, args.output)
    reviewed = sum(g["reviewed"] for g in summary["groups"].values())
    print(f"recorded {reviewed} verdicts in {args.output}; build the next release with --audit-verdicts {args.output}")
    return 0
