"""The corpusmix report: one self-contained HTML page (plus a Markdown twin) that answers "which
mixture should I use, and how much better is it?" and shows the evidence behind the answer.

Run as ``corpusmix report --output report.html --inputs data/ [more files or folders]`` (see
:mod:`mix.report_cli`), or from Python::

    from mix.report import ReportConfig, build_report, write_report
    from mix.report_inputs import collect_inputs
    report = build_report(collect_inputs(["data/"]), ReportConfig())
    write_report(report, "report.html")          # also report.md + report_files/*.png

Sections, in order: the headline box (chosen mixture, its average and worst-domain validation loss
against the natural and uniform mixtures, the difference in units of the seed spread and a plain
verdict), the mixture ablation (per-domain loss table and heatmap, seed spread, loss curves), the
mixture weights per method, the search diagnostics (DoReMi weight trajectory, RegMix fit quality),
training logs, the curation funnel (documents per step, drop reasons, per-domain drops, tokens),
curation quality metrics (whatever keys the metric files hold, as tidy tables) and the list of
input files used and skipped.

The noise rule is the one of :func:`mix.ablation.compare`: mixture A beats B when B's mean average
loss exceeds A's by more than the *seed spread*, the larger of the two max-min ranges over seeds.
Figures are matplotlib PNGs (:mod:`mix.report_figures`), embedded as base64 data URIs in the HTML.
"""

from __future__ import annotations

import base64
import html
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mix import report_figures as figs
from mix.report_inputs import MixtureRuns, ReportInputError, ReportInputs, normalise_ablation


@dataclass
class ReportConfig:
    """``corpusmix report`` (``params.yaml`` section ``report``)."""

    output: str = field(default="report.html", metadata={"help": "HTML file to write"})
    inputs: list[str] = field(default_factory=lambda: ["data"],
                              metadata={"help": "files or folders with pipeline outputs"})
    title: str = field(default="corpusmix report", metadata={"help": "page title"})
    chosen: str = field(default="", metadata={"help": "mixture to recommend; empty: lowest mean average loss"})
    baselines: list[str] = field(default_factory=lambda: ["natural", "uniform"],
                                 metadata={"help": "ablation mixtures the chosen one is compared to"})
    markdown: bool = field(default=True, metadata={"help": "also write <output>.md with PNGs next to it"})


# ----------------------------------------------------------------------------- report model

@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[Any]]
    note: str = ""


@dataclass
class Figure:
    name: str
    title: str
    png: bytes
    caption: str = ""


@dataclass
class Section:
    key: str
    title: str
    blocks: list[Table | Figure | str] = field(default_factory=list)


@dataclass
class Comparison:
    """The chosen mixture against one other mixture (positive delta: the chosen one is lower)."""

    other: str
    avg_delta: float
    avg_spread: float
    worst_delta: float
    worst_spread: float | None
    n_seeds: int

    @property
    def avg_units(self) -> float:
        return _units(self.avg_delta, self.avg_spread)

    @property
    def verdict(self) -> str:
        return noise_verdict(self.avg_delta, self.avg_spread, self.n_seeds)


@dataclass
class Headline:
    chosen: str
    why: str
    avg: float
    avg_range: tuple[float, float]
    worst: float
    worst_domain: str
    n_seeds: int
    comparisons: list[Comparison]
    verdict: str
    weights: dict[str, float]


@dataclass
class Report:
    title: str
    headline: Headline | None
    sections: list[Section]


def _units(delta: float, spread: float) -> float:
    if spread > 0:
        return delta / spread
    return math.copysign(math.inf, delta) if delta else 0.0


def noise_verdict(delta: float, spread: float, n_seeds: int) -> str:
    """``better`` / ``worse`` beyond the seed spread, ``within noise``, or ``one seed`` (no spread)."""
    if n_seeds < 2:
        return "one seed: noise unknown"
    if delta > spread:
        return "better beyond noise"
    if -delta > spread:
        return "worse beyond noise"
    return "within noise"


# ----------------------------------------------------------------------------- number formatting

def fmt(v: Any) -> str:
    """Compact, stable number formatting for tables (ints with separators, floats with 4 decimals)."""
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if not math.isfinite(v):
            return "n/a" if math.isnan(v) else ("∞" if v > 0 else "−∞")
        if v != 0 and abs(v) < 1e-3:
            return f"{v:.2e}"
        if abs(v) >= 1e4:
            return f"{v:,.0f}"
        return f"{v:.4f}"
    return str(v)


def _signed(v: float) -> str:
    return ("+" if v > 0 else "") + fmt(v)


# ----------------------------------------------------------------------------- headline

def headline(runs: Sequence[MixtureRuns], *, chosen: str = "", baselines: Sequence[str] = ("natural", "uniform"),
             avg_over: Sequence[str] | None = None) -> Headline:
    """Pick the mixture to use (``chosen`` or the lowest mean average loss) and compare it.

    Each comparison's ``avg_delta = mean_avg(other) - mean_avg(chosen)``, so a positive delta means
    the chosen mixture has the lower (better) loss; ``avg_spread`` is the seed spread of
    :func:`mix.ablation.compare`.
    """
    by_name = {r.name: r for r in runs}
    if chosen:
        if chosen not in by_name:
            raise ReportInputError(f"chosen mixture {chosen!r} is not in the ablation; choose one of {sorted(by_name)}")
        best = by_name[chosen]
        why = f"{chosen} was named explicitly (--chosen)."
    else:
        best = min(runs, key=lambda r: float(np.mean(r.avg_per_seed)))
        others = len(runs) - 1
        why = (f"{best.name} has the lowest mean average validation loss of the {len(runs)} mixtures trained "
               f"(over {len(best.avg_per_seed)} seed{'s' * (len(best.avg_per_seed) != 1)} each"
               f"{', averaged over ' + str(len(avg_over)) + ' domains' if avg_over else ''})."
               if others else f"{best.name} is the only mixture in the ablation.")
    per_seed = bool(best.seed_losses)
    comps = []
    names = [b for b in baselines if b in by_name and b != best.name]
    for name in names:
        o = by_name[name]
        both_seeded = per_seed and bool(o.seed_losses)
        comps.append(Comparison(
            other=name,
            avg_delta=float(np.mean(o.avg_per_seed) - np.mean(best.avg_per_seed)),
            avg_spread=float(max(np.ptp(o.avg_per_seed), np.ptp(best.avg_per_seed))),
            worst_delta=float(np.mean(o.worst_per_seed) - np.mean(best.worst_per_seed)),
            worst_spread=float(max(np.ptp(o.worst_per_seed), np.ptp(best.worst_per_seed))) if both_seeded else None,
            n_seeds=min(len(o.avg_per_seed), len(best.avg_per_seed))))
    worst_domain = max(best.mean_loss, key=lambda d: best.mean_loss[d])
    return Headline(chosen=best.name, why=why, avg=float(np.mean(best.avg_per_seed)),
                    avg_range=(float(min(best.avg_per_seed)), float(max(best.avg_per_seed))),
                    worst=float(np.mean(best.worst_per_seed)), worst_domain=worst_domain,
                    n_seeds=len(best.avg_per_seed), comparisons=comps,
                    verdict=_verdict_text(best.name, comps, len(best.avg_per_seed)), weights=dict(best.weights))


def _verdict_text(chosen: str, comps: Sequence[Comparison], n_seeds: int) -> str:
    if not comps:
        return (f"{chosen} has the lowest loss, but neither baseline mixture was trained in the ablation, "
                "so there is nothing to compare it with.")
    if n_seeds < 2:
        return (f"{chosen} has the lowest loss, but with one seed per mixture the noise is unknown: "
                "train at least 3 seeds before trusting any difference.")
    parts = []
    for c in comps:
        pct = ""
        if c.verdict == "better beyond noise":
            parts.append(f"beats {c.other} by {fmt(c.avg_delta)} average loss{pct}, "
                         f"{c.avg_units:.1f}x the seed spread")
        elif c.verdict == "within noise":
            parts.append(f"is within noise of {c.other} (difference {_signed(c.avg_delta)}, "
                         f"{abs(c.avg_units):.1f}x the seed spread {fmt(c.avg_spread)})")
        else:
            parts.append(f"is worse than {c.other} beyond noise (by {fmt(-c.avg_delta)})")
    text = f"{chosen} " + "; it ".join(parts) + "."
    if all(c.verdict == "better beyond noise" for c in comps):
        return "Use " + text
    nat = next((c for c in comps if c.other == "natural"), None)
    if nat is not None and nat.verdict != "better beyond noise":
        return (text + " The improvement over the natural mixture is not demonstrated: the natural mixture "
                "is as good within noise and needs no search; more seeds or longer proxies could settle it.")
    return text + " Treat the differences that are within noise as ties."


# ----------------------------------------------------------------------------- sections

def ablation_section(domains: list[str], avg_over: list[str], runs: list[MixtureRuns], hl: Headline,
                     label: str) -> Section:
    sec = Section("ablation", "Mixture ablation: validation loss per mixture")
    n = max(len(r.avg_per_seed) for r in runs)
    sec.blocks.append(
        f"The same proxy model trained on each candidate mixture ({label}), {n} seed(s) each. "
        f"Average = unweighted mean over {len(avg_over)} domain(s)"
        + (f" ({', '.join(avg_over)})" if avg_over != domains else "") +
        "; worst = the highest per-domain loss of a seed. Lower is better.")
    base = next((r for r in runs if r.name == "natural"), None)
    rows = []
    for r in sorted(runs, key=lambda r: float(np.mean(r.avg_per_seed))):
        avg = float(np.mean(r.avg_per_seed))
        worst_dom = max(r.mean_loss, key=lambda d: r.mean_loss[d])
        rows.append([r.name + (" (chosen)" if r.name == hl.chosen else ""), avg,
                     float(np.std(r.avg_per_seed, ddof=1)) if len(r.avg_per_seed) > 1 else float("nan"),
                     float(np.ptp(r.avg_per_seed)), float(np.mean(r.worst_per_seed)), worst_dom,
                     (avg - float(np.mean(base.avg_per_seed))) if base else float("nan"), len(r.avg_per_seed)])
    sec.blocks.append(Table("Average and worst-domain validation loss",
                            ["mixture", "avg loss", "seed sd", "seed range", "worst-domain loss", "worst domain",
                             "avg − natural", "seeds"], rows))
    names = [r.name for r in runs]
    mat = np.array([[r.mean_loss.get(d, float("nan")) for d in domains] for r in runs])
    sec.blocks.append(Table("Per-domain validation loss (mean ± seed sd)", ["mixture", *domains],
                            [[r.name, *[_pm(r.mean_loss.get(d), r.std_loss.get(d)) for d in domains]] for r in runs]))
    center = mat[names.index("natural")] if "natural" in names else None
    sec.blocks.append(Figure("loss_heatmap", "Per-domain validation loss per mixture", figs.heatmap(
        names, domains, mat, title="validation loss per domain",
        center=center, cbar_label="loss − natural" if center is not None else "loss"),
        "Cells print the mean loss; colour is the difference to the natural mixture (blue = lower)."
        if center is not None else "Cells print the mean loss."))
    sec.blocks.append(Figure("seed_spread", "Average and worst-domain loss with seed spread", figs.spread_figure(
        names, [r.avg_per_seed for r in runs], [r.worst_per_seed for r in runs], highlight=hl.chosen),
        "Bars: mean over seeds; dots: individual seeds; whiskers: min-max range. The chosen mixture is red."))
    curves = {r.name: list(r.curves.values()) for r in runs if r.curves}
    if curves:
        sec.blocks.append(Figure("ablation_curves", "Training loss curves per mixture", figs.curves_figure(
            curves, title="training loss (mean over seeds, min-max band)"), ""))
    return sec


def _pm(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return ""
    return fmt(float(mean)) + (f" ± {fmt(float(sd))}" if sd else "")


def weights_section(inputs: ReportInputs, runs: list[MixtureRuns]) -> Section | None:
    named: dict[str, dict[str, float]] = {}
    sources: dict[str, str] = {}
    for label, m in inputs.mixtures.items():
        name = str(m.get("method") or Path(label).stem)
        if name in named and named[name] != m["weights"]:
            name = f"{name} ({label})"
        named[name] = {d: float(w) for d, w in m["weights"].items()}
        sources[name] = label
    for r in runs:
        if r.weights and r.name not in named:
            named[r.name] = r.weights
            sources[r.name] = "ablation"
    if not named:
        return None
    domains = sorted({d for w in named.values() for d in w})
    sec = Section("weights", "Mixture weights per method")
    rows = [[n, *[named[n].get(d, 0.0) for d in domains], sources[n]] for n in named]
    sec.blocks.append(Table("Domain weights (each row sums to 1)", ["mixture", *domains, "source"], rows))
    sec.blocks.append(Figure("weights", "Mixture weights per method", figs.grouped_bars(
        domains, {n: [named[n].get(d, 0.0) for d in domains] for n in named}, title="domain weights",
        ylabel="weight"), ""))
    params = [[n, sources[n], ", ".join(f"{k}={v}" for k, v in (inputs.mixtures[sources[n]].get("params") or {}).items())]
              for n in named if sources[n] in inputs.mixtures and inputs.mixtures[sources[n]].get("params")]
    if params:
        sec.blocks.append(Table("Search parameters", ["mixture", "file", "params"], params))
    return sec


def search_section(inputs: ReportInputs) -> Section | None:
    if not inputs.trajectories and not inputs.regmix_fits:
        return None
    sec = Section("search", "Mixture search diagnostics")
    for i, (label, traj) in enumerate(inputs.trajectories.items()):
        skip = {"step", "round"}
        doms = [k for k in traj[0] if k not in skip and isinstance(traj[0][k], (int, float))]
        xs = list(range(len(traj))) if any("round" in r for r in traj) else [float(r.get("step", j))
                                                                                 for j, r in enumerate(traj)]
        sec.blocks.append(Figure(f"trajectory_{i}", f"DoReMi weight trajectory ({label})", figs.trajectory_figure(
            xs, {d: [float(r.get(d, 0.0)) for r in traj] for d in doms}, title="Group-DRO domain weights per step"),
            "The output mixture is the average of these weights over all steps. One domain taking all the "
            "weight is DoReMi's known failure mode."))
        last = traj[-1]
        sec.blocks.append(Table(f"DoReMi weights at the last step ({label})", ["domain", "weight"],
                                [[d, float(last.get(d, 0.0))] for d in doms]))
    for label, fit in inputs.regmix_fits.items():
        rows = []
        for model in ("lightgbm", "linear"):
            s = fit.get(model) or {}
            rows.append([model, s.get("spearman"), s.get("pearson"), s.get("mae"),
                         fit.get("n_fit"), fit.get("n_heldout")])
        sec.blocks.append(Table(f"RegMix regression fit on held-out proxy runs ({label})",
                                ["regressor", "Spearman", "Pearson", "MAE", "fit runs", "held-out runs"], rows,
                                "The paper reports Spearman around 0.9 with 512 proxies; far lower means the "
                                "searched mixture rests on a weak regression."))
    return sec


def training_section(inputs: ReportInputs) -> Section | None:
    if not inputs.train_logs:
        return None
    sec = Section("training", "Training logs")
    curves = {}
    val_rows = []
    for label, recs in inputs.train_logs.items():
        pts = [(float(r["step"]), float(r["loss"])) for r in recs if isinstance(r.get("loss"), (int, float))]
        if pts:
            curves[label] = [pts]
        val = [r for r in recs if any(k.startswith("val_loss/") for k in r)]
        if val:
            last = val[-1]
            for k in sorted(k for k in last if k.startswith("val_loss/")):
                val_rows.append([label, int(last["step"]), k.split("/", 1)[1], float(last[k])])
        lasts = [r for r in recs if isinstance(r.get("loss"), (int, float))]
        if lasts:
            tail = lasts[-min(10, len(lasts)):]
            sec.blocks.append(Table(f"Run summary ({label})", ["steps logged", "last step", "final loss (mean of last 10)",
                                                               "tokens/s (median)"],
                                    [[len(lasts), int(lasts[-1]["step"]), float(np.mean([r["loss"] for r in tail])),
                                      float(np.median([r["tokens_per_s"] for r in lasts if "tokens_per_s" in r]))
                                      if any("tokens_per_s" in r for r in lasts) else float("nan")]]))
    if curves:
        sec.blocks.append(Figure("train_curves", "Training loss", figs.curves_figure(curves, title="training loss")))
    if val_rows:
        sec.blocks.append(Table("Last validation loss per domain", ["run", "step", "domain", "val loss"], val_rows))
    return sec


def funnel_section(inputs: ReportInputs) -> Section | None:
    if not inputs.stats and not inputs.drops and not inputs.tokens:
        return None
    sec = Section("funnel", "Curation funnel")
    for label, st in inputs.stats.items():
        steps = list(st["steps"])
        rows, reasons = [], {}
        for s in steps:
            d = st["steps"][s]
            dropped = d.get("dropped") or {}
            reasons[s] = {str(k): int(v) for k, v in dropped.items()}
            n_drop = sum(reasons[s].values())
            docs_in = int(d.get("docs_in", 0))
            rows.append([s, docs_in, int(d.get("kept", 0)), n_drop, 100.0 * n_drop / docs_in if docs_in else 0.0,
                         int(d["bytes_in"]) if "bytes_in" in d else None,
                         float(d["seconds"]) if "seconds" in d else None,
                         "" if docs_in == int(d.get("kept", 0)) + n_drop else "docs_in ≠ kept + dropped"])
        sec.blocks.append(Table(f"Documents per step ({label})",
                                ["step", "docs in", "kept", "dropped", "dropped %", "bytes in", "seconds", "check"],
                                rows))
        tot = st.get("totals")
        if isinstance(tot, Mapping):
            sec.blocks.append(Table("Totals", list(map(str, tot)), [[_cell(v) for v in tot.values()]]))
        sec.blocks.append(Figure(f"funnel_{_slug(label)}", f"Curation funnel ({label})", figs.funnel_figure(
            steps, [r[1] for r in rows], [r[2] for r in rows], reasons)))
        rrows = [[s, r, n] for s in steps for r, n in sorted(reasons[s].items(), key=lambda kv: -kv[1])]
        if rrows:
            sec.blocks.append(Table("Drop reasons", ["step", "reason", "documents"], rrows))
        dom_rows = _per_domain_stats(st)
        if dom_rows:
            sec.blocks.append(dom_rows)
    for label, df in inputs.drops.items():
        if "domain" in df.columns and len(df):
            pv = df.pivot_table(index="step", columns="domain", values="id", aggfunc="count", fill_value=0)
            sec.blocks.append(Table(f"Dropped documents per step and domain ({label})",
                                    ["step", *map(str, pv.columns), "total"],
                                    [[str(s), *[int(v) for v in row], int(sum(row))] for s, row in
                                     zip(pv.index, pv.to_numpy().tolist(), strict=True)]))
        dup = int(df["id"].duplicated().sum())
        if dup:
            sec.blocks.append(f"Warning: {dup} document id(s) in {label} are dropped more than once; every "
                              "dropped document must have exactly one (step, reason).")
    for label, toks in inputs.tokens.items():
        total = sum(toks.values()) or 1
        sec.blocks.append(Table(f"Tokens per domain after curation ({label})", ["domain", "tokens", "share"],
                                [[d, int(n), n / total] for d, n in sorted(toks.items())]))
    return sec


def _per_domain_stats(st: Mapping[str, Any]) -> Table | None:
    """Per-step, per-domain counts when the stats carry a ``domains`` breakdown per step."""
    rows, cols = [], []
    for s, d in st["steps"].items():
        doms = d.get("domains")
        if not isinstance(doms, Mapping):
            continue
        for dom, vals in doms.items():
            if isinstance(vals, Mapping):
                for k in vals:
                    if k not in cols and not isinstance(vals[k], Mapping):
                        cols.append(k)
                rows.append((s, dom, vals))
    if not rows:
        return None
    return Table("Per step and domain", ["step", "domain", *cols],
                 [[s, dom, *[_cell(vals.get(k)) for k in cols]] for s, dom, vals in rows])


def _cell(v: Any) -> Any:
    if isinstance(v, (Mapping, list)):
        return ", ".join(f"{k}: {fmt(x)}" for k, x in v.items()) if isinstance(v, Mapping) else ", ".join(map(fmt, v))
    return v


def tidy_tables(obj: Any, title: str) -> list[Table]:
    """Turn any JSON object into tables: record-like dicts (``{row: {col: scalar}}``) and lists of
    flat dicts become one table each; every other scalar goes into one ``key | value`` table."""
    tables: list[Table] = []
    flat: list[list[Any]] = []

    def scalar(v: Any) -> bool:
        return v is None or isinstance(v, (str, int, float, bool))

    def is_records(v: Any) -> bool:
        return (isinstance(v, Mapping) and len(v) > 0 and all(
            isinstance(x, Mapping) and x and all(scalar(y) for y in x.values()) for x in v.values()))

    def visit(prefix: str, node: Any) -> None:
        if is_records(node):
            cols: list[str] = []
            for rec in node.values():
                cols += [k for k in rec if k not in cols]
            tables.append(Table(f"{title}: {prefix}" if prefix else title, ["", *cols],
                                [[k, *[rec.get(c) for c in cols]] for k, rec in node.items()]))
        elif isinstance(node, Mapping):
            for k, v in node.items():
                visit(f"{prefix}.{k}" if prefix else str(k), v)
        elif isinstance(node, list) and node and all(isinstance(x, Mapping) and all(scalar(y) for y in x.values())
                                                      for x in node):
            cols = []
            for rec in node:
                cols += [k for k in rec if k not in cols]
            tables.append(Table(f"{title}: {prefix}", cols, [[rec.get(c) for c in cols] for rec in node]))
        elif isinstance(node, list) and all(scalar(x) for x in node):
            flat.append([prefix, ", ".join(fmt(x) for x in node[:20]) + (" …" if len(node) > 20 else "")])
        elif scalar(node):
            flat.append([prefix, node])

    visit("", obj)
    if flat:
        tables.insert(0, Table(title, ["metric", "value"], flat))
    return tables


def quality_section(inputs: ReportInputs) -> Section | None:
    if not inputs.metrics:
        return None
    sec = Section("quality", "Curation quality against the ground truth")
    sec.blocks.append("Every metric file found, rendered as-is (language ID, junk and PII detection, dedup pairs).")
    for label, obj in inputs.metrics.items():
        sec.blocks.extend(tidy_tables(obj, label))
    return sec


def inputs_section(inputs: ReportInputs) -> Section:
    sec = Section("inputs", "Inputs")
    used = [[kind, label] for kind, group in (
        ("ablation", inputs.ablations), ("mixture", inputs.mixtures), ("weight trajectory", inputs.trajectories),
        ("regmix fit", inputs.regmix_fits), ("train log", inputs.train_logs), ("curation stats", inputs.stats),
        ("drops", inputs.drops), ("token counts", inputs.tokens), ("metrics", inputs.metrics)) for label in group]
    sec.blocks.append(Table("Files used", ["kind", "file"], used))
    if inputs.skipped:
        sec.blocks.append(Table("Files skipped", ["file", "reason"], [list(s) for s in inputs.skipped]))
    return sec


def build_report(inputs: ReportInputs, cfg: ReportConfig) -> Report:
    """Assemble the report model (tables, figures, headline) from the collected inputs."""
    if inputs.is_empty():
        raise ReportInputError(
            f"nothing to report in {cfg.inputs}: no curation stats, mixtures, ablation, train logs or metrics "
            "were found; run the pipeline first (dvc repro) or pass the right folders with --inputs")
    sections: list[Section] = []
    hl = None
    runs: list[MixtureRuns] = []
    if inputs.ablations:
        if len(inputs.ablations) > 1:
            inputs.skipped += [(lbl, "a second ablation file; the report uses the first one found")
                               for lbl in list(inputs.ablations)[1:]]
        label, obj = next(iter(inputs.ablations.items()))
        domains, avg_over, runs = normalise_ablation(obj, where=label)
        hl = headline(runs, chosen=cfg.chosen, baselines=cfg.baselines, avg_over=avg_over)
        sections.append(ablation_section(domains, avg_over, runs, hl, label))
    for build in (lambda: weights_section(inputs, runs), lambda: search_section(inputs),
                  lambda: training_section(inputs), lambda: funnel_section(inputs), lambda: quality_section(inputs)):
        sec = build()
        if sec is not None:
            sections.append(sec)
    sections.append(inputs_section(inputs))
    return Report(cfg.title, hl, sections)


# ----------------------------------------------------------------------------- rendering

CSS = """
body{font-family:system-ui,-apple-system,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1180px;padding:1.5em;
color:#222;line-height:1.45}
h1{margin-bottom:.2em} h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}
nav a{margin-right:1em}
.headline{border:2px solid #2f6f3e;background:#f1f8f2;border-radius:8px;padding:1em 1.4em;margin:1em 0}
.headline.noise{border-color:#a07a00;background:#fff9e6}
.headline .use{font-size:1.6em;font-weight:600}
.headline .verdict{font-size:1.1em;margin:.5em 0}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3} td:first-child,th:first-child{text-align:left}
caption{caption-side:top;text-align:left;font-weight:600;padding:.3em 0}
figure{margin:1em 0} figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.9em;color:#555} .note{font-size:.85em;color:#555}
"""


def _headline_rows(hl: Headline) -> tuple[list[str], list[list[Any]]]:
    cols = ["compared with", "avg loss Δ", "Δ / seed spread", "seed spread", "worst-domain Δ",
            "worst Δ / spread", "verdict"]
    rows = []
    for c in hl.comparisons:
        rows.append([c.other, _signed(c.avg_delta), f"{c.avg_units:.1f}x" if math.isfinite(c.avg_units) else "n/a",
                     fmt(c.avg_spread), _signed(c.worst_delta),
                     f"{_units(c.worst_delta, c.worst_spread):.1f}x" if c.worst_spread else "n/a", c.verdict])
    return cols, rows


def _headline_summary(hl: Headline) -> str:
    return (f"average validation loss {fmt(hl.avg)} (seeds {fmt(hl.avg_range[0])}–{fmt(hl.avg_range[1])}, "
            f"n={hl.n_seeds}); worst domain {hl.worst_domain} at {fmt(hl.worst)}.")


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in t.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(v))}</td>" for v in row) + "</tr>" for row in t.rows)
    note = f'<p class="note">{html.escape(t.note)}</p>' if t.note else ""
    return (f"<table><caption>{html.escape(t.title)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{note}")


def render_html(report: Report) -> str:
    """The whole page as one string; figures are inline ``data:image/png;base64`` URIs."""
    out = [f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(report.title)}"
           f"</title><style>{CSS}</style></head><body><h1>{html.escape(report.title)}</h1>"]
    out.append("<nav>" + "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in report.sections) + "</nav>")
    hl = report.headline
    if hl is not None:
        noise = "" if hl.verdict.startswith("Use ") else " noise"
        cols, rows = _headline_rows(hl)
        w = ", ".join(f"{d} {v:.3f}" for d, v in sorted(hl.weights.items(), key=lambda kv: -kv[1]))
        out.append(f'<div class="headline{noise}" id="headline"><div class="use">Chosen mixture: '
                   f"{html.escape(hl.chosen)}</div><div>{html.escape(_headline_summary(hl))}</div>"
                   f'<div class="verdict">{html.escape(hl.verdict)}</div>'
                   + _html_table(Table("Chosen mixture against the baselines (Δ > 0: the chosen mixture is lower)",
                                       cols, rows))
                   + f'<div class="note">Why: {html.escape(hl.why)}'
                   + (f" Weights: {html.escape(w)}." if w else "") + "</div></div>")
    for s in report.sections:
        out.append(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>')
        for b in s.blocks:
            if isinstance(b, Table):
                out.append(_html_table(b))
            elif isinstance(b, Figure):
                data = base64.b64encode(b.png).decode("ascii")
                cap = html.escape(b.caption or b.title)
                out.append(f'<figure><img alt="{html.escape(b.title)}" src="data:image/png;base64,{data}">'
                           f"<figcaption>{cap}</figcaption></figure>")
            else:
                out.append(f"<p>{html.escape(b)}</p>")
        out.append("</section>")
    out.append("</body></html>\n")
    return "\n".join(out)


def _md_cell(v: Any) -> str:
    return fmt(v).replace("|", "\\|").replace("\n", " ")


def _md_table(t: Table) -> str:
    lines = [f"**{t.title}**", "", "| " + " | ".join(_md_cell(c) for c in t.columns) + " |",
             "|" + "|".join(":---" if i == 0 else "---:" for i in range(len(t.columns))) + "|"]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in t.rows]
    if t.note:
        lines += ["", f"_{t.note}_"]
    return "\n".join(lines) + "\n"


def render_markdown(report: Report, figure_dir: str | Path, figure_prefix: str) -> str:
    """The Markdown twin; writes every figure as ``figure_dir/<name>.png`` linked as ``figure_prefix/<name>.png``."""
    fdir = Path(figure_dir)
    fdir.mkdir(parents=True, exist_ok=True)
    out = [f"# {report.title}", ""]
    hl = report.headline
    if hl is not None:
        cols, rows = _headline_rows(hl)
        out += [f"> **Chosen mixture: {hl.chosen}** — {_headline_summary(hl)}", ">", f"> {hl.verdict}", ">",
                f"> Why: {hl.why}", "", _md_table(Table("Chosen mixture against the baselines", cols, rows))]
    for s in report.sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Table):
                out.append(_md_table(b))
            elif isinstance(b, Figure):
                (fdir / f"{b.name}.png").write_bytes(b.png)
                out += [f"![{b.title}]({figure_prefix}/{b.name}.png)", ""]
                if b.caption:
                    out += [f"_{b.caption}_", ""]
            else:
                out += [b, ""]
    return "\n".join(out) + "\n"


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower() or "x"


def write_report(report: Report, output: str | Path, *, markdown: bool = True) -> dict[str, str]:
    """Write ``output`` (HTML) atomically and, with ``markdown``, ``<stem>.md`` plus ``<stem>_files/*.png``."""
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = {"html": str(out)}
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render_html(report), encoding="utf-8")
    os.replace(tmp, out)
    if markdown:
        md = out.with_suffix(".md")
        fdir = out.with_name(out.stem + "_files")
        text = render_markdown(report, fdir, fdir.name)
        tmp = md.with_name(md.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, md)
        written.update(markdown=str(md), figures=str(fdir))
    return written
