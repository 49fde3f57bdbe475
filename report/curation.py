"""Curation sections of ``corpusmix report``: the funnel (documents per step, drop reasons, drops per
domain, tokens per domain) and the quality metrics against the demo ground truth.

Library module of :mod:`report.build`. Metric files have no fixed schema (language ID, junk, PII and
dedup evaluations each write their own JSON), so :func:`tidy_tables` renders whatever keys they hold:
sibling objects with the same (nested) keys become one table, lists of objects become a table, and
every other number lands in one ``metric | value`` table with a dotted key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from report import figures as figs
from report.inputs import ReportInputs
from report.render import Figure, Section, Table, fmt, slug


def funnel_section(inputs: ReportInputs) -> Section | None:
    if not inputs.stats and not inputs.drops and not inputs.tokens:
        return None
    sec = Section("funnel", "Curation funnel")
    for label, st in inputs.stats.items():
        steps = list(st["steps"])
        rows, reasons = [], {}
        for s in steps:
            d = st["steps"][s]
            reasons[s] = {str(k): int(v) for k, v in (d.get("dropped") or {}).items()}
            n_drop = sum(reasons[s].values())
            docs_in, kept = int(d.get("docs_in", 0)), int(d.get("kept", 0))
            rows.append([s, docs_in, kept, n_drop, f"{100.0 * n_drop / docs_in:.2f}%" if docs_in else "n/a",
                         int(d["bytes_in"]) if "bytes_in" in d else None,
                         "ok" if docs_in == kept + n_drop else "docs_in ≠ kept + dropped"])
        # no seconds column: stats.json holds none (they are in the untracked stats.timing.json)
        sec.blocks.append(Table(f"Documents per step ({label})",
                                ["step", "docs in", "kept", "dropped", "dropped %", "bytes in", "check"], rows))
        tot = st.get("totals")
        if isinstance(tot, Mapping):
            sec.blocks.append(Table(f"Totals ({label})", [str(k) for k in tot], [[_cell(v) for v in tot.values()]]))
        sec.blocks.append(Figure(f"funnel_{slug(label)}", f"Curation funnel ({label})", figs.funnel_figure(
            steps, [r[1] for r in rows], [r[2] for r in rows], reasons)))
        rrows = [[s, r, n] for s in steps for r, n in sorted(reasons[s].items(), key=lambda kv: -kv[1])]
        if rrows:
            sec.blocks.append(Table(f"Drop reasons ({label})", ["step", "reason", "documents"], rrows,
                                    collapsed=len(rrows) > 20))
        per_dom = _per_domain_stats(st, label)
        if per_dom is not None:
            sec.blocks.append(per_dom)
        sec.blocks.extend(_domain_decisions(st, label))
        sec.blocks.extend(_domain_funnel(inputs, label, st))
    for label, df in inputs.drops.items():
        if "domain" in df.columns and len(df):
            pv = df.pivot_table(index="step", columns="domain", values="id", aggfunc="count", fill_value=0)
            pv = pv.reindex(list(dict.fromkeys(df["step"])))  # steps in pipeline order, domains sorted
            sec.blocks.append(Table(f"Dropped documents per step and domain ({label})",
                                    ["step", *map(str, pv.columns), "total"],
                                    [[str(s), *[int(v) for v in row], int(sum(row))] for s, row in
                                     zip(pv.index, pv.to_numpy().tolist(), strict=True)]))
        sec.blocks.extend(_safety_tables(df, label))
        dup = int(df["id"].duplicated().sum())
        if dup:
            sec.blocks.append(f"Warning: {dup} document id(s) in {label} are dropped more than once; every "
                              "dropped document must have exactly one (step, reason).")
    for label, toks in inputs.tokens.items():
        total = sum(toks.values()) or 1
        what = "in the packed shards" if label.endswith("manifest.json") else "after curation"
        sec.blocks.append(Table(f"Tokens per domain {what} ({label})", ["domain", "tokens", "share"],
                                [[d, int(n), n / total] for d, n in sorted(toks.items())]))
    return sec


def _safety_tables(df: Any, label: str) -> list[Table]:
    """Contamination per benchmark and domain, and toxicity drops per domain (from the drops alone)."""
    out = []
    if "domain" not in df.columns:
        return out
    dc = df[(df["step"] == "decontam") & df["reason"].str.startswith("contaminated:")]
    if len(dc):
        pv = dc.assign(benchmark=dc["reason"].str.split(":", n=1).str[1]).pivot_table(
            index="benchmark", columns="domain", values="id", aggfunc="count", fill_value=0)
        out.append(Table(f"Contaminated documents per benchmark and domain ({label})",
                         ["benchmark", *map(str, pv.columns), "total"],
                         [[str(b), *[int(v) for v in row], int(sum(row))] for b, row in
                          zip(pv.index, pv.to_numpy().tolist(), strict=True)],
                         "Documents sharing an n-gram with an evaluation set (decontam step; "
                         "docs/curation-safety.md)."))
    tx = df[df["step"] == "toxicity"]
    if len(tx):
        pv = tx.pivot_table(index="reason", columns="domain", values="id", aggfunc="count", fill_value=0)
        out.append(Table(f"Toxicity drops per rule and domain ({label})", ["rule", *map(str, pv.columns), "total"],
                         [[str(r), *[int(v) for v in row], int(sum(row))] for r, row in
                          zip(pv.index, pv.to_numpy().tolist(), strict=True)]))
    return out


def _beside(label: str, others: Mapping[str, Any], *, sub: str = "") -> list[str]:
    """Labels in ``others`` that sit in the folder of ``label`` (or below its ``sub`` folder)."""
    folder = PurePosixPath(label).parent
    out = []
    for o in others:
        p = PurePosixPath(o)
        if p.parent == folder or (sub and folder / sub in p.parents):
            out.append(o)
    return out


def domain_funnel(steps: list[str], drops: Any, kept: Mapping[str, int]) -> tuple[list[str], np.ndarray]:
    """Documents entering each step per domain, rebuilt from the drops and the kept documents.

    Every dropped document has exactly one (step, reason), so the documents of domain ``d`` that
    enter step ``k`` are the kept ones plus those dropped at step ``k`` or later. Returns the
    domains and a ``[len(steps) + 1, domains]`` matrix (the last row: kept after the last step).
    """
    domains = sorted(set(kept) | set(drops["domain"].astype(str)))
    counts = drops.groupby(["step", "domain"]).size()
    per_step = np.array([[int(counts.get((s, d), 0)) for d in domains] for s in steps], dtype=np.int64)
    final = np.array([int(kept.get(d, 0)) for d in domains], dtype=np.int64)
    entering = final[None, :] + np.cumsum(per_step[::-1], axis=0)[::-1]
    return domains, np.vstack([entering, final[None, :]])


def _domain_funnel(inputs: ReportInputs, label: str, st: Mapping[str, Any]) -> list[Table | Figure | str]:
    drops = [d for d in _beside(label, inputs.drops) if "domain" in inputs.drops[d].columns]
    docs = _beside(label, inputs.documents, sub="curated")
    if not drops or not docs:
        return []
    steps = list(st["steps"])
    kept: dict[str, int] = {}
    for d in docs:
        for dom, n in inputs.documents[d].items():
            kept[dom] = kept.get(dom, 0) + n
        inputs.used_documents.add(d)
    domains, mat = domain_funnel(steps, inputs.drops[drops[0]], kept)
    stages = [*steps, "kept"]
    expected = [int(st["steps"][s].get("docs_in", 0)) for s in steps] + [int(st["steps"][steps[-1]].get("kept", 0))]
    rows = [[stage, *row.tolist(), int(row.sum()), "ok" if int(row.sum()) == e else f"stats say {e:,}"]
            for stage, row, e in zip(stages, mat, expected, strict=True)]
    return [
        Table(f"Documents entering each step, per domain ({drops[0]} + {len(docs)} curated file(s))",
              ["step", *domains, "total", "check"], rows,
              "Rebuilt from the drops (one step per dropped document) and the curated output; the last row "
              "is what survives curation."),
        Figure(f"domain_funnel_{slug(label)}", "Share of each domain's documents surviving each step",
               figs.domain_funnel_figure(stages, domains, mat),
               "100% = the domain's documents entering the first step."),
    ]


def _per_domain_stats(st: Mapping[str, Any], label: str) -> Table | None:
    """Per-step, per-domain counts when the stats carry a ``domains`` breakdown per step."""
    rows, cols = [], []
    for s, d in st["steps"].items():
        doms = d.get("domains")
        if not isinstance(doms, Mapping):
            continue
        for dom, vals in doms.items():
            if isinstance(vals, Mapping):
                cols += [k for k in vals if k not in cols]
                rows.append((s, dom, vals))
    if not rows:
        return None
    return Table(f"Per step and domain ({label})", ["step", "domain", *cols],
                 [[s, dom, *[_cell(vals.get(k)) for k in cols]] for s, dom, vals in rows])


def _domain_decisions(st: Mapping[str, Any], label: str) -> list[Table]:
    """Kept share and top drop reasons per domain, and the guard in red (``curate.calibrate``)."""
    out = []
    doms = st.get("domains")
    if isinstance(doms, Mapping) and doms:
        out.append(Table(f"Curation decisions per domain ({label})",
                         ["domain", "docs in", "kept", "kept share", "top drop reasons"],
                         [[d, v.get("docs_in"), v.get("kept"), v.get("kept_share"), _cell(v.get("top_reasons") or {})]
                          for d, v in doms.items() if isinstance(v, Mapping)],
                         "Per input domain, every step included (read, language ID, filters, dedup, ...)."))
    verdicts = st.get("domain_verdicts")
    if isinstance(verdicts, Mapping) and verdicts:
        out.append(Table(f"Domain verdicts ({label})", ["domain", "junk share", "verdict", "why"],
                         [[d, v.get("junk_share"), v.get("verdict"), v.get("why")]
                          for d, v in verdicts.items() if isinstance(v, Mapping)],
                         "Share of each domain's sampled documents that fail the garbage detectors (fixed "
                         "thresholds, not fitted on the domain); a domain judged garbage is never a mixture target.",
                         alert=any(isinstance(v, Mapping) and v.get("verdict") == "garbage" for v in verdicts.values())))
    guard = st.get("guard")
    if isinstance(guard, list) and guard:
        out.append(Table(f"Guard: one rule removed a large share of a domain ({label})",
                         ["domain", "step", "reason", "dropped", "share", "limit"],
                         [[g.get("domain"), g.get("step"), g.get("reason"), g.get("dropped"), g.get("share"),
                           g.get("limit")] for g in guard if isinstance(g, Mapping)],
                         "Check these rules against the domain's documents: either the domain is garbage (drop it "
                         "on purpose) or the rule does not fit it (pin an override, curate.filters.per_domain).",
                         alert=True))
    return out


def _cell(v: Any) -> Any:
    if isinstance(v, Mapping):
        return ", ".join(f"{k}: {fmt(x)}" for k, x in v.items())
    if isinstance(v, list):
        return ", ".join(map(fmt, v))
    return v


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _flatten(v: Any, prefix: str = "") -> dict[str, Any] | None:
    """Dotted keys to scalars for an object made only of objects and scalars (else None)."""
    if not isinstance(v, Mapping) or not v:
        return None
    out: dict[str, Any] = {}
    for k, x in v.items():
        key = f"{prefix}{k}"
        if _scalar(x):
            out[key] = x
        else:
            sub = _flatten(x, key + ".")
            if sub is None:
                return None
            out.update(sub)
    return out


WIDE_MAX_COLUMNS = 8  # more metrics than this: one row per metric, one column per entry


def tidy_tables(obj: Any, title: str) -> list[Table]:
    """Tables for any JSON value; see the module docstring for the rules.

    Siblings (entries of one object) whose flattened keys (mostly) agree form one table: one row
    per sibling when they have at most ``WIDE_MAX_COLUMNS`` metrics, else one row per metric and
    one column per sibling (e.g. dedup methods side by side).
    """
    tables: list[Table] = []
    flat: list[list[Any]] = []
    if isinstance(obj, Mapping) and "environment" in obj:  # shown in the report's Environment section
        obj = {k: v for k, v in obj.items() if k != "environment"}

    def visit(prefix: str, node: Any) -> None:
        if isinstance(node, Mapping):
            flats = {k: _flatten(v) for k, v in node.items()}
            groups: list[tuple[list[str], list[str]]] = []  # (columns in first-seen order, sibling keys)
            for k, f in flats.items():
                if f is None:
                    continue
                for cols, keys in groups:  # same fields up to a few missing ones (e.g. no timing)
                    if len(set(cols) & set(f)) >= 0.75 * len(set(cols) | set(f)):
                        cols += [c for c in f if c not in cols]
                        keys.append(k)
                        break
                else:
                    groups.append((list(f), [k]))
            tabled = set()
            name = f"{title}: {prefix}" if prefix else title
            for cols, keys in groups:
                if len(keys) < 2:
                    continue
                if len(cols) <= WIDE_MAX_COLUMNS:
                    tables.append(Table(name, ["", *cols], [[k, *[flats[k].get(c) for c in cols]] for k in keys]))
                else:
                    tables.append(Table(name, ["metric", *keys],
                                        [[c, *[flats[k].get(c) for k in keys]] for c in cols]))
                tabled.update(keys)
            for k, v in node.items():
                if k not in tabled:
                    visit(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(node, list) and node and all(_flatten(x) is not None for x in node):
            recs = [_flatten(x) or {} for x in node]
            cols: list[str] = []
            for rec in recs:
                cols += [k for k in rec if k not in cols]
            tables.append(Table(f"{title}: {prefix}", cols, [[rec.get(c) for c in cols] for rec in recs]))
        elif isinstance(node, list) and all(_scalar(x) for x in node):
            flat.append([prefix, ", ".join(fmt(x) for x in node[:20]) + (" …" if len(node) > 20 else "")])
        elif _scalar(node):
            flat.append([prefix, node])

    visit("", obj)
    if flat:
        tables.insert(0, Table(title, ["metric", "value"], flat))
    return tables


def quality_section(inputs: ReportInputs) -> Section | None:
    if not inputs.metrics and not inputs.ground_truth:
        return None
    sec = Section("quality", "Curation quality against the ground truth")
    for label, gt in inputs.ground_truth.items():
        total = sum(gt["docs_per_domain"].values()) or 1
        sec.blocks.append(Table(f"Ground truth: raw documents per domain ({label})", ["domain", "documents", "share"],
                                [[d, n, n / total] for d, n in gt["docs_per_domain"].items()]))
        sec.blocks.append(Table(f"Ground truth: planted defects ({label})", ["defect", "documents"],
                                [[d, n] for d, n in gt["defects"].items()],
                                "A document can carry several defects; clean = none planted."))
    if inputs.metrics:
        sec.blocks.append("Every metric file found, rendered as-is (language ID, junk and PII detection, dedup "
                          "pairs): sibling entries with the same fields share one table.")
    for label, obj in inputs.metrics.items():
        sec.blocks.extend(tidy_tables(obj, label))
    return sec
