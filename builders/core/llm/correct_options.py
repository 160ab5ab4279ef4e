"""Asking a judge which options of a question answer it correctly: one versioned prompt, a strict reply (a JSON list
of option letters) and its reading, shared by every builder that has a second model check its items (the contrast
sets' ``--validate-with``, MMLU-Pro+'s truth check of a generated option).

The judge sees the question and its options, lettered A, B, ..., and replies with nothing but a JSON list of the
letters of every option that is a correct answer: ``["B"]``, ``["A", "C"]``, or ``[]`` when none is. A reply in a
```json fence is read too; anything else (prose, a letter that names no option, a letter twice) is unparseable, and
the client asks once more. A request that still fails, or whose reply still does not parse, is no judgement
(:attr:`Judgement.correct` None): each caller decides, and says, what becomes of its item then.

Every request goes through the one LLM client (:class:`builders.core.llm.client.LLMClient`): concurrency, retries,
and the reply cache, whose key covers the model, :data:`TEMPLATE_VERSION` and the prompt, so that a rebuild pays for
nothing twice and a changed prompt is asked afresh.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

from builders.core.items.record import LETTERS
from builders.core.llm.requests import ChatRequest

TEMPLATE_VERSION = "correct-options-v1"
MAX_TOKENS = 100  # a list of a few letters; room for a model that adds a fence
SYSTEM = "You are a careful examiner who checks multiple-choice questions for options that are wrongly keyed."
PROMPT = """Read the question and each of its options. Decide, for each option on its own, whether it is a correct \
answer to the question: as true and as complete an answer as a well-informed expert would accept. Several options, or \
none, may be correct.

Question:
{question}

Options:
{options}

Reply with a JSON list of the letters of every correct option and nothing else, for example ["B"] or ["A", "C"]; \
reply [] if no option is correct."""

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


@dataclass(frozen=True)
class Judgement:
    """What the judge said of one question: the indices of the options it calls correct, or None (no usable reply:
    the request failed, or its reply did not parse twice), with the error and the raw reply."""

    correct: frozenset[int] | None
    error: str | None = None
    reply: str | None = None

    @property
    def failed(self) -> bool:
        return self.correct is None

    def letters(self) -> str:
        """The correct options as letters, "A+B"; "none" for none; "failed" for no judgement."""
        if self.correct is None:
            return "failed"
        return "+".join(LETTERS[i] for i in sorted(self.correct)) or "none"


def render_prompt(question: str, choices: Sequence[str]) -> str:
    options = "\n".join(f"{LETTERS[i]}. {choice}" for i, choice in enumerate(choices))
    return PROMPT.replace("{question}", question).replace("{options}", options)


def judgement_request(question: str, choices: Sequence[str]) -> ChatRequest:
    if not 1 <= len(choices) <= len(LETTERS):
        raise ValueError(f"a judged question needs 1 to {len(LETTERS)} options, got {len(choices)}")
    return ChatRequest.from_prompt(render_prompt(question, choices), system=SYSTEM, temperature=0.0,
                                   max_tokens=MAX_TOKENS, template_version=TEMPLATE_VERSION)


def parse_letters(reply: str, count: int) -> frozenset[int]:
    """The options a reply calls correct, for a question of ``count`` options. ValueError (the client then asks once
    more) for anything but a JSON list of distinct option letters."""
    body = reply.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value: Any = json.loads(body)
    except json.JSONDecodeError as error:
        raise ValueError(f"not a JSON list of letters ({error.msg})") from None
    if not isinstance(value, list):
        raise ValueError(f"expected a JSON list of option letters, got {type(value).__name__}")
    indices = []
    for item in value:
        letter = item.strip().upper() if isinstance(item, str) else None
        if letter is None or len(letter) != 1 or letter not in LETTERS[:count]:
            raise ValueError(f"{item!r} is not the letter of one of the {count} options (A-{LETTERS[count - 1]})")
        indices.append(LETTERS.index(letter))
    if len(set(indices)) != len(indices):
        raise ValueError("a letter is given twice")
    return frozenset(indices)


class _Parser:
    """``parse_letters`` for one option count (a picklable callable, not a closure)."""

    def __init__(self, count: int) -> None:
        self.count = count

    def __call__(self, reply: str) -> frozenset[int]:
        return parse_letters(reply, self.count)


def judge_correct_options(client: Any, questions: Sequence[tuple[str, Sequence[str]]],
                          desc: str = "judge") -> list[Judgement]:
    """Ask ``client`` (an :class:`~builders.core.llm.client.LLMClient`) which options of each (question, choices)
    answer it correctly; one :class:`Judgement` per question, in order. The requests go out in one batch per option
    count (the count decides which letters a reply may name)."""
    by_count: dict[int, list[int]] = defaultdict(list)
    for index, (_, choices) in enumerate(questions):
        by_count[len(choices)].append(index)
    judgements: list[Judgement | None] = [None] * len(questions)
    for count, indices in sorted(by_count.items()):
        requests = [judgement_request(*questions[i]) for i in indices]
        results = client.complete_many(requests, parse=_Parser(count), parse_retries=1, desc=desc)
        for i, result in zip(indices, results, strict=True):
            if result.ok and result.parsed is not None:
                judgements[i] = Judgement(frozenset(result.parsed), None, result.text)
            else:
                error = f"{result.error}: {result.error_detail}" if result.error_detail else str(result.error)
                judgements[i] = Judgement(None, error[:300], result.text)
    return [j for j in judgements if j is not None]
