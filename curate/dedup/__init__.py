"""Deduplication: exact (normalised-text hash) + near (MinHash-LSH, verified) + connected components.

Public API::

    from curate.dedup import DedupConfig, dedup_table
    out = dedup_table(table, DedupConfig(threshold=0.8), engine="local")   # or "spark"

``out`` holds every input row plus ``dup_cluster`` (id of the cluster's representative: highest
``quality_ft`` when that column is present, then smallest id), ``is_duplicate`` (True for every
member except the representative) and ``dup_kind`` (``exact`` / ``near`` / null). The command line
is ``corpusmix curate dedup`` (``curate/dedup/cli.py``); the Spark engine is ``curate.dedup.spark``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from corpusmix.config import UserError
from curate.dedup.config import DedupConfig

__all__ = ["DedupConfig", "DuplicateIdError", "dedup_table", "check_input", "DUP_KINDS"]

DUP_KINDS = (None, "exact", "near")


class DuplicateIdError(UserError):
    """Input ids are not unique."""


def check_input(table: pa.Table) -> None:
    """Clear errors for missing columns, null ids and duplicate ids."""
    missing = [c for c in ("id", "text") if c not in table.column_names]
    if missing:
        raise ValueError(f"dedup input lacks column(s) {missing}; it needs `id` (unique string) and `text`")
    ids = table.column("id")
    if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type)):
        raise ValueError(f"dedup input column `id` is {ids.type}, not string; cast it (ids are strings "
                         "in docs/formats.md)")
    if ids.null_count:
        raise ValueError(f"dedup input has {ids.null_count} null id(s); give every document an id")
    import pyarrow.compute as pc

    counts = pc.value_counts(ids)
    dup = counts.filter(pc.greater(counts.field("counts"), 1))
    if len(dup):
        sample = [str(v) for v in dup.field("values")[:5].to_pylist()]
        raise DuplicateIdError(
            f"dedup input has {len(dup)} duplicate id(s), e.g. {sample}; ids must be unique "
            "(prefix them with their source, or drop the repeated rows first)")


def _quality(table: pa.Table, cfg: DedupConfig) -> list[float | None] | None:
    col = cfg.quality_column
    if col and col in table.column_names:
        return table.column(col).cast(pa.float64()).to_pylist()
    return None


def attach_result(table: pa.Table, root_row: np.ndarray, kind: np.ndarray) -> pa.Table:
    """Append ``dup_cluster``, ``is_duplicate``, ``dup_kind`` (arrays in row order)."""
    ids = table.column("id").to_pylist()
    cluster = [ids[r] for r in root_row]
    is_dup = root_row != np.arange(len(ids))
    kinds = [DUP_KINDS[k] for k in kind]
    table = table.drop_columns([c for c in ("dup_cluster", "is_duplicate", "dup_kind") if c in table.column_names])
    return (table.append_column("dup_cluster", pa.array(cluster, pa.string()))
            .append_column("is_duplicate", pa.array(is_dup, pa.bool_()))
            .append_column("dup_kind", pa.array(kinds, pa.string())))


def dedup_table(table: pa.Table, cfg: DedupConfig, *, engine: str = "local",
                stats: dict[str, Any] | None = None) -> pa.Table:
    """Every input row plus ``dup_cluster``, ``is_duplicate``, ``dup_kind``; ``stats`` is filled in."""
    from curate.dedup.components import rank_order
    from curate.dedup.local import dedup_ranked

    check_input(table)
    if engine == "spark":
        from curate.dedup.spark import dedup_table_spark

        return dedup_table_spark(table, cfg, stats=stats)
    if engine != "local":
        raise ValueError(f"unknown dedup engine {engine!r}; use 'local' or 'spark'")
    order = rank_order(table.column("id").to_pylist(), _quality(table, cfg))
    texts = table.column("text").to_pylist()
    ranked = [texts[i] for i in order]
    res = dedup_ranked(ranked, cfg)
    root_row = np.empty(len(order), np.int64)
    kind = np.empty(len(order), np.int8)
    root_row[order] = order[res.root]
    kind[order] = res.kind
    if stats is not None:
        stats.update(res.stats)
    return attach_result(table, root_row, kind)
