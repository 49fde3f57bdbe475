"""Packing documents into fixed-length rows: best-fit-decreasing and two baselines.

Best-fit-decreasing (Ding et al. 2024, "Fewer Truncations Improve Language Modeling"):
documents longer than a row are split into ``seq_len`` chunks plus a remainder (the only
truncation), then all chunks are sorted by decreasing length and each goes into the open row
whose free space is the smallest that still fits it, or into a new row. The "smallest free space
>= n" query runs on a segment tree over free-space values ``0..seq_len`` holding the count of
rows with that much free space, so packing ``n`` chunks costs O(n log seq_len).

The baselines, used by ``bench/bench_packing.py`` on the same data:

* ``pack_pad`` (pad-to-length): every chunk in a row of its own, padded;
* ``pack_concat`` (concat-and-chunk): all documents concatenated and cut every ``seq_len``
  tokens (no padding, but documents straddle row boundaries).

Every packer returns a :class:`Packing`: for each row a list of ``(doc, start, length)`` chunks
(a slice of document ``doc``), plus :func:`packing_stats` to compare padding and truncation.
Library only::

    from proxytrain.packing import pack_best_fit, packing_stats
    packing = pack_best_fit([700, 300, 1500, 20], seq_len=1024)
    print(packing_stats(packing, [700, 300, 1500, 20]))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Chunk = tuple[int, int, int]  # (document index, start offset in the document, length)


@dataclass
class Packing:
    """Rows of chunks; every row holds at most ``seq_len`` tokens."""

    seq_len: int
    rows: list[list[Chunk]]

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class PackingStats:
    rows: int
    tokens: int  # document tokens placed in rows
    pad_tokens: int
    pad_fraction: float  # pad_tokens / (rows * seq_len)
    docs: int
    docs_split: int  # documents cut into more than one chunk
    docs_split_needlessly: int  # ... although they would have fit in one row


def _check(lengths: Sequence[int] | np.ndarray, seq_len: int) -> np.ndarray:
    if seq_len < 1:
        raise ValueError(f"seq_len must be >= 1, got {seq_len}")
    arr = np.asarray(lengths, dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError("lengths must be a 1-D sequence of document lengths")
    if arr.size and arr.min() < 0:
        raise ValueError("document lengths must be >= 0")
    return arr


def split_chunks(lengths: Sequence[int] | np.ndarray, seq_len: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split each document into ``seq_len`` pieces plus a remainder.

    Returns parallel arrays ``(doc, start, length)`` of all non-empty chunks, in document order.
    """
    arr = _check(lengths, seq_len)
    n_chunks = -(-arr // seq_len)  # ceil; 0 for empty documents
    doc = np.repeat(np.arange(arr.size, dtype=np.int64), n_chunks)
    first = np.cumsum(n_chunks) - n_chunks
    k = np.arange(doc.size, dtype=np.int64) - np.repeat(first, n_chunks)
    start = k * seq_len
    length = np.minimum(arr[doc] - start, seq_len)
    return doc, start, length


class _FreeSpaceTree:
    """Counts of open rows per free-space value 0..cap; finds the smallest value >= n in O(log cap)."""

    def __init__(self, cap: int) -> None:
        size = 1
        while size < cap + 1:
            size *= 2
        self.size = size
        self.tree = [0] * (2 * size)

    def add(self, value: int, delta: int) -> None:
        i = value + self.size
        tree = self.tree
        while i:
            tree[i] += delta
            i >>= 1

    def smallest_at_least(self, n: int) -> int:
        """Smallest free-space value >= n held by some row, or -1."""
        tree = self.tree
        i = n + self.size
        if tree[i]:
            return n
        while i > 1:
            if not i & 1 and tree[i + 1]:
                i += 1
                break
            i >>= 1
        else:
            return -1
        size = self.size
        while i < size:
            i <<= 1
            if not tree[i]:
                i += 1
        return i - size


def pack_best_fit(lengths: Sequence[int] | np.ndarray, seq_len: int) -> Packing:
    """Best-fit-decreasing packing of documents (split into chunks of at most ``seq_len``).

    Deterministic: ties between equal chunk lengths keep document order, and among rows with the
    same free space the most recently touched one is chosen.
    """
    doc, start, length = split_chunks(lengths, seq_len)
    order = np.argsort(-length, kind="stable")
    tree = _FreeSpaceTree(seq_len)
    # rows grouped by their free space; a stack per value keeps the choice deterministic
    by_free: list[list[int]] = [[] for _ in range(seq_len + 1)]
    rows: list[list[Chunk]] = []
    for d, s, n in zip(doc[order].tolist(), start[order].tolist(), length[order].tolist(), strict=True):
        free = tree.smallest_at_least(n)
        if free < 0:
            r = len(rows)
            rows.append([(d, s, n)])
            left = seq_len - n
        else:
            r = by_free[free].pop()
            tree.add(free, -1)
            rows[r].append((d, s, n))
            left = free - n
        if left > 0:  # a full row never receives anything again
            by_free[left].append(r)
            tree.add(left, 1)
    return Packing(seq_len=seq_len, rows=rows)


def pack_pad(lengths: Sequence[int] | np.ndarray, seq_len: int) -> Packing:
    """Pad-to-length baseline: one chunk per row."""
    doc, start, length = split_chunks(lengths, seq_len)
    rows = [[c] for c in zip(doc.tolist(), start.tolist(), length.tolist(), strict=True)]
    return Packing(seq_len=seq_len, rows=rows)


def pack_concat(lengths: Sequence[int] | np.ndarray, seq_len: int) -> Packing:
    """Concat-and-chunk baseline: the concatenation of all documents cut every ``seq_len`` tokens."""
    arr = _check(lengths, seq_len)
    rows: list[list[Chunk]] = []
    row: list[Chunk] = []
    free = seq_len
    for d, n in enumerate(arr.tolist()):
        s = 0
        while n > 0:
            take = min(n, free)
            row.append((d, s, take))
            s += take
            n -= take
            free -= take
            if free == 0:
                rows.append(row)
                row, free = [], seq_len
    if row:
        rows.append(row)
    return Packing(seq_len=seq_len, rows=rows)


def packing_stats(packing: Packing, lengths: Sequence[int] | np.ndarray) -> PackingStats:
    """Padding and truncation of a packing of documents of the given lengths."""
    arr = _check(lengths, packing.seq_len)
    pieces = np.zeros(arr.size, dtype=np.int64)
    tokens = 0
    for row in packing.rows:
        for d, _s, n in row:
            pieces[d] += 1
            tokens += n
    if tokens != int(arr.sum()):
        raise AssertionError(f"packing placed {tokens} tokens, documents hold {int(arr.sum())}")
    total = len(packing.rows) * packing.seq_len
    split = pieces > 1
    return PackingStats(
        rows=len(packing.rows), tokens=tokens, pad_tokens=total - tokens,
        pad_fraction=(total - tokens) / total if total else 0.0,
        docs=int(arr.size), docs_split=int(split.sum()),
        docs_split_needlessly=int((split & (arr <= packing.seq_len)).sum()))
