"""Shingle hashing, signatures and band keys: equality, Jaccard estimation, batch independence."""

from __future__ import annotations

import numpy as np

from curate.dedup.minhash import band_keys, hash_batch, signatures
from curate.dedup.shingles import normalize, shingle_hashes, word_hashes

from .conftest import pair_with_jaccard


def test_normalize_folds_case_and_whitespace() -> None:
    assert normalize("  Hello\tWORLD \n again ") == "hello world again"
    assert normalize("\n \t") == ""


def test_equal_shingles_hash_equal_and_offsets() -> None:
    h, off = shingle_hashes(["a b c d e f", "x a b c d e", "", "a b c"], 5)
    assert off.tolist() == [0, 2, 4, 4, 4]  # 2 shingles, 2 shingles, none, too short
    assert h[0] == h[3]  # "a b c d e" in both documents
    assert len(set(h.tolist())) == 3


def test_word_hashes_distinguish_words_and_non_ascii() -> None:
    h, off = word_hashes(["ab ba abc é e", "ab"])
    assert off.tolist() == [0, 5, 6]
    assert len(set(h[:5].tolist())) == 5 and h[0] == h[5]


def test_long_words_hash_by_all_their_bytes() -> None:
    a, b = "x" * 300 + "a", "x" * 300 + "b"  # differ after the 256 bytes read 8 at a time
    c, d = "y" * 20 + "a", "y" * 20 + "b"
    h, _ = word_hashes([f"{a} {b} {a} {c} {d} {c}"])
    assert h[0] != h[1] and h[0] == h[2] and h[3] != h[4] and h[3] == h[5]


def test_signature_estimates_jaccard() -> None:
    a, b, jac = pair_with_jaccard("t", 400, 300)
    h, off = shingle_hashes([a, b], 5)
    sig = signatures(h, off, num_perm=512, seed=3)
    est = float((sig[0] == sig[1]).mean())
    assert abs(est - jac) < 4 * np.sqrt(jac * (1 - jac) / 512)


def test_batches_are_independent_of_grouping() -> None:
    texts = [pair_with_jaccard(f"g{k}", 60 + k, 40)[k % 2] for k in range(9)] + ["", "short text"]
    kw = {"ngram": 5, "num_perm": 64, "seed": 11, "bands": 8, "rows": 8}
    whole = hash_batch(texts, **kw)
    parts = [hash_batch(texts[i:i + 3], **kw) for i in range(0, len(texts), 3)]
    for key in ("keys", "sig", "exact", "n_shingles"):
        axis = 1 if key == "keys" else 0
        assert np.array_equal(whole[key], np.concatenate([p[key] for p in parts], axis=axis))
    assert whole["n_shingles"][-2:].tolist() == [0, 0]
    assert (whole["sig"][-1] == 0xFFFFFFFF).all()


def test_band_keys_match_iff_band_rows_match() -> None:
    sig = np.array([[1, 2, 3, 4], [1, 2, 9, 9], [7, 2, 3, 4]], dtype=np.uint32)
    k = band_keys(sig, bands=2, rows=2)
    assert k[0, 0] == k[0, 1] and k[0, 0] != k[0, 2]
    assert k[1, 0] == k[1, 2] and k[1, 0] != k[1, 1]
