"""Prove that a refactor changed no byte of any release: build every builder, hash every Parquet file, compare.

    python benchmarks/byte_identical.py --record before.json                 # on the old commit
    python benchmarks/byte_identical.py --compare before.json                # on the new one: exit 1 on a difference
    python benchmarks/byte_identical.py --data ../shared/data --record ...   # add real-data builds
    python benchmarks/byte_identical.py [--data ...]                         # build twice: reproducible?

Every builder is built from its embedded sample (``--source sample``, with the options its declaration names for
it, ``Builder.sample_options``: WiCkeD without the SBA classifier, whose weights a clone may not have). With ``--data``, builds of the real benchmark copies are added: GSM-MC and
MATH-MC from the shared predictions, WiCkeD and the perturbations on MMLU, the contrast sets on UnifiedQA and
MMLU-Pro+ on MMLU-Pro (its TPP options from a local llmock with the scripted responder of ``mmlu_pro_plus.py``).
Each build runs in its own process with a fresh cache, so that nothing of one run feeds the next, except a label
ending in ``@warm``: it runs on the cache the label before the ``@`` left (its embeddings and LLM replies), and
must come out the same. The digest is per file (path and SHA-256), so a difference names the file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from harness import run_builder

from builders.registry import BUILDERS, load_builder


def sample_builds() -> dict[str, tuple[str, list[str]]]:
    return {f"sample/{name}": (name, ["--source", "sample", *load_builder(name).sample_options]) for name in BUILDERS}


def real_builds(data: Path) -> dict[str, tuple[str, list[str]]]:
    predictions = data / "predictions"
    math_mc = ["--source", str(data / "math"), "--predictions", str(predictions / "math_test.jsonl"), "--choices",
               "2", "--sets", "3", "--max-excluded", "1"]  # predictions cover 1,124 of 5,000 items
    wicked = ["--source", str(data / "mmlu"), "--sba-classifier", "none"]
    contrast_sets = ["--benchmark", "unifiedqa", "--source", str(data / "unifiedqa")]
    mmlu_pro_plus = ["--source", str(data / "mmlu_pro"), *LLM_ARGV]
    return {
        "real/gsm_mc": ("gsm_mc", ["--source", str(data / "gsm8k"), "--predictions",
                                   str(predictions / "gsm8k_test.jsonl")]),
        "real/math_mc": ("math_mc", math_mc),
        "real/math_mc@warm": ("math_mc", math_mc),  # math-verify's kept answers
        "real/wicked": ("wicked", wicked),
        "real/wicked@warm": ("wicked", wicked),  # the choices-only figures and the picture kept
        "real/perturbations": ("perturbations", ["--source", str(data / "mmlu")]),
        "real/contrast_sets": ("contrast_sets", contrast_sets),
        "real/contrast_sets@warm": ("contrast_sets", contrast_sets),
        "real/mmlu_pro_plus": ("mmlu_pro_plus", mmlu_pro_plus),
        "real/mmlu_pro_plus@warm": ("mmlu_pro_plus", mmlu_pro_plus),
    }


LLM_ARGV = ["--llm-model", "scripted-gpt-4o", "--base-url", "{llm}", "--api-key-env", "none", "--llm-concurrency",
            "16"]  # "{llm}": the local llmock's URL, started only when a build names it


def file_digests(folder: Path) -> dict[str, str]:
    return {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*.parquet"))}


def build_all(builds: dict[str, tuple[str, list[str]]], work: Path) -> dict[str, dict[str, str]]:
    digests = {}
    with ExitStack() as stack:
        llm_url = ""
        if any("{llm}" in argv for _, argv in builds.values()):
            sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "tests")]
            from llm_server import start_llmock
            from mmlu_pro_plus import responder

            llm_url = stack.enter_context(start_llmock(responder=responder)).openai_base_url
        for label, (module, argv) in builds.items():
            digests[label] = build_one(label, module, [llm_url if a == "{llm}" else a for a in argv], work)
    return digests


def build_one(label: str, module: str, argv: list[str], work: Path) -> dict[str, str]:
    """One build in its own process; a label ``X@warm`` runs on the cache that ``X`` left."""
    output = work / label
    seconds, peak = run_builder(module, [*argv, "--output", str(output), "--no-progress"],
                                env={"MCQFORGE_CACHE": str(work / "cache" / label.split("@")[0])})
    digest = file_digests(output)
    print(f"{label}: {len(digest)} Parquet files, {seconds:.1f} s, peak {peak:.0f} MiB", flush=True)
    return digest


def differences(before: dict[str, dict[str, str]], after: dict[str, dict[str, str]]) -> list[str]:
    found = []
    for label in sorted(set(before) | set(after)):
        old, new = before.get(label, {}), after.get(label, {})
        for path in sorted(set(old) | set(new)):
            if old.get(path) != new.get(path):
                state = "missing now" if path not in new else "new" if path not in old else "bytes differ"
                found.append(f"{label}/{path}: {state}")
    return found


def warm_differences(digests: dict[str, dict[str, str]]) -> list[str]:
    """A build on a warm cache against the same build on the cold one, in this run."""
    return [f"{line} (warm vs cold cache)" for label in digests if label.endswith("@warm") and
            label.split("@")[0] in digests
            for line in differences({label: digests[label.split("@")[0]]}, {label: digests[label]})]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="also build the real benchmark copies in this folder (../shared/data)")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--record", type=Path, help="write the digests to this JSON file")
    what.add_argument("--compare", type=Path, help="compare with the digests recorded in this JSON file")
    parser.add_argument("--only", nargs="+", metavar="LABEL", help="only these builds (e.g. real/wicked sample/wicked)")
    args = parser.parse_args()
    builds = sample_builds() | (real_builds(args.data.resolve()) if args.data else {})
    if args.only:
        unknown = sorted(set(args.only) - set(builds))
        if unknown:
            parser.error(f"--only: no build {', '.join(unknown)} (builds: {', '.join(builds)})")
        builds = {label: builds[label] for label in args.only}
    with tempfile.TemporaryDirectory() as tmp:
        digests = build_all(builds, Path(tmp))
        if not args.record and not args.compare:  # the same inputs and seed, built again
            recorded = build_all(builds, Path(tmp) / "again")
    if args.record:
        for line in warm_differences(digests):
            print(line)
        args.record.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        print(f"{sum(map(len, digests.values()))} Parquet files recorded in {args.record}")
        return 0
    if args.compare:
        recorded = json.loads(args.compare.read_text())
    unrecorded = sorted(label for label in digests if label not in recorded and not label.endswith("@warm"))
    if unrecorded:
        print(f"not in {args.compare}, compared warm against cold only: {', '.join(unrecorded)}")
    found = differences({label: recorded[label] for label in digests if label in recorded},
                        {label: digests[label] for label in digests if label in recorded})
    found += warm_differences(digests)
    for line in found:
        print(line)
    files = sum(map(len, digests.values()))
    print(f"{files} Parquet files in {len(digests)} builds: " + (f"{len(found)} differ" if found else "byte-identical"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
