"""Single-step commands keep every input row and column and add the step's columns."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from corpusmix.cli import main
from tests.helpers.texts import LEV12


def test_filter_and_langid_commands(tmp_path):
    inp = tmp_path / "in.jsonl"
    rows = [{"id": "a", "text": LEV12, "domain": "literature", "extra": 1},
            {"id": "b", "text": "Too short.", "domain": "news", "extra": 2}]
    inp.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    params = tmp_path / "none.yaml"
    # the auto profile (default) calibrates on the input; a short real sentence is no garbage
    assert main(["curate", "filter", "--input", str(inp), "--output", str(tmp_path / "a.parquet"),
                 "--params", str(params)]) == 0
    t = pq.read_table(tmp_path / "a.parquet").to_pylist()
    assert [(r["id"], r["filter_keep"]) for r in t] == [("a", True), ("b", True)]
    assert main(["curate", "filter", "--input", str(inp), "--output", str(tmp_path / "f.parquet"),
                 "--params", str(params), "--profile", "web"]) == 0
    t = pq.read_table(tmp_path / "f.parquet").to_pylist()
    assert [(r["id"], r["extra"], r["filter_keep"], r["filter_reason"]) for r in t] == [
        ("a", 1, True, None), ("b", 2, False, "top_2_gram")]
    drops = pq.read_table(tmp_path / "f.drops.parquet").to_pylist()
    assert [(d["step"], d["reason"]) for d in drops] == [("read", "malformed_json")]
    assert main(["curate", "langid", "--input", str(tmp_path / "f.parquet"), "--output",
                 str(tmp_path / "l.parquet"), "--params", str(params)]) == 0
    t = pq.read_table(tmp_path / "l.parquet")
    assert t.column_names[:2] == ["id", "text"] and {"extra", "filter_keep", "filter_reason", "lang", "lang_score"} <= set(t.column_names)
    assert t.column("lang").to_pylist() == ["en", "en"]
