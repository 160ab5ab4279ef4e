"""Options that are the same but for their spelling, and options that mean "none of these" in other words: the
builders' readings (builders.core.items) and the validator's own, on the forms the issue names."""

from __future__ import annotations

import pytest

from builders.core.items.referring import none_like_option
from builders.core.items.twins import duplicate_option, option_key, question_key
from builders.core.validation import referring, validate

TWINS = [("128.1", "128.10"), ("$6,049 ", "$6049"), ("caf\u00e9", "cafe\u0301"), ("ab\u200bc", "abc"),
         ("\u221214", "-14"), ("10.0", "10"), ("1,234,567.50", "1234567.5"), ("x\u00a0y", "x y")]
DIFFERENT = [("1.5 m", "1.5 cm"), ("1,2,3", "123"), ("v1.2.0", "v1.2"), ("Bb", "BB"), ("12,5", "125"),
             ("0.5", "5"), ("100", "1000")]
NOT_LISTED = ["He can be convicted of a different crime not listed.", "a score not listed", "Cannot be determined",
              "The answer cannot be determined without knowing the size of the jury pool.",
              "It is impossible to determine.", "Not enough information to say",
              "There is insufficient information to answer this question.", "Not listed"]
CONTENT = ["True, Not enough information", "Cannot be determined, False", "Statement 1 cannot be determined",
           "The drug is not given to children", "Unknown.", "The value is not listed in the table of 1990"]


@pytest.mark.parametrize("pair", TWINS, ids=repr)
def test_options_equal_but_for_spelling_are_duplicates_for_the_builders_and_the_validator(pair):
    first, second = pair
    assert option_key(first) == option_key(second)
    assert duplicate_option(["Other", first, second]) == 2
    assert validate.option_spelling(first) == validate.option_spelling(second)


@pytest.mark.parametrize("pair", DIFFERENT, ids=repr)
def test_options_that_differ_stay_different(pair):
    first, second = pair
    assert duplicate_option([first, second]) is None
    assert validate.option_spelling(first) != validate.option_spelling(second)


@pytest.mark.parametrize("text", NOT_LISTED)
def test_none_of_these_in_other_words_is_a_no_answer_option_for_both_readings(text):
    assert none_like_option(["Larceny.", text]) == text
    assert referring.says_no_answer(text)


@pytest.mark.parametrize("text", CONTENT)
def test_content_about_what_is_not_given_is_no_no_answer_option(text):
    assert none_like_option(["Larceny.", text]) is None
    assert not referring.says_no_answer(text)


def test_questions_equal_but_for_case_whitespace_and_punctuation_are_the_same_question():
    assert question_key("What is 2+2?") == question_key("  what is 2 + 2 ")
    assert question_key("What is 2+2?") != question_key("What is 2+3?")


def test_wicked_copies_an_item_with_twin_options_or_a_not_listed_option_unchanged():
    from builders.core.items.record import MCQRecord
    from builders.wicked.transform import DUPLICATE_SKIP, NONE_LIKE_SKIP, skip_reason

    def item(*choices: str) -> MCQRecord:
        return MCQRecord("mmlu_pro/test/8795", "Compute it.", choices, 0, "s", "c", "test", 0)

    assert skip_reason(item("128.1", "130.2", "128.10", "12")) == DUPLICATE_SKIP
    assert skip_reason(item("$6,049 ", "$5,000", "$6049")) == DUPLICATE_SKIP
    assert skip_reason(item("Larceny.", "Burglary.", "He can be convicted of a different crime not listed.")) \
        == NONE_LIKE_SKIP
    assert skip_reason(item("12", "14", "-14")) is None


def test_the_number_pattern_rewrites_what_its_plain_form_rewrites():
    """The number pattern opens with its first digit, its lookbehind after it, so that it is searched for at digits
    only: on any text it rewrites the spans its plain form (the lookbehind first) rewrites."""
    import random
    import re

    from builders.core.items import twins

    plain = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|(?<![\d.,])\d+\.\d+(?![\d.])")
    chooser = random.Random(0)
    texts = ["".join(chooser.choice("0123456789.,, a-$") for _ in range(chooser.randint(0, 16))) for _ in range(50_000)]
    texts += ["6,049", "1,234,567.50", "128.10", "a 1,2345 b", ".5", "5.", "1.2.3", "12,345,6", "x1,000y", "$3.50"]
    for text in texts:
        assert ([m.span() for m in twins._NUMBER.finditer(text)] == [m.span() for m in plain.finditer(text)]), text
    assert option_key("128.10") == option_key("128.1") and option_key("$6,049 ") == option_key("$6049")
