"""The partition runner of the Spark curation engine: Arrow batches of records in, decisions out.

:func:`make_partition_fn` builds the ``mapInArrow`` function. In each partition, records become
documents (or ``read`` drops) with the local engine's :class:`curate.docio.RecordReader` rules
(:func:`records_to_docs`), and the steps run through :func:`curate.runner.run_steps`, the runner
of every engine. Every record leaves the partition as one row: kept (with the steps' new columns)
or dropped with exactly one ``(_drop_step, _drop_reason)``; each partition also emits one
statistics row (``_partition_stats``: :class:`corpusmix.stats.StepStats` per step, as JSON).
Statistics are rows of the output, not accumulators, so a retried task cannot count twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from datatrove.data import Document

from corpusmix.stats import StepStats
from curate import native
from curate.docio import Drop, RecordReader
from curate.docwrite import ANNOTATION_TYPES
from curate.runner import run_steps
from curate.spark.lines import OVERSIZE_COL
from curate.spark.models import process_steps
from curate.stats import count_read

#: Arrow types of the columns steps add, from docs/formats.md; other columns are inferred from a sample
KNOWN_TYPES: dict[str, pa.DataType] = ANNOTATION_TYPES
DROP_STEP, DROP_REASON, STATS_COL = "_drop_step", "_drop_reason", "_partition_stats"
#: key of the partition's inspection state (curate.inspection) in its statistics row
INSPECT_KEY = "__inspect__"
#: which implementation of the statistics' kernels the partition ran (``curate.native.ORIGIN``: the
#: install's compiled module ``package``, the one Spark ``shipped``, or the Python ``reference``)
KERNELS_KEY = "__kernels__"
ROWS_KEY, PART_COL, FILE_COL, READ_STEP = "__rows__", "_part", "_file", "read"


def records_to_docs(rows: list[dict[str, Any]], reader: RecordReader, *, prefix: str = ""
                    ) -> tuple[list[Document], list[Drop]]:
    """Raw records -> (documents, read drops) with the local engine's ``RecordReader`` rules."""
    docs, drops = [], []
    for i, rec in enumerate(rows):
        fname = rec.pop(FILE_COL, None) or "input"
        corrupt = rec.pop("_corrupt_record", None)
        fallback = f"{fname}#{prefix}{i}"
        if rec.pop(OVERSIZE_COL, None):  # an over-long JSON line (curate.spark.lines): never parsed
            drops.append(Drop(rec.get("id") or fallback, "too_large", rec.get("domain") or reader.cfg.default_domain))
            continue
        if corrupt is not None:
            drops.append(Drop(fallback, "malformed_json"))
            continue
        res = reader.make({k: v for k, v in rec.items() if v is not None or k in ("id", "text")}, fallback)
        (drops if isinstance(res, Drop) else docs).append(res)
    return docs, drops


def decide(steps: Sequence[Any], docs: list[Document], stats: dict[str, StepStats], observer: Any = None
           ) -> list[tuple[Document, str | None, str | None]]:
    """``(doc, drop_step, drop_reason)`` per document, in input order (``None, None`` when kept)."""
    fate = {id(o.doc): (o.step, o.reason) for o in run_steps(steps, docs, stats=stats, observer=observer)
            if not o.kept}
    return [(d, *fate.get(id(d), (None, None))) for d in docs]


def _to_batch(results: list[tuple[Document, str | None, str | None]], schema: pa.Schema,
              read_drops: Sequence[Drop] = ()) -> pa.RecordBatch:
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
                cols[n].append(doc.metadata.get(n))
    return pa.RecordBatch.from_pydict(cols, schema=schema)


def _stats_batch(stats: dict[str, Any], schema: pa.Schema) -> pa.RecordBatch:
    cols: dict[str, list[Any]] = {n: [None] for n in schema.names}
    cols[STATS_COL] = [json.dumps(stats)]
    return pa.RecordBatch.from_pydict(cols, schema=schema)


def make_partition_fn(key: str, blob_bc: Any, shipped: dict[str, str], schema: pa.Schema,
                      step_names: list[str], read_cfg: Any, *, read: bool = True, inspect: Any = None) -> Any:
    """The ``mapInArrow`` function: Arrow batches of records in, decided/annotated documents out.

    Records become documents with the local engine's ``RecordReader``; with ``read=False`` (a
    later stage re-reading earlier output, like the local engine's ``reread``) its counts are
    not reported. ``inspect`` (a ``curate.inspection.collect.InspectConfig``): the partition's
    inspection state goes into its statistics row under :data:`INSPECT_KEY`.
    """

    def run_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        steps = process_steps(key, blob_bc.value, shipped)
        stats = {n: StepStats() for n in [READ_STEP, *step_names]}
        rows = 0
        collector = None
        if inspect is not None and inspect.enabled:
            from curate.inspection.collect import Collector

            collector = Collector(inspect, count_entries=read)
        for n, docs, drops, seconds in _partition_records(batches, read_cfg):
            for rec in (*docs, *drops):
                res = count_read(stats[READ_STEP], rec)
                if collector is not None and read and isinstance(rec, Drop):
                    collector.ready(res)
            stats[READ_STEP].seconds += seconds
            rows += n
            yield _to_batch(decide(steps, docs, stats, collector), schema, drops)
        if not read:
            stats.pop(READ_STEP)
        extra = {INSPECT_KEY: collector.state()} if collector is not None else {}
        yield _stats_batch({**{n: s.to_dict() for n, s in stats.items()}, ROWS_KEY: rows,
                            KERNELS_KEY: native.ORIGIN, **extra}, schema)

    return run_partition


def infer_output_schema(input_schema: pa.Schema, steps: Sequence[Any], sample: list[dict[str, Any]],
                        read_cfg: Any = None) -> pa.Schema:
    """``id``, ``text``, the other input columns, ``domain``, then the columns the steps add.

    Types of added columns come from docs/formats.md or, for other columns, from a run of the
    steps on a sample of records (a column that is always null there becomes a string).
    """
    names = ["id", "text"] + [n for n in input_schema.names
                              if n not in ("id", "text", FILE_COL, "_corrupt_record", OVERSIZE_COL)]
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
        decide(steps, docs, {})
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


# -- the calibration sample, read by the executors ------------------------------------------------

#: rows of the sample's first pass: a partition's smallest keys per domain, and its counts (key null)
SAMPLE_KEYS_SCHEMA = pa.schema([("domain", pa.string()), ("key", pa.int64()), ("id", pa.string()),
                                ("n", pa.int64())])
#: rows of the second pass: the chosen documents, pickled
SAMPLE_DOCS_SCHEMA = pa.schema([("domain", pa.string()), ("key", pa.int64()), ("id", pa.string()),
                                ("part", pa.int64()), ("doc", pa.binary())])


def _rows_batch(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([dict(zip(schema.names, r, strict=True)) for r in rows], schema=schema)


def _partition_records(batches: Iterator[pa.RecordBatch], read_cfg: Any
                       ) -> Iterator[tuple[int, list[Document], list[Any], float]]:
    """Per non-empty Arrow batch of one partition: (its rows, documents, read drops, seconds spent
    making them), by one ``RecordReader`` per partition (duplicate ids are found within a task)
    with the fallback ids ``<file>#p<partition>:<row>+<i>`` that every pass over the partition
    gives alike."""
    from pyspark import TaskContext

    reader = RecordReader(read_cfg)
    ctx = TaskContext.get()
    part = f"p{ctx.partitionId()}:" if ctx is not None else ""
    rows = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        t0 = time.perf_counter()
        docs, drops = records_to_docs(batch.to_pylist(), reader, prefix=f"{part}{rows}+")
        rows += batch.num_rows
        yield batch.num_rows, docs, drops, time.perf_counter() - t0


def _partition_docs(batches: Iterator[pa.RecordBatch], read_cfg: Any) -> Iterator[Document]:
    """The documents of one partition, as stage a makes them (same reader, same fallback ids)."""
    for _, docs, _, _ in _partition_records(batches, read_cfg):
        yield from docs


def make_sample_keys_fn(read_cfg: Any, max_docs: int) -> Any:
    """``mapInArrow`` function of the sample's first pass: per domain the partition's ``max_docs``
    smallest ``(key, id)`` (``curate.calibrate.sample_key``) and one count row per domain."""

    def keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from curate.calibrate import push_smallest, sample_key

        heaps: dict[str, list[tuple[int, str]]] = {}
        counts: dict[str, int] = {}
        for doc in _partition_docs(batches, read_cfg):
            dom = doc.metadata.get("domain") or "unknown"
            counts[dom] = counts.get(dom, 0) + 1
            push_smallest(heaps.setdefault(dom, []), (-sample_key(doc.id), doc.id), max_docs)
        rows = [(d, -k, i, None) for d, h in heaps.items() for k, i in h] + [(d, None, None, n) for d, n in counts.items()]
        if rows:
            yield _rows_batch(rows, SAMPLE_KEYS_SCHEMA)

    return keys


def make_sample_docs_fn(read_cfg: Any, chosen_bc: Any) -> Any:
    """``mapInArrow`` function of the sample's second pass: the documents whose ``(domain, id)`` the
    first pass chose (a broadcast ``{domain: {id, ...}}``), pickled."""

    def docs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pickle

        from pyspark import TaskContext

        from curate.calibrate import sample_key

        chosen = chosen_bc.value
        ctx = TaskContext.get()
        part = ctx.partitionId() if ctx is not None else 0
        rows = []
        for doc in _partition_docs(batches, read_cfg):
            dom = doc.metadata.get("domain") or "unknown"
            if doc.id in chosen.get(dom, ()):
                rows.append((dom, sample_key(doc.id), doc.id, part, pickle.dumps(doc)))
        if rows:
            yield _rows_batch(rows, SAMPLE_DOCS_SCHEMA)

    return docs
