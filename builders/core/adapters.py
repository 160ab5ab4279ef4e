"""One small adapter per source benchmark: a Hub-schema row becomes an :class:`MCQRecord`.

Like inspect_ai's ``record_to_sample``: each adapter reads exactly the columns of its Hub dataset
(a local copy in the same columns reads the same way), checks their types, and raises
:class:`MalformedRow` naming the row and field when they are wrong.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from datasets import Value
from tqdm.auto import tqdm

from .errors import MalformedRow, SourceError
from .record import MCQRecord, list_of, normalize_text
from .rng import item_rng
from .sources import RawSource, SourceSpec, parse_spec, read_hub, read_local
from .steps import Exclude, ExclusionLog

logger = logging.getLogger(__name__)

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
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class RowContext:
    benchmark: str
    dataset: str
    config: str
    split: str
    index: int
    seed: int
    options: Mapping[str, Any]
    subconfig: str = ""  # for sources split into configs (mmlu_redux subjects): part of the id

    @property
    def default_id(self) -> str:
        parts = [self.benchmark, self.subconfig, self.split, str(self.index)]
        return "/".join(p for p in parts if p)

    def record(self, row_id: str, question: str, choices: tuple[str, ...], answer: int, **extra: Any) -> MCQRecord:
        return MCQRecord(
            id=row_id, question=question, choices=choices, answer=answer, source=self.dataset,
            source_config=self.config, source_split=self.split, source_index=self.index, **extra,
        )


@dataclass(frozen=True)
class Benchmark:
    """A source benchmark: where it lives on the Hub, and how its rows become records."""

    name: str
    hub_id: str
    config: str | None
    splits: tuple[str, ...]
    to_record: Callable[[dict[str, Any], RowContext], MCQRecord]
    license: str
    citation: str
    pretty_name: str
    metadata_features: Mapping[str, Any] = field(default_factory=dict)
    subconfigs: tuple[str, ...] = ()
    fewshot_split: str | None = None


# ---- field readers: every type error names the row and the field ------------------------------


def _get(row: Mapping[str, Any], name: str, row_id: str) -> Any:
    if name not in row or row[name] is None:
        raise MalformedRow(row_id, name, "missing")
    return row[name]


def _text(row: Mapping[str, Any], name: str, row_id: str) -> str:
    value = _get(row, name, row_id)
    if not isinstance(value, str):
        raise MalformedRow(row_id, name, f"expected a string, got {type(value).__name__}")
    return value


def _string_list(value: Any, name: str, row_id: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)):
        raise MalformedRow(row_id, name, f"expected a list of strings, got {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise MalformedRow(row_id, f"{name}[{i}]", f"expected a string, got {type(item).__name__}")
    return tuple(value)


def _index(value: Any, size: int, name: str, row_id: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedRow(row_id, name, f"expected an integer index, got {type(value).__name__} {value!r}")
    if not 0 <= value < size:
        raise MalformedRow(row_id, name, f"index {value} out of range for {size} choices")
    return value


def _label_index(label: Any, labels: tuple[str, ...], name: str, row_id: str) -> int:
    if not isinstance(label, str) or label not in labels:
        raise MalformedRow(row_id, name, f"{label!r} is not one of the labels {list(labels)}")
    return labels.index(label)


# ---- adapters ------------------------------------------------------------------------------------


def mmlu_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    row_id = ctx.default_id
    choices = _string_list(_get(row, "choices", row_id), "choices", row_id)
    answer = _index(_get(row, "answer", row_id), len(choices), "answer", row_id)
    subject = row.get("subject") or ctx.subconfig or None
    return ctx.record(row_id, _text(row, "question", row_id), choices, answer, subject=subject)


def mmlu_pro_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    question_id = _get(row, "question_id", ctx.default_id)
    row_id = f"{ctx.benchmark}/{ctx.split}/{question_id}"
    options = _string_list(_get(row, "options", row_id), "options", row_id)
    gold = _index(_get(row, "answer_index", row_id), len(options), "answer_index", row_id)
    letter = row.get("answer")
    if letter is not None and letter != LETTERS[gold]:
        raise MalformedRow(row_id, "answer", f"letter {letter!r} disagrees with answer_index {gold}")
    if options[gold] == "N/A":
        raise MalformedRow(row_id, "answer_index", "the gold option is 'N/A'")
    # MMLU-Pro pads some questions with "N/A" options: drop them and shift the gold index past them.
    kept = [i for i, option in enumerate(options) if option != "N/A"]
    return ctx.record(
        row_id, _text(row, "question", row_id), tuple(options[i] for i in kept), kept.index(gold),
        category=row.get("category"), metadata={"question_id": int(question_id), "src": row.get("src")},
    )


def mmlu_redux_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    record = mmlu_record(row, ctx)
    error_type = row.get("error_type")
    if not ctx.options.get("redux_keep_all") and error_type != "ok":
        raise Exclude("redux_error_type", "error_type", str(error_type))
    return record.with_metadata(error_type=error_type)


def _labelled_choices(row: dict[str, Any], row_id: str) -> tuple[list[str], list[str], int]:
    """(labels, texts, gold index) of a `choices: {label, text}` + `answerKey` row (CommonsenseQA, ARC):
    the gold is found among the labels, never among the texts."""
    choices = _get(row, "choices", row_id)
    if not isinstance(choices, Mapping):
        raise MalformedRow(row_id, "choices", f"expected {{label, text}}, got {type(choices).__name__}")
    labels = _string_list(choices.get("label"), "choices.label", row_id)
    texts = _string_list(choices.get("text"), "choices.text", row_id)
    if len(labels) != len(texts):
        raise MalformedRow(row_id, "choices", f"{len(labels)} labels for {len(texts)} texts")
    return labels, texts, _label_index(_get(row, "answerKey", row_id), labels, "answerKey", row_id)


def commonsense_qa_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    row_id = f"{ctx.benchmark}/{_text(row, 'id', ctx.default_id)}"
    _, texts, answer = _labelled_choices(row, row_id)
    return ctx.record(
        row_id, _text(row, "question", row_id), texts, answer,
        metadata={"question_concept": row.get("question_concept")},
    )


def arc_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    """ARC labels are "A"-"E" or "1"-"5" (kept in the metadata)."""
    row_id = f"{ctx.benchmark}/{_text(row, 'id', ctx.default_id)}"
    labels, texts, answer = _labelled_choices(row, row_id)
    return ctx.record(row_id, _text(row, "question", row_id), texts, answer, metadata={"labels": list(labels)})


def truthful_qa_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    """mc1 always lists the gold first, so the options are shuffled by the per-item generator."""
    row_id = ctx.default_id
    targets = _get(row, "mc1_targets", row_id)
    if not isinstance(targets, Mapping):
        raise MalformedRow(row_id, "mc1_targets", f"expected {{choices, labels}}, got {type(targets).__name__}")
    texts = _string_list(targets.get("choices"), "mc1_targets.choices", row_id)
    labels = targets.get("labels")
    if not isinstance(labels, list) or len(labels) != len(texts) or sorted(labels) != [0] * (len(texts) - 1) + [1]:
        raise MalformedRow(row_id, "mc1_targets.labels", "expected exactly one 1 and one label per choice")
    gold = labels.index(1)
    permutation = [int(i) for i in item_rng(ctx.seed, row_id, "truthful_qa_shuffle").permutation(len(texts))]
    return ctx.record(
        row_id, _text(row, "question", row_id), tuple(texts[i] for i in permutation), permutation.index(gold),
        metadata={"source_permutation": permutation},
    )


def unifiedqa_record(row: dict[str, Any], ctx: RowContext) -> MCQRecord:
    """The UnifiedQA multiple-choice layout: ``question``, ``choices`` and a letter ``answer``."""
    row_id = ctx.default_id
    choices = _string_list(_get(row, "choices", row_id), "choices", row_id)
    answer = _label_index(_get(row, "answer", row_id), tuple(LETTERS[: len(choices)]), "answer", row_id)
    return ctx.record(row_id, _text(row, "question", row_id), choices, answer, category=ctx.subconfig or None)


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
        Benchmark("mmlu", "cais/mmlu", "all", ("test", "validation", "dev"), mmlu_record, "mit",
                  BIBTEX["mmlu"], "MMLU", fewshot_split="dev"),
        Benchmark("mmlu_pro", "TIGER-Lab/MMLU-Pro", None, ("test", "validation"), mmlu_pro_record, "mit",
                  BIBTEX["mmlu_pro"], "MMLU-Pro", {"question_id": Value("int64"), "src": Value("string")},
                  fewshot_split="validation"),
        Benchmark("mmlu_redux", "edinburgh-dawg/mmlu-redux-2.0", None, ("test",), mmlu_redux_record,
                  "cc-by-4.0", BIBTEX["mmlu_redux"], "MMLU-Redux 2.0", {"error_type": Value("string")},
                  subconfigs=tuple(MMLU_SUBJECTS)),
        Benchmark("commonsense_qa", "tau/commonsense_qa", None, ("train", "validation"), commonsense_qa_record,
                  "mit", BIBTEX["commonsense_qa"], "CommonsenseQA", {"question_concept": Value("string")},
                  fewshot_split="train"),
        Benchmark("truthful_qa", "truthfulqa/truthful_qa", "multiple_choice", ("validation",),
                  truthful_qa_record, "apache-2.0", BIBTEX["truthful_qa"], "TruthfulQA (MC1)",
                  {"source_permutation": list_of(Value("int32"))}),
        Benchmark("arc_challenge", "allenai/ai2_arc", "ARC-Challenge", ("train", "validation", "test"),
                  arc_record, "cc-by-sa-4.0", BIBTEX["arc_challenge"], "ARC-Challenge",
                  {"labels": list_of(Value("string"))}, fewshot_split="train"),
        Benchmark("unifiedqa", "allenai/unifiedqa", None, ("train", "validation", "test"), unifiedqa_record,
                  "other", BIBTEX["unifiedqa"], "UnifiedQA multiple-choice sources",
                  subconfigs=("arc", "cqa", "obqa", "piqa", "qasc", "siqa")),
    ]
}


# ---- loading ------------------------------------------------------------------------------------


@dataclass
class LoadedSource:
    """A benchmark's records per split, with the accounting the card and validator need."""

    benchmark: Benchmark
    spec: SourceSpec
    dataset: str
    revision: str
    splits: dict[str, list[MCQRecord]]
    rows_in: dict[str, int]
    exclusions: ExclusionLog

    @property
    def source_description(self) -> str:
        return self.spec.describe()


def load_benchmark(
    name: str,
    source: str | None = None,
    *,
    seed: int = 0,
    strict: bool = False,
    options: Mapping[str, Any] | None = None,
) -> LoadedSource:
    """Read a benchmark from ``source`` (default: its Hub id) into records.

    Malformed rows stop the load when ``strict``, and are otherwise excluded with their reason, as are
    rows with an empty or duplicated choice (which no multiple-choice item may have).
    """
    if name not in BENCHMARKS:
        raise SourceError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)}")
    benchmark = BENCHMARKS[name]
    spec = parse_spec(source or _default_spec(benchmark), name)
    if spec.is_local:
        raw = read_local(spec.path, benchmark.splits, benchmark.subconfigs)
    else:
        raw = read_hub(spec, benchmark.config, benchmark.splits, benchmark.subconfigs)
    loaded = LoadedSource(benchmark, spec, benchmark.hub_id if spec.is_local else raw.dataset, raw.revision,
                          {}, {}, ExclusionLog())
    _convert_rows(loaded, raw, seed, strict, options or {})
    logger.info("loaded %s from %s: %s", name, spec.describe(),
                {s: len(r) for s, r in loaded.splits.items()})
    return loaded


def _default_spec(benchmark: Benchmark) -> str:
    return benchmark.hub_id + (f":{benchmark.config}" if benchmark.config else "")


def _convert_rows(loaded: LoadedSource, raw: RawSource, seed: int, strict: bool, options: Mapping[str, Any]) -> None:
    benchmark, seen_ids = loaded.benchmark, set()
    ordered = sorted(raw.rows.items(), key=lambda kv: (benchmark.splits.index(kv[0][1]), kv[0][0]))
    for (subconfig, split), rows in ordered:
        records = loaded.splits.setdefault(split, [])
        loaded.rows_in[split] = loaded.rows_in.get(split, 0) + len(rows)
        config = subconfig or benchmark.config or "default"
        for index, row in enumerate(tqdm(rows, desc=f"read {benchmark.name}/{subconfig or split}", leave=False)):
            ctx = RowContext(benchmark.name, loaded.dataset, config, split, index, seed, options, subconfig)
            record = None
            try:
                record = benchmark.to_record(row, ctx)
                _check_content(record, seen_ids)
            except MalformedRow as error:
                if strict:
                    raise
                loaded.exclusions.add(split, error.row_id, index, "source",
                                      Exclude("malformed_row", error.field, error.problem))
                continue
            except Exclude as error:
                loaded.exclusions.add(split, record.id if record else ctx.default_id, index, "source", error)
                continue
            seen_ids.add(record.id)
            records.append(record)


def _check_content(record: MCQRecord, seen_ids: set[str]) -> None:
    """Content rules every multiple-choice item must meet, whatever its source."""
    if record.id in seen_ids:
        raise MalformedRow(record.id, "id", "duplicate id")
    if len(record.choices) < 2:
        raise Exclude("fewer_than_two_choices", "choices", str(len(record.choices)))
    empty = [i for i, c in enumerate(record.choices) if not c.strip()]
    if empty:
        raise Exclude("empty_choice", f"choices[{empty[0]}]")
    normalized = [normalize_text(c) for c in record.choices]
    if len(set(normalized)) < len(normalized):
        duplicate = next(i for i, n in enumerate(normalized) if normalized.index(n) != i)
        raise Exclude("duplicate_choices", f"choices[{duplicate}]", record.choices[duplicate])
