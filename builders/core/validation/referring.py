"""Options that refer to other options: the validator's second detector, for the builders' checks.

Written apart from builders.core.items.referring (which decides what the builders skip), on a different method: the
option is cut into words, each word keeps whether it was a label ("(a)", "a.", "A"), and the word sequence is
read against small vocabularies. A check that reused the builder's patterns would pass whatever they miss.
"""

from __future__ import annotations

import re
from functools import lru_cache
from operator import itemgetter
from typing import Iterable


_QUANTIFIERS = {"all", "none", "both", "neither", "nither", "nether", "either", "any", "each"}
_BARE = {"none", "both", "neither", "nither", "nether", "either"}
_OTHER_OPTIONS = {"above", "below", "these", "them", "those", "preceding", "foregoing", "options", "choices", "answers",
                  "others"}
_PHRASES = (("of", "the", "above"), ("of", "above"), ("listed", "above"), ("mentioned", "above"),
            ("given", "above"), ("combination", "of", "these"), ("combinations", "of", "these"))
_SPACED_PHRASES = tuple(f" {' '.join(phrase)} " for phrase in _PHRASES)
_LABEL_GLUE = {"and", "or", "nor", "&", "both", "either", "neither", "only", "above", "option", "options", "choice",
               "choices", "answer", "answers", "all", "of", "are", "is", "correct", "true", "will", "be", "right",
               "valid", "incorrect", "false", "wrong"}
_NUMBER_CUES = {"both", "either", "neither", "option", "options", "choice", "choices", "answer", "answers", "above"}
_JOINERS = {"and", "or", "nor", "&"}
_NAMING = {"option", "options", "choice", "choices", "answer", "answers"}


class _Word(tuple):
    """(text, raw): ``text`` lower case, without brackets and trailing punctuation; ``raw`` as written. A plain
    tuple underneath: a build reads hundreds of thousands of words."""

    __slots__ = ()
    text = property(itemgetter(0))
    raw = property(itemgetter(1))

    @property
    def letter(self) -> bool:
        return len(self.text) == 1 and self.text in "abcdefghij"

    @property
    def number(self) -> bool:
        return len(self.text) == 1 and self.text in "123456789"

    @property
    def bracketed(self) -> bool:
        return self.letter and self.raw.rstrip(".,;:").endswith(")")


@lru_cache(maxsize=1 << 18)
def _words(option: str) -> tuple[_Word, ...]:
    # A pure reading of one text, kept once per distinct text: a build reads each option in several configs.
    # One _Word per distinct (text, raw): the texts of a benchmark share most of their words, and each kept reading
    # held its own copies (60 MiB of a WiCkeD MMLU build's 130 MiB of validation).
    raws = _WORD_BREAK.split(option)
    words = []
    for raw in raws:
        text = raw.lower().strip("().:;!?\"'")
        if text:
            word = _SEEN_WORDS.get((text, raw))
            if word is None:
                word = _SEEN_WORDS[text, raw] = _Word((text, raw))
            words.append(word)
    return tuple(words)


_SEEN_WORDS: dict[tuple[str, str], _Word] = {}


_WORD_BREAK = re.compile(r"[\s,]+")


def refers_to_other_options(option: str, others: Iterable[str] = ()) -> bool:
    """Whether ``option`` refers to the other options: a bare quantifier ("Both"); a quantifier of the others
    ("None of these", "all the mentioned options", "All of (a) to (c) ..."); "of the above" anywhere; only
    option labels and joining words ("a. and b. above", "Both 2 and 3", and "1 and 2" when no other option
    holds a number); a list of bracketed letters opening the option ("(A), (B), and (C) are ..."); "both a and
    b are correct"; "option B"; or an option that is only "(a)". ``others``: the item's other options."""
    reading = _reading(option)
    if reading is not None:
        return reading
    others = list(others)
    return bool(others) and not any(ch.isdigit() for other in others for ch in other)


@lru_cache(maxsize=1 << 18)
def _reading(option: str) -> bool | None:
    """What ``option`` alone says: True, it refers to the others; False, it does not; None, it is only option
    numbers and joining words ("1 and 2"), which refer to the others when no other option holds a number."""
    words = _words(option)
    texts = [w.text for w in words]
    if not words or _CUES.isdisjoint(texts):  # three options in four (MMLU's) hold none of its cues
        return False
    return _read(words, texts)


def _read(words: tuple[_Word, ...], texts: list[str]) -> bool | None:
    """:func:`_reading` of an option's words (and their texts), which hold one of :data:`_CUES` at least."""
    if len(words) == 1:
        return texts[0] in _BARE or words[0].bracketed
    if texts[0] in _QUANTIFIERS and (_OTHER_OPTIONS & set(texts[1:5]) or (texts[1] == "of" and len(words) > 2
                                                                         and words[2].letter)):
        return True
    spaced = f" {' '.join(texts)} "  # a word holds no space: a phrase's words in a row are its spaced text in this
    if any(phrase in spaced for phrase in _SPACED_PHRASES):
        return True
    for i in range(len(words) - 1):  # "option B", "choice (c)": an upper-case or bracketed letter
        if texts[i] in _NAMING and words[i + 1].letter and (words[i + 1].bracketed or words[i + 1].raw[:1].isupper()):
            return True
    for i in range(len(words) - 5):  # "... both A and B are correct"
        if (texts[i] in {"both", "either", "neither"} and words[i + 1].letter and texts[i + 2] in {"and", "or", "nor"}
                and words[i + 3].letter and texts[i + 4] in {"are", "is"} and texts[i + 5] in {"correct", "right"}):
            return True
    opening = 0  # bracketed letters and joiners that open the option
    while opening < len(words) and (words[opening].bracketed or texts[opening] in _JOINERS):
        opening += 1
    if sum(w.bracketed for w in words[:opening]) >= 2 and any(t in _JOINERS for t in texts[:opening]):
        return True
    if _closes_on_the_others(texts) or _quantifies_options(texts) or _by_place(texts) or _all_but_labels(words):
        return True
    letters = [w for w in words if w.letter]
    numbers = [w for w in words if w.number]
    rest = [w.text for w in words if not w.letter and not w.number]
    if not all(t in _LABEL_GLUE for t in rest) or (letters and numbers):  # "(a) 1, (b) 1": a question's parts
        return False
    if len(letters) >= 2:
        return True
    if len(letters) == 1 and letters[0].text in "abcdefgh" and (  # not "I only": the question's statement I
            {"only", "correct", "true", "right", "valid", "incorrect", "false", "wrong"} | _NAMING) & set(rest):
        return True
    if len(numbers) < 2:
        return False
    return True if _NUMBER_CUES & set(rest) else None


_COUNTS = {"two", "three", "four", "five", "six", "2", "3", "4", "5", "6"}
_VERDICTS = {"correct", "true", "right", "valid", "incorrect", "false", "wrong"}
_NOUNS_OF_OPTIONS = {"options", "choices", "answers", "alternatives", "statements", "listed", "mentioned",
                     "preceding", "foregoing"}
_ORDINALS = {"first", "second", "third", "fourth", "fifth", "last"}
# Every way _read finds a reference reads one of these words: a quantifier, a word of its phrases ("of the above",
# "combination of these"), a naming word ("option"), an ordinal, a letter or an option number. An option without
# any says nothing of the others (tests/test_referring.py holds _read to it on drawn word sequences).
_CUES = frozenset(_QUANTIFIERS | {"above", "these"} | _NAMING | _ORDINALS | set("abcdefghij") | set("123456789"))


def _is_verdict(texts: list[str]) -> bool:
    """Nothing, or "is/are [both/all] correct" (and the like)."""
    if not texts:
        return True
    rest = texts[1:] if texts[0] in {"is", "are"} else None
    if rest and rest[0] in {"both", "all"}:
        rest = rest[1:]
    return rest is not None and len(rest) == 1 and rest[0] in _VERDICTS


def _closes_on_the_others(texts: list[str]) -> bool:
    """The option ends with a quantifier of the others: "Older adults cannot do either of these", "... none of the
    statements" (not "remember all the answers", nor "each of those molecules will ...")."""
    if len(texts) >= 3 and texts[-3] in _QUANTIFIERS and texts[-2] == "of" and texts[-1] in {"these", "those"}:
        return True
    return (len(texts) >= 4 and texts[-4] in _QUANTIFIERS and texts[-3:-1] == ["of", "the"]
            and texts[-1] in _NOUNS_OF_OPTIONS)


def _quantifies_options(texts: list[str]) -> bool:
    """A quantifier over a count, a plural noun or a verdict, and nothing else: "All three", "all three structures",
    "Both of the interventions", "None of the listed", "Both statements are correct", "None is correct" (not "All
    three steps are exothermic": the predicate makes it a statement)."""
    if texts[0] not in _QUANTIFIERS or len(texts) == 1:
        return False
    rest = texts[1:]
    rest = rest[1:] if rest[0] == "of" else rest
    rest = rest[1:] if rest and rest[0] in {"the", "these", "those"} else rest
    if rest and rest[0] in _COUNTS:
        rest = rest[2:] if len(rest) > 1 and rest[1] not in {"is", "are"} else rest[1:]
    elif rest and rest[0] not in {"is", "are", "was", "has", "does"} and (rest[0].endswith("s") or rest[0] in {"listed", "mentioned",
                                                                                         "given", "stated"}):
        rest = rest[1:]
    return _is_verdict(rest)


def _by_place(texts: list[str]) -> bool:
    """Options named by their place: "The first two", "both the first and the third", "All but the last"."""
    if texts[0] == "all" and len(texts) >= 4 and texts[1] in {"except", "but"}:
        rest = texts[3:] if texts[2] == "the" else (texts[4:] if texts[2:4] == ["for", "the"] else [])
        return bool(rest) and rest[0] in _ORDINALS and all(t in {"one", "option", "choice", "answer"} for t in rest[1:])
    rest = [t for t in texts if t not in {"the", "of", "both", "all", "only", "either", "neither"}]
    if len(rest) < 2 or rest[0] not in _ORDINALS:
        return False
    if rest[1] in _COUNTS:
        rest = rest[2:]
    elif rest[1] in _JOINERS and len(rest) > 2 and rest[2] in _ORDINALS:
        rest = rest[3:]
    else:
        return False
    rest = rest[1:] if rest and rest[0] in _NAMING | {"statement", "statements"} else rest
    return rest == ["only"] or _is_verdict(rest)


def _all_but_labels(words: tuple[_Word, ...]) -> bool:
    """Every option but some named by label: "All except D", "all of the options except a and b"."""
    texts = [w.text for w in words]
    cut = next((i for i, t in enumerate(texts) if t in {"except", "but"}), None)
    if texts[0] not in {"all", "any", "each"} or cut is None or cut + 1 >= len(words):
        return False
    tail = [w for w in words[cut + 1:] if w.text not in {"not", "option", "options", "choice", "choices"}]
    return bool(tail) and all(w.letter or w.text in _JOINERS for w in tail) and any(w.letter for w in tail)


_NO_ANSWER_OPENINGS = (("there", "is"), ("there", "are"), ("i", "have"))
_NO_WHAT = {"comment", "exception", "exceptions", "objection", "objections", "answer", "answers"}
_THERE_IS = {("there", "is"), ("there", "are"), ("there", "was"), ("there", "were"), ("there's",), ("there’s",)}
_NOTHING_HAPPENS = {"change", "changes", "effect", "effects", "difference", "differences"}
_SHOWN = {"proven", "proved", "shown", "demonstrated", "confirmed", "found"}


@lru_cache(maxsize=1 << 18)
def says_no_answer(option: str) -> bool:
    """Whether ``option`` already says there is no answer: "None" as its first word, not followed by "of" ("None,
    because the statement is admissible.", "None are oncogenic per se"), or an opening "[There is / I have] no
    comment / exception / objection / [correct] answer" ("I have no comment."); or that nothing happens, there is
    no such thing, no one does, or it cannot be told (:func:`_says_nothing_or_no_one`). Read word by word, apart
    from the builder's detector."""
    texts = [w.text for w in _words(option)]
    if not texts:
        return False
    if texts[0] == "none":
        return len(texts) == 1 or texts[1] != "of"
    if _says_nothing_or_no_one(texts) and not option.lstrip(" \"'(").lower().startswith("no,"):  # "No, one of ..."
        return True
    if tuple(texts[:2]) in _NO_ANSWER_OPENINGS:
        texts = texts[2:]
    if len(texts) >= 2 and texts[0] == "no" and texts[1] in {"correct", "right"}:
        texts = texts[:1] + texts[2:]
    return (len(texts) >= 2 and texts[0] == "no" and texts[1] in _NO_WHAT) or _undecidable(option, texts)


_CANNOT = {"cannot", "can't"}
_DECIDED = {"determined", "calculated", "answered", "known", "computed", "found", "said"}
_NOT_LISTED = {"listed", "mentioned"}
_ALONE = {("not", "listed"), ("none", "listed"), ("not", "determinable")}  # not "Unknown." (content)


def _undecidable(option: str, texts: list[str]) -> bool:
    """ "None of these" in other words, as the option's whole claim: it opens with "[it / the answer] cannot be
    determined", "[it is] impossible to determine", "[there is] not enough / insufficient information"; it ends with
    "a [different] crime not listed"; or it is only "Not listed". A truth value beside it ("True, Not enough
    information") makes it a statement's value, not a verdict on the options."""
    if re.search(r",\s*(?:true|false|not|cannot)\b", option, re.I) or re.search(r"\b(?:true|false),", option, re.I):
        return False
    opening = texts[2:] if texts[:2] in (["the", "answer"], ["it", "is"], ["there", "is"]) else \
        texts[1:] if texts[:1] == ["it"] else texts
    if opening[:1] and opening[0] in _CANNOT and opening[1:2] == ["be"] and opening[2:3] and opening[2] in _DECIDED:
        return True
    if opening[:3] in (["can", "not", "be"],) and opening[3:4] and opening[3] in _DECIDED:
        return True
    if opening[:2] == ["impossible", "to"] and opening[2:3] and opening[2] in {"determine", "tell", "say", "know"}:
        return True
    if opening[:3] in (["not", "enough", "information"], ["not", "enough", "data"]) or \
            opening[:2] in (["insufficient", "information"], ["insufficient", "data"]):
        return True
    if len(texts) >= 3 and texts[-2] == "not" and texts[-1] in _NOT_LISTED and \
            {"a", "an", "some", "another"} & set(texts[-5:-2]):
        return True
    return tuple(texts) in _ALONE


def _says_nothing_or_no_one(texts: list[str]) -> bool:
    """ "Nothing [in particular happens]", "Nobody", "No one", "There is / There's no ...", "No change" alone, "No X
    has [ever] been proven ..." (within its first words); not "No crime." or "No contract
    was formed" (verdicts), nor "Neither assault nor battery." (content)."""
    if texts[0] in {"nothing", "nobody", "no-one"} or texts[:2] == ["no", "one"]:
        return True
    if any(tuple(texts[:len(opening)]) == opening and texts[len(opening):len(opening) + 1] == ["no"]
           for opening in _THERE_IS):
        return True
    if texts[0] != "no":
        return False
    if len(texts) == 2 and texts[1] in _NOTHING_HAPPENS:
        return True
    head = texts[:10]
    for i, word in enumerate(head):
        if word in {"has", "have"} and 2 <= i <= 5:
            rest = head[i + 1:i + 6]
            if rest[:1] == ["ever"]:
                rest = rest[1:]
            return rest[:1] == ["been"] and any(w in _SHOWN for w in rest[1:4])
    return False


def referring_options(choices: Iterable[str]) -> list[str]:
    """The options of an item that refer to the item's other options (see :func:`refers_to_other_options`)."""
    return list(_referring(tuple(choices)))


@lru_cache(maxsize=1 << 16)
def _referring(choices: tuple[str, ...]) -> tuple[str, ...]:
    # A pure reading of one item's options, kept once per distinct set: a check reads an original in every variant.
    # refers_to_other_options(c, the others) for each option, its others read only where the option alone does not
    # decide (a variant's 67,000 sets of options in a WiCkeD MMLU build: the per-text readings are cached).
    readings = [_reading(c) for c in choices]
    if None not in readings:
        return tuple(c for c, reading in zip(choices, readings, strict=True) if reading)
    return tuple(c for i, c in enumerate(choices) if refers_to_other_options(c, choices[:i] + choices[i + 1:]))
