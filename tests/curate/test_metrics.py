"""Curation metrics against a small hand-built ground truth (docs/formats.md schema)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from curate.evaluation.metrics import curation_metrics


def test_metrics_values(tmp_path):
    gt = pa.table({
        "id": ["r1", "r2", "r3", "j1", "j2", "f1", "c1"],
        "domain": ["news", "news", "code", "news", "news", "news", "code"],
        "defects": [[], [], [], ["junk:spam"], ["junk:nav"], ["foreign:de"], []],
        "lang": ["en", "en", "en", "en", "en", "de", "en"],
    })
    pq.write_table(gt, tmp_path / "gt.parquet")
    run = tmp_path / "run"
    (run / "curated").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["r1", "j2"], "text": ["a", "b"], "lang": ["en", "en"]}),
                   run / "curated" / "news.parquet")
    pq.write_table(pa.table({"id": ["r3", "c1"], "text": ["x", "y"], "lang": ["fr", "en"]}),
                   run / "curated" / "code.parquet")
    pq.write_table(pa.table({"id": ["r2", "j1", "f1"], "step": ["filters", "filters", "langid_filter"],
                             "reason": ["top_2_gram", "gopher_short_doc", "lang:de"],
                             "domain": ["news", "news", "news"]}), run / "drops.parquet")
    m = curation_metrics(run, tmp_path / "gt.parquet")
    assert m["lid"] == {"accuracy": 0.8, "docs": 5}  # 4 kept + 1 language drop; r3 predicted fr
    assert m["junk"]["precision"] == 0.5 and m["junk"]["recall"] == 0.5
    assert m["junk_any_content_step"]["precision"] == round(1 / 3, 6)
    assert m["foreign"] == {"recall": 1.0, "planted": 1}
    assert m["kept_real"]["per_domain"] == {"code": 1.0, "news": 0.5}
    assert m["kept_real"]["overall"] == 0.75
    assert "pii" not in m
