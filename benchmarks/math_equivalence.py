"""The MATH equivalence engine at full scale: all 5,000 MATH test golds against a synthetic pool.

    python benchmarks/math_equivalence.py --data ../shared/data [--limit N] [--timeout 5] [--hostile 20]
    python benchmarks/math_equivalence.py --data ../shared/data --check-fast-path [--choices 2]

``--check-fast-path`` proves the builder's shortcuts around math-verify on the real build: every
pair the MATH-MC build from the real predictions judges (golds against boxed alternatives, answers against
the gold and each other, pool candidates against each other) is asked again of plain math-verify, both
ways, with no normal form or fingerprint. Printed: the pairs, how many the fast path settled, and the
disagreements: a pair the fast path calls different that plain math-verify calls equal must never occur.
Then the real release is built (``--choices``, 10 sets) and its options are checked with plain math-verify:
gold-equivalent distractors (must be 0), items with a surface-form cue (must be at most 2%), items kept, time.

Each problem gets at least 10 candidate answers, labelled by how they were made:

* ``retypeset``: the gold written differently but equal (``\\frac{1}{2}`` as ``1/2`` and ``0.5``,
  ``n`` as ``n.0``, ``\\sqrt{n}`` as ``n^{1/2}``, a two-term sum swapped, braces, spaces, ``\\dfrac``);
* ``perturbed``: the gold changed (plus one, negated, times ten, a digit changed);
* ``other``: the golds of four other problems;
* ``hostile`` (``--hostile`` problems): ``2^{2^{40}}``-style answers that make sympy hang.

The pools are built exactly as ``builders.math_mc`` builds them (``make_pools``: one batch task per
problem, then :func:`build_pool`). Printed: time per stage, items/s, peak memory, timeouts, and how the
re-typeset equivalents were merged: *recall* (share merged into the gold's class) and *precision* (share
of the merges into the gold's class whose candidate really is the gold: a re-typeset, or a candidate with
the gold's exact spelling); merges of other candidates are listed for inspection.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from fractions import Fraction
from functools import partial
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script from anywhere

from builders.core.items.record import OpenItem
from builders.from_predictions.collect import make_pools
from builders.math_mc.equivalence import MathEquivalence
from builders.math_mc.forms import answer_key, boxed_contents, display_form
from builders.registry import BUILDERS

HOSTILE = [r"2^{2^{40}}", r"10^{10^{10}}", r"9^{9^{9^{9}}}"]
_INT = re.compile(r"^-?\d+$")
_FRAC = re.compile(r"^(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}$")
_SQRT = re.compile(r"^(\d*)\\sqrt\{(\d+)\}$")
_SUM = re.compile(r"^([^+\-(){}\[\],=<>]+)\+([^+\-(){}\[\],=<>]+)$")


def retypesets(gold: str) -> list[str]:
    """Spellings of ``gold`` that mean the same."""
    found = []
    if _INT.match(gold):
        found += [f"{gold}.0", rf"\frac{{{2 * int(gold)}}}{{2}}"]
    fraction = _FRAC.match(gold)
    if fraction:
        sign, numerator, denominator = fraction.groups()
        found.append(f"{sign}{numerator}/{denominator}")
        value = Fraction(int(numerator), int(denominator))
        if all(p in (2, 5) for p in _prime_factors(value.denominator)) and value.denominator > 1:
            found.append(sign + format(float(value), "f").rstrip("0"))
    root = _SQRT.match(gold)
    if root:
        factor, radicand = root.groups()
        found.append(f"{factor}{'' if not factor else ' '}{radicand}^{{1/2}}".strip())
    terms = _SUM.match(gold)
    if terms:
        found.append(f"{terms.group(2)}+{terms.group(1)}")
    found += [f"{{{gold}}}", gold.replace(r"\frac", r"\dfrac") if r"\frac" in gold else f" {gold} "]
    return list(dict.fromkeys(f for f in found if f != gold))[:4]


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return factors + ([n] if n > 1 else [])


def perturbations(gold: str) -> list[str]:
    if _INT.match(gold):
        n = int(gold)
        return list(dict.fromkeys(str(v) for v in (n + 1, -n if n else 7, 10 * n if n else 3)))
    found = []
    digits = [i for i, c in enumerate(gold) if c.isdigit()]
    for position in digits[:2]:
        found.append(gold[:position] + str((int(gold[position]) + 1) % 10) + gold[position + 1:])
    found.append(f"-({gold})" if not gold.startswith("-") else gold[1:])
    found.append(f"{gold}+1")
    return list(dict.fromkeys(found))[:3]


def synthetic_outputs(golds: list[str], hostile: int, seed: int) -> tuple[list[list[tuple[str, str]]], list[dict]]:
    rng = np.random.default_rng(seed)
    outputs, labels = [], []
    for index, gold in enumerate(golds):
        others = [golds[int(j)] for j in rng.choice(len(golds), size=5, replace=False) if int(j) != index][:4]
        made = [(a, "retypeset") for a in retypesets(gold)] + [(a, "perturbed") for a in perturbations(gold)]
        made += [(a, "other") for a in others]
        if index < hostile:
            made.append((HOSTILE[index % len(HOSTILE)], "hostile"))
        outputs.append([(f"m{k}", display_form(answer)) for k, (answer, _) in enumerate(made)])
        labels.append({display_form(answer): kind for answer, kind in made})
    return outputs, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None, help="only the first N problems")
    parser.add_argument("--timeout", type=float, default=5.0, help="hard limit per math-verify task (s)")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--hostile", type=int, default=20, help="problems that also get a hanging answer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-build", action="store_true", help="skip the MATH-MC build from the real predictions")
    parser.add_argument("--check-fast-path", action="store_true",
                        help="only: every pair of the real build against plain math-verify, then the release figures")
    parser.add_argument("--choices", type=int, default=2, help="options per item of the real release (--check-fast-path)")
    args = parser.parse_args()
    logging.basicConfig(level=getattr(logging, os.environ.get("LOG_LEVEL", "ERROR")))
    if args.check_fast_path:
        check_fast_path(args.data, args.workers, args.timeout)
        release_figures(args.data, args.choices, args.workers)
        return

    start = time.perf_counter()
    with open(args.data / "math" / "test.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle][: args.limit]
    golds = [display_form(boxed_contents(r["solution"])[-1]) for r in rows]
    outputs, labels = synthetic_outputs(golds, args.hostile, args.seed)
    items = [OpenItem(f"math/test/{i}", "test", i, r["problem"], g, g, "") for i, (r, g) in enumerate(zip(rows, golds, strict=True))]
    answers = {item.id: out for item, out in zip(items, outputs, strict=True)}
    candidates = sum(len(o) for o in outputs)
    print(f"{len(items)} problems, {candidates} candidates ({candidates / len(items):.1f} per problem), "
          f"{Counter(k for lab in labels for k in lab.values())}")
    print(f"stage read+synthesise: {time.perf_counter() - start:.1f} s")

    start = time.perf_counter()
    with MathEquivalence(args.workers, args.timeout) as equivalence:
        pools = make_pools(items, answers, equivalence)
    seconds = time.perf_counter() - start
    stats = equivalence.stats
    print(f"stage pools (math-verify, hard limit {args.timeout} s): {seconds:.1f} s, {len(items) / seconds:.1f} problems/s, "
          f"{stats.pairs} pairs judged ({stats.pairs / seconds:.0f}/s), {stats.timeouts} timeouts, "
          f"{stats.errors} errors, {stats.skipped} skipped after two timeouts; hanging answers: {stats.hanging}")
    report_merges(items, pools, labels)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"peak memory: {peak:.0f} MiB (parent), {children:.0f} MiB (largest worker)")
    if not args.no_build:
        real_build(args.data)


def real_build(data: Path) -> None:
    """MATH-MC from the real predictions, as a user runs it."""
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-m", BUILDERS["math_mc"], "--source", str(data / "math"),
                                    "--predictions", str(data / "predictions" / "math_test.jsonl"),
                                    "--output", str(Path(tmp) / "out"), "--log-level", "WARNING"], cwd=REPO)
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit("the MATH-MC build failed")
        print(f"MATH-MC from the real predictions (10 sets x 4 options): {time.perf_counter() - start:.1f} s wall, "
              f"peak {usage.ru_maxrss / 1024:.0f} MiB")
        card = (Path(tmp) / "out" / "README.md").read_text(encoding="utf-8")
        for heading in ("### Gold answers", "### Distractor pools", "### Equivalence engine"):
            section = card.split(heading, 1)[1].split("###", 1)[0].strip()
            print(f"{heading[4:]}:\n{section[:1500]}\n")


def check_fast_path(data: Path, workers: int | None, timeout: float) -> None:
    """Every pair the real build judges, the builder's verdict against plain math-verify's."""
    from builders.core.pipeline import cli
    from builders.from_predictions import collect
    from builders import math_mc
    from builders.math_mc import transform
    from builders.math_mc.forms import surface_key
    from builders.math_mc.plain import judge_pairs

    args = cli.builder_parser(math_mc.BUILDER).parse_args(
        ["--source", str(data / "math"), "--predictions", str(data / "predictions" / "math_test.jsonl"),
         "--equivalence-timeout", str(max(timeout, 10.0))] + (["--equivalence-workers", str(workers)] if workers else []))
    options = math_mc.BUILDER.options_of(args)
    start = time.perf_counter()
    source = cli.load(math_mc.BUILDER, args, options)
    with MathEquivalence(args.equivalence_workers, args.equivalence_timeout) as equivalence:
        golds = transform.Golds(equivalence)
        golds(source.items)
        all_items = [item for split_items in golds.kept.values() for item in split_items]
        pools, collected, _ = transform.model_pools(source, options, all_items, equivalence, golds.excluded)
        transform.distinct_pools(pools, equivalence)
        # Pairs decided by the surface key never reach math-verify: every two spellings of one question's
        # answers (the gold among them) with one key.
        keyed = set()
        for item in all_items:
            answers = collect.answers_for(item, collected, partial(transform._extract, key=item.gold),
                                          partial(transform._extracted, key=item.gold))
            texts = sorted({item.gold, *(a.strip() for _, a in answers if a and a.strip())})
            keyed |= {(a, b) for i, a in enumerate(texts) for b in texts[i + 1:] if surface_key(a) == surface_key(b)}
        verdicts = dict(equivalence._known)
        prejudged = set(equivalence.prejudged_pairs)
        undecided = set(equivalence._undecided)
    built = time.perf_counter() - start
    pairs = sorted({tuple(sorted(pair)) for pair in set(verdicts) | keyed})
    verdicts = {tuple(sorted(pair)): verdict for pair, verdict in verdicts.items()}
    prejudged = {tuple(sorted(pair)) for pair in prejudged}
    undecided = {tuple(sorted(pair)) for pair in undecided}
    start = time.perf_counter()
    plain = judge_pairs(pairs, workers, max(timeout, 10.0))
    asked = time.perf_counter() - start
    classes = Counter()
    examples: dict[str, list] = {}
    for pair in pairs:
        path = "prejudged" if pair in prejudged else "surface key" if pair in keyed else \
            "undecided" if pair in undecided else "math-verify (both ways)"
        builder_says = "equal" if (pair in keyed or verdicts.get(pair)) else "different"
        kind = (path, builder_says, plain[pair])
        classes[kind] += 1
        examples.setdefault(" / ".join(kind), []).append(pair)
    print(f"pairs judged by the real build: {len(pairs)} (pools and checks in {built:.1f} s; plain math-verify on "
          f"every pair in {asked:.1f} s)")
    print("path | builder | plain math-verify | pairs")
    for (path, builder_says, plain_says), count in sorted(classes.items()):
        print(f"{path} | {builder_says} | {plain_says} | {count}")
    unsound = sum(n for (path, b, p), n in classes.items() if b == "different" and p == "equal")
    print(f"fast path unsound (builder 'different', plain math-verify 'equal'): {unsound} of {len(pairs)} pairs; "
          f"settled by the readings alone: {len(prejudged)}")
    for kind, found in examples.items():
        if "different / equal" in kind or "equal / different" in kind:
            print(f"  {kind}: {found[:5]}")


def release_figures(data: Path, choices: int, workers: int | None) -> None:
    """The real release with ``choices`` options: plain math-verify on its options, form cues, items, time."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", BUILDERS["math_mc"], "--source", str(data / "math"), "--predictions",
                        str(data / "predictions" / "math_test.jsonl"), "--choices", str(choices), "--output", str(out),
                        "--log-level", "ERROR"], cwd=REPO, check=True)
        seconds = time.perf_counter() - start
        items, bad, pairs = release_report(out, workers)
        print(f"MATH-MC {choices} options: {items} items kept of 5000, built and validated in {seconds:.1f} s; "
              f"gold-equivalent or undecided distractors by plain math-verify (both ways): {len(bad)} of "
              f"{pairs} distinct gold/distractor pairs {list(bad.items())[:5]}")


def release_report(out: Path, workers: int | None) -> tuple[int, dict, int]:
    """Per set, the items with a form cue; over all sets, the gold/distractor pairs plain math-verify does not
    call different. Returns (items, those pairs, distinct pairs)."""
    import datasets

    from builders.core.items.record import MCQRecord
    from builders.math_mc.cues import form_cue
    from builders.math_mc.plain import judge_pairs

    records, pairs = {}, set()
    for k in range(10):
        for row in datasets.load_dataset(str(out), f"set_{k}", split="test"):
            record = MCQRecord(id=row["id"], question=row["question"], choices=tuple(row["choices"]),
                               answer=row["answer"], source="", source_config=None, source_split="test", source_index=0)
            records[(k, row["id"])] = record
            gold = record.choices[record.answer]
            pairs |= {(gold, c) for i, c in enumerate(record.choices) if i != record.answer}
    verdicts = judge_pairs(sorted(pairs), workers, 10.0)
    bad = {pair: v for pair, v in verdicts.items() if v != "different"}
    items = {item for _, item in records}
    for k in range(10):
        set_records = [r for (s, _), r in records.items() if s == k]
        cues = Counter(form_cue(r) for r in set_records)
        with_cue = sum(n for name, n in cues.items() if name)
        print(f"set_{k}: {len(set_records)} items, form cue in {with_cue} ({with_cue / max(1, len(set_records)):.1%}) "
              f"{dict((n, c) for n, c in cues.items() if n)}")
    return len(items), bad, len(pairs)


def report_merges(items, pools, labels) -> None:
    merged_retypeset = total_retypeset = merged_exact = 0
    unexpected: list[tuple[str, str, str]] = []
    for item, label in zip(items, labels, strict=True):
        pool = pools[item.id]
        in_pool = {t for c in pool.candidates for t in (c.text, *c.variants)}
        for answer, kind in label.items():
            merged = answer not in in_pool
            if kind == "retypeset":
                total_retypeset += 1
                merged_retypeset += merged
            elif merged and answer_key(answer) == answer_key(item.gold):
                merged_exact += 1
            elif merged:
                unexpected.append((item.gold, answer, kind))
    merges = merged_retypeset + merged_exact + len(unexpected)
    print(f"re-typeset equivalents: {merged_retypeset} of {total_retypeset} merged into the gold "
          f"(recall {merged_retypeset / max(1, total_retypeset):.3f})")
    print(f"merges into the gold: {merges}; {merged_retypeset} re-typesets + {merged_exact} identical spellings, "
          f"{len(unexpected)} others (precision {(merged_retypeset + merged_exact) / max(1, merges):.3f})")
    for gold, answer, kind in unexpected[:30]:
        print(f"  merged {kind}: {answer!r} into gold {gold!r}")
    missed = [(item.gold, a) for item, label in zip(items, labels, strict=True) for a, k in label.items()
              if k == "retypeset" and a in {t for c in pools[item.id].candidates for t in (c.text, *c.variants)}]
    for gold, answer in missed[:30]:
        print(f"  not merged re-typeset: {answer!r} vs gold {gold!r}")


if __name__ == "__main__":
    main()
