"""Bad inputs against the real command line, each in its own process: what became of each, as one table.

    python benchmarks/bad_inputs.py [--only TEXT] [--json FILE] [--keep DIR] [--jobs N]

Each case is a build (or an export) from the embedded samples with one thing wrong: a source row's field, a
predictions row, a number no parser should take, a ``--config`` file, an option, or where the release goes (a
full disk, a mount point, a read-only folder: made with bubblewrap's mounts, so nothing needs root). Its outcome:

- ``refused in one line``: status 2 and one ``error:`` line (of at most ``MAX_LINE`` characters), no traceback;
- ``excluded and counted``: the build went through and the bad row is in ``exclusions.jsonl``;
- ``legitimately kept``: the input was fine after all (``1,500`` is a number), and the release holds it right;
- ``silently wrong``: the build went through and the release holds something wrong (a key read as another
  number, a seed other than the recorded one, an option its own lm-eval helper cannot label, a previous release
  damaged by a failed write);
- ``long error line``: refused, but with an error line longer than ``MAX_LINE`` characters, or several;
- ``traceback``: anything else (a traceback, another status).

The cases need no network, no GPU and no data beyond the package's samples; a run takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from builders.registry import BUILDERS

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "builders/data/samples"
MAX_LINE = 1000
OUTCOMES = ("refused in one line", "excluded and counted", "legitimately kept", "silently wrong", "long error line",
            "traceback")
DEEP = 100_000
HUGE = "7" * 5000  # past Python's 4,300-digit limit of int(str)


@dataclass
class Case:
    name: str
    group: str
    argv: list[str]  # after `python -m`
    judge: Callable[[Path], str] | None = None  # status 0: the outcome, from the work folder
    mounts: list[str] = field(default_factory=list)  # bubblewrap mount options: the case runs inside them
    before: str = ""  # shell run first (inside the mounts)
    after: str = ""  # shell run last (inside the mounts); may create the file INTACT


# ---- fixtures written per case ------------------------------------------------------------------------------


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_lines(path: Path, rows: list[dict], raw_first: str | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = [raw_first] if raw_first is not None else []
    path.write_text("\n".join(text + [json.dumps(r) for r in rows]) + "\n")


def excluded(work: Path, row_id: str) -> bool:
    log = work / "out" / "exclusions.jsonl"
    return log.is_file() and any(entry.get("id") == row_id for entry in lines(log))


def release_row(work: Path, config: str, row_id: str) -> dict | None:
    import pyarrow.parquet as pq

    for file in sorted((work / "out" / config).glob("*.parquet")):
        for row in pq.read_table(file).to_pylist():
            if row["id"] == row_id:
                return row
    return None


# GSM-MC: the key of row 0 of the test split written after ####, and what a right reading keeps (None: not a number)
GSM_KEYS = [("1e999", None), ("1,5", None), ("2.5e3", None), ("12 or 13", None), ("1,500", "1500"),
            ("-3", "-3"), ("$18", "18"), ("18.0", "18"), ("5 ", "5"), ("1/0", None), ("12.5.3", None),
            ("0x1F", None), ("\u0661\u0662", "12"), ("nan", None), ("inf", None), ("", None), ("7" * 40, None),
            ("19\n#### 20", "20"), ("3.14", "3.14"), ("1_000", None), ("+5", None), ("5%", None)]


def gsm_source(work: Path, key: str) -> Path:
    rows = lines(SAMPLES / "gsm8k" / "test.jsonl")
    rows[0]["answer"] = rows[0]["answer"].rsplit("####", 1)[0] + "#### " + key
    write_lines(work / "src" / "test.jsonl", rows)
    return work / "src"


def gsm_argv(source: Path | str, work: Path, *extra: str) -> list[str]:
    return [BUILDERS["gsm_mc"], "--source", str(source), "--predictions", str(SAMPLES / "gsm8k" / "predictions.jsonl"),
            "--output", str(work / "out"), "--log-level", "ERROR", *extra]


def key_judge(item_id: str, expected: str | None) -> Callable[[Path], str]:
    """How a build read a source key: excluded with a reason, kept as ``expected``, or read as something else."""
    def judge(work: Path) -> str:
        if excluded(work, item_id):
            return "excluded and counted"
        row = release_row(work, "default", item_id)
        gold = row["choices"][row["answer"]] if row else None
        return "legitimately kept" if expected is not None and gold == expected else "silently wrong"
    return judge


def gsm_key_case(key: str, expected: str | None) -> Callable[[Path], Case]:
    def make(work: Path) -> Case:
        return Case(f"GSM8K key '#### {key[:12]!r}'", "numbers", gsm_argv(gsm_source(work, key), work),
                    key_judge("gsm8k/test/0", expected))
    return make


# MMLU (WiCkeD): row 0 of the test split with one field changed; legit: the row is fine as it is
MMLU_ROWS: list[tuple[str, Callable[[dict], None], bool]] = [
    ("30 options", lambda r: r.update(choices=[f"option {i}" for i in range(30)]), False),
    ("26 options", lambda r: r.update(choices=[f"option {i}" for i in range(26)]), True),
    ("zero-width-space option", lambda r: r["choices"].__setitem__(1, "\u200b"), False),
    ("no-break-space option", lambda r: r["choices"].__setitem__(1, "\u00a0\u3000"), False),
    ("soft-hyphen option", lambda r: r["choices"].__setitem__(1, "\u00ad\u2060"), False),
    ("blank option", lambda r: r["choices"].__setitem__(1, "  \t"), False),
    ("zero-width question", lambda r: r.update(question="\u200b\u200b"), False),
    ("answer as text '0'", lambda r: r.update(answer="0"), False),
    ("answer true", lambda r: r.update(answer=True), False),
    ("answer -1", lambda r: r.update(answer=-1), False),
    ("answer 4 of 4", lambda r: r.update(answer=4), False),
    ("answer 0.0", lambda r: r.update(answer=0.0), False),
    ("answer null", lambda r: r.update(answer=None), False),
    ("choices a string", lambda r: r.update(choices="Mercury, Venus"), False),
    ("choices with a number", lambda r: r["choices"].__setitem__(1, 3), False),
    ("one option", lambda r: r.update(choices=["Mercury"], answer=0), False),
    ("question a number", lambda r: r.update(question=42), False),
    ("no question", lambda r: r.pop("question"), False),
    ("unicode question", lambda r: r.update(question="Quelle planète ? 水星"), True),
]


def mmlu_source(work: Path, change: Callable[[dict], None] | None = None, raw_first: str | None = None,
                suffix: str = ".jsonl") -> Path:
    rows = lines(SAMPLES / "mmlu" / "test.jsonl")
    if change:
        change(rows[0])
    if raw_first is not None:
        rows = rows[1:]
    src = work / "src"
    write_lines(src / "dev.jsonl", lines(SAMPLES / "mmlu" / "dev.jsonl"))
    if suffix == ".csv":
        import csv

        with open(src / "test.csv", "w", newline="") as handle:
            writer = csv.DictWriter(handle, ["question", "subject", "choices", "answer"])
            writer.writeheader()
            for row in rows:
                writer.writerow({**row, "choices": json.dumps(row["choices"])})
            if raw_first is not None:
                handle.write(raw_first + "\n")
    elif suffix == ".json":
        body = ", ".join(json.dumps(r) for r in rows)
        (src / "test.json").write_text(f"[{raw_first + ', ' if raw_first else ''}{body}]")
    else:
        write_lines(src / "test.jsonl", rows, raw_first)
    return src


def wicked_argv(source: Path | str, work: Path, *extra: str) -> list[str]:
    return [BUILDERS["wicked"], "--source", str(source), "--sba-classifier", "none", "--output", str(work / "out"),
            "--log-level", "ERROR", *extra]


def mmlu_row_case(name: str, change: Callable[[dict], None], legit: bool) -> Callable[[Path], Case]:
    def make(work: Path) -> Case:
        def judge(work: Path) -> str:
            if excluded(work, "mmlu/test/0"):
                return "excluded and counted"
            row = release_row(work, "original", "mmlu/test/0")
            if row is None:
                return "silently wrong"  # lost without a word
            return "legitimately kept" if legit and helpers_label(work, row) else "silently wrong"
        return Case(f"MMLU row: {name}", "source rows", wicked_argv(mmlu_source(work, change), work), judge)
    return make


def helpers_label(work: Path, row: dict) -> bool:
    """Whether the release's own lm-eval helper letters every option of ``row``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("release_utils", work / "out" / "lm_eval" / "utils.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return len(module.lettered_options(row)) == len(row["choices"])
    except IndexError:
        return False


# integers past 4,300 digits and 100,000-deep nesting, in every kind of file a build reads
def parse_bomb_cases() -> list[Callable[[Path], Case]]:
    deep = "[" * DEEP + "]" * DEEP
    row = '{"question": "Q?", "subject": "astronomy", "choices": ["a", "b", "c", "d"], "answer": %s}'
    prediction = '{"benchmark": "gsm8k", "split": "test", "question_index": %s, "model": "m", "output": "5"}'

    def source(name: str, suffix: str, first: str) -> Callable[[Path], Case]:
        def make(work: Path) -> Case:
            def judge(work: Path) -> str:
                return "excluded and counted" if excluded(work, "mmlu/test/0") else "silently wrong"
            return Case(name, "parse bombs", wicked_argv(mmlu_source(work, raw_first=first, suffix=suffix), work),
                        judge)
        return make

    def predictions(name: str, first: str) -> Callable[[Path], Case]:
        def make(work: Path) -> Case:
            file = work / "predictions.jsonl"
            write_lines(file, lines(SAMPLES / "gsm8k" / "predictions.jsonl"), first)
            argv = gsm_argv("sample", work)
            argv[argv.index("--predictions") + 1] = str(file)
            return Case(name, "parse bombs", argv, lambda work: "silently wrong")
        return make

    csv_deep = '"Q?",astronomy,"%s",0' % deep
    return [source("JSONL source: 5,000-digit answer", ".jsonl", row % HUGE),
            source("JSONL source: 100,000-deep answer", ".jsonl", row % deep),
            source("JSON source: 5,000-digit answer", ".json", row % HUGE),
            source("JSON source: 100,000-deep answer", ".json", row % deep),
            source("CSV source: 5,000-digit answer", ".csv", f'"Q?",astronomy,"[""a"", ""b""]",{HUGE}'),
            source("CSV source: 100,000-deep choices", ".csv", csv_deep),
            predictions("predictions: 5,000-digit index", prediction % HUGE),
            predictions("predictions: 100,000-deep index", prediction % deep)]


# ---- options, --config, where the release goes ---------------------------------------------------------------


def seed_recorded(expected: int) -> Callable[[Path], str]:
    def judge(work: Path) -> str:
        import yaml

        seed = yaml.safe_load((work / "out" / "build_config.yaml").read_text())["params"]["seed"]
        return "legitimately kept" if seed == expected else "silently wrong"
    return judge


def config_case(name: str, params: dict, text: str | None = None) -> Callable[[Path], Case]:
    def make(work: Path) -> Case:
        import yaml

        config = {"builder": "gsm_mc", "source": {"benchmark": "gsm8k", "spec": "sample"},
                  "params": {"seed": 0, "splits": ["test"], **params}}
        file = work / "build_config.yaml"
        file.write_text(text if text is not None else yaml.safe_dump(config))
        return Case(name, "options", gsm_argv("sample", work, "--config", str(file)), seed_recorded(0))
    return make


ALIAS_BOMB = "\n".join(['mcqforge_version:', '- &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'] +
                       [f"- &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]" for i in range(7)] +
                       ["builder: gsm_mc", "source: {benchmark: gsm8k, spec: sample}", "params: {seed: *h}"])


def option_cases() -> list[Callable[[Path], Case]]:
    def flags(name: str, *extra: str, judge: Callable[[Path], str] | None = None) -> Callable[[Path], Case]:
        return lambda work: Case(name, "options", gsm_argv("sample", work, *extra), judge)

    return [flags("--seed -1", "--seed", "-1", judge=seed_recorded(-1)),
            flags("--seed 10**30", "--seed", str(10 ** 30), judge=seed_recorded(10 ** 30)),
            flags("--seed 4294967295", "--seed", str(2 ** 32 - 1), judge=seed_recorded(2 ** 32 - 1)),
            flags("--seed 1e3", "--seed", "1e3"),
            flags("--limit 0", "--limit", "0"),
            flags("--max-excluded 2", "--max-excluded", "2"),
            flags("--max-excluded nan", "--max-excluded", "nan"),
            flags("--choices 100", "--choices", "100"),
            flags("--splits nosuch", "--splits", "nosuch"),
            config_case("--config: list item '--seed=7'", {"splits": ["test", "--seed=7"]}),
            config_case("--config: subjects item '--seed=7'", {"subjects": ["--seed=7"]}),
            config_case("--config: seed 'seven'", {"seed": "seven"}),
            config_case("--config: not YAML", {}, text="params: [unclosed"),
            config_case("--config: YAML alias bomb", {}, text=ALIAS_BOMB),
            config_case("--config: 100,000-deep params", {}, text="params: " + "[" * DEEP + "]" * DEEP)]


def where_cases() -> list[Callable[[Path], Case]]:
    """--output and --cache-dir that cannot hold what they are given (mounts made with bubblewrap)."""
    def full_disk(work: Path) -> Case:
        old = work / "old"
        shutil.copytree(REPO_SAMPLE_RELEASE, old)
        size = sum(f.stat().st_size for f in old.rglob("*") if f.is_file())
        disk = work / "disk"
        disk.mkdir()
        return Case("--output on a full disk (previous release there)", "where", gsm_argv("sample", disk),
                    lambda work: "silently wrong", mounts=["--size", str(int(size * 1.6)), "--tmpfs", str(disk)],
                    before=f"cp -a {old} {disk}/out", after=f"diff -r {old} {disk}/out >/dev/null && touch INTACT")

    def tiny_disk(work: Path) -> Case:
        disk = work / "disk"
        disk.mkdir()
        return Case("--output on a full disk (new folder)", "where", gsm_argv("sample", disk),
                    lambda work: "silently wrong", mounts=["--size", "65536", "--tmpfs", str(disk)])

    def mount_point(work: Path) -> Case:
        (work / "out").mkdir()
        return Case("--output is a mount point", "where", gsm_argv("sample", work), lambda work: "silently wrong",
                    mounts=["--tmpfs", str(work / "out")])

    def read_only(work: Path) -> Case:
        (work / "ro").mkdir()
        return Case("--output in a read-only folder", "where", gsm_argv("sample", work / "ro"),
                    lambda work: "silently wrong", mounts=["--ro-bind", str(work / "ro"), str(work / "ro")])

    def output_file(work: Path) -> Case:
        (work / "out").write_text("x")
        return Case("--output is a file", "where", gsm_argv("sample", work))

    def contrast_sets(work: Path, cache: Path) -> list[str]:  # a sample build that caches its embeddings
        return [BUILDERS["contrast_sets"], "--source", "sample", "--cache-dir", str(cache), "--output",
                str(work / "out"), "--log-level", "ERROR"]

    def cache_file(work: Path) -> Case:
        (work / "cache").write_text("x")
        return Case("--cache-dir is a file", "where", contrast_sets(work, work / "cache"),
                    lambda work: "silently wrong")

    def cache_read_only(work: Path) -> Case:
        (work / "ro").mkdir()
        return Case("--cache-dir on a read-only filesystem", "where", contrast_sets(work, work / "ro" / "cache"),
                    lambda work: "silently wrong", mounts=["--ro-bind", str(work / "ro"), str(work / "ro")])

    return [full_disk, tiny_disk, mount_point, read_only, output_file, cache_file, cache_read_only]


REPO_SAMPLE_RELEASE = Path()  # a sample GSM-MC release, built once by main()


def damaged_release_cases() -> list[Callable[[Path], Case]]:
    def damaged(name: str, damage: Callable[[Path], None],
                judge: Callable[[Path], str] = lambda work: "silently wrong") -> Callable[[Path], Case]:
        def make(work: Path) -> Case:
            release = work / "release"
            shutil.copytree(REPO_SAMPLE_RELEASE, release)
            damage(release)
            return Case(f"export: {name}", "damaged release", ["builders.export", str(release), "--layout",
                                                                "mc-evaluation", "--output", str(work / "out")],
                        judge)
        return make

    def parquet(release: Path) -> Path:
        return next((release / "default").glob("*.parquet"))

    def rewrite(release: Path, change: Callable[[list[dict]], None], schema_free: bool = True) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = pq.read_table(parquet(release)).to_pylist()
        change(rows)
        pq.write_table(pa.Table.from_pylist(rows), parquet(release))

    def drop_column(release: Path) -> None:
        import pyarrow.parquet as pq

        pq.write_table(pq.read_table(parquet(release)).drop_columns(["choices"]), parquet(release))

    return [damaged("truncated Parquet", lambda r: parquet(r).write_bytes(parquet(r).read_bytes()[:500])),
            damaged("Parquet of text", lambda r: parquet(r).write_text("not parquet")),
            damaged("no choices column", drop_column),
            damaged("answer out of range", lambda r: rewrite(r, lambda rows: rows[0].update(answer=9))),
            damaged("answer null", lambda r: rewrite(r, lambda rows: [row.update(answer=None) for row in rows])),
            damaged("27 choices", lambda r: rewrite(r, lambda rows: rows[0].update(choices=[str(i) for i in range(27)]))),
            damaged("build_config.yaml a list", lambda r: (r / "build_config.yaml").write_text("- 1\n"),
                    lambda work: "legitimately kept")]  # the export needs no build config of a GSM-MC release


def math_cases() -> list[Callable[[Path], Case]]:
    """MATH-MC: the last \\boxed{} of row 0's solution."""
    def case(name: str, boxed: str, expected: str | None) -> Callable[[Path], Case]:
        def make(work: Path) -> Case:
            rows = lines(SAMPLES / "math" / "test.jsonl")
            rows[0]["solution"] = "So $x = " + boxed + "$."
            write_lines(work / "src" / "test.jsonl", rows)
            write_lines(work / "src" / "train.jsonl", lines(SAMPLES / "math" / "train.jsonl"))

            judge = key_judge("math/test/0", expected)
            argv = [BUILDERS["math_mc"], "--source", str(work / "src"), "--predictions",
                    str(SAMPLES / "math" / "predictions.jsonl"), "--output", str(work / "out"), "--log-level", "ERROR"]
            return Case(f"MATH key {name}", "numbers", argv, judge)
        return make

    return [case("\\boxed{1e999}", "\\boxed{1e999}", "1e999"), case("unclosed box", "\\boxed{5", None),
            case("empty box", "\\boxed{}", None), case("100,000-deep braces", "\\boxed{" + "{" * DEEP + "5" +
                                                       "}" * DEEP + "}", None)]


CASES: list[Callable[[Path], Case]] = (
    [gsm_key_case(key, expected) for key, expected in GSM_KEYS]
    + [mmlu_row_case(*row) for row in MMLU_ROWS]
    + parse_bomb_cases() + option_cases() + where_cases() + damaged_release_cases() + math_cases()
)


# ---- running ------------------------------------------------------------------------------------------------


def run_case(case: Case, work: Path) -> tuple[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "MCQFORGE_CACHE": str(work / "mcqforge-cache"),
           "NO_COLOR": "1"}
    command = " ".join(map(_quote, [sys.executable, "-m", *case.argv]))
    script = f"{case.before + ' && ' if case.before else ''}{command} 2>{work / 'stderr'}; rc=$?; " \
             f"{'(' + case.after + '); ' if case.after else ''}exit $rc"
    wrapper = ["bwrap", "--dev-bind", "/", "/", *case.mounts, "--chdir", str(work)] if case.mounts else []
    proc = subprocess.run([*wrapper, "sh", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                          timeout=900)
    stderr = (work / "stderr").read_text(errors="replace") if (work / "stderr").exists() else proc.stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    shown = errors[0][:160] if errors else (stderr.strip().splitlines() or [""])[-1][:160]
    if "Traceback (most recent call last)" in stderr or proc.returncode not in (0, 2):
        return "traceback", shown
    if case.after and not (work / "INTACT").exists():
        return "silently wrong", "previous release damaged: " + shown
    if proc.returncode == 2:
        one_line = len(errors) == 1 and len(errors[0]) <= MAX_LINE
        return ("refused in one line" if one_line else "long error line"), \
            shown if one_line else f"{len(errors)} error line(s), longest {max(map(len, errors), default=0):,} chars"
    return (case.judge(work) if case.judge else "silently wrong"), "status 0"


def _quote(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def build_sample_release(root: Path) -> Path:
    out = root / "sample-release"
    subprocess.run([sys.executable, "-m", BUILDERS["gsm_mc"], "--source", "sample", "--output", str(out),
                    "--log-level", "ERROR"], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO),
                                                            "HF_HUB_OFFLINE": "1"}, check=True, capture_output=True)
    return out


def main() -> int:
    global REPO_SAMPLE_RELEASE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run only the cases whose name holds this text")
    parser.add_argument("--json", type=Path, help="also write the outcomes here")
    parser.add_argument("--keep", type=Path, help="keep the work folders here")
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bad-inputs-", dir=args.keep))
    REPO_SAMPLE_RELEASE = build_sample_release(root)
    cases = []
    for number, make in enumerate(CASES):
        work = root / f"case{number:03d}"
        work.mkdir()
        case = make(work)
        if not args.only or args.only in case.name:
            cases.append((case, work))

    def run(case: Case, work: Path) -> dict:
        outcome, detail = run_case(case, work)
        print(f"{outcome:22} | {case.name} | {detail}", flush=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        return {"case": case.name, "group": case.group, "outcome": outcome, "detail": detail}

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:  # each case is its own process
        results = list(pool.map(lambda pair: run(*pair), cases))
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def print_table(results: list[dict]) -> None:
    groups = list(dict.fromkeys(r["group"] for r in results))
    counts = Counter((r["group"], r["outcome"]) for r in results)
    print("\n| group | cases | " + " | ".join(OUTCOMES) + " |")
    print("|---|---:|" + "---:|" * len(OUTCOMES))
    for group in [*groups, "all"]:
        chosen = [r for r in results if group in ("all", r["group"])]
        cells = [str(sum(counts[g, o] for g in groups if group in ("all", g))) for o in OUTCOMES]
        print(f"| {group} | {len(chosen)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
