"""Text normalisation and vectorised word n-gram shingle hashing for deduplication.

Normalisation (shared by exact and near dedup): lower-case, then fold every run of whitespace to one
space (``" ".join(text.lower().split())``). A shingle is ``ngram`` consecutive normalised words.

Hashing is vectorised over a whole batch of documents with numpy, so Python never loops over words:
the batch is joined into one byte buffer, every word is read 8 bytes at a time (an unaligned uint64
view) and mixed with the splitmix64 finaliser, and every shingle hash combines its ``ngram`` word
hashes. The local and the Spark engine both call :func:`shingle_hashes`, so both
see the same 64-bit shingle hashes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xxhash

from curate import native

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


def exact_hashes_raw(raw: bytes, starts: Sequence[int], ends: Sequence[int]) -> np.ndarray:
    """:func:`exact_hashes` of texts given as their UTF-8 in ``raw[starts[i]:ends[i]]``."""
    view = memoryview(raw)
    digests = b"".join(xxhash.xxh3_128_digest(view[s:e]) for s, e in zip(starts, ends, strict=True))
    return np.frombuffer(digests, dtype=np.uint64).reshape(-1, 2).copy()


_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [2**64 - 1], dtype=np.uint64)
_LONG_WORD = 256  # longer words (rare: base64 blobs, long URLs) are hashed one by one with xxh64


def word_hashes(normalized: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Hash every word of every normalised text.

    Returns ``(hashes, offsets)``: uint64 word hashes of all documents, concatenated, and int64
    offsets of length ``len(normalized) + 1`` (document ``i`` owns ``hashes[offsets[i]:offsets[i+1]]``).
    A word is read 8 bytes at a time through an unaligned uint64 view of the buffer (stride 1), so
    the cost is a few operations per word, not per byte; with the compiled module
    (``curate._native.dedup_word_hashes``) in one pass over the buffer, the same hashes.
    """
    n_docs = len(normalized)
    raw = "\n".join(normalized).encode("utf-8")
    if native.compiled is not None and n_docs:  # (no text: the joined buffer would read as one empty text)
        return word_hashes_raw(raw)
    return _word_hashes(raw, n_docs)


def word_hashes_raw(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """:func:`word_hashes` of the normalised texts joined by newlines and encoded (at least one
    text), by the compiled kernel."""
    hb, ob, longs = native.compiled.dedup_word_hashes(raw, _LONG_WORD)
    h = np.frombuffer(hb, np.uint64)
    for w, s0, n in longs:  # words longer than _LONG_WORD bytes
        h[w] = fmix64(np.array([xxhash.xxh64_intdigest(raw[s0:s0 + n])], np.uint64) + h[w])[0]
    return h, np.frombuffer(ob, np.int64)


def _word_hashes(raw: bytes, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`word_hashes` of the joined, encoded texts (numpy)."""
    buf = np.frombuffer(raw + b"\0" * 8, dtype=np.uint8)
    body = buf[: len(raw)]
    is_word = (body != 0x20) & (body != _SEP)
    edge = np.diff(is_word.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edge == 1)
    if starts.size == 0:
        return np.zeros(0, np.uint64), np.zeros(n_docs + 1, np.int64)
    lengths = np.flatnonzero(edge == -1) - starts
    # document of each word: count separators before its start
    doc_of_word = np.searchsorted(np.flatnonzero(body == _SEP), starts)
    offsets = np.zeros(n_docs + 1, np.int64)
    np.cumsum(np.bincount(doc_of_word, minlength=n_docs), out=offsets[1:])
    words8 = np.ndarray(shape=(len(raw) + 1,), dtype="<u8", buffer=buf, offset=0, strides=(1,))
    with np.errstate(over="ignore"):
        h = lengths.astype(np.uint64) * _Q
        live = np.arange(starts.size)
        for k in range(0, _LONG_WORD, 8):
            rem = lengths[live] - k
            chunk = words8[starts[live] + k] & _MASKS[np.minimum(rem, 8)]
            h[live] = fmix64(h[live] + chunk)
            live = live[rem > 8]
            if live.size == 0:
                break
        for w in live:  # words longer than _LONG_WORD bytes
            s0 = int(starts[w])
            h[w] = fmix64(np.array([xxhash.xxh64_intdigest(raw[s0:s0 + int(lengths[w])])], np.uint64)
                          + h[w])[0]
    return h, offsets


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
