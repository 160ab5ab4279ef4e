"""Export a release in the layout a paper's own evaluation code reads.

    python -m builders.export RELEASE --layout mc-evaluation --output DIR
    python -m builders.export RELEASE --layout mmlu-pro-plus --output DIR

``RELEASE`` is a release folder or ``REPO@vX.Y.Z``. Layouts:

- ``mc-evaluation`` (Zhang et al., 2024: GSM-MC, MATH-MC, PythonIO): for each config, ``<config>/train.jsonl``
  and ``<config>/test.jsonl`` (the splits the release has), one object per question with ``Question``, ``A`` ...
  (one key per option), ``Answer`` (the gold letter) and, for MATH-MC, ``Type`` (the MATH subject).
- ``mmlu-pro-plus`` (Taghanaki et al., 2024): for each config and split, ``<config>/<split>.jsonl`` in
  MMLU-Pro's Hub columns (``question_id``, ``question``, ``options``, ``answer`` letter, ``answer_index``,
  ``cot_content``, ``category``, ``src``) plus the flags its evaluation code reads (``is_modified``,
  ``is_modified_non_llm``, ``modification_type_non_llm``).

The export is written whole or not at all, and ``export.json`` says which release and layout the folder holds: a
later export replaces an export of the same release and layout, and refuses any other folder that is not empty.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS
from builders.core.release.build_config import BUILD_CONFIG_FILE
from builders.core.pipeline.cli import ArgumentParser, RawDescriptionHelpFormatter, check_writable_folder, exit_code
from builders.core.release.reader import open_release


def release_rows(spec: str) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """{config: {split: rows}} of a release folder, or of ``REPO@TAG`` on the Hub."""
    folder = open_release(spec, ["*/*.parquet", BUILD_CONFIG_FILE])
    import pyarrow as pa
    import pyarrow.parquet as pq

    configs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    builder = release_builder(folder)
    for file in sorted(folder.glob("*/*.parquet")):
        split = file.name.split("-")[0]
        try:
            rows = pq.read_table(file).to_pylist()
        except (pa.ArrowException, OSError, ValueError) as error:  # a damaged or truncated file
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise UserError(f"{file}: not a readable Parquet file ({first})") from None
        for number, row in enumerate(rows):
            _check_row(row, f"{file.parent.name}/{file.name} row {number}")
        for row in rows:
            row["_builder"] = builder
        configs.setdefault(file.parent.name, {}).setdefault(split, []).extend(rows)
    if not configs:
        raise UserError(f"{spec} holds no Parquet files: not an mcqforge release")
    return configs


def _check_row(row: Mapping[str, Any], where: str) -> None:
    """A release row as every layout reads it: a question, 2 to 26 options of text, the gold's index among them."""
    choices = row.get("choices")
    gold = row["answer_index"] if row.get("answer_index") is not None else row.get("answer")
    if not isinstance(row.get("question"), str):
        problem = "no question"
    elif not isinstance(choices, list) or not all(isinstance(c, str) for c in choices) or \
            not 2 <= len(choices) <= len(LETTERS):
        problem = f"'choices' must be 2 to {len(LETTERS)} options of text"
    elif isinstance(gold, bool) or not isinstance(gold, int) or not 0 <= gold < len(choices):
        problem = f"the answer {gold!r:.20} is not the index of one of its {len(choices)} options"
    else:
        return
    raise UserError(f"{where}: not an mcqforge release row ({problem})")


def release_builder(folder: Path) -> str | None:
    """The builder that wrote the release (its build_config.yaml), None when the file is missing."""
    import yaml

    try:
        config = yaml.safe_load((folder / BUILD_CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    return config.get("builder") if isinstance(config, dict) else None


def _gold(row: Mapping[str, Any]) -> int:
    """The gold index: ``answer_index`` where the release carries MMLU-Pro's columns (``answer`` is a letter)."""
    gold = row.get("answer_index")
    return int(gold if gold is not None else row["answer"])


def mc_evaluation_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"Question": row["question"]}
    out.update({LETTERS[i]: choice for i, choice in enumerate(row["choices"])})
    out["Answer"] = LETTERS[_gold(row)]
    if row.get("_builder") == "math_mc" or str(row.get("source") or "").endswith("hendrycks_math"):
        out["Type"] = row.get("subject")
    return out


MMLU_PRO_COLUMNS = ("question_id", "question", "options", "answer", "answer_index", "cot_content", "category", "src")
COMPATIBILITY_FLAGS = ("is_modified", "is_modified_non_llm", "modification_type_non_llm")


def mmlu_pro_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """MMLU-Pro's Hub columns, rebuilt from the record where a column is missing, and the flags where present."""
    metadata = row.get("metadata") or {}
    question_id = row.get("question_id", metadata.get("question_id"))
    if question_id is None:
        raise UserError("the release has no question_id (column or metadata): not made from MMLU-Pro")
    gold = _gold(row)
    out = {"question_id": question_id, "question": row["question"], "options": list(row["choices"]),
           "answer": LETTERS[gold], "answer_index": gold, "cot_content": row.get("cot_content") or "",
           "category": row.get("category"), "src": row.get("src", metadata.get("src"))}
    out.update({flag: row[flag] for flag in COMPATIBILITY_FLAGS if flag in row})
    return out


# for which builders' releases each layout is (--help; the module's text, its epilog, says what each holds)
LAYOUT_USERS = {"mc-evaluation": "GSM-MC, MATH-MC and PythonIO releases",
                "mmlu-pro-plus": "MMLU-Pro+ releases, and any release made from MMLU-Pro"}
# layout -> (row converter, which splits it writes: None for every split)
LAYOUTS: dict[str, tuple[Callable[[Mapping[str, Any]], dict[str, Any]], tuple[str, ...] | None]] = {
    "mc-evaluation": (mc_evaluation_row, ("train", "test")),
    "mmlu-pro-plus": (mmlu_pro_row, None),
}


EXPORT_FILE = "export.json"  # what an export folder holds: written last, so a folder is an export once it is there


def export(spec: str, layout: str, output: Path) -> list[Path]:
    """Write ``spec`` in ``layout`` under ``output``, whole or not at all (staged beside it, then swapped in).

    ``output`` is new, empty, or an earlier export of the same release in the same layout (replaced whole); a
    folder holding anything else, another release's export included, is refused before any work."""
    from builders.core.release.writer import recover_interrupted, write_folder_atomically

    check_writable_folder(output)
    if Path(spec).is_dir() and Path(output).resolve().is_relative_to(Path(spec).resolve()):
        raise UserError(f"--output {output} is inside the release {spec}: the export would change the release")
    recover_interrupted(Path(output))
    identity = {"release": _release_identity(spec, Path(output)), "layout": layout}
    _refuse_to_mix(Path(output), identity)
    configs = release_rows(spec)
    written: list[str] = []

    def fill(staging: Path) -> None:
        written.extend(_write_layout(configs, layout, staging))
        if not written:
            raise UserError(f"{spec} has no {' or '.join(LAYOUTS[layout][1] or ())} split: nothing to write in the "
                            f"{layout} layout")
        (staging / EXPORT_FILE).write_text(json.dumps({**identity, "files": written}, indent=2) + "\n",
                                           encoding="utf-8")

    write_folder_atomically(Path(output), fill)
    return [Path(output) / relative for relative in written]


def _release_identity(spec: str, output: Path) -> str:
    """``REPO@TAG``, or the release folder's path from the export folder (``../release``): no artefact carries a
    machine's path, and a folder moved with its export still names its release."""
    folder = Path(spec).expanduser()
    return os.path.relpath(folder.resolve(), output.expanduser().resolve()) if folder.is_dir() else spec


def _refuse_to_mix(output: Path, identity: Mapping[str, str]) -> None:
    if not output.is_dir() or not any(output.iterdir()):
        return
    try:
        existing = json.loads((output / EXPORT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise UserError(f"--output {output} is not empty and is not an mcqforge export; "
                        "choose another folder") from None
    if {key: existing.get(key) for key in identity} != dict(identity):
        raise UserError(f"--output {output} holds the {existing.get('layout')} export of {existing.get('release')}; "
                        f"choose another folder for the {identity['layout']} export of {identity['release']}")


def _write_layout(configs: Mapping[str, Mapping[str, list[dict[str, Any]]]], layout: str, folder: Path) -> list[str]:
    """Every config and split the layout takes, as ``<config>/<split>.jsonl`` under ``folder``; their paths."""
    convert, splits = LAYOUTS[layout]
    folder.mkdir(parents=True)
    written = []
    for config, config_splits in configs.items():
        for split, rows in config_splits.items():
            if splits is not None and split not in splits:
                continue
            relative = f"{config}/{split}.jsonl"
            (folder / config).mkdir(exist_ok=True)
            _write_jsonl(folder / relative, (convert(row) for row in rows))
            written.append(relative)
    return written


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m builders.export", description=__doc__.split("\n\n")[0],
                            formatter_class=RawDescriptionHelpFormatter,
                            epilog=__doc__.split("\n\n", 1)[1].replace("``", ""))
    parser.add_argument("release", help="a release folder, or REPO@vX.Y.Z on the Hub")
    parser.add_argument("--layout", choices=sorted(LAYOUTS), required=True,
                        help="the paper's layout to write (each is described below): "
                             + "; ".join(f"'{name}' for {users}" for name, users in LAYOUT_USERS.items()))
    parser.add_argument("--output", type=Path, required=True, metavar="DIR",
                        help="the export folder: new, empty, or an earlier export of the same release and layout "
                             "(replaced whole); its export.json names the release and the layout")

    def run() -> None:
        args = parser.parse_args(argv)
        paths = export(args.release, args.layout, args.output)
        print(f"wrote {len(paths)} files under {args.output}")

    return exit_code(run)


if __name__ == "__main__":
    sys.exit(main())
