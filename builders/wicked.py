"""WiCkeD: replace one uniformly chosen option with "None of the above".

Elhady, Agirre and Artetxe (2025), section 3.1. For every item that is not single-best-answer (SBA):
draw one option with the per-item generator, remove it, and add "None of the above". If the removed
option was the gold, NOTA becomes the answer; otherwise the gold keeps its text at its new index.
SBA items are copied unchanged: a BERT classifier decides (the paper), or an LLM judge asked at build
time (``--sba-judge MODEL``: the two are alternatives). Items whose options already refer to each
other ("None of the above", "Both a and c", "Option B", "All three", "The first two"), items with an option
that already means "no answer" ("None, because ...", "I have no comment.": NOTA would be a second one) and
items with duplicated options are copied unchanged too, with the reason: adding NOTA to them would be
incoherent. The paper does not skip those; the card counts them.

    python -m builders.wicked --benchmark mmlu --source ../data/mmlu --sba-classifier none --output out/
"""

from __future__ import annotations

import argparse
import json
import logging
import re
from statistics import fmean
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from builders.core.record import Value

from builders.core import api, cli, llm, lm_eval_tasks
from builders.core.benchmarks import BENCHMARKS
from builders.core.build import Build, Builder, Check, TaskLocation
from builders.core.errors import UserError
from builders.core.models import ModelToLoad
from builders.core.options import NOTA_TEXT, none_like_option, position_dependent_reason
from builders.core.record import MCQRecord
from builders.core.rng import item_rng
from builders.core.sources import LoadedSource, duplicate_option
from builders.core.tables import Statistics, Table, counts_table
from builders.core.validate import referring_options, says_no_answer
from builders.core.results import Runs, by_role, mean_std
from classifiers.sba_model import BATCH_SIZE, EVALUATIONS_FILE, PAPER_CLASSIFIER

logger = logging.getLogger(__name__)

NAME = "wicked"
BENCHMARK_NAMES = ["mmlu", "mmlu_pro", "mmlu_redux", "commonsense_qa", "truthful_qa", "arc_challenge"]
SBA_SKIP = "single_best_answer"
DUPLICATE_SKIP = "duplicate_choices"
JUDGE_FAILED_SKIP = "sba_judge_failed"
NONE_LIKE_SKIP = "none_like_option"
SHOTS = 5  # the paper evaluates 5-shot through lm-eval's MMLU prompt
METADATA_FEATURES = {
    "is_sba": Value("bool"),
    "sba_score": Value("float32"),
    "sba_judge": Value("string"),
    "removed_index": Value("int32"),
    "nota_index": Value("int32"),
    "nota_is_answer": Value("bool"),
    "original_answer_index": Value("int32"),
    "skip_reason": Value("string"),
}
CITATION = """@article{elhady2025wicked,
  title={{WiCkeD}: A Simple Method to Make Multiple Choice Benchmarks More Challenging},
  author={Elhady, Ahmed and Agirre, Eneko and Artetxe, Mikel},
  journal={arXiv preprint},
  year={2025}
}"""


MAX_VARIANTS = 1000  # each variant is a config of the release


@dataclass(frozen=True)
class KnownSBAShare:
    """What a reading of a build without SBA detection found: of the items keyed "None of the above", how many
    still had an acceptable option (so two defensible answers: NOTA and that option)."""

    nota_keyed: int
    still_acceptable: int
    reading: str

    @property
    def share(self) -> float:
        return self.still_acceptable / self.nota_keyed


# Benchmarks whose share of single-best-answer items is known to be high: without SBA detection, a large part of
# the items whose gold was removed keep an acceptable option.
KNOWN_SBA_SHARES = {
    "commonsense_qa": KnownSBAShare(11, 6, "a 60-item reading of a WiCkeD CommonsenseQA build without SBA detection "
                                           "(mcqforge issue 22)"),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("WiCkeD")
    group.add_argument("--variants", type=cli.whole_number(1, MAX_VARIANTS), default=5,
                       help="number of independent WiCkeD variants (configs variant_0...)")
    group.add_argument("--sba-classifier", default=PAPER_CLASSIFIER, metavar="ID|PATH|none",
                       help="SBA classifier (Hub id or local folder, e.g. the output of `classifiers.sba train`); "
                            "'none' treats every item as non-SBA")
    group.add_argument("--sba-threshold", type=cli.share, default=None,
                       help="P(SBA) at or above which an item is copied unchanged (default: the classifier config's, else 0.5)")
    group.add_argument("--sba-judge", metavar="MODEL", default=None,
                       help="decide SBA with this LLM instead of the classifier: one request per distinct item, with "
                            "the version-2 labelling rule; an item whose judgement fails is copied unchanged")
    group.add_argument("--nota-position", choices=["last", "random"], default="last",
                       help="'last' follows the paper; 'random' spreads NOTA answers over all positions")
    group.add_argument("--redux-keep-all", action="store_true",
                       help="mmlu_redux: keep every item, not only error_type == 'ok'")
    runtime = cli.runtime_group(parser, "SBA classifier")
    runtime.add_argument("--sba-batch-size", type=cli.positive_int, default=BATCH_SIZE,
                         help="sequences per classifier forward pass (scores do not depend on it)")
    llm.add_llm_arguments(cli.runtime_group(parser, "SBA judge endpoint"))


def models_to_load(args: argparse.Namespace) -> list[ModelToLoad]:
    if args.sba_judge or args.sba_classifier.lower() == "none":
        return []
    return [ModelToLoad(args.sba_classifier, "SBA classifier",
                        "name a local model folder (the output of `python -m classifiers.sba train`), or pass "
                        "--sba-classifier none to alter every item")]


def check_arguments(args: argparse.Namespace) -> None:
    if args.sba_judge and args.sba_classifier.lower() not in ("none", PAPER_CLASSIFIER.lower()):
        raise UserError("--sba-judge and --sba-classifier are alternatives: pass one of them")
    if args.sba_judge and args.sba_threshold is not None:
        raise UserError("--sba-threshold applies to the classifier, not to --sba-judge")


# ---- the per-item transform ------------------------------------------------------------------------


def add_nota(record: MCQRecord, seed: int, variant: int, nota_position: str) -> MCQRecord:
    """Remove one uniformly drawn option and add NOTA; the gold is tracked by index."""
    rng = item_rng(seed, record.content_key, NAME, variant)
    size = len(record.choices)
    removed = int(rng.integers(size))
    nota_index = size - 1 if nota_position == "last" else int(rng.integers(size))
    kept = [i for i in range(size) if i != removed]
    choices = [record.choices[i] for i in kept]
    choices.insert(nota_index, NOTA_TEXT)
    if removed == record.answer:
        answer = nota_index
    else:
        position = kept.index(record.answer)
        answer = position + (position >= nota_index)
    return record.replace(choices=choices, answer=answer).with_metadata(
        removed_index=removed, nota_index=nota_index, nota_is_answer=removed == record.answer,
    )


@dataclass(frozen=True)
class SBAVerdict:
    """What decided whether an item is SBA: a classifier score, a judge's label (None: the judgement failed)."""

    is_sba: bool
    score: float | None = None
    judge: str | None = None
    judge_failed: bool = False


NOT_JUDGED = SBAVerdict(False)


def skip_reason(record: MCQRecord) -> str | None:
    """Why adding NOTA to this item would be incoherent, or None."""
    if duplicate_option(record.choices) is not None:
        return DUPLICATE_SKIP
    reason = position_dependent_reason(record.choices)
    if reason is None and none_like_option(record.choices) is not None:
        return NONE_LIKE_SKIP  # "None, because ...", "I have no comment.": NOTA would be a second "no answer"
    return reason


def wicked_variant(record: MCQRecord, verdict: SBAVerdict, reason: str | None, seed: int, variant: int,
                   nota_position: str) -> MCQRecord:
    if reason is None and verdict.judge_failed:
        reason = JUDGE_FAILED_SKIP
    elif reason is None and verdict.is_sba:
        reason = SBA_SKIP
    unchanged = record.with_metadata(
        is_sba=verdict.is_sba, sba_score=verdict.score, sba_judge=verdict.judge, removed_index=None,
        nota_index=None, nota_is_answer=False, original_answer_index=record.answer, skip_reason=reason,
    )
    return unchanged if reason else add_nota(unchanged, seed, variant, nota_position)


# ---- SBA: the classifier or the judge, once per distinct item ------------------------------------------


def sba_key(record: MCQRecord) -> tuple:
    return record.question, record.choices, record.answer


@dataclass
class SBADecisions:
    """The verdict for each distinct (question, choices, answer), and what the card says about how."""

    verdicts: dict[tuple, SBAVerdict]
    card: dict[str, Any] | None  # None: no SBA detection (--sba-classifier none)
    labelled: tuple[dict[str, Any], ...] = ()  # the classifier's recorded evaluations on labelled questions

    def verdict(self, record: MCQRecord) -> SBAVerdict:
        return self.verdicts.get(sba_key(record), NOT_JUDGED)


def decide_sba(records: Sequence[MCQRecord], args: argparse.Namespace, benchmark: str) -> SBADecisions:
    keys = list(dict.fromkeys(sba_key(r) for r in records))
    if args.sba_judge:
        return judge_sba(keys, args)
    if args.sba_classifier.lower() == "none":
        return SBADecisions({}, None)
    return classify_sba(keys, args, benchmark)


def classify_sba(keys: Sequence[tuple], args: argparse.Namespace, benchmark: str) -> SBADecisions:
    from classifiers.sba_model import SBAClassifier

    classifier = SBAClassifier.load(args.sba_classifier, threshold=args.sba_threshold)
    scores = classifier.scores(keys, batch_size=args.sba_batch_size)
    verdicts = {key: SBAVerdict(float(score) >= classifier.threshold, float(score)) for key, score in zip(keys, scores, strict=True)}
    card = {"method": "classifier", "name": classifier.name, "revision": classifier.revision,
            "threshold": classifier.threshold, "input": classifier.input_format}
    return SBADecisions(verdicts, card, labelled_shares(args.sba_classifier, classifier.revision, benchmark))


def judge_sba(keys: Sequence[tuple], args: argparse.Namespace) -> SBADecisions:
    """Ask the judge about each distinct item with the version-2 labelling template, through the one LLM
    client (concurrency, retries, on-disk cache: a rerun pays for nothing twice). A reply that does not
    parse, names no valid alternative, or fails is no verdict: the item is copied unchanged."""
    from classifiers.labelling import label_with_llm, load_template

    template = load_template()
    rows = [{"id": f"item-{i}", "question": q, "choices": list(c), "answer": a} for i, (q, c, a) in enumerate(keys)]
    with llm.LLMSettings.from_args(args).client(args.sba_judge) as client:
        run = label_with_llm(rows, client, template)
    logger.info("SBA judge: %s", run.usage)
    verdicts = {key: SBAVerdict(row["label"] == "SBA", judge=row["label"], judge_failed=row["label"] is None)
                for key, row in zip(keys, run.rows, strict=True)}
    counts = Counter(row["label"] or "failed" for row in run.rows)
    card = {"method": "judge", "name": args.sba_judge, "template": template.version, "questions": len(keys),
            "sba": counts["SBA"], "sca": counts["SCA"], "failed": counts["failed"]}
    return SBADecisions(verdicts, card)


def labelled_shares(classifier: str, revision: str, benchmark: str) -> tuple[dict[str, Any], ...]:
    """What ``classifiers.sba evaluate --record`` measured for this benchmark on labelled questions."""
    return tuple({"labels": Path(str(e.get("labels_file", "?"))).name, **e["per_source"][benchmark],
                  "model_threshold": e.get("threshold")}
                 for e in recorded_evaluations(classifier, revision) if benchmark in (e.get("per_source") or {}))


def recorded_evaluations(classifier: str, revision: str) -> list[dict[str, Any]]:
    """The evaluations stored with the classifier: in its folder, or in its Hub repo (none when absent)."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    path = Path(classifier)
    try:
        if not path.is_dir():
            commit = revision if re.fullmatch(r"[0-9a-f]{40}", revision) else None
            path = Path(hf_hub_download(classifier, EVALUATIONS_FILE, revision=commit)).parent
        file = path / EVALUATIONS_FILE
        return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else []
    except (OSError, ValueError, EntryNotFoundError) as error:
        logger.info("no recorded evaluation for %s (%s)", classifier, str(error).splitlines()[0][:120])
        return []


# ---- the build ---------------------------------------------------------------------------------------


def build(source: LoadedSource, args: argparse.Namespace) -> Build:
    originals = source.items
    all_records = [r for records in originals.values() for r in records]
    reasons = {r.id: skip_reason(r) for r in all_records}
    sba = decide_sba([r for r in all_records if reasons[r.id] is None], args, source.benchmark.name)
    configs = {"original": dict(originals)}
    for variant in range(args.variants):
        configs[f"variant_{variant}"] = {
            split: [wicked_variant(r, sba.verdict(r), reasons[r.id], args.seed, variant, args.nota_position)
                    for r in records]
            for split, records in originals.items()
        }
    benchmark_features = dict(source.benchmark.metadata_features)
    metadata_features = {name: benchmark_features for name in configs}
    metadata_features.update({name: {**benchmark_features, **METADATA_FEATURES} for name in configs if name != "original"})
    threshold = sba.card["threshold"] if sba.card and sba.card["method"] == "classifier" else None
    tasks = TaskPlan.for_source(source, args.variants)
    undetected = undetected_sba(source.benchmark.name, sba, configs)
    return Build(
        builder=NAME,
        title=f"WiCkeD {source.benchmark.pretty_name}",
        method_citation=CITATION,
        source=source,
        params={"sba_threshold": threshold},
        configs=configs,
        metadata_features=metadata_features,
        exclusions=source.exclusions,
        checks=CHECKS,
        statistics=statistics(configs, sba),
        card_context={"sba": sba.card, "variants": args.variants, "nota_position": args.nota_position,
                      "tasks": tasks.card(), "undetected_sba": undetected},
        lm_eval_tasks=tasks.files,
        unchanged_config="original",  # a shortcut the source's own options carry (MMLU-Pro's longest option) is inherited
    )


def undetected_sba(benchmark: str, sba: SBADecisions, configs) -> dict[str, Any] | None:
    """Without SBA detection on a benchmark known to hold many SBA items: the share of NOTA-keyed items expected
    to be incoherent (still having an acceptable option), warned in the log and stated in the card."""
    known = KNOWN_SBA_SHARES.get(benchmark)
    if sba.card is not None or known is None:
        return None
    altered = [r for records in configs["variant_0"].values() for r in records if r.metadata["removed_index"] is not None]
    nota_keyed = sum(r.metadata["nota_is_answer"] for r in altered)
    expected = known.share * nota_keyed / len(altered) if altered else 0.0
    warning = {"reading": known.reading, "nota_keyed_read": known.nota_keyed, "still_acceptable": known.still_acceptable,
               "share_of_nota_keyed": known.share, "share_of_altered": expected}
    logger.warning("--sba-classifier none on %s, a benchmark with many single-best-answer items: in %s, %d of %d items "
                   "keyed 'None of the above' still had an acceptable option; about %.0f%% of this build's altered "
                   "items (variant_0) are expected to have two defensible answers", benchmark, known.reading,
                   known.still_acceptable, known.nota_keyed, 100 * expected)
    return warning


# ---- statistics for the card -------------------------------------------------------------------------


def statistics(configs, sba: SBADecisions) -> Statistics:
    first = configs["variant_0"]
    outcomes = Counter(r.metadata["skip_reason"] or "altered" for records in first.values() for r in records)
    tables = [counts_table("Items altered and copied unchanged", outcomes, "outcome", "items (all splits)", sba_note(sba)),
              altered_and_flagged(first)]
    if sba.labelled:
        tables.append(Table(
            "SBA on labelled questions",
            ("labels", "questions", "labelled SBA", "flagged SBA", "precision", "recall", "model threshold"),
            [(e["labels"], e["n"], e["labelled_share"], e["flagged_share"], e["precision"], e["recall"],
              e["model_threshold"]) for e in sba.labelled],
            note="What the classifier's recorded evaluation measured on this benchmark's labelled questions (version-2 "
                 "labels): the share labelled SBA, next to the share it flags at its own threshold.",
            percent=("labelled SBA", "flagged SBA", "precision", "recall")))
    return Statistics(tables + nota_rates(configs))


def sba_note(sba: SBADecisions) -> str:
    card = sba.card
    if card is None:
        return "No SBA detection was used (`--sba-classifier none`): every coherent item was altered."
    if card["method"] == "judge":
        return (f"SBA judge `{card['name']}` (template `{card['template']}`) was asked about {card['questions']} "
                f"distinct items: {card['sba']} SBA (copied unchanged), {card['sca']} SCA (altered), {card['failed']} "
                "without a usable answer (copied unchanged as `sba_judge_failed`).")
    flagged = sum(v.is_sba for v in sba.verdicts.values())
    return (f"Classifier `{card['name']}` (revision `{card['revision']}`, input: {card['input']}) scored "
            f"{len(sba.verdicts)} distinct items; {flagged} reached the threshold {card['threshold']} and were copied "
            "unchanged.")


def altered_and_flagged(records_by_split) -> Table:
    rows = []
    for split, records in records_by_split.items():
        reasons = Counter(r.metadata["skip_reason"] or "altered" for r in records)
        referring = sum(n for reason, n in reasons.items() if reason.startswith("has_"))
        n = len(records) or 1  # a split whose every row was excluded has no items, and no shares to speak of
        rows.append((split, len(records), reasons["altered"] / n, reasons[SBA_SKIP] / n, referring / n,
                     reasons[NONE_LIKE_SKIP] / n, reasons[DUPLICATE_SKIP] / n, reasons[JUDGE_FAILED_SKIP] / n))
    shares = ("altered", "flagged SBA", "options refer to options", "an option means none", "duplicate options",
              "judge failed")
    return Table("Altered and flagged SBA", ("split", "items", *shares), rows,
                 note="Shares of each split's items (the same in every variant).", percent=shares)


def nota_rates(configs) -> list[Table]:
    variants = [name for name in configs if name != "original"]
    per_variant, summary = [], []
    for split in configs["original"]:
        rates = []
        for variant in variants:
            records = configs[variant][split]
            altered = [r for r in records if r.metadata["removed_index"] is not None]
            nota = sum(r.metadata["nota_is_answer"] for r in altered)
            rate = nota / len(altered) if altered else 0.0
            expected = float(np.mean([1 / len(r.choices) for r in altered])) if altered else 0.0
            rates.append(rate)
            per_variant.append((split, variant, len(records), len(altered), nota, rate, expected))
        summary.append((split, float(np.mean(rates)), float(np.std(rates))))
    return [Table("NOTA-answer rate", ("split", "mean NOTA-answer rate", "std across variants"), summary),
            Table("NOTA-answer rate per variant",
                  ("split", "variant", "items", "altered", "NOTA is the answer", "NOTA rate among altered",
                   "expected (mean 1/k)"), per_variant)]


# ---- lm-eval tasks: lm-eval's MMLU prompt, 5-shot from the config's own few-shot split ------------------


def _subject(record: MCQRecord) -> str:
    return record.subject or record.category or ""


@dataclass(frozen=True)
class TaskPlan:
    """The release's lm-eval tasks, laid out as lm-eval's own ``mmlu``: per config, one task per subject (its
    description, and its first demonstrations through ``fewshot_config: sampler: first_n``) in a group weighted
    by size (the config's accuracy over its items), and a group over the variants."""

    benchmark: str
    configs: tuple[str, ...]
    eval_split: str
    fewshot_split: str | None
    shots: int
    subject_column: str  # the column the subjects are in: "subject", or "category" (MMLU-Pro)
    subjects: tuple[tuple[str, int], ...]  # (subject, its demonstrations: SHOTS, or fewer where it has fewer)

    @classmethod
    def for_source(cls, source: LoadedSource, variants: int) -> "TaskPlan":
        splits = list(source.items)
        eval_split = next((s for s in ("test", "validation") if s in splits),
                          next((s for s in splits if s != source.benchmark.fewshot_split), splits[0]))
        fewshot = source.benchmark.fewshot_split
        usable = fewshot in splits and fewshot != eval_split
        pool = Counter(_subject(r) for r in source.items[fewshot]) if usable else Counter()
        column = "subject" if any(r.subject for split in source.items.values() for r in split) else "category"
        names = sorted({_subject(r) for r in source.items[eval_split]})
        subjects = tuple((name, min(SHOTS, pool[name])) for name in names)
        return cls(source.benchmark.name, ("original", *[f"variant_{k}" for k in range(variants)]), eval_split,
                   fewshot if usable else None, SHOTS if usable else 0, column, subjects)

    def task(self, config: str) -> str:
        return f"{NAME}_{self.benchmark}_{config}"

    @property
    def group(self) -> str:
        return f"{NAME}_{self.benchmark}_variants"

    def card(self) -> dict[str, Any]:
        return {"original": self.task("original"), "group": self.group, "eval_split": self.eval_split,
                "fewshot_split": self.fewshot_split, "shots": self.shots}

    def files(self, location: TaskLocation) -> dict[str, bytes]:
        folder = lm_eval_tasks.TASKS_DIR
        slugs: dict[str, str] = {}
        for subject, _ in self.subjects:
            slugs[subject] = lm_eval_tasks.slug(subject, slugs.values())
        utils = lm_eval_tasks.UTILS + lm_eval_tasks.value_filters(self.subject_column, slugs)
        files = {f"{folder}/utils.py": utils.encode(),
                 f"{folder}/README.md": self.readme(location).encode()}
        manifest = []
        for config in self.configs:
            members = []
            for subject, shots in self.subjects:
                member = f"{self.task(config)}_{slugs[subject]}"
                entry = lm_eval_tasks.multiple_choice_task(
                    member, config, location, self.eval_split, description=self.description(subject),
                    fewshot_split=self.fewshot_split if shots else None, num_fewshot=shots,
                    process_docs=f"utils.only_{slugs[subject]}")
                comment = (f"WiCkeD {self.benchmark}, config {config!r}, subject {subject!r}: lm-eval's MMLU prompt, "
                           f"{shots}-shot: the subject's first items of the config's "
                           f"{self.fewshot_split or 'none'} split.")
                files[f"{folder}/{member}.yaml"] = lm_eval_tasks.to_yaml(entry, comment)
                members.append(member)
            files[f"{folder}/{self.task(config)}.yaml"] = lm_eval_tasks.to_yaml(
                lm_eval_tasks.group(self.task(config), members, weight_by_size=True),
                f"WiCkeD {self.benchmark}, config {config!r}: the accuracy over every item "
                "(subjects weighted by size).")
            role = {"role": "original"} if config == "original" else {"role": "variant", "variant": int(config.split("_")[1])}
            manifest.append({"task": self.task(config), "config": config, "split": self.eval_split, **role})
        variants = [self.task(c) for c in self.configs if c != "original"]
        files[f"{folder}/{self.group}.yaml"] = lm_eval_tasks.to_yaml(
            lm_eval_tasks.group(self.group, variants),
            "The mean accuracy over the WiCkeD variants; `python -m builders.evaluate` adds the std and the drop.")
        # lm-eval's group gives the mean; the std over the variants and the drop from `original` are computed by
        # `python -m builders.evaluate` from the per-task accuracies, as this entry says.
        files[lm_eval_tasks.MANIFEST] = lm_eval_tasks.manifest(
            NAME, location, manifest, [{"group": self.group, "tasks": variants, "original": self.task("original"),
                                        "reports": ["mean", "std", "drop"]}])
        return files

    @staticmethod
    def description(subject: str) -> str:
        """lm-eval's MMLU task description for the subject."""
        about = f" about {subject.replace('_', ' ')}" if subject else ""
        return f"The following are multiple choice questions (with answers){about}.\n\n"

    def readme(self, location: TaskLocation) -> str:
        where = (f"the release folder they sit in, else `{location.repo_id}` at `{location.revision}`" if location.repo_id
                 else "the release folder they sit in (this build was not published)")
        shots = (f"the first {self.shots} items of the same subject in the config's `{self.fewshot_split}` split (transformed "
                 "like the rest of the config)" if self.shots else "no demonstrations (the source has no few-shot split)")
        return f"""# lm-evaluation-harness tasks

`{self.task('original')}` evaluates the source unchanged, `{self.task('variant_0')}` ... each WiCkeD variant, and the
group `{self.group}` reports the mean accuracy over the variants. Every task scores the letter after "Answer:"
in lm-eval's MMLU prompt (the subject's description, then {shots}, then the item), on the `{self.eval_split}`
split; the YAML files read the dataset from {where}.

As lm-eval's own `mmlu`, each config is a group of one task per subject: the subject's
demonstrations come from lm-eval's few-shot machinery (`fewshot_split`, `fewshot_config: sampler: first_n`,
`num_fewshot`), so lm-eval reports the n-shot and `--num_fewshot` changes it; a subject with fewer than
{SHOTS} demonstrations shows those it has.

```
lm_eval --model hf --model_args pretrained=MODEL --include_path lm_eval \\
  --tasks {self.task('original')},{self.group} --log_samples --output_path results/
```

`python -m builders.evaluate` runs every task of `manifest.json` and reports the accuracy on `original`, on each
variant, the variants' mean and standard deviation, and the drop.
"""


# ---- builder invariants: written independently of the code that built the items -----------------------

def _pairs(build: Build):
    originals = {r.id: r for records in build.configs["original"].values() for r in records}
    for config, split, records in build.records():
        if config != "original":
            for record in records:
                yield config, split, record, originals[record.id]


def _altered(build: Build):
    return ((c, s, r, o) for c, s, r, o in _pairs(build) if r.metadata["removed_index"] is not None)


def _altered_shape(build: Build):
    for config, split, record, original in _altered(build):
        referring = referring_options(record.choices)
        if referring != [NOTA_TEXT]:
            yield f"{config}/{split} {record.id}: options referring to the others: {referring}"
        if len(record.choices) != len(original.choices):
            yield f"{config}/{split} {record.id}: {len(record.choices)} choices, original had {len(original.choices)}"


def _no_reference_altered(build: Build):
    for config, split, record, original in _altered(build):
        referring = referring_options(original.choices)
        none_like = [c for c in original.choices if says_no_answer(c)]
        if referring:
            yield f"{config}/{split} {record.id}: altered, but option {referring[0]!r} refers to the others"
        elif none_like:  # "None is correct" is one problem, not two
            yield f"{config}/{split} {record.id}: altered, but option {none_like[0]!r} already says there is no answer"
        if len({" ".join(c.split()) for c in original.choices}) < len(original.choices):
            yield f"{config}/{split} {record.id}: altered, but two options are the same text"


def _gold_tracked(build: Build):
    for config, split, record, original in _altered(build):
        nota_answer = record.choices[record.answer] == NOTA_TEXT
        if nota_answer != record.metadata["nota_is_answer"]:
            yield f"{config}/{split} {record.id}: nota_is_answer flag disagrees with the answer"
        elif not nota_answer and record.choices[record.answer] != original.gold:
            yield f"{config}/{split} {record.id}: answer text changed from {original.gold!r}"
        elif nota_answer and original.gold in record.choices:
            yield f"{config}/{split} {record.id}: NOTA is the answer but the gold text is still present"


def _unaltered_equal(build: Build):
    for config, split, record, original in _pairs(build):
        if record.metadata["removed_index"] is None and (
            (record.question, record.choices, record.answer) != (original.question, original.choices, original.answer)
        ):
            yield f"{config}/{split} {record.id}: copied item differs from the original"


def _sba_copied(build: Build):
    for config, split, record, _ in _pairs(build):
        if record.metadata["is_sba"] and record.metadata["removed_index"] is not None:
            yield f"{config}/{split} {record.id}: flagged SBA but altered"


CHECKS = [
    Check("one_nota_same_length", "every altered item has as many choices as the original, and its only option that "
          "refers to the others is the added NOTA (the validator's word-level detector, not the builder's)", _altered_shape),
    Check("no_reference_altered", "no altered item had an option referring to the others, an option that already "
          "says there is no answer (\"None, because ...\", \"I have no comment.\"), or two equal options (the same "
          "word-level reading)", _no_reference_altered),
    Check("gold_tracked", "choices[answer] is the original gold text, or NOTA when the gold was removed (then absent)", _gold_tracked),
    Check("unaltered_equal_original", "items copied unchanged (SBA or skipped) equal the original", _unaltered_equal),
    Check("sba_copied_unchanged", "no item flagged SBA was altered", _sba_copied),
]


# ---- the paper's table, for `python -m builders evaluate` ----------------------------------------------


def evaluation_table(runs: Runs, manifest: Mapping[str, Any], options: argparse.Namespace) -> Statistics:
    originals, variants = by_role(manifest, "original"), by_role(manifest, "variant")
    rows = []
    for model, tasks in runs.items():
        original = fmean(tasks[t["task"]].accuracy for t in originals)
        scores = [tasks[t["task"]].accuracy for t in variants]
        mean, std = mean_std(scores)
        rows.append((model, original, *scores, mean, std, original - mean))
    columns = ("model", "original", *[f"variant {t.get('variant', i)}" for i, t in enumerate(variants)],
               "variants mean", "variants std", "drop")
    return Statistics([Table("WiCkeD accuracy", columns, rows, percent=tuple(c for c in columns if c != "model"),
                             note="Accuracy on the original benchmark and on each WiCkeD variant; the drop is the "
                                  "original's accuracy minus the variants' mean.")])


BUILDER = Builder(NAME, __doc__.split("\n\n")[0], [BENCHMARKS[name] for name in BENCHMARK_NAMES], add_arguments,
                  build, check_arguments, llm_models=lambda args: [args.sba_judge] if args.sba_judge else [],
                  models=models_to_load,
                  evaluation_table=evaluation_table)


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(BUILDER, argv)


def build_dataset(data, **options) -> api.BuildResult:
    """Build WiCkeD from rows in memory (see :mod:`builders.core.api`)."""
    return api.build_dataset(BUILDER, data, **options)


if __name__ == "__main__":
    raise SystemExit(main())
