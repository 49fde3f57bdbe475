"""curate: deduplication, filtering, PII removal and quality scoring of text corpora.

Each step is a small datatrove ``PipelineStep``; engines (``curate.engine_local`` with datatrove's
executors, ``curate.spark.engine`` with Spark) run the same step objects.
"""
