"""Model consensus on a multiple-choice source's keys: ``--predictions`` of many models, and the keys they contradict.

WiCkeD, perturbations and MMLU-Pro+ read the models' answers to the source's questions (lm-eval sample logs of a task
on the benchmark; JSON lines ``{model, id | question_id | question, answer}``, the answer a letter, an index or an
option's text; MMLU-Pro's published ``{question_id, model, pred}``) with the one predictions reader
(:mod:`builders.core.sources.predictions`), and count, per item, the models that chose each option.

An item's key is ``suspect_key`` when, among at least :attr:`KeyRule.min_models` models with a valid answer, at least
:attr:`KeyRule.min_share` agree on one option that is not the key (nor its twin). The rule was set on MMLU-Pro's
test set with the answers of 29 published models: 90% agreement among 20 or more models is precise (17 of the 20
strongest such questions have a wrong key or two correct options), while 60 to 80% is mostly noise (1 wrong key in
10). A score from a label-error library (cleanlab's self-confidence) is the key's share of the votes, the same
number; its per-class thresholds treat option positions (A to J) as classes, which they are not.

A suspect is a correction ``by: consensus`` (excluded, reason ``suspect_key``), applied with every other correction
(:func:`builders.core.sources.corrections.apply_corrections`) to the items no person and no errata decided;
``--keep-suspect-keys`` keeps them unchanged. Either way they are listed with their votes, in the card and the
release's review queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Mapping, Sequence

from builders.core.errors import UserError
from builders.core.items.record import LETTERS, MCQRecord
from builders.core.items.tables import Table
from builders.core.items.twins import option_key, question_key
from builders.core.options.declare import option
from builders.core.sources.corrections import Correction
from builders.core.sources.loading import LoadedSource
from builders.core.sources.predictions import Prediction, Unmatched, match_predictions, read_predictions

REASON = "suspect_key"
BY = "consensus"
AMBIGUOUS = Unmatched("ambiguous_question")


@dataclass(frozen=True)
class KeyRule:
    """When the models' answers make an item's key suspect."""

    min_models: int = 20
    min_share: float = 0.9

    def describe(self) -> str:
        return (f"at least {self.min_share:.0%} of the models with a valid answer, and at least {self.min_models} "
                "models, choose one option that is not the key")


RULE = KeyRule()


@dataclass(frozen=True, kw_only=True)
class KeyConsensusOptions:
    """The models' answers to a multiple-choice source, and what becomes of the items whose key they contradict."""

    GROUP: ClassVar[str] = "model consensus on the keys"

    predictions: tuple[str, ...] = option((), action="extend", metavar="[MODEL=]PATH",
                                          help="many models' answers to the source's questions, to find suspect keys: "
                                               "lm-eval samples_<task>_*.jsonl logs, JSON lines {model, id | "
                                               "question_id | question, answer | pred} (a letter, an index or an "
                                               "option's text), MMLU-Pro's {question_id, model, pred}; a folder is "
                                               "read recursively")
    keep_suspect_keys: bool = option(False, help=f"keep the items whose key the models contradict ({RULE.describe().replace('%', '%%')}"
                                                 f"); they are excluded as {REASON} by default, and listed either way")

    def check(self) -> None:
        """Each predictions path is there, before the source is read (what is in them is read after it)."""
        for spec in self.predictions:
            model, equals, rest = spec.partition("=")
            if not Path(spec).expanduser().exists() and not (equals and model and Path(rest).expanduser().exists()):
                raise UserError(f"--predictions {spec}: no such file or folder")


@dataclass(frozen=True)
class Votes:
    """The models' answers to one item: models per option (``counts``, in the item's option order)."""

    item_id: str
    key: int
    counts: tuple[int, ...]
    twins_of_key: frozenset[int] = frozenset()  # options spelled as the key is: votes for them are votes for the key

    @property
    def valid(self) -> int:
        return sum(self.counts)

    def strongest_rival(self) -> tuple[int, int] | None:
        """(option, models) of the non-key option most models chose (the first on a tie), or None."""
        rivals = [(n, -i) for i, n in enumerate(self.counts) if i != self.key and i not in self.twins_of_key and n]
        if not rivals:
            return None
        n, i = max(rivals)
        return -i, n


@dataclass(frozen=True)
class Suspect:
    """An item whose key the models contradict: the option they agree on, and every vote."""

    item: MCQRecord
    votes: Votes
    option: int
    agreeing: int

    def evidence(self) -> dict[str, Any]:
        counts = self.votes.counts
        return {"rule": RULE.describe(), "models": self.votes.valid, "agreeing": self.agreeing,
                "key": self.item.answer, "models_agree_on": self.option,
                "votes": {LETTERS[i]: n for i, n in enumerate(counts) if n}}

    def detail(self) -> str:
        return (f"{self.agreeing} of {self.votes.valid} models choose {LETTERS[self.option]} "
                f"({self.item.choices[self.option]!r}), {self.votes.counts[self.item.answer]} the key "
                f"{LETTERS[self.item.answer]}")


@dataclass(frozen=True)
class KeyConsensus:
    """What a build took from the models' answers: the votes per item, the suspects, and whether they were kept."""

    rule: KeyRule
    votes: Mapping[str, Votes]
    suspects: tuple[Suspect, ...]
    kept: bool
    models: int
    items: int  # the source's items
    corrections: tuple[Correction, ...] = field(default=())

    def table(self) -> Table:
        status = "kept (--keep-suspect-keys)" if self.kept else f"excluded ({REASON})"
        share = len(self.suspects) / self.items if self.items else 0.0
        note = (f"Model consensus: {self.models} models answered {len(self.votes)} of the {self.items} items. A key "
                f"is suspect when {self.rule.describe()}. {len(self.suspects)} {_items(len(self.suspects))} ({share:.1%}) "
                f"{'is' if len(self.suspects) == 1 else 'are'} suspect; they "
                f"are {status} and queued for review (`review.jsonl`) with their votes.")
        rows = [(s.item.id, f"{LETTERS[s.item.answer]}. {s.item.gold}", f"{LETTERS[s.option]}. {s.item.choices[s.option]}",
                 s.agreeing, s.votes.counts[s.item.answer], s.votes.valid, status) for s in self.suspects]
        return Table("Suspect keys (model consensus)", ("item", "key", "models agree on", "models agreeing",
                                                         "models giving the key", "models with a valid answer",
                                                         "status"), tuple(rows), note=note)


def _items(count: int) -> str:
    return "item" if count == 1 else "items"


def find_suspect_keys(source: LoadedSource, specs: Sequence[str], keep: bool, decided: Iterable[str] = (),
                      rule: KeyRule = RULE) -> KeyConsensus:
    """The models' votes on the source's items, the suspects among them, and (without ``keep``) their corrections:
    one ``exclude`` by ``consensus`` for each suspect no one else ``decided``."""
    items = [item for item in source.records() if isinstance(item, MCQRecord)]
    predictions = read_predictions(specs, benchmark=source.benchmark.name)
    matched, _ = match_predictions(predictions, ItemMatcher(items))
    by_id = {item.id: item for item in items}
    votes = {item_id: count_votes(by_id[item_id], found) for item_id, found in matched.items()}
    suspects = tuple(s for s in (suspect(by_id[i], v, rule) for i, v in sorted(votes.items(), key=_order))
                     if s is not None)
    skip = set(decided)
    corrections = () if keep else tuple(
        Correction(id=s.item.id, action="exclude", reason=REASON, by=BY) for s in suspects if s.item.id not in skip)
    models = len({p.model for p in predictions})
    return KeyConsensus(rule, votes, suspects, keep, models, len(items), corrections)


def _order(pair: tuple[str, Any]) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in pair[0].split("/"))


def suspect(item: MCQRecord, votes: Votes, rule: KeyRule = RULE) -> Suspect | None:
    rival = votes.strongest_rival()
    if rival is None or votes.valid < rule.min_models:
        return None
    option_index, agreeing = rival
    if agreeing < rule.min_share * votes.valid:
        return None
    return Suspect(item, votes, option_index, agreeing)


def count_votes(item: MCQRecord, predictions: Sequence[Prediction]) -> Votes:
    counts = [0] * len(item.choices)
    for prediction in predictions:
        chosen = chosen_option(item, prediction)
        if chosen is not None:
            counts[chosen] += 1
    key = option_key(item.gold)
    twins = frozenset(i for i, c in enumerate(item.choices) if i != item.answer and option_key(c) == key)
    return Votes(item.id, item.answer, tuple(counts), twins)


def chosen_option(item: MCQRecord, prediction: Prediction) -> int | None:
    """The option of ``item`` a prediction chose: an index or a letter into the options the prediction saw (an
    lm-eval doc's or MMLU-Pro's, which are the item's unless the doc lists its own), or an option's text."""
    shown = _shown_options(prediction.ref) or list(item.choices)
    output = prediction.output
    index: int | None = None
    if isinstance(output, int):
        index = output if 0 <= output < len(shown) else None
    elif isinstance(output, str):
        text = output.strip().strip("()[]. :")
        if len(text) == 1 and text.upper() in LETTERS[:len(shown)]:
            index = LETTERS.index(text.upper())
        elif text.isdigit() and int(text) < len(shown) and not _is_option_text(item, output):
            index = int(text)
        else:
            return _option_by_text(item, output)
    if index is None:
        return None
    return index if shown is item.choices or shown == list(item.choices) else _option_by_text(item, shown[index])


def _shown_options(ref: Mapping[str, Any]) -> list[str] | None:
    for name in ("choices", "options"):
        value = ref.get(name)
        if isinstance(value, dict):  # ARC's {label, text}
            value = value.get("text")
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return [v for v in value if v != "N/A"]
    return None


def _is_option_text(item: MCQRecord, text: str) -> bool:
    return _option_by_text(item, text) is not None


def _option_by_text(item: MCQRecord, text: str) -> int | None:
    key = option_key(text)
    found = [i for i, choice in enumerate(item.choices) if option_key(choice) == key]
    return found[0] if found else None


class ItemMatcher:
    """A prediction's item: by ``id`` (the release's id), MMLU-Pro's ``question_id``, or the question's text (with
    the options the prediction saw, where the same question is asked twice)."""

    def __init__(self, items: Sequence[MCQRecord]):
        self.ids = {item.id for item in items}
        self.question_ids: dict[str, str] = {}
        self.by_question: dict[str, list[MCQRecord]] = {}
        for item in items:
            question_id = item.metadata.get("question_id")
            if question_id is not None:
                self.question_ids[str(question_id)] = item.id
            self.by_question.setdefault(question_key(item.question), []).append(item)

    def __call__(self, prediction: Prediction) -> str | Unmatched | None:
        ref = prediction.ref
        if "id" in ref:
            return str(ref["id"]) if str(ref["id"]) in self.ids else None
        if ref.get("question_id") is not None:
            return self.question_ids.get(str(ref["question_id"]))
        question = ref.get("question")
        if not isinstance(question, str):
            return None
        found = self.by_question.get(question_key(question), [])
        shown = _shown_options(ref)
        if len(found) > 1 and shown is not None:
            keys = [option_key(c) for c in shown]
            found = [item for item in found if [option_key(c) for c in item.choices] == keys]
        if len(found) > 1:
            return AMBIGUOUS
        return found[0].id if found else None

