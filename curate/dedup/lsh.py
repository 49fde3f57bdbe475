"""LSH banding with band keys spilled to disk, and candidate pairs by sorting.

:class:`BandSpill` writes each batch's ``(bands, n)`` uint64 keys and the global document indices
to one ``.npy`` pair in a folder; :meth:`BandSpill.candidate_pairs` then reads ONE band at a time
(memory-mapped), sorts its keys and turns every run of equal keys (a bucket) into pairs. Memory is
one band of keys (16 bytes per document), never a Python dict of all buckets.

A bucket of up to ``max_bucket_pairs`` documents emits all its pairs (what datasketch's
``MinHashLSH.query`` would return); a larger one (boilerplate) emits a star around its smallest
document, enough for connected components without quadratic blow-up.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np


def bucket_pairs(keys: np.ndarray, docs: np.ndarray, *, max_bucket_pairs: int) -> np.ndarray:
    """Pairs ``(k, 2)`` int64 (smaller doc first) of documents sharing a key in one band."""
    if keys.size < 2:
        return np.zeros((0, 2), np.int64)
    order = np.lexsort((docs, keys))
    k = keys[order]
    d = docs[order]
    brk = np.flatnonzero(k[1:] != k[:-1]) + 1
    starts = np.concatenate(([0], brk))
    sizes = np.diff(np.concatenate((starts, [k.size])))
    multi = sizes > 1
    starts, sizes = starts[multi], sizes[multi]
    if starts.size == 0:
        return np.zeros((0, 2), np.int64)
    out = []
    small = sizes <= max_bucket_pairs
    # all pairs of small buckets, grouped by size so each group is one vectorised step
    for size in np.unique(sizes[small]):
        st = starts[small & (sizes == size)]
        iu, ju = np.triu_indices(int(size), k=1)
        out.append(np.stack((d[st[:, None] + iu].ravel(), d[st[:, None] + ju].ravel()), axis=1))
    # stars for large buckets (d is sorted inside a bucket, so the first member is the smallest)
    for st, size in zip(starts[~small], sizes[~small], strict=True):
        members = d[st + 1: st + size]
        out.append(np.stack((np.full(members.size, d[st]), members), axis=1))
    return np.concatenate(out).astype(np.int64)


def unique_pairs(pairs: np.ndarray) -> np.ndarray:
    """Sorted unique rows of a ``(k, 2)`` pair array."""
    if pairs.size == 0:
        return pairs.reshape(0, 2)
    return np.unique(pairs, axis=0)


class BandSpill:
    """Band keys of many batches, on disk; one band in memory at a time."""

    def __init__(self, folder: str | Path | None = None) -> None:
        if folder:
            self._tmp = None
            self.folder = Path(folder)
            self.folder.mkdir(parents=True, exist_ok=True)
        else:
            self._tmp = tempfile.TemporaryDirectory(prefix="corpusmix-dedup-")
            self.folder = Path(self._tmp.name)
        self._parts: list[tuple[Path, Path]] = []
        self.bands: int | None = None

    def add(self, keys: np.ndarray, docs: np.ndarray) -> None:
        """Spill one batch: ``keys`` ``(bands, n)`` uint64, ``docs`` ``(n,)`` global doc indices."""
        if docs.size == 0:
            return
        self.bands = keys.shape[0]
        i = len(self._parts)
        kp, dp = self.folder / f"keys-{i:06d}.npy", self.folder / f"docs-{i:06d}.npy"
        np.save(kp, np.ascontiguousarray(keys, dtype=np.uint64))
        np.save(dp, np.asarray(docs, dtype=np.int64))
        self._parts.append((kp, dp))

    def band(self, j: int, keep: np.ndarray | None = None, *, remap: np.ndarray | None = None,
             part: tuple[int, int] = (0, 1)) -> tuple[np.ndarray, np.ndarray]:
        """Keys and doc indices of band ``j``: docs renumbered by ``remap[doc]`` when given, only those
        with ``keep[doc]`` (after renumbering), and only keys with ``key % part[1] == part[0]``.

        Batches are read one at a time (memory-mapped), so memory is what is returned."""
        q, n_parts = part
        keys_out, docs_out = [np.zeros(0, np.uint64)], [np.zeros(0, np.int64)]
        for kp, dp in self._parts:
            keys = np.load(kp, mmap_mode="r")[j]
            docs = np.load(dp)
            if remap is not None:
                docs = remap[docs]
            m = np.ones(docs.size, bool) if keep is None else keep[docs]
            if n_parts > 1:
                m &= (keys % np.uint64(n_parts)) == np.uint64(q)
            keys_out.append(np.asarray(keys[m]))
            docs_out.append(docs[m])
        return np.concatenate(keys_out), np.concatenate(docs_out)

    def candidate_pairs(self, *, max_bucket_pairs: int, keep: np.ndarray | None = None,
                        remap: np.ndarray | None = None, max_keys: int = 0) -> np.ndarray:
        """Unique candidate pairs over all bands (among docs with ``keep[doc]`` when given).

        ``max_keys`` > 0 bounds memory: a band is grouped in ``ceil(kept docs / max_keys)`` passes,
        each over the keys of one residue class (equal keys share a class, so buckets stay whole)."""
        n_keep = int(keep.sum()) if keep is not None else sum(int(np.load(dp, mmap_mode="r").size)
                                                               for _, dp in self._parts)
        n_parts = max(1, -(-n_keep // max_keys)) if max_keys > 0 else 1
        found = [unique_pairs(bucket_pairs(*self.band(j, keep, remap=remap, part=(q, n_parts)),
                                           max_bucket_pairs=max_bucket_pairs))
                 for j in range(self.bands or 0) for q in range(n_parts)]
        return unique_pairs(np.concatenate(found)) if found else np.zeros((0, 2), np.int64)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> BandSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
