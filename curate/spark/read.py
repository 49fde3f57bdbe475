"""Raw records of the Spark engine from Parquet files/folders or JSON lines (any Spark URI)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from curate.spark.partition import FILE_COL
from curate.spark.session import hadoop_fs

JSON_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson", ".jsonl.bz2")


def _input_files(spark: Any, path: str) -> tuple[list[str], list[str], bool]:
    """``(JSON-lines files, Parquet files, is a folder)`` of one input path (any Hadoop URI). A
    folder is listed recursively, skipping hidden and ``_``-prefixed entries (``_SUCCESS``,
    ``_temporary``) and files of other types, as the local engine does; JSONL and Parquet may mix."""
    lower = path.lower().rstrip("/")
    if lower.endswith((".zst", ".jsonl.zst", ".json.zst")):
        raise ValueError(f"{path}: Spark has no zstd JSON codec by default; convert it to Parquet or .jsonl.gz first")
    fs, jpath = hadoop_fs(spark, path)
    if not fs.exists(jpath):
        raise ValueError(f"input {path!r} does not exist; pass a Parquet/JSONL file or a folder of them")
    if fs.getFileStatus(jpath).isFile():
        full = fs.makeQualified(jpath).toString()
        return ([full], [], False) if lower.endswith(JSON_SUFFIXES) else ([], [full], False)
    base = fs.makeQualified(jpath).toString().rstrip("/") + "/"
    jsonl, parquet, zst = [], [], []
    it = fs.listFiles(jpath, True)
    while it.hasNext():
        full = it.next().getPath().toString()
        rel = full[len(base):] if full.startswith(base) else full.rsplit("/", 1)[-1]
        if any(part.startswith(("_", ".")) for part in rel.split("/")):
            continue
        name = rel.lower()
        if name.endswith(JSON_SUFFIXES):
            jsonl.append(full)
        elif name.endswith(".parquet"):
            parquet.append(full)
        elif name.endswith(".zst"):
            zst.append(full)
    if zst:
        raise ValueError(f"{path}: {len(zst)} zstd file(s) (e.g. {zst[0]}); Spark has no zstd JSON codec by "
                         "default; convert them to Parquet or .jsonl.gz first")
    if not jsonl and not parquet:
        raise ValueError(f"no Parquet/JSONL files under {path!r}")
    return sorted(jsonl), sorted(parquet), True


def read_documents(spark: Any, inputs: Sequence[str], read_cfg: Any = None, scratch: str | None = None) -> Any:
    """Raw records from Parquet files/folders or JSON lines (``.jsonl``, ``.jsonl.gz``; any Spark URI).

    Records become documents (or ``read`` drops) inside the partitions with the local engine's
    :class:`curate.docio.RecordReader`; a malformed JSON line (Spark's ``_corrupt_record``) is a
    ``read`` drop with reason ``malformed_json``. Adds ``_file`` (the record's file name), used
    for the ids of records without one. A JSON line too long to hold a text within
    ``max_doc_bytes`` (``read_cfg``) is never held whole and never parsed: it becomes a row that
    the partitions turn into a ``too_large`` drop, and Spark reads a copy of its file without it,
    written under ``scratch`` (default: a new folder under the temporary directory, made only when
    needed) (:mod:`curate.spark.lines`). The copy must outlive the DataFrame, so the caller removes
    ``scratch`` when done with it (``run_spark`` puts it in its work folder).
    """
    import os
    import tempfile
    import uuid

    from curate.docio import ReadConfig
    from curate.spark.lines import bound_jsonl, hadoop_line_limit

    if not inputs:
        raise ValueError("no input given; pass --input PATH (Parquet file/folder or JSONL) at least once")
    cfg = read_cfg or ReadConfig()
    max_len = hadoop_line_limit(cfg.max_doc_bytes)
    plan = [(str(path), *_input_files(spark, str(path))) for path in inputs]
    # made only when a file has over-long lines (curate.spark.lines.copy_without creates it)
    scratch = scratch or os.path.join(tempfile.gettempdir(), f"corpusmix-jsonl-{uuid.uuid4().hex}")
    if "://" not in scratch and not scratch.startswith("file:"):
        scratch = os.path.abspath(scratch)  # executors of a cluster do not share the driver's cwd
    read_files, oversize = bound_jsonl(spark, [f for _, js, _, _ in plan for f in js], max_len, scratch,
                                       cfg.id_column)
    frames = _frames(spark, plan, read_files, max_len)
    if oversize is not None:
        frames.append(oversize)
    return _union(spark, frames)


def _frames(spark: Any, plan: list[tuple[str, list[str], list[str], bool]], read_files: list[str],
            max_len: int) -> list[Any]:
    """One DataFrame per input path and kind (JSON lines: from ``read_files``, the bounded copies;
    Parquet), each with ``_file``."""
    from pyspark.sql import functions as F

    from curate.spark.lines import LINE_MAX_KEY

    frames: list[Any] = []

    def add(df: Any, what: str) -> None:
        if "text" not in df.columns and "_corrupt_record" not in df.columns:
            raise ValueError(f"{what}: documents lack a `text` column (columns: {df.columns}); "
                             "every document needs `id` and `text`")
        frames.append(df.withColumn(FILE_COL, F.regexp_extract(F.input_file_name(), r"([^/]*)$", 1)))

    at = 0
    for path, jsonl, parquet, folder in plan:
        if jsonl:
            files, at = read_files[at:at + len(jsonl)], at + len(jsonl)
            # lines end at "\n" only, as in the local reader (Hadoop's default also splits at a bare "\r");
            # the line limit is a guard: no line of `files` reaches it
            reader = spark.read.option("lineSep", "\n").option(LINE_MAX_KEY, str(max_len))
            df = reader.option("mode", "PERMISSIVE").json(files)
            if df.columns == ["_corrupt_record"]:
                # every line malformed: Spark refuses queries on a raw JSON file that reference only
                # its corrupt-record column; the files' non-blank lines, read as text, are those records
                df = (reader.text(files).withColumnRenamed("value", "_corrupt_record")
                      .where(~F.col("_corrupt_record").rlike(r"^\s*$")))
            elif "_corrupt_record" in df.columns:
                # a line of ASCII whitespace that Jackson does not skip (\x0b, \x0c) is blank to the local
                # reader (bytes.strip()), not a record: Java's \s is that same set
                df = df.where(F.col("_corrupt_record").isNull() | ~F.col("_corrupt_record").rlike(r"^\s*$"))
            if df.columns:  # none: blank (or only over-long) lines, no parsed record
                add(df, path)
        if parquet:
            reader = spark.read.option("mergeSchema", "true")  # files of one folder may differ in columns
            if folder and not jsonl:
                add(reader.parquet(path), path)  # the folder itself: keeps partition columns
            else:
                add((reader.option("basePath", path) if folder else reader).parquet(*parquet), path)
    return frames


def _union(spark: Any, frames: list[Any]) -> Any:
    """The frames as one DataFrame by column name; a column whose type differs between them is text."""
    from pyspark.sql import functions as F

    if not frames:
        return spark.createDataFrame([], f"id string, text string, {FILE_COL} string")
    types: dict[str, set[str]] = {}
    for f in frames:
        for name, tp in f.dtypes:
            types.setdefault(name, set()).add(tp)
    clash = {n for n, ts in types.items() if len(ts) > 1} | ({"id"} if len(frames) > 1 else set())
    if clash:  # e.g. integer ids in JSON lines beside string ids in Parquet: as text, like str(id) locally
        frames = [f.select(*[F.col(n).cast("string").alias(n) if n in clash else F.col(n) for n in f.columns])
                  for f in frames]
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other, allowMissingColumns=True)
    for c in ("id", "text"):
        if c not in df.columns:
            df = df.withColumn(c, F.lit(None).cast("string"))
    return df
