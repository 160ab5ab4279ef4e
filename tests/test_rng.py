"""first_integers: the first draw of many per-item generators at once, the same numbers as item_rng's."""

from __future__ import annotations

import random

import pytest

from builders.core.items.rng import first_integers, item_rng


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
