"""The choices-only adversary finds each shortcut the review tabled when it is planted in a small build, and
stays quiet on the same build without it (both directions, so that the check can fail)."""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

import numpy as np
import pytest

from builders import wicked
from builders.core.items.record import MCQRecord
from builders.core.validation import adversary, audit, option_features


def record(i: int, choices, answer: int, source_index: int | None = None) -> MCQRecord:
    return MCQRecord(f"t/{i}", f"question {i}", tuple(choices), answer, "synthetic", "c", "test",
                     i if source_index is None else source_index)


def fake_build(records, inherent=None, baselines=()):
    source = SimpleNamespace(benchmark=SimpleNamespace(fewshot_split=None))
    return SimpleNamespace(release=SimpleNamespace(baselines=list(baselines), inherent_baselines=inherent or {}),
                           about=SimpleNamespace(unchanged_config=None), source=source,
                           params={"seed": 0}, configs={"default": {"test": list(records)}})


def assess(records, inherent=None) -> adversary.AdversaryRow:
    [row] = adversary.assess(fake_build(records, inherent))
    return row


def gsm_random(items: int, key_in_the_middle: bool) -> list[MCQRecord]:
    """GSM-MC `--distractors random` today: three numbers drawn around the key, so the key sits in the middle
    (closest to the mean about half the time); without the cue, four numbers and a key drawn uniformly."""
    rng = np.random.default_rng(1)
    out = []
    for i in range(items):
        key = int(rng.integers(20, 2000))
        if key_in_the_middle:
            offsets = rng.choice([o for o in range(-40, 41) if o], size=3, replace=False)
            values = [key, *(key + int(o) for o in offsets)]
        else:
            values = [int(v) for v in key + rng.choice(np.arange(0, 80), size=4, replace=False)]
        order = rng.permutation(4)
        choices = [str(values[j]) for j in order]
        answer = int(np.flatnonzero(order == 0)[0]) if key_in_the_middle else int(rng.integers(4))
        out.append(record(i, choices, answer))
    return out


WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda sigma omega".split()


def text_options(rng, count: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 7)))) + f" {k}" for k in range(count)]


def key_shortest(items: int, options: int, cue: bool, pairs: bool = False) -> list[MCQRecord]:
    """MATH-MC 2- and 3-option builds and contrast-set random pairs: the key is the shortest option (or not).
    ``pairs``: two items per source question with the same options (the contrast pair), one fold side only."""
    rng = np.random.default_rng(2)
    out = []
    for i in range(items):
        choices = text_options(rng, options)
        lengths = [len(c) for c in choices]
        answer = int(np.argmin(lengths)) if cue else int(rng.integers(options))
        out.append(record(i, choices, answer, source_index=i // 2 if pairs else i))
    return out


def both_pair(items: int, cue: bool) -> list[MCQRecord]:
    """MMLU-Pro+ `--layout paper`: a "Both X and Y are correct" option; with the cue, the pair is right when it
    sits just after one of its members, else its first-named member is; without it the gold is any option."""
    rng = np.random.default_rng(3)
    out = []
    for i in range(items):
        choices = [f"{w} {k}" for k, w in enumerate(rng.choice(WORDS, size=5, replace=False))]
        x, y = (int(v) for v in rng.choice(5, size=2, replace=False))
        pair = f"Both {choices[x]} and {choices[y]} are correct"
        place = int(rng.integers(6))
        choices.insert(place, pair)
        members = [k + (k >= place) for k in (x, y)]
        if cue:
            answer = place if place - 1 in members else members[0]
        else:
            answer = int(rng.integers(6))
        out.append(record(i, choices, answer))
    return out


def longest_of_ten(items: int, share: float) -> list[MCQRecord]:
    """WiCkeD on MMLU-Pro: the key is the longest of 10 options in ``share`` of the items (18.4% of 11.1%)."""
    rng = np.random.default_rng(4)
    out = []
    for i in range(items):
        choices = text_options(rng, 10)
        lengths = np.array([len(c) for c in choices])
        longest = int(np.argmax(lengths))
        if rng.random() < share and (lengths == lengths.max()).sum() == 1:
            answer = longest
        else:
            answer = int(rng.choice([k for k in range(10) if k != longest]))
        out.append(record(i, choices, answer))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("planted, quiet, words", [
    (lambda: gsm_random(600, True), lambda: gsm_random(600, False), "nearer the options' mean"),
    (lambda: key_shortest(500, 2, True), lambda: key_shortest(500, 2, False), "short"),
    (lambda: key_shortest(500, 3, True), lambda: key_shortest(500, 3, False), "short"),
    (lambda: key_shortest(600, 2, True, pairs=True), lambda: key_shortest(600, 2, False, pairs=True), "short"),
    (lambda: both_pair(600, True), lambda: both_pair(600, False), "nam"),
], ids=["closest_to_mean", "shortest_of_2", "shortest_of_3", "contrast_pairs_shorter", "both_just_before"])
def test_the_adversary_flags_a_planted_shortcut_and_stays_quiet_without_it(planted, quiet, words):
    found = assess(planted())
    assert found.warns and found.low > found.chance + 0.05, found
    assert any(words in feature for feature in found.features), found.features
    calm = assess(quiet())
    assert not calm.warns and calm.accuracy < calm.chance + 0.05 and calm.features == (), calm


def agreeing_words(items: int, cue: bool) -> list[MCQRecord]:
    """A key no weighted sum of the features finds: every option of an item carries the item's two context words
    ("both" or "each", "neither" or "every"), and one of "all"/"few" and one of "not"/"now", each of the four
    combinations once; the key has "all" where the context has "both" and "not" where it has "neither". Each
    word is as common on the key as on the other options, and a weighted sum picks the same combination in every
    item: right in a quarter of them. Trees read the agreement. Without the cue, the key is any option."""
    rng = np.random.default_rng(8)
    nouns = "cat dog owl bee eel ant yak emu".split()
    out = []
    for i in range(items):
        both, neither = (bool(v) for v in rng.integers(2, size=2))
        context = f"{'both' if both else 'each'} {'neither' if neither else 'every'}"
        combinations = [(a, n) for a in (True, False) for n in (True, False)]
        order = rng.permutation(4)
        names = rng.choice(nouns, size=4, replace=False)
        choices = [f"{'all' if combinations[k][0] else 'few'} {'not' if combinations[k][1] else 'now'} {context} "
                   f"{names[j]}" for j, k in enumerate(order)]
        key = next(j for j, k in enumerate(order) if combinations[k] == (both, neither))
        out.append(record(i, choices, key if cue else int(rng.integers(4))))
    return out


@pytest.mark.slow
def test_a_cue_in_a_combination_of_features_is_found_by_the_trees_and_its_absence_is_not():
    """The logistic ranking alone read a quarter of these items, as chance: the trees answer all of them. The row
    shows the stronger model, judged over both (two tests for one row)."""
    found = assess(agreeing_words(400, cue=True))
    accuracies = dict(found.accuracies)
    assert adversary.repeats(400) == 10 and adversary.boosted.repeats(400) == 3  # draws of folds
    assert round(accuracies["logistic regression"] * 10 * 400) == 1087  # 27.2%: no warning on its own
    assert round(accuracies["gradient-boosted trees"] * 3 * 400) == 1200  # every item, in every draw
    assert found.model == "gradient-boosted trees" and found.accuracy == 1.0 and found.tests == 2 and found.warns
    assert adversary.row_status(found) == "WARNING" and found.features == ('an option with "all"', 'an option without "not"')
    assert adversary.warnings([found]) == [
        "default/test: a choices-only model (gradient-boosted trees) answers 100.0% of 400 items (95% 99.0%–100.0%, "
        f"chance 25.0%) from the options alone, by: {'; '.join(found.features)}"]
    calm = assess(agreeing_words(400, cue=False))
    calm_accuracies = dict(calm.accuracies)
    assert round(calm_accuracies["logistic regression"] * 10 * 400) == 1092
    assert round(calm_accuracies["gradient-boosted trees"] * 3 * 400) == 315
    assert calm.model == "logistic regression" and calm.tests == 2
    assert not calm.warns and not calm.significant and calm.features == () and adversary.row_status(calm) == "ok"


@pytest.mark.slow
def test_a_ten_option_longest_option_cue_of_seven_points_warns_and_its_absence_does_not():
    # WiCkeD on MMLU-Pro: the longest option answers 18.4% against 11.1%; the old flat 10-point margin let it pass.
    planted = longest_of_ten(2500, 0.20)
    rule = next(r for r in audit.audit(fake_build(planted)) if r.baseline == "longest_option")
    assert rule.warns and 0.05 < rule.accuracy - rule.chance < 0.10
    found = assess(planted)
    assert found.warns and "the longest option" in found.features
    calm = assess(longest_of_ten(2500, 0.10))
    assert not calm.warns and calm.accuracy < 0.15


def test_the_adversary_is_deterministic_and_samples_large_splits_by_content():
    records = gsm_random(700, True)
    first = adversary.evaluate(records, seed=5)
    assert first == adversary.evaluate(list(records), seed=5)
    small = adversary.sample(records, seed=5, limit=300)
    assert len(small) == 300 and small == adversary.sample(records, seed=5, limit=300)
    assert small != adversary.sample(records, seed=6, limit=300)
    assert [r.id for r in small] == sorted((r.id for r in small), key=lambda i: int(i.split("/")[1]))



@pytest.mark.slow
def test_its_figure_depends_on_the_items_not_their_order_and_averages_several_draws_of_folds():
    """The folds are dealt by a hash of (seed, draw, content), so a shuffled release gives the same figure; small
    splits average more draws (one draw of folds over 365 two-option items read 50.7-57.3% on MATH-MC's sets,
    which differ only in layout)."""
    records = key_shortest(300, 2, cue=False)
    found = adversary.evaluate(records, seed=5)
    for order in (3, 4, 5):  # the whole row, bit for bit: the fits see their rows in content order
        shuffled = [records[i] for i in np.random.default_rng(order).permutation(len(records))]
        assert adversary.evaluate(shuffled, seed=5) == found
    groups = adversary.source_groups(records)
    folds = [adversary.fold_assignment([r.content_key for r in records], groups, 5, 5, draw) for draw in range(2)]
    assert sorted(np.bincount(folds[0]).tolist()) == [60] * 5 and (folds[0] != folds[1]).any()
    assert [adversary.repeats(n) for n in (99, 100, 365, 886, 2000)] == [1, 20, 11, 5, 2]


def test_folds_keep_the_variants_of_one_source_question_together():
    a, b = record(0, ["1", "2"], 0, source_index=7), record(1, ["3", "4"], 1, source_index=7)
    c, d = record(2, ["x", "y"], 0), record(3, ["y", "x"], 1)  # one contrast pair: the same two options
    e = record(4, ["p", "q"], 0)
    groups = adversary.source_groups([a, b, c, d, e]).tolist()
    assert groups[0] == groups[1] and groups[2] == groups[3] and len(set(groups)) == 3


def test_leaking_variants_across_folds_would_inflate_it():
    # 150 questions in 4 variants each, whose gold (the only mark) is random per question: grouped folds see
    # nothing to learn; a model that saw the same question's variants on both sides would score far above chance.
    rng = np.random.default_rng(6)
    records = []
    for q in range(150):
        marks = [f"{w} {k}" for k, w in enumerate(rng.choice(WORDS, size=4, replace=False))]
        answer = int(rng.integers(4))
        records += [record(4 * q + v, marks, answer, source_index=q) for v in range(4)]
    row = assess(records)
    assert not row.warns and row.accuracy < row.chance + 0.05


def test_an_inherent_cue_is_reported_as_such():
    reason = "the design puts the key nearest the mean"
    row = assess(gsm_random(400, True), inherent={"default/choices_only_model": reason})
    assert not row.warns and row.significant and adversary.row_status(row) == f"inherent: {reason}"
    assert adversary.warnings([row]) == []
    sentence = audit.summary_sentence([], [row])
    assert "beating chance by design" in sentence and "the choices-only model on default/test" in sentence


def test_the_model_warning_in_several_configs_of_a_split_is_one_warning_naming_them_all():
    """PythonIO's sample printed 11 warnings, one per set and split, where two findings (test and train) were."""
    def row(config, split, accuracy, features):
        return adversary.AdversaryRow(config, split, 33, 33, accuracy, 0.25, accuracy - 0.15, accuracy + 0.1,
                                      features, None, tests=4)

    rows = [row("set_0", "test", 0.667, ("not the longest option", "position B")),
            row("set_1", "test", 0.606, ("not the longest option",)),
            row("set_1", "train", 0.8, ("position B",)), row("set_2", "test", 0.3, ())]
    assert [r.warns for r in rows] == [True, True, True, False]
    assert adversary.warnings(rows) == [
        "test of set_0, set_1: a choices-only model (logistic regression) answers 60.6%–66.7% of 33 items (chance "
        "25.0%) from the options alone, most often by: not the longest option (2 of 2); position B (1 of 2)",
        "set_1/train: a choices-only model (logistic regression) answers 80.0% of 33 items (95% 65.0%–90.0%, chance "
        "25.0%) from the options alone, by: position B"]


def test_features_describe_options_against_their_item():
    rows = option_features.option_features(["12", "15", "1,000", "14.5"])
    column = {name: rows[:, i].tolist() for i, name in enumerate(option_features.FEATURES)}
    # mean 260.4: 15 is nearest; median 14.75: 15 and 14.5 tie
    assert column["closest_to_mean"] == [0, 1, 0, 0] and column["closest_to_median"] == [0, 1, 0, 1]
    assert column["farthest_from_mean"] == [0, 0, 1, 0] and column["shortest"] == [1, 1, 0, 0]
    assert column["integer"][3] < 0 < column["integer"][0] and column["last"] == [0, 0, 0, 1]
    pair = option_features.option_features(["cats", "dogs", "Both cats and dogs are correct", "fish"])
    named = {name: pair[:, i].tolist() for i, name in enumerate(option_features.FEATURES)}
    assert named["names_others"] == [0, 0, 1, 0] and named["first_named"] == [1, 0, 0, 0]
    assert named["named_by_next"] == [0, 1, 0, 0] and named["names_previous"] == [0, 0, 1, 0]
    assert named["word_both"] == [0, 0, 1, 0] and named["space_alone"] == [0, 0, 1, 0]
    assert option_features.number("$1,250.50") == 1250.5 and option_features.number("\\frac{3}{4}") == 0.75
    assert option_features.number("x + 1 = 2") is None


@pytest.mark.slow
def test_through_a_real_builder_the_card_shows_the_adversary(tmp_path):
    # MMLU-like rows whose key is the longest option: WiCkeD keeps the cue in every config, the adversary finds
    # it, and the card shows the model's row, as the source's own cue (`original`) that the variant inherits (no
    # further above chance); the same rows with a random key stay quiet.
    rng = np.random.default_rng(7)
    rows, calm_rows = [], []
    for i in range(240):
        choices = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 4)))) + f" {k}" for k in range(3)]
        key = f"{' '.join(rng.choice(WORDS, size=6))} {i}"
        choices.insert(int(rng.integers(4)), key)
        row = {"question": f"Question {i}?", "subject": "global_facts", "choices": choices}
        rows.append({**row, "answer": choices.index(key)})
        calm_rows.append({**row, "answer": int(rng.integers(4))})
    result = wicked.build_dataset(rows, variants=1, sba_classifier="none")
    models = {r.config: r for r in result.report.adversary}
    assert set(models) == {"original", "variant_0"} and all(r.significant and not r.warns for r in models.values())
    assert models["original"].inherent == "inherited from the source: the source's own options carry it"
    assert models["variant_0"].inherent.startswith("inherited from the source: `original` (the source unchanged) scores")
    assert models["original"].accuracy > 0.9 and "choices-only model" not in " ".join(result.report.warnings)
    result.write(tmp_path / "release")
    card = (tmp_path / "release" / "README.md").read_text()
    assert "#### Choices-only model" in card and "inherited from the source (the source unchanged" in card
    assert "the choices-only model on 2 config" in card
    calm = wicked.build_dataset(calm_rows, variants=1, sba_classifier="none")
    assert not any(r.warns for r in calm.report.adversary)
    again = wicked.build_dataset(rows, variants=1, sba_classifier="none")  # the card is the same on a rebuild
    assert again.report.adversary == result.report.adversary
    assert again.report.to_markdown() == result.report.to_markdown()


def test_numbers_too_large_for_floats_are_not_read_as_numbers():
    """PythonIO's full build crashed in the adversary ("Input X contains NaN"): a Python int of 400 digits is inf
    as a float, and its distance to the options' mean NaN. Such an option is not read as a number."""
    huge = "1" * 400
    assert option_features.number(huge) is None and option_features.number("-" + huge) is None
    assert option_features.number("9" * 101) is None and option_features.number("1" + "0" * 99) == 1e99
    assert np.isfinite(option_features.option_features([huge, "2", "3", "4"])).all()
    records = [record(i, [str(i), "1" * (300 + i), str(i + 7), str(2 * i + 1)], i % 4) for i in range(40)]
    row = assess(records)
    assert (row.items, row.scored) == (40, 40) and 0 <= row.accuracy <= 1


def math_decimals(items: int, kind_filter: bool) -> list[MCQRecord]:
    """MATH-MC with 2 options: an exact key (an integer or a fraction) and one model's wrong answer, a decimal
    approximation in half of the items (what the shared build released before the last fixes of its cues); with
    ``kind_filter`` the builder's rule leaves decimals beside exact keys out and an exact wrong answer is shown."""
    from builders.math_mc import forms

    rng = np.random.default_rng(5)
    out = []
    for i in range(items):
        top, bottom = int(rng.integers(2, 400)), int(rng.choice([1, 7, 11, 13]))
        key = str(top) if bottom == 1 else rf"\frac{{{top}}}{{{bottom}}}"
        wrong = top + int(rng.choice([-1, 1])) * int(rng.integers(1, 30))
        wrong += wrong % bottom == 0 and bottom > 1  # in lowest terms, as MATH's keys
        exact = str(wrong) if bottom == 1 else rf"\frac{{{wrong}}}{{{bottom}}}"
        candidates = [f"{wrong / bottom * 1.01:.2f}", exact] if rng.random() < 0.5 else [exact]
        if kind_filter:
            candidates = [c for c in candidates if forms.kind_mismatch(c, key) is None]
        answer = int(rng.integers(2))
        out.append(record(i, [key, candidates[0]] if answer == 0 else [candidates[0], key], answer))
    return out


def test_math_mc_decimal_distractors_are_found_and_their_removal_leaves_it_quiet():
    found = assess(math_decimals(500, kind_filter=False))
    assert found.warns and found.accuracy > 0.6, found
    calm = assess(math_decimals(500, kind_filter=True))
    assert not calm.warns and calm.accuracy < 0.55 and calm.features == (), calm


def test_scored_items_read_each_distinct_option_tuple_once_and_give_the_same_features():
    """The configs of a release that keep an item's options share its features (assess passes one dict): 30 items
    of which the second 15 repeat the first 15's options read 15 option tuples, the same arrays as read alone."""
    records = [record(i, [f"opt {i % 15} a", f"opt {i % 15} bb", "ccc"], i % 3) for i in range(30)]
    features: dict = {}
    chosen, blocks = adversary.scored_items(records, 0, features)
    alone_chosen, alone = adversary.scored_items(records, 0)
    assert chosen == alone_chosen and len(features) == 15
    assert all(np.array_equal(a, b) for a, b in zip(blocks, alone, strict=True))
    again, shared = adversary.scored_items(records[:15], 0, features)
    assert len(features) == 15 and all(features[r.choices] is b for r, b in zip(again, shared, strict=True))


def _plain_reference_and_place_columns(choices: tuple[str, ...]) -> dict[str, list[float]]:
    """The columns the features' shortcuts fill, read the plain way: every pair searched for a whole-phrase
    mention, the places and keywords read per item."""
    n = len(choices)
    texts = [option_features._reading(c).text for c in choices]
    where = [[option_features._names(texts[i], texts[j]) if i != j else -1 for j in range(n)] for i in range(n)]
    names = [sum(p >= 0 for p in row) >= 2 for row in where]
    columns: dict[str, list[float]] = {name: [0.0] * n for name in
                                       ("names_others", "named_by_other", "named_by_next", "names_previous")}
    if any(names):
        columns["names_others"] = [float(x) for x in names]
        columns["named_by_other"] = [float(any(where[i][j] >= 0 for i in range(n) if names[i])) for j in range(n)]
        columns["named_by_next"] = [float(j + 1 < n and names[j + 1] and where[j + 1][j] >= 0) for j in range(n)]
        columns["names_previous"] = [float(i > 0 and names[i] and where[i][i - 1] >= 0) for i in range(n)]
    columns["last"] = [float(i == n - 1) for i in range(n)]
    columns["relative_position"] = [i / max(n - 1, 1) - 0.5 for i in range(n)]
    for i in range(option_features.POSITIONS):
        columns[f"position_{i}"] = [float(min(j, option_features.POSITIONS - 1) == i) for j in range(n)]
    words = [set(re.findall(r"\w+", c.lower())) for c in choices]
    for word in ("both", "none", "all", "neither", "not"):
        columns[f"word_{word}"] = [float(word in w) for w in words]
    return columns


def test_the_features_shortcuts_give_the_columns_of_the_plain_reading():
    """The phrase search skipped where no option holds another, the places copied from one block per option count
    and the keywords read once per text: 4,000 drawn items (2 to 14 options, options made of one another's words,
    "both X and Y", repeats) hold every such column to the plain reading, and the overlap to its set union."""
    rng = random.Random(7)
    words = ["cats", "dogs", "Both", "and", "or", "none", "all", "not", "A", "b", "1", "2.5", "neither", "x", "of"]
    drawn = [[" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(2, 14))]
             for _ in range(4_000)]
    for base in [["cats", "dogs", "Both cats and dogs are correct", "fish"], ["cats", "dogs", "cats or fish"], *drawn]:
        if rng.random() < 0.5 and len(base) > 2:
            base[rng.randrange(len(base))] = f"Both {base[0]} and {base[1]} are correct"
        rows = option_features.option_features(tuple(base))
        got = {name: rows[:, i].tolist() for i, name in enumerate(option_features.FEATURES)}
        for name, expected in _plain_reference_and_place_columns(tuple(base)).items():
            assert got[name] == expected, (name, base)
        sets = [option_features._reading(c).words for c in base]
        overlap = [sum(len(a & b) / len(a | b) if a | b else 0.0 for j, b in enumerate(sets) if j != i) / (len(base) - 1)
                   for i, a in enumerate(sets)]
        assert np.allclose(got["overlap"], np.array(overlap) - sum(overlap) / len(overlap), rtol=0, atol=1e-12)


def test_a_rebuild_reads_the_models_figures_back_and_any_change_of_the_items_fits_them_again(tmp_path, monkeypatch):
    """The choices-only figures kept in the mcqforge cache: a second assessment of the same items reads them (the
    models are not fitted) and gives the same rows; a changed gold, option or seed is another key and is fitted;
    a damaged file is as none; and a cache that cannot be written leaves the figures the same."""
    from builders.core.validation import adversary_store

    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "cache"))
    items = key_shortest(300, 3, True)
    fitted = []
    evaluate = adversary.evaluate
    monkeypatch.setattr(adversary, "evaluate", lambda *a, **k: fitted.append(1) or evaluate(*a, **k))
    first = assess(items)
    assert assess(items) == first and len(fitted) == 1
    changed = [items[0].replace(answer=(items[0].answer + 1) % 3), *items[1:]]
    assert assess(changed) != first and len(fitted) == 2
    assert assess([items[0].replace(choices=("x", "yy", "zzz")), *items[1:]]) and len(fitted) == 3
    reseeded = fake_build(items)
    reseeded.params["seed"] = 1
    adversary.assess(reseeded)
    assert len(fitted) == 4
    for kept in (tmp_path / "cache" / adversary_store.FOLDER).rglob("*.json"):
        kept.write_text("{not json")
    assert assess(items) == first and len(fitted) == 5
    monkeypatch.setenv("MCQFORGE_CACHE", str(tmp_path / "a file"))
    (tmp_path / "a file").write_text("")
    assert assess(items) == first and len(fitted) == 6
