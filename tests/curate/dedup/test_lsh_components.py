"""Banding catches pairs as the S-curve predicts; union-find and bucket pairs are exact."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from curate.dedup import DedupConfig, dedup_table
from curate.dedup.components import rank_order, union_find
from curate.dedup.lsh import BandSpill, bucket_pairs

from .conftest import pair_with_jaccard


def test_bands_rows_follow_datasketch() -> None:
    from datasketch.lsh import _optimal_param

    assert DedupConfig(fp_weight=0.5, fn_weight=0.5).bands_rows() == _optimal_param(0.8, 128, 0.5, 0.5) == (9, 13)
    assert DedupConfig(fp_weight=0.2, fn_weight=0.8).bands_rows() == (12, 10)


def test_pairs_at_known_jaccard_caught_as_banding_predicts() -> None:
    cfg = DedupConfig(verify=False, exact=False, fp_weight=0.5, fn_weight=0.5, num_perm=64)
    b, r = cfg.bands_rows()
    per_level = 60
    levels = [(100, 45), (100, 75), (100, 88), (100, 97)]  # (length, shared words)
    rows, truth = [], []
    for lv, (length, shared) in enumerate(levels):
        for k in range(per_level):
            a, c, jac = pair_with_jaccard(f"l{lv}p{k}x", length, shared)
            rows += [{"id": f"{lv}/{k:03d}/a", "text": a}, {"id": f"{lv}/{k:03d}/b", "text": c}]
        truth.append(jac)
    out = dedup_table(pa.Table.from_pylist(rows), cfg)
    dup = np.array(out.column("is_duplicate").to_pylist()).reshape(len(levels), per_level, 2)
    caught = dup[:, :, 1].mean(axis=1)
    for jac, rate in zip(truth, caught, strict=True):
        p = 1 - (1 - jac ** r) ** b
        tol = 4 * np.sqrt(p * (1 - p) / per_level) + 0.02
        assert abs(rate - p) <= tol, (jac, rate, p)
    assert caught[0] < 0.1 and caught[-1] > 0.9


def test_bucket_pairs_all_pairs_and_star() -> None:
    keys = np.array([5, 1, 5, 5, 2, 1], np.uint64)
    docs = np.arange(6)
    assert bucket_pairs(keys, docs, max_bucket_pairs=8).tolist() == [[1, 5], [0, 2], [0, 3], [2, 3]]
    assert bucket_pairs(keys, docs, max_bucket_pairs=2).tolist() == [[1, 5], [0, 2], [0, 3]]


def test_band_spill_reads_one_band_across_batches(tmp_path) -> None:
    with BandSpill(tmp_path) as spill:
        spill.add(np.array([[1, 2], [3, 4]], np.uint64), np.array([0, 1]))
        spill.add(np.array([[2, 9], [3, 8]], np.uint64), np.array([2, 3]))
        keys, docs = spill.band(1)
        assert keys.tolist() == [3, 4, 3, 8] and docs.tolist() == [0, 1, 2, 3]
        assert spill.candidate_pairs(max_bucket_pairs=8).tolist() == [[0, 2], [1, 2]]
        keep = np.array([True, True, False, True])
        assert spill.candidate_pairs(max_bucket_pairs=8, keep=keep).tolist() == []


def test_union_find_matches_scipy_components() -> None:
    rng = np.random.default_rng(0)
    n = 5000
    edges = rng.integers(0, n, size=(4000, 2))
    root = union_find(n, edges)
    k, lab = connected_components(sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])),
                                                shape=(n, n)), directed=False)
    first = np.full(k, n)
    np.minimum.at(first, lab, np.arange(n))
    assert np.array_equal(root, first[lab])
    assert np.array_equal(union_find(n, edges[::-1]), root)  # edge order does not matter


def test_rank_order_quality_then_id() -> None:
    order = rank_order(["b", "a", "c", "d"], [0.5, 0.5, None, 0.9])
    assert order.tolist() == [3, 1, 0, 2]
    assert rank_order(["b", "a", "c"]).tolist() == [1, 0, 2]
