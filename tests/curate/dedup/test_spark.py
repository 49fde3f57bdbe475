"""Spark engine: same clusters as the local engine (parity), and large-star/small-star components.

One shared ``local[2]`` session (a session takes ~20 s to start here); kept to two tests.
"""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from curate.dedup import DedupConfig, dedup_table

pytest.importorskip("pyspark")


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = (SparkSession.builder.master("local[2]").appName("test-dedup")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    yield session
    session.stop()


@pytest.mark.slow
def test_spark_matches_local_engine(spark, real_docs: pa.Table) -> None:
    from curate.dedup.spark import dedup_table_spark

    n = real_docs.num_rows
    quality = [None if i % 3 else (i % 7) / 7 for i in range(n)]
    extra = pa.table({"id": ["z/empty", "z/none", "z/short", "z/short2"], "text": ["", None, "Too short", "too  SHORT"]})
    t = pa.concat_tables([real_docs, extra]).append_column("quality_ft", pa.array(quality + [None] * 4, pa.float64()))
    cfg = DedupConfig()
    local_stats: dict = {}
    local = dedup_table(t, cfg, stats=local_stats)
    remote = dedup_table_spark(t, cfg, spark=spark)  # no stats: each counter costs Spark jobs
    cols = ["id", "dup_cluster", "is_duplicate", "dup_kind"]
    assert remote.select(cols).equals(local.select(cols))
    assert remote.column_names == local.column_names
    assert local_stats["near_duplicates"] > 0 and local_stats["exact_duplicates"] > 0


@pytest.mark.slow
def test_large_star_small_star_components(spark) -> None:
    from curate.dedup.spark import connected_components

    # a long chain (needs several rounds), a star and a separate pair
    chain = [(i + 1, i) if i % 2 else (i, i + 1) for i in range(10, 16)]
    edges = chain + [(40, 41), (40, 42), (43, 40), (50, 51), (51, 51)]
    df = spark.createDataFrame(edges, "u long, v long")
    got = {r["node"]: r["root"] for r in connected_components(df, driver_edges=0).collect()}
    assert {r["node"]: r["root"] for r in connected_components(df, driver_edges=100).collect()} == got
    want = {**{i: 10 for i in range(10, 17)}, **{i: 40 for i in (40, 41, 42, 43)}, 50: 50, 51: 50}
    assert got == want
