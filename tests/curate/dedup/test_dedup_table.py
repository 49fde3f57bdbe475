"""dedup_table end to end: kinds, representatives, bad input, determinism, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusmix.cli import main
from curate.dedup import DedupConfig, DuplicateIdError, dedup_table

from .conftest import pair_with_jaccard


def _table() -> pa.Table:
    a, near, _ = pair_with_jaccard("x", 200, 196)  # J = 0.96
    far_a, far_b, _ = pair_with_jaccard("y", 200, 100)  # J ~ 0.32
    return pa.Table.from_pylist([
        {"id": "d", "text": a},
        {"id": "b", "text": "  " + a.upper().replace(" ", "\n ")},  # exact after folding
        {"id": "c", "text": near},
        {"id": "e", "text": far_a},
        {"id": "f", "text": far_b},
        {"id": "g", "text": ""},
        {"id": "h", "text": None},
        {"id": "i", "text": "too short"},
        {"id": "j", "text": "Too   SHORT"},
    ])


def test_kinds_and_smallest_id_representative() -> None:
    stats: dict = {}
    out = dedup_table(_table(), DedupConfig(), stats=stats)
    rows = {r["id"]: r for r in out.to_pylist()}
    assert out.num_rows == 9 and out.column_names[-3:] == ["dup_cluster", "is_duplicate", "dup_kind"]
    assert (rows["b"]["dup_cluster"], rows["b"]["is_duplicate"], rows["b"]["dup_kind"]) == ("b", False, None)
    assert (rows["d"]["dup_cluster"], rows["d"]["dup_kind"]) == ("b", "exact")
    assert (rows["c"]["dup_cluster"], rows["c"]["dup_kind"]) == ("b", "near")
    assert not rows["e"]["is_duplicate"] and not rows["f"]["is_duplicate"]
    # empty texts are never duplicates of each other; short texts only match exactly
    assert not rows["g"]["is_duplicate"] and not rows["h"]["is_duplicate"]
    assert (rows["j"]["dup_cluster"], rows["j"]["dup_kind"]) == ("i", "exact")
    assert stats["skipped"] == {"empty_text": 2, "shorter_than_shingle": 2}
    assert stats["exact_duplicates"] == 2 and stats["near_duplicates"] == 1


def test_quality_picks_representative() -> None:
    t = _table().append_column("quality_ft", pa.array([0.1, 0.2, 0.9, None, None, None, None, 0.5, 0.5]))
    rows = {r["id"]: r for r in dedup_table(t, DedupConfig()).to_pylist()}
    assert rows["c"]["dup_cluster"] == "c" and not rows["c"]["is_duplicate"]
    assert rows["b"]["dup_cluster"] == "c" and rows["b"]["dup_kind"] == "near"
    assert rows["d"]["dup_kind"] == "near"
    assert rows["j"]["dup_cluster"] == "i"  # tie on quality: smallest id


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(DuplicateIdError, match="duplicate id"):
        dedup_table(pa.table({"id": ["a", "a"], "text": ["x", "y"]}), DedupConfig())
    with pytest.raises(ValueError, match="lacks column"):
        dedup_table(pa.table({"id": ["a"]}), DedupConfig())
    with pytest.raises(ValueError, match="null id"):
        dedup_table(pa.table({"id": ["a", None], "text": ["x", "y"]}), DedupConfig())
    with pytest.raises(ValueError, match="not string"):
        dedup_table(pa.table({"id": [1, 2], "text": ["x", "y"]}), DedupConfig())
    with pytest.raises(ValueError, match="engine"):
        dedup_table(pa.table({"id": ["a"], "text": ["x"]}), DedupConfig(), engine="dask")


def test_deterministic_across_runs_workers_and_batches(real_docs: pa.Table) -> None:
    ref = dedup_table(real_docs, DedupConfig(workers=1, batch_docs=2000))
    dup = np.array(ref.column("is_duplicate").to_pylist())
    assert 20 <= dup.sum() <= 60
    for cfg in (DedupConfig(workers=1, batch_docs=2000), DedupConfig(workers=2, batch_docs=37),
                DedupConfig(workers=1, batch_docs=7)):
        assert dedup_table(real_docs, cfg).equals(ref)
    shuffled = real_docs.take(np.random.default_rng(1).permutation(real_docs.num_rows))
    again = {r["id"]: r["dup_cluster"] for r in dedup_table(shuffled, DedupConfig()).to_pylist()}
    assert again == dict(zip(ref.column("id").to_pylist(), ref.column("dup_cluster").to_pylist(), strict=True))


def test_cli_dedup_writes_rows_and_stats(tmp_path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in _table().to_pylist()) + "\n")
    out, stats = tmp_path / "out.parquet", tmp_path / "stats.json"
    rc = main(["curate", "dedup", "--input", str(src), "--output", str(out), "--stats", str(stats),
               "--params", str(tmp_path / "none.yaml"), "--threshold", "0.9", "--workers", "1"])
    assert rc == 0
    t = pq.read_table(out)
    assert t.num_rows == 9 and sum(t.column("is_duplicate").to_pylist()) == 3
    assert json.loads(stats.read_text())["near_duplicates"] == 1
    assert main(["curate", "dedup", "--input", str(src), "--output", str(out), "--threshold", "1.5",
                 "--params", str(tmp_path / "none.yaml")]) == 2
