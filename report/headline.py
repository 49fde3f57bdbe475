"""The headline of the report: the chosen mixture against the baselines, paired over seeds, its
plain-language verdict and the box that opens the page.

The comparison rule is the one of :func:`mix.ablation.compare` (:mod:`mix.paired`): mixtures share
seeds, so A and B are compared on their per-seed differences (paired t interval, sign count,
Holm's correction over the baselines); the verdict names the mixture to use: the chosen one only
when it is better than every baseline, else the baseline with the lower mean loss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from report.inputs import MixtureRuns, ReportInputError
from report.render import Callout, Table, fmt, signed


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
