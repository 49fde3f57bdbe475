"""The report's section on curation decisions, from a run's ``inspect.json`` (docs/formats.md).

The report is one static page without scripts and without document text, so it shows the
numbers of what ``corpusmix inspect`` shows interactively: per domain, the rules that dropped
most, with the share of the domain, the thresholds in force (the domain's and the global one) and
how many examples the run recorded. The examples themselves (document text, redacted by the run's
PII step), histograms and near-misses are in ``corpusmix inspect --run <the run folder>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from report.inputs import ReportInputs
from report.render import Section, Table

#: rows per domain
TOP_RULES = 5


def _thresholds(rules: list[Mapping[str, Any]], reason: str) -> str:
    out = []
    for r in rules:
        rr = str(r.get("reason", ""))
        if rr == reason or (rr.endswith(":*") and reason.startswith(rr[:-1])):
            dom, glob = r.get("threshold"), r.get("global_threshold")
            side = "<" if r.get("side") == "low" else ">"
            txt = f"{r.get('stat')} {side} {dom:g}" if isinstance(dom, (int, float)) else str(r.get("stat"))
            if isinstance(glob, (int, float)) and glob != dom:
                txt += f" (global {glob:g})"
            out.append(txt)
    return "; ".join(out)


def _rows(insp: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    domains = insp.get("domains") or {}
    counts, samples, rules = insp.get("counts") or {}, insp.get("samples") or {}, insp.get("rules") or {}
    for dom in sorted(domains):
        found = []
        for step, by in counts.items():
            for reason, n in ((by.get(dom) or {}).get("dropped") or {}).items():
                found.append((int(n), step, reason))
        for n, step, reason in sorted(found, key=lambda r: (-r[0], r[1], r[2]))[:TOP_RULES]:
            ex = ((samples.get(step) or {}).get(dom) or {}).get(reason) or []
            n_in = domains.get(dom) or 0
            rows.append([dom, step, reason, n, f"{100 * n / n_in:.1f}%" if n_in else "n/a",
                         _thresholds((rules.get(step) or {}).get(dom) or [], reason), len(ex)])
    return rows


def inspection_section(inputs: ReportInputs) -> Section | None:
    if not inputs.inspections:
        return None
    sec = Section("inspection", "Curation decisions by domain and rule")
    for label, insp in inputs.inspections.items():
        run = label.rsplit("/", 1)[0] if "/" in label else "."
        sec.blocks.append(Table(
            f"Rules that dropped most, per domain ({label})",
            ["domain", "step", "rule", "dropped", "share of domain", "threshold", "examples recorded"], _rows(insp),
            note=f"Examples (redacted), histograms and near-misses: `corpusmix inspect --run {run}`."))
    return sec
