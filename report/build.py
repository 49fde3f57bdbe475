"""The corpusmix report: one self-contained HTML page (plus a Markdown twin) that answers "which
mixture should I use, and how much better is it?" and shows the evidence behind the answer.

Run as ``corpusmix report --output report.html --inputs out/ [more files or folders]`` (see
:mod:`report.cli`), or from Python::

    from report.build import ReportConfig, build_report, write_report
    from report.inputs import collect_inputs
    report = build_report(collect_inputs(["out/"]), ReportConfig())
    write_report(report, "report.html")          # also report.md + report_files/*.png

Sections, in order: the headline box (the pipeline's mixture: ``mix.method``, as written by
``corpusmix mix select``; ``report.chosen`` names another; the lowest-loss mixture only when no
pipeline mixture is found), its average and worst-domain evaluation loss against the natural and
uniform mixtures, the difference in units of the seed spread and a plain
verdict), the mixture ablation (per-domain loss table and heatmap, seed spread, loss curves), the
mixture weights per method, the search diagnostics (DoReMi weight trajectory, RegMix fit quality),
training logs, the curation funnel and quality metrics (:mod:`report.curation`) and the list of
input files used and skipped. Inputs are found by :mod:`report.inputs`, figures drawn by
:mod:`report.figures`, pages written by :mod:`report.render`.

The comparison rule is the one of :func:`mix.ablation.compare` (:mod:`mix.paired`): mixtures share
seeds, so A and B are compared on their per-seed differences (paired t interval, sign count,
Holm's correction over the baselines); the verdict names the mixture to use: the chosen one only
when it is better than every baseline, else the baseline with the lower mean loss.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from report import figures as figs
from report.curation import funnel_section, quality_section, tidy_tables
from report.environment import environment_section
from report.inputs import MixtureRuns, ReportInputError, ReportInputs, normalise_ablation, small_eval_splits
from report.inspection import inspection_section
from report.render import Callout, Figure, Report, Section, Table, fmt, signed, write_report
from report.scaling import scaling_section

__all__ = ["ReportConfig", "build_report", "headline", "noise_verdict", "tidy_tables", "write_report"]


@dataclass
class ReportConfig:
    """``corpusmix report`` (``params.yaml`` section ``report``)."""

    output: str = field(default="out/report/report.html", metadata={"help": "HTML file to write"})
    inputs: list[str] = field(default_factory=lambda: ["out"],
                              metadata={"help": "files or folders with pipeline outputs"})
    title: str = field(default="corpusmix report", metadata={"help": "page title"})
    chosen: str = field(default="", metadata={
        "help": "ablation mixture the headline is about; empty: the pipeline's mixture (mix.method, as written "
                "by `corpusmix mix select`), or the lowest mean average loss when no pipeline mixture is found"})
    baselines: list[str] = field(default_factory=lambda: ["natural", "uniform"],
                                 metadata={"help": "ablation mixtures the chosen one is compared to"})
    markdown: bool = field(default=True, metadata={"help": "also write <output>.md with PNGs next to it"})
    summary: str = field(default="", metadata={
        "help": "also write the headline figures to this JSON (the DVC metric; report/summary.py); empty: no"})
    plots: str = field(default="", metadata={
        "help": "also write the data of `dvc plots show` (CSVs) to this folder (report/plotdata.py); empty: no"})


# ----------------------------------------------------------------------------- headline numerics

def noise_verdict(mean_diff: float, p_adjusted: float, n_seeds: int) -> str:
    """``better`` / ``worse`` (paired, Holm-adjusted p below ``mix.paired.ALPHA``), ``no difference
    shown``, or ``one seed`` (no paired test possible)."""
    from mix.paired import verdict

    if n_seeds < 2:
        return "one seed: noise unknown"
    return verdict(mean_diff, p_adjusted)


@dataclass
class Comparison:
    """The chosen mixture against one other, paired over the seeds both were trained with
    (``delta = other - chosen``: positive = chosen is lower)."""

    other: str
    other_avg: float
    avg_delta: float
    ci: tuple[float, float]  # interval of the mean per-seed difference (mix.paired.ALPHA)
    p_holm: float
    wins: int  # seeds where the chosen mixture's loss is lower
    worst_delta: float
    worst_ci: tuple[float, float] | None  # None when per-seed domain losses are unknown
    n_seeds: int
    domains_lower: int
    n_domains: int

    @property
    def relative(self) -> float:
        """Relative reduction of the average loss, in percent of the other mixture's."""
        return 100.0 * self.avg_delta / self.other_avg if self.other_avg else math.nan

    @property
    def verdict(self) -> str:
        return noise_verdict(self.avg_delta, self.p_holm, self.n_seeds)

    @property
    def worst_is_worse(self) -> bool:
        """The chosen mixture's worst-domain loss is higher in the paired interval (entirely below 0)."""
        return self.worst_ci is not None and self.worst_ci[1] < 0


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
    clear: bool
    title: str
    weights: dict[str, float]
    explicit: bool = False  # named by the user rather than picked by the lowest loss
    use: str = ""  # the mixture the report recommends


def headline(runs: Sequence[MixtureRuns], *, chosen: str = "", baselines: Sequence[str] = ("natural", "uniform"),
             avg_over: Sequence[str] | None = None, why: str = "") -> Headline:
    """Compare ``chosen`` (or, when empty, the lowest mean average loss) to ``baselines``, paired
    over seeds with Holm's correction over the baselines; ``why`` says where ``chosen`` came from
    (default: named explicitly)."""
    from mix.paired import holm, paired_stats

    by_name = {r.name: r for r in runs}
    if chosen:
        if chosen not in by_name:
            raise ReportInputError(f"chosen mixture {chosen!r} is not in the ablation; choose one of {sorted(by_name)}")
        best = by_name[chosen]
        why = why or f"{chosen} was named explicitly (--chosen)."
    else:
        best = min(runs, key=lambda r: float(np.mean(r.avg_per_seed)))
        n = len(best.avg_per_seed)
        why = (f"{best.name} has the lowest mean average loss of the {len(runs)} mixtures trained "
               f"({n} seed{'s' * (n != 1)} each" + (f", average over {len(avg_over)} domains" if avg_over else "")
               + ")." if len(runs) > 1 else f"{best.name} is the only mixture in the ablation.")
    others = [b for b in baselines if b in by_name and b != best.name
              and len(by_name[b].avg_per_seed) == len(best.avg_per_seed)]
    stats = [paired_stats(best.avg_per_seed, by_name[b].avg_per_seed) for b in others]
    adjusted = holm([st["t_p"] for st in stats])
    comps = []
    for name, st, p in zip(others, stats, adjusted, strict=True):
        o = by_name[name]
        both_seeded = bool(best.seed_losses) and bool(o.seed_losses)
        worst = paired_stats(best.worst_per_seed, o.worst_per_seed) if both_seeded else None
        shared = [d for d in best.mean_loss if d in o.mean_loss]
        comps.append(Comparison(
            other=name, other_avg=float(np.mean(o.avg_per_seed)), avg_delta=st["mean_diff"], ci=tuple(st["ci"]),
            p_holm=p, wins=st["wins"], worst_delta=float(np.mean(o.worst_per_seed) - np.mean(best.worst_per_seed)),
            worst_ci=tuple(worst["ci"]) if worst else None, n_seeds=st["n"],
            domains_lower=sum(best.mean_loss[d] < o.mean_loss[d] for d in shared), n_domains=len(shared)))
    verdict, clear, title, use = verdict_text(best.name, comps, len(best.avg_per_seed), lowest=not chosen,
                                              runs=by_name)
    return Headline(chosen=best.name, why=why, avg=float(np.mean(best.avg_per_seed)),
                    avg_range=(float(min(best.avg_per_seed)), float(max(best.avg_per_seed))),
                    worst=float(np.mean(best.worst_per_seed)),
                    worst_domain=max(best.mean_loss, key=lambda d: best.mean_loss[d]),
                    n_seeds=len(best.avg_per_seed), comparisons=comps, verdict=verdict, clear=clear, title=title,
                    weights=dict(best.weights), explicit=bool(chosen), use=use)


def _ci(c: Comparison) -> str:
    return f"paired interval [{signed(c.ci[0])}, {signed(c.ci[1])}], lower in {c.wins} of {c.n_seeds} seeds"


def recommend_baseline(names: Sequence[str], runs: dict[str, MixtureRuns]) -> tuple[str, str]:
    """The baseline to use when the chosen mixture does not beat every baseline: of ``names``, the
    one with the lowest mean average loss, and a sentence on whether its lead is shown (paired)."""
    from mix.paired import paired_stats, verdict

    best = min(names, key=lambda n: float(np.mean(runs[n].avg_per_seed)))
    rest = [n for n in names if n != best]
    if not rest:
        return best, ""
    st = paired_stats(runs[best].avg_per_seed, runs[rest[0]].avg_per_seed)
    shown = verdict(st["mean_diff"], st["t_p"]) == "better"
    return best, (f"{best} is better than {rest[0]} (paired p {st['t_p']:.3g})" if shown else
                  f"{best} has the lower mean loss; its difference to {rest[0]} is not shown "
                  f"(paired p {st['t_p']:.3g})")


BASELINE_NAMES = ("natural", "uniform")  # mixtures that need no search: the fallbacks of a verdict


def verdict_text(chosen: str, comps: Sequence[Comparison], n_seeds: int, *, lowest: bool = True,
                 runs: dict[str, MixtureRuns] | None = None) -> tuple[str, bool, str, str]:
    """A plain-language verdict, whether it is a clear recommendation, a one-line title that names
    the mixture to use, and that mixture (``lowest``: ``chosen`` was picked as the lowest loss)."""
    what = "has the lowest loss" if lowest else "is the chosen mixture"
    if not comps:
        return (f"{chosen} {what}, but no baseline mixture (natural, uniform) was trained with the same seeds in "
                "the ablation, so there is nothing to measure the gain against.", False,
                f"Use: {chosen} (no baseline to compare with)", chosen)
    if n_seeds < 2:
        return (f"{chosen} {what}, but with one seed per mixture the noise is unknown: train at "
                "least 3 seeds per mixture before trusting any difference.", False,
                f"Use: {chosen} (one seed: noise unknown)", chosen)
    parts = []
    for c in comps:
        if c.verdict == "better":
            parts.append(f"is better than {c.other} by {fmt(c.avg_delta)} average loss ({c.relative:.1f}% lower; "
                         f"{_ci(c)}; Holm p {c.p_holm:.3g}; lower on {c.domains_lower} of {c.n_domains} domains)")
        elif c.verdict == "worse":
            parts.append(f"is worse than {c.other} by {fmt(-c.avg_delta)} average loss ({_ci(c)}; "
                         f"Holm p {c.p_holm:.3g})")
        else:
            parts.append(f"shows no difference from {c.other} (mean difference {signed(c.avg_delta)}; {_ci(c)}; "
                         f"Holm p {c.p_holm:.3g})")
    joined = "; it ".join(parts)
    worse_worst = [c.other for c in comps if c.worst_is_worse]
    tail = (f" Its worst-domain loss is higher than {', '.join(worse_worst)}'s in every plausible paired "
            "difference (interval below 0): check the per-domain table before relying on it for that domain."
            if worse_worst else "")
    if all(c.verdict == "better" for c in comps):
        best_gain = max(comps, key=lambda c: c.avg_delta)
        return (f"Use {chosen}: it {joined}." + tail, True,
                f"Use: {chosen} ({min(c.relative for c in comps):.1f}–{best_gain.relative:.1f}% lower average loss "
                "than the baselines, paired over seeds)" if len(comps) > 1 else
                f"Use: {chosen} ({best_gain.relative:.1f}% lower average loss than {best_gain.other}, paired over "
                "seeds)", chosen)
    names = [c.other for c in comps] + ([chosen] if chosen in BASELINE_NAMES else [])
    use, why = recommend_baseline(names, runs or {})
    body = f"{chosen} {joined}."
    reason = (f"it needs no search, and {why}" if use == chosen else
              f"{chosen}'s gain over every baseline is not shown, and {why}")
    return (body + f" Use {use}: {reason}." + tail, False,
            f"Use: {use} ({chosen} does not beat every baseline, paired over seeds)", use)


def headline_callout(hl: Headline) -> Callout:
    cols = ["compared with", "its avg loss", "avg Δ", "avg Δ %", "paired interval of Δ", "seeds lower",
            "Holm p", "worst-domain Δ", "domains lower", "verdict"]
    rows = [[c.other, c.other_avg, signed(c.avg_delta), f"{c.relative:.2f}%",
             f"[{signed(c.ci[0])}, {signed(c.ci[1])}]", f"{c.wins}/{c.n_seeds}", f"{c.p_holm:.3g}",
             signed(c.worst_delta), f"{c.domains_lower}/{c.n_domains}", c.verdict]
            for c in hl.comparisons]
    w = ", ".join(f"{d} {v:.3f}" for d, v in sorted(hl.weights.items(), key=lambda kv: -kv[1]))
    return Callout(
        title=hl.title,
        summary=(f"Average evaluation loss {fmt(hl.avg)} (seeds {fmt(hl.avg_range[0])}–{fmt(hl.avg_range[1])}, "
                 f"n={hl.n_seeds}); worst domain {hl.worst_domain} at {fmt(hl.worst)}."),
        verdict=hl.verdict,
        table=Table("Chosen mixture against the baselines (Δ = baseline − chosen, per seed, then averaged; Δ > 0: "
                    "the chosen mixture is lower; 95% paired t interval; Holm-adjusted over the baselines)",
                    cols, rows) if rows else None,
        note=f"Why {hl.chosen}: {hl.why}" + (f" Weights: {w}." if w else ""), clear=hl.clear)


# ----------------------------------------------------------------------------- sections

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


# the per-domain seed range DoReMi's output is held to (docs/mix.md); shown as met or not. The same
# number as mix.doremi_sizing.SEED_RANGE_TARGET (the report reads files, it does not import the searches)
DOREMI_RANGE_TARGET = 0.05


def doremi_spread_table(label: str, mix: dict) -> Table | None:
    """A DoReMi mixture's output with its spread: per domain the weight, +- 2 standard errors over
    the DRO proxies, one proxy's sd, and the range between the reported seeds; None when the
    file carries no per-seed weights (not a DoReMi search, or an older file)."""
    prov = mix.get("provenance")
    rng = prov.get("seed_range") if isinstance(prov, dict) else None
    if not isinstance(rng, dict) or not rng or not isinstance(prov.get("seed_weights"), list):
        return None

    def nums(key: str) -> dict:  # a per-domain map of numbers; anything else (a malformed file) shows blank
        v = prov.get(key)
        return {d: x for d, x in v.items() if _is_num(x)} if isinstance(v, dict) else {}

    weights = mix.get("weights") or {}
    se, sd, rng = nums("mixture_se"), nums("proxy_sd"), nums("seed_range")
    doms = sorted(weights)
    rows = [[d, weights[d], 2 * se[d] if d in se else "", sd.get(d, ""), rng.get(d, "")] for d in doms]
    worst = max((d for d in doms if d in rng), key=lambda d: rng[d], default=None)
    m, n = prov.get("group_size", 1), prov.get("n_proxies")
    m = m if isinstance(m, int) and not isinstance(m, bool) else 1
    k = len(prov["seed_weights"])
    parts = [f"{k} reported seed{'s' if k != 1 else ''}" + (f", each the mean of {m} DRO proxies" if m > 1 else "")
             + (f" ({n} proxies in all)" if isinstance(n, int) and not isinstance(n, bool) else "") + "."]
    if worst is not None:
        ok = rng[worst] <= DOREMI_RANGE_TARGET
        parts.append(f"Largest seed range {rng[worst]:.3f} ({worst}): "
                     f"{'within' if ok else 'ABOVE'} the {DOREMI_RANGE_TARGET} target.")
    sizing = prov.get("range_sizing")
    if isinstance(sizing, dict) and all(_is_num(sizing.get(x)) for x in
                                        ("target", "probability", "p_at_group_size", "group_size_needed", "n_proxies")):
        parts.append(f"From the sd of its {int(sizing['n_proxies'])} proxies, a run of this size meets the "
                     f"{sizing['target']} target in about {100 * sizing['p_at_group_size']:.0f} % of runs; "
                     f"{int(sizing['group_size_needed'])} proxies per seed (mix.doremi.group_size) would meet it in "
                     f"{100 * sizing['probability']:.0f} %"
                     + (f" ({int(sizing['group_size_needed_upper'])} at the sd's "
                        f"{100 * sizing['confidence']:.0f} % upper confidence bound; "
                        if _is_num(sizing.get("group_size_needed_upper")) and _is_num(sizing.get("confidence")) else " (")
                     + "an estimate: normal proxies, sd from this run).")
    pilot = prov.get("pilot")
    if isinstance(pilot, dict) and all(_is_num(pilot.get(x)) for x in
                                       ("group_size", "n_proxies", "group_size_needed_upper", "max_group_size")):
        parts.append(f"The group size was set by a pilot of {int(pilot['n_proxies'])} proxies (group size "
                     f"{int(pilot['group_size'])}), which estimated {int(pilot['group_size_needed_upper'])} for 95 % "
                     f"from the upper confidence bound of its sd (mix.doremi.max_group_size caps it at "
                     f"{int(pilot['max_group_size'])}).")
    if se:
        parts.append("± 2 SE is the mixture's uncertainty from the proxies' random seeds alone"
                     + (" (a lower bound: the proxies share one reference model)" if prov.get("se_lower_bound")
                        else " (each proxy with its own reference)")
                     + "; it does not cover the proxies' training setup (model size, learning rate, steps), "
                     "to which DoReMi's answer is sensitive at proxy scale (docs/mix.md).")
    return Table(f"DoReMi output and its seed spread ({label})",
                 ["domain", "weight", "± 2 SE", "sd of one proxy", "seed range"], rows, " ".join(parts),
                 alert=worst is not None and rng[worst] > DOREMI_RANGE_TARGET)


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def final_run_flops(inputs: ReportInputs) -> float | None:
    """Training FLOPs of the final run, summed over its logged steps (``flops`` per step record)."""
    totals = [sum(float(r.get("flops", 0.0)) for r in recs if "event" not in r) for recs in inputs.train_logs.values()]
    totals = [t for t in totals if t > 0]
    return max(totals) if totals else None


def cost_table(inputs: ReportInputs) -> Table | None:
    """Each search's training FLOPs (its proxies; ``cost`` in the mixture's provenance) as a share of
    the final run's."""
    final = final_run_flops(inputs)
    rows = []
    for label, m in inputs.mixtures.items():
        cost = (m.get("provenance") or {}).get("cost")
        if not isinstance(cost, dict) or (m.get("provenance") or {}).get("selected"):
            continue
        share = f"{100 * cost['flops'] / final:.1f}%" if final else "n/a (no training log)"
        rows.append([str(m.get("method") or label), cost.get("proxy_runs"), cost.get("tokens"),
                     f"{cost['flops']:.3g}", share])
    if not rows:
        return None
    return Table("Search cost: proxy training FLOPs (6N + attention per token, DoReMi's reference forward passes "
                 "included)" + (f"; final run {final:.3g} FLOPs" if final else ""),
                 ["search", "proxy runs", "tokens", "FLOPs", "share of the final run"], rows)


def search_section(inputs: ReportInputs) -> Section | None:
    spreads = [t for label, mix in inputs.mixtures.items() if (t := doremi_spread_table(label, mix)) is not None]
    cost = cost_table(inputs)
    if not inputs.trajectories and not inputs.regmix_fits and not spreads and cost is None:
        return None
    sec = Section("search", "Mixture search diagnostics")
    if cost is not None:
        sec.blocks.append(cost)
    sec.blocks.extend(spreads)
    for i, (label, traj) in enumerate(inputs.trajectories.items()):
        doms = [k for k in traj[0] if k not in ("step", "round") and isinstance(traj[0][k], (int, float))]
        rounds = len({r.get("round") for r in traj})
        xs = list(range(len(traj))) if rounds > 1 else [float(r.get("step", j)) for j, r in enumerate(traj)]
        sec.blocks.append(Figure(f"trajectory_{i}", f"DoReMi weight trajectory ({label})", figs.trajectory_figure(
            xs, {d: [float(r.get(d, 0.0)) for r in traj] for d in doms},
            title="Group-DRO domain weights per step" + (f" ({rounds} rounds, concatenated)" if rounds > 1 else "")),
            "The first DRO proxy's weights; the output mixture is the mean, over every DRO proxy, of each "
            "one's weights averaged over its steps (after mix.doremi.average_from of them). One domain "
            "taking all the weight is DoReMi's known failure mode."))
        mean = {d: float(np.mean([r.get(d, 0.0) for r in traj])) for d in doms}
        sec.blocks.append(Table(f"DoReMi weights of the first proxy ({label})", ["domain", "last step", "mean over steps"],
                                [[d, float(traj[-1].get(d, 0.0)), mean[d]] for d in doms]))
    seen: dict[str, str] = {}
    for label, fit in inputs.regmix_fits.items():
        key = json.dumps(fit, sort_keys=True, default=str)
        if key in seen:  # the same fit copied into a mixture's provenance
            sec.blocks.append(f"The RegMix fit in {label} is the same as in {seen[key]}.")
            continue
        seen[key] = label
        models = [m for m in ("hybrid", "lightgbm", "linear", "domainwise") if isinstance(fit.get(m), dict)]
        rows = [[m + (" (search)" if fit.get("regressor", "lightgbm") == m else ""),
                 fit[m].get("spearman"), fit[m].get("pearson"), fit[m].get("mae"), fit.get("n_fit"),
                 fit.get("n_heldout")] for m in models]
        how = (f"{fit['folds']}-fold cross-validation: every run predicted by models fitted on the other folds"
               if fit.get("folds") else "a held-out slice of the runs")
        sec.blocks.append(Table(f"RegMix regression fit on held-out proxy runs ({label})",
                                ["regressor", "Spearman", "Pearson", "MAE", "fit runs", "held-out runs"], rows,
                                f"Scored by {how}. The paper reports Spearman around 0.9; far lower means the "
                                "searched mixture rests on a weak regression."))
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


def pipeline_choice(inputs: ReportInputs, runs: Sequence[MixtureRuns]) -> tuple[str, str] | None:
    """The ablation mixture the pipeline packs with, and why: the mixture file ``corpusmix mix select``
    wrote (``provenance.selected`` = ``mix.method``), matched to an ablation run by its weights, else by
    the method's name. None when no such file was found or no ablation run matches it."""
    for label, m in inputs.mixtures.items():
        sel = (m.get("provenance") or {}).get("selected")
        if not sel:
            continue
        w = m.get("weights") or {}
        for r in runs:
            if r.weights and set(r.weights) == set(w) and all(abs(r.weights[d] - w[d]) <= 1e-9 for d in w):
                return r.name, f"{r.name} is the pipeline's mixture (mix.method: {sel}; {label})."
        if any(r.name == sel for r in runs):
            return str(sel), f"{sel} is the pipeline's mixture (mix.method: {sel}; {label})."
    return None


def _selected_note(inputs: ReportInputs, hl: Headline) -> str:
    """Which mixture the pipeline packs with, when the headline is about another one (``report.chosen``)."""
    for label, m in inputs.mixtures.items():
        sel = (m.get("provenance") or {}).get("selected")
        if sel:
            note = f" The pipeline currently packs with {sel} (mix.method; {label})."
            if hl.use and str(sel) != hl.use:
                note += f" Set mix.method: {hl.use} in params.yaml to use the recommended mixture."
            return note
    return ""


def _lowest_note(runs: Sequence[MixtureRuns], hl: Headline) -> str:
    """The lowest-loss ablation mixture, when the headline is about another one."""
    best = min(runs, key=lambda r: float(np.mean(r.avg_per_seed)))
    if best.name == hl.chosen:
        return ""
    return (f" Lowest mean average loss in the ablation: {best.name} ({fmt(float(np.mean(best.avg_per_seed)))} "
            f"against {fmt(hl.avg)}); set mix.method: {best.name} in params.yaml to pack with it.")


def headline_for(inputs: ReportInputs, runs: Sequence[MixtureRuns], cfg: ReportConfig,
                 avg_over: Sequence[str] | None = None) -> tuple[Headline, Callout]:
    """The headline and its box: about ``report.chosen`` when set, else the pipeline's mixture
    (:func:`pipeline_choice`), else (no pipeline mixture found) the lowest mean average loss."""
    chosen, why = cfg.chosen, ""
    if not chosen:
        chosen, why = pipeline_choice(inputs, runs) or ("", "")
    hl = headline(runs, chosen=chosen, baselines=cfg.baselines, avg_over=avg_over, why=why)
    callout = headline_callout(hl)
    if cfg.chosen:
        callout.note += _selected_note(inputs, hl)
    elif not chosen:
        callout.note += " No pipeline mixture (the output of `corpusmix mix select`) matches an ablation run."
    callout.note += _lowest_note(runs, hl)
    return hl, callout


def build_report(inputs: ReportInputs, cfg: ReportConfig) -> Report:
    """Assemble the report (callout, tables, figures) from the collected inputs."""
    if inputs.is_empty():
        raise ReportInputError(
            f"nothing to report in {cfg.inputs}: no curation stats, mixtures, ablation, train logs or metrics "
            "were found; run the pipeline first (dvc repro) or pass the right folders with --inputs")
    sections: list[Section] = []
    callout = None
    runs: list[MixtureRuns] = []
    hl: Headline | None = None
    if inputs.ablations:
        label, obj = next(iter(inputs.ablations.items()))
        inputs.skipped += [(lbl, "a second ablation file; the report uses the first one found")
                           for lbl in list(inputs.ablations)[1:]]
        domains, avg_over, runs = normalise_ablation(obj, where=label)
        hl, callout = headline_for(inputs, runs, cfg, avg_over)
        sections.append(ablation_section(domains, avg_over, runs, hl, label))
        if small := small_eval_splits(inputs, domains):
            sections[-1].blocks.insert(0, small)
    for sec in (weights_section(inputs, runs), search_section(inputs), training_section(inputs),
                scaling_section(inputs.scaling), funnel_section(inputs), inspection_section(inputs),
                quality_section(inputs), environment_section(inputs)):
        if sec is not None:
            sections.append(sec)
    sections.append(inputs_section(inputs))
    if cfg.summary:
        from report.summary import summary_metrics, write_summary

        write_summary(cfg.summary, summary_metrics(inputs, hl, runs, cfg.baselines))
    if cfg.plots:
        from report.plotdata import write_plot_data

        write_plot_data(cfg.plots, inputs, runs)
    return Report(cfg.title, callout, sections)
