"""MATH-MC's form cues on the real data: what a reader sees in the options alone.

    python benchmarks/math_mc_forms.py --data ../shared/data [--choices 2 3 4] [--keep DIR]
    python benchmarks/math_mc_forms.py --release DIR [DIR ...]     # figures of releases already built

Builds MATH-MC from the real predictions with each ``--choices`` (10 sets), then reads the released Parquet
files (every set; one row is an item-set) and prints, per build:

* chance, and the accuracy of the shortest and the longest option (ties shared evenly among the tied options);
* "the option with a space": over the item-sets where exactly one option holds a space, how often it is the key;
* per typesetting mark (a space, ``=``, ``\\approx``, a thousands comma, ``\\text``, ``\\left``, ``\\dfrac``):
  the odd-one-out rules (the one option with the mark, and its mirror, the one option without it) scored over
  the item-sets where they apply, with their count;
* distinct (item, option) pairs with ``=`` or ``\\approx`` (key or distractor), with words or a free letter
  where the key has none, bare letters, and distractors that are the key rounded to their own decimals.

The rules read the options only, with plain regular expressions: they share no code with the builder.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pyarrow.parquet as pq

from harness import REPO, run_builder

MARKS = {
    "space": re.compile(r" "),
    "=": re.compile(r"(?<![<>!\\])="),
    "\\approx": re.compile(r"\\approx"),
    "thousands comma": re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?![\d])"),
    "\\text": re.compile(r"\\(?:text|mbox|mathrm)\b"),
    "\\left": re.compile(r"\\left\b|\\right\b"),
    "\\dfrac": re.compile(r"\\[dt]frac\b"),
}
_COMMAND = re.compile(r"\\[a-zA-Z]+|\\begin\{[a-z]*\}|\\end\{[a-z]*\}")
_WORD = re.compile(r"[A-Za-z]{2,}")
_BARE_LETTER = re.compile(r"^\(?[A-Ea-e]\)?$")
_DECIMAL = re.compile(r"^-?\d+\.(\d+)$")
_FRACTION = re.compile(r"^(-?)(?:\\frac\{(\d+)\}\{(\d+)\}|(\d+)/(\d+)|(\d+(?:\.\d+)?))$")


def letters(text: str) -> set[str]:
    """The letters of ``text`` once LaTeX commands are removed (the imaginary unit counts as a number)."""
    return set(re.findall(r"[A-Za-z]", _COMMAND.sub(" ", text))) - {"i"}


def words(text: str) -> bool:
    return bool(_WORD.search(_COMMAND.sub(" ", text)))


def plain_value(text: str) -> Fraction | None:
    match = _FRACTION.match(text.replace(" ", ""))
    if not match:
        return None
    sign, numerator, denominator, top, bottom, number = match.groups()
    if number is not None:
        value = Fraction(number)
    else:
        top, bottom = (numerator, denominator) if numerator is not None else (top, bottom)
        if int(bottom) == 0:
            return None
        value = Fraction(int(top), int(bottom))
    return -value if sign else value


def rounds_to(key: str, option: str) -> bool:
    """``option`` is a decimal, different from ``key``, and ``key`` rounded to its decimals."""
    decimal, value = _DECIMAL.match(option), plain_value(key)
    if not decimal or value is None or plain_value(option) == value:
        return False
    return abs(plain_value(option) - value) <= Fraction(1, 2 * 10 ** len(decimal.group(1)))


def read_release(release: Path) -> list[tuple[str, list[str], int]]:
    rows = []
    for file in sorted(release.glob("set_*/*.parquet")):
        table = pq.read_table(file, columns=["id", "choices", "answer"])
        rows += [(r["id"], r["choices"], r["answer"]) for r in table.to_pylist()]
    return rows


def by_length(rows, pick) -> float:
    score = 0.0
    for _, choices, answer in rows:
        lengths = [len(c) for c in choices]
        best = pick(lengths)
        tied = [i for i, n in enumerate(lengths) if n == best]
        score += (answer in tied) / len(tied)
    return score / max(1, len(rows))


def odd_one_out(rows, pattern: re.Pattern, alone_with: bool) -> tuple[float, int]:
    """The one option with the mark (``alone_with``), or the one without it; scored where there is one."""
    right = applies = 0
    for _, choices, answer in rows:
        marked = [i for i, c in enumerate(choices) if bool(pattern.search(c)) == alone_with]
        if len(marked) == 1:
            applies += 1
            right += marked[0] == answer
    return right / max(1, applies), applies


def option_census(rows) -> Counter:
    """Distinct (item, option) pairs of each kind, the key's and the distractors' apart."""
    kinds = [f"{mark} where the key has none" for mark in ("=", "\\approx", "thousands comma")]
    kinds += [f"with = ({role})" for role in ("key", "distractor")]
    kinds += ["words where the key has none", "letters the key lacks", "bare letter",
              "the key rounded to the distractor's decimals"]
    census: Counter = Counter({kind: 0 for kind in kinds})
    seen = set()
    for item, choices, answer in rows:
        key = choices[answer]
        for index, option in enumerate(choices):
            if (item, option) in seen:
                continue
            seen.add((item, option))
            role = "key" if index == answer else "distractor"
            census[f"options ({role})"] += 1
            census[f"with = ({role})"] += bool(MARKS["="].search(option))
            if role == "distractor":
                for mark in ("=", "\\approx", "thousands comma"):
                    only_here = MARKS[mark].search(option) and not MARKS[mark].search(key)
                    census[f"{mark} where the key has none"] += bool(only_here)
                census["words where the key has none"] += words(option) and not words(key)
                census["letters the key lacks"] += bool(letters(option) - letters(key)) and not words(option)
                census["bare letter"] += bool(_BARE_LETTER.match(option.strip()))
                census["the key rounded to the distractor's decimals"] += rounds_to(key, option)
    return census


def report(release: Path, label: str) -> None:
    rows = read_release(release)
    if not rows:
        print(f"{label}: no rows")
        return
    chance = sum(1 / len(c) for _, c, _ in rows) / len(rows)
    print(f"== {label}: {len(rows)} item-sets ({len({r[0] for r in rows})} items), chance {chance:.1%}")
    print(f"shortest option {by_length(rows, min):.1%}, longest option {by_length(rows, max):.1%}")
    for name, pattern in MARKS.items():
        for alone_with in (True, False):
            accuracy, applies = odd_one_out(rows, pattern, alone_with)
            rule = f"the one option {'with' if alone_with else 'without'} {name}"
            found = f"{accuracy:.1%} of {applies} item-sets where it applies" if applies else "never applies"
            print(f"  {rule}: {found}")
    lone = [(c, a) for _, c, a in rows if sum(" " in x for x in c) == 1]
    keyed = sum(" " in c[a] for c, a in lone)
    print(f"exactly one option with a space: {len(lone)} item-sets, the key in {keyed} "
          f"({keyed / max(1, len(lone)):.1%}), a distractor in {len(lone) - keyed}")
    for kind, count in sorted(option_census(rows).items()):
        print(f"  {kind}: {count}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--choices", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--release", type=Path, nargs="+", help="report on these release folders instead of building")
    parser.add_argument("--keep", type=Path, help="build into this folder (kept) instead of a temporary one")
    args = parser.parse_args()
    if args.release:
        for release in args.release:
            report(release, str(release))
        return
    data = args.data.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        for choices in args.choices:
            out = root / f"math_mc_{choices}"
            seconds, peak = run_builder("math_mc", ["--source", str(data / "math"), "--predictions",
                                                    str(data / "predictions" / "math_test.jsonl"),
                                                    "--choices", str(choices), "--output", str(out),
                                                    "--max-excluded", "1"])  # most problems have no prediction
            report(out, f"{choices} options (built and validated in {seconds:.1f} s, peak {peak:.0f} MiB)")


if __name__ == "__main__":
    main()
