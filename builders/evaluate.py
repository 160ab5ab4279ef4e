"""Evaluate models on a release with the lm-eval tasks it carries, and write the table its paper reports.

    python -m builders.evaluate RELEASE --model hf:PATH --model openai:MODEL@URL --output results/

``RELEASE`` is a release folder or a published release, ``REPO@vX.Y.Z``. Models are Hugging Face model
folders or Hub ids (``hf:PATH``), OpenAI-compatible completion endpoints such as a vLLM server
(``openai:MODEL@http://host:8000/v1``: multiple-choice scoring needs log-probabilities, which vLLM's
completions endpoint gives), or lm-eval's ``dummy`` model. lm-eval runs through its Python API on the tasks
listed in the release's ``lm_eval/manifest.json``; the builder's table then comes from the per-item
predictions:

- WiCkeD: accuracy on ``original`` and each variant, the drop, and the mean ± std over the variants;
- GSM-MC, MATH-MC, PythonIO: accuracy per set, and with ``--open-ended-scores`` the correlation between the
  models' multiple-choice and open-ended scores;
- MMLU-Pro+: accuracy and drop per group and per category, SSR and CPI;
- perturbations: k_τ, RStd and the slope chart per perturbed config, a "major shift" when k_τ ≤ 0.75;
- contrast sets: accuracy with and without the question, and the gap.

Each table is written as Markdown, CSV and JSON (``<output>/evaluation.{md,csv,json}``), with a chart where
the paper has one.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import logging
import math
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from builders.core.cli import exit_code
from builders.core.errors import UserError
from builders.core.lm_eval_tasks import MANIFEST, TASKS_DIR
from builders.core.predictions import choice_prediction
from builders.core.tables import Statistics, Table

logger = logging.getLogger(__name__)
MAJOR_SHIFT = 0.75  # k_τ at or below which a ranking shift is major (Alzahrani et al., 2024)


# ---- models -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    name: str
    lm_eval_model: str
    model_args: dict[str, Any]


def parse_model(text: str, batch_size: int) -> ModelSpec:
    """``hf:PATH``, ``openai:MODEL@URL`` or ``dummy``."""
    kind, _, rest = text.partition(":")
    if text == "dummy":
        return ModelSpec("dummy", "dummy", {})
    if kind == "hf" and rest:
        return ModelSpec(Path(rest).name if Path(rest).exists() else rest, "hf",
                         {"pretrained": rest, "dtype": "float32", "batch_size": batch_size})
    if kind == "openai" and "@" in rest:
        model, _, url = rest.partition("@")
        return ModelSpec(model, "local-completions", {"model": model, "base_url": url.rstrip("/") + "/completions",
                                                      "tokenized_requests": False, "num_concurrent": 8})
    raise UserError(f"--model {text!r}: expected hf:PATH, openai:MODEL@URL or dummy")


# ---- the release ------------------------------------------------------------------------------------------


def open_release(spec: str) -> tuple[Path, dict[str, Any]]:
    """The release's task folder and manifest: a local folder, or ``REPO@TAG`` fetched from the Hub."""
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        repo, sep, tag = spec.partition("@")
        if not sep or not tag:
            raise UserError(f"{spec}: expected a release folder or REPO@vX.Y.Z")
        from huggingface_hub import snapshot_download

        try:
            # real files, not the cache's links into blobs/: lm-eval resolves a YAML file's links and then
            # looks for utils.py beside the blob
            folder = Path(snapshot_download(repo, repo_type="dataset", revision=tag, local_dir=_release_cache(repo, tag),
                                            allow_patterns=[f"{TASKS_DIR}/*", f"{TASKS_DIR}/**/*", "build_config.yaml"]))
        except Exception as error:  # huggingface_hub raises many types; the user needs one line
            raise UserError(f"cannot fetch {spec} from the Hub ({type(error).__name__})") from None
    path = folder / MANIFEST
    if not path.is_file():
        raise UserError(f"{spec} has no {MANIFEST}: it was not built with lm-eval tasks")
    return folder, json.loads(path.read_text(encoding="utf-8"))


def _release_cache(repo: str, tag: str) -> Path:
    root = Path(os.environ.get("MCQFORGE_CACHE", Path.home() / ".cache" / "mcqforge"))
    return root / "releases" / f"{repo.replace('/', '--')}--{tag}"


# ---- running lm-eval --------------------------------------------------------------------------------------


@dataclass
class TaskResult:
    accuracy: float
    items: dict[str, tuple[int, int]] = field(default_factory=dict)  # id -> (gold, predicted option)
    docs: dict[str, Mapping[str, Any]] = field(default_factory=dict)


def evaluate_model(folder: Path, manifest: Mapping[str, Any], model: ModelSpec, limit: int | None,
                   device: str | None) -> dict[str, TaskResult]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    tasks = {task["task"]: task for task in manifest["tasks"]}
    try:
        results = lm_eval.simple_evaluate(model=_lm(model), model_args=model.model_args, tasks=list(tasks),
                                          task_manager=TaskManager(include_path=str(folder / TASKS_DIR)), limit=limit,
                                          device=device or _default_device(), log_samples=True)
    except Exception as error:  # a model that cannot load or answer: one line, not lm-eval's traceback
        first = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        raise UserError(f"lm-eval failed for model {model.name}: {type(error).__name__}: {first}") from None
    return {name: task_result(results, name, task.get("metric", "acc")) for name, task in tasks.items()}


def _lm(model: ModelSpec):
    """The lm-eval model name, or for ``dummy`` an instance without a tokenizer: lm-eval's dummy model fetches
    a 32B model's tokenizer from the Hub only to log its special tokens, which offline costs 30 s of retries."""
    if model.lm_eval_model != "dummy":
        return model.lm_eval_model
    from lm_eval.models.dummy import DummyLM

    dummy = DummyLM()
    dummy.__dict__["tokenizer"] = None  # shadows the cached property
    return dummy


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _leaves(results: Mapping[str, Any], name: str) -> list[str]:
    """The task itself, or the tasks of a group (recursively)."""
    members = (results.get("group_subtasks") or {}).get(name)
    return [leaf for member in members for leaf in _leaves(results, member)] if members else [name]


def task_result(results: Mapping[str, Any], name: str, metric: str) -> TaskResult:
    """Per-item predictions of a task (or of every task of a group), and its accuracy over them."""
    items: dict[str, tuple[int, int]] = {}
    docs: dict[str, Mapping[str, Any]] = {}
    for leaf in _leaves(results, name):
        delimiter = results["configs"][leaf].get("target_delimiter", " ")
        for sample in results["samples"][leaf]:
            doc = sample["doc"]
            predicted = choice_prediction(sample, metric, delimiter, f"{leaf} sample {sample.get('doc_id')}")
            items[str(doc["id"])] = (int(sample["target"]), predicted)
            docs[str(doc["id"])] = doc
    accuracy = sum(gold == predicted for gold, predicted in items.values()) / len(items) if items else math.nan
    return TaskResult(accuracy, items, docs)


# ---- the papers' tables -----------------------------------------------------------------------------------

Runs = Mapping[str, Mapping[str, TaskResult]]  # model -> task -> result


def _by_role(manifest: Mapping[str, Any], role: str) -> list[Mapping[str, Any]]:
    return [task for task in manifest["tasks"] if task.get("role") == role]


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    return (statistics.fmean(values), statistics.pstdev(values)) if values else (math.nan, math.nan)


def wicked_table(runs: Runs, manifest: Mapping[str, Any], options: argparse.Namespace) -> Statistics:
    originals, variants = _by_role(manifest, "original"), _by_role(manifest, "variant")
    rows = []
    for model, tasks in runs.items():
        original = statistics.fmean(tasks[t["task"]].accuracy for t in originals)
        scores = [tasks[t["task"]].accuracy for t in variants]
        mean, std = _mean_std(scores)
        rows.append((model, original, *scores, mean, std, original - mean))
    columns = ("model", "original", *[f"variant {t.get('variant', i)}" for i, t in enumerate(variants)],
               "variants mean", "variants std", "drop")
    return Statistics([Table("WiCkeD accuracy", columns, rows, percent=tuple(c for c in columns if c != "model"),
                             note="Accuracy on the original benchmark and on each WiCkeD variant; the drop is the "
                                  "original's accuracy minus the variants' mean.")])


def sets_table(runs: Runs, manifest: Mapping[str, Any], options: argparse.Namespace) -> Statistics:
    sets = _by_role(manifest, "set")
    rows, means = [], {}
    for model, tasks in runs.items():
        scores = [tasks[t["task"]].accuracy for t in sets]
        means[model], std = _mean_std(scores)
        rows.append((model, *scores, means[model], std))
    columns = ("model", *[f"set {t.get('set', i)}" for i, t in enumerate(sets)], "mean", "std")
    tables = [Table("Multiple-choice accuracy per set", columns, rows, percent=tuple(columns[1:]))]
    if options.open_ended_scores:
        tables.append(correlation_table(means, _read_scores(options.open_ended_scores)))
    return Statistics(tables)


def _read_scores(path: Path) -> dict[str, float]:
    try:
        scores = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserError(f"--open-ended-scores {path}: {error}") from None
    if not isinstance(scores, dict) or not all(isinstance(v, (int, float)) for v in scores.values()):
        raise UserError(f"--open-ended-scores {path}: expected a JSON object {{model: accuracy}}")
    return {str(k): float(v) for k, v in scores.items()}


def correlation_table(mc: Mapping[str, float], open_ended: Mapping[str, float]) -> Table:
    """Pearson and Spearman correlation between the models' MC and open-ended accuracy (Zhang et al., 2024)."""
    from scipy.stats import pearsonr, spearmanr

    models = sorted(set(mc) & set(open_ended))
    if len(models) < 3:
        return Table("Correlation with open-ended scores", ("models", "pearson r", "spearman rho"), [(len(models), None, None)],
                     note="Fewer than 3 models have both scores: no correlation.")
    x, y = [mc[m] for m in models], [open_ended[m] for m in models]
    return Table("Correlation with open-ended scores", ("models", "pearson r", "spearman rho"),
                 [(len(models), float(pearsonr(x, y)[0]), float(spearmanr(x, y)[0]))])


def mmlu_pro_plus_table(runs: Runs, manifest: Mapping[str, Any], options: argparse.Namespace) -> Statistics:
    from builders.mmlu_pro_plus.metrics import item_from_row, score_model

    [plus] = _by_role(manifest, "plus")
    [original] = _by_role(manifest, "original")
    group_rows, category_rows, ratio_rows = [], [], []
    for model, tasks in runs.items():
        after, before = tasks[plus["task"]], tasks[original["task"]]
        items = {str(doc.get("metadata", {}).get("question_id", rid)): item_from_row(doc) for rid, doc in after.docs.items()}
        key = {rid: str(doc.get("metadata", {}).get("question_id", rid)) for rid, doc in after.docs.items()}
        before_key = {str(doc.get("metadata", {}).get("question_id", rid)): rid for rid, doc in before.docs.items()}
        new = {key[rid]: pred for rid, (_, pred) in after.items.items()}
        old = {q: before.items[rid][1] for q, rid in before_key.items() if q in items}
        metrics = score_model(model, items, old, new)
        for group, tally in sorted(metrics.groups.items()):
            if tally.items:  # the metrics count in percentage points; the table holds fractions
                group_rows.append((model, group, tally.items, tally.accuracy_before / 100, tally.accuracy_after / 100,
                                   tally.drop / 100))
        ratio_rows.append((model, metrics.ssr_wrong, metrics.ssr_partial, metrics.cpi))
        per_category: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
        for rid, doc in after.docs.items():
            q = key[rid]
            if q in old:
                per_category[doc.get("category") or "?"].append((old[q] == items[q].original_answer,
                                                                  new[q] == items[q].answer))
        for category, hits in sorted(per_category.items()):
            before_acc = sum(b for b, _ in hits) / len(hits)
            after_acc = sum(a for _, a in hits) / len(hits)
            category_rows.append((model, category, len(hits), before_acc, after_acc, before_acc - after_acc))
    percent = ("MMLU-Pro", "MMLU-Pro+", "drop")
    return Statistics([
        Table("Accuracy per group", ("model", "group", "items", *percent), group_rows, percent=percent),
        Table("Accuracy per category", ("model", "category", "items", *percent), category_rows, percent=percent),
        Table("Shortcut selection and pair identification", ("model", "SSR_wrong", "SSR_partial", "CPI"), ratio_rows,
              note="SSR_wrong: TPP questions where the model stays on the wrong option it chose on MMLU-Pro; "
                   "SSR_partial: TPP questions where it stays on the original answer alone; CPI: TPP questions "
                   "answered with the (correct) pair over PFPP + CFPP questions answered with the (wrong) pair."),
    ])


def ranking_table(runs: Runs, manifest: Mapping[str, Any], options: argparse.Namespace) -> Statistics:
    from builders.metrics.ranking import Side, rank_models, slope_chart

    # each perturbed config names its baseline config (original, or original_zero_shot for the zero-shot ones)
    originals = {(t["config"], t.get("scoring", "")): t for t in _by_role(manifest, "original")}
    rows = []
    for task in _by_role(manifest, "perturbed"):
        base = originals.get((task.get("baseline", "original"), task.get("scoring", "")))
        if base is None:
            continue
        sides = [Side(t["task"], {i: g for r in runs.values() for i, (g, _) in r[t["task"]].items.items()},
                      {m: {i: p for i, (_, p) in r[t["task"]].items.items()} for m, r in runs.items()})
                 for t in (base, task)]
        ranking = rank_models(*sides)
        if options.output:
            slope_chart(ranking, options.output / f"slope_{task['task']}.png")
        for row in ranking.rows:
            rows.append((task["config"], task.get("scoring", ""), row.model, row.before.accuracy / 100,
                         row.after.accuracy / 100, row.before.rstd / 100, row.after.rstd / 100, row.rank_before,
                         row.rank_after, ranking.k_tau, "yes" if ranking.k_tau <= MAJOR_SHIFT else "no"))
    columns = ("config", "scoring", "model", "accuracy original", "accuracy perturbed", "RStd original",
               "RStd perturbed", "rank original", "rank perturbed", "k_tau", "major shift")
    return Statistics([Table("Leaderboard sensitivity", columns, rows,
                             percent=("accuracy original", "accuracy perturbed", "RStd original", "RStd perturbed"),
                             note=f"k_τ ≤ {MAJOR_SHIFT} is a major shift of the ranking (Alzahrani et al., 2024).")])


def contrast_table(runs: Runs, manifest: Mapping[str, Any], options: argparse.Namespace) -> Statistics:
    full, only = _by_role(manifest, "question_and_choices"), _by_role(manifest, "choices_only")
    rows = []
    for model, tasks in runs.items():
        with_question = statistics.fmean(tasks[t["task"]].accuracy for t in full)
        without = statistics.fmean(tasks[t["task"]].accuracy for t in only)
        rows.append((model, with_question, without, with_question - without))
    columns = ("model", "question and choices", "choices only", "gap")
    return Statistics([Table("Contrast-set accuracy", columns, rows, percent=columns[1:],
                             note="A model that answers the choices-only task as well as the full one is not using "
                                  "the question (Balepur and Rudinger, 2024).")])


# builder -> the table its paper reports
TABLES: dict[str, Callable[[Runs, Mapping[str, Any], argparse.Namespace], Statistics]] = {
    "wicked": wicked_table,
    "gsm_mc": sets_table,
    "math_mc": sets_table,
    "python_io": sets_table,
    "mmlu_pro_plus": mmlu_pro_plus_table,
    "perturbations": ranking_table,
    "contrast_sets": contrast_table,
}


# ---- writing ------------------------------------------------------------------------------------------------


def write_outputs(tables: Statistics, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "evaluation.md").write_text(
        "\n\n".join(f"## {t.title}\n\n{t.to_markdown()}" for t in tables) + "\n", encoding="utf-8")
    (folder / "evaluation.json").write_text(json.dumps(tables.to_list(), indent=2) + "\n", encoding="utf-8")
    text = io.StringIO()
    writer = csv.writer(text)
    for table in tables:
        writer.writerow([table.title])
        writer.writerow(table.columns)
        writer.writerows(table.rows)
        writer.writerow([])
    (folder / "evaluation.csv").write_text(text.getvalue(), encoding="utf-8")


def evaluate(options: argparse.Namespace) -> Statistics:
    folder, manifest = open_release(options.release)
    table = TABLES.get(manifest.get("builder"))
    if table is None:
        raise UserError(f"no evaluation table for builder {manifest.get('builder')!r}")
    models = [parse_model(text, options.batch_size) for text in options.model]
    if len({m.name for m in models}) != len(models):
        raise UserError("two --model arguments have the same name")
    runs = {model.name: evaluate_model(folder, manifest, model, options.limit, options.device) for model in models}
    tables = table(runs, manifest, options)
    if options.output:
        write_outputs(tables, options.output)
    return tables


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m builders.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("release", help="a release folder, or REPO@vX.Y.Z on the Hub")
    parser.add_argument("--model", action="append", required=True, metavar="MODEL",
                        help="hf:PATH, openai:MODEL@URL or dummy; repeat for several models")
    parser.add_argument("--output", type=Path, help="write evaluation.md, .csv, .json (and charts) here")
    parser.add_argument("--limit", type=int, help="evaluate only the first N items of each task")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", default=None, help="e.g. cpu or cuda:0")
    parser.add_argument("--open-ended-scores", type=Path, metavar="JSON",
                        help="GSM-MC / MATH-MC / PythonIO: {model: open-ended accuracy}, for the correlation")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    options = parser.parse_args(argv)
    logging.basicConfig(level=options.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    def run() -> None:
        for table in evaluate(options):
            print(f"\n## {table.title}\n\n{table.to_markdown()}")

    return exit_code(run)


if __name__ == "__main__":
    sys.exit(main())
