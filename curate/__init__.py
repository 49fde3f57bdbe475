"""curate: deduplication, filtering, PII removal and quality scoring of text corpora.

Each step is a small datatrove ``PipelineStep``; engines (``curate.engine_local`` with datatrove's
executors, ``curate.engine_spark`` with Spark) run the same step objects.
"""
