"""Text normalisation and vectorised word n-gram shingle hashing for deduplication.

Normalisation (shared by exact and near dedup): lower-case, then fold every run of whitespace to one
space (``" ".join(text.lower().split())``). A shingle is ``ngram`` consecutive normalised words.

Hashing is vectorised over a whole batch of documents with numpy, so Python never loops over words:
the batch is joined into one byte buffer, every word gets a 64-bit polynomial hash of its bytes
(``sum b_k P^k mod 2^64``, one ``add.reduceat``), mixed with the splitmix64 finaliser, and every shingle hash combines its
``ngram`` word hashes. The local and the Spark engine both call :func:`shingle_hashes`, so both
see the same 64-bit shingle hashes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xxhash

_P = np.uint64(0x100000001B3)  # FNV prime: odd, so invertible modulo 2**64
_Q = np.uint64(0x9E3779B97F4A7C15)
_SEP = 0x0A  # newline: never inside normalised text, so it separates documents in the buffer


def normalize(text: str) -> str:
    """Case- and whitespace-folded text: the form exact dedup hashes and shingles are cut from."""
    return " ".join(text.lower().split())


def fmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (vectorised, wrapping uint64 arithmetic); returns a new array."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def exact_hashes(normalized: Sequence[str]) -> np.ndarray:
    """128-bit xxh3 hash of every normalised text, as an ``(n, 2)`` uint64 array."""
    raw = b"".join(xxhash.xxh3_128_digest(t.encode("utf-8")) for t in normalized)
    return np.frombuffer(raw, dtype=np.uint64).reshape(-1, 2).copy()


def word_hashes(normalized: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Hash every word of every normalised text.

    Returns ``(hashes, offsets)``: uint64 word hashes of all documents, concatenated, and int64
    offsets of length ``len(normalized) + 1`` (document ``i`` owns ``hashes[offsets[i]:offsets[i+1]]``).
    """
    n_docs = len(normalized)
    buf = np.frombuffer("\n".join(normalized).encode("utf-8"), dtype=np.uint8)
    is_word = (buf != 0x20) & (buf != _SEP)
    edge = np.diff(is_word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edge == 1)
    if starts.size == 0:
        return np.zeros(0, np.uint64), np.zeros(n_docs + 1, np.int64)
    ends = np.flatnonzero(edge == -1)
    # document of each word: count separators before its start
    doc_of_word = np.searchsorted(np.flatnonzero(buf == _SEP), starts)
    offsets = np.zeros(n_docs + 1, np.int64)
    np.cumsum(np.bincount(doc_of_word, minlength=n_docs), out=offsets[1:])
    # polynomial hash of each word: sum_k byte_k * P**k, k = position inside the word
    marker = np.zeros(buf.size, np.int64)
    marker[starts] = starts
    rel = np.arange(buf.size, dtype=np.int64) - np.maximum.accumulate(marker)
    longest = int((ends - starts).max())
    table = np.full(longest, _P, dtype=np.uint64)
    table[0] = 1
    with np.errstate(over="ignore"):
        table = np.cumprod(table, dtype=np.uint64)
        vals = buf.astype(np.uint64)
        vals[~is_word] = 0
        rel[~is_word] = 0
        vals *= table[rel]
        raw = np.add.reduceat(vals, starts)
        raw += (ends - starts).astype(np.uint64) * _Q
    return fmix64(raw), offsets


def shingle_hashes(normalized: Sequence[str], ngram: int) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hash of every word ``ngram``-shingle of every normalised text.

    Returns ``(hashes, offsets)`` like :func:`word_hashes`. A document with fewer than ``ngram``
    words has no shingle (it is still handled by exact dedup; near dedup counts it as too short).
    """
    wh, woff = word_hashes(normalized)
    n_words = np.diff(woff)
    n_sh = np.maximum(n_words - (ngram - 1), 0)
    offsets = np.zeros(len(normalized) + 1, np.int64)
    np.cumsum(n_sh, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return np.zeros(0, np.uint64), offsets
    # global index of the first word of every shingle
    doc = np.repeat(np.arange(len(normalized)), n_sh)
    first = np.arange(total, dtype=np.int64) - offsets[doc] + woff[doc]
    h = wh[first].copy()
    with np.errstate(over="ignore"):
        for t in range(1, ngram):
            h = fmix64(h * _Q + wh[first + t])
    return h, offsets
