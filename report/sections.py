"""Report sections read from the ablation, the mixture files and the training logs: the ablation's
losses per mixture, the mixture weights per method, the training logs and the list of inputs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from report import figures as figs
from report.headline import Headline
from report.inputs import MixtureRuns, ReportInputs
from report.render import Figure, Section, Table, fmt


def ablation_section(domains: list[str], avg_over: list[str], runs: list[MixtureRuns], hl: Headline,
                     label: str) -> Section:
    sec = Section("ablation", "Mixture ablation: evaluation loss per mixture")
    n = max(len(r.avg_per_seed) for r in runs)
    sec.blocks.append(
        f"The same proxy model trained on each candidate mixture ({label}), {n} seed(s) each. "
        f"Target: the unweighted mean loss over {len(avg_over)} target domain(s) "
        f"({', '.join(avg_over)})"
        + (f"; not a target: {', '.join(d for d in domains if d not in avg_over)}" if avg_over != domains else "")
        + "; worst = the highest per-domain loss of a seed. Lower is better. Every mixture is trained with the "
          "same seeds, so two mixtures are compared seed by seed (paired t interval and sign, Holm-adjusted).")
    base = next((r for r in runs if r.name == "natural"), None)
    rows = []
    for r in sorted(runs, key=lambda r: float(np.mean(r.avg_per_seed))):
        avg = float(np.mean(r.avg_per_seed))
        rows.append([r.name + (" (chosen)" if r.name == hl.chosen else ""), avg,
                     float(np.std(r.avg_per_seed, ddof=1)) if len(r.avg_per_seed) > 1 else math.nan,
                     float(np.ptp(r.avg_per_seed)), float(np.mean(r.worst_per_seed)),
                     max(r.mean_loss, key=lambda d: r.mean_loss[d]),
                     avg - float(np.mean(base.avg_per_seed)) if base else math.nan, len(r.avg_per_seed)])
    sec.blocks.append(Table("Average and worst-domain evaluation loss, best first",
                            ["mixture", "avg loss", "seed sd", "seed range", "worst-domain loss", "worst domain",
                             "avg − natural", "seeds"], rows))
    sec.blocks.append(Table("Per-domain evaluation loss (mean ± seed sd)", ["mixture", *domains],
                            [[r.name, *[_pm(r.mean_loss.get(d), r.std_loss.get(d)) for d in domains]]
                             for r in runs]))
    names = [r.name for r in runs]
    mat = np.array([[r.mean_loss.get(d, math.nan) for d in domains] for r in runs])
    center = mat[names.index("natural")] if "natural" in names else None
    sec.blocks.append(Figure("loss_heatmap", "Per-domain evaluation loss per mixture", figs.heatmap(
        names, domains, mat, title="evaluation loss per domain", center=center,
        cbar_label="loss − natural" if center is not None else "loss"),
        "Cells print the mean loss; colour is the difference to the natural mixture (blue = lower)."
        if center is not None else "Cells print the mean loss."))
    sec.blocks.append(Figure("seed_spread", "Average and worst-domain loss with seed spread", figs.spread_figure(
        names, [r.avg_per_seed for r in runs], [r.worst_per_seed for r in runs], highlight=hl.chosen),
        "Bars: mean over seeds; dots: individual seeds; whiskers: min–max range. The chosen mixture is red."))
    curves = {r.name: list(r.curves.values()) for r in runs if r.curves}
    if curves:
        sec.blocks.append(Figure("ablation_curves", "Training loss curves per mixture", figs.curves_figure(
            curves, title="training loss (mean over seeds, min–max band)", zoom=True),
            "Right: the last half of training, zoomed in. Training loss is measured on each mixture's own "
            "batches, so it is not comparable across mixtures: compare the evaluation losses above."))
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
            named[r.name], sources[r.name] = r.weights, "ablation"
    if not named:
        return None
    order = [r.name for r in runs if r.name in named] + sorted(n for n in named if n not in {r.name for r in runs})
    domains = sorted({d for w in named.values() for d in w})
    sec = Section("weights", "Mixture weights per method")
    sec.blocks.append(Table("Domain weights (each row sums to 1)", ["mixture", *domains, "source"],
                            [[n, *[named[n].get(d, 0.0) for d in domains], sources[n]] for n in order]))
    sec.blocks.append(Figure("weights", "Mixture weights per method", figs.grouped_bars(
        domains, {n: [named[n].get(d, 0.0) for d in domains] for n in order}, title="domain weights",
        ylabel="weight")))
    params = [[n, sources[n], ", ".join(f"{k}={v}" for k, v in inputs.mixtures[sources[n]]["params"].items())]
              for n in order if sources[n] in inputs.mixtures and inputs.mixtures[sources[n]].get("params")]
    if params:
        sec.blocks.append(Table("Search parameters", ["mixture", "file", "params"], params))
    return sec



def training_section(inputs: ReportInputs) -> Section | None:
    if not inputs.train_logs:
        return None
    sec = Section("training", "Training logs")
    curves, summary, val_rows = {}, [], []
    for label, recs in inputs.train_logs.items():
        lossy = [r for r in recs if isinstance(r.get("loss"), (int, float))]
        if lossy:
            curves[label] = [[(float(r["step"]), float(r["loss"])) for r in lossy]]
            # no throughput here: the report is a DVC output, a pure function of the results (the log has it)
            summary.append([label, len(lossy), int(lossy[-1]["step"]),
                            float(np.mean([r["loss"] for r in lossy[-10:]]))])
        val = [r for r in recs if any(k.startswith("val_loss/") for k in r)]
        if val:
            last = val[-1]
            val_rows += [[label, int(last["step"]), k.split("/", 1)[1], float(last[k])]
                         for k in sorted(k for k in last if k.startswith("val_loss/"))]
    if summary:
        sec.blocks.append(Table("Runs", ["run", "steps logged", "last step", "final loss (mean of last 10)"], summary))
    if curves:
        sec.blocks.append(Figure("train_curves", "Training loss", figs.curves_figure(curves, title="training loss")))
    if val_rows:
        sec.blocks.append(Table("Last validation loss per domain", ["run", "step", "domain", "val loss"], val_rows))
    return sec


def inputs_section(inputs: ReportInputs) -> Section:
    sec = Section("inputs", "Inputs")
    used = [[kind, label] for kind, group in (
        ("ablation", inputs.ablations), ("mixture", inputs.mixtures), ("weight trajectory", inputs.trajectories),
        ("regmix fit", inputs.regmix_fits), ("train log", inputs.train_logs), ("curation stats", inputs.stats),
        ("drops", inputs.drops), ("curated documents (counted per domain)", sorted(inputs.used_documents)),
        ("token counts", inputs.tokens), ("metrics", inputs.metrics), ("ground truth", inputs.ground_truth))
        for label in group]
    skipped = [list(s) for s in inputs.skipped] + [
        [d, "documents not in a curation output folder (next to stats.json + drops.parquet, or in its curated/)"]
        for d in inputs.documents if d not in inputs.used_documents]
    sec.blocks.append(Table("Files used", ["kind", "file"], used))
    if skipped:
        sec.blocks.append(Table("Files skipped", ["file", "reason"], skipped, collapsed=True))
    return sec
