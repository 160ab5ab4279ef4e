"""The multiple-choice source benchmarks: one small adapter per source, a Hub-schema row -> :class:`MCQRecord`.

Like inspect_ai's ``record_to_sample``: each adapter reads exactly the columns of its Hub dataset
(a local copy in the same columns reads the same way) through :mod:`builders.core.sources.fields`, which checks their
types and raises :class:`MalformedRow` naming the row and field when they are wrong. Open-ended sources (GSM8K, MATH,
HumanEval, MBPP) have their adapters in the builders that read them; every source is read by
:func:`builders.core.sources.loading.load_source`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from builders.core.errors import MalformedRow
from builders.core.items.record import LETTERS, MCQRecord, Value, content_key, list_of
from builders.core.items.outcomes import Exclude
from builders.core.items.rng import item_rng
from builders.core.options.declare import option
from builders.core.sources import fields
from builders.core.sources.loading import Benchmark, RowContext

MMLU_SUBJECTS = (
    "abstract_algebra anatomy astronomy business_ethics clinical_knowledge college_biology college_chemistry "
    "college_computer_science college_mathematics college_medicine college_physics computer_security "
    "conceptual_physics econometrics electrical_engineering elementary_mathematics formal_logic global_facts "
    "high_school_biology high_school_chemistry high_school_computer_science high_school_european_history "
    "high_school_geography high_school_government_and_politics high_school_macroeconomics "
    "high_school_mathematics high_school_microeconomics high_school_physics high_school_psychology "
    "high_school_statistics high_school_us_history high_school_world_history human_aging human_sexuality "
    "international_law jurisprudence logical_fallacies machine_learning management marketing medical_genetics "
    "miscellaneous moral_disputes moral_scenarios nutrition philosophy prehistory professional_accounting "
    "professional_law professional_medicine professional_psychology public_relations security_studies "
    "sociology us_foreign_policy virology world_religions"
).split()


def _question(row: Mapping[str, Any], row_id: str) -> str:
    """The question: a blank one asks nothing, so the row is malformed (a contrast pair or a WiCkeD item
    built on it would be meaningless)."""
    return fields.text(row, "question", row_id, non_empty=True)


# ---- adapters ------------------------------------------------------------------------------------


def mmlu_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    row_id = ctx.default_id
    choices = fields.string_list(fields.required(row, "choices", row_id), "choices", row_id)
    answer = fields.index(fields.required(row, "answer", row_id), len(choices), "answer", row_id)
    subject = fields.optional_text(row, "subject", row_id) or ctx.subconfig or None
    return ctx.record(row_id, _question(row, row_id), choices, answer, subject=subject)


def mmlu_pro_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    question_id = fields.integer(row, "question_id", ctx.default_id)
    row_id = f"{ctx.benchmark}/{ctx.split}/{question_id}"
    options = fields.string_list(fields.required(row, "options", row_id), "options", row_id)
    gold = fields.index(fields.required(row, "answer_index", row_id), len(options), "answer_index", row_id)
    letter = row.get("answer")
    if letter is not None and letter != LETTERS[gold]:
        raise MalformedRow(row_id, "answer", f"letter {letter!r} disagrees with answer_index {gold}")
    if options[gold] == "N/A":
        raise MalformedRow(row_id, "answer_index", "the gold option is 'N/A'")
    # MMLU-Pro pads some questions with "N/A" options: drop them and shift the gold index past them.
    kept = [i for i, option in enumerate(options) if option != "N/A"]
    if len(kept) < 2:
        raise MalformedRow(row_id, "options", f"{len(kept)} option(s) besides 'N/A'; at least 2 are needed")
    return ctx.record(
        row_id, _question(row, row_id), tuple(options[i] for i in kept), kept.index(gold),
        category=fields.optional_text(row, "category", row_id),
        metadata={"question_id": question_id, "src": fields.optional_text(row, "src", row_id)},
    )


@dataclass(frozen=True, kw_only=True)
class ReduxOptions:
    """MMLU-Redux's own option; a builder that offers it extends this class in its options."""

    GROUP: ClassVar[str] = "MMLU-Redux"

    redux_keep_all: bool = option(False, help="mmlu_redux: keep every item, not only error_type == 'ok'")


def mmlu_redux_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    record = mmlu_record(row, ctx)
    error_type = row.get("error_type")
    options: ReduxOptions = ctx.options
    if not options.redux_keep_all and error_type != "ok":
        raise Exclude("redux_error_type", "error_type", str(error_type))
    return record.with_metadata(error_type=error_type)


def _labelled_choices(row: dict[str, Any], row_id: str) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """(labels, texts, gold index) of a `choices: {label, text}` + `answerKey` row (CommonsenseQA, ARC):
    the gold is found among the labels, never among the texts."""
    choices = fields.required(row, "choices", row_id)
    if not isinstance(choices, Mapping):
        raise MalformedRow(row_id, "choices", f"expected {{label, text}}, got {type(choices).__name__}")
    labels = fields.string_list(choices.get("label"), "choices.label", row_id)
    texts = fields.string_list(choices.get("text"), "choices.text", row_id)
    if len(labels) != len(texts):
        raise MalformedRow(row_id, "choices", f"{len(labels)} labels for {len(texts)} texts")
    return labels, texts, fields.label_index(fields.required(row, "answerKey", row_id), labels, "answerKey", row_id)


def commonsense_qa_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    row_id = f"{ctx.benchmark}/{fields.text(row, 'id', ctx.default_id)}"
    _, texts, answer = _labelled_choices(row, row_id)
    return ctx.record(
        row_id, _question(row, row_id), texts, answer,
        metadata={"question_concept": fields.optional_text(row, "question_concept", row_id)},
    )


def arc_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    """ARC labels are "A"-"E" or "1"-"5" (kept in the metadata)."""
    row_id = f"{ctx.benchmark}/{fields.text(row, 'id', ctx.default_id)}"
    labels, texts, answer = _labelled_choices(row, row_id)
    return ctx.record(row_id, _question(row, row_id), texts, answer, metadata={"labels": list(labels)})


def truthful_qa_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    """mc1 always lists the gold first, so the options are shuffled by the per-item generator."""
    row_id = ctx.default_id
    targets = fields.required(row, "mc1_targets", row_id)
    if not isinstance(targets, Mapping):
        raise MalformedRow(row_id, "mc1_targets", f"expected {{choices, labels}}, got {type(targets).__name__}")
    texts = fields.string_list(targets.get("choices"), "mc1_targets.choices", row_id)
    labels = targets.get("labels")
    # booleans are ints in Python (True == 1): a True/False list is a different layout, not mc1's 0/1 labels
    if not isinstance(labels, list) or len(labels) != len(texts) or any(type(label) is not int for label in labels) \
            or sorted(labels) != [0] * (len(texts) - 1) + [1]:
        raise MalformedRow(row_id, "mc1_targets.labels", "expected exactly one 1 and one label per choice, as integers")
    gold = labels.index(1)
    question = _question(row, row_id)
    rng = item_rng(ctx.seed, content_key(question, *texts), "truthful_qa_shuffle")
    permutation = [int(i) for i in rng.permutation(len(texts))]
    return ctx.record(
        row_id, question, tuple(texts[i] for i in permutation), permutation.index(gold),
        metadata={"source_permutation": permutation},
    )


def unifiedqa_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    """The UnifiedQA multiple-choice layout: ``question``, ``choices`` and a letter ``answer``."""
    row_id = ctx.default_id
    choices = fields.string_list(fields.required(row, "choices", row_id), "choices", row_id)
    answer = fields.label_index(fields.required(row, "answer", row_id), tuple(LETTERS[: len(choices)]), "answer", row_id)
    return ctx.record(row_id, _question(row, row_id), choices, answer, category=ctx.subconfig or None)


BIBTEX = {
    "mmlu": """@inproceedings{hendrycks2021measuring,
  title={Measuring Massive Multitask Language Understanding},
  author={Hendrycks, Dan and Burns, Collin and Basart, Steven and Zou, Andy and Mazeika, Mantas and Song, Dawn and Steinhardt, Jacob},
  booktitle={International Conference on Learning Representations},
  year={2021}
}""",
    "mmlu_pro": """@inproceedings{wang2024mmlupro,
  title={{MMLU-Pro}: A More Robust and Challenging Multi-Task Language Understanding Benchmark},
  author={Wang, Yubo and Ma, Xueguang and Zhang, Ge and others},
  booktitle={Advances in Neural Information Processing Systems},
  year={2024}
}""",
    "mmlu_redux": """@inproceedings{gema2025mmluredux,
  title={Are We Done with {MMLU}?},
  author={Gema, Aryo Pradipta and Leang, Joshua Ong Jun and Hong, Giwon and others},
  booktitle={Proceedings of NAACL},
  year={2025}
}""",
    "commonsense_qa": """@inproceedings{talmor2019commonsenseqa,
  title={{CommonsenseQA}: A Question Answering Challenge Targeting Commonsense Knowledge},
  author={Talmor, Alon and Herzig, Jonathan and Lourie, Nicholas and Berant, Jonathan},
  booktitle={Proceedings of NAACL},
  year={2019}
}""",
    "truthful_qa": """@inproceedings{lin2022truthfulqa,
  title={{TruthfulQA}: Measuring How Models Mimic Human Falsehoods},
  author={Lin, Stephanie and Hilton, Jacob and Evans, Owain},
  booktitle={Proceedings of ACL},
  year={2022}
}""",
    "arc_challenge": """@article{clark2018think,
  title={Think you have Solved Question Answering? Try {ARC}, the {AI2} Reasoning Challenge},
  author={Clark, Peter and Cowhey, Isaac and Etzioni, Oren and Khot, Tushar and Sabharwal, Ashish and Schoenick, Carissa and Tafjord, Oyvind},
  journal={arXiv:1803.05457},
  year={2018}
}""",
    "unifiedqa": """@inproceedings{khashabi2020unifiedqa,
  title={{UnifiedQA}: Crossing Format Boundaries With a Single {QA} System},
  author={Khashabi, Daniel and Min, Sewon and Khot, Tushar and Sabharwal, Ashish and Tafjord, Oyvind and Clark, Peter and Hajishirzi, Hannaneh},
  booktitle={Findings of EMNLP},
  year={2020}
}""",
}

BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in [
        Benchmark(name="mmlu", hub_id="cais/mmlu", config="all", splits=("test", "validation", "dev"),
                  to_item=mmlu_record, license="mit", citation=BIBTEX["mmlu"], pretty_name="MMLU",
                  fewshot_split="dev", subject_field="subject"),
        Benchmark(name="mmlu_pro", hub_id="TIGER-Lab/MMLU-Pro", config=None, splits=("test", "validation"),
                  to_item=mmlu_pro_record, license="mit", citation=BIBTEX["mmlu_pro"], pretty_name="MMLU-Pro",
                  metadata_features={"question_id": Value("int64"), "src": Value("string")},
                  fewshot_split="validation", subject_field="category"),
        Benchmark(name="mmlu_redux", hub_id="edinburgh-dawg/mmlu-redux-2.0", config=None, splits=("test",),
                  to_item=mmlu_redux_record, license="cc-by-4.0", citation=BIBTEX["mmlu_redux"],
                  pretty_name="MMLU-Redux 2.0", metadata_features={"error_type": Value("string")},
                  subconfigs=tuple(MMLU_SUBJECTS), options=ReduxOptions),
        Benchmark(name="commonsense_qa", hub_id="tau/commonsense_qa", config=None, splits=("train", "validation"),
                  to_item=commonsense_qa_record, license="mit", citation=BIBTEX["commonsense_qa"],
                  pretty_name="CommonsenseQA", metadata_features={"question_concept": Value("string")},
                  fewshot_split="train"),
        Benchmark(name="truthful_qa", hub_id="truthfulqa/truthful_qa", config="multiple_choice", splits=("validation",),
                  to_item=truthful_qa_record, license="apache-2.0", citation=BIBTEX["truthful_qa"],
                  pretty_name="TruthfulQA (MC1)", metadata_features={"source_permutation": list_of(Value("int32"))}),
        Benchmark(name="arc_challenge", hub_id="allenai/ai2_arc", config="ARC-Challenge",
                  splits=("train", "validation", "test"), to_item=arc_record, license="cc-by-sa-4.0",
                  citation=BIBTEX["arc_challenge"], pretty_name="ARC-Challenge",
                  metadata_features={"labels": list_of(Value("string"))}, fewshot_split="train"),
        Benchmark(name="unifiedqa", hub_id="allenai/unifiedqa", config=None, splits=("train", "validation", "test"),
                  to_item=unifiedqa_record, license="other", citation=BIBTEX["unifiedqa"],
                  pretty_name="UnifiedQA multiple-choice sources",
                  subconfigs=("arc", "cqa", "obqa", "piqa", "qasc", "siqa"),
                  # a union of datasets: each part keeps its own dataset's license
                  license_name="unifiedqa-source-licenses", license_link="https://github.com/allenai/unifiedqa"),
    ]
}
