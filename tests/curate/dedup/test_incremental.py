"""Incremental dedup: a new batch against a persisted index of an earlier corpus version."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from corpusmix.config import ConfigError
from curate.dedup import DedupConfig, dedup_table
from curate.dedup.incremental import build_index, dedup_against_index
from curate.dedup.metrics import cluster_pairs


def test_new_batch_against_index_matches_a_full_run(real_docs: pa.Table, tmp_path) -> None:
    cfg = DedupConfig()
    shuffled = real_docs.take(np.random.default_rng(3).permutation(real_docs.num_rows))
    k = shuffled.num_rows // 2
    old, new = shuffled.slice(0, k), shuffled.slice(k)
    old_out = dedup_table(old, cfg)
    assert build_index(old_out, tmp_path / "idx", cfg)["docs"] == k
    stats: dict = {}
    new_out = dedup_against_index(new, tmp_path / "idx", cfg, stats=stats)
    assert new_out.num_rows == new.num_rows and stats["matched_old"] > 0
    # old documents always win: a new document matched to the old corpus points at an old cluster
    old_clusters = set(old_out.column("dup_cluster").to_pylist())
    for r in new_out.to_pylist():
        if r["dup_cluster"] in old_clusters:
            assert r["is_duplicate"] and r["dup_kind"] in ("exact", "near")
    # the same partition as one run over old + new (no document here bridges two old clusters)
    ids = old_out.column("id").to_pylist() + new_out.column("id").to_pylist()
    labels = old_out.column("dup_cluster").to_pylist() + new_out.column("dup_cluster").to_pylist()
    full = dedup_table(shuffled, cfg)
    assert cluster_pairs(ids, labels) == cluster_pairs(full.column("id").to_pylist(),
                                                       full.column("dup_cluster").to_pylist())


def test_index_refuses_other_params_and_reused_ids(real_docs: pa.Table, tmp_path) -> None:
    cfg = DedupConfig()
    build_index(real_docs.slice(0, 20), tmp_path / "idx", cfg)
    with pytest.raises(ConfigError, match="same dedup params"):
        dedup_against_index(real_docs.slice(20, 5), tmp_path / "idx", DedupConfig(num_perm=64))
    with pytest.raises(ConfigError, match="reuses ids"):
        dedup_against_index(real_docs.slice(10, 20), tmp_path / "idx", cfg)
    with pytest.raises(ConfigError, match="not a dedup index"):
        dedup_against_index(real_docs.slice(20, 5), tmp_path, cfg)
