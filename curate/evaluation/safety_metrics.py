"""Scores of the toxicity and decontamination steps against the demo ground truth (part of
``corpusmix curate metrics``, see ``curate.evaluation.metrics``).

* ``toxicity``: precision and recall of the ``toxicity`` step's drops against planted ``toxic:*``
  documents (recall over those that reached the step: steps before it may drop some first), and the
  share of each real domain's documents (no planted defect) that the step dropped; domains over
  ``LOUD_SHARE`` are listed under ``loud`` and logged as a warning.
* ``decontam``: recall of planted ``contaminated:<benchmark>`` documents (dropped by ``decontam``, or
  kept with ``contam_benchmarks`` set in remove mode), per benchmark too; clean documents flagged
  (should be 0); and contamination found per benchmark and domain, from the drops and the kept
  documents (this part needs no ground truth).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from corpusmix.logging import get_logger

log = get_logger("curate.safety_metrics")

LOUD_SHARE = 0.05
TOX_STEP, TOX_SCORE_STEP, DECONTAM_STEP = "toxicity", "toxicity_score", "decontam"


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 6) if b else None


def _steps_before(run: Path, step: str) -> set[str]:
    """Steps that run before ``step`` (from stats.json's ordered steps; ``read`` at least)."""
    f = run / "stats.json"
    order = list(json.loads(f.read_text()).get("steps", {})) if f.exists() else []
    return set(order[: order.index(step)]) if step in order else {"read"}


def _reached(ids: set[str], drops: dict[str, dict], before: set[str]) -> set[str]:
    return {i for i in ids if not (i in drops and drops[i]["step"] in before)}


def safety_metrics(run: Path, gt: dict[str, dict], kept: dict[str, dict], drops: dict[str, dict]) -> dict[str, Any]:
    def defects(i: str) -> list[str]:
        return list(gt[i].get("defects") or [])

    out: dict[str, Any] = {}
    real = {i for i in gt if not defects(i)}
    steps_seen = {d["step"] for d in drops.values()}
    stats_steps = set(json.loads((run / "stats.json").read_text()).get("steps", {})) if (
        run / "stats.json").exists() else set()

    if TOX_STEP in steps_seen | stats_steps:
        toxic = {i for i in gt if any(d.startswith("toxic:") for d in defects(i))}
        before = _steps_before(run, TOX_SCORE_STEP if TOX_SCORE_STEP in stats_steps else TOX_STEP)
        flagged = {i for i, d in drops.items() if d["step"] == TOX_STEP}
        reached = _reached(toxic, drops, before)
        per_domain: dict[str, dict[str, Any]] = {}
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for i in _reached(real, drops, before):
            c = counts[gt[i].get("domain") or "unknown"]
            c[1] += 1
            c[0] += i in flagged
        for dom, (f, n) in sorted(counts.items()):
            per_domain[dom] = {"flagged": f, "docs": n, "share": _ratio(f, n)}
        loud = sorted(d for d, v in per_domain.items() if (v["share"] or 0) > LOUD_SHARE)
        if loud:
            log.warning("toxicity step drops more than 5 % of real domain(s)", extra={"data": {
                "domains": {d: per_domain[d]["share"] for d in loud}}})
        by_kind: dict[str, dict[str, Any]] = {}
        for kind in sorted({d for i in toxic for d in defects(i) if d.startswith("toxic:")}):
            ids = {i for i in reached if kind in defects(i)}
            by_kind[kind] = {"planted_reached": len(ids), "recall": _ratio(len(ids & flagged), len(ids))}
        out["toxicity"] = {
            "precision": _ratio(len(flagged & toxic), len(flagged)),
            "recall": _ratio(len(flagged & reached), len(reached)),
            "planted": len(toxic), "planted_reached": len(reached), "dropped": len(flagged),
            "by_kind": by_kind, "real_flagged": per_domain, "loud": loud,
            "loud_threshold": LOUD_SHARE}

    if DECONTAM_STEP in steps_seen | stats_steps:
        contam = {i for i in gt if any(d.startswith("contaminated:") for d in defects(i))}
        flagged_bench: dict[str, list[str]] = {}
        for i, d in drops.items():
            if d["step"] == DECONTAM_STEP:
                flagged_bench[i] = [d["reason"].split(":", 1)[1] if ":" in d["reason"] else d["reason"]]
        for i, r in kept.items():
            if r.get("contam_benchmarks"):
                flagged_bench[i] = str(r["contam_benchmarks"]).split(",")
        flagged = set(flagged_bench)
        reached = _reached(contam, drops, _steps_before(run, DECONTAM_STEP))
        per_bench: dict[str, dict[str, Any]] = {}
        for b in sorted({d.split(":", 1)[1] for i in contam for d in defects(i) if d.startswith("contaminated:")}):
            ids = {i for i in reached if f"contaminated:{b}" in defects(i)}
            hit = {i for i in ids if b in flagged_bench.get(i, [])}
            per_bench[b] = {"planted_reached": len(ids), "recall": _ratio(len(hit), len(ids))}
        table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for i, benches in flagged_bench.items():
            dom = (drops[i].get("domain") if i in drops else None) or gt.get(i, {}).get("domain") or "unknown"
            for b in benches:
                table[b][dom] += 1
        clean_flagged = sorted(flagged & real)
        out["decontam"] = {
            "recall": _ratio(len(flagged & reached), len(reached)),
            "precision": _ratio(len(flagged & contam), len(flagged)),
            "planted": len(contam), "planted_reached": len(reached), "flagged": len(flagged),
            "clean_flagged": len(clean_flagged), "clean_flagged_ids": clean_flagged[:20],
            "per_benchmark": per_bench,
            "per_benchmark_domain": {b: dict(sorted(v.items())) for b, v in sorted(table.items())}}
    return out
