"""The card's tables: rows and demonstrations per config, the prompts that show an unchanged demonstration, the
symbol sets (the items altered, copied unchanged and excluded are the core's outcome table,
:func:`builders.core.items.outcomes.outcome_table`); and what a build without demonstrations left out."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from builders.core.items.record import LETTERS, MCQRecord
from builders.core.items.tables import Statistics, Table
from builders.core.sources.loading import LoadedSource

from .configs import SYMBOL_EXTENSIONS, SYMBOL_SETS, ConfigSpec, config_specs, no_demonstrations_reason, \
    shows_demonstrations


def statistics(specs: Sequence[ConfigSpec], configs: Mapping[str, Mapping[str, list[MCQRecord]]],
               fewshot_split: str | None, shots: int, sampler: str) -> Statistics:
    splits = list(dict.fromkeys(split for records in configs.values() for split in records))
    rows = []
    for spec in specs:
        rows.append((spec.name, spec.family, spec.baseline or "–", *[len(configs[spec.name].get(s, [])) for s in splits],
                     demonstrations_text(spec, shots, sampler, fewshot_split)))
    return Statistics([
        Table("Rows per config", ("config", "family", "compared with", *[f"{s} rows" for s in splits],
                                  "demonstrations per prompt"), rows,
              note="Every config keeps every source item; items that cannot take a config's change are copied "
                   "unchanged (the table \"Items altered, copied unchanged and excluded\")."),
        unchanged_demonstration_table(specs, configs, fewshot_split),
        Table("Symbol sets", ("set", "the 4 symbols", "extension (options 5 and beyond)"),
              [(n, " ".join(SYMBOL_SETS[n]), " ".join(SYMBOL_EXTENSIONS[n])) for n in SYMBOL_SETS]),
    ])


def demonstrations_text(spec: ConfigSpec, shots: int, sampler: str, fewshot_split: str | None = None) -> str:
    if spec.demonstrations == "none" or shots == 0:
        return "none"
    which = "first" if sampler == "first_n" else "random"
    if spec.promises_demonstration_answers(fewshot_split):
        return f"the subject's {which} {shots} among the few-shot items it moves to {LETTERS[spec.gold_position]}"
    kinds = {"same_subject": f"the subject's {which} {shots}",
             "other_subject": f"another subject's {which}, as many as `original`",
             "trivial": f"{which} trivial questions, as many as `original`"}
    return kinds[spec.demonstrations] + (", then the item" if spec.context_answer else "")


def unchanged_demonstration_table(specs: Sequence[ConfigSpec], configs: Mapping[str, Mapping[str, list[MCQRecord]]],
                                  fewshot_split: str | None) -> Table:
    """Per config and split: the prompts whose demonstrations include an item copied unchanged (shown unchanged,
    never dropped). The items themselves are counted in the card's outcome table."""
    rows = []
    for spec in specs:
        splits = configs[spec.name]
        unchanged = {r.id for r in splits.get(fewshot_split or "", []) if r.metadata["skip_reason"]}
        for split, records in splits.items():
            with_demo = sum(1 for r in records if unchanged.intersection(r.columns["fewshot"]))
            if with_demo:
                rows.append((spec.name, split, with_demo))
    return Table("Prompts with an unchanged demonstration", ("config", "split", "prompts"), rows,
                 note="Items whose options cannot be reordered or relabelled are copied unchanged (source order, "
                      "letters) with `metadata.skip_reason`, in the configs and splits that change options; items "
                      "with duplicated options carry `duplicate_choices` in every config and split. As demonstrations "
                      "they are shown unchanged: these prompts show one.")


def left_out_configs(source: LoadedSource, shots: int, specs: Sequence[ConfigSpec]) -> dict[str, Any] | None:
    """For the card: the configs a build without demonstrations leaves out, and why (None: none left out)."""
    if shows_demonstrations(source, shots):
        return None
    names = [s.name for s in config_specs(len(LETTERS)) if s.changes_only_demonstrations]
    kept = {s.name for s in specs}
    return {"reason": no_demonstrations_reason(source, shots),
            "families": sorted({n.rsplit("_", 1)[0] + "_<L>" if n.startswith("fewshot_gold_at_") else n
                                for n in names if n not in kept})}
