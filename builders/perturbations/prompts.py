"""MMLU-style prompts for the perturbation datasets, shared by the builder and the lm-eval task folders.

The builder renders the ``prompt`` column (symbol scoring) with these functions, and copies this file
verbatim into every config folder of a release's lm-eval tasks as ``lm_eval/<config>/utils.py``, followed by
that config's ``TASK`` constants; the hybrid and cloze tasks render their prompts with it. One renderer, so the
dataset's ``prompt`` and what lm-eval scores cannot drift apart. It therefore imports nothing from mcqforge:
only the standard library, and, when a task needs its demonstrations, the release loader of ``lm_eval/utils.py``
(the folder above; :mod:`builders.core.tasks.lm_eval_utils`), which needs ``datasets``.

A prompt is the instruction, the demonstrations, then the question (MMLU's layout, as in lm-eval's
``mmlu`` task):

    The following are multiple choice questions (with answers) about anatomy.

    <demonstration question>
    A. <option>
    ...
    Answer: B

    <question>
    A. <option>
    ...
    Answer:

Scoring methods (Alzahrani et al., 2024, section 3.2): ``symbol`` shows the options and scores the
label after "Answer:"; ``hybrid`` shows the options and scores each option's text; ``cloze`` hides the
options and scores each option's text. Demonstrations are answered the way the method scores.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

METHODS = ("symbol", "hybrid", "cloze")
ANSWER_PREFIX = "Answer:"

# Replaced in each task folder's utils.py by the task's constants: dataset_name, repo, revision,
# fewshot_split, with_subject, answer_prefix, and the trivial demonstrations when the config uses them.
TASK: dict[str, Any] = {}


def subject_text(subject: str | None) -> str | None:
    return subject.replace("_", " ").strip() if subject else None


def instruction(subject: str | None, with_subject: bool = True) -> str:
    topic = subject_text(subject) if with_subject else None
    about = f" about {topic}" if topic else ""
    return f"The following are multiple choice questions (with answers){about}."


def question_block(item: Mapping[str, Any], method: str, answer_prefix: str, shown_answer: int | None) -> str:
    """One question; ``shown_answer`` (an option index) is written after the prefix for demonstrations."""
    lines = [item["question"].strip()]
    if method != "cloze":
        lines += [f"{label}. {choice}" for label, choice in zip(item["labels"], item["choices"], strict=True)]
    answer = answer_prefix
    if shown_answer is not None:
        shown = item["labels"][shown_answer] if method == "symbol" else item["choices"][shown_answer]
        answer += f" {shown}"
    lines.append(answer)
    return "\n".join(lines)


def join_prompt(instruction_text: str, demonstration_blocks: Sequence[str], item_block: str) -> str:
    return "\n\n".join([instruction_text, *demonstration_blocks, item_block])


def shown_answer(demonstration: Mapping[str, Any], item: Mapping[str, Any]) -> int:
    """The answer a demonstration shows: its gold, except the item's own demonstration (in-context
    knowledge configs), which shows ``metadata.context_answer`` (the gold, or a wrong option)."""
    if demonstration.get("id") == item.get("id"):
        return int(item["metadata"]["context_answer"])
    return int(demonstration["answer"])


def render(item: Mapping[str, Any], demonstrations: Sequence[Mapping[str, Any]], method: str,
           with_subject: bool = True, answer_prefix: str = ANSWER_PREFIX) -> str:
    """The full prompt for ``item`` (a dataset row) after ``demonstrations`` (rows, in order)."""
    if method not in METHODS:
        raise ValueError(f"unknown scoring method {method!r}; expected one of {METHODS}")
    blocks = [question_block(d, method, answer_prefix, shown_answer(d, item)) for d in demonstrations]
    return join_prompt(instruction(item.get("subject") or item.get("category"), with_subject), blocks,
                       question_block(item, method, answer_prefix, None))


# ---- lm-eval hooks (used through `doc_to_text: !function utils.hybrid_text` in a task folder) --------


def symbol_text(doc: Mapping[str, Any]) -> str:
    return _task_prompt(doc, "symbol")


def hybrid_text(doc: Mapping[str, Any]) -> str:
    return _task_prompt(doc, "hybrid")


def cloze_text(doc: Mapping[str, Any]) -> str:
    return _task_prompt(doc, "cloze")


def _task_prompt(doc: Mapping[str, Any], method: str) -> str:
    demonstrations = [doc if demo_id == doc["id"] else _demonstration(demo_id) for demo_id in doc["fewshot"]]
    return render(doc, demonstrations, method, TASK.get("with_subject", True), TASK.get("answer_prefix", ANSWER_PREFIX))


def _demonstration(demo_id: str) -> Mapping[str, Any]:
    documents = _fewshot_documents()
    if demo_id not in documents:
        raise KeyError(f"demonstration {demo_id!r} is neither in split {TASK.get('fewshot_split')!r} of "
                       f"config {TASK.get('dataset_name')!r} nor among the trivial demonstrations")
    return documents[demo_id]


@lru_cache(maxsize=1)
def _fewshot_documents() -> dict[str, Mapping[str, Any]]:
    """The task's few-shot split (same dataset, config and revision as the YAML), and trivial questions."""
    documents = {row["id"]: row for row in TASK.get("trivial", [])}
    if TASK.get("fewshot_split"):
        loaded = release_loader()(TASK["dataset_name"], TASK.get("repo"), TASK.get("revision"))
        split = loaded[TASK["fewshot_split"]]
        documents.update({row["id"]: row for row in split})
    return documents


def release_loader() -> Callable[..., Any]:
    """``load_release`` of the release's ``lm_eval/utils.py``, the folder above this file's in a release (this
    file is ``lm_eval/<config>/utils.py`` there). A task folder is no package: the module is loaded by its path."""
    path = Path(__file__).resolve().parent.parent / "utils.py"
    spec = importlib.util.spec_from_file_location("mcqforge_release_loader", path)
    if not path.is_file() or spec is None or spec.loader is None:
        raise FileNotFoundError(f"{path}: the release loader of this task folder is missing")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.load_release
