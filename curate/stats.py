"""Curation statistics: the ``read`` pseudo-step and drop rows, on top of ``corpusmix.stats``.

The statistics type and the ``stats.json`` document are the bottom layer's contract
(:mod:`corpusmix.stats`, re-exported here). What is curation's own: :func:`count_read` counts the
reader's records in the ``read`` step of both engines (``bytes_in`` counts the text of documents
only), and :func:`drop_row` is one row of ``drops.parquet`` (``id, step, reason, domain``; every
dropped document has exactly one).
"""

from __future__ import annotations

from datatrove.data import Document

from corpusmix.stats import StepStats, merge_stats, read_stats, stats_document, write_stats
from curate import native
from curate.docio import READ_STEP, Drop
from curate.runner import Outcome

__all__ = ["StepStats", "count_read", "drop_row", "merge_stats", "read_stats", "stats_document", "write_stats"]


def count_read(st: StepStats, rec: Document | Drop) -> Document | Outcome:
    """Count one record of the reader in the ``read`` statistics ``st``.

    A document is returned as is; a record that is no document becomes a ``read`` outcome (its
    place in a stream of documents is kept, see :func:`curate.runner.run_steps`).
    """
    st.docs_in += 1
    if isinstance(rec, Drop):
        st.dropped[rec.reason] += 1
        return Outcome(Document(text="", id=rec.id, metadata={"domain": rec.domain}), READ_STEP, rec.reason)
    st.kept += 1
    st.bytes_in += native.utf8_len(rec.text)
    return rec


def drop_row(res: Outcome) -> tuple[str, str, str, str]:
    """``(id, step, reason, domain)`` of a dropped document: one row of ``drops.parquet``."""
    return str(res.doc.id), str(res.step), str(res.reason), res.doc.metadata.get("domain") or "unknown"
