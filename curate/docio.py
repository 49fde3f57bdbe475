"""Document I/O of the curation engines: readers with counted bad-record drops, atomic Parquet writers.

Input is a file or a folder of Parquet (``.parquet``) and JSONL (``.jsonl``, ``.jsonl.gz``,
``.jsonl.zst``, also ``.json``/``.ndjson``) files with at least ``id`` and ``text``. Reading is split
into *units* (one Parquet row group, or one JSONL file) so that datatrove tasks share the work.
Every bad record becomes a drop with step ``read`` and one of these reasons, never a crash:

``malformed_json``, ``invalid_utf8``, ``missing_text``, ``non_string_text``, ``empty_text``,
``too_large`` (text over ``max_doc_bytes``), ``missing_id`` (when ``derive_ids`` is off),
``duplicate_id`` (an id seen before in the same task).

A missing ``text`` column of a Parquet file is a clear error before any work starts
(``check_inputs``). Writers write to a temporary name and rename, so a killed run never leaves a
half-written file under the final name.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import Document

from corpusmix.config import ConfigError

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".json", ".json.gz", ".json.zst", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
READ_STEP = "read"


@dataclass
class ReadConfig:
    text_column: str = field(default="text", metadata={"help": "column holding the document text"})
    id_column: str = field(default="id", metadata={"help": "column holding the document id"})
    default_domain: str = field(default="unknown", metadata={"help": "domain when the input has none"})
    derive_ids: bool = field(default=True, metadata={
        "help": "give records without id a stable id <file>#<row>; off: drop them (missing_id)"})
    max_doc_bytes: int = field(default=10_000_000, metadata={"help": "drop texts larger than this (too_large)"})
    batch_rows: int = field(default=1024, metadata={"help": "rows per Parquet read batch"})


@dataclass(frozen=True)
class Unit:
    """One piece of input work: a Parquet row group or a whole JSONL file."""

    path: str
    row_group: int = -1

    @property
    def label(self) -> str:
        return self.path if self.row_group < 0 else f"{self.path}@rg{self.row_group}"


@dataclass
class Drop:
    """A record that could not become a document."""

    id: str
    reason: str
    domain: str = "unknown"


def list_input_files(path: str | Path) -> list[Path]:
    p = Path(path)
    if not p.exists():
        raise ConfigError(f"input {str(p)!r} does not exist; pass a Parquet/JSONL file or a folder of them")
    if p.is_file():
        if not p.name.endswith(JSONL_SUFFIXES + PARQUET_SUFFIXES):
            raise ConfigError(f"input {str(p)!r} is not Parquet or JSONL(.gz/.zst); rename or convert it")
        return [p]
    files = sorted(f for f in p.rglob("*") if f.is_file() and f.name.endswith(JSONL_SUFFIXES + PARQUET_SUFFIXES))
    if not files:
        raise ConfigError(f"no Parquet/JSONL files under {str(p)!r}")
    return files


def check_inputs(files: list[Path], cfg: ReadConfig) -> None:
    """Fail before any work when a Parquet file lacks the text column (JSONL is checked per record)."""
    for f in files:
        if f.name.endswith(PARQUET_SUFFIXES):
            try:
                names = pq.read_schema(f).names
            except (pa.ArrowInvalid, OSError) as exc:
                raise ConfigError(f"cannot read Parquet file {str(f)!r}: {exc}") from exc
            if cfg.text_column not in names:
                raise ConfigError(
                    f"{str(f)!r} has no {cfg.text_column!r} column (columns: {names}); "
                    f"add one or set curate.read.text_column")


def list_units(files: list[Path]) -> list[Unit]:
    units: list[Unit] = []
    for f in files:
        if f.name.endswith(PARQUET_SUFFIXES):
            n = pq.ParquetFile(f).metadata.num_row_groups
            units.extend(Unit(str(f), rg) for rg in range(n))
        else:
            units.append(Unit(str(f)))
    return units


def _open_text_lines(path: str) -> Iterator[bytes]:
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            yield from fh
    elif path.endswith(".zst"):
        import zstandard

        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zr:
            yield from io.BufferedReader(zr)
    else:
        with open(path, "rb") as fh:
            yield from fh


class RecordReader:
    """Turns raw records into ``Document`` or ``Drop``; holds the per-task duplicate-id set."""

    def __init__(self, cfg: ReadConfig | None = None) -> None:
        self.cfg = cfg or ReadConfig()
        self._seen: set[str] = set()

    def make(self, rec: dict[str, Any], fallback_id: str) -> Document | Drop:
        cfg = self.cfg
        domain = rec.get("domain")
        domain = domain if isinstance(domain, str) and domain else cfg.default_domain
        doc_id = rec.get(cfg.id_column)
        if doc_id is None or doc_id == "":
            if not cfg.derive_ids:
                return Drop(fallback_id, "missing_id", domain)
            doc_id = fallback_id
        doc_id = str(doc_id)
        if cfg.text_column not in rec or rec[cfg.text_column] is None:
            return Drop(doc_id, "missing_text", domain)
        text = rec[cfg.text_column]
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8")
            except UnicodeDecodeError:
                return Drop(doc_id, "invalid_utf8", domain)
        if not isinstance(text, str):
            return Drop(doc_id, "non_string_text", domain)
        if not text.strip():
            return Drop(doc_id, "empty_text", domain)
        if len(text) > cfg.max_doc_bytes // 4 and len(text.encode("utf-8")) > cfg.max_doc_bytes:
            return Drop(doc_id, "too_large", domain)
        if doc_id in self._seen:
            return Drop(doc_id, "duplicate_id", domain)
        self._seen.add(doc_id)
        meta = {k: v for k, v in rec.items() if k not in (cfg.id_column, cfg.text_column)}
        meta["domain"] = domain
        return Document(text=text, id=doc_id, metadata=meta)

    def read_unit(self, unit: Unit) -> Iterator[Document | Drop]:
        name = Path(unit.path).name
        if unit.row_group >= 0:
            pf = pq.ParquetFile(unit.path)
            row = 0
            for batch in pf.iter_batches(batch_size=self.cfg.batch_rows, row_groups=[unit.row_group]):
                for rec in batch.to_pylist():
                    yield self.make(rec, f"{name}#rg{unit.row_group}:{row}")
                    row += 1
            return
        for lineno, raw in enumerate(_open_text_lines(unit.path), start=1):
            fallback = f"{name}#L{lineno}"
            if not raw.strip():
                continue  # blank lines are not records
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                yield Drop(fallback, "invalid_utf8")
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                yield Drop(fallback, "malformed_json")
                continue
            if not isinstance(rec, dict):
                yield Drop(fallback, "malformed_json")
                continue
            yield self.make(rec, fallback)


def read_documents(path: str | Path, cfg: ReadConfig | None = None) -> Iterator[Document | Drop]:
    """All records of a file or folder, in order (single process; used by the single-step commands)."""
    cfg = cfg or ReadConfig()
    files = list_input_files(path)
    check_inputs(files, cfg)
    reader = RecordReader(cfg)
    for unit in list_units(files):
        yield from reader.read_unit(unit)


# -- writing -----------------------------------------------------------------------------------

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
