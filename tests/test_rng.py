"""first_integers and permutations: the draws of many per-item generators at once, the same as item_rng's."""

from __future__ import annotations

import random

import pytest

from builders.core.items.rng import FEW_ITEMS, first_integers, item_rng, permutations


@pytest.mark.parametrize("seed, purpose", [(0, ("wicked", 0)), (12345678901, ("wicked", 4)), (7, ()), (3, ("x", 1, 2))])
def test_first_integers_are_item_rngs_first_draws(seed, purpose):
    chooser = random.Random(seed)
    ids = ["".join(chooser.choice("abcdef0123é\x1f ") for _ in range(chooser.randint(0, 40))) for _ in range(3000)]
    sizes = [chooser.randint(1, 26) for _ in ids]
    expected = [int(item_rng(seed, i, *purpose).integers(n)) for i, n in zip(ids, sizes, strict=True)]
    assert first_integers(seed, ids, sizes, *purpose) == expected
    assert len(set(expected)) == 26  # every position drawn somewhere: the sizes vary


def test_first_integers_of_no_item_and_of_one_option():
    assert first_integers(0, [], []) == []
    assert first_integers(0, ["a", "b"], [1, 1], "wicked", 0) == [0, 0]  # integers(1) is 0 without a draw


def _derangement(rng, size):
    while True:
        order = [int(i) for i in rng.permutation(size)]
        if all(p != i for i, p in enumerate(order)):
            return order


@pytest.mark.parametrize("count", [1, FEW_ITEMS - 1, 3000])  # seeded by numpy's SeedSequence, or by the arrays
def test_permutations_are_item_rngs_permutations_and_derangements(count):
    chooser = random.Random(count)
    ids = ["".join(chooser.choice("abcdef0123é\x1f ") for _ in range(chooser.randint(0, 40))) for _ in range(count)]
    sizes = [chooser.randint(0, 40 if i % 50 == 0 else 7) for i in range(count)]  # a few long ones
    assert permutations(4, ids, sizes, "perturbations", "shuffle") == [
        [int(i) for i in item_rng(4, i, "perturbations", "shuffle").permutation(n)] for i, n in zip(ids, sizes, strict=True)]
    sizes = [max(2, n) for n in sizes]
    assert permutations(4, ids, sizes, "d", derangements=True) == [
        _derangement(item_rng(4, i, "d"), n) for i, n in zip(ids, sizes, strict=True)]
    # the generator's state goes on from one permutation to the next: a derangement drawn twice or more is among them
    if count == 3000:
        assert sum(order != [int(i) for i in item_rng(4, i, "d").permutation(len(order))]
                   for i, order in zip(ids, permutations(4, ids, sizes, "d", derangements=True), strict=True)) > 1000


def test_a_derangement_of_one_option_is_refused():
    with pytest.raises(ValueError, match="two options"):
        permutations(0, ["a"], [1], derangements=True)
