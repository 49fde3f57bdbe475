"""Connected components of duplicate edges and a deterministic representative per component.

Documents are nodes ``0..n-1`` numbered by *rank*: rank order is highest quality first (when a
quality column is present), then smallest id. A component's representative is its smallest rank,
which is exactly what min-label propagation (union-find with union by smaller root, or Spark's
large-star/small-star) converges to, so both engines name clusters alike.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def rank_order(ids: Sequence[str], quality: Sequence[float | None] | None = None) -> np.ndarray:
    """Permutation sorting documents by (quality desc, missing last, id asc); ``order[r]`` = row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    by_id = pc.sort_indices(pa.array(ids, pa.string())).to_numpy().astype(np.int64)
    if quality is None:
        return by_id
    q = np.array([np.nan if v is None else float(v) for v in quality], dtype=np.float64)
    missing = np.isnan(q)
    # stable sorts: id, then -quality (missing last)
    key = np.where(missing, np.inf, -q)[by_id]
    return by_id[np.argsort(key, kind="stable")]


def union_find(n: int, edges: np.ndarray) -> np.ndarray:
    """Root (smallest node) of every node's component; ``edges`` is ``(k, 2)`` int64.

    Vectorised union-find: hook every edge's larger root onto its smaller root, then compress paths
    by pointer jumping, until no edge joins two roots. Each round at least halves the work in
    practice; the result does not depend on edge order.
    """
    parent = np.arange(n, dtype=np.int64)
    if edges.size == 0:
        return parent
    u, v = edges[:, 0].astype(np.int64), edges[:, 1].astype(np.int64)
    while True:
        ru, rv = parent[u], parent[v]
        diff = ru != rv
        if not diff.any():
            return parent
        ru, rv = ru[diff], rv[diff]
        lo, hi = np.minimum(ru, rv), np.maximum(ru, rv)
        np.minimum.at(parent, hi, lo)
        while True:  # pointer jumping to full compression
            nxt = parent[parent]
            if np.array_equal(nxt, parent):
                break
            parent = nxt
        u, v = u[diff], v[diff]
