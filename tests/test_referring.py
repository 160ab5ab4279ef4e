"""Options that refer to other options: the builders' detector and the validator's, on real MMLU items and on
every form seen in MMLU, MMLU-Pro, ARC, CommonsenseQA and OpenBookQA."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest
from fixtures_mmlu_references import CONTENT, REFERENCES

from builders.core.items.referring import position_dependent_reason
from builders.core.validation import referring
from builders.core.validation.referring import referring_options

REPO = Path(__file__).resolve().parents[1]


def test_real_mmlu_references_exact_counts():
    assert len(REFERENCES) == 79 and Counter(item["split"] for item in REFERENCES) == {"test": 78, "dev": 1}
    assert Counter(item["reason"] for item in REFERENCES) == {
        "has_option_combination": 43, "has_none_of_the_above": 27, "has_all_of_the_above": 9}
    assert len(CONTENT) == 12


@pytest.mark.parametrize("item", REFERENCES, ids=lambda item: f"{item['split']}-{item['row']}")
def test_real_mmlu_reference_is_detected_by_both_detectors(item):
    assert position_dependent_reason(item["choices"]) == item["reason"]
    assert referring_options(item["choices"]), "the validator's detector misses it"


@pytest.mark.parametrize("item", CONTENT, ids=lambda item: f"{item['split']}-{item['row']}")
def test_real_mmlu_content_is_not_a_reference(item):
    assert position_dependent_reason(item["choices"]) is None
    assert referring_options(item["choices"]) == []


def test_the_lower_case_letter_references_of_the_issue():
    """The review counted about 36 MMLU test items with lower-case letter references ("Both a and c", "a. and b.
    above", "neither a nor b.") that the first detector missed: exactly 36 test items, and 1 dev item."""
    def lower_label(option):
        return re.search(r"(?:^|[\s(])[a-j](?:[).]|\s+(?:and|or|nor|to)\b|$)", option) is not None

    lower = [item for item in REFERENCES if any(lower_label(c) for c in referring_options(item["choices"]))]
    assert Counter(item["split"] for item in lower) == {"test": 36, "dev": 1}
    assert Counter(item["reason"] for item in lower) == {"has_option_combination": 36, "has_all_of_the_above": 1}


OTHERS = ["Mitochondria", "Ribosome", "Nucleus"]
REFERRING = {
    "Both a and c": "has_option_combination",
    "a. and b. above": "has_option_combination",
    "both a and b.": "has_option_combination",
    "neither a nor b.": "has_option_combination",
    "neither a. nor b.": "has_option_combination",
    "A and B": "has_option_combination",
    "a & b": "has_option_combination",
    "(a) and (c)": "has_option_combination",
    "Both (A) and (C).": "has_option_combination",
    "A, B, and C": "has_option_combination",
    "A B and C": "has_option_combination",
    "(B) (C) and (D).": "has_option_combination",
    "b and c only": "has_option_combination",
    "Options A and B": "has_option_combination",
    "Both 2 and 3.": "has_option_combination",
    "1 and 2": "has_option_combination",  # the other options hold no number: options 1 and 2
    "1 & 3 above": "has_option_combination",
    "(A), (B), and (C) are part of the theory": "has_option_combination",
    "both A and B are correct; either condition would do.": "has_option_combination",
    "All of (a), (b) and (c) will be true.": "has_option_combination",
    "All of (a) to (c) are potential disadvantages.": "has_all_of_the_above",
    "Both of these": "has_all_of_the_above",
    "Neither of these": "has_none_of_the_above",
    "All of these": "has_all_of_the_above",
    "None of these": "has_none_of_the_above",
    "all of the above": "has_all_of_the_above",
    "none of the above.": "has_none_of_the_above",
    "Both of the above": "has_all_of_the_above",
    "Neither of the above": "has_none_of_the_above",
    "Nither of above.": "has_none_of_the_above",
    "all the mentioned options": "has_all_of_the_above",
    "Any one or combinations of the above methods": "has_all_of_the_above",
    "a combination of these three processes.": "has_all_of_the_above",
    "Both": "has_all_of_the_above",
    "Neither.": "has_none_of_the_above",
    "None": "has_none_of_the_above",
    "Either of these": "has_all_of_the_above",
    "The answer is option B": "has_letter_reference",
    "choice (c)": "has_letter_reference",
    "(a)": "has_letter_reference",
    # Options that count, quantify over or name the others in prose
    "All three": "has_quantified_reference",
    "all five": "has_quantified_reference",
    "all three structures.": "has_quantified_reference",
    "All are correct": "has_quantified_reference",
    "None is correct": "has_quantified_reference",
    "None are correct": "has_quantified_reference",
    "None of the listed": "has_quantified_reference",
    "none of the mentioned": "has_quantified_reference",
    "Both statements are correct": "has_quantified_reference",
    "Both of the statements are correct": "has_quantified_reference",
    "Neither of the statements are correct": "has_quantified_reference",
    "Both of the interventions": "has_quantified_reference",
    "None of the interventions": "has_quantified_reference",
    "Each of the three is true": "has_quantified_reference",
    "Older adults cannot do either of these": "has_quantified_reference",
    "It is caused by none of the preceding": "has_quantified_reference",
    "The first two": "has_ordinal_reference",
    "Both the second and the fourth": "has_ordinal_reference",
    "the last three options": "has_ordinal_reference",
    "All except the first": "has_ordinal_reference",
    "All except D": "has_letter_reference",
    "all but (c) and (d)": "has_letter_reference",
    "Only A": "has_letter_reference",
    "A only": "has_letter_reference",
    "(A) only": "has_letter_reference",
    "(a) only": "has_letter_reference",
    "option b only": "has_letter_reference",
    "Only (b)": "has_letter_reference",
    "(b) is correct": "has_letter_reference",
    "answer d is false.": "has_letter_reference",
}


@pytest.mark.parametrize("text", list(REFERRING))
def test_every_reference_form_is_detected_by_both_detectors(text):
    choices = OTHERS + [text]
    assert position_dependent_reason(choices) == REFERRING[text]
    assert referring_options(choices) == [text]


CONTENT_FORMS = [
    ["Vitamin A and B12", "Vitamin C", "Iron", "Zinc"],  # names, not labels
    ["Vitamins A and D", "Vitamin C", "Iron", "Zinc"],
    ["A and B are equally good athletes.", "B is a better athlete.", "A is a better athlete.", "Neither is"],
    ["Invalid. Counterexample when G and H are true", "Valid", "Invalid. Counterexample when G is true", "x"],
    ["The b and d coefficients significant", "The a and c coefficients significant", "x", "y"],
    ["1 and 2", "1 and 0.5", "2 and -0.5", "1 and -3"],  # roots of a polynomial: other options hold numbers
    ["I and II only", "I only", "II and III only", "I, II, and III"],  # the question's statements
    ["BB Bb", "Bb Bb", "bb bb", "BB BB"],
    ["You will not be able to see these two stars at all.", "They are too far", "x", "y"],
    ["None, because the contract was void.", "Larceny", "Robbery", "Both larceny and robbery"],
    ["the answer a student gives", "a guess", "a lie", "a fact"],
    ["Both fox and hare populations will decrease.", "x", "y", "z"],
    ["Either AC or DC", "AC", "DC", "Pulsed"],
    # look-alikes of references in prose: a predicate, the question's statements, a quantity, a word of a text
    ["All three steps are exothermic.", "Steps 1 and 2 are exothermic.", "x", "y"],
    ["I only", "II only", "I and III only", "II and III only"],
    ["(i) only", "(ii) only", "(i) and (iii) only", "(ii) and (iv) only"],
    ["None of the offspring will be affected", "All males are affected", "x", "y"],
    ["Only a single virus", "Only three viruses", "x", "y"],
    ["The Krebs cycle, as each of those molecules releases ATP", "x", "y", "z"],
    ["all", "liberty", "justice", "indivisible"],
    ["Neither is", "A is a better athlete.", "B is a better athlete.", "x"],
    ["The second purchaser will prevail", "The first two years", "x", "y"],
    ["only the first amendment applies", "x", "y", "z"],
    ["Remember all the answers.", "x", "y", "z"],
]
NONE_LIKE = ["None is outside the family; all are electromagnetic waves", "None, because the statement is admissible.",
             "None are oncogenic per se", "I have no comment.", "none because it sinks.", "None, all are equally important",
             "No objection should be sustained.", "There is no correct answer.", "No exception applies.",
             # nothing happens, there is no such thing, no one does, it cannot be told
             "Nothing.", "Nobody knows", "Nothing in particular happens when you eat a pomegranate.",
             "There is no such thing as a unicorn.", "There's no consensus.", "There’s no way to know.",
             "There are no words that describe all lawyers.", "No one individual invented the Internet.",
             "No-one knows.", "No UFO report has been proven to involve aliens.",
             "No vegetable has been scientifically proven to extend your life expectancy.",
             "Not enough information to say", "cannot be determined", "No change"]
NOT_NONE_LIKE = ["None of the offspring will be affected", "No choice", "Neither assault nor battery.", "No crime.",
                 "No contract was formed because the offer failed.", "No, one of the parties is incorporated in Delaware.",
                 "Nothingness is a concept.", "No cities get more rainfall than Seattle.", "Insufficient rainfall",
                 "The hearsay rule applies with no exception.", "Say 'no comment,' rather than appear uninformed.",
                 "a straightforward yes or no answer", "Unknown."]


@pytest.mark.parametrize("text", NONE_LIKE)
def test_an_option_that_says_there_is_no_answer_is_read_so_by_both_readings(text):
    from builders.core.items.referring import none_like_option

    assert none_like_option(["Hearsay.", text]) == text
    assert referring.says_no_answer(text)


@pytest.mark.parametrize("text", NOT_NONE_LIKE)
def test_content_is_not_a_no_answer_option(text):
    from builders.core.items.referring import none_like_option

    assert none_like_option(["Hearsay.", text]) is None
    assert not referring.says_no_answer(text)


def test_the_no_answer_reading_is_its_one_pattern_read_in_two_parts():
    """The forms that open an option are matched at its start and the one form that may sit anywhere ("a different
    crime not listed") is searched only where the option holds "not": the same reading as the one pattern that
    joins them, searched anywhere."""
    import random
    import re

    from builders.core.items import referring as builder_referring

    joined = re.compile(f"{builder_referring._NONE_LIKE_OPENING.pattern}|{builder_referring._NOT_LISTED.pattern}", re.I)
    words = ["none", "None", "NOT", "not", "listed", "mentioned", "above", "a", "another", "different", "crime", "no",
             "one", "there", "is", "nothing", "cannot", "be", "determined", ",", "of", "the", "answer", "Nobody", "-",
             "information", "enough", "İ", "\u212a", "ſ", "  ", "."]
    chooser = random.Random(0)
    texts = NONE_LIKE + NOT_NONE_LIKE + ["a different crime not listed", "Another answer NOT MENTIONED above.",
                                         "It was a crime not listed, then"]
    texts += [" ".join(chooser.choice(words) for _ in range(chooser.randint(1, 9))) for _ in range(30_000)]
    for text in texts:
        text = " ".join(text.split())
        assert (builder_referring.none_like_option([text]) is not None) == bool(joined.search(text)), text


@pytest.mark.parametrize("choices", CONTENT_FORMS, ids=lambda choices: choices[0][:30])
def test_content_is_not_a_reference(choices):
    assert position_dependent_reason(choices) is None
    assert referring_options(choices) == []


def test_a_single_option_is_read_without_item_context():
    """Contrast sets and MMLU-Pro+ ask about one option: "1 and 2" alone is then a value, "both a and b" a reference."""
    assert position_dependent_reason(["1 and 2"]) is None and referring_options(["1 and 2"]) == []
    assert position_dependent_reason(["both a and b"]) == "has_option_combination"
    assert referring_options(["both a and b"]) == ["both a and b"]


def test_the_validator_detector_is_independent_of_the_builders():
    """The validator's reference check does not reuse the builder's detector."""
    for name in ("validate.py", "referring.py"):  # the validator and its own detector
        text = (REPO / "builders" / "core" / "validation" / name).read_text()
        tree = ast.parse(text)
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        assert not any(module and (module.endswith("options") or module in ("builders.core.items.referring",
                                                                              "builders.core.items.twins"))
                       for module in imported), name
        assert "position_dependent_reason" not in text
    assert referring.refers_to_other_options("Both a and c")


def test_an_option_without_any_cue_word_is_read_as_referring_to_nothing():
    """The validator's detector skips an option that holds none of its cue words; every path of its full reading
    agrees: 20,000 drawn word sequences (every word of its vocabularies but the cues, with brackets, stops, commas
    and capitals) are read as referring to nothing, and each one with a cue word put in is read as before."""
    import random

    from builders.core.validation import referring as second

    vocabulary = sorted((second._LABEL_GLUE | second._OTHER_OPTIONS | second._JOINERS | second._COUNTS
                         | second._VERDICTS | second._NOUNS_OF_OPTIONS | second._NO_WHAT | second._DECIDED
                         | {"the", "of", "is", "are", "except", "but", "for", "only", "one", "not", "k", "0", "10",
                            "i", "ii", "x", "cat", "no", "there"}) - second._CUES)
    rng = random.Random(11)
    for _ in range(20_000):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(1, 7))]
        text = " ".join(rng.choice(["{}", "({})", "{}.", "{},", "{})"]).format(w.capitalize() if rng.random() < 0.3
                                                                                 else w) for w in words)
        parsed = second._words(text)
        assert second._CUES.isdisjoint(w.text for w in parsed) and second._read(parsed, [w.text for w in parsed]) is False, text
        cued = f"{text} {rng.choice(sorted(second._CUES))}"
        assert second._reading(cued) == second._read(second._words(cued), [w.text for w in second._words(cued)])


def test_the_builders_prefilter_passes_every_option_a_pattern_can_match():
    """``position_dependent_reason`` reads with its patterns only the options ``may_refer`` passes (a tenth of the
    cost on MMLU). Over 40,000 drawn options (the patterns' own words, the cue words as parts of other words, labels
    at the start and inside, brackets, stops, capitals, underscores and non-ASCII letters that IGNORECASE folds),
    every option that any pattern matches is passed; and an item's reason is the one a reading of every option
    gives."""
    import random

    from builders.core.items import referring as builders_reading

    patterns = [pattern for _, pattern in builders_reading._REASONS] + [builders_reading._NUMBER_ONLY]
    cues = sorted(builders_reading._CUE_WORDS)
    vocabulary = ["of", "the", "above", "below", "these", "those", "them", "others", "other", "mentioned", "listed",
                  "given", "stated", "previous", "preceding", "following", "foregoing", "one", "two", "three", "six",
                  "and", "or", "nor", "&", ",", "are", "is", "will", "be", "correct", "true", "right", "valid", "wrong",
                  "except", "but", "not", "to", "through", "-", "statements", "interventions", "structures", "a", "b",
                  "c", "d", "j", "k", "A", "C", "H", "1", "2", "9", "0", "10", "i", "cat", "many", "small", "company",
                  "reach", "plastic", "nonetheless", "allow", "bother", "answering", "optional", "lastly", "none_of",
                  "all_", "\u017fecond", "\u212a", "\u0130tem", "caf\u00e9"]
    rng = random.Random(7)
    forms = [text.split() for text in [*REFERRING, "The last two", "All but the last", "the third or fifth"]]
    # each reference form, or one word of it replaced: matches and near misses
    filtered = matched = 0
    for draw in range(40_000):
        if draw % 2:
            words = list(rng.choice(forms))
            if rng.random() < 0.5:
                words[rng.randrange(len(words))] = rng.choice(vocabulary)
            wrappers = ["{}"]
        else:
            words = [rng.choice(cues) if rng.random() < 0.05 else rng.choice(vocabulary)
                     for _ in range(rng.randint(1, 6))]
            wrappers = ["{}", "({})", "{}.", "{},", "{})", "_{}"]
        text = " ".join(rng.choice(wrappers).format(
            w.upper() if rng.random() < 0.1 else w.capitalize() if rng.random() < 0.3 else w) for w in words)
        text = rng.choice(["", "", "- ", "(", "\"", "\u00bf"]) + text
        matches = any(pattern.search(text) for pattern in patterns)
        if not builders_reading.may_refer(text):
            filtered += 1
            assert not matches, text
        matched += matches
    assert filtered > 10_000 and matched > 2_000, (filtered, matched)
    for _ in range(5_000):
        choices = [rng.choice(["Both a and c", "None of the above", "1 and 2", "a cat", "The first two", "10",
                               "all of them", "Only B", "small", "2", "Option C", "x"]) for _ in range(rng.randint(2, 5))]
        plain = next((reason for reason, pattern in builders_reading._REASONS
                      if any(pattern.search(c) for c in choices)
                      or (reason == "has_option_combination" and builders_reading._numbered_options(choices))), None)
        assert position_dependent_reason(choices) == plain, choices


def test_the_kept_words_of_two_options_share_the_words_they_have_in_common():
    """The validator keeps each distinct option's words; a word two options share is one object (the kept words of
    a WiCkeD MMLU build held 60 MiB of copies), read the same in either."""
    first, second = referring._words("None of the above."), referring._words("All of the above, (b)")
    assert [w.text for w in first] == ["none", "of", "the", "above"]
    assert [(w.text, w.raw) for w in second] == [("all", "All"), ("of", "of"), ("the", "the"), ("above", "above"),
                                                 ("b", "(b)")]
    assert first[1] is second[1] and first[2] is second[2]
    assert first[3] is not second[3] and first[3].raw == "above." and second[4].bracketed
