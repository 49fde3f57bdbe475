"""Document output of the curation engines: documents to Arrow tables, atomic Parquet writers, the
annotation column types both engines write (docs/formats.md) and the drops table.

Writers write to a temporary name and rename, so a killed run never leaves a half-written file
under the final name.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import Document


def docs_to_table(docs: list[Document]) -> pa.Table:
    """Documents -> table with ``id``, ``text`` first, then every metadata key (input order kept)."""
    keys: dict[str, None] = {}
    for d in docs:
        keys.update(dict.fromkeys(d.metadata))
    cols: dict[str, list] = {"id": [d.id for d in docs], "text": [d.text for d in docs]}
    for k in keys:
        cols[k] = [d.metadata.get(k) for d in docs]
    return pa.table(cols)


def atomic_write_table(table: pa.Table, path: str | Path, *, compression: str = "zstd") -> None:
    """Write a Parquet file under a temporary name, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp, compression=compression)
    os.replace(tmp, path)


class AtomicParquetWriter:
    """Streaming Parquet writer (zstd) that renames into place on successful close only."""

    def __init__(self, path: str | Path, schema: pa.Schema | None = None, *, compression: str = "zstd") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        self.schema = schema
        self.compression = compression
        self._w: pq.ParquetWriter | None = None
        self.rows = 0

    def write_table(self, table: pa.Table) -> None:
        if self._w is None:
            self.schema = self.schema or table.schema
            self._w = pq.ParquetWriter(self.tmp, self.schema, compression=self.compression)
        if table.schema != self.schema:
            table = conform(table, self.schema)
        self._w.write_table(table)
        self.rows += table.num_rows

    def close(self) -> None:
        if self._w is None:
            if self.schema is None:
                return
            self._w = pq.ParquetWriter(self.tmp, self.schema, compression=self.compression)
        self._w.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if self._w is not None:
            self._w.close()
        self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> AtomicParquetWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Cast ``table`` to ``schema``: missing columns become nulls, column order follows ``schema``."""
    cols = []
    for f in schema:
        if f.name in table.column_names:
            col = table.column(f.name)
            cols.append(col if col.type == f.type else col.cast(f.type))
        else:
            cols.append(pa.nulls(table.num_rows, type=f.type))
    return pa.Table.from_arrays(cols, schema=schema)


#: Arrow types of the columns curation steps add (docs/formats.md); both engines write these
ANNOTATION_TYPES: dict[str, pa.DataType] = {
    "lang": pa.string(),
    "lang_score": pa.float64(),
    "quality_ft": pa.float64(),
    "ppl": pa.float64(),
    "ppl_bucket": pa.string(),
    "pii_spans": pa.list_(pa.struct([("start", pa.int32()), ("end", pa.int32()), ("type", pa.string())])),
    "pii_counts": pa.string(),
    "dup_cluster": pa.string(),
    "is_duplicate": pa.bool_(),
    "dup_kind": pa.string(),
    "toxicity": pa.float64(),
    "badwords": pa.int64(),
    "contam_benchmarks": pa.string(),
    "contam_ngrams": pa.int64(),
}


def unified_schema(paths: list[Path]) -> pa.Schema | None:
    """One schema over the parts; annotation columns take their contract types (ANNOTATION_TYPES)."""
    schemas = [pq.read_schema(p) for p in paths]
    if not schemas:
        return None
    schema = pa.unify_schemas([s.remove_metadata() for s in schemas], promote_options="permissive")
    for i, f in enumerate(schema):
        if f.name in ANNOTATION_TYPES and f.type != ANNOTATION_TYPES[f.name]:
            schema = schema.set(i, pa.field(f.name, ANNOTATION_TYPES[f.name], nullable=True))
    return schema


DROP_SCHEMA = pa.schema([("id", pa.string()), ("step", pa.string()), ("reason", pa.string()),
                         ("domain", pa.string())])


def drops_table(rows: list[tuple[str, str, str, str]]) -> pa.Table:
    cols = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    return pa.Table.from_arrays([pa.array(list(c), pa.string()) for c in cols], schema=DROP_SCHEMA)
