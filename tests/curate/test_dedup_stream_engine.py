"""``curate run``'s streaming dedup stage on a folder mixing Parquet and JSONL with different columns:
copies are found across formats, bad records are counted drops, verdicts equal the in-memory ones."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpusmix.paths import DEMO
from curate.dedup import DedupConfig
from curate.dedup.stream import verdicts_in_memory
from curate.engine_local import run_local

PARAMS = """
curate:
  engine:
    steps: [normalize, dedup]
    tasks: 3
    batch_docs: 9
dedup:
  threshold: 0.8
"""


def _mixed_input(tmp: Path) -> tuple[Path, list[dict]]:
    inp = tmp / "in"
    inp.mkdir()
    legal = pq.read_table(DEMO / "en" / "legal.parquet", columns=["id", "text", "domain", "source"]).slice(0, 25)
    pq.write_table(legal, inp / "a.parquet", row_group_size=8)
    rows = legal.to_pylist()
    words = rows[1]["text"].split()
    words[len(words) // 2] = "CHANGED"
    quotes = pq.read_table(DEMO / "en" / "quotes.parquet", columns=["id", "text"]).slice(0, 20).to_pylist()
    extra = [{"id": q["id"], "text": q["text"], "lang": "en", "score": k} for k, q in enumerate(quotes)]  # no domain
    # copies across formats; their ids sort last, so the Parquet originals represent the clusters
    extra += [{"id": "zz-json-exact", "text": rows[0]["text"].upper()},
              {"id": "zz-json-near", "text": " ".join(words)}]
    lines = [json.dumps(r) for r in extra] + ['{"id": "broken", "te', json.dumps({"id": "num", "text": 5}),
                                              json.dumps({"id": "blank", "text": ""})]
    with gzip.open(inp / "b.jsonl.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    return inp, rows


def test_mixed_folder_through_the_engine(tmp_path) -> None:
    inp, rows = _mixed_input(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(PARAMS)
    out = tmp_path / "out"
    doc = run_local(inputs=inp, output=out, params_path=str(params))
    drops = {r["id"]: (r["step"], r["reason"]) for r in pq.read_table(out / "drops.parquet").to_pylist()}
    assert drops["zz-json-exact"] == ("dedup", "exact_duplicate")
    assert drops["zz-json-near"] == ("dedup", "near_duplicate")
    assert drops["num"][0] == "read" and drops["blank"][0] == "read"
    assert sum(1 for s, _ in drops.values() if s == "read") == 3  # the broken line too, under its own id
    kept = sum(pq.read_table(f).num_rows for f in (out / "curated").glob("*.parquet"))
    assert kept + len(drops) == 25 + 22 + 3
    for name, st in doc["steps"].items():
        assert st["docs_in"] == st["kept"] + sum(st["dropped"].values()), name
    # the stage's verdicts equal the in-memory dedup of the same stage-a parts
    parts = sorted((out / "work" / "a" / "out").glob("*.parquet"))
    ref = verdicts_in_memory(parts, DedupConfig(threshold=0.8))
    for task in sorted(set(ref.column("_task").to_pylist())):
        want = ref.filter(pc.equal(ref.column("_task"), task)).drop_columns(["_task"])
        got = pq.read_table(out / "work" / "dedup" / "verdicts" / f"{task}.parquet")
        assert got.equals(want.cast(got.schema) if want.schema != got.schema else want), task
    assert pa.types.is_string(got.schema.field("dup_cluster").type)
