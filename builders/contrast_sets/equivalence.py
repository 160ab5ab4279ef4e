"""Equivalence the embedder cannot judge: two option texts that differ in a number, a negation, an antonym or
the direction of a change are never equivalent, however close their embeddings.

Sentence embeddings place "1" near "3", "27°C" near "0°C", "104 grams" near "32.0 grams" and "liquid into a gas"
near "Gas changes to liquid". A contrast pair built on such an "equivalence" offers a question a distractor
that is not the one it replaced: a second correct option, or one a reader eliminates for the wrong reason.
:func:`contradicts` vetoes them; the graph asks it about every (gold, distractor) text pair it would join.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_NUMBER = re.compile(r"-?(?:\d+(?:,\d{3})*(?:\.\d+)?|\.\d+)")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
NUMBER_WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                     "ninety": 90, "hundred": 100, "thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9,
                     "half": 0.5, "dozen": 12, "once": 1, "twice": 2, "single": 1, "double": 2, "triple": 3})
NEGATIONS = frozenset("not no never none nothing neither nor cannot without nobody nowhere".split())
ANTONYMS = (
    ("increase", "decrease"), ("increases", "decreases"), ("increased", "decreased"), ("increasing", "decreasing"),
    ("more", "less"), ("more", "fewer"), ("higher", "lower"), ("high", "low"), ("larger", "smaller"),
    ("large", "small"), ("bigger", "smaller"), ("big", "small"), ("longer", "shorter"), ("long", "short"),
    ("faster", "slower"), ("fast", "slow"), ("hotter", "colder"), ("hot", "cold"), ("warmer", "cooler"),
    ("warm", "cool"), ("warmer", "colder"), ("hotter", "cooler"), ("warm", "cold"), ("hot", "cool"), ("heavier", "lighter"), ("rise", "fall"), ("rises", "falls"), ("gain", "lose"),
    ("gains", "loses"), ("add", "remove"), ("adding", "removing"), ("absorb", "release"), ("absorbs", "releases"),
    ("before", "after"), ("above", "below"), ("inside", "outside"), ("up", "down"), ("on", "off"), ("in", "out"),
    ("open", "closed"), ("true", "false"), ("always", "never"), ("all", "none"), ("many", "few"), ("most", "least"),
    ("positive", "negative"), ("north", "south"), ("east", "west"), ("left", "right"), ("day", "night"),
    ("expand", "contract"), ("expands", "contracts"), ("heat", "cool"), ("melt", "freeze"), ("melts", "freezes"),
    ("evaporation", "condensation"), ("evaporates", "condenses"), ("push", "pull"), ("same", "different"),
    ("living", "nonliving"), ("renewable", "nonrenewable"), ("solid", "liquid"), ("solid", "gas"), ("liquid", "gas"),
)
# A change or relation with a direction: the order of the things it joins is its meaning.
DIRECTION_WORDS = frozenset("to into from becomes become turns turn changes change causes cause than before after "
                            "converts convert produces produce makes make".split())
STOPWORDS = frozenset("a an the of and or is are was were be been it its this that these those for with by as at "
                      "which who what when where can will would should could may might do does did has have had "
                      "their there they them his her he she we you your our".split()) | DIRECTION_WORDS
_ANTONYM_OF: dict[str, frozenset[str]] = {}
for _left, _right in ANTONYMS:
    _ANTONYM_OF[_left] = _ANTONYM_OF.get(_left, frozenset()) | {_right}
    _ANTONYM_OF[_right] = _ANTONYM_OF.get(_right, frozenset()) | {_left}


@dataclass(frozen=True)
class Reading:
    """What of a text the veto compares."""

    numbers: tuple[float, ...]  # sorted, digits and number words
    negated: bool
    words: tuple[str, ...]  # in order, singular, case folded
    directed: bool


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@lru_cache(maxsize=1 << 18)
def reading(text: str) -> Reading:
    folded = text.casefold()
    numbers = [float(m.replace(",", "")) for m in _NUMBER.findall(folded)]
    words = _WORD.findall(folded)
    numbers += [float(NUMBER_WORDS[w]) for w in words if w in NUMBER_WORDS]
    negated = any(w in NEGATIONS or w.endswith("n't") for w in words)
    return Reading(tuple(sorted(numbers)), negated, tuple(_singular(w) for w in words),
                   any(w in DIRECTION_WORDS for w in words) or "→" in text or "->" in text)


def contradicts(first: str, second: str) -> str | None:
    """Why two texts cannot be equivalent options, or None. Identical texts (after case folding and spacing) never
    contradict. The reasons: ``numbers`` (the numbers stated differ), ``negation`` (one is negated), ``antonym``,
    ``reversed`` (a directed change between the same things, the other way round), ``degree`` ("very happy" /
    "happy"), ``conjunction`` (one names
    more things: "life and death" / "death") and ``substituted`` (the texts share a content word and each has
    one the other lacks: "friend's house" / "neighbor's house"). The last two trade recall for precision: a missed
    equivalence costs one pair, a false one puts a second answer or a changed distractor in a released item."""
    if " ".join(first.casefold().split()) == " ".join(second.casefold().split()):
        return None
    a, b = reading(first), reading(second)
    if a.numbers != b.numbers:
        return "numbers"
    if a.negated != b.negated:
        return "negation"
    words_a, words_b = set(a.words), set(b.words)
    for word in words_a - words_b:
        if _ANTONYM_OF.get(word, frozenset()) & (words_b - words_a):
            return "antonym"
    if a.directed and b.directed and _order_reversed(a.words, b.words):
        return "reversed"
    if (_DEGREE & set(a.words)) != (_DEGREE & set(b.words)):
        return "degree"  # "very happy" / "happy", "mammals" / "some mammals"
    only_a, only_b = _unmatched(a.words, b.words), _unmatched(b.words, a.words)
    if (only_a or only_b) and (_CONJUNCTIONS & set(a.words)) != (_CONJUNCTIONS & set(b.words)):
        return "conjunction"  # "life and death" / "death": one names more things than the other
    if only_a and only_b and _content(a.words) & _content(b.words):
        return "substituted"  # "Earth rotates on its axis" / "Earth is tilted on its axis"
    return None


_CONJUNCTIONS = frozenset({"and", "or", "nor", "both"})
_DEGREE = frozenset("very extremely slightly somewhat moderately mildly highly really quite too some every only".split())


def _content(words: tuple[str, ...]) -> set[str]:
    return {w for w in words if w not in STOPWORDS and w not in _CONJUNCTIONS}


def _related(first: str, second: str) -> bool:
    """One word is a form of the other: "rain"/"rainfall", "evaporated"/"evaporation", "tired"/"tiredness"."""
    return first.startswith(second) or second.startswith(first) or (
        min(len(first), len(second)) >= 5 and first[:5] == second[:5])


def _unmatched(words: tuple[str, ...], others: tuple[str, ...]) -> set[str]:
    """Content words of ``words`` that are no form of any content word of ``others``."""
    other_content = _content(others)
    return {w for w in _content(words) if not any(_related(w, o) for o in other_content)}


def _order_reversed(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """Two content words the texts share appear in opposite orders ("liquid into a gas" / "gas changes to
    liquid")."""
    shared = (set(first) & set(second)) - STOPWORDS
    if len(shared) < 2:
        return False
    order_a = [w for w in dict.fromkeys(first) if w in shared]
    position_b = {w: i for i, w in reversed(list(enumerate(second)))}
    ranks = [position_b[w] for w in order_a]
    return any(later < earlier for earlier, later in zip(ranks, ranks[1:], strict=False))
