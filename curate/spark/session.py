"""Spark sessions and Spark's filesystem layer for the Spark curation engine.

:class:`SparkConfig` is the ``spark`` section of ``params.yaml``; :func:`get_session` builds a
session from it (``local[*]`` by default, loopback only, so it runs offline); ``write_text`` and
``delete_path`` write and remove outputs through Hadoop's filesystem API, so ``hdfs://`` and
``s3a://`` outputs work like local folders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


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
    calibration_sample: str = field(default="auto", metadata={
        "help": "who reads the input for the calibration sample: driver (one process, local paths only) | "
                "executors (two Spark passes, any URI) | auto (driver when every input is a local path)"})
    conf: dict[str, str] = field(default_factory=dict, metadata={"help": "extra Spark conf as JSON"})

    def __post_init__(self) -> None:
        from corpusmix.config import ConfigError

        if self.batch_rows < 1:
            raise ConfigError(f"spark.batch_rows must be >= 1, got {self.batch_rows}")
        if self.partitions < 0:
            raise ConfigError(f"spark.partitions must be >= 0, got {self.partitions}")
        if self.calibration_sample not in ("auto", "driver", "executors"):
            raise ConfigError(f"spark.calibration_sample must be auto, driver or executors, got "
                              f"{self.calibration_sample!r}")


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


def hadoop_fs(spark: Any, path: str) -> tuple[Any, Any]:
    jvm = spark._jvm  # type: ignore[attr-defined]
    jpath = jvm.org.apache.hadoop.fs.Path(path)
    return jpath.getFileSystem(spark._jsc.hadoopConfiguration()), jpath  # type: ignore[attr-defined]


def write_text(spark: Any, path: str, text: str) -> None:
    """Write a small text file through Spark's filesystem layer (local, HDFS, S3, ...)."""
    fs, jpath = hadoop_fs(spark, path)
    out = fs.create(jpath, True)
    try:
        out.write(bytearray(text.encode("utf-8")))
    finally:
        out.close()


def delete_path(spark: Any, path: str) -> None:
    fs, jpath = hadoop_fs(spark, path)
    if fs.exists(jpath):
        fs.delete(jpath, True)
