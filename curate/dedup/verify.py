"""Exact word-shingle Jaccard of candidate pairs (cuts LSH false positives).

Shingle sets are recomputed, with the same hashes as signatures, only for documents that appear in
a candidate pair. Intersections are counted vectorised: for a chunk of pairs, the tagged shingles
of both sides are concatenated and sorted, and a (pair, shingle) that occurs twice is shared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from curate.dedup.shingles import normalize, shingle_hashes

_PAIR_CHUNK = 4096


def shingle_sets(texts: Sequence[str], ngram: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique shingle hashes per text, flat, with offsets."""
    h, off = shingle_hashes([normalize(t) if t else "" for t in texts], ngram)
    parts = [np.unique(h[off[i]:off[i + 1]]) for i in range(len(texts))]
    sizes = np.array([p.size for p in parts], dtype=np.int64)
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate(parts) if parts else np.zeros(0, np.uint64)
    return flat, offsets


def pair_jaccard(pairs: np.ndarray, flat: np.ndarray, offsets: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Jaccard of every pair; ``slot[doc]`` is the doc's index into ``offsets``."""
    out = np.zeros(len(pairs), dtype=np.float64)
    sizes = np.diff(offsets)
    for c0 in range(0, len(pairs), _PAIR_CHUNK):
        chunk = pairs[c0:c0 + _PAIR_CHUNK]
        su, sv = slot[chunk[:, 0]], slot[chunk[:, 1]]
        nu, nv = sizes[su], sizes[sv]
        tags, vals = [], []
        for side, n in ((su, nu), (sv, nv)):
            tag = np.repeat(np.arange(len(chunk)), n)
            start = np.repeat(offsets[side], n)
            pos = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n) + start
            tags.append(tag)
            vals.append(flat[pos])
        tag = np.concatenate(tags)
        val = np.concatenate(vals)
        order = np.lexsort((val, tag))
        t, v = tag[order], val[order]
        same = (t[1:] == t[:-1]) & (v[1:] == v[:-1])
        inter = np.bincount(t[1:][same], minlength=len(chunk))
        union = nu + nv - inter
        out[c0:c0 + len(chunk)] = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
    return out


def verify_pairs(pairs: np.ndarray, text_of: Callable[[np.ndarray], list[str]], *, ngram: int,
                 threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Keep pairs whose exact shingle Jaccard is >= ``threshold``; returns (kept pairs, their Jaccard)."""
    if len(pairs) == 0:
        return pairs, np.zeros(0)
    docs = np.unique(pairs)
    flat, offsets = shingle_sets(text_of(docs), ngram)
    slot = np.full(int(docs.max()) + 1, -1, dtype=np.int64)
    slot[docs] = np.arange(docs.size)
    jac = pair_jaccard(pairs, flat, offsets, slot)
    keep = jac >= threshold
    return pairs[keep], jac[keep]
