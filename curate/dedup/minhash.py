"""Vectorised MinHash signatures and LSH band keys (numpy), shared by the local and Spark engines.

Permutation ``k`` maps a 64-bit shingle hash ``x`` to ``(a_k * x + b_k) mod 2**64`` (``a_k`` odd),
and the signature keeps the top 32 bits of the minimum (multiply-shift hashing; taking the top bits
after the minimum is the same as before it, and saves a pass). ``a``/``b`` come from
``numpy.random.default_rng(seed)``: same seed, same signatures, on every engine and worker.

:func:`signatures` works on fixed-size chunks of the flat shingle array (``perm x chunk`` uint64
temporaries), so memory does not grow with document length. :func:`band_keys` hashes each band's
``rows`` values into one uint64 key; two documents share a bucket in band ``j`` iff their keys match.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from curate import native
from curate.dedup.shingles import (
    exact_hashes,
    exact_hashes_raw,
    fmix64,
    normalize,
    shingle_hashes,
    word_hashes_raw,
)

EMPTY = np.uint32(0xFFFFFFFF)
_CHUNK = 4096


@lru_cache(maxsize=8)
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` coefficients, shape ``(num_perm, 1)`` uint64, ``a`` odd."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2**64, size=(num_perm, 1), dtype=np.uint64, endpoint=False) | np.uint64(1)
    b = rng.integers(0, 2**64, size=(num_perm, 1), dtype=np.uint64, endpoint=False)
    return a, b


def signatures(hashes: np.ndarray, offsets: np.ndarray, *, num_perm: int, seed: int) -> np.ndarray:
    """MinHash signature of every document: ``(n_docs, num_perm)`` uint32.

    A document without shingles gets all ``0xFFFFFFFF`` (callers keep it out of LSH).
    """
    a, b = permutations(num_perm, seed)
    n_docs = len(offsets) - 1
    sig = np.full((num_perm, n_docs), np.iinfo(np.uint64).max, dtype=np.uint64)
    total = int(offsets[-1])
    if total:
        doc_of = np.repeat(np.arange(n_docs), np.diff(offsets))
        tmp = np.empty((num_perm, _CHUNK), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for s0 in range(0, total, _CHUNK):
                s1 = min(s0 + _CHUNK, total)
                x = hashes[s0:s1]
                h = tmp[:, : s1 - s0]
                np.multiply(a, x, out=h)
                h += b
                d = doc_of[s0:s1]
                seg = np.flatnonzero(np.diff(d, prepend=-1))
                mins = np.minimum.reduceat(h, seg, axis=1)
                docs = d[seg]
                np.minimum(sig[:, docs], mins, out=mins)
                sig[:, docs] = mins
    return np.ascontiguousarray((sig >> np.uint64(32)).astype(np.uint32).T)


def band_keys(sig: np.ndarray, *, bands: int, rows: int) -> np.ndarray:
    """One uint64 key per (band, document): ``(bands, n_docs)``."""
    n_docs = sig.shape[0]
    keys = np.empty((bands, n_docs), dtype=np.uint64)
    s = sig.astype(np.uint64)
    with np.errstate(over="ignore"):
        for j in range(bands):
            k = np.full(n_docs, np.uint64(0x9E3779B97F4A7C15) * np.uint64(j + 1), dtype=np.uint64)
            for r in range(rows):
                k = fmix64(k ^ s[:, j * rows + r])
            keys[j] = k
    return keys


def hash_batch(texts: Sequence[str | None], *, ngram: int, num_perm: int, seed: int, bands: int,
               rows: int) -> dict[str, np.ndarray]:
    """Everything dedup needs from one batch of raw texts (None counts as empty).

    Returns ``exact`` ``(n, 2)`` uint64, ``n_shingles`` ``(n,)`` int64, ``n_words`` ``(n,)`` int64,
    ``keys`` ``(bands, n)`` uint64 band keys.
    """
    got = native.compiled.dedup_normalize(list(texts)) if native.compiled is not None and len(texts) else None
    if got is not None:  # the same normal forms, hashes and signatures from compiled kernels
        raw, starts_b, n_words_b = got
        starts = np.frombuffer(starts_b, np.int64)
        ends = starts[1:] - 1  # each text ends before the newline that starts the next
        ends[-1] = starts[-1]
        wh, woff = word_hashes_raw(raw)
        a, b = permutations(num_perm, seed)
        sig_buf, n_buf = native.compiled.minhash(wh, woff, ngram, a.ravel(), b.ravel())
        sig = np.frombuffer(sig_buf, np.uint32).reshape(len(texts), num_perm)
        return {"exact": exact_hashes_raw(raw, starts[:-1].tolist(), ends.tolist()),
                "n_shingles": np.frombuffer(n_buf, np.int64).copy(), "n_words": np.frombuffer(n_words_b, np.int64).copy(),
                "keys": band_keys(sig, bands=bands, rows=rows), "sig": sig}
    norm = [normalize(t) if t else "" for t in texts]
    hashes, offsets = shingle_hashes(norm, ngram)
    sig = signatures(hashes, offsets, num_perm=num_perm, seed=seed)
    n_words = np.array([t.count(" ") + 1 if t else 0 for t in norm], dtype=np.int64)
    return {"exact": exact_hashes(norm), "n_shingles": np.diff(offsets), "n_words": n_words,
            "keys": band_keys(sig, bands=bands, rows=rows), "sig": sig}
