"""MATH-MC's source: MATH (the Hub's subject configs, a split's rows concatenated in subject order); the gold is the
last boxed expression of the solution, in the options' normal form."""

from __future__ import annotations

import re

from builders.core.items.outcomes import Exclude
from builders.core.items.record import OpenItem, Value
from builders.core.sources import fields
from builders.core.sources.loading import Benchmark, RowContext

from .forms import boxed_contents, letter_answer, option_form

NAME = "math_mc"

MATH_CITATION = """@inproceedings{hendrycks2021math,
  title={Measuring Mathematical Problem Solving With the {MATH} Dataset},
  author={Hendrycks, Dan and Burns, Collin and Kadavath, Saurav and Arora, Akul and Basart, Steven and Tang, Eric and Song, Dawn and Steinhardt, Jacob},
  booktitle={NeurIPS Datasets and Benchmarks},
  year={2021}
}"""


MATH_SUBJECTS = ("algebra", "counting_and_probability", "geometry", "intermediate_algebra", "number_theory",
                 "prealgebra", "precalculus")


EXTRA_METADATA = {"level": Value("string")}


def math_item(row: dict, ctx: RowContext) -> OpenItem:
    """Ids and indices count the rows of a split, the Hub's subject configs concatenated in name order."""
    row_id = f"math/{ctx.split}/{ctx.split_position}"
    problem = fields.text(row, "problem", row_id, non_empty=True)
    solution = fields.text(row, "solution", row_id, non_empty=True)
    boxed = gold_boxes(solution)
    if not boxed:
        raise Exclude("no_gold_answer", "solution", "no non-empty \\boxed{} in the solution")
    gold = option_form(boxed[-1])
    if letter_answer(gold):
        raise Exclude("letter_answer", "solution", f"the answer {gold!r} names lettered choices, which the release's "
                      "own option letters would confuse")
    alternatives = tuple(dict.fromkeys(option_form(b) for b in boxed if option_form(b) != gold))
    for name in ("type", "level"):  # optional, but a present value must be text (the subject, "Level 3")
        fields.optional_text(row, name, row_id)
    return OpenItem(row_id, ctx.split, ctx.split_position, problem, gold, boxed[-1], solution, ctx.config,
                    subject=row.get("type"), metadata={"level": row.get("level")}, gold_alternatives=alternatives)


MATH = Benchmark(name="math", hub_id="EleutherAI/hendrycks_math", config=None, splits=("train", "test"),
                 to_item=math_item, license="mit", citation=MATH_CITATION, pretty_name="MATH",
                 subconfigs=MATH_SUBJECTS, subject_field="type")


_PHANTOM = re.compile(r"\\[hv]?phantom\s*\{[^{}]*\}")


def gold_boxes(solution: str) -> list[str]:
    """The solution's boxed answers with content; a box holding only ``\\phantom{}`` is a blank to fill in
    the text ("-3 = -7 + \\boxed{\\phantom{2}}"), not an answer."""
    return [b for b in boxed_contents(solution) if option_form(_PHANTOM.sub("", b))]
