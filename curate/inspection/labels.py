"""Samples out for labelling, labels back in: precision and recall of each rule.

:func:`export_samples` writes the run's inspection samples (already redacted and cut, as the
view shows them) as one Parquet table, one row per text: ``kind`` (``dropped`` or ``near_miss``),
``domain``, ``step``, ``reason`` (the drop reason; for a near-miss, the rule's), ``rule`` (the
rule it is scored under: ``lang:*`` gathers every ``lang:<code>``), ``stat``, ``value``, ``margin``
(near-misses: distance to the threshold), ``id``, ``chars``, ``text``, ``values`` (JSON: the
dropped document's statistics) and an empty ``should_drop`` (bool) for the labeller.

:func:`score_labels` reads such a file with ``should_drop`` filled (true: the document should be
dropped; null: not labelled) and gives, per ``(step, rule)``:

* ``precision``: share of the rule's drops that should be dropped; the dropped samples of a
  (domain, reason) are a uniform sample (smallest sha1 of the id) of its drops, so each
  (domain, reason) weighs by its number of drops in the run;
* ``recall_in_sample``: labelled drops that should be dropped over those plus the labelled kept
  near-misses that should have been dropped, unweighted: recall near the threshold, where misses
  concentrate, not over the whole corpus (kept documents far from the threshold are not sampled).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from corpusmix.config import UserError

SCHEMA = pa.schema([("kind", pa.string()), ("domain", pa.string()), ("step", pa.string()), ("reason", pa.string()),
                    ("rule", pa.string()), ("stat", pa.string()), ("value", pa.float64()), ("margin", pa.float64()),
                    ("id", pa.string()), ("chars", pa.int64()), ("text", pa.string()), ("values", pa.string()),
                    ("should_drop", pa.bool_())])


def _rule_of(rules: list[dict[str, Any]], reason: str) -> str:
    for r in rules:
        rr = r["reason"]
        if rr == reason or (rr.endswith(":*") and reason.startswith(rr[:-1])):
            return rr
    return reason


def sample_rows(insp: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for step, by in (insp.get("samples") or {}).items():
        for dom, reasons in by.items():
            rules = (insp.get("rules") or {}).get(step, {}).get(dom, [])
            for reason, xs in reasons.items():
                for x in xs:
                    rows.append({"kind": "dropped", "domain": dom, "step": step, "reason": reason,
                                 "rule": _rule_of(rules, reason), "stat": None, "value": None, "margin": None,
                                 "id": x["id"], "chars": x["chars"], "text": x["text"],
                                 "values": json.dumps(x.get("values") or {}, sort_keys=True), "should_drop": None})
    for step, by in (insp.get("near") or {}).items():
        for dom, keyed in by.items():
            for key, xs in keyed.items():
                reason, _, stat = key.partition("|")
                for x in xs:
                    rows.append({"kind": "near_miss", "domain": dom, "step": step, "reason": reason, "rule": reason,
                                 "stat": stat, "value": x["value"], "margin": x["margin"], "id": x["id"],
                                 "chars": x["chars"], "text": x["text"], "values": None, "should_drop": None})
    return rows


def export_samples(insp: dict[str, Any], output: str | Path) -> int:
    """Write the samples table (see the module docstring); returns its rows."""
    rows = sample_rows(insp)
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), out, compression="zstd")
    return len(rows)


def _label(v: Any) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "drop", "bad"):
        return True
    if s in ("false", "0", "no", "keep", "good"):
        return False
    if s in ("", "none", "null", "nan"):
        return None
    raise UserError(f"should_drop value {v!r} is not a label: use true/false (or drop/keep)")


def score_labels(labelled: str | Path, insp: dict[str, Any]) -> dict[str, Any]:
    """Precision and recall per ``(step, rule)`` from a labelled samples file."""
    try:
        t = pq.read_table(labelled)
    except (OSError, pa.ArrowInvalid) as exc:
        raise UserError(f"labelled file {str(labelled)!r} is not readable Parquet: {exc}") from exc
    need = {"kind", "domain", "step", "reason", "rule", "should_drop"}
    if need - set(t.column_names):
        raise UserError(f"labelled file {str(labelled)!r} lacks columns {sorted(need - set(t.column_names))} "
                        "(write it with `corpusmix inspect --export`)")
    strata: dict[tuple[str, str], dict[tuple[str, str], list[bool]]] = defaultdict(lambda: defaultdict(list))
    near: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in t.select(sorted(need)).to_pylist():
        y = _label(r["should_drop"])
        if y is None:
            continue
        key = (r["step"], r["rule"])
        if r["kind"] == "dropped":
            strata[key][(r["domain"], r["reason"])].append(y)
        elif r["kind"] == "near_miss":
            near[key].append(y)
    counts = insp.get("counts") or {}
    out = []
    for key in sorted(set(strata) | set(near)):
        step, rule = key
        num = den = 0.0
        labelled = tp = 0
        for (dom, reason), ys in strata.get(key, {}).items():
            n = (counts.get(step, {}).get(dom, {}).get("dropped", {}) or {}).get(reason, len(ys))
            num += n * sum(ys) / len(ys)
            den += n
            labelled += len(ys)
            tp += sum(ys)
        fn = sum(near.get(key, []))
        out.append({"step": step, "rule": rule, "labelled_drops": labelled,
                    "precision": round(num / den, 4) if den else None, "labelled_near": len(near.get(key, [])),
                    "recall_in_sample": round(tp / (tp + fn), 4) if tp + fn else None})
    return {"rules": out, "note": "precision weighted by each (domain, reason)'s drops in the run; recall over the "
                                  "labelled drops and kept near-misses (near the threshold, unweighted)"}
