"""The Spark engine of the curation chain: the same step objects as the local engine, run on Spark.

Run it with ``corpusmix curate run --engine spark --master local[*]|spark://HOST:PORT`` or submit
``curate/spark_submit.py`` with ``spark-submit`` (see ``docs/spark.md``). From Python::

    from curate.engine_spark import SparkConfig, run_spark
    from curate.spark_submit import chain_from_params
    steps, dedup, after = chain_from_params("params.yaml")      # the local engine's chain builder
    stats = run_spark(inputs=["data/raw/docs"], output="data/curated_spark", steps=steps, dedup=dedup,
                      steps_after=after, cfg=SparkConfig(master="local[2]"))

How it works (the local engine's chain: read -> stage a -> global dedup -> stage b -> merge):

1. records are read with Spark's data sources (Parquet or JSON lines, any URI Spark's
   filesystem layer reads: local, ``hdfs://``, ``s3a://``) and turned into documents or ``read``
   drops inside the partitions by the local engine's ``curate.io.RecordReader``;
2. the per-document steps (datatrove ``BaseFilter`` objects, see ``curate/steps/base.py``) are
   pickled once on the driver, broadcast, unpickled ONCE per executor Python process (a module-level
   cache keyed by the chain's hash) and applied to Arrow batches in ``mapInArrow``. Every document
   leaves the partition either kept (with the annotators' new columns) or dropped with exactly one
   ``(step, reason)``; each partition also emits one statistics row (docs/bytes in, kept, dropped
   by reason, seconds per step). Statistics are rows of the output, not accumulators, so a retried
   task cannot count twice. Each stage's result is materialised once under ``<output>/_work``;
3. model files that steps point to (fastText language ID / quality, KenLM) are shipped with
   ``SparkContext.addFile`` and the step attributes that name them are rewritten on the executor to
   the local ``SparkFiles`` copy, so steps never know where they run;
4. global deduplication runs the dedup module's Spark shuffles (``curate.dedup.spark``) on
   ``id``/``text``/quality only; its verdicts are joined back and applied, in stage b, by the
   local engine's own ``DedupApply`` step (same reasons and counts), followed by PII;
5. outputs follow the local engine's contracts (``docs/formats.md``): ``curated/<domain>.parquet``
   (a Parquet folder per domain, readable by ``pyarrow.parquet.read_table``), ``drops.parquet``
   and ``stats.json`` (``curate.stats.stats_document`` plus an ``engine`` entry with phase times).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import pyarrow as pa

from corpusmix.logging import get_logger
from curate import io as cio

log = get_logger("curate.spark")

#: Arrow types of the columns steps add, from docs/formats.md; other columns are inferred from a sample
KNOWN_TYPES: dict[str, pa.DataType] = cio.ANNOTATION_TYPES
#: file suffixes of models that are shipped to executors when a step attribute names such a file
#: (``.bin`` also covers the decontamination step's n-gram index: shipped as a file, memory-mapped
#: by each executor, instead of riding in the broadcast pickle of the steps)
MODEL_SUFFIXES = (".ftz", ".bin", ".arpa", ".klm", ".binary", ".model", ".json")
DROP_STEP, DROP_REASON, STATS_COL = "_drop_step", "_drop_reason", "_partition_stats"
DEFAULT_REASON = "unspecified"  # the local engine's reason for a drop without one
ROWS_KEY, PART_COL, FILE_COL, READ_STEP = "__rows__", "_part", "_file", "read"

# chains unpickled in this Python process, keyed by the hash of their pickle: a reused Spark Python
# worker keeps its steps (and their lazily loaded models) from one task to the next.
_PROCESS_CHAINS: dict[str, list[Any]] = {}


@dataclass
class SparkConfig:
    """Spark engine settings (params.yaml section ``spark``)."""

    master: str = field(default="local[*]", metadata={
        "help": "Spark master: local[N], local[N,F] (F = attempts per task), spark://HOST:PORT, yarn, "
                "k8s://...; ignored under spark-submit, which sets the master"})
    app_name: str = field(default="corpusmix-curate", metadata={"help": "Spark application name"})
    partitions: int = field(default=0, metadata={
        "help": "repartition the input into this many partitions (0 = keep Spark's file splits)"})
    batch_rows: int = field(default=256, metadata={"help": "documents per Arrow batch handed to the steps"})
    driver_memory: str = field(default="2g", metadata={"help": "spark.driver.memory (local sessions only)"})
    executor_memory: str = field(default="", metadata={"help": "spark.executor.memory ('' = Spark's default)"})
    task_max_failures: int = field(default=4, metadata={"help": "spark.task.maxFailures (cluster masters)"})
    shuffle_partitions: int = field(default=0, metadata={
        "help": "spark.sql.shuffle.partitions (0 = 2 per core on local masters, Spark's default elsewhere)"})
    model_files: list[str] = field(default_factory=list, metadata={
        "help": "extra files to ship to executors (models named by step attributes are found automatically)"})
    keep_work: bool = field(default=False, metadata={"help": "keep the intermediate _work/ folder"})
    conf: dict[str, str] = field(default_factory=dict, metadata={"help": "extra Spark conf as JSON"})

    def __post_init__(self) -> None:
        from corpusmix.config import ConfigError

        if self.batch_rows < 1:
            raise ConfigError(f"spark.batch_rows must be >= 1, got {self.batch_rows}")
        if self.partitions < 0:
            raise ConfigError(f"spark.partitions must be >= 0, got {self.partitions}")


# ----------------------------------------------------------------------------------------- session

def get_session(cfg: SparkConfig, *, set_master: bool = True) -> Any:
    """A SparkSession for the engine (``set_master=False`` under spark-submit, which sets the master)."""
    import sys

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(cfg.app_name)
    if set_master and cfg.master:
        builder = builder.master(cfg.master)
    settings = {
        "spark.sql.execution.arrow.maxRecordsPerBatch": str(cfg.batch_rows),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.task.maxFailures": str(cfg.task_max_failures),
        "spark.ui.showConsoleProgress": "false",
    }
    if cfg.shuffle_partitions:
        settings["spark.sql.shuffle.partitions"] = str(cfg.shuffle_partitions)
    if set_master and cfg.master.startswith("local"):
        settings["spark.driver.memory"] = cfg.driver_memory
        if not cfg.shuffle_partitions:  # dedup's small shuffles: 200 partitions would be 200 Python tasks
            settings["spark.sql.shuffle.partitions"] = str(2 * _local_cores(cfg.master))
        # a local session needs no network but loopback (works offline and in network namespaces)
        settings["spark.driver.host"] = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
        settings["spark.driver.bindAddress"] = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
    if cfg.executor_memory:
        settings["spark.executor.memory"] = cfg.executor_memory
    settings.update({k: str(v) for k, v in cfg.conf.items()})
    for k, v in settings.items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


def _local_cores(master: str) -> int:
    """Cores of a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master."""
    inner = master[len("local["):-1] if master.startswith("local[") else "1"
    first = inner.split(",")[0].strip()
    return os.cpu_count() or 1 if first == "*" else max(int(first), 1)


# ------------------------------------------------------------------------------------------- input

def read_documents(spark: Any, inputs: Sequence[str]) -> Any:
    """Raw records from Parquet files/folders or JSON lines (``.jsonl``, ``.jsonl.gz``; any Spark URI).

    Records become documents (or ``read`` drops) inside the partitions with the local engine's
    :class:`curate.io.RecordReader`; a malformed JSON line (Spark's ``_corrupt_record``) is a
    ``read`` drop with reason ``malformed_json``. Adds ``_file`` (the record's file name), used
    for the ids of records without one.
    """
    from pyspark.sql import functions as F

    if not inputs:
        raise ValueError("no input given; pass --input PATH (Parquet file/folder or JSONL) at least once")
    frames = []
    for path in inputs:
        lower = str(path).lower().rstrip("/")
        if lower.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson", ".jsonl.bz2")):
            df = spark.read.option("mode", "PERMISSIVE").json(str(path))
            if not df.columns:  # blank lines only: no record, as in the local reader
                continue
            if df.columns == ["_corrupt_record"]:
                # every line malformed: Spark refuses queries on a raw JSON file that reference only
                # its corrupt-record column; the file's non-blank lines, read as text, are those records
                df = (spark.read.text(str(path)).withColumnRenamed("value", "_corrupt_record")
                      .where(~F.col("_corrupt_record").rlike(r"^\s*$")))
        elif lower.endswith((".zst",)):
            raise ValueError(f"{path}: Spark has no zstd JSON codec by default; convert it to Parquet "
                             "or .jsonl.gz first")
        else:
            df = spark.read.parquet(str(path))
        if "text" not in df.columns and "_corrupt_record" not in df.columns:
            raise ValueError(f"{path}: documents lack a `text` column (columns: {df.columns}); "
                             "every document needs `id` and `text`")
        frames.append(df)
    if not frames:
        return spark.createDataFrame([], f"id string, text string, {FILE_COL} string")
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other, allowMissingColumns=True)
    for c in ("id", "text"):
        if c not in df.columns:
            df = df.withColumn(c, F.lit(None).cast("string"))
    return df.withColumn(FILE_COL, F.regexp_extract(F.input_file_name(), r"([^/]*)$", 1))


# ------------------------------------------------------------------------------------ model files

def _walk_values(obj: Any, depth: int = 0) -> Iterator[tuple[Any, str, Any]]:
    """(owner, attribute, value) for attributes of step objects, two levels deep."""
    if depth > 2 or not hasattr(obj, "__dict__"):
        return
    for name, value in list(vars(obj).items()):
        yield obj, name, value
        if hasattr(value, "__dict__") and not isinstance(value, type) and value.__class__.__module__.split(".")[0] in (
                "curate", "datatrove", "corpusmix"):
            yield from _walk_values(value, depth + 1)


def find_model_files(steps: Sequence[Any]) -> list[str]:
    """Absolute paths of model files that step attributes name (shipped to executors as Spark files)."""
    found: list[str] = []
    for step in steps:
        for _, _, value in _walk_values(step):
            if isinstance(value, str | PurePath) and str(value).lower().endswith(MODEL_SUFFIXES):
                p = Path(value)
                if p.is_file() and str(p.resolve()) not in found:
                    found.append(str(p.resolve()))
    return found


def localise_model_paths(steps: Sequence[Any], shipped: dict[str, str]) -> int:
    """On an executor: point step attributes that name a shipped model at its local SparkFiles copy."""
    if not shipped:
        return 0
    from pyspark import SparkFiles

    changed = 0
    for step in steps:
        for owner, name, value in _walk_values(step):
            if isinstance(value, str | PurePath):
                key = str(Path(value).resolve()) if str(value) else ""
                if key in shipped:
                    local = SparkFiles.get(shipped[key])
                    if os.path.exists(local):
                        setattr(owner, name, type(value)(local) if isinstance(value, PurePath) else local)
                        changed += 1
    return changed


def _process_steps(key: str, blob: bytes, shipped: dict[str, str]) -> list[Any]:
    steps = _PROCESS_CHAINS.get(key)
    if steps is None:
        steps = pickle.loads(blob)
        localise_model_paths(steps, shipped)
        _PROCESS_CHAINS[key] = steps
    return steps


# ----------------------------------------------------------------------------- per-document steps

def _empty_step_stats() -> dict[str, Any]:
    return {"docs_in": 0, "bytes_in": 0, "kept": 0, "dropped": {}, "seconds": 0.0}


def apply_steps(steps: Sequence[Any], docs: list[Any], stats: dict[str, dict[str, Any]]
                ) -> list[tuple[Any, str | None, str | None]]:
    """Run ``steps`` in order on datatrove Documents; ``(doc, drop_step, drop_reason)`` per document.

    Uses each step's ``filter_batch`` in chunks of its ``batch_size`` (datatrove's contract), so
    batched scorers run batched here as well. ``stats`` is updated in place (contract of stats.json).
    """
    fate: dict[int, tuple[str, str]] = {}
    alive = list(range(len(docs)))
    for step in steps:
        name = step.step_name
        st = stats.setdefault(name, _empty_step_stats())
        t0 = time.perf_counter()
        st["docs_in"] += len(alive)
        st["bytes_in"] += sum(len(docs[i].text.encode("utf-8")) for i in alive)
        size = max(int(getattr(step, "batch_size", 1) or 1), 1)
        survivors = []
        for s in range(0, len(alive), size):
            chunk = alive[s:s + size]
            results = step.filter_batch([docs[i] for i in chunk])
            for i, res in zip(chunk, results, strict=True):
                keep, reason = (res, None) if isinstance(res, bool) else (res[0], res[1] if len(res) > 1 else None)
                if keep:
                    survivors.append(i)
                else:
                    reason = reason or DEFAULT_REASON
                    fate[i] = (name, reason)
                    st["dropped"][reason] = st["dropped"].get(reason, 0) + 1
        st["kept"] += len(survivors)
        st["seconds"] += time.perf_counter() - t0
        alive = survivors
    return [(d, *fate.get(i, (None, None))) for i, d in enumerate(docs)]


def records_to_docs(rows: list[dict[str, Any]], reader: Any, *, prefix: str = "") -> tuple[list[Any], list[Any]]:
    """Raw records -> (documents, read drops) with the local engine's ``RecordReader`` rules."""
    from curate.io import Drop

    docs, drops = [], []
    for i, rec in enumerate(rows):
        fname = rec.pop(FILE_COL, None) or "input"
        corrupt = rec.pop("_corrupt_record", None)
        fallback = f"{fname}#{prefix}{i}"
        if corrupt is not None:
            drops.append(Drop(fallback, "malformed_json"))
            continue
        res = reader.make({k: v for k, v in rec.items() if v is not None or k in ("id", "text")}, fallback)
        (drops if isinstance(res, Drop) else docs).append(res)
    return docs, drops


def _to_batch(results: list[tuple[Any, str | None, str | None]], schema: pa.Schema,
              read_drops: Sequence[Any] = ()) -> pa.RecordBatch:
    from datatrove.data import Document

    cols: dict[str, list[Any]] = {n: [] for n in schema.names}
    results = list(results) + [(Document(text=None, id=d.id, metadata={"domain": d.domain}),  # type: ignore[arg-type]
                                READ_STEP, d.reason) for d in read_drops]
    for doc, step, reason in results:
        cols["id"].append(doc.id)
        cols["text"].append(doc.text)
        cols[DROP_STEP].append(step)
        cols[DROP_REASON].append(reason)
        cols[STATS_COL].append(None)
        for n in schema.names:
            if n not in ("id", "text", DROP_STEP, DROP_REASON, STATS_COL):
                v = doc.metadata.get(n)
                cols[n].append(v)
    return pa.RecordBatch.from_pydict(cols, schema=schema)


def _stats_batch(stats: dict[str, Any], schema: pa.Schema) -> pa.RecordBatch:
    cols = {n: [None] for n in schema.names}
    cols[STATS_COL] = [json.dumps(stats)]
    return pa.RecordBatch.from_pydict(cols, schema=schema)


def make_partition_fn(key: str, blob_bc: Any, shipped: dict[str, str], schema: pa.Schema,
                      step_names: list[str], read_cfg: Any, *, read: bool = True) -> Any:
    """The ``mapInArrow`` function: Arrow batches of records in, decided/annotated documents out.

    Records become documents with the local engine's ``RecordReader``; with ``read=False`` (a
    later stage re-reading earlier output, like the local engine's ``reread``) its counts are
    not reported.
    """

    def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        from curate.io import RecordReader

        steps = _process_steps(key, blob_bc.value, shipped)
        reader = RecordReader(read_cfg)  # one per partition: duplicate ids are found within a task
        ctx = TaskContext.get()
        part = f"p{ctx.partitionId()}:" if ctx is not None else ""
        stats: dict[str, Any] = {n: _empty_step_stats() for n in [READ_STEP, *step_names]}
        rows = 0
        for batch in batches:
            if batch.num_rows == 0:
                continue
            t0 = time.perf_counter()
            records = batch.to_pylist()
            docs, drops = records_to_docs(records, reader, prefix=f"{part}{rows}+")
            rs = stats[READ_STEP]
            rs["docs_in"] += len(records)
            rs["bytes_in"] += sum(len(d.text.encode("utf-8")) for d in docs)  # as the local engine: kept only
            rs["kept"] += len(docs)
            for d in drops:
                rs["dropped"][d.reason] = rs["dropped"].get(d.reason, 0) + 1
            rs["seconds"] += time.perf_counter() - t0
            rows += batch.num_rows
            yield _to_batch(apply_steps(steps, docs, stats), schema, drops)
        stats[ROWS_KEY] = rows
        if not read:
            stats.pop(READ_STEP)
        yield _stats_batch(stats, schema)

    return run_partition


def infer_output_schema(input_schema: pa.Schema, steps: Sequence[Any], sample: list[dict[str, Any]],
                        read_cfg: Any = None) -> pa.Schema:
    """``id``, ``text``, the other input columns, ``domain``, then the columns the steps add.

    Types of added columns come from docs/formats.md or, for other columns, from a run of the
    steps on a sample of records (a column that is always null there becomes a string).
    """
    from curate.io import RecordReader

    names = ["id", "text"] + [n for n in input_schema.names
                              if n not in ("id", "text", FILE_COL, "_corrupt_record")]
    if "domain" not in names:
        names.append("domain")
    fields = [pa.field(n, pa.string()) if n in ("id", "text", "domain") else input_schema.field(n)
              for n in names]
    declared: list[str] = []
    for step in steps:
        for c in getattr(step, "columns", ()) or ():
            if c not in names and c not in declared:
                declared.append(c)
    sampled: dict[str, list[Any]] = {}
    if sample:
        docs, _ = records_to_docs(sample, RecordReader(read_cfg))
        apply_steps(steps, docs, {})
        for d in docs:
            for k, v in d.metadata.items():
                if k not in names:
                    sampled.setdefault(k, []).append(v)
    for c in list(sampled):
        if c not in declared:
            declared.append(c)
    for c in declared:
        if c in KNOWN_TYPES:
            tp = KNOWN_TYPES[c]
        else:
            values = [v for v in sampled.get(c, []) if v is not None]
            tp = pa.array(values).type if values else pa.string()
            if pa.types.is_null(tp):
                tp = pa.string()
            if pa.types.is_large_string(tp):
                tp = pa.string()
        fields.append(pa.field(c, tp))
    fields += [pa.field(DROP_STEP, pa.string()), pa.field(DROP_REASON, pa.string()),
               pa.field(STATS_COL, pa.string())]
    return pa.schema(fields)


def map_steps(spark: Any, df: Any, steps: Sequence[Any], *, model_files: Sequence[str] = (),
              read_cfg: Any = None, read: bool = True, sample_rows: int = 64) -> tuple[Any, list[str]]:
    """Apply per-document ``steps`` with ``mapInArrow``; returns (annotated DataFrame, step names).

    The DataFrame has every input row (plus one statistics row per partition, ``_partition_stats``
    not null) with the new columns and ``_drop_step``/``_drop_reason`` (null when kept).
    """
    from pyspark.serializers import CloudPickleSerializer
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    names = [s.step_name for s in steps]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"step names must be unique in one chain; repeated: {dup} (give each step its own step_name)")
    blob = CloudPickleSerializer().dumps(list(steps))  # before any driver-side run loads models
    key = hashlib.sha256(blob).hexdigest()[:20]
    files = list(dict.fromkeys([*find_model_files(steps), *[str(Path(f).resolve()) if "://" not in f else f
                                                               for f in model_files]]))
    shipped: dict[str, str] = {}
    sc = spark.sparkContext
    already = set(_added_files(sc))
    for f in files:
        base = os.path.basename(f)
        if base in shipped.values() and shipped.get(f) != base:
            raise ValueError(f"two model files share the name {base!r}; rename one so executors can tell them apart")
        if base not in already:
            sc.addFile(f)
        shipped[f] = base
    if shipped:
        log.info("shipping model files to executors", extra={"data": {"files": sorted(shipped)}})
    in_schema = to_arrow_schema(df.schema)
    sample = df.limit(sample_rows).toArrow().to_pylist() if sample_rows else []
    sample_steps = pickle.loads(blob)  # a separate copy: its models stay on the driver
    localise_model_paths(sample_steps, {})
    out_schema = infer_output_schema(in_schema, sample_steps, sample, read_cfg)
    fn = make_partition_fn(key, sc.broadcast(blob), shipped, out_schema, names, read_cfg, read=read)
    return df.mapInArrow(fn, from_arrow_schema(out_schema)), [READ_STEP, *names] if read else names


def _added_files(sc: Any) -> list[str]:
    """Names of the files already added (``--files`` / ``spark.files``, earlier runs)."""
    names = [os.path.basename(str(k)) for k in (getattr(sc, "listFiles", None) or [])]
    names += [os.path.basename(f) for f in (sc.getConf().get("spark.files", "") or "").split(",") if f]
    return names


# --------------------------------------------------------------------------------------- the chain

def merge_stats(parts: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Sum per-partition statistics, steps in chain order."""
    out = {n: _empty_step_stats() for n in names}
    for part in parts:
        for n, st in part.items():
            o = out.setdefault(n, _empty_step_stats())
            for k in ("docs_in", "bytes_in", "kept"):
                o[k] += st[k]
            o["seconds"] += st["seconds"]
            for r, c in st["dropped"].items():
                o["dropped"][r] = o["dropped"].get(r, 0) + c
    for o in out.values():
        o["seconds"] = round(o["seconds"], 4)
        o["dropped"] = dict(sorted(o["dropped"].items()))
    return out


def _hadoop_fs(spark: Any, path: str) -> tuple[Any, Any]:
    jvm = spark._jvm  # type: ignore[attr-defined]
    jpath = jvm.org.apache.hadoop.fs.Path(path)
    return jpath.getFileSystem(spark._jsc.hadoopConfiguration()), jpath  # type: ignore[attr-defined]


def write_text(spark: Any, path: str, text: str) -> None:
    """Write a small text file through Spark's filesystem layer (local, HDFS, S3, ...)."""
    fs, jpath = _hadoop_fs(spark, path)
    out = fs.create(jpath, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def delete_path(spark: Any, path: str) -> None:
    fs, jpath = _hadoop_fs(spark, path)
    if fs.exists(jpath):
        fs.delete(jpath, True)


def run_spark(*, inputs: Sequence[str], output: str, steps: Sequence[Any], dedup: Any = None,
              steps_after: Sequence[Any] = (), cfg: SparkConfig | None = None, read_cfg: Any = None,
              spark: Any = None, set_master: bool = True, calibrate_cfg: Any = None) -> dict[str, Any]:
    """Run the curation chain on Spark; writes ``curated/<domain>.parquet``, ``drops.parquet``, ``stats.json``.

    The chain is the local engine's: ``steps`` (stage a: normalize, langid, filters, quality),
    then global dedup when ``dedup`` (a ``DedupConfig``) is given, then ``steps_after`` (stage b:
    PII). Returns the stats document written to ``stats.json``.

    Spark jobs per stage: one small sample (output schema), one pass that runs the steps and
    materialises their result under ``_work/``, one collect of the per-partition statistics; then
    dedup's shuffles, and one write per output. Steps that calibrate (``curate.calibrate``) are
    calibrated first, on the driver, exactly as the local engine does (same thresholds).
    """
    from curate.calibrate import CalibrateConfig, calibrate_steps, guard_report

    calibrate_cfg = calibrate_cfg or CalibrateConfig()
    calibration = calibrate_steps(list(steps), inputs=[str(i) for i in ([inputs] if isinstance(inputs, str)
                                                                        else inputs)],
                                  read_cfg=read_cfg, cfg=calibrate_cfg)

    cfg = cfg or SparkConfig()
    spark = spark or get_session(cfg, set_master=set_master)
    output = str(output).rstrip("/")
    work = f"{output}/_work"
    t_start = time.perf_counter()
    clock = {"start": t_start}
    timings: dict[str, float] = {}

    def lap(name: str) -> None:  # wall seconds per phase, for "where does the time go"
        now = time.perf_counter()
        timings[name] = round(now - clock["start"], 3)
        clock["start"] = now

    df = read_documents(spark, inputs)
    if cfg.partitions:
        df = df.repartition(cfg.partitions)
    kept, drops, stats = _stage(spark, df, steps, f"{work}/a", cfg=cfg, read_cfg=read_cfg, read=True)
    lap("stage_a")
    if dedup is not None or steps_after:
        stage_b = list(steps_after)
        if dedup is not None:
            kept, dedup_seconds = _dedup_verdicts(spark, kept, dedup, work)
            stage_b.insert(0, ColumnDedupApply())
            lap("dedup_shuffles")
        kept, drops_b, stats_b = _stage(spark, kept, stage_b, f"{work}/b", cfg=cfg, read_cfg=read_cfg, read=False)
        if dedup is not None:
            stats_b["dedup"]["seconds"] = round(stats_b["dedup"]["seconds"] + dedup_seconds, 4)
        drops = drops.unionByName(drops_b)
        stats.update(stats_b)
        lap("stage_b")
    _write_outputs(spark, kept.drop("dup_kind"), drops, output, work)
    lap("write")
    n_kept = list(stats.values())[-1]["kept"]
    doc = stats_document(stats, kept=n_kept)
    if doc["totals"]["docs_in"] != doc["totals"]["kept"] + doc["totals"]["dropped"]:
        raise RuntimeError(f"statistics do not add up: {doc['totals']}")
    if calibration is not None:
        write_text(spark, f"{output}/calibration.json", json.dumps(calibration, indent=1) + "\n")
        rows = drops.groupBy("domain", "step", "reason").count().collect()
        doc.update(guard_report(sorted((r["domain"] or "unknown", r["step"], r["reason"], r["count"]) for r in rows),
                                calibration.get("domain_docs") or {}, share=calibrate_cfg.guard_share))
    doc["engine"] = {"name": "spark", "master": spark.sparkContext.master,
                     "seconds": round(time.perf_counter() - t_start, 3), "phases": timings}
    write_text(spark, f"{output}/stats.json", json.dumps(doc, indent=2) + "\n")
    if not cfg.keep_work:
        delete_path(spark, work)
    log.info("spark curation done", extra={"data": {"output": output, **doc["totals"]}})
    return doc


def stats_document(steps: dict[str, dict[str, Any]], *, kept: int) -> dict[str, Any]:
    """The stats.json document of the local engine (``curate.stats.stats_document``)."""
    from curate.stats import stats_document as local_document

    return local_document(steps, kept=kept)


def _stage(spark: Any, df: Any, steps: Sequence[Any], where: str, *, cfg: SparkConfig, read_cfg: Any,
           read: bool) -> tuple[Any, Any, dict[str, Any]]:
    """Run per-document steps once; (kept DataFrame, drops DataFrame, per-step stats)."""
    from pyspark.sql import functions as F

    mapped, names = map_steps(spark, df, steps, model_files=cfg.model_files, read_cfg=read_cfg,
                              read=read)
    # one materialisation: the steps run exactly once per document, every output below reads it
    mapped.write.mode("overwrite").parquet(where)
    ann = spark.read.parquet(where)
    part_stats = [json.loads(r[0]) for r in ann.where(F.col(STATS_COL).isNotNull()).select(STATS_COL).collect()]
    for p in part_stats:
        p.pop(ROWS_KEY, None)
    stats = merge_stats(part_stats, names)
    docs = ann.where(F.col(STATS_COL).isNull())
    kept = docs.where(F.col(DROP_STEP).isNull()).drop(DROP_STEP, DROP_REASON, STATS_COL)
    drops = docs.where(F.col(DROP_STEP).isNotNull()).select(
        "id", F.col(DROP_STEP).alias("step"), F.col(DROP_REASON).alias("reason"),
        F.coalesce(F.col("domain"), F.lit("unknown")).alias("domain"))
    return kept, drops, stats


def _dedup_verdicts(spark: Any, kept: Any, dedup_cfg: Any, work: str) -> tuple[Any, float]:
    """Kept documents with dedup's verdict columns (``dup_cluster``, ``is_duplicate``, ``dup_kind``).

    Only ``id``, ``text`` and the quality column go through the dedup module's shuffles (so no
    step column can collide with dedup's own); the verdict is materialised, then joined back.
    """
    from curate.dedup.spark import dedup_dataframe

    t0 = time.perf_counter()
    qcol = getattr(dedup_cfg, "quality_column", "")
    cols = ["id", "text"] + ([qcol] if qcol and qcol in kept.columns else [])
    verdict = dedup_dataframe(kept.select(*cols), dedup_cfg).select("id", "dup_cluster", "is_duplicate", "dup_kind")
    verdict.write.mode("overwrite").parquet(f"{work}/dedup")
    joined = kept.drop("dup_cluster", "is_duplicate", "dup_kind").join(
        spark.read.parquet(f"{work}/dedup"), "id", "left")
    return joined, time.perf_counter() - t0


def _dedup_apply_class() -> type:
    from curate.engine_local import DedupApply

    class _ColumnDedupApply(DedupApply):
        """The local engine's ``DedupApply`` (same columns, reasons, counts), verdicts read from columns."""

        def __init__(self) -> None:
            super().__init__({})

        def filter(self, doc: Any) -> bool | tuple[bool, str]:
            m = doc.metadata
            cluster, is_dup, kind = m.pop("dup_cluster", None), m.pop("is_duplicate", None), m.pop("dup_kind", None)
            self.verdicts = {} if cluster is None else {doc.id: (cluster, bool(is_dup), kind)}
            return super().filter(doc)

    return _ColumnDedupApply


def ColumnDedupApply() -> Any:  # noqa: N802  (a factory that reads like the class it builds)
    """A step applying dedup verdicts that were joined onto the documents as columns."""
    return _dedup_apply_class()()


def _write_outputs(spark: Any, kept: Any, drops: Any, output: str, work: str) -> None:
    """``curated/<domain>.parquet`` folders and ``drops.parquet``, one Spark job each.

    Kept documents are written once, partitioned by a copy of ``domain`` (the files keep the
    ``domain`` column, same schema as the local engine); each ``_part=<domain>`` folder is then
    renamed to ``curated/<domain>.parquet`` through the Hadoop filesystem API.
    """
    from urllib.parse import unquote

    from pyspark.sql import functions as F

    staged = f"{work}/curated"
    # the local engine's file names: runs of characters outside [A-Za-z0-9._-] become "_"
    (kept.withColumn(PART_COL, F.regexp_replace(F.coalesce(F.col("domain"), F.lit("unknown")),
                                                "[^A-Za-z0-9._-]+", "_"))
     .repartition(PART_COL).sortWithinPartitions("id")
     .write.mode("overwrite").option("compression", "zstd").partitionBy(PART_COL).parquet(staged))
    delete_path(spark, f"{output}/curated")
    fs, root = _hadoop_fs(spark, f"{output}/curated")
    fs.mkdirs(root)
    jvm = spark._jvm  # type: ignore[attr-defined]
    for status in fs.listStatus(jvm.org.apache.hadoop.fs.Path(staged)):
        name = status.getPath().getName()
        if status.isDirectory() and name.startswith(PART_COL + "="):
            domain = unquote(name[len(PART_COL) + 1:])
            fs.rename(status.getPath(), jvm.org.apache.hadoop.fs.Path(f"{output}/curated/{domain}.parquet"))
    (drops.coalesce(1).sortWithinPartitions("id").write.mode("overwrite")
     .option("compression", "zstd").parquet(f"{output}/drops.parquet"))
