"""Bounded memory for JSON lines on Spark: over-long lines are dropped before Spark parses a line.

Spark's JSON source reads each line whole into memory, so one 2 GB line would need gigabytes per
task (and a line over 2 GB cannot be held in a Java array at all). Hadoop's
``mapreduce.input.linerecordreader.line.maxlength`` bounds that, but it silently skips the lines
and, when a long line crosses a split boundary, hands its pieces to Spark as records. So, before
Spark reads them, :func:`bound_jsonl` scans every JSON-lines file in the executors (one task per
file, at most ``max_len`` bytes held): a line whose length with its terminator is
:func:`hadoop_line_limit` or more (the local reader's ``line_cap`` rule, ``curate.docio``) becomes
one row with its id and domain, read from its first or last 64 KiB, which the partitions turn into a
``too_large`` drop, as the local reader does. A file holding such a line is copied without it
(same name, same compression) under a scratch folder and Spark reads the copy; other files are
read in place, and an uncompressed file smaller than the limit is not even scanned. The limit is
still passed to Hadoop as a guard; after the copy no line reaches it.

Files are opened with ``pyarrow.fs`` from the URIs Spark reports (``file:``, ``hdfs:``, ``s3:``,
``gs:``; ``s3a:``/``s3n:`` are read as ``s3:``), decompressing ``.gz``/``.bz2`` by extension as
Spark's codecs do.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from curate.docio import _skip_rest, line_cap, oversize_fields

#: the Hadoop setting that bounds a line of Spark's text-based sources (passed as a read option)
LINE_MAX_KEY = "mapreduce.input.linerecordreader.line.maxlength"
#: the rows :func:`bound_jsonl` adds for over-long lines carry this column set to true
OVERSIZE_COL = "_oversize"


def hadoop_line_limit(max_doc_bytes: int) -> int:
    """The scan's (and Hadoop's guard) line limit for ``max_doc_bytes``: one more than the local
    reader's ``line_cap``, because the length here counts the ``\\n`` terminator and the local
    reader's does not; both then drop exactly the ``\\n``-ended lines of ``line_cap`` bytes or more."""
    return line_cap(max_doc_bytes) + 1


def _pyarrow_uri(uri: str) -> str:
    for scheme in ("s3a://", "s3n://"):
        if uri.startswith(scheme):
            return "s3://" + uri[len(scheme):]
    return uri


def _open(uri: str) -> tuple[Any, str]:
    import pyarrow.fs as pafs

    return pafs.FileSystem.from_uri(_pyarrow_uri(uri))


def oversize_lines(uri: str, max_len: int, id_column: str = "id") -> list[tuple[str, str | None, str, int]]:
    """``(id, domain, file name, line number)`` of every line of ``uri`` whose length with its
    terminator is ``max_len`` or more; the id is the line's own (from its first or last 64 KiB) or
    ``<file>#L<line>``. Holds at most ``max_len`` bytes of the file at a time."""
    fs, path = _open(uri)
    name = path.rsplit("/", 1)[-1]
    if not path.endswith((".gz", ".bz2")) and fs.get_file_info(path).size < max_len:
        return []
    out: list[tuple[str, str | None, str, int]] = []
    with fs.open_input_stream(path, compression="detect") as stream:
        fh = io.BufferedReader(stream, buffer_size=1 << 20)
        lineno = 0
        while True:
            raw = fh.readline(max_len)
            if not raw:
                break
            lineno += 1
            if len(raw) < max_len:
                continue
            head, tail = _skip_rest(fh, raw, max_len)  # the rest read and discarded max_len bytes at a time
            del raw
            doc_id, domain = oversize_fields(head, tail, id_column)
            out.append((doc_id or f"{name}#L{lineno}", domain, name, lineno))
    return out


def copy_without(uri: str, lines: set[int], dest_dir: str, max_len: int) -> str:
    """A copy of ``uri`` without the given line numbers, same file name and compression, under
    ``dest_dir``; returns its URI. Holds at most ``max_len`` bytes at a time."""
    fs, path = _open(uri)
    name = path.rsplit("/", 1)[-1]
    dfs, dpath = _open(dest_dir)
    dfs.create_dir(dpath, recursive=True)
    target = f"{dpath.rstrip('/')}/{name}"
    codec = "gzip" if name.endswith(".gz") else "bz2" if name.endswith(".bz2") else None
    with fs.open_input_stream(path, compression="detect") as stream, \
            dfs.open_output_stream(target, compression=codec) as out:
        fh = io.BufferedReader(stream, buffer_size=1 << 20)
        lineno, at_start = 0, True
        while True:
            raw = fh.readline(max_len)
            if not raw:
                break
            if at_start:
                lineno += 1
            at_start = raw.endswith(b"\n")
            if lineno not in lines:
                out.write(raw)
    return dest_dir.rstrip("/") + "/" + name


def _bound_one(item: tuple[int, str], max_len: int, id_column: str, scratch: str
               ) -> list[tuple[str, list[tuple[str, str | None, str, int]]]]:
    k, uri = item
    rows = oversize_lines(uri, max_len, id_column)
    if not rows:
        return [(uri, [])]
    return [(copy_without(uri, {r[3] for r in rows}, f"{scratch.rstrip('/')}/{k}", max_len), rows)]


def bound_jsonl(spark: Any, files: Sequence[str], max_len: int, scratch: str, id_column: str = "id"
                ) -> tuple[list[str], Any]:
    """``(files for Spark to read, DataFrame of the over-long lines or None)`` for JSON-lines
    ``files``: one Spark task per file; a file with over-long lines is replaced by its copy
    without them under ``scratch`` (a folder every executor can write and the driver read). The
    DataFrame has ``id``, ``domain``, ``_file`` and ``_oversize`` (true)."""
    if not files:
        return [], None
    sc = spark.sparkContext
    items = list(enumerate(files))
    res = (sc.parallelize(items, min(len(items), max(1, sc.defaultParallelism) * 4))
           .flatMap(lambda it: _bound_one(it, max_len, id_column, scratch)).collect())
    read = [uri for uri, _ in res]
    rows = [(i, d, f, True) for _, found in res for i, d, f, _ in found]
    if not rows:
        return read, None
    return read, spark.createDataFrame(rows, f"id string, domain string, _file string, {OVERSIZE_COL} boolean")
