"""The Spark engine of the curation chain (docs/spark.md): reading, the partition runner, model
shipping, the session, orchestration, the ``curate run --engine spark`` side and ``spark-submit``."""
