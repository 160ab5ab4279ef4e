"""``python -m builders diff OLD NEW``: what changed between two releases (folders, or ``REPO@vX.Y.Z`` from the Hub).

Per config and split: the items added, removed and changed (key, options, text), each with the reason where the new
release knows it (:mod:`builders.core.release.diff`). ``--output FILE`` writes the whole diff as JSON (the
``diff.json`` that ``--push`` puts into a release).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence


def parser() -> argparse.ArgumentParser:
    from builders.core.pipeline.cli import ArgumentParser

    command = ArgumentParser(prog="python -m builders diff", description=__doc__.split("\n\n")[0])
    command.add_argument("old", metavar="OLD", help="the earlier release: a folder, or REPO@vX.Y.Z")
    command.add_argument("new", metavar="NEW", help="the later release: a folder, or REPO@vX.Y.Z")
    command.add_argument("--output", type=Path, metavar="FILE", help="write the whole diff here, as JSON")
    command.add_argument("--list", action="store_true", help="also print every item added, removed or changed")
    return command


def main(argv: Sequence[str] | None = None) -> int:
    from builders.core.pipeline.cli import check_writable_file, exit_code

    def run() -> None:
        args = parser().parse_args(argv)
        if args.output is not None:
            check_writable_file(args.output)
        from builders.core.items.tables import Table
        from builders.core.release.diff import (
            DIFF_COLUMNS,
            RELEASE_FILES,
            diff_releases,
            diff_table_rows,
            read_release,
            summary,
        )
        from builders.core.release.reader import open_release

        old, new = (read_release(open_release(spec, RELEASE_FILES)) for spec in (args.old, args.new))
        diff = {"old": args.old, "new": args.new, **diff_releases(old, new)}
        print(Table(f"{args.old} -> {args.new}", DIFF_COLUMNS, tuple(diff_table_rows(diff))).to_markdown())
        print(summary(diff, args.old))
        if args.list:
            for config, splits in diff["configs"].items():
                for split, found in splits.items():
                    for what in ("added", "removed", "changed"):
                        for entry in found[what]:
                            changed = f" [{', '.join(entry['changes'])}]" if what == "changed" else ""
                            print(f"{config}/{split} {what} {entry['id']}{changed}: {entry['reason'] or ''}".rstrip(": "))
        if args.output is not None:
            args.output.write_text(json.dumps(diff, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"wrote {args.output}", file=sys.stderr)

    return exit_code(run)


if __name__ == "__main__":
    raise SystemExit(main())
