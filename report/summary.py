"""The headline figures of a pipeline run as one small JSON: the DVC metric that ``dvc metrics show``
prints (out/summary.json; docs/formats.md "Summary metrics").

Nine figures, short keys so that the table fits 120 columns; the detail is in the report and the plots:

- ``kept``: share of the raw documents that curation kept (``stats.json`` totals);
- ``junk_p`` / ``junk_r``: precision / recall of the filters on the planted junk documents
  (``curation.json`` ``junk``);
- ``dedup_p`` / ``dedup_r``: pair precision / recall of near-duplicate detection on the planted duplicates
  of the demo (``dedup.json`` ``demo/ours_verified`` ``planted``);
- ``pii_leaks``: planted PII values left unredacted in the kept documents (``curation.json`` ``pii.ALL.fn``);
- ``mixture``: the mixture the report recommends (its verdict: the searched mixture only when it beats
  both baselines, paired, else the better baseline);
- ``margin``: that mixture's paired mean gain in average evaluation loss (over the ablation's seeds) over
  the closest of the other compared mixtures (the baselines and the searched one; loss units, positive =
  lower loss; the report has the intervals);
- ``loss``: the final training run's loss (mean of its last 10 logged steps).

A figure whose input was not found is left out (never a placeholder).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from report.inputs import ReportInputs


def _first(group: dict[str, Any]) -> Any:
    return next(iter(group.values()), None)


def _get(doc: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(doc, dict) or k not in doc:
            return None
        doc = doc[k]
    return doc


def _metric(inputs: ReportInputs, key: str) -> dict[str, Any] | None:
    """The first metrics document that has ``key`` at its top level."""
    return next((m for m in inputs.metrics.values() if isinstance(m, dict) and key in m), None)


def _r(x: Any, nd: int = 3) -> float | None:
    return round(float(x), nd) if isinstance(x, int | float) and np.isfinite(x) else None


def summary_metrics(inputs: ReportInputs, headline: Any = None, runs: Sequence[Any] = (),
                    baselines: Sequence[str] = ("natural", "uniform")) -> dict[str, Any]:
    """The figures of the module docstring that the inputs allow, in a fixed order."""
    out: dict[str, Any] = {}
    st = _first(inputs.stats)
    tot = _get(st, "totals") or {}
    if tot.get("docs_in"):
        out["kept"] = _r(tot["kept"] / tot["docs_in"])
    cur = _metric(inputs, "junk")
    out["junk_p"], out["junk_r"] = _r(_get(cur, "junk", "precision")), _r(_get(cur, "junk", "recall"))
    dd = _metric(inputs, "demo/ours_verified")
    out["dedup_p"] = _r(_get(dd, "demo/ours_verified", "planted", "precision"))
    out["dedup_r"] = _r(_get(dd, "demo/ours_verified", "planted", "recall"))
    leaks = _get(_metric(inputs, "pii"), "pii", "ALL", "fn")
    out["pii_leaks"] = int(leaks) if isinstance(leaks, int | float) else None
    if headline is not None:
        from mix.paired import paired_stats

        use = headline.use or headline.chosen
        out["mixture"] = use
        by_name = {r.name: r for r in runs}
        others = [n for n in dict.fromkeys([*baselines, headline.chosen]) if n != use and n in by_name]
        if use in by_name:
            gains = [paired_stats(by_name[use].avg_per_seed, by_name[n].avg_per_seed)["mean_diff"] for n in others
                     if len(by_name[n].avg_per_seed) == len(by_name[use].avg_per_seed) > 1]
            if gains:
                out["margin"] = _r(min(gains), 4)
    logs = _first(inputs.train_logs) or []
    losses = [float(r["loss"]) for r in logs if isinstance(r.get("loss"), int | float) and "event" not in r]
    if losses:
        out["loss"] = _r(np.mean(losses[-10:]))
    return {k: v for k, v in out.items() if v is not None}


def write_summary(path: str | Path, summary: dict[str, Any]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(summary, indent=1) + "\n")
    tmp.replace(path)
