"""Document input of the curation engines: readers with counted bad-record drops.

Input is a file or a folder of Parquet (``.parquet``) and JSONL (``.jsonl``, ``.jsonl.gz``,
``.jsonl.zst``, also ``.json``/``.ndjson``) files with at least ``id`` and ``text``. Reading is split
into *units* (one Parquet row group, or one JSONL file) so that datatrove tasks share the work.
Every bad record becomes a drop with step ``read`` and one of these reasons, never a crash:

``malformed_json``, ``invalid_utf8``, ``missing_text``, ``non_string_text``, ``empty_text``,
``too_large`` (text over ``max_doc_bytes``), ``missing_id`` (when ``derive_ids`` is off),
``duplicate_id`` (an id seen before in the same task).

Memory per record is bounded whatever the input: a JSONL line over :func:`line_cap` (6 x
``max_doc_bytes`` + 1 MiB) is a ``too_large`` drop read and discarded in bounded chunks, never
parsed; a Parquet text over ``max_doc_bytes`` is measured in Arrow and never copied into Python.

A missing ``text`` column of a Parquet file is a clear error before any work starts
(``check_inputs``). The writers are in :mod:`curate.docwrite`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from datatrove.data import Document

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger

log = get_logger("curate.docio")
# records sniffed per JSONL file before any work: a folder where none of them is usable is refused
SNIFF_RECORDS = 20

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
    jsonl_split_bytes: int = field(default=64 << 20, metadata={
        "help": "an uncompressed JSONL file larger than this is read as several units cut at line starts, "
                "so tasks share one big file (0: one unit per file)"})


@dataclass(frozen=True)
class Unit:
    """One piece of input work: a Parquet row group, a whole JSONL file, or the lines of a JSONL
    file that start in ``[start, end)`` (``first_line``: the number of the first, as in the file)."""

    path: str
    row_group: int = -1
    start: int = 0
    end: int = -1
    first_line: int = 1

    @property
    def label(self) -> str:
        if self.row_group >= 0:
            return f"{self.path}@rg{self.row_group}"
        return self.path if self.end < 0 else f"{self.path}@{self.start}-{self.end}"


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


def check_inputs(files: list[Path], cfg: ReadConfig, *, folder: bool = False) -> None:
    """Fail before any work when a Parquet file lacks the text column, or when the input is a
    ``folder`` whose every file is malformed (the first ``SNIFF_RECORDS`` records of every JSONL file
    are not JSON objects). Otherwise JSONL is checked per record (a malformed line is a counted drop),
    and a file all of whose records are dropped is a warning (read time)."""
    jsonl = [f for f in files if not f.name.endswith(PARQUET_SUFFIXES)]
    if folder and jsonl and len(jsonl) == len(files):
        bad = {f: why for f in jsonl if (why := sniff_unusable(f, cfg))}
        if len(bad) == len(files):
            first, why = next(iter(bad.items()))
            raise ConfigError(f"every input file is malformed: none of the first {SNIFF_RECORDS} records of any of "
                              f"the {len(files)} file(s) is a JSON object (e.g. {str(first)!r}: {why}); "
                              "nothing written")
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


def list_units(files: list[Path], split_bytes: int = 0) -> list[Unit]:
    """Units of ``files``: a Parquet row group each; a JSONL file whole, or, when uncompressed and
    larger than ``split_bytes`` (> 0), in equal pieces of at most about that size cut at line starts."""
    units: list[Unit] = []
    for f in files:
        if f.name.endswith(PARQUET_SUFFIXES):
            n = pq.ParquetFile(f).metadata.num_row_groups
            units.extend(Unit(str(f), rg) for rg in range(n))
        elif split_bytes > 0 and not f.name.endswith((".gz", ".zst")) and f.stat().st_size > split_bytes:
            units.extend(_line_units(f, split_bytes))
        else:
            units.append(Unit(str(f)))
    return units


def _line_units(path: Path, split_bytes: int, chunk: int = 1 << 22) -> list[Unit]:
    """Pieces of an uncompressed JSONL file: ceil(size / ``split_bytes``) pieces of about equal size
    (so tasks get equal shares), each cut after the first newline at or past its nominal start,
    with the line number each starts at (one pass counting newlines, ``chunk`` bytes held at a
    time): the pieces hold exactly the file's lines, numbered as in the file."""
    size = path.stat().st_size
    step = -(-size // -(-size // split_bytes))  # size / number of pieces, rounded up
    cuts, lines_before = [0], [0]
    next_cut, newlines = step, 0
    with open(path, "rb") as fh:
        pos = 0
        while True:
            buf = fh.read(chunk)
            if not buf:
                break
            while next_cut < pos + len(buf):
                i = buf.find(b"\n", max(0, next_cut - 1 - pos))
                if i < 0:
                    break  # the line holding the cut goes on in the next chunk
                cut = pos + i + 1
                if cut < size:
                    cuts.append(cut)
                    lines_before.append(newlines + buf.count(b"\n", 0, i + 1))
                next_cut = max(next_cut + step, cut + 1)
            newlines += buf.count(b"\n")
            pos += len(buf)
    ends = cuts[1:] + [size]
    return [Unit(str(path), start=s, end=e, first_line=n + 1)
            for s, e, n in zip(cuts, ends, lines_before, strict=True)]


# A JSONL line longer than this cannot hold a record whose text is within ``max_doc_bytes``: JSON
# escapes at most 6 bytes per byte of UTF-8 text (``\u0001``), plus this much for the other fields.
LINE_SLACK_BYTES = 1 << 20
_HEAD_BYTES = 1 << 16  # where an oversize line's id and domain are looked for


def line_cap(max_doc_bytes: int) -> int:
    """Longest JSONL line that is parsed; longer ones are ``too_large`` drops read in bounded chunks."""
    return 6 * max_doc_bytes + LINE_SLACK_BYTES


@contextlib.contextmanager
def _open_binary(path: str) -> Iterator[Any]:
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            yield fh
    elif path.endswith(".zst"):
        import zstandard

        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zr:
            yield io.BufferedReader(zr)
    else:
        with open(path, "rb") as fh:
            yield fh


def _bounded_lines(path: str, cap: int, start: int = 0, end: int = -1) -> Iterator[tuple[bytes, bytes | None]]:
    """``(line, None)`` for every line (of those starting in ``[start, end)`` when ``end`` >= 0, an
    uncompressed file); ``(head, tail)`` for a line of ``cap`` bytes or more (oversize): its first
    and last 64 KiB (where its id and domain are looked for), the rest read and discarded ``cap``
    bytes at a time, so no line costs more than ``cap`` bytes of memory whatever its length."""
    with _open_binary(path) as fh:
        if start:
            fh.seek(start)
        while True:
            if end >= 0 and fh.tell() >= end:
                return
            raw = fh.readline(cap)
            if not raw:
                return
            if len(raw) < cap or raw.endswith(b"\n"):
                yield raw, None
                continue
            yield _skip_rest(fh, raw, cap)


def _skip_rest(fh: Any, raw: bytes, cap: int) -> tuple[bytes, bytes]:
    """``(first, last 64 KiB)`` of an oversize line whose first ``cap`` bytes are ``raw``, the rest of
    the line read from ``fh`` and discarded ``cap`` bytes at a time."""
    head, tail = raw[:_HEAD_BYTES], raw[-_HEAD_BYTES:]
    complete = raw.endswith(b"\n")
    del raw
    while not complete:
        more = fh.readline(cap)
        complete = not more or more.endswith(b"\n")
        if more:
            tail = (tail + more[-_HEAD_BYTES:])[-_HEAD_BYTES:]
    return head, tail


def oversize_fields(head: bytes, tail: bytes, id_column: str = "id") -> tuple[str | None, str | None]:
    """``(id, domain)`` of an oversize JSON line from its first and last 64 KiB (a key that comes
    after a huge text is in the tail; inside a JSON string a quote is always escaped, so a key
    pattern cannot match text content). None where not found."""
    return (_field_from_head(head, id_column) or _field_from_head(tail, id_column),
            _field_from_head(head, "domain") or _field_from_head(tail, "domain"))


def _field_from_head(head: bytes, name: str) -> str | None:
    """A string or integer field of a JSON object from the first bytes of its line (None: not there)."""
    m = re.search(rb'"' + re.escape(name.encode()) + rb'"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)', head)
    if m is None:
        return None
    try:
        v = json.loads(m.group(1))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return str(v) if v != "" else None


class RecordReader:
    """Turns raw records into ``Document`` or ``Drop``; holds the per-task duplicate-id set."""

    def __init__(self, cfg: ReadConfig | None = None) -> None:
        self.cfg = cfg or ReadConfig()
        self._seen: set[str] = set()

    def make(self, rec: dict[str, Any], fallback_id: str) -> Document | Drop:
        cfg = self.cfg
        domain = self._domain_of(rec)
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

    def _blank_oversize(self, batch: pa.RecordBatch) -> tuple[pa.RecordBatch, set[int]]:
        """The batch with the text of rows over ``max_doc_bytes`` nulled, and those rows: their text
        is measured in Arrow and never copied into Python strings."""
        col = self.cfg.text_column
        idx = batch.schema.get_field_index(col)
        if idx < 0:
            return batch, set()
        arr = batch.column(idx)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or pa.types.is_binary(arr.type)
                or pa.types.is_large_binary(arr.type)):
            return batch, set()
        mask = pc.fill_null(pc.greater(pc.binary_length(arr), self.cfg.max_doc_bytes), False)
        over = set(np.flatnonzero(mask.to_numpy(zero_copy_only=False)).tolist())
        if not over:
            return batch, over
        blanked = pc.if_else(mask, pa.scalar(None, arr.type), arr)
        return batch.set_column(idx, batch.schema.field(idx), blanked), over

    def _domain_of(self, rec: dict[str, Any]) -> str:
        domain = rec.get("domain")
        return domain if isinstance(domain, str) and domain else self.cfg.default_domain

    def _too_large(self, rec: dict[str, Any], fallback_id: str) -> Drop:
        doc_id = rec.get(self.cfg.id_column)
        return Drop(fallback_id if doc_id is None or doc_id == "" else str(doc_id), "too_large", self._domain_of(rec))

    def read_unit(self, unit: Unit) -> Iterator[Document | Drop]:
        """The unit's records; a warning when it had records and every one was dropped."""
        docs, reasons = 0, Counter()
        for rec in self._read_unit(unit):
            if isinstance(rec, Drop):
                reasons[rec.reason] += 1
            else:
                docs += 1
            yield rec
        if not docs and reasons:
            where = unit.path if unit.row_group < 0 and unit.start == 0 and unit.end < 0 else unit.label
            log.warning(f"every record of {where} was dropped when read ({_reasons(reasons)})",
                        extra={"data": {"file": unit.path, "dropped": dict(reasons)}})

    def _read_unit(self, unit: Unit) -> Iterator[Document | Drop]:
        name = Path(unit.path).name
        if unit.row_group >= 0:
            pf = pq.ParquetFile(unit.path)
            row = 0
            for batch in pf.iter_batches(batch_size=self.cfg.batch_rows, row_groups=[unit.row_group]):
                batch, over = self._blank_oversize(batch)
                for i, rec in enumerate(batch.to_pylist()):
                    fallback = f"{name}#rg{unit.row_group}:{row}"
                    yield self.make(rec, fallback) if i not in over else self._too_large(rec, fallback)
                    row += 1
            return
        lines = _bounded_lines(unit.path, line_cap(self.cfg.max_doc_bytes), unit.start, unit.end)
        for lineno, (raw, tail) in enumerate(lines, start=unit.first_line):
            fallback = f"{name}#L{lineno}"
            if tail is not None:  # oversize, never parsed: its text cannot be within max_doc_bytes
                doc_id, domain = oversize_fields(raw, tail, self.cfg.id_column)
                yield Drop(doc_id or fallback, "too_large", domain or self.cfg.default_domain)
                continue
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


def _reasons(reasons: Counter) -> str:
    return ", ".join(f"{r}: {n}" for r, n in reasons.most_common())


# what makes a file malformed (not JSON lines at all); a well-formed record dropped by policy
# (missing id, empty text, ...) is a counted drop like any other
MALFORMED = frozenset({"malformed_json", "invalid_utf8"})


def sniff_unusable(path: Path, cfg: ReadConfig, n: int = SNIFF_RECORDS) -> str | None:
    """Why the first ``n`` records of a JSONL file are all malformed (:data:`MALFORMED`), or None when
    one of them is a document or a well-formed record, or the file is empty."""
    reasons: Counter = Counter()
    gen = RecordReader(cfg)._read_unit(Unit(str(path)))
    try:
        for i, rec in enumerate(gen):
            if not isinstance(rec, Drop) or rec.reason not in MALFORMED:
                return None
            reasons[rec.reason] += 1
            if i + 1 >= n:
                break
    finally:
        gen.close()
    return _reasons(reasons) if reasons else None


def read_documents(path: str | Path, cfg: ReadConfig | None = None) -> Iterator[Document | Drop]:
    """All records of a file or folder, in order (single process; used by the single-step commands)."""
    cfg = cfg or ReadConfig()
    files = list_input_files(path)
    check_inputs(files, cfg, folder=Path(path).is_dir())
    reader = RecordReader(cfg)
    for unit in list_units(files, cfg.jsonl_split_bytes):
        yield from reader.read_unit(unit)
