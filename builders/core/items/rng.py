"""Per-item random generators.

Every random choice in a build comes from a generator seeded by (build seed, item id, purpose), so an
item's output does not depend on the order of items, on subsets, or on how many processes run.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def item_rng(seed: int, item_id: str, *purpose: object) -> np.random.Generator:
    import numpy as np  # here, so that a command line parses its arguments without numpy

    key = "\x1f".join([str(int(seed)), item_id, *map(str, purpose)])
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))
