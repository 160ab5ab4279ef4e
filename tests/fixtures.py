"""Small source benchmarks in the exact column layout of their Hub datasets, written by the tests."""

from __future__ import annotations

import base64
import csv
import html
import json
import re
import urllib.parse
from pathlib import Path
from typing import Any, Iterable

MMLU_TEST = [
    {"question": "What is 2 + 3?", "subject": "elementary_mathematics", "choices": ["4", "5", "6", "7"], "answer": 1},
    {"question": "Which gas do plants absorb?", "subject": "high_school_biology",
     "choices": ["Oxygen", "Nitrogen", "Carbon dioxide", "Helium"], "answer": 2},
    {"question": "Which is a mammal?", "subject": "high_school_biology", "choices": ["Shark", "Dolphin", "Trout", "Eel"], "answer": 1},
    {"question": "Capital of Italy?", "subject": "global_facts", "choices": ["Rome", "Milan", "Turin", "Naples"], "answer": 0},
    {"question": "Which are primes?", "subject": "elementary_mathematics",
     "choices": ["2", "3", "5", "All of the above"], "answer": 3},
    {"question": "Which is a noble gas?", "subject": "high_school_chemistry",
     "choices": ["Neon", "Iron", "Carbon", "None of the above"], "answer": 0},
    {"question": "Which of these are fruits?", "subject": "nutrition",
     "choices": ["Apple", "Pear", "Both A and B", "Carrot"], "answer": 2},
    {"question": "What is 10 / 2?", "subject": "elementary_mathematics", "choices": ["2", "5", "10", "20"], "answer": 1},
]
MMLU_DEV = [
    {"question": "What is 1 + 1?", "subject": "elementary_mathematics", "choices": ["1", "2", "3", "4"], "answer": 1},
    {"question": "Water boils at sea level at", "subject": "high_school_chemistry",
     "choices": ["50 C", "90 C", "100 C", "120 C"], "answer": 2},
    {"question": "Largest planet?", "subject": "astronomy", "choices": ["Mars", "Jupiter", "Venus", "Earth"], "answer": 1},
]

MMLU_PRO_TEST = [
    {"question_id": 70, "question": "Which is largest?", "options": ["1", "N/A", "10", "100", "N/A"],
     "answer": "D", "answer_index": 3, "cot_content": "", "category": "math", "src": "ori_mmlu-x"},
    {"question_id": 71, "question": "Pick the color.", "options": ["Red", "Dog", "Cat", "Cow", "Hen", "Pig"],
     "answer": "A", "answer_index": 0, "cot_content": "", "category": "other", "src": "stemez-x"},
    {"question_id": 72, "question": "Which is even?", "options": ["N/A", "3", "5", "8"],
     "answer": "D", "answer_index": 3, "cot_content": "", "category": "math", "src": "theoremqa"},
]

REDUX = {
    "anatomy": [
        {"question": "Which organ pumps blood?", "choices": ["Lung", "Heart", "Liver", "Kidney"], "answer": 1,
         "error_type": "ok", "source": None, "correct_answer": None, "potential_reason": None},
        {"question": "How many bones in the adult body?", "choices": ["106", "206", "306", "406"], "answer": 0,
         "error_type": "wrong_groundtruth", "source": None, "correct_answer": "1", "potential_reason": "key"},
    ],
    "virology": [
        {"question": "Viruses are", "choices": ["cells", "acellular", "bacteria", "fungi"], "answer": 1,
         "error_type": "ok", "source": None, "correct_answer": None, "potential_reason": None},
    ],
}

COMMONSENSE_QA = {
    "train": [
        {"id": "cqa-1", "question": "Where do you keep milk?", "question_concept": "milk",
         "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["fridge", "oven", "garden", "roof", "car"]},
         "answerKey": "A"},
        {"id": "cqa-2", "question": "What do you use to cut paper?", "question_concept": "paper",
         "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["spoon", "scissors", "cup", "pillow", "towel"]},
         "answerKey": "B"},
    ],
    "validation": [
        {"id": "cqa-3", "question": "What falls from clouds?", "question_concept": "clouds",
         "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["rain", "stones", "books", "shoes", "chairs"]},
         "answerKey": "A"},
    ],
}

TRUTHFUL_QA = [
    {"question": f"Question {i}?", "mc1_targets": {"choices": [f"true {i}", f"false {i}a", f"false {i}b", f"false {i}c"],
                                                   "labels": [1, 0, 0, 0]},
     "mc2_targets": {"choices": [f"true {i}", f"false {i}a"], "labels": [1, 0]}}
    for i in range(6)
]

ARC = {
    "test": [
        {"id": "Mercury_1", "question": "Which is a conductor?",
         "choices": {"text": ["wood", "copper", "rubber", "glass"], "label": ["1", "2", "3", "4"]}, "answerKey": "2"},
        {"id": "Mercury_2", "question": "What makes shadows?",
         "choices": {"text": ["light blocked", "sound", "heat"], "label": ["A", "B", "C"]}, "answerKey": "A"},
        {"id": "Mercury_3", "question": "Which is a gas at room temperature?",
         "choices": {"text": ["iron", "oxygen", "salt", "sand", "ice"], "label": ["A", "B", "C", "D", "E"]},
         "answerKey": "B"},
        {"id": "Mercury_4", "question": "Which planet is closest to the Sun?",
         "choices": {"text": ["Earth", "Mars", "Mercury", "Venus"], "label": ["1", "2", "3", "4"]}, "answerKey": "3"},
    ],
    "train": [
        {"id": "Mercury_5", "question": "Plants make food by",
         "choices": {"text": ["photosynthesis", "digestion", "respiration", "erosion"], "label": ["A", "B", "C", "D"]},
         "answerKey": "A"},
    ],
}


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return path


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in row.items()})
    return path


def write_benchmark(name: str, root: Path) -> Path:
    """Write the fixture of ``name`` under ``root/name`` and return that folder."""
    folder = root / name
    if name == "mmlu":
        write_jsonl(folder / "test.jsonl", MMLU_TEST)
        write_jsonl(folder / "dev.jsonl", MMLU_DEV)
    elif name == "mmlu_pro":
        write_parquet(folder / "test.parquet", MMLU_PRO_TEST)
    elif name == "mmlu_redux":
        for subject, rows in REDUX.items():
            write_jsonl(folder / subject / "test.jsonl", rows)
    elif name == "commonsense_qa":
        for split, rows in COMMONSENSE_QA.items():
            write_jsonl(folder / f"{split}.jsonl", rows)
    elif name == "truthful_qa":
        write_jsonl(folder / "validation.jsonl", TRUTHFUL_QA)
    elif name == "arc_challenge":
        write_jsonl(folder / "test.jsonl", ARC["test"])
        write_csv(folder / "train.csv", ARC["train"])
    else:
        raise ValueError(name)
    return folder


FIXTURE_SIZES = {
    "mmlu": {"test": 8, "dev": 3},
    "mmlu_pro": {"test": 3},
    "mmlu_redux": {"test": 3},
    "commonsense_qa": {"train": 2, "validation": 1},
    "truthful_qa": {"validation": 6},
    "arc_challenge": {"test": 4, "train": 1},
}


def read_lm_eval_task(path: Path, function_prefix: str = "") -> dict[str, Any]:
    """A task's YAML file as lm-eval reads it: the template it ``include:``s, then its own keys (which win, key by
    key); a ``!function`` reference is its text after ``function_prefix``."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: function_prefix + loader.construct_scalar(node))
    own = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=Loader)
    include = own.pop("include", None)
    return {**(read_lm_eval_task(Path(path).parent / include, function_prefix) if include else {}), **own}


def outcome_rows(card: str) -> list[tuple[str, str, str, str, int]]:
    """The card's one outcome table (:func:`builders.core.items.outcomes.outcome_table`), read back from its Markdown:
    (configs, split, outcome, reason or "–", items) per row."""
    section = card.split("### Items altered, copied unchanged and excluded", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")][1:]
    return [(c.strip(), s.strip(), o.strip(), r.strip(), int(n.strip().replace(",", ""))) for c, s, o, r, n in rows]


def outcome_rows_per_config(card: str, configs: list[str]) -> list[tuple[str, str, str, str, int]]:
    """The card's outcome table with each group of configs (``all N configs``, ``a, b``) made one row per config."""
    found = []
    for label, *rest in outcome_rows(card):
        names = configs if label == f"all {len(configs)} configs" else label.split(", ")
        found += [(name, *rest) for name in names]
    return found


def with_default_ctrl_c() -> None:
    """``preexec_fn`` of a child a test sends Ctrl-C (SIGINT) to: a suite started in the background of a
    non-interactive shell (``pytest &`` in a script, ``nohup``) ignores SIGINT, every child inherits that, and
    Python then never raises KeyboardInterrupt; a terminal's Ctrl-C meets the default disposition."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


# ---- secrets, as servers echo them -----------------------------------------------------------------------------


def spellings(secret: str) -> list[str]:
    """``secret`` as servers echo it: as is, in another case, percent-encoded (wholly, as a path, as a form,
    twice), JSON-escaped, HTML-escaped, and base64 (standard and URL-safe, padded or not, alone, as a header's
    value, and inside a longer text at each of the three byte offsets)."""
    b64 = lambda text: base64.b64encode(text.encode()).decode()  # noqa: E731
    urlsafe = lambda text: base64.urlsafe_b64encode(text.encode()).decode()  # noqa: E731
    quoted = urllib.parse.quote(secret, safe="")
    return [secret, secret.upper(), secret.swapcase(), quoted, quoted.lower(), urllib.parse.quote(secret),
            urllib.parse.quote_plus(secret), urllib.parse.quote(quoted, safe=""), json.dumps(secret)[1:-1],
            json.dumps(secret).replace("/", "\\/")[1:-1], "".join(f"\\u{ord(c):04x}" for c in secret),
            html.escape(secret), "".join(f"&#{ord(c)};" for c in secret), "".join(f"&#x{ord(c):X};" for c in secret),
            b64(secret), b64(secret).rstrip("="), urlsafe(secret), urlsafe(secret).rstrip("="),
            b64(f"Bearer {secret}"), b64(f"x{secret}"), urlsafe(f"xy{secret}\n"), urllib.parse.quote(b64(secret))]


def reveals(text: str, secret: str) -> bool:
    """Whether ``secret`` can be read out of ``text`` by undoing what a server may have done to it (percent- and
    HTML-decoding, JSON unescaping, base64 at any alignment, any letter case): a check that knows nothing of how
    mcqforge hides it."""
    readings = {text}
    for _ in range(2):
        readings |= {urllib.parse.unquote(t) for t in readings} | {urllib.parse.unquote_plus(t) for t in readings}
    readings |= {html.unescape(t) for t in readings}
    readings |= {re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), t).replace("\\", "") for t in readings}
    for reading in list(readings):
        for token in re.findall(r"[A-Za-z0-9+/_-]{8,}", reading):
            for start in range(4):  # at each alignment, cut to whole groups or padded to them
                for piece in (token[start:][: len(token[start:]) // 4 * 4], token[start:] + "=" * (-len(token[start:]) % 4)):
                    for altchars in (b"+/", b"-_"):
                        try:
                            readings.add(base64.b64decode(piece, altchars=altchars).decode("latin-1"))
                        except ValueError:
                            pass
    return any(secret.lower() in reading.lower() for reading in readings)


def mock_model():
    """inspect_ai's ``mockllm/model`` answering "ANSWER: A" to every question, with a token usage (without one,
    inspect counts the prompt's tokens with a vocabulary it downloads)."""
    import itertools

    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    answer = ModelOutput.from_content("mockllm/model", "ANSWER: A")
    answer.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return get_model("mockllm/model", custom_outputs=itertools.repeat(answer))
