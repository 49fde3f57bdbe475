"""A slice of the demo corpus with an exact copy and malformed lines, and the curation params it runs
with: the input of the kill-and-resume tests."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpusmix.paths import DEMO

PARAMS = """
curate:
  engine:
    steps: [normalize, langid, filters, dedup, pii]
    tasks: 4
    workers: 2
    batch_docs: 16
    keep_work: false
  langid:
    skip_domains: [code]
  filters:
    per_domain:
      code: {gopher_quality: false, c4: false, fineweb: false}
dedup:
  threshold: 0.8
  workers: 1
"""


def make_input(root: Path) -> Path:
    """Writes ``root/in`` (the input) and ``root/params.yaml``; returns the input folder."""
    inp = root / "in"
    inp.mkdir()
    tables = []
    for f in sorted((DEMO / "en").glob("*.parquet")) + [DEMO / "foreign" / "de.parquet", DEMO / "foreign" / "fr.parquet"]:
        t = pq.read_table(f, columns=["id", "text", "domain", "source"])
        tables.append(t.slice(0, 30 if "en" in f.parent.name else 15))
    table = pa.concat_tables(tables)
    copy = table.slice(0, 1).set_column(0, "id", pa.array(["copy-of-first"]))
    pq.write_table(pa.concat_tables([table, copy]), inp / "docs.parquet", row_group_size=20)
    bad = ['{"id": "broken", "te', json.dumps({"id": "num", "text": 5}), json.dumps({"id": "e", "text": ""})]
    (inp / "extra.jsonl").write_text("\n".join(bad) + "\n")
    (root / "params.yaml").write_text(PARAMS)
    return inp
