"""Readers count every bad record as a drop with a reason; writers are atomic; write-then-read."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard

from corpusmix.config import ConfigError
from curate import docio as cio
from curate import docwrite

GOOD = "It is a truth universally acknowledged, that a single man in possession of a good fortune."


def _jsonl_lines() -> list[bytes]:
    return [
        json.dumps({"id": "a", "text": GOOD, "domain": "literature", "source": "austen"}).encode(),
        b'{"id": "broken", "text": ',                                       # malformed_json
        b'{"id": "bad-utf8", "text": "caf\xe9"}',                           # invalid_utf8
        json.dumps({"id": "nt"}).encode(),                                  # missing_text
        json.dumps({"id": "num", "text": 42}).encode(),                     # non_string_text
        json.dumps({"id": "empty", "text": "  \n"}).encode(),               # empty_text
        json.dumps({"id": "a", "text": "again"}).encode(),                  # duplicate_id
        json.dumps({"text": GOOD + " No id."}).encode(),                    # derived id
        json.dumps({"id": "big", "text": "x" * 5000}).encode(),             # too_large (max 4000 below)
        b"[1, 2]",                                                          # malformed_json (not an object)
        b"",                                                                # blank line: not a record
    ]


EXPECTED = {"broken": None, "bad-utf8": None, "nt": "missing_text", "num": "non_string_text",
            "empty": "empty_text", "big": "too_large"}


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".jsonl.zst"])
def test_jsonl_bad_records_are_counted_drops(tmp_path, suffix):
    raw = b"\n".join(_jsonl_lines()) + b"\n"
    path = tmp_path / f"docs{suffix}"
    if suffix.endswith(".gz"):
        path.write_bytes(gzip.compress(raw))
    elif suffix.endswith(".zst"):
        path.write_bytes(zstandard.ZstdCompressor().compress(raw))
    else:
        path.write_bytes(raw)
    recs = list(cio.read_documents(path, cio.ReadConfig(max_doc_bytes=4000)))
    docs = [r for r in recs if not isinstance(r, cio.Drop)]
    drops = [r for r in recs if isinstance(r, cio.Drop)]
    assert [d.id for d in docs] == ["a", f"docs{suffix}#L8"]
    assert docs[0].metadata == {"domain": "literature", "source": "austen"}
    assert docs[1].metadata["domain"] == "unknown"
    reasons = sorted(d.reason for d in drops)
    assert reasons == sorted(["malformed_json", "invalid_utf8", "missing_text", "non_string_text", "empty_text",
                              "duplicate_id", "too_large", "malformed_json"])
    assert {d.id: d.reason for d in drops}[f"docs{suffix}#L2"] == "malformed_json"
    assert {d.id: d.reason for d in drops}[f"docs{suffix}#L3"] == "invalid_utf8"
    # conservation: every non-blank line is a document or a drop
    assert len(docs) + len(drops) == 10


def test_missing_id_dropped_when_not_derived(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"text": GOOD}) + "\n")
    (rec,) = list(cio.read_documents(p, cio.ReadConfig(derive_ids=False)))
    assert isinstance(rec, cio.Drop) and rec.reason == "missing_id"


def test_parquet_without_text_column_is_an_error_before_work(tmp_path):
    p = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": ["a"], "body": [GOOD]}), p)
    with pytest.raises(ConfigError, match="no 'text' column"):
        list(cio.read_documents(p))


def test_parquet_binary_text_invalid_utf8_and_row_groups(tmp_path):
    p = tmp_path / "d.parquet"
    t = pa.table({"id": ["a", "b", "c"], "text": pa.array([GOOD.encode(), b"\xff\xfe", b"ok text"], pa.binary())})
    pq.write_table(t, p, row_group_size=2)
    assert [u.row_group for u in cio.list_units([p])] == [0, 1]
    recs = list(cio.read_documents(p))
    assert [getattr(r, "reason", None) for r in recs] == [None, "invalid_utf8", None]
    assert recs[0].text == GOOD


def test_unknown_input_suffix_and_missing_path(tmp_path):
    (tmp_path / "x.csv").write_text("id,text\n")
    with pytest.raises(ConfigError, match="not Parquet or JSONL"):
        cio.list_input_files(tmp_path / "x.csv")
    with pytest.raises(ConfigError, match="does not exist"):
        cio.list_input_files(tmp_path / "nope")


def test_atomic_writer_write_then_read_and_abort(tmp_path):
    from datatrove.data import Document

    docs = [Document(text=GOOD, id="a", metadata={"domain": "d", "lang_score": 0.9}),
            Document(text="b text", id="b", metadata={"domain": "d", "lang_score": None})]
    out = tmp_path / "o.parquet"
    with docwrite.AtomicParquetWriter(out) as w:
        w.write_table(docwrite.docs_to_table(docs))
    back = pq.read_table(out)
    assert back.column_names == ["id", "text", "domain", "lang_score"]
    assert back.column("lang_score").to_pylist() == [0.9, None]
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "ZSTD"
    w = docwrite.AtomicParquetWriter(tmp_path / "never.parquet")
    w.write_table(docwrite.docs_to_table(docs))
    w.abort()
    assert not list(tmp_path.glob("*never*")) and not list(tmp_path.glob(".never*"))


def test_conform_fills_missing_columns():
    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("lang_score", pa.float64())])
    t = docwrite.conform(pa.table({"text": ["x"], "id": ["a"]}), schema)
    assert t.schema == schema and t.column("lang_score").to_pylist() == [None]


def test_fifty_megabyte_document_is_a_too_large_drop(tmp_path):
    p = tmp_path / "big.jsonl"
    with p.open("w") as fh:
        fh.write(json.dumps({"id": "huge", "text": "word " * 10_000_000}) + "\n")
        fh.write(json.dumps({"id": "ok", "text": GOOD}) + "\n")
    recs = list(cio.read_documents(p))
    assert isinstance(recs[0], cio.Drop) and (recs[0].id, recs[0].reason) == ("huge", "too_large")
    assert recs[1].id == "ok"


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_line_over_the_cap_is_skipped_unparsed_with_its_id_and_domain(tmp_path, suffix):
    cfg = cio.ReadConfig(max_doc_bytes=1000)
    cap = cio.line_cap(cfg.max_doc_bytes)
    lines = [json.dumps({"id": "a", "text": GOOD}),
             json.dumps({"id": "big", "domain": "web", "text": "x" * (3 * cap)}),  # id before the text
             json.dumps({"text": "y" * cap, "id": "late", "domain": "news"}),  # after the text: from the tail
             json.dumps({"text": 'say \\"id\\": \\"fake\\" ' + "z" * cap}),  # a key-like text: line id
             json.dumps({"id": "b", "text": GOOD})]
    p = tmp_path / f"in{suffix}"
    data = ("\n".join(lines) + "\n").encode()
    p.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    recs = list(cio.read_documents(p, cfg))
    assert [(r.id, r.reason, r.domain) for r in recs if isinstance(r, cio.Drop)] == [
        ("big", "too_large", "web"), ("late", "too_large", "news"), (f"in{suffix}#L4", "too_large", "unknown")]
    assert [r.id for r in recs if not isinstance(r, cio.Drop)] == ["a", "b"]


def test_escaped_text_within_max_doc_bytes_is_parsed(tmp_path):
    cfg = cio.ReadConfig(max_doc_bytes=1000)
    # a text within max_doc_bytes whose JSON escapes make the line 6x longer: still parsed, kept
    text = "a" + "\x01" * 999
    line = json.dumps({"id": "esc", "text": text})
    assert len(line) > 5 * cfg.max_doc_bytes and len(line) < cio.line_cap(cfg.max_doc_bytes)
    p = tmp_path / "esc.jsonl"
    p.write_text(line + "\n")
    (rec,) = list(cio.read_documents(p, cfg))
    assert not isinstance(rec, cio.Drop) and rec.text == text


@pytest.mark.parametrize("binary", [False, True])
def test_parquet_oversize_text_is_dropped_without_python_copy(tmp_path, binary):
    cfg = cio.ReadConfig(max_doc_bytes=100, batch_rows=2)
    texts = ["short one", "z" * 101, None, "é" * 51, "fine again"]  # "é" x 51 = 102 bytes > 100
    col = pa.array([t.encode() if (binary and t) else t for t in texts],
                   type=pa.binary() if binary else pa.string())
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": ["s", "big", "none", "wide", "f"], "text": col,
                             "domain": ["d1", "d2", "d3", "d4", "d5"]}), p)
    recs = list(cio.read_documents(p, cfg))
    assert [(r.id, r.reason, r.domain) for r in recs if isinstance(r, cio.Drop)] == [
        ("big", "too_large", "d2"), ("none", "missing_text", "d3"), ("wide", "too_large", "d4")]
    assert [r.id for r in recs if not isinstance(r, cio.Drop)] == ["s", "f"]


def _as_tuples(items: list) -> list[tuple]:
    return [(r.id, r.reason) if isinstance(r, cio.Drop) else (r.id, r.text, r.metadata.get("domain")) for r in items]


@pytest.mark.parametrize("split", [1, 7, 64, 300, 10_000])
def test_big_jsonl_file_split_at_line_starts_reads_the_same_records(tmp_path, split):
    """An uncompressed JSONL file over ``jsonl_split_bytes`` is read as several units cut at line
    starts (so tasks share one big file): the same records, in order, with the same line-derived
    ids, over blank lines, bad lines, an over-size line and no final newline; any split size."""
    lines = _jsonl_lines()[:6] + [b"", json.dumps({"text": "no id " * 3}).encode(), b"   ",
                                  json.dumps({"id": "z", "text": "y" * 900}).encode(), b"{bad"] + [
        json.dumps({"id": f"n{i}", "text": f"line {i} " * (i % 5 + 1)}).encode() for i in range(40)]
    p = tmp_path / "big.jsonl"
    p.write_bytes(b"\n".join(lines))  # no newline at the end
    cfg_whole = cio.ReadConfig(jsonl_split_bytes=0, max_doc_bytes=500)
    cfg_split = cio.ReadConfig(jsonl_split_bytes=split, max_doc_bytes=500)
    whole = list(cio.read_documents(p, cfg_whole))
    units = cio.list_units([p], split)
    if split >= p.stat().st_size:
        assert units == [cio.Unit(str(p))]
        return
    assert len(units) > 1 and units[0].start == 0 and units[-1].end == p.stat().st_size
    assert all(a.end == b.start for a, b in zip(units, units[1:], strict=False))
    data = p.read_bytes()
    assert all(data[u.start - 1:u.start] == b"\n" for u in units[1:])  # every cut at a line start
    longest = max(len(x) for x in lines) + 1
    assert max(u.end - u.start for u in units) <= split + longest  # about equal shares
    assert len(units) <= -(-len(data) // split)
    assert [u.first_line for u in units] == [data[:u.start].count(b"\n") + 1 for u in units]
    assert _as_tuples(list(cio.read_documents(p, cfg_split))) == _as_tuples(whole)
    reader = cio.RecordReader(cfg_split)
    assert _as_tuples([r for u in units for r in reader.read_unit(u)]) == _as_tuples(whole)
    assert any(isinstance(r, cio.Drop) and r.reason == "too_large" for r in whole)
    assert "big.jsonl#L8" in {r.id for r in whole}  # a line-derived id, the same whatever the split


def test_compressed_jsonl_is_never_split(tmp_path):
    p = tmp_path / "a.jsonl.gz"
    p.write_bytes(gzip.compress(b"\n".join(json.dumps({"id": str(i), "text": "t " * 50}).encode()
                                           for i in range(100))))
    assert cio.list_units([p], 10) == [cio.Unit(str(p))]
