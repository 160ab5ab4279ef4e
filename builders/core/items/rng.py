"""Per-item random generators.

Every random choice in a build comes from a generator seeded by (build seed, item id, purpose), so an
item's output does not depend on the order of items, on subsets, or on how many processes run.
:func:`first_integers` is the first draw of many such generators at once: the same numbers as
``item_rng(...).integers(size)``, without a generator object per item (WiCkeD MMLU draws 67,000 of them);
:func:`permutations` is their ``permutation(size)`` (a perturbation build draws 42,000).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    import numpy as np


def _key(seed: int, item_id: str, purpose: Sequence[object]) -> bytes:
    return hashlib.sha256("\x1f".join([str(int(seed)), item_id, *map(str, purpose)]).encode("utf-8")).digest()


def item_rng(seed: int, item_id: str, *purpose: object) -> np.random.Generator:
    import numpy as np  # here, so that a command line parses its arguments without numpy

    digest = _key(seed, item_id, purpose)
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))


# numpy's SeedSequence (pool of 4 words) and PCG64 (XSL-RR 128/64), as numpy/random/bit_generator.pyx and pcg64.h
# define them; tests/test_rng.py holds them to item_rng on many keys and sizes
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_PCG_MULTIPLIER = (2549297995355413924 << 64) + 4865540595714422341
_MASK_64, _MASK_128 = (1 << 64) - 1, (1 << 128) - 1
FEW_ITEMS = 32  # below this many items, each is seeded by numpy's SeedSequence


def _initial_states(seed: int, item_ids: Sequence[str], purpose: Sequence[object]) -> list[tuple[int, int]]:
    """Each item's PCG64 (state, increment) as ``item_rng`` seeds it, before its first output: the SeedSequence
    words of every item mixed at once, as arrays."""
    import numpy as np

    if len(item_ids) < FEW_ITEMS:  # numpy's own seeding, an item at a time: the arrays' operations cost more
        return [_seeded(np.random.SeedSequence(int.from_bytes(_key(seed, i, purpose)[:16], "little"))
                        .generate_state(4, np.uint64).tolist()) for i in item_ids]
    # the entropy: the key's first 16 bytes as one integer, which SeedSequence reads as 4 little-endian words (a
    # shorter integer's missing high words mix as zeros would)
    entropy = np.frombuffer(b"".join(_key(seed, i, purpose)[:16] for i in item_ids), dtype="<u4").reshape(-1, 4)
    entropy = entropy.astype(np.uint32)
    hash_const = _INIT_A

    def hashmix(value: np.ndarray) -> np.ndarray:
        nonlocal hash_const
        value = value ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_A) & 0xFFFFFFFF
        value = value * np.uint32(hash_const)
        return value ^ (value >> np.uint32(16))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result = np.uint32(_MIX_MULT_L) * x - np.uint32(_MIX_MULT_R) * y
        return result ^ (result >> np.uint32(16))

    pool = [hashmix(entropy[:, i]) for i in range(4)]
    for source in range(4):
        for target in range(4):
            if source != target:
                pool[target] = mix(pool[target], hashmix(pool[source]))
    words = []
    hash_const = _INIT_B
    for i in range(8):  # generate_state(4, uint64): 8 words, the pool read in turn
        value = pool[i % 4] ^ np.uint32(hash_const)
        hash_const = (hash_const * _MULT_B) & 0xFFFFFFFF
        value = value * np.uint32(hash_const)
        words.append(value ^ (value >> np.uint32(16)))
    return [_seeded(state) for state in np.stack(words, axis=1).astype(np.uint32).view("<u8").tolist()]


def _seeded(words: Sequence[int]) -> tuple[int, int]:
    """PCG64's (state, increment) from the 4 words of its SeedSequence, as ``pcg_setseq_128_srandom_r`` sets
    them: step, add the seed, step."""
    high, low, inc_high, inc_low = words
    inc = ((((inc_high << 64) | inc_low) << 1) | 1) & _MASK_128
    return ((inc + ((high << 64) | low)) * _PCG_MULTIPLIER + inc) & _MASK_128, inc


class _Outputs:
    """One generator's outputs, as PCG64 gives them: 64 bits a step, and 32 at a time as ``next_uint32`` halves a
    step's output (the low half first, the high half kept for the next call)."""

    __slots__ = ("state", "inc", "kept")

    def __init__(self, state: int, inc: int):
        self.state, self.inc, self.kept = state, inc, -1

    def next64(self) -> int:
        self.state = current = (self.state * _PCG_MULTIPLIER + self.inc) & _MASK_128
        rotation = current >> 122
        mixed = ((current >> 64) ^ current) & _MASK_64
        return ((mixed >> rotation) | (mixed << (64 - rotation))) & _MASK_64

    def next32(self) -> int:
        if self.kept >= 0:
            value, self.kept = self.kept, -1
            return value
        output = self.next64()
        self.kept = output >> 32
        return output & 0xFFFFFFFF

    def interval(self, most: int) -> int:
        """numpy's ``random_interval``: uniform in [0, most] by masked rejection."""
        mask = (1 << most.bit_length()) - 1
        while True:
            value = self.next32() & mask
            if value <= most:
                return value

    def permutation(self, size: int) -> list[int]:
        """``Generator.permutation(size)``: Fisher-Yates from the last position down, as numpy's ``_shuffle_raw``."""
        order = list(range(size))
        for i in range(size - 1, 0, -1):
            j = self.interval(i)
            order[i], order[j] = order[j], order[i]
        return order


def permutations(seed: int, item_ids: Sequence[str], sizes: Sequence[int], *purpose: object,
                 derangements: bool = False) -> list[list[int]]:
    """``[[int(i) for i in item_rng(seed, i, *purpose).permutation(n)] for i, n in zip(item_ids, sizes)]``,
    the generators seeded at once. ``derangements``: each generator's first permutation without a fixed point,
    drawn again until there is one (sizes of 2 or more)."""
    if derangements and any(size < 2 for size in sizes):
        raise ValueError("a derangement needs two options or more")
    made = []
    for (state, inc), size in zip(_initial_states(seed, item_ids, purpose), sizes, strict=True):
        outputs = _Outputs(state, inc)
        order = outputs.permutation(size)
        while derangements and any(p == i for i, p in enumerate(order)):
            order = outputs.permutation(size)
        made.append(order)
    return made


def first_integers(seed: int, item_ids: Sequence[str], sizes: Sequence[int], *purpose: object) -> list[int]:
    """``[int(item_rng(seed, i, *purpose).integers(n)) for i, n in zip(item_ids, sizes)]``, computed for every item
    at once: the seed words mixed as arrays, each generator's first output in integer arithmetic."""
    drawn = []
    for (state, inc), size in zip(_initial_states(seed, item_ids, purpose), sizes, strict=True):
        if size <= 1:
            drawn.append(0)  # integers(1) draws nothing
            continue
        scaled = (_Outputs(state, inc).next64() & 0xFFFFFFFF) * size  # Lemire's bounded draw on the low 32 bits
        if scaled & 0xFFFFFFFF < size:  # a draw Lemire may reject (about size in 2**32): the generator decides
            drawn.append(int(item_rng(seed, item_ids[len(drawn)], *purpose).integers(size)))
        else:
            drawn.append(scaled >> 32)
    return drawn
