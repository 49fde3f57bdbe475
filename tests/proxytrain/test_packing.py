"""Best-fit-decreasing packing against a brute-force reference, and the two baselines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxytrain.packing import (
    pack_best_fit,
    pack_concat,
    pack_pad,
    packing_stats,
    split_chunks,
)


def reference_best_fit(lengths, seq_len):
    """O(n^2) best-fit-decreasing: scan every open row; ties go to the row most recently given that free space."""
    doc, start, length = split_chunks(lengths, seq_len)
    order = np.argsort(-length, kind="stable")
    rows, free, stamp = [], [], []
    t = 0
    for i in order:
        n = int(length[i])
        best = None
        for r in range(len(rows)):
            if free[r] >= n and (best is None or free[r] < free[best]
                                 or (free[r] == free[best] and stamp[r] > stamp[best])):
                best = r
        if best is None:
            rows.append([])
            free.append(seq_len)
            stamp.append(t)
            best = len(rows) - 1
        rows[best].append((int(doc[i]), int(start[i]), n))
        free[best] -= n
        t += 1
        stamp[best] = t
    return rows


def test_split_chunks_exact():
    doc, start, length = split_chunks([10, 0, 4, 8], seq_len=4)
    assert doc.tolist() == [0, 0, 0, 2, 3, 3]
    assert start.tolist() == [0, 4, 8, 0, 0, 4]
    assert length.tolist() == [4, 4, 2, 4, 4, 4]


def test_best_fit_small_example():
    p = pack_best_fit([6, 5, 4, 3, 2, 1], seq_len=7)
    assert p.rows == [[(0, 0, 6), (5, 0, 1)], [(1, 0, 5), (4, 0, 2)], [(2, 0, 4), (3, 0, 3)]]
    s = packing_stats(p, [6, 5, 4, 3, 2, 1])
    assert (s.rows, s.tokens, s.pad_tokens, s.docs_split) == (3, 21, 0, 0)


def test_long_document_is_the_only_split():
    lengths = [25, 3, 9, 2]
    p = pack_best_fit(lengths, seq_len=10)
    s = packing_stats(p, lengths)
    assert s.docs_split == 1 and s.docs_split_needlessly == 0
    pieces = sorted(c for row in p.rows for c in row if c[0] == 0)
    assert pieces == [(0, 0, 10), (0, 10, 10), (0, 20, 5)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=70), min_size=0, max_size=60),
       st.integers(min_value=1, max_value=32))
def test_matches_bruteforce_reference(lengths, seq_len):
    p = pack_best_fit(lengths, seq_len)
    assert p.rows == reference_best_fit(lengths, seq_len)
    for row in p.rows:
        assert 0 < sum(n for _, _, n in row) <= seq_len
    s = packing_stats(p, lengths)
    assert s.tokens == sum(lengths) and s.docs_split_needlessly == 0


def test_padding_below_one_percent_on_realistic_lengths():
    rng = np.random.default_rng(0)
    lengths = (rng.lognormal(5.5, 1.3, size=20000)).astype(int) + 2
    best = packing_stats(pack_best_fit(lengths, 1024), lengths)
    pad = packing_stats(pack_pad(lengths, 1024), lengths)
    concat = packing_stats(pack_concat(lengths, 1024), lengths)
    assert best.pad_fraction <= 0.01
    assert pad.pad_fraction > 0.5  # pad-to-length wastes most of each row
    assert concat.pad_tokens < 1024 and concat.docs_split_needlessly > 1000
    assert best.docs_split == int((lengths > 1024).sum()) and best.docs_split_needlessly == 0
    assert best.rows <= concat.rows * 1.01


def test_baselines_exact():
    lengths = [3, 5, 2]
    assert pack_pad(lengths, 4).rows == [[(0, 0, 3)], [(1, 0, 4)], [(1, 4, 1)], [(2, 0, 2)]]
    assert pack_concat(lengths, 4).rows == [[(0, 0, 3), (1, 0, 1)], [(1, 1, 4)], [(2, 0, 2)]]
    s = packing_stats(pack_concat(lengths, 4), lengths)
    assert (s.rows, s.pad_tokens, s.docs_split, s.docs_split_needlessly) == (3, 2, 1, 0)
    fits = [3, 3, 2]  # doc 1 fits in a row but concat-and-chunk cuts it
    assert pack_concat(fits, 4).rows == [[(0, 0, 3), (1, 0, 1)], [(1, 1, 2), (2, 0, 2)]]
    s = packing_stats(pack_concat(fits, 4), fits)
    assert (s.rows, s.pad_tokens, s.docs_split, s.docs_split_needlessly) == (2, 0, 1, 1)


def test_bad_input():
    with pytest.raises(ValueError, match="seq_len"):
        pack_best_fit([1, 2], 0)
    with pytest.raises(ValueError, match=">= 0"):
        pack_best_fit([1, -2], 8)
    assert pack_best_fit([], 8).rows == []
