"""Streaming (bounded-memory) dedup: the same verdicts as the in-memory ``dedup_table``; bad input."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from corpusmix.paths import DEMO, ROOT
from curate.dedup import DedupConfig, DuplicateIdError
from curate.dedup.stream import dedup_parts, verdicts_in_memory, write_verdicts


def _gen_corpus():
    spec = importlib.util.spec_from_file_location("gen_corpus", ROOT / "bench" / "gen_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _write_parts(rows: list[dict], folder, per_part: int = 250, tasks: int = 3) -> list:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, i in enumerate(range(0, len(rows), per_part)):
        p = folder / f"{k % tasks:05d}-{k // tasks:05d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows[i:i + per_part]), p)
        paths.append(p)
    return sorted(paths)


def _assert_same_verdicts(parts, tmp_path, cfg: DedupConfig, **kw) -> dict:
    ref = verdicts_in_memory(parts, cfg)
    info = write_verdicts(parts, tmp_path / "verdicts", cfg, **kw)
    tasks = sorted(set(ref.column("_task").to_pylist()))
    assert sorted(p.stem for p in (tmp_path / "verdicts").glob("*.parquet")) == tasks
    for task in tasks:
        want = ref.filter(pc.equal(ref.column("_task"), task)).drop_columns(["_task"])
        got = pq.read_table(tmp_path / "verdicts" / f"{task}.parquet")
        assert got.equals(want), task
    assert info["docs_in"] == ref.num_rows
    return info


@pytest.fixture(scope="module")
def demo_rows() -> list[dict]:
    """The shipped English demo documents, shuffled, with planted copies and a quality column."""
    rows = []
    for f in sorted((DEMO / "en").glob("*.parquet")):
        rows += pq.read_table(f, columns=["id", "text"]).to_pylist()
    extra = []
    for k, r in enumerate(rows[::9]):
        w = r["text"].split()
        if k % 2:
            extra.append({"id": f"zz/copy{k}", "text": "  ".join(w).upper()})
        elif len(w) > 40:
            w[len(w) // 2] = "EDITED"
            extra.append({"id": f"aa/near{k}", "text": " ".join(w)})
    rows += extra
    order = np.random.default_rng(0).permutation(len(rows))
    rows = [rows[i] for i in order]
    for i, r in enumerate(rows):
        r["quality_ft"] = None if i % 5 == 0 else (i * 37 % 101) / 101
    return rows


@pytest.mark.parametrize(("workers", "budgets"), [(1, {"verify_mb": 0.5, "band_max_keys": 2000}), (2, {})])
def test_same_verdicts_as_in_memory_on_demo(demo_rows, tmp_path, workers: int, budgets: dict) -> None:
    parts = _write_parts(demo_rows, tmp_path / "parts")
    # small budgets: bands grouped in several passes, verification in several chunks
    info = _assert_same_verdicts(parts, tmp_path, DedupConfig(workers=workers, batch_docs=300), **budgets)
    assert info["dropped"]["exact_duplicate"] >= 100 and info["dropped"]["near_duplicate"] >= 20
    assert info["bytes_in"] == sum(len(r["text"].encode()) for r in demo_rows)


def test_same_verdicts_on_generated_corpus_and_planted_truth(tmp_path) -> None:
    gen = _gen_corpus()
    m = gen.generate(tmp_path / "gen", mb=3, seed=1, source=DEMO / "en", exact=0.05, near=0.05, part_mb=1)
    assert m["parts"] >= 3
    parts = sorted((tmp_path / "gen" / "docs").glob("*.parquet"))
    info = _assert_same_verdicts(parts, tmp_path, DedupConfig(), band_max_keys=500)
    truth = pq.read_table(tmp_path / "gen" / "ground_truth.parquet").to_pylist()
    dup = {}
    for p in sorted((tmp_path / "verdicts").glob("*.parquet")):
        for r in pq.read_table(p).to_pylist():
            dup[r["id"]] = r
    planted = {t["id"] for t in truth}
    exact = [t for t in truth if t["kind"] == "exact"]
    assert exact and all(dup[t["id"]]["dup_kind"] == "exact" and dup[t["id"]]["is_duplicate"] for t in exact)
    near = [t for t in truth if t["kind"] == "near"]
    found = sum(dup[t["id"]]["is_duplicate"] for t in near)
    assert found >= 0.9 * len(near)
    # originals are distinct: no unplanted document is a duplicate (planted copies are the only ones)
    assert sum(r["is_duplicate"] for i, r in dup.items() if i not in planted) <= 0.005 * len(dup)
    assert info["docs_in"] == m["docs"]


def test_generator_is_deterministic(tmp_path) -> None:
    gen = _gen_corpus()
    a = gen.generate(tmp_path / "a", mb=0.5, seed=3, source=DEMO / "en")
    b = gen.generate(tmp_path / "b", mb=0.5, seed=3, source=DEMO / "en")
    ta, tb = pq.read_table(tmp_path / "a" / "docs"), pq.read_table(tmp_path / "b" / "docs")
    assert ta.equals(tb) and a["counts"] == b["counts"]
    assert pc.count_distinct(ta.column("id")).as_py() == ta.num_rows
    assert json.loads((tmp_path / "a" / "manifest.json").read_text())["docs"] == ta.num_rows


def test_bad_input_is_a_clear_error(tmp_path) -> None:
    (tmp_path / "p").mkdir()
    pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), tmp_path / "p" / "00000-00000.parquet")
    with pytest.raises(ValueError, match="lacks column"):
        dedup_parts(sorted((tmp_path / "p").glob("*.parquet")), DedupConfig())
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["one two", "three"]}), tmp_path / "p" / "00000-00000.parquet")
    pq.write_table(pa.table({"id": ["c", "a"], "text": ["x", "y"]}), tmp_path / "p" / "00001-00000.parquet")
    with pytest.raises(DuplicateIdError, match=r"1 duplicate id\(s\), e.g. \['a'\]"):
        dedup_parts(sorted((tmp_path / "p").glob("*.parquet")), DedupConfig())
    pq.write_table(pa.table({"id": [1, 2], "text": ["x", "y"]}), tmp_path / "p" / "00001-00000.parquet")
    with pytest.raises(ValueError, match="`id` is int64, not string"):
        dedup_parts(sorted((tmp_path / "p").glob("*.parquet")), DedupConfig())


def test_null_texts_tiny_docs_and_one_long_document(tmp_path) -> None:
    """Nulls count as empty (never duplicates), many tiny docs match only exactly, a long document
    is one batch of its own; the verdicts still equal the in-memory ones."""
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(500)]
    rows = [{"id": f"t{i:06d}", "text": " ".join(words[j] for j in rng.integers(30, size=3))}
            for i in range(20_000)]
    rows += [{"id": "null1", "text": None}, {"id": "null2", "text": None}, {"id": "empty", "text": ""}]
    long_text = " ".join(words[j] for j in rng.integers(500, size=600_000))  # ~3 MB, over batch_mb
    rows += [{"id": "long", "text": long_text}, {"id": "long-copy", "text": long_text.upper()}]
    parts = _write_parts(rows, tmp_path / "parts", per_part=5000, tasks=2)
    info = _assert_same_verdicts(parts, tmp_path, DedupConfig(batch_mb=1.0))
    v = {r["id"]: r for p in sorted((tmp_path / "verdicts").glob("*.parquet")) for r in pq.read_table(p).to_pylist()}
    assert v["long-copy"]["dup_cluster"] == "long" and v["long-copy"]["dup_kind"] == "exact"
    assert not v["null1"]["is_duplicate"] and not v["null2"]["is_duplicate"]
    assert info["stats"]["skipped"]["empty_text"] == 3
    assert info["dropped"]["exact_duplicate"] > 0 and "near_duplicate" not in info["dropped"]


def test_parts_with_different_columns_and_types(tmp_path, demo_rows) -> None:
    """Parts with and without the quality column, extra columns, large_string text: same verdicts
    as the in-memory table (missing quality ranks last)."""
    rows = demo_rows[:300]
    (tmp_path / "p").mkdir()
    a = pa.Table.from_pylist(rows[:100])
    b = pa.Table.from_pylist([{"id": r["id"], "text": r["text"], "lang": "en"} for r in rows[100:200]])
    b = b.set_column(1, "text", b.column("text").cast(pa.large_string()))
    c = pa.Table.from_pylist([{"id": r["id"], "text": r["text"]} for r in rows[200:]] +
                             [{"id": "copy-of-first", "text": rows[0]["text"]}])
    for k, t in enumerate((a, b, c)):
        pq.write_table(t, tmp_path / "p" / f"{k:05d}-00000.parquet")
    parts = sorted((tmp_path / "p").glob("*.parquet"))
    _assert_same_verdicts(parts, tmp_path, DedupConfig())
    v = {r["id"]: r for p in parts for r in pq.read_table(tmp_path / "verdicts" / f"{p.name[:5]}.parquet").to_pylist()}
    first, copy = v[rows[0]["id"]], v["copy-of-first"]
    # one cluster across the parts; neither has a quality score, so the smaller id represents it
    assert first["dup_cluster"] == copy["dup_cluster"] == min(rows[0]["id"], "copy-of-first")
    assert first["is_duplicate"] != copy["is_duplicate"]
