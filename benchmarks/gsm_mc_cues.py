"""Answer cues of a GSM-MC release, read from its Parquet files: the key's rank among the numeric options,
the no-knowledge rules "pick the option closest to the mean" and "pick an integer option" (uniformly among the
integer options; none: a uniform guess), and which known defects remain (wrong keys released,
distractors that are the key in another unit).

    python benchmarks/gsm_mc_cues.py RELEASE [RELEASE ...]
    python benchmarks/gsm_mc_cues.py --calibrate RELEASE   # refit the balanced draw's tilt from its pools.jsonl

``--calibrate`` fits :data:`builders.from_predictions.sets.BALANCE_TILTS` for the release's number of options: the tilt under which the key's mean
advantage (:func:`~builders.from_predictions.sets.key_advantages`) is zero in every column over all the release's
pools (:func:`~builders.from_predictions.sets.fit_balance_tilt`).
"""


from __future__ import annotations

import argparse
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pyarrow.parquet as pq

WRONG_KEYS = {"gsm8k/test/1309": "2180", "gsm8k/test/1042": "3.5", "gsm8k/test/403": "135", "gsm8k/test/749": "6",
              "gsm8k/test/823": "18", "gsm8k/test/288": "4"}
OTHER_UNIT = {"gsm8k/test/296": "21", "gsm8k/test/412": "60", "gsm8k/test/1130": "400", "gsm8k/test/527": "2",
              "gsm8k/test/1303": "28"}


def value(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def cues(release: Path) -> dict:
    ranks: Counter = Counter()
    closest = integer = items = 0.0
    released, other_unit = set(), 0
    for file in sorted(release.glob("set_*/*.parquet")):
        for row in pq.read_table(file, columns=["id", "choices", "answer"]).to_pylist():
            values = [value(c) for c in row["choices"]]
            key = values[row["answer"]]
            items += 1
            ranks[sum(v < key for v in values)] += 1
            mean = sum(values) / len(values)
            distances = [abs(v - mean) for v in values]
            best = [i for i, d in enumerate(distances) if d == min(distances)]
            closest += (row["answer"] in best) / len(best)
            integers = [i for i, v in enumerate(values) if v.denominator == 1]
            integer += (row["answer"] in integers) / len(integers) if integers else 1 / len(values)
            if row["id"] in WRONG_KEYS:
                released.add(row["id"])
            other_unit += OTHER_UNIT.get(row["id"]) in row["choices"]
    return {"items": int(items), "key rank": {r: f"{n / items:.1%}" for r, n in sorted(ranks.items())},
            "closest to mean": f"{closest / items:.1%}", "pick an integer option": f"{integer / items:.1%}",
            "known wrong keys released": sorted(released), "records with a known other-unit distractor": other_unit}


def calibrate(release: Path, largest: float = 20.0) -> tuple[float, ...]:
    """The balanced draw's tilt fitted on the pools of the release's kept items, for its number of options, with the
    smallest ridge that keeps every column's tilt within ``largest`` (where no tilt evens the key out, as with few
    pools of 8 options, the unridged fit runs off to near-deterministic draws)."""
    import json

    from builders.from_predictions.pools import Candidate, Pool
    from builders.from_predictions.sets import fit_balance_tilt
    from builders.gsm_mc.checks import float_value

    kept = {row["id"] for file in release.glob("set_0/*.parquet") for row in pq.read_table(file, columns=["id"]).to_pylist()}
    rows = [json.loads(line) for line in (release / "pools.jsonl").read_text().splitlines()]
    pools = [Pool(row["question_id"], row["gold"], [Candidate(c["text"], tuple(c["models"])) for c in row["candidates"]])
             for row in rows if row["question_id"] in kept]
    choices = len(next(iter(pq.read_table(next(release.glob("set_0/*.parquet")), columns=["choices"]).to_pylist()))["choices"])
    for ridge in (1e-4, 1e-3, 1e-2):
        tilt = fit_balance_tilt(pools, choices - 1, float_value, ridge)
        if max(abs(t) for t in tilt) <= largest:
            break
    return tilt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("releases", nargs="+", type=Path)
    parser.add_argument("--calibrate", action="store_true", help="print the balanced draw's tilt fitted on the pools")
    args = parser.parse_args()
    for release in args.releases:
        print(release.name, calibrate(release) if args.calibrate else cues(release))


if __name__ == "__main__":
    main()
