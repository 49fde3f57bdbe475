"""Spark engine of deduplication: same hashing as the local engine, shuffles where they belong.

Use :func:`dedup_dataframe` from a Spark job (the Spark curation engine calls it), or
:func:`dedup_table_spark` / ``corpusmix curate dedup --engine spark`` for an Arrow table (it starts a
``local[*]`` session unless one is active). Steps:

1. rank = position in the order (quality desc, missing last; id asc), via a distributed sort and
   ``zipWithIndex`` — the same order as the local engine;
2. ``mapInArrow`` runs :func:`curate.dedup.minhash.hash_batch` (the local engine's code: same
   shingles, permutations and band keys) on each Arrow batch;
3. exact groups: ``min(rank)`` per normalised-text hash (a window over the hash);
4. band groupBy: one row per (band, key) bucket with its sorted ranks; buckets become pairs (all
   pairs up to ``max_bucket_pairs`` members, else a star around the smallest), deduplicated;
5. verification: both texts joined onto each pair, exact shingle Jaccard in ``mapInArrow``;
6. connected components by alternating large-star / small-star (Kiveris et al., 2014) on the
   edge DataFrame until it stops changing; each node ends pointing at its component's minimum rank.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from corpusmix.logging import get_logger
from curate.dedup.config import DedupConfig

log = get_logger("curate.dedup.spark")


def get_spark(master: str = "local[*]", *, shuffle_partitions: int = 8):  # -> SparkSession
    """The active SparkSession, or a new local one (UI off, Arrow on)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    return (SparkSession.builder.master(master).appName("corpusmix-dedup")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.driver.memory", "2g")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate())


_HASH_SCHEMA = "rank long, h0 long, h1 long, n_words long, n_shingles long, keys array<long>"


def _hasher(cfg: DedupConfig):
    bands, rows = cfg.bands_rows()
    kw = {"ngram": cfg.ngram, "num_perm": cfg.num_perm, "seed": cfg.seed, "bands": bands, "rows": rows}

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from curate.dedup.minhash import hash_batch

        for b in batches:
            if b.num_rows == 0:
                continue
            out = hash_batch(b.column("text").to_pylist(), **kw)
            exact = out["exact"].view(np.int64)
            keys = out["keys"].T.view(np.int64)  # (n, bands)
            flat = pa.array(keys.ravel(), pa.int64())
            offs = pa.array(np.arange(0, keys.size + 1, keys.shape[1], dtype=np.int32))
            yield pa.RecordBatch.from_arrays(
                [b.column("rank"), pa.array(exact[:, 0]), pa.array(exact[:, 1]),
                 pa.array(out["n_words"]), pa.array(out["n_shingles"]), pa.ListArray.from_arrays(offs, flat)],
                names=["rank", "h0", "h1", "n_words", "n_shingles", "keys"])

    return run


def _verifier(cfg: DedupConfig):
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from curate.dedup.verify import pair_jaccard, shingle_sets

        for b in batches:
            n = b.num_rows
            if n == 0:
                continue
            texts = b.column("tu").to_pylist() + b.column("tv").to_pylist()
            flat, offsets = shingle_sets(texts, cfg.ngram)
            pairs = np.stack((np.arange(n), np.arange(n, 2 * n)), axis=1)
            jac = pair_jaccard(pairs, flat, offsets, np.arange(2 * n))
            yield pa.RecordBatch.from_arrays([b.column("u"), b.column("v"), pa.array(jac)],
                                             names=["u", "v", "jaccard"])

    return run


def _bucket_pairs_expr(max_bucket_pairs: int) -> str:
    # r: sorted array<long> of a bucket's ranks (0-based r[i]; slice is 1-based)
    all_pairs = ("flatten(transform(sequence(0, size(r) - 2), "
                 "i -> transform(slice(r, i + 2, size(r) - i - 1), y -> named_struct('u', r[i], 'v', y))))")
    star = "transform(slice(r, 2, size(r) - 1), y -> named_struct('u', r[0], 'v', y))"
    return f"IF(size(r) <= {int(max_bucket_pairs)}, {all_pairs}, {star})"


def connected_components(edges, *, max_iter: int = 100, driver_edges: int = 0):
    """Large-star / small-star until the edge set is a star forest; returns a DataFrame (node, root)
    for every node that appears in an edge (root = smallest node of its component, roots map to
    themselves).

    With ``driver_edges > 0``, once the edge set has at most that many edges the rest runs on the
    driver (union-find over the collected edges): a few thousand edges do not need a dozen Spark
    jobs, while a large graph is still reduced on the cluster.
    """
    from pyspark.sql import functions as F

    e = edges.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")) \
        .filter(F.col("u") != F.col("v")).distinct().localCheckpoint()
    for it in range(max_iter):
        if driver_edges > 0:
            small = e.limit(driver_edges + 1).collect()
            if len(small) <= driver_edges:
                return _driver_components(e.sparkSession, small)
        # large-star: each node u links its larger neighbours to min(N(u) ∪ {u})
        sym = e.union(e.select(F.col("v").alias("u"), F.col("u").alias("v")))
        m = sym.groupBy("u").agg(F.least(F.min("v"), F.first("u")).alias("m"))
        ls = sym.join(m, "u").filter(F.col("v") > F.col("u")) \
            .select(F.col("v").alias("u"), F.col("m").alias("v")).distinct()
        # small-star: each node u links itself and its smaller neighbours to min(N(u) ∪ {u})
        o = ls.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")).filter("u != v")
        m2 = o.groupBy("u").agg(F.min("v").alias("m"))
        ss = o.join(m2, "u").select(F.col("v").alias("u"), "m") \
            .union(m2.select("u", "m")).filter(F.col("u") != F.col("m")) \
            .select(F.col("u"), F.col("m").alias("v")).distinct().localCheckpoint()
        e = ss
        # converged when every edge points at a root (a node that never links to a smaller one):
        # then large-star and small-star both return the same star forest
        if e.join(e.select(F.col("u").alias("v")), "v").limit(1).count() == 0:
            log.info("connected components converged", extra={"data": {"iterations": it + 1}})
            break
    else:
        raise RuntimeError(f"connected components did not converge in {max_iter} iterations")
    roots = e.select(F.col("v").alias("node"), F.col("v").alias("root")).distinct()
    return e.select(F.col("u").alias("node"), F.col("v").alias("root")).union(roots) \
        .groupBy("node").agg(F.min("root").alias("root"))


def _driver_components(spark, rows: list) -> Any:
    from curate.dedup.components import union_find

    pairs = np.array([(r["u"], r["v"]) for r in rows], dtype=np.int64).reshape(-1, 2)
    nodes, inv = np.unique(pairs, return_inverse=True)
    root = union_find(nodes.size, inv.reshape(-1, 2))
    data = [(int(a), int(b)) for a, b in zip(nodes, nodes[root], strict=True)]
    return spark.createDataFrame(data, "node long, root long")


def dedup_dataframe(df, cfg: DedupConfig, *, stats: dict[str, Any] | None = None):  # -> DataFrame
    """Every row of ``df`` (needs ``id``, ``text``) plus ``dup_cluster``, ``is_duplicate``, ``dup_kind``."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = df.sparkSession
    qcol = cfg.quality_column if cfg.quality_column in df.columns else None
    order = [F.col("id").asc()]
    keys = df.select("id")
    if qcol:
        q = F.col(qcol).cast("double")
        keys = df.select("id", F.when(F.isnan(q), None).otherwise(q).alias("__q"))
        order = [F.col("__q").desc_nulls_last(), F.col("id").asc()]
    # rank = position in the global order: a distributed sort, then zipWithIndex over ids only
    ranks = spark.createDataFrame(keys.orderBy(*order).select("id").rdd.map(lambda r: r[0]).zipWithIndex(),
                                  "id string, rank long")
    ranked = df.join(ranks, "id").localCheckpoint()

    hashed = ranked.select("rank", F.coalesce("text", F.lit("")).alias("text")) \
        .mapInArrow(_hasher(cfg), _HASH_SCHEMA)
    nonempty = F.col("n_words") > 0
    if cfg.exact:
        w = Window.partitionBy("h0", "h1")
        hashed = hashed.withColumn("eroot", F.when(nonempty, F.min("rank").over(w)).otherwise(F.col("rank")))
    else:
        hashed = hashed.withColumn("eroot", F.col("rank"))
    hashed = hashed.localCheckpoint()  # hashing runs once; later stages read it several times
    exact_edges = hashed.filter(F.col("eroot") != F.col("rank")).select(F.col("rank").alias("u"),
                                                                         F.col("eroot").alias("v"))
    edges = exact_edges
    if cfg.near:
        eligible = hashed.filter((F.col("eroot") == F.col("rank")) & (F.col("n_shingles") > 0))
        buckets = eligible.select("rank", F.posexplode("keys").alias("band", "key")) \
            .groupBy("band", "key").agg(F.array_sort(F.collect_list("rank")).alias("r")) \
            .filter(F.size("r") > 1)
        pairs = buckets.select(F.explode(F.expr(_bucket_pairs_expr(cfg.max_bucket_pairs))).alias("p")) \
            .select("p.u", "p.v").distinct()
        if stats is not None:
            pairs = pairs.localCheckpoint()
            stats["candidate_pairs"] = pairs.count()
        if cfg.verify:
            texts = ranked.select(F.col("rank"), F.coalesce("text", F.lit("")).alias("t"))
            with_text = pairs.join(texts.withColumnRenamed("rank", "u").withColumnRenamed("t", "tu"), "u") \
                .join(texts.withColumnRenamed("rank", "v").withColumnRenamed("t", "tv"), "v")
            pairs = with_text.select("u", "v", "tu", "tv") \
                .mapInArrow(_verifier(cfg), "u long, v long, jaccard double") \
                .filter(F.col("jaccard") >= cfg.threshold).select("u", "v")
            if stats is not None:
                pairs = pairs.localCheckpoint()
                stats["verified_pairs"] = pairs.count()
        edges = edges.union(pairs)
    comp = connected_components(edges, driver_edges=cfg.spark_driver_edges)
    info = hashed.select("rank", "h0", "h1", "n_words", "n_shingles")
    res = ranked.join(comp.withColumnRenamed("node", "rank"), "rank", "left") \
        .withColumn("root", F.coalesce("root", "rank")).join(info, "rank")
    reps = res.select(F.col("rank").alias("root"), F.col("id").alias("dup_cluster"),
                      F.col("h0").alias("rh0"), F.col("h1").alias("rh1"))
    res = res.join(reps, "root")
    is_dup = F.col("root") != F.col("rank")
    same = (F.col("h0") == F.col("rh0")) & (F.col("h1") == F.col("rh1")) & (F.col("n_words") > 0)
    res = res.withColumn("is_duplicate", is_dup) \
        .withColumn("dup_kind", F.when(~is_dup, F.lit(None).cast("string"))
                    .when(same, F.lit("exact")).otherwise(F.lit("near")))
    if stats is not None:
        res = res.localCheckpoint()
    if stats is not None:
        bands, rows = cfg.bands_rows()
        agg = res.agg(F.count("*").alias("docs"),
                      F.sum(F.when(F.col("dup_kind") == "exact", 1).otherwise(0)).alias("exact"),
                      F.sum(F.when(F.col("dup_kind") == "near", 1).otherwise(0)).alias("near"),
                      F.sum(F.when(F.col("n_words") == 0, 1).otherwise(0)).alias("empty"),
                      F.sum(F.when((F.col("n_words") > 0) & (F.col("n_shingles") == 0), 1).otherwise(0))
                      .alias("short")).first()
        stats.update({"docs": agg["docs"], "bands": bands, "rows": rows,
                      "exact_duplicates": int(agg["exact"] or 0), "near_duplicates": int(agg["near"] or 0),
                      "clusters": int(agg["docs"] - (agg["exact"] or 0) - (agg["near"] or 0)),
                      "skipped": {"empty_text": int(agg["empty"] or 0),
                                  "shorter_than_shingle": int(agg["short"] or 0)}})
    cols = [c for c in df.columns if c not in ("dup_cluster", "is_duplicate", "dup_kind")]
    return res.select(*cols, "dup_cluster", "is_duplicate", "dup_kind")


def dedup_table_spark(table: pa.Table, cfg: DedupConfig, *, stats: dict[str, Any] | None = None,
                      spark=None) -> pa.Table:
    """:func:`dedup_dataframe` on an Arrow table; rows come back in input order."""
    import pyarrow.compute as pc

    spark = spark or get_spark()
    row = "__row"
    src = table.append_column(row, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    df = spark.createDataFrame(src)
    out = dedup_dataframe(df, cfg, stats=stats).toArrow()
    out = out.take(pc.sort_indices(out.column(row)))
    return out.drop_columns([row])
