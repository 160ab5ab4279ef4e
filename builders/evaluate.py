"""Evaluate models on a release with the lm-eval tasks it carries, and write the table its paper reports.

    python -m builders.evaluate RELEASE --model hf:PATH --model openai:MODEL@URL --output results/
    python -m builders.evaluate RELEASE --model hf:FOLDER --model-args gguf_file=MODEL.gguf --tasks original --limit 0.1

Needs lm-eval (``pip install "mcqforge[eval]"``).

``RELEASE`` is a release folder or a published release, ``REPO@vX.Y.Z``. Models are Hugging Face model
folders or Hub ids (``hf:PATH``), OpenAI-compatible completion endpoints such as a vLLM server
(``openai:MODEL@http://host:8000/v1``: multiple-choice scoring needs log-probabilities, which vLLM's
completions endpoint gives), or lm-eval's ``dummy`` model; ``--model-args`` after a ``--model`` gives it lm-eval's
model arguments (``gguf_file=``, ``dtype=``, ``revision=``, ...). lm-eval runs through its Python API on the tasks
listed in the release's ``lm_eval/manifest.json``; the builder's table then comes from the per-item
predictions:

- WiCkeD: accuracy on ``original`` and each variant, the drop, and the mean ± std over the variants;
- GSM-MC, MATH-MC, PythonIO: accuracy per set, and with ``--open-ended-scores`` the correlation between the
  models' multiple-choice and open-ended scores;
- MMLU-Pro+: accuracy and drop per group and per category, SSR and CPI;
- perturbations: k_τ, RStd and the slope chart per perturbed config, a "major shift" when k_τ ≤ 0.75;
- contrast sets: accuracy with and without the question, and the gap.

Each table is written as Markdown, CSV and JSON (``<output>/evaluation.{md,csv,json}``), with a chart where
the paper has one; ``--log-samples`` keeps lm-eval's own results and per-sample logs under ``<output>/samples/``.
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import importlib
import importlib.util
import io
import json
import logging
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.tables import Statistics, Table
from builders.core.options.argtypes import positive_int, share_or_count
from builders.core.release.build_config import BUILD_CONFIG_FILE
from builders.core.pipeline.cli import ArgumentParser, check_writable_folder, exit_code
from builders.core.release.reader import open_release
from builders.core.sources.predictions import choice_prediction
from builders.core.tasks.lm_eval_quiet import WITHOUT_CHAT_TEMPLATE, has_no_chat_template, quiet_lm_eval
from builders.core.tasks.lm_eval_tasks import MANIFEST, TASKS_DIR
from builders.core.tasks.results import Runs, TableOptions, TaskResult, by_role
from builders.registry import BUILDERS, load_builder

logger = logging.getLogger(__name__)


# ---- models -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    name: str
    lm_eval_model: str
    model_args: dict[str, Any]


def parse_model(text: str, batch_size: int, extra_args: str | None = None) -> ModelSpec:
    """``hf:PATH``, ``openai:MODEL@URL`` or ``dummy``, with lm-eval's ``KEY=VALUE,...`` model arguments on top of
    the defaults (a GGUF file in a folder: ``hf:FOLDER`` with ``gguf_file=NAME.gguf``)."""
    kind, _, rest = text.partition(":")
    if text == "hf" and extra_args and "pretrained=" in extra_args:  # lm-eval's `--model hf --model_args ...`
        args = model_arguments(extra_args)
        rest = str(args.pop("pretrained"))
        text = f"hf:{rest}"
        extra_args = ",".join(f"{key}={value}" for key, value in args.items()) or None
    if text == "hf":
        raise UserError("--model hf needs --model_args pretrained=PATH[,KEY=VALUE...], as lm-eval's (or --model hf:PATH)")
    if kind == "hf" and rest.endswith(".gguf"):
        raise UserError(f"--model {text}: lm-eval loads a GGUF file from its folder: --model hf:{Path(rest).parent} "
                        f"--model-args gguf_file={Path(rest).name}")
    if text == "dummy":
        spec = ModelSpec("dummy", "dummy", {})
    elif kind == "hf" and rest:
        spec = ModelSpec(Path(rest).name if Path(rest).exists() else rest, "hf",
                         {"pretrained": rest, "dtype": "float32", "batch_size": batch_size})
    elif kind == "openai" and "@" in rest:
        model, _, url = rest.partition("@")
        spec = ModelSpec(model, "local-completions", {"model": model, "base_url": url.rstrip("/") + "/completions",
                                                      "tokenized_requests": False, "num_concurrent": 8})
    else:
        raise UserError(f"--model {text!r}: expected hf:PATH, openai:MODEL@URL or dummy")
    if not extra_args:
        return spec
    if spec.lm_eval_model == "dummy":
        raise UserError("--model dummy takes no --model-args")
    args = model_arguments(extra_args)
    name = Path(str(args["gguf_file"])).stem if "gguf_file" in args else spec.name
    if "gguf_file" in args:
        require_modules(("gguf",), "--model-args gguf_file=")
    return ModelSpec(name, spec.lm_eval_model, {**spec.model_args, **args})


def model_arguments(text: str) -> dict[str, Any]:
    """lm-eval's ``--model_args`` syntax, ``KEY=VALUE,...``, with its value types (numbers, booleans)."""
    pairs = [part for part in text.split(",") if part]
    if not pairs or any("=" not in part or not part.split("=", 1)[0].strip() for part in pairs):
        raise UserError(f"--model-args {text!r}: expected KEY=VALUE[,KEY=VALUE...], as lm-eval's --model_args")
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(text)


class ModelAction(argparse.Action):
    """``--model`` adds a model; ``--model-args`` gives the model named just before it its arguments."""

    def __call__(self, parser, namespace, value, option_string=None):
        models = list(getattr(namespace, self.dest, None) or [])
        if option_string == "--model":
            models.append([value, None])
        elif not models:
            raise UserError("--model-args must follow the --model it is for")
        elif models[-1][1] is not None:
            raise UserError(f"--model {models[-1][0]} has two --model-args; give them as one KEY=VALUE,... list")
        else:
            models[-1] = [models[-1][0], value]
        setattr(namespace, self.dest, models)


EVAL_PACKAGES = {"lm_eval": "lm-eval", "gguf": "gguf"}  # module -> the package of the [eval] extra that installs it


def require_modules(modules: Sequence[str], what: str) -> None:
    """Refuse, before any work, to run without the libraries that only the ``[eval]`` extra installs."""
    missing = [EVAL_PACKAGES[module] for module in modules if importlib.util.find_spec(module) is None]
    if missing:
        raise UserError(f"{what} needs {', '.join(missing)}, which mcqforge's [eval] extra installs: "
                        'pip install "mcqforge[eval]"')


# ---- the release ------------------------------------------------------------------------------------------


def open_tasks(spec: str) -> tuple[Path, dict[str, Any]]:
    """The release's folder (with its task folder) and its lm-eval manifest."""
    folder = open_release(spec, [f"{TASKS_DIR}/*", f"{TASKS_DIR}/**/*", BUILD_CONFIG_FILE])
    path = folder / MANIFEST
    if not path.is_file():
        raise UserError(f"{spec} has no {MANIFEST}: it was not built with lm-eval tasks")
    return folder, json.loads(path.read_text(encoding="utf-8"))


# ---- running lm-eval --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSettings:
    """How lm-eval runs every model: lm-eval's own options, under mcqforge's names."""

    limit: float | int | None = None
    device: str | None = None
    num_fewshot: int | None = None
    apply_chat_template: bool | str = False
    fewshot_as_multiturn: bool = False
    system_instruction: str | None = None
    samples_folder: Path | None = None  # lm-eval's results and per-sample logs go here, one folder per model


def evaluate_model(folder: Path, manifest: Mapping[str, Any], model: ModelSpec,
                   settings: RunSettings) -> dict[str, TaskResult]:
    import lm_eval

    tasks = {task["task"]: task for task in manifest["tasks"]}
    quiet_lm_eval()
    tracker = _tracker(settings.samples_folder, model)
    pretrained = str(model.model_args.get("pretrained", ""))
    if pretrained and has_no_chat_template(pretrained):
        WITHOUT_CHAT_TEMPLATE.add(pretrained)
    try:
        results = lm_eval.simple_evaluate(
            model=_lm(model), model_args=model.model_args, tasks=list(tasks),
            task_manager=_task_manager(folder), limit=settings.limit,
            num_fewshot=settings.num_fewshot, device=settings.device or _default_device(), log_samples=True,
            apply_chat_template=settings.apply_chat_template, fewshot_as_multiturn=settings.fewshot_as_multiturn,
            system_instruction=settings.system_instruction, evaluation_tracker=tracker)
    except Exception as error:  # a model that cannot load or answer: one line, not lm-eval's traceback
        first = str(error).strip().splitlines()[0][:300] if str(error).strip() else ""
        raise UserError(f"lm-eval failed for model {model.name}: {type(error).__name__}: {first}") from None
    if tracker is not None:
        _save_samples(tracker, results, model)
    return {name: task_result(results, name, task.get("metric", "acc")) for name, task in tasks.items()}


def _task_manager(folder: Path):
    """lm-eval's loader of the release's own tasks only: indexing lm-eval's ~12,000 built-in task files as well
    cost about 40 s per model, and a release task must not resolve to a built-in one of the same name."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(folder / TASKS_DIR), include_defaults=False)


def _tracker(samples_folder: Path | None, model: ModelSpec):
    """lm-eval's own tracker, which writes its results file and ``samples_<task>_<date>.jsonl`` in one folder per
    model, as its CLI's ``--output_path --log_samples`` do."""
    if samples_folder is None:
        return None
    from lm_eval.loggers import EvaluationTracker

    return EvaluationTracker(output_path=str(samples_folder))


def _save_samples(tracker, results: Mapping[str, Any], model: ModelSpec) -> None:
    # the folder is named after the model as the tables name it, not after lm-eval's path of its weights
    tracker.general_config_tracker.model_name_sanitized = re.sub(r"[^\w.-]+", "__", model.name)
    samples = results["samples"]
    tracker.save_results_aggregated(results={k: v for k, v in results.items() if k != "samples"}, samples=samples)
    for task in results["configs"]:
        tracker.save_results_samples(task_name=task, samples=samples[task])


def _lm(model: ModelSpec):
    """The lm-eval model name, or for ``dummy`` an instance without a tokenizer: lm-eval's dummy model fetches
    a 32B model's tokenizer from the Hub only to log its special tokens, which offline costs 30 s of retries."""
    if model.lm_eval_model != "dummy":
        return model.lm_eval_model
    from lm_eval.models.dummy import DummyLM

    dummy = DummyLM()
    dummy.__dict__["tokenizer"] = None  # shadows the cached property
    return dummy


CPU_BATCH, GPU_BATCH = 4, 8


def default_batch_size(options: argparse.Namespace) -> int:
    """``--batch-size``, else 8 on a GPU and 4 on the CPU: lm-eval holds a batch's log-probabilities, batch x prompt
    tokens x vocabulary x 8 bytes, in the process's memory there. The GSM-MC sample with SmolLM2-135M on CPU: 3.0 GB
    at 8, 2.0 GB at 4 (82 s and 87 s), 1.3 GB at 1 (129 s)."""
    if options.batch_size is not None:
        return int(options.batch_size)
    device = options.device or ("cuda" if any(m[0].startswith("hf") for m in options.model) and
                                _default_device() == "cuda" else "cpu")
    return GPU_BATCH if device.startswith("cuda") else CPU_BATCH


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

def paper_table(builder: str | None) -> Callable[[Runs, Mapping[str, Any], TableOptions], Statistics]:
    """The builder's ``evaluation_table``: the table its paper reports."""
    table = load_builder(builder).evaluation_table if builder in BUILDERS else None
    if table is None:
        raise UserError(f"no evaluation table for builder {builder!r}")
    return table


# ---- writing ------------------------------------------------------------------------------------------------


PER_TASK = "Per task"


def per_task_table(runs: Runs, manifest: Mapping[str, Any], limit: float | int | None) -> Table:
    """One row per model and task: the items it was scored on, the ``--limit`` that chose them, the accuracy and
    its standard error (sqrt(p(1-p)/(n-1)), as lm-eval's), so that a partial run cannot pass for a whole one."""
    configs = {task["task"]: task for task in manifest["tasks"]}
    rows = []
    for model, results in runs.items():
        for name, result in results.items():
            n = len(result.items)
            stderr = math.sqrt(result.accuracy * (1 - result.accuracy) / (n - 1)) if n > 1 else None
            rows.append((model, name, configs.get(name, {}).get("config"), configs.get(name, {}).get("role"), n,
                         "all" if limit is None else limit, result.accuracy, stderr))
    note = "Every item of each task." if limit is None else \
        f"A partial result: `--limit {limit}` scored only the first items of each task (of each subject)."
    return Table(PER_TASK, ("model", "task", "config", "role", "items", "limit", "accuracy", "stderr"), rows,
                 note=note)


def write_outputs(tables: Statistics, folder: Path, per_task: Table) -> None:
    """evaluation.md and .json: the per-task table, then the paper's; evaluation.csv the per-task table alone, one
    row per model and task (``pandas.read_csv`` reads it as it is)."""
    folder.mkdir(parents=True, exist_ok=True)
    every = [per_task, *tables]
    (folder / "evaluation.md").write_text(
        "\n\n".join(f"## {t.title}\n\n{t.to_markdown()}" for t in every) + "\n", encoding="utf-8")
    (folder / "evaluation.json").write_text(json.dumps([t.to_dict() for t in every], indent=2) + "\n",
                                            encoding="utf-8")
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(per_task.columns)
    writer.writerows(per_task.rows)
    (folder / "evaluation.csv").write_text(text.getvalue(), encoding="utf-8")


OPEN_ENDED_BUILDERS = ("gsm_mc", "math_mc", "python_io")  # their tables correlate with open-ended scores


def select_tasks(manifest: Mapping[str, Any], patterns: Sequence[str] | None) -> dict[str, Any]:
    """The manifest with the tasks ``--tasks`` names (task or config names, or shell-style patterns of them) and
    the baselines the paper's table compares them with."""
    if not patterns:
        return dict(manifest)
    tasks = manifest["tasks"]
    groups = {group["group"]: set(group["tasks"]) for group in manifest.get("groups", [])}
    chosen: list[Mapping[str, Any]] = []
    for pattern in (part for text in patterns for part in text.split(",") if part):  # lm-eval's `--tasks a,b` too
        members = set().union(*[names for group, names in groups.items() if fnmatch.fnmatchcase(group, pattern)])
        matched = [t for t in tasks if t["task"] in members
                   or any(fnmatch.fnmatchcase(t[key], pattern) for key in ("task", "config"))]
        if not matched:
            configs = ", ".join(dict.fromkeys(t["config"] for t in tasks))
            named = f"; its groups: {', '.join(groups)}" if groups else ""
            raise UserError(f"--tasks {pattern}: no task, group or config of this release matches; its configs: "
                            f"{configs}{named}")
        chosen += matched
    chosen += [base for task in chosen for base in _baselines(manifest, task)]
    return {**manifest, "tasks": [t for t in tasks if any(t is c for c in chosen)]}


def _baselines(manifest: Mapping[str, Any], task: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ``original`` tasks a task is compared with: same scoring, and its ``baseline`` config where it names one."""
    if task.get("role") in ("original", "set"):
        return []
    return [base for base in by_role(manifest, "original")
            if base.get("scoring") == task.get("scoring") and base["config"] == task.get("baseline", base["config"])]


def evaluate(options: argparse.Namespace) -> Statistics:
    require_modules(("lm_eval",), "evaluate")
    if options.output:
        check_writable_folder(options.output)  # before the models run: a bad --output costs nothing
    if options.log_samples and not options.output:
        raise UserError("--log-samples writes under --output: give --output DIR")
    models = [parse_model(text, default_batch_size(options), args) for text, args in options.model]
    if len({m.name for m in models}) != len(models):
        raise UserError("two --model arguments have the same name")
    folder, manifest = open_tasks(options.release)
    manifest = select_tasks(manifest, options.tasks)
    table = paper_table(manifest.get("builder"))
    if options.open_ended_scores:
        from builders.from_predictions.tasks import read_scores

        if manifest.get("builder") not in OPEN_ENDED_BUILDERS:
            raise UserError(f"--open-ended-scores applies to {', '.join(OPEN_ENDED_BUILDERS)} releases, "
                            f"not {manifest.get('builder')}")
        scores = read_scores(options.open_ended_scores)
        _require_scores_of_these_models(options.open_ended_scores, scores, [m.name for m in models])
    settings = RunSettings(options.limit, options.device, options.num_fewshot, options.apply_chat_template,
                           options.fewshot_as_multiturn, options.system_instruction,
                           options.output / "samples" if options.log_samples else None)
    runs = {model.name: evaluate_model(folder, manifest, model, settings) for model in models}
    tables = table(runs, manifest, TableOptions(options.output, options.open_ended_scores))
    if options.output:
        write_outputs(tables, options.output, per_task_table(runs, manifest, options.limit))
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
    parser.add_argument("--model", action=ModelAction, dest="model", required=True, metavar="MODEL",
                        help="hf:PATH, openai:MODEL@URL or dummy (or lm-eval's `hf` with --model_args pretrained=PATH); "
                             "repeat for several models")
    parser.add_argument("--model-args", "--model_args", action=ModelAction, dest="model", metavar="KEY=VALUE,...",
                        help="lm-eval's model arguments for the --model just before (gguf_file=, dtype=, revision=, "
                             "trust_remote_code=, ...)")
    parser.add_argument("--tasks", nargs="+", metavar="NAME",
                        help="only these tasks, groups or configs (shell patterns too, or lm-eval's comma list), with "
                             "the baselines they are compared with (default: every task of lm_eval/manifest.json)")
    parser.add_argument("--output", type=Path, help="write evaluation.md, .csv, .json (and charts) here")
    parser.add_argument("--log-samples", action="store_true",
                        help="keep lm-eval's results and per-sample logs under OUTPUT/samples/MODEL/")
    parser.add_argument("--limit", type=share_or_count,
                        help="evaluate only the first N items of each lm-eval task (of each subject, where a config "
                             "is a group of subjects), or a share of them when below 1.0")
    parser.add_argument("--num-fewshot", type=int, default=None, metavar="N",
                        help="override the tasks' demonstrations (default: the paper's, as each task file says)")
    parser.add_argument("--apply-chat-template", nargs="?", const=True, default=False, metavar="TEMPLATE",
                        help="render prompts with the model's chat template (or the named one), as lm-eval's flag")
    parser.add_argument("--fewshot-as-multiturn", action="store_true",
                        help="with --apply-chat-template: each demonstration as a user/assistant turn")
    parser.add_argument("--system-instruction", default=None, help="a system instruction before every prompt")
    parser.add_argument("--batch-size", type=positive_int, default=None,
                        help="requests per forward pass of an hf: model (default: 8 on a GPU, 4 on the CPU, where each "
                             "costs its prompt tokens x vocabulary x 8 bytes of memory)")
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
