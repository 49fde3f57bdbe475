"""Exact deduplication: groups of identical case- and whitespace-folded text (128-bit xxh3).

:func:`exact_roots` maps every document (numbered by rank, see ``components``) to the smallest rank
with the same normalised-text hash. Sorting the hashes, not a dict, keeps it vectorised.
"""

from __future__ import annotations

import numpy as np


def exact_roots(hashes: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
    """``root[i]`` = smallest ``j`` with ``hashes[j] == hashes[i]`` (``(n, 2)`` uint64).

    Rows where ``valid`` is False (e.g. empty text) are their own root.
    """
    n = hashes.shape[0]
    root = np.arange(n, dtype=np.int64)
    if n < 2:
        return root
    idx = np.arange(n) if valid is None else np.flatnonzero(valid)
    h = hashes[idx]
    order = idx[np.lexsort((idx, h[:, 1], h[:, 0]))]
    hs = hashes[order]
    new_group = np.ones(order.size, dtype=bool)
    new_group[1:] = np.any(hs[1:] != hs[:-1], axis=1)
    group_first = order[np.flatnonzero(new_group)]
    group_of = np.cumsum(new_group) - 1
    root[order] = group_first[group_of]
    return root
