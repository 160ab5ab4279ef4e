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
import importlib
import io
import json
import os
import logging
import math
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from builders.core.cli import ArgumentParser, check_writable_folder, exit_code, positive_int
from builders.core.errors import UserError, tag_hint
from builders.core.lm_eval_tasks import MANIFEST, TASKS_DIR
from builders.core.predictions import choice_prediction
from builders.core.tables import Statistics

logger = logging.getLogger(__name__)


class _NoMetadataHint(logging.Filter):
    """lm-eval warns, once per task, that a task with a ``custom_dataset`` could take ``--metadata``: every
    release task reads its data that way, so the hint was 2 lines per task (174 for the perturbations
    release), none of them about anything the user did."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Custom kwargs can be passed to `--metadata`" not in record.getMessage()


class _NoChatTemplateHint(logging.Filter):
    """lm-eval warns that a model whose name says "instruct" or "chat" "appears to be an instruct or chat variant
    but chat template is not applied": noise for a model whose tokenizer has no chat template to apply."""

    def __init__(self, models_without_template: set[str]) -> None:
        super().__init__()
        self.models = models_without_template

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return "chat template is not applied" not in message or not any(m in message for m in self.models)


_WITHOUT_CHAT_TEMPLATE: set[str] = set()  # pretrained= values whose tokenizer has none


def _quiet_lm_eval() -> None:
    import lm_eval.evaluator

    task_logger = logging.getLogger("lm_eval.api.task")
    if not any(isinstance(f, _NoMetadataHint) for f in task_logger.filters):
        task_logger.addFilter(_NoMetadataHint())
    evaluator_logger = logging.getLogger("lm_eval.evaluator")
    if not any(isinstance(f, _NoChatTemplateHint) for f in evaluator_logger.filters):
        evaluator_logger.addFilter(_NoChatTemplateHint(_WITHOUT_CHAT_TEMPLATE))
    # lm-eval records `git describe` of the working folder, and git says "fatal: not a git repository" on the
    # terminal wherever that is not a checkout: the same hash, without git's complaint
    lm_eval.evaluator.get_git_commit_hash = _git_commit_quietly


def _git_commit_quietly() -> str | None:
    """lm-eval's get_git_commit_hash, with git's stderr dropped."""
    import subprocess

    from lm_eval.loggers.utils import get_commit_from_path

    try:
        return subprocess.check_output(["git", "describe", "--always"], stderr=subprocess.DEVNULL).strip().decode()
    except (subprocess.CalledProcessError, FileNotFoundError):
        return get_commit_from_path(os.getcwd())


def _has_no_chat_template(pretrained: str) -> bool:
    """A local model folder whose tokenizer defines no chat template (nothing for lm-eval to apply)."""
    folder = Path(pretrained)
    if not folder.is_dir():
        return False
    config = folder / "tokenizer_config.json"
    try:
        declared = "chat_template" in json.loads(config.read_text(encoding="utf-8")) if config.is_file() else False
    except (OSError, ValueError):
        return False
    return not declared and not any(folder.glob("chat_template.*"))


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
        if not sep or not repo or not tag:
            raise UserError(f"{spec}: expected a release folder or REPO@vX.Y.Z")
        from huggingface_hub import snapshot_download

        try:
            # real files, not the cache's links into blobs/: lm-eval resolves a YAML file's links and then
            # looks for utils.py beside the blob
            folder = Path(snapshot_download(repo, repo_type="dataset", revision=tag, local_dir=_release_cache(repo, tag),
                                            allow_patterns=[f"{TASKS_DIR}/*", f"{TASKS_DIR}/**/*", "build_config.yaml"]))
        except Exception as error:  # huggingface_hub raises many types; the user needs one line
            hint = tag_hint(tag) if type(error).__name__ == "RevisionNotFoundError" else ""
            raise UserError(f"cannot fetch {spec} from the Hub ({type(error).__name__}){hint}") from None
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
    _quiet_lm_eval()
    pretrained = str(model.model_args.get("pretrained", ""))
    if pretrained and _has_no_chat_template(pretrained):
        _WITHOUT_CHAT_TEMPLATE.add(pretrained)
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


def by_role(manifest: Mapping[str, Any], role: str) -> list[Mapping[str, Any]]:
    return [task for task in manifest["tasks"] if task.get("role") == role]


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    return (statistics.fmean(values), statistics.pstdev(values)) if values else (math.nan, math.nan)


def paper_table(builder: str | None) -> Callable[[Runs, Mapping[str, Any], argparse.Namespace], Statistics]:
    """The builder's ``evaluation_table``: the table its paper reports."""
    from builders.__main__ import COMMANDS

    module = importlib.import_module(COMMANDS[builder]) if builder in COMMANDS else None
    table = getattr(getattr(module, "BUILDER", None), "evaluation_table", None)
    if table is None:
        raise UserError(f"no evaluation table for builder {builder!r}")
    return table


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


OPEN_ENDED_BUILDERS = ("gsm_mc", "math_mc", "python_io")  # their tables correlate with open-ended scores


def evaluate(options: argparse.Namespace) -> Statistics:
    if options.output:
        check_writable_folder(options.output)  # before the models run: a bad --output costs nothing
    folder, manifest = open_release(options.release)
    table = paper_table(manifest.get("builder"))
    if options.open_ended_scores:
        from builders.from_predictions.tasks import read_scores

        if manifest.get("builder") not in OPEN_ENDED_BUILDERS:
            raise UserError(f"--open-ended-scores applies to {', '.join(OPEN_ENDED_BUILDERS)} releases, "
                            f"not {manifest.get('builder')}")
        scores = read_scores(options.open_ended_scores)
    models = [parse_model(text, options.batch_size) for text in options.model]
    if len({m.name for m in models}) != len(models):
        raise UserError("two --model arguments have the same name")
    if options.open_ended_scores:
        _require_scores_of_these_models(options.open_ended_scores, scores, [m.name for m in models])
    runs = {model.name: evaluate_model(folder, manifest, model, options.limit, options.device) for model in models}
    tables = table(runs, manifest, options)
    if options.output:
        write_outputs(tables, options.output)
    return tables


def _require_scores_of_these_models(path: Path, scores: Mapping[str, float], names: Sequence[str]) -> None:
    """A key that names none of the evaluated models was silently left out of the correlation ("0 models have
    both scores")."""
    unmatched = sorted(set(scores) - set(names))
    if unmatched:
        raise UserError(f"--open-ended-scores {path}: {unmatched} name no evaluated model; its keys must be the "
                        f"models' names: {sorted(names)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m builders.evaluate", description=__doc__.split("\n\n")[0])
    parser.add_argument("release", help="a release folder, or REPO@vX.Y.Z on the Hub")
    parser.add_argument("--model", action="append", required=True, metavar="MODEL",
                        help="hf:PATH, openai:MODEL@URL or dummy; repeat for several models")
    parser.add_argument("--output", type=Path, help="write evaluation.md, .csv, .json (and charts) here")
    parser.add_argument("--limit", type=positive_int, help="evaluate only the first N items of each task")
    parser.add_argument("--batch-size", type=positive_int, default=8)
    parser.add_argument("--device", default=None, help="e.g. cpu or cuda:0")
    parser.add_argument("--open-ended-scores", type=Path, metavar="JSON",
                        help="GSM-MC / MATH-MC / PythonIO: {model: open-ended accuracy}, for the correlation")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])

    def run() -> None:
        options = parser.parse_args(argv)
        logging.basicConfig(level=options.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        for table in evaluate(options):
            print(f"\n## {table.title}\n\n{table.to_markdown()}")

    return exit_code(run)


if __name__ == "__main__":
    sys.exit(main())
