"""Paired comparisons of mixtures that share seeds: per-seed differences, a t interval, a sign test,
Holm's correction over every pair compared, and a verdict in words.

Every arm of an ablation (and of a testbed) is trained with the same seeds, so seed ``s`` of mixture
A and seed ``s`` of mixture B share their initialisation and data order: the difference
``d_s = loss_B(s) - loss_A(s)`` removes the seed's own effect, and the mean of the ``d_s`` is judged
against their own spread (paired t), not against the spread of either arm (which holds the seed
effect twice). ::

    from mix.paired import compare_paired, holm
    c = compare_paired("regmix", [5.21, 5.19, 5.25], "uniform", [5.30, 5.27, 5.33])
    c["verdict"]     # "better" | "worse" | "no difference shown" (at alpha, after Holm over the pairs)

``loss`` is lower-is-better; a positive ``mean_diff`` means A's loss is lower (A is better).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

ALPHA = 0.05  # two-sided level of the verdicts and of the intervals (1 - ALPHA coverage)


def paired_stats(a: Sequence[float], b: Sequence[float], *, alpha: float = ALPHA) -> dict[str, Any]:
    """Per-seed differences ``d = b - a`` (positive: A lower), their mean, sd, the two-sided paired-t
    p-value and ``1 - alpha`` interval, and the exact two-sided sign-test p-value (ties dropped)."""
    from scipy import stats

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired arms need the same seeds: got {a.shape} and {b.shape} values")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("paired comparison of non-finite losses (a proxy diverged?)")
    d = b - a
    n = int(d.size)
    out: dict[str, Any] = {"n": n, "diffs": d.round(6).tolist(), "mean_diff": float(d.mean()) if n else 0.0,
                           "wins": int((d > 0).sum()), "losses": int((d < 0).sum())}
    if n < 2:
        out.update(sd=0.0, t_p=1.0, ci=[out["mean_diff"], out["mean_diff"]], sign_p=1.0)
        return out
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    half = float(stats.t.ppf(1.0 - alpha / 2.0, n - 1)) * se
    if se > 0:
        t_p = float(2.0 * stats.t.sf(abs(d.mean()) / se, n - 1))
    else:  # identical differences: certain unless they are all zero
        t_p = 0.0 if d.mean() != 0 else 1.0
    nz = out["wins"] + out["losses"]
    sign_p = float(stats.binomtest(out["wins"], nz, 0.5).pvalue) if nz else 1.0
    out.update(sd=sd, t_p=t_p, ci=[float(d.mean() - half), float(d.mean() + half)], sign_p=sign_p)
    return out


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given; monotone, capped at 1)."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adj[i] = running
    return adj.tolist()


def verdict(mean_diff: float, p_adjusted: float, *, alpha: float = ALPHA) -> str:
    """``better`` (A lower), ``worse`` or ``no difference shown`` at ``alpha`` (Holm-adjusted p)."""
    if p_adjusted < alpha and mean_diff > 0:
        return "better"
    if p_adjusted < alpha and mean_diff < 0:
        return "worse"
    return "no difference shown"


def compare_all(per_seed: Mapping[str, Sequence[float]], *, alpha: float = ALPHA,
                pairs: Sequence[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """Paired comparisons of the arms ``{name: [loss per seed]}`` (same seed order in every arm).

    ``pairs``: the (A, B) pairs to test (default: every unordered pair once, in the arms' order).
    The t p-values are Holm-adjusted over these pairs; each row carries ``a``, ``b``, the stats of
    :func:`paired_stats`, ``p_holm`` and ``verdict`` (A vs B)."""
    names = list(per_seed)
    if pairs is None:
        pairs = [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
    rows = [{"a": a, "b": b, **paired_stats(per_seed[a], per_seed[b], alpha=alpha)} for a, b in pairs]
    for row, p in zip(rows, holm([r["t_p"] for r in rows]), strict=True):
        row["p_holm"] = p
        row["verdict"] = verdict(row["mean_diff"], p, alpha=alpha)
    return rows


def sentence(row: Mapping[str, Any], *, alpha: float = ALPHA) -> str:
    """One plain sentence for a comparison row of :func:`compare_all`."""
    lo, hi = row["ci"]
    ci = f"{int(round(100 * (1 - alpha)))}% interval of the per-seed difference [{lo:+.4f}, {hi:+.4f}]"
    seeds = f"lower in {row['wins']} of {row['n']} seeds"
    if row["verdict"] == "better":
        return (f"{row['a']} is better than {row['b']}: loss lower by {row['mean_diff']:.4f} on average, {seeds}, "
                f"{ci}, Holm-adjusted p {row['p_holm']:.3g}")
    if row["verdict"] == "worse":
        return (f"{row['a']} is worse than {row['b']}: loss higher by {-row['mean_diff']:.4f} on average, "
                f"{row['a']} {seeds}, {ci}, Holm-adjusted p {row['p_holm']:.3g}")
    return (f"{row['a']} vs {row['b']}: no difference shown (mean difference {row['mean_diff']:+.4f}, {seeds}, "
            f"{ci}, Holm-adjusted p {row['p_holm']:.3g})")
