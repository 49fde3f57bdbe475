"""The Spark engine of the curation chain: the same step objects as the local engine, run on Spark.

Run it with ``corpusmix curate run --engine spark --master local[*]|spark://HOST:PORT`` or submit
``curate/spark/submit.py`` with ``spark-submit``. :func:`run_spark` runs the local engine's chain
(read -> stage a -> global dedup -> stage b -> merge): records are read by
:mod:`curate.spark.read`, the per-document steps run in ``mapInArrow`` partitions
(:mod:`curate.spark.partition`) and each stage's result is materialised once under
``<output>/_work``; global dedup runs ``curate.dedup.spark``'s shuffles and stage b applies its
verdicts. Outputs follow the local engine's contracts (``docs/formats.md``). How it stays exact,
the models it ships and how to run it on a cluster: docs/spark.md.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from collections.abc import Sequence
from typing import Any

from corpusmix import timing
from corpusmix.environment import environment
from corpusmix.logging import get_logger
from corpusmix.stats import merge_stats, stats_document
from curate.chain import ColumnDedupApply
from curate.spark.models import localise_model_paths, ship_model_files
from curate.spark.partition import (
    DROP_REASON,
    DROP_STEP,
    INSPECT_KEY,
    KERNELS_KEY,
    PART_COL,
    READ_STEP,
    ROWS_KEY,
    STATS_COL,
    infer_output_schema,
    make_partition_fn,
)
from curate.spark.read import read_documents
from curate.spark.session import SparkConfig, delete_path, get_session, hadoop_fs, write_text

__all__ = ["SparkConfig", "get_session", "map_steps", "run_spark"]

log = get_logger("curate.spark")


# ---------------------------------------------------------------------------------------- a stage

def map_steps(spark: Any, df: Any, steps: Sequence[Any], *, model_files: Sequence[str] = (),
              read_cfg: Any = None, read: bool = True, sample_rows: int = 64,
              inspect: Any = None) -> tuple[Any, list[str]]:
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
    sc = spark.sparkContext
    shipped = ship_model_files(sc, steps, model_files)
    in_schema = to_arrow_schema(df.schema)
    sample = df.limit(sample_rows).toArrow().to_pylist() if sample_rows else []
    sample_steps = pickle.loads(blob)  # a separate copy: its models stay on the driver
    localise_model_paths(sample_steps, {})
    out_schema = infer_output_schema(in_schema, sample_steps, sample, read_cfg)
    fn = make_partition_fn(key, sc.broadcast(blob), shipped, out_schema, names, read_cfg, read=read,
                           inspect=inspect)
    return df.mapInArrow(fn, from_arrow_schema(out_schema)), [READ_STEP, *names] if read else names


# --------------------------------------------------------------------------------------- the chain

def run_spark(*, inputs: Sequence[str], output: str, steps: Sequence[Any], dedup: Any = None,
              steps_after: Sequence[Any] = (), cfg: SparkConfig | None = None, read_cfg: Any = None,
              spark: Any = None, set_master: bool = True, calibrate_cfg: Any = None,
              inspect_cfg: Any = None) -> dict[str, Any]:
    """Run the curation chain on Spark; writes ``curated/<domain>.parquet``, ``drops.parquet``, ``stats.json``.

    The chain is the local engine's: ``steps`` (stage a: normalize, langid, filters, quality),
    then global dedup when ``dedup`` (a ``DedupConfig``) is given, then ``steps_after`` (stage b:
    PII). Returns the stats document written to ``stats.json``. ``inspect_cfg`` (default: on) also
    writes ``inspect.json`` (``curate.inspection``) from the partitions' inspection states.

    Spark jobs per stage: one small sample (output schema), one pass that runs the steps and
    materialises their result under ``_work/``, one collect of the per-partition statistics; then
    dedup's shuffles, and one write per output. Steps that calibrate (``curate.calibrate``) are
    calibrated first, exactly as the local engine does (same thresholds): the sample is read by
    the driver, or by the executors (``SparkConfig.calibration_sample``, :func:`sample_on_executors`).
    """
    from curate.calibrate import CalibrateConfig, calibrate_steps
    from curate.inspection.collect import InspectConfig

    calibrate_cfg = calibrate_cfg or CalibrateConfig()
    inspect_cfg = inspect_cfg if inspect_cfg is not None else InspectConfig()
    states: list[dict[str, Any]] = []  # the partitions' inspection states, filled by _stage
    kernels: dict[str, int] = {}  # partitions per curate.native.ORIGIN, filled by _stage
    inputs = [str(i) for i in ([inputs] if isinstance(inputs, str) else inputs)]
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

    df = read_documents(spark, inputs, read_cfg, scratch=f"{work}/jsonl")
    on_executors = cfg.calibration_sample == "executors" or (
        cfg.calibration_sample == "auto" and not all(_local_path(i) for i in inputs))
    calibration = calibrate_steps(
        list(steps), inputs=inputs, read_cfg=read_cfg, cfg=calibrate_cfg,
        sampler=(lambda k: sample_on_executors(spark, df, read_cfg, k)) if on_executors else None)
    lap("calibrate")
    if cfg.partitions:
        df = df.repartition(cfg.partitions)
    kept, drops, stats = _stage(spark, df, steps, f"{work}/a", cfg=cfg, read_cfg=read_cfg, read=True,
                                inspect=inspect_cfg, states=states, kernels=kernels)
    lap("stage_a")
    if dedup is not None or steps_after:
        stage_b = list(steps_after)
        if dedup is not None:
            kept, dedup_seconds = _dedup_verdicts(spark, kept, dedup, work)
            stage_b.insert(0, ColumnDedupApply())
            lap("dedup_shuffles")
        kept, drops_b, stats_b = _stage(spark, kept, stage_b, f"{work}/b", cfg=cfg, read_cfg=read_cfg, read=False,
                                        inspect=inspect_cfg, states=states, kernels=kernels)
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
        _write_calibration(spark, doc, calibration, drops, output, calibrate_cfg.guard_share)
    if inspect_cfg.enabled:
        _write_inspection(spark, kept, states, inspect_cfg, list(stats), steps_after, output)
    _write_stats(spark, doc, output, t_start, timings, kernels)
    if not cfg.keep_work:
        delete_path(spark, work)
    log.info("spark curation done", extra={"data": {"output": output, **doc["totals"]}})
    return doc


def _write_calibration(spark: Any, doc: dict[str, Any], calibration: dict[str, Any], drops: Any, output: str,
                       guard_share: float) -> None:
    """``calibration.json``, the guard report and the domain verdicts (into ``doc`` and
    ``curated/domain_verdicts.json``)."""
    from curate.calibrate import guard_report, verdicts_of

    write_text(spark, f"{output}/calibration.json", json.dumps(calibration, indent=1) + "\n")
    rows = drops.groupBy("domain", "step", "reason").count().collect()
    doc.update(guard_report(sorted((r["domain"] or "unknown", r["step"], r["reason"], r["count"]) for r in rows),
                            calibration.get("domain_docs") or {}, share=guard_share))
    verdicts = verdicts_of(calibration)
    if verdicts:
        doc.update(verdicts)
        write_text(spark, f"{output}/curated/domain_verdicts.json",
                   json.dumps(verdicts, indent=1, sort_keys=True) + "\n")


def _write_stats(spark: Any, doc: dict[str, Any], output: str, t_start: float, timings: dict[str, float],
                 kernels: dict[str, int] | None = None) -> None:
    """``stats.json`` (with the engine and environment entries: ``engine.kernels`` counts the
    partitions per implementation of the kernels, ``curate.native.ORIGIN``) and, beside it, its
    wall-clock values (``stats.timing.json``)."""
    doc["engine"] = {"name": "spark", "master": spark.sparkContext.master,
                     "seconds": round(time.perf_counter() - t_start, 3), "phases": timings,
                     "kernels": dict(sorted((kernels or {}).items()))}
    doc["environment"] = environment()
    pure, timings = timing.split(doc)  # wall-clock values beside the DVC output, never in it
    write_text(spark, f"{output}/stats.json", json.dumps(pure, indent=2) + "\n")
    write_text(spark, f"{output}/stats.timing.json", json.dumps(timings, indent=2) + "\n")


def _local_path(path: str) -> bool:
    """Whether the driver can read ``path`` itself (an existing local path, not a URI)."""
    import os

    return "://" not in path and not path.startswith("file:") and os.path.exists(path)


def sample_on_executors(spark: Any, df: Any, read_cfg: Any, max_docs: int) -> tuple[dict[str, Any], dict[str, int]]:
    """The calibration sample (``curate.calibrate.sample_input``'s result) read by the executors.

    Two passes over ``df`` (raw records, as :func:`read_documents` gives them; documents made as
    stage a makes them): the first keeps each partition's ``max_docs`` smallest ``(key, id)`` per
    domain and counts its documents, and Spark picks the ``max_docs`` smallest of those per domain;
    the second returns just the chosen documents to the driver. The driver holds the sample, never
    the input, and reads nothing itself, so any URI works. Same sample as the driver's reader for
    documents with ids; records without one are sampled by the partition-based ids Spark's reader
    gives them (``file#p<N>:...``, as in stage a), not by the local reader's line numbers. Counts,
    like stage a's, find repeated ids within a partition.
    """
    import pickle
    from collections import defaultdict

    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    from curate.calibrate import merge_samples
    from curate.docio import ReadConfig
    from curate.spark.partition import (
        SAMPLE_DOCS_SCHEMA,
        SAMPLE_KEYS_SCHEMA,
        make_sample_docs_fn,
        make_sample_keys_fn,
    )

    read_cfg = read_cfg or ReadConfig()
    keys = df.mapInArrow(make_sample_keys_fn(read_cfg, max_docs), from_arrow_schema(SAMPLE_KEYS_SCHEMA)).localCheckpoint()
    counts = {r["domain"]: int(r["n"]) for r in
              keys.where(F.col("key").isNull()).groupBy("domain").agg(F.sum("n").alias("n")).collect()}
    ranked = (keys.where(F.col("key").isNotNull()).dropDuplicates(["domain", "key", "id"])
              .withColumn("_r", F.row_number().over(Window.partitionBy("domain").orderBy("key", "id"))))
    chosen: dict[str, set[str]] = defaultdict(set)
    for r in ranked.where(F.col("_r") <= max_docs).select("domain", "id").collect():
        chosen[r["domain"]].add(r["id"])
    bc = spark.sparkContext.broadcast(dict(chosen))
    try:
        rows = df.mapInArrow(make_sample_docs_fn(read_cfg, bc), from_arrow_schema(SAMPLE_DOCS_SCHEMA)).collect()
    finally:
        bc.unpersist()
    # in partition order, so that merge_samples keeps a repeated id from the first partition
    rows.sort(key=lambda r: r["part"])
    found: dict[str, list[tuple[int, str, Any]]] = defaultdict(list)
    for r in rows:
        found[r["domain"]].append((r["key"], r["id"], pickle.loads(r["doc"])))
    sample, counts = merge_samples([(dict(found), counts)], max_docs)
    log.info("calibration sample read by the executors", extra={"data": {
        "docs": sum(counts.values()), "sampled": sum(len(v) for v in sample.values())}})
    return sample, counts


def _write_inspection(spark: Any, kept: Any, states: list[dict[str, Any]], cfg: Any, order: list[str],
                      steps_after: Sequence[Any], output: str) -> None:
    """``inspect.json`` from the partitions' states; cluster representatives from the kept documents."""
    from pyspark.sql import functions as F

    from curate.inspection.finish import inspection_document

    def representatives(ids: list[str]) -> dict[str, str]:
        rows = kept.where(F.col("id").isin(ids)).select("id", "text").collect()
        return {r["id"]: r["text"] for r in rows if isinstance(r["text"], str)}

    pii = next((s for s in steps_after if s.step_name == "pii"), None)
    doc = inspection_document(states, cfg, order=order, pii_step=pii, engine="spark",
                              representatives=representatives)
    write_text(spark, f"{output}/inspect.json", json.dumps(doc, separators=(",", ":")))


def _stage(spark: Any, df: Any, steps: Sequence[Any], where: str, *, cfg: SparkConfig, read_cfg: Any,
           read: bool, inspect: Any = None, states: list[dict[str, Any]] | None = None,
           kernels: dict[str, int] | None = None) -> tuple[Any, Any, dict[str, Any]]:
    """Run per-document steps once; (kept DataFrame, drops DataFrame, per-step stats); the
    partitions' inspection states are appended to ``states``, and ``kernels`` counts the partitions
    per implementation of the kernels they ran (``curate.native.ORIGIN``)."""
    from pyspark.sql import functions as F

    mapped, names = map_steps(spark, df, steps, model_files=cfg.model_files, read_cfg=read_cfg,
                              read=read, inspect=inspect)
    # one materialisation: the steps run exactly once per document, every output below reads it
    mapped.write.mode("overwrite").parquet(where)
    ann = spark.read.parquet(where)
    part_stats = [json.loads(r[0]) for r in ann.where(F.col(STATS_COL).isNotNull()).select(STATS_COL).collect()]
    for p in part_stats:
        p.pop(ROWS_KEY, None)
        kind = p.pop(KERNELS_KEY, "reference")
        if kernels is not None:
            kernels[kind] = kernels.get(kind, 0) + 1
        state = p.pop(INSPECT_KEY, None)
        if state is not None and states is not None:
            states.append(state)
    stats = merge_stats(part_stats, order=names)
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
    fs, root = hadoop_fs(spark, f"{output}/curated")
    fs.mkdirs(root)
    jvm = spark._jvm  # type: ignore[attr-defined]
    for status in fs.listStatus(jvm.org.apache.hadoop.fs.Path(staged)):
        name = status.getPath().getName()
        if status.isDirectory() and name.startswith(PART_COL + "="):
            domain = unquote(name[len(PART_COL) + 1:])
            fs.rename(status.getPath(), jvm.org.apache.hadoop.fs.Path(f"{output}/curated/{domain}.parquet"))
    (drops.coalesce(1).sortWithinPartitions("id").write.mode("overwrite")
     .option("compression", "zstd").parquet(f"{output}/drops.parquet"))
