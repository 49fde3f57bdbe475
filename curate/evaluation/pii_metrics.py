"""PII detection metrics: ``score_pii(pred_spans, true_spans)`` compares predicted and true spans
document by document and returns per-type precision / recall (and an ``ALL`` row where a true span
counts as found when ANY predicted span overlaps it, i.e. the value was redacted whatever its label).
The planted evaluation sets are in :mod:`curate.evaluation.planters`.

A prediction matches a true span when both have the same type and overlap; each true span and
each prediction is matched at most once. ``exact`` counts matches with identical offsets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

Span = dict[str, Any]  # {"start": int, "end": int, "type": str, ...}


def _overlap(a: Span, b: Span) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def score_pii(pred_spans: Sequence[Sequence[Span]], true_spans: Sequence[Sequence[Span]], *,
              total_bytes: int | None = None, types: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
    """Per-type ``tp, fp, fn, exact, precision, recall`` (+ ``fp_per_mb`` given ``total_bytes``).

    ``pred_spans[i]`` and ``true_spans[i]`` are the spans of document ``i``. ``types`` restricts
    scoring to those types (e.g. leave out PERSON when no NER model ran).
    """
    if len(pred_spans) != len(true_spans):
        raise ValueError(f"pred_spans has {len(pred_spans)} documents, true_spans {len(true_spans)}; "
                         "pass one span list per document, in the same order")
    if types is not None:
        keep = set(types)
        pred_spans = [[p for p in doc if p["type"] in keep] for doc in pred_spans]
        true_spans = [[t for t in doc if t["type"] in keep] for doc in true_spans]
    stats: dict[str, dict[str, float]] = {}

    def row(t: str) -> dict[str, float]:
        return stats.setdefault(t, {"tp": 0, "fp": 0, "fn": 0, "exact": 0})

    any_found = any_total = 0
    for preds, trues in zip(pred_spans, true_spans, strict=True):
        used: set[int] = set()
        for t in trues:
            hit = next((j for j, p in enumerate(preds)
                        if j not in used and p["type"] == t["type"] and _overlap(p, t)), None)
            r = row(t["type"])
            if hit is None:
                r["fn"] += 1
            else:
                used.add(hit)
                r["tp"] += 1
                r["exact"] += int(preds[hit]["start"] == t["start"] and preds[hit]["end"] == t["end"])
            any_total += 1
            any_found += int(any(_overlap(p, t) for p in preds))
        for j, p in enumerate(preds):
            if j not in used:
                row(p["type"])["fp"] += 1
    for r in stats.values():
        r["precision"] = r["tp"] / (r["tp"] + r["fp"]) if r["tp"] + r["fp"] else 1.0
        r["recall"] = r["tp"] / (r["tp"] + r["fn"]) if r["tp"] + r["fn"] else 1.0
        if total_bytes:
            r["fp_per_mb"] = r["fp"] / (total_bytes / 1e6)
    tot = {k: sum(r[k] for r in stats.values()) for k in ("tp", "fp", "fn", "exact")}
    tot["precision"] = tot["tp"] / (tot["tp"] + tot["fp"]) if tot["tp"] + tot["fp"] else 1.0
    tot["recall"] = tot["tp"] / (tot["tp"] + tot["fn"]) if tot["tp"] + tot["fn"] else 1.0
    tot["redacted_any_type"] = any_found / any_total if any_total else 1.0
    if total_bytes:
        tot["fp_per_mb"] = tot["fp"] / (total_bytes / 1e6)
    stats["ALL"] = tot
    return stats
