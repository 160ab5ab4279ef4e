"""Surface form: what singles out an option without reading the problem. The ``form_cue`` baseline of the shortcut
audit (and its mirror for 2-option items), and the card's count of the items whose gold alone carries a mark."""

from __future__ import annotations

import re
from collections import Counter

from builders.core.build.result import Baseline, only_two_options
from builders.core.items.record import MCQRecord
from builders.core.items.tables import Table


FORM_FEATURES = {
    "equation": re.compile(r"(?<![<>\\!])=(?!=)"),
    "text or units": re.compile(r"\\(?:text|mbox|mathrm|textbf)\b|\d\s*(?:cm|m|km|in|ft|feet|inches|units|"
                                       r"degrees|dollars|cents|meters|miles|hours|minutes|seconds)\b"),
    "degrees": re.compile(r"\\circ|\\degree|°"),
    "percent": re.compile(r"%"),
    "dollar": re.compile(r"\\\$|^\$"),
}


def form_marks(text: str) -> frozenset[str]:
    return frozenset(name for name, pattern in FORM_FEATURES.items() if pattern.search(text))


def form_cue(record: MCQRecord) -> str | None:
    """The mark that sets the gold apart from every distractor (it alone has it, or it alone lacks it)."""
    marks = [form_marks(c) for c in record.choices]
    gold = marks[record.answer]
    others = [m for i, m in enumerate(marks) if i != record.answer]
    for name in FORM_FEATURES:
        if others and all((name in gold) != (name in m) for m in others):
            return name
    return None


def _form_odd_one_out(record: MCQRecord) -> int | None:
    """Pick the one option that carries a mark no other option has, or (3 options or more) the one option
    that lacks a mark all others have."""
    marks = [form_marks(c) for c in record.choices]
    for name in FORM_FEATURES:
        having = [i for i, m in enumerate(marks) if name in m]
        if len(having) == 1:
            return having[0]
        if len(marks) >= 3 and len(having) == len(marks) - 1:
            return next(i for i, m in enumerate(marks) if name not in m)
    return None


FORM_CUE = Baseline("form_cue", "the one option whose typesetting differs: alone with (or, from 3 options, alone "
                    "without) `name =`, `\\text{}`/units, `^\\circ`, `%` or `\\$`", _form_odd_one_out,
                    mirror="form_cue_mirror")


FORM_CUE_MIRROR = Baseline("form_cue_mirror", "in a 2-option item where `form_cue` applies, the other option",
                           only_two_options(_form_odd_one_out), mirror="form_cue")


def form_table(configs) -> Table:
    rows = []
    for config, splits in configs.items():
        if config == "default":
            continue
        for split, records in splits.items():
            cues = Counter(form_cue(r) for r in records)
            with_cue = sum(n for name, n in cues.items() if name is not None)
            rows.append((config, split, len(records), *(cues[name] for name in FORM_FEATURES), with_cue,
                         with_cue / len(records) if records else 0.0))
    return Table("Surface-form cues", ("config", "split", "items", *FORM_FEATURES, "items with a cue", "share"), rows,
                 note="Items whose gold alone carries (or alone lacks) a typesetting mark, per mark. Every option, the "
                      "gold included, is shown in one normal form (no `\\text{}`, units, `^\\circ`, `%`, `\\$`, or "
                      "`name =` before a value), so what remains is part of the answer itself (an equation, an "
                      "angle inside an expression). The shortcut audit reports the `form_cue` baseline.",
                 percent=("share",))
