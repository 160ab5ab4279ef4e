"""Full-scale MMLU-Pro+ build and metrics on the real MMLU-Pro test set, with TPP options from a local llmock.

    python benchmarks/mmlu_pro_plus.py --data ../shared/data

1. Starts llmock on 127.0.0.1 with a scripted responder that answers each TPP prompt by a hash of its question:
   valid JSON (some in a ```json fence), malformed text, HTTP 400, and options that break each rejection rule
   (empty, "both", a letter reference, too long, a copy of the answer, a near-copy of the answer).
2. Builds MMLU-Pro+ twice as a user would (``python -m builders.mmlu_pro_plus``, one process each): with a cold
   cache, then with the LLM replies and embeddings cached. Reports seconds, items/s, peak RSS, the group counts
   against the requested ones, the rejections by reason, and whether the Parquet files are byte-identical.
3. Computes the metrics end to end: the "before" side is the real MMLU-Pro predictions of 29 models
   (``predictions/mmlu_pro_test.jsonl``); the "after" side is SYNTHETIC, derived from them by a fixed behaviour
   model (below), because no model was run on this build. The metric values therefore describe that behaviour
   model, and the benchmark checks that the metrics recover it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from harness import REPO, parquet_digest, run_builder

sys.path[:0] = [str(REPO), str(REPO / "tests")]

# Share (%) of TPP prompts the scripted server answers in each way, by a hash of the question.
SCRIPT = [("malformed", 4), ("http_400", 2), ("empty", 1), ("both", 2), ("letter", 2), ("too_long", 2),
          ("duplicate", 3), ("near_copy", 3), ("fenced", 5)]  # the rest: plain valid JSON
# The synthetic "after" behaviour, per question and model (by a hash): probabilities in %.
TPP_RIGHT_BEFORE_PICKS_PAIR = 60  # else stays on the original answer alone (SSR_partial)
TPP_WRONG_BEFORE_STAYS = 50  # else picks the pair
PFPP_RIGHT_BEFORE_PICKS_PAIR = 25
CFPP_RIGHT_BEFORE_PICKS_PAIR = 10


def bucket(*parts: object) -> int:
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:8], 16) % 100


def script_kind(question: str) -> str:
    value, start = bucket("script", question), 0
    for kind, share in SCRIPT:
        if start <= value < start + share:
            return kind
        start += share
    return "valid"


def responder(call):
    from llm_server import ScriptedError

    prompt = call.user_text
    question = prompt.split("Question:\n", 1)[1].split("\n\nOptions:", 1)[0]
    answer = prompt.rsplit("Correct answer: ", 1)[1].split("\n", 1)[0][3:]
    kind = script_kind(question)
    option = {"empty": " ", "both": "Both readings hold", "letter": "Same as option B", "too_long": "x" * 2000,
              "duplicate": answer.upper(), "near_copy": f"{answer}, as stated"}.get(kind, f"Y{bucket('y', question)}")
    if kind == "malformed":
        return "I think the new option is " + option
    if kind == "http_400":
        return ScriptedError(400, message="scripted refusal")
    reply = json.dumps({"option": option, "rationale": "scripted"})
    return f"```json\n{reply}\n```" if kind == "fenced" else reply


def release_rows(folder: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(next((folder / "default").glob("test-*.parquet"))).to_pylist()


def synthetic_after(before_file: Path, rows: list[dict], out: Path) -> int:
    """MMLU-Pro+ predictions derived from the real MMLU-Pro ones by the fixed behaviour model above."""
    letters = "ABCDEFGHIJKL"
    by_question = {str(r["metadata"]["question_id"]): r for r in rows}
    written = 0
    with open(before_file, encoding="utf-8") as source, open(out, "w", encoding="utf-8") as sink:
        for line in source:
            p = json.loads(line)
            r = by_question.get(str(p["question_id"]))
            if r is None:  # excluded from the build (duplicate options)
                continue
            meta, group, old = r["metadata"], r["modification"], p["pred"]
            right = old is not None and letters.index(old) == meta["original_answer_index"]
            roll, pair = bucket("after", p["model"], p["question_id"]), meta["pair_option_index"]
            new = old
            if group == "true_positive_pair":
                stays = roll >= TPP_RIGHT_BEFORE_PICKS_PAIR if right else roll < TPP_WRONG_BEFORE_STAYS
                new = old if stays else letters[pair]
            elif group == "partial_false_positive_pair" and right and roll < PFPP_RIGHT_BEFORE_PICKS_PAIR:
                new = letters[pair]
            elif group == "complete_false_positive_pair" and right and roll < CFPP_RIGHT_BEFORE_PICKS_PAIR:
                new = letters[pair]
            sink.write(json.dumps({"id": r["id"], "model": p["model"], "pred": new}) + "\n")
            written += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--keep", type=Path, help="keep the release, cache and metrics here (default: a temp folder)")
    args = parser.parse_args()
    from llm_server import start_llmock

    source = (args.data / "mmlu_pro").resolve()
    source_rows = sum(1 for _ in open(source / "test.jsonl"))
    with tempfile.TemporaryDirectory() as tmp, start_llmock(responder=responder) as server:
        work = args.keep or Path(tmp)
        base = ["--source", str(source), "--llm-model", "scripted-gpt-4o", "--base-url", server.openai_base_url,
                "--api-key-env", "none", "--cache-dir", str(work / "cache"), "--llm-concurrency", "16"]
        timings = {}
        for run in ("cold", "warm"):
            requests_before = len(server.chat_requests)
            seconds, peak = run_builder("mmlu_pro_plus", [*base, "--output", str(work / run)])
            timings[run] = (seconds, peak, len(server.chat_requests) - requests_before)
        identical = parquet_digest(work / "cold") == parquet_digest(work / "warm")
        rows = release_rows(work / "cold")
        report_built(rows, work / "cold", source_rows)
        print("\n| build | seconds | items/s | peak RSS (MiB) | HTTP requests to the LLM |\n|---|---|---|---|---|")
        for run, (seconds, peak, requests) in timings.items():
            print(f"| {run} cache | {seconds:.1f} | {len(rows) / seconds:.0f} | {peak:.0f} | {requests} |")
        print(f"\nbyte-identical Parquet, cold vs warm: {identical}; warm build under 60 s: {timings['warm'][0] < 60}")
        report_metrics(args.data, rows, work)


def report_built(rows: list[dict], release: Path, source_rows: int) -> None:
    from builders.mmlu_pro_plus.groups import GROUPS, apportion, parse_ratios

    requested = apportion(len(rows), parse_ratios("3718:2124:2029:4161"))
    built = Counter(r["modification"] for r in rows)
    print(f"MMLU-Pro test: {source_rows} rows in, {len(rows)} items built "
          f"({source_rows - len(rows)} excluded by the loader: duplicate options), {os.cpu_count()} cores\n")
    print("| group | requested | built |\n|---|---|---|")
    for group in GROUPS:
        print(f"| {group} | {requested[group]} | {built[group]} |")
    print(f"\nexact counts: {dict(built) == requested}")
    rejections = [json.loads(line) for line in (release / "tpp_rejections.jsonl").read_text().splitlines()]
    tried = built["true_positive_pair"] + len(rejections)
    print(f"\nTPP candidates asked: {tried}; accepted {built['true_positive_pair']}; rejected {len(rejections)}:\n")
    print("| reason | rejected |\n|---|---|")
    for reason, count in sorted(Counter(r["reason"] for r in rejections).items()):
        print(f"| {reason} | {count} |")
    inel = Counter(r["metadata"]["ineligible_reason"] for r in rows if r["metadata"]["ineligible_reason"])
    print(f"\nnever modified (options depend on each other): {dict(sorted(inel.items()))}")


def report_metrics(data: Path, rows: list[dict], work: Path) -> None:
    before = data / "predictions" / "mmlu_pro_test.jsonl"
    after = work / "synthetic_after.jsonl"
    written = synthetic_after(before, rows, after)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "builders.metrics", "mmlu-pro-plus", "--dataset", str(work / "cold"),
                    "--before", str(before), "--after", str(after), "--output", str(work / "metrics")],
                   cwd=REPO, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    seconds = time.perf_counter() - start
    report = json.loads((work / "metrics" / "mmlu_pro_plus_metrics.json").read_text())
    print(f"\nmetrics: {len(report['models'])} models, {written} synthetic MMLU-Pro+ predictions, {seconds:.1f} s "
          f"(full table: {work / 'metrics' / 'mmlu_pro_plus_metrics.md'})\n")
    print("| model | MMLU-Pro acc | MMLU-Pro+ acc | TPP acc (drop) | PFPP acc (drop) | CFPP acc (drop) | SSR_wrong | "
          "SSR_partial | CPI (num/den) |\n|---|---|---|---|---|---|---|---|---|")
    for m in report["models"]:
        g = m["groups"]
        cells = [f"{g[k]['accuracy_after']:.1%} ({g[k]['drop']:+.1%})" for k in
                 ("true_positive_pair", "partial_false_positive_pair", "complete_false_positive_pair")]
        cpi = "n/a" if m["cpi"] is None else f"{m['cpi']:.2f}"
        print(f"| {m['model']} | {m['overall']['accuracy_before']:.1%} | {m['overall']['accuracy_after']:.1%} | "
              + " | ".join(cells) + f" | {m['ssr_wrong']:.3f} | {m['ssr_partial']:.3f} | "
              f"{cpi} ({m['cpi_numerator']}/{m['cpi_denominator']}) |")
    for note in report["notes"]:
        print(f"note: {note}")
    # The behaviour model fixes SSR_partial ≈ 0.40 x (TPP questions right before) / TPP total: check it.
    worst = max(abs(m["ssr_partial"] - 0.4 * m["counts"]["tpp_before_correct"] / m["counts"]["tpp_total"])
                for m in report["models"])
    print(f"\nlargest |SSR_partial - 0.40 x share right before| over models: {worst:.3f} (sampling noise only)")


if __name__ == "__main__":
    main()
