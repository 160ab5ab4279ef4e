"""Options whose meaning depends on the other options or on their positions.

"None of the above", "All of these", "Both", "Both a and c", "a. and b. above", "Both 2 and 3" and
"Option B" stop being coherent when options are removed, added or reordered. WiCkeD copies such items
unchanged, and the perturbation builder keeps them out of order, position and symbol changes. This is
the one detector the builders use; the validator checks their output with a second one, written apart on
another method (``builders.core.validation.referring.refers_to_other_options``, a scan of words).

The forms are those found in MMLU, MMLU-Pro, ARC, CommonsenseQA and TruthfulQA (see
``tests/fixtures_mmlu_references.py`` for the real items and the reason each gets). Each class and what
it deliberately leaves out:

- ``has_none_of_the_above`` / ``has_all_of_the_above``: an option that *starts* with none/neither
  (misspelt "nither"/"nether" too) or all/both/each/any/either + "of the above / these / them / the
  options / the mentioned options ..." or + "of (a) to (c)"; an option that is only "None", "Neither",
  "Both" or "Either"; and, anywhere in an option, "of the above", "listed above", "a combination of
  these". Not: "all of these" inside a sentence about something else ("You will not see these two stars at all"), "None, because ...",
  "Neither of the statements" (the question's statements, not the options), "Both larceny and ...".
- ``has_option_combination``: letters (any case; bare, "a.", "(a)") joined by and/or/nor/&/commas or
  spaces, as the whole option ("both a and b.", "a. and b. above", "(B) (C) and (D).", "A B and C",
  "All of (a), (b) and (c) will be true.", "Options A and B") or at its start when parenthesised
  ("(A) and (B) both in the same way."); inside a sentence only with a verdict ("... both A and B are
  correct"), so that variables ("Counterexample when G and H are true", "The b and d coefficients")
  and names ("vitamin A and B12", "Country A and B have ...") stay content. Numbers count with a
  reference word ("Both 2 and 3.", "options 1 and 2", "1 and 2 above"), or alone ("1 and 2", "1 & 3") when
  no other option of the item holds a digit; among numeric options "1 and 2" is a value (the roots of a
  polynomial), and asked about one option alone it is read as a value too.
  A whole option of letters is taken as a reference even where the letters name things in the question
  (segments "A and B only.", vitamins "A and C"): copying such an item unchanged costs one item, while
  altering a real reference makes it incoherent.
- ``has_letter_reference``: "option B", "choice (c)", "answer D", or an option that is only "(a)".
"""

from __future__ import annotations

import re
from typing import Sequence

NOTA_TEXT = "None of the above"

_OTHERS = (r"(?:(?:mentioned|listed|given|stated)\s+(?:options|choices|answers)|"  # "all the mentioned options"
           r"above|below|these|those|them|others|other\s+(?:options|choices|answers)|options|choices|answers|"
           r"previous|preceding|following|foregoing)")
# Anchored at the start of the option: "all of these" inside a sentence is content, not a reference.
_NOTA = re.compile(rf"^\W*(?:none|neither|nither|nether)\s+(?:of\s+)?(?:the\s+)?{_OTHERS}\b|^\W*(?:none|neither)\W*$",
                   re.I)
_AOTA = re.compile(
    rf"^\W*(?:all|both|each|any|either)(?:\s+(?:one|two|three|\d))?\s+(?:of\s+)?(?:the\s+)?{_OTHERS}\b"
    r"|^\W*(?:both|either)\W*$"
    # a range of option letters: "All of (a) to (c) are potential disadvantages", "a through c"
    r"|^\W*(?:all|any|each|none|neither)\s+of\s+\(?[a-jA-J]\)?\s+(?:to|through|-)\s+\(?[a-jA-J]\)?(?:\W|$)"
    # anywhere: "Moons contribute to all of the above.", "Any one or combinations of the above methods"
    r"|\bof\s+(?:the\s+)?above\b|\b(?:listed|mentioned|given|stated)\s+above\b|\bcombinations?\s+of\s+these\b",
    re.I)

_LETTER = r"(?:\(?\b[a-jA-J]\)|\b[a-jA-J]\b\.?)"  # A, a., (a), a)
_NUMBER = r"(?:\(?\b[1-9]\)|\b[1-9]\b\.?)"
_JOIN = r"(?:\s*[,&]\s*(?:(?:and|or|nor)\s+)?|\s+(?:(?:and|or|nor)\s+)?)"
_VERDICT = r"(?:are|is|will\s+be)\s+(?:both\s+|all\s+)?(?:correct|true|right|valid)"
_PREFIX = r"(?:both|either|neither|nither|nether|only|all\s+of|any\s+of|options?|choices?|answers?)"
_LETTER_COMBINATION = re.compile(
    # the whole option: "both a and b.", "a. and b. above", "A B and C", "All of (a), (b) and (c) will be true."
    rf"^\W*(?:{_PREFIX}\s+)?{_LETTER}(?:{_JOIN}{_LETTER})+(?:\s+(?:only|both|above|{_VERDICT}))?[\s.]*$"
    # a list of parenthesised letters opens the option: "(A) and (B) both in the same way." (not "(i) (a) 12 mils")
    r"|^\W*\([a-jA-J]\)(?:\s*,\s*\([a-jA-J]\))*\s*,?\s*(?:and|or|nor|&)\s+\([a-jA-J]\)"
    # inside a sentence only with a verdict, so that "when both G and H are false" (variables) is content
    rf"|\b(?:both|either|neither)\s+{_LETTER}\s+(?:and|or|nor)\s+{_LETTER}\s+(?:are|is)\s+(?:correct|right)\b"
    # numbers need a reference word: "Both 2 and 3.", "options 1 and 2", "1 and 2 above"
    rf"|^\W*(?:both|either|neither|options?|choices?|answers?)\s+{_NUMBER}(?:{_JOIN}{_NUMBER})+[\s.]*$"
    rf"|^\W*{_NUMBER}(?:{_JOIN}{_NUMBER})+\s+above[\s.]*$",
    re.I)
# "1 and 2" alone: options 1 and 2 when the other options hold no number, else a value ("1 and 2", "1 and 0.5").
_NUMBER_ONLY = re.compile(rf"^\W*{_NUMBER}(?:{_JOIN}{_NUMBER})+(?:\s+only)?[\s.]*$", re.I)
# One label with "only", a verdict or a naming word, as the whole option: "Only A", "(a) only", "option b only",
# "(b) is correct". Not "i": "I only" names the question's statement I (a Roman numeral), not option I.
_ONE_LABEL = r"(?:\([a-hA-H]\)|\b[a-hA-H]\b\.?)"
_ANY_VERDICT = r"(?:are|is)\s+(?:both\s+|all\s+)?(?:correct|true|right|valid|incorrect|false|wrong)"
# Upper-case or parenthesised: "the answer a student gives" is prose.
_LETTER_REFERENCE = re.compile(
    r"\b(?i:options?|choices?|answers?)\s+(?:\([a-jA-J]\)|[A-J]\b)|^\W*\(?[a-jA-J]\)\W*$"
    rf"|(?i:^\W*only\s+(?:(?:options?|choices?|answers?)\s+)?{_ONE_LABEL}[\s.]*$)"
    rf"|(?i:^\W*(?:(?:options?|choices?|answers?)\s+)?{_ONE_LABEL}\s+(?:only|{_ANY_VERDICT})[\s.]*$)"
    rf"|(?i:^\W*(?:options?|choices?|answers?)\s+{_ONE_LABEL}[\s.]*$)"
    # every option but some: "All except D", "All but (c)", "all of the options except a and b"
    rf"|(?i:^\W*(?:all|any|each)\b[\w\s]*?\s(?:except|but(?:\s+not)?)\s+(?:(?:options?|choices?)\s+)?{_ONE_LABEL}"
    rf"(?:{_JOIN}{_ONE_LABEL})*[\s.]*$)")
_QUANTIFIER = r"(?:all|both|none|neither|nither|nether|either|any|each)"
_COUNT = r"(?:two|three|four|five|six|[2-6])"
_QUANTIFIED = re.compile(
    # a quantifier over a count, a plural noun or a verdict, as the whole option: "All three", "all three
    # structures.", "Both of the interventions", "None of the listed", "Both statements are correct", "None is
    # correct". A predicate makes it content: "All three steps are exothermic.", "None of the offspring will be ..."
    rf"^\W*{_QUANTIFIER}(?:\s+of)?(?:\s+(?:the|these|those))?"
    rf"(?:(?:\s+{_COUNT}(?:\s+[a-z]+)?|\s+(?!(?:is|was|has|does)\b)[a-z]+s|\s+(?:listed|mentioned|given|stated))(?:\s+{_ANY_VERDICT})?"
    rf"|\s+{_ANY_VERDICT})[\s.!]*$"  # not "all" alone: the last word of the Pledge of Allegiance
    # closing a sentence: "Older adults cannot do either of these" (not "each of those molecules will ...")
    rf"|\b{_QUANTIFIER}\s+of\s+(?:these|those|the\s+(?:options|choices|answers|alternatives|statements|listed|mentioned"
    r"|preceding|foregoing))[\s.!]*$",
    re.I)
# Options named by their place: "The first two", "the first and third", "All but the last"
_ORDINAL = r"(?:first|second|third|fourth|fifth|last)"
_ORDINAL_REFERENCE = re.compile(
    rf"^\W*(?:(?:both|all|only|either|neither)\s+)?(?:of\s+)?(?:the\s+)?{_ORDINAL}\s+"
    rf"(?:{_COUNT}|(?:and|or|nor)\s+(?:the\s+)?{_ORDINAL})(?:\s+(?:options?|choices?|answers?|statements?))?"
    rf"(?:\s+(?:only|{_ANY_VERDICT}))?[\s.]*$"
    rf"|^\W*all\s+(?:except|but)\s+(?:for\s+)?the\s+{_ORDINAL}(?:\s+(?:one|option|choice|answer))?[\s.]*$",
    re.I)

_REASONS = (("has_none_of_the_above", _NOTA), ("has_all_of_the_above", _AOTA),
            ("has_option_combination", _LETTER_COMBINATION), ("has_letter_reference", _LETTER_REFERENCE),
            ("has_quantified_reference", _QUANTIFIED), ("has_ordinal_reference", _ORDINAL_REFERENCE))
# The reasons that name options by their label: the only ones a change of labels alone (symbols in place of
# letters, the order kept) breaks. "None of the above", "All three" and "The first two" stay true when relabelled.
LABEL_REASONS = frozenset({"has_option_combination", "has_letter_reference"})


def position_dependent_reason(choices: Sequence[str], among: frozenset[str] | None = None) -> str | None:
    """Why this item's options depend on each other or on their positions, or None if they don't. ``among``: only
    these reasons (``LABEL_REASONS``: what a change of labels alone breaks)."""
    texts = [" ".join(choice.split()) for choice in choices]
    readable = [text for text in texts if may_refer(text)]
    if not readable:
        return None
    for reason, pattern in _REASONS:
        if among is not None and reason not in among:
            continue
        if any(pattern.search(text) for text in readable):
            return reason
        if reason == "has_option_combination" and _numbered_options(texts):
            return reason
    return None


# What every form above needs, read without its patterns (a tenth of their cost; most options have none of it): one
# of these words (the forms' words, bounded as the patterns bound them), or a label (a letter A-J or a digit 1-9 as
# a word of its own) opening the option, where the forms without such a word start ("A and B", "(b) is correct",
# "1 and 2"). Held only for ASCII text: there the patterns' IGNORECASE is str.lower and \w is [A-Za-z0-9_]; any
# other text is read by the patterns.
_CUE_WORDS = frozenset({
    "none", "neither", "nither", "nether", "all", "both", "each", "any", "either", "above", "combination",
    "combinations", "option", "options", "choice", "choices", "answer", "answers", "only", "first", "second",
    "third", "fourth", "fifth", "last"})
_ASCII_WORD = re.compile(r"[a-z0-9_]+")
_OPENING_LABEL = re.compile(r"^[^A-Za-z0-9_]*[a-jA-J1-9](?![A-Za-z0-9_])")


def may_refer(text: str) -> bool:
    """False only where no pattern of :data:`_REASONS` (nor ``_NUMBER_ONLY``) can match ``text``."""
    if not text.isascii():
        return True
    return bool(_OPENING_LABEL.match(text)) or not _CUE_WORDS.isdisjoint(_ASCII_WORD.findall(text.lower()))


def _numbered_options(texts: Sequence[str]) -> bool:
    """ "1 and 2" as a whole option, in an item whose other options hold no digit ("LC", "RC", "1 and 2")."""
    for i, text in enumerate(texts):
        if _NUMBER_ONLY.search(text) and len(texts) > 1 and not any(
                re.search(r"\d", other) for j, other in enumerate(texts) if j != i):
            return True
    return False


# An option that already says there is no answer: beside an added "None of the above" it is a second defensible
# answer. "None" not followed by "of" ("None, because the statement is admissible.", "None are oncogenic per se",
# "None is outside the family; all are electromagnetic waves"), and "no comment / exception / objection"
# ("I have no comment."). So are the options saying that nothing happens, that there is no such thing, or that no
# one does (TruthfulQA's "Nothing in particular happens ...", "There is no ...", "There's no ...", "No one ...",
# "No UFO report has been proven to ..."), or that the answer cannot be told ("Not enough information to say").
# Not "None of the offspring will be affected" (content), nor a legal verdict ("Neither assault nor battery.",
# "No crime.", "No contract was formed because ..."), nor "No choice" (a stance in ethics).
_PROVEN = r"(?:proven|proved|shown|demonstrated|confirmed|found)"
_NONE_LIKE_OPENING = re.compile(  # every form opens the option: matched at its start only
    r"^\W*none\b(?!\s+of\b)"
    # opening the option: not "the hearsay rule applies with no exception", "a yes or no answer"
    r"|^\W*(?:(?:there\s+(?:is|are)|i\s+have)\s+)?no\s+(?:comment|exceptions?|objections?"
    r"|(?:correct\s+|right\s+)?answers?)\b"  # not "No choice" (a stance in ethics)
    # "none of these" in other words, as the whole claim of the option: "Cannot be determined", "The answer cannot
    # be determined without ...", "It is impossible to determine.", "Not enough information to say", "a different
    # crime not listed", "Not listed". Not a part of a claim: "Statement 1 cannot be determined", "True, Not enough
    # information" (the truth values of two statements), "The drug is not given to children".
    r"|^\W*(?:(?:it|the\s+answer)\s+)?(?:cannot|can\s*not|can't)\s+be\s+(?:determined|calculated|answered"
    r"|known|computed|found|said)\b(?!\s*,\s*(?:true|false|cannot|not)\b)"
    r"|^\W*(?:(?:it\s+is|it's)\s+)?impossible\s+to\s+(?:determine|tell|say|know)\b"
    r"|^\W*(?:there\s+is\s+)?(?:not\s+enough|insufficient)\s+(?:information|data)\b(?![^,]*,)"
    r"|^\W*(?:nothing|nobody|no[\s-]+one)\b"
    r"|^\W*there(?:\s+(?:is|are|was|were)|\s*['\u2019]s)\s+no\b"
    r"|^\W*no\s+(?:change|effect|difference)s?\W*$"
    # "there is no such thing", as TruthfulQA words it: "No vegetable has been scientifically proven to ..."
    rf"|^\W*no\s+(?:[\w-]+\s+){{1,4}}(?:has|have)\s+(?:ever\s+)?been\s+(?:\w+\s+){{0,2}}{_PROVEN}\b"
    r"|^\W*(?:not\s+listed|none\s+listed|not\s+determinable)\W*$",  # not "Unknown." (who wrote it: content)
    re.I)


# "a different crime not listed", "another answer not mentioned above": the one form that may sit anywhere in the
# option, searched only in an option that holds "not" (no character but N, O, T matches them ignoring case)
_NOT_LISTED = re.compile(r"\b(?:a|an|some|another)\s+(?:different\s+|other\s+)?\w+(?:\s+\w+)?\s+not\s+"
                         r"(?:listed|mentioned)(?:\s+above)?\W*$", re.I)


def none_like_option(choices: Sequence[str]) -> str | None:
    """The first option that asserts there is no answer (no exception, no objection, no comment, cannot be
    determined, an answer not listed), or None."""
    return next((choice for choice in choices if _says_none(" ".join(choice.split()))), None)


def _says_none(text: str) -> bool:
    return bool(_NONE_LIKE_OPENING.match(text)) or ("not" in text.lower() and bool(_NOT_LISTED.search(text)))


def is_nota(choice: str) -> bool:
    return bool(_NOTA.search(" ".join(choice.split())))
