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


def test_cli_index_then_against(real_docs: pa.Table, tmp_path) -> None:
    import pyarrow.parquet as pq

    from corpusmix.cli import main

    pq.write_table(real_docs.slice(0, 200), tmp_path / "v1.parquet")
    pq.write_table(real_docs.slice(200), tmp_path / "v2.parquet")
    common = ["--params", str(tmp_path / "none.yaml"), "--workers", "1"]
    assert main(["curate", "dedup", "--input", str(tmp_path / "v1.parquet"), "--output", str(tmp_path / "o1.parquet"),
                 "--index-dir", str(tmp_path / "idx"), *common]) == 0
    assert main(["curate", "dedup", "--input", str(tmp_path / "v2.parquet"), "--output", str(tmp_path / "o2.parquet"),
                 "--against", str(tmp_path / "idx"), "--stats", str(tmp_path / "s.json"), *common]) == 0
    out = pq.read_table(tmp_path / "o2.parquet")
    v1_ids = set(real_docs.slice(0, 200).column("id").to_pylist())
    # the planted copies (ids copy/..., near/...) of the first 40 documents all point into v1
    to_old = [r for r in out.to_pylist() if r["dup_cluster"] in v1_ids]
    assert len(to_old) >= 30 and all(r["is_duplicate"] for r in to_old)
