"""Labelled near-duplicate set (true Jaccard) and pair metrics; ours vs datasketch MinHashLSH."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from curate.dedup import DedupConfig
from curate.dedup.evaluate import evaluate
from curate.dedup.labelled import LabelledConfig, build_labelled, word_shingles
from curate.dedup.metrics import cluster_pairs, prf, score_labelled

from .conftest import CORPORA


def test_prf_and_cluster_pairs() -> None:
    pred = cluster_pairs(["a", "b", "c", "d"], ["a", "a", "a", "d"])
    assert pred == {("a", "b"), ("a", "c"), ("b", "c")}
    m = prf(pred, {("a", "b"), ("c", "d")})
    assert (m["tp"], m["fp"], m["fn"]) == (1, 2, 1) and abs(m["f1"] - 0.4) < 1e-6


def test_score_labelled_strict_and_cluster_views() -> None:
    res = pa.table({"id": ["a", "b", "c"], "dup_cluster": ["a", "a", "a"]})
    pairs = pa.table({"a": ["a", "b", "a"], "b": ["b", "c", "c"], "jaccard": [0.9, 0.85, 0.7]})
    m = score_labelled(res, pairs, 0.8)
    assert m["pair"]["precision"] == round(2 / 3, 6) and m["pair"]["recall"] == 1.0
    assert m["cluster"]["precision"] == 1.0  # a-c is in the same true component


def test_labelled_set_true_jaccard_and_f1_vs_datasketch(tmp_path) -> None:
    counts = build_labelled(CORPORA, tmp_path, LabelledConfig(originals=60, distractors=120, variants=3))
    docs = pq.read_table(tmp_path / "docs.parquet").to_pylist()
    pairs = pq.read_table(tmp_path / "pairs.parquet").to_pylist()
    assert counts["docs"] == len(docs) == 60 * 4 + 120
    text = {d["id"]: d["text"] for d in docs}
    for p in pairs[:: max(1, len(pairs) // 25)]:  # spot-check the sparse all-pairs Jaccard
        sa, sb = word_shingles(text[p["a"]], 5), word_shingles(text[p["b"]], 5)
        assert abs(p["jaccard"] - len(sa & sb) / len(sa | sb)) < 1e-9
    m = evaluate(DedupConfig(), labelled=str(tmp_path))
    ours, theirs = m["labelled/ours_verified"], m["labelled/datasketch"]
    assert ours["cluster"]["precision"] >= 0.98
    assert ours["pair"]["f1"] >= theirs["pair"]["f1"] - 0.01
    assert m["labelled/ours_unverified"]["pair"]["precision"] <= ours["pair"]["precision"]
