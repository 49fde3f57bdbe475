"""Reading the documents a dedup command takes: Parquet or JSONL files, or a folder of them."""

from __future__ import annotations

from pathlib import Path

from corpusmix.config import ConfigError


def read_docs(path: str | Path):  # -> pa.Table
    """A Parquet file, a folder of Parquet/JSONL files, or one JSONL(.gz/.zst) file."""
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    p = Path(path)
    if not p.exists():
        raise ConfigError(f"input {p} does not exist; pass a Parquet/JSONL file or a folder of them")
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    files = [f for f in files if f.name.endswith((".parquet", ".jsonl", ".jsonl.gz", ".jsonl.zst"))]
    if not files:
        raise ConfigError(f"no .parquet/.jsonl(.gz/.zst) files under {p}")
    tables = []
    for f in files:
        if f.name.endswith(".parquet"):
            tables.append(pq.read_table(f))
        elif f.name.endswith(".zst"):
            import io

            import zstandard

            with open(f, "rb") as fh:
                data = zstandard.ZstdDecompressor().stream_reader(fh).read()
            tables.append(pj.read_json(io.BytesIO(data)))
        else:
            tables.append(pj.read_json(f))
    return pa.concat_tables(tables, promote_options="default")
