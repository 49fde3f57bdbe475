"""Figures of ``corpusmix report``: pure functions from plain data to PNG bytes.

Library module of :mod:`report.build`. Every function builds a ``matplotlib.figure.Figure`` on the Agg
canvas directly (no ``pyplot``, so there is no global figure state and no GUI backend is touched)
and returns the PNG bytes; the report embeds them as base64 data URIs (HTML) or writes them next to
the Markdown file.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import numpy as np

DPI = 100
MAX_REASONS = 9  # drop reasons drawn one by one; the rest are summed as "other"
PALETTE = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
           "#CCB974", "#64B5CD"]


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def group_reasons(steps: Sequence[str], reasons: Mapping[str, Mapping[str, int]],
                  k: int) -> list[tuple[str, list[int]]]:
    """The ``k`` largest drop reasons (over all steps) with their count per step, then the rest
    summed as ``other (n reasons)``: a long tail (e.g. one reason per language) would drown a legend."""
    totals: dict[str, int] = {}
    for s in steps:
        for r, n in reasons.get(s, {}).items():
            totals[r] = totals.get(r, 0) + n
    ranked = sorted(totals, key=lambda r: (-totals[r], r))
    top, rest = ranked[:k], ranked[k:]
    series = [(r, [reasons.get(s, {}).get(r, 0) for s in steps]) for r in top]
    if rest:
        series.append((f"other ({len(rest)} reasons)", [sum(reasons.get(s, {}).get(r, 0) for r in rest)
                                                        for s in steps]))
    return series


def funnel_figure(steps: Sequence[str], docs_in: Sequence[int], kept: Sequence[int],
                  reasons: Mapping[str, Mapping[str, int]]) -> bytes:
    """Left: documents entering each step and kept by it. Right: drops per step stacked by reason
    (the ``MAX_REASONS`` largest; the others summed as one grey "other")."""
    fig = _figure(12, max(3.6, 0.45 * len(steps) + 2.2))
    ax1, ax2 = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(steps))
    ax1.barh(y, docs_in, color="#c8d3e6", label="docs in")
    ax1.barh(y, kept, color=color(0), label="kept")
    for yi, k in enumerate(kept):
        ax1.text(k, yi, f" {k:,}", va="center", fontsize=8)
    ax1.set_yticks(y, steps)
    ax1.invert_yaxis()
    ax1.set_xlabel("documents")
    ax1.set_title("curation funnel")
    ax1.legend(loc="lower right", fontsize=8)
    series = group_reasons(steps, reasons, MAX_REASONS)
    all_reasons = [name for name, _ in series]
    left = np.zeros(len(steps))
    for i, (r, vals) in enumerate(series):
        ax2.barh(y, vals, left=left, color=color(i) if i < MAX_REASONS else "#bbbbbb", label=r)
        left += np.asarray(vals, dtype=float)
    ax2.set_xlabel("documents dropped")
    ax2.set_title("drops by reason")
    if all_reasons:
        ax2.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _png(fig)


def grouped_bars(groups: Sequence[str], series: Mapping[str, Sequence[float]], *, title: str,
                 ylabel: str) -> bytes:
    """One group of bars per entry of ``groups`` (e.g. domains), one bar per series (e.g. mixtures)."""
    fig = _figure(max(6.0, 0.9 * len(groups) * max(1, len(series)) / 2 + 3), 3.8)
    ax = fig.subplots()
    x = np.arange(len(groups))
    width = 0.8 / max(1, len(series))
    for i, (name, vals) in enumerate(series.items()):
        ax.bar(x + (i - (len(series) - 1) / 2) * width, vals, width, label=name, color=color(i))
    ax.set_xticks(x, groups, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def heatmap(rows: Sequence[str], cols: Sequence[str], values: np.ndarray, *, title: str,
            center: np.ndarray | None = None, cbar_label: str = "", fmt: str = "{:.3f}") -> bytes:
    """Annotated heatmap of ``values`` (shape ``[rows, cols]``).

    With ``center`` (a row vector), colours show ``values - center`` on a diverging map (blue =
    lower than the reference row) while the cells print the raw values.
    """
    values = np.asarray(values, dtype=float)
    fig = _figure(max(6.0, 0.95 * len(cols) + 2.5), 0.5 * len(rows) + 1.8)
    ax = fig.subplots()
    if center is not None:
        shade = values - np.asarray(center, dtype=float)[None, :]
        lim = float(np.nanmax(np.abs(shade))) or 1.0
        im = ax.imshow(shade, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
        dark = np.abs(shade) > 0.6 * lim
    else:
        im = ax.imshow(values, cmap="viridis_r", aspect="auto")
        lo, hi = np.nanmin(values), np.nanmax(values)
        dark = (values - lo) > 0.6 * ((hi - lo) or 1.0)  # viridis_r is dark at the high end
    ax.set_xticks(np.arange(len(cols)), cols, rotation=30, ha="right")
    ax.set_yticks(np.arange(len(rows)), rows)
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isfinite(values[i, j]):
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", fontsize=8,
                        color="white" if dark[i, j] else "black")
    fig.colorbar(im, ax=ax, label=cbar_label, shrink=0.9)
    ax.set_title(title)
    return _png(fig)


def spread_figure(names: Sequence[str], avg: Sequence[Sequence[float]], worst: Sequence[Sequence[float]],
                  *, highlight: str | None = None) -> bytes:
    """Average and worst-domain loss per mixture: every seed as a dot, the mean as a bar, min-max whiskers."""
    fig = _figure(max(7.0, 1.3 * len(names) + 3), 3.8)
    axes = fig.subplots(1, 2)
    for ax, data, title in ((axes[0], avg, "average evaluation loss"),
                            (axes[1], worst, "worst-domain evaluation loss")):
        means = [float(np.mean(v)) for v in data]
        lo = [m - min(v) for m, v in zip(means, data, strict=True)]
        hi = [max(v) - m for m, v in zip(means, data, strict=True)]
        cols = [color(3) if n == highlight else color(0) for n in names]
        x = np.arange(len(names))
        ax.bar(x, means, color=cols, alpha=0.55)
        ax.errorbar(x, means, yerr=[lo, hi], fmt="none", ecolor="black", capsize=4)
        for xi, v in zip(x, data, strict=True):
            ax.scatter(np.full(len(v), xi), v, color="black", s=10, zorder=3)
        span = max(max(v) for v in data) - min(min(v) for v in data)
        ax.set_ylim(min(min(v) for v in data) - 0.6 * span - 1e-3, max(max(v) for v in data) + 0.4 * span + 1e-3)
        ax.set_xticks(x, names, rotation=20, ha="right")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def curves_figure(curves: Mapping[str, Sequence[Sequence[tuple[float, float]]]], *, title: str,
                  ylabel: str = "loss", zoom: bool = False) -> bytes:
    """One line per name (mean over its runs, on the steps they share) with a min-max band.

    ``zoom`` adds a right panel with the last half of the steps on its own y range, where curves
    that overlap at full scale separate.
    """
    fig = _figure(12 if zoom else 9, 4)
    axes = fig.subplots(1, 2 if zoom else 1, squeeze=False)[0]
    lines = []
    for i, (name, runs) in enumerate(curves.items()):
        runs = [r for r in runs if r]
        if not runs:
            continue
        common = sorted(set.intersection(*[{s for s, _ in r} for r in runs]))
        if not common:
            common, runs = sorted({s for s, _ in runs[0]}), runs[:1]
        mats = np.array([[dict(r)[s] for s in common] for r in runs])
        lines.append((name, i, np.array(common), mats))
    for k, ax in enumerate(axes):
        for name, i, steps, mats in lines:
            keep = steps >= (steps.min() + steps.max()) / 2 if k == 1 else np.ones(len(steps), dtype=bool)
            ax.plot(steps[keep], mats.mean(axis=0)[keep], color=color(i),
                    label=f"{name} ({len(mats)} run{'s' * (len(mats) > 1)})")
            if len(mats) > 1:
                ax.fill_between(steps[keep], mats.min(axis=0)[keep], mats.max(axis=0)[keep], color=color(i), alpha=0.2)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.set_title(title if k == 0 else "last half (zoomed)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    return _png(fig)


def trajectory_figure(steps: Sequence[float], weights: Mapping[str, Sequence[float]], *, title: str) -> bytes:
    """Domain weights over steps (DoReMi's Group-DRO weights), stacked to show the simplex."""
    fig = _figure(9, 3.8)
    ax = fig.subplots()
    names = list(weights)
    ax.stackplot(steps, *[weights[n] for n in names], labels=names, colors=[color(i) for i in range(len(names))],
                 alpha=0.85)
    ax.set_xlim(min(steps), max(steps))
    ax.set_ylim(0, 1)
    ax.set_xlabel("step")
    ax.set_ylabel("domain weight")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _png(fig)


def domain_funnel_figure(stages: Sequence[str], domains: Sequence[str], entering: np.ndarray) -> bytes:
    """Per domain, the percentage of its input documents still present at each stage."""
    fig = _figure(9, 3.8)
    ax = fig.subplots()
    entering = np.asarray(entering, dtype=float)
    first = np.where(entering[0] > 0, entering[0], 1.0)
    x = np.arange(len(stages))
    for j, d in enumerate(domains):
        ax.plot(x, 100.0 * entering[:, j] / first[j], marker="o", color=color(j), label=d)
    ax.set_xticks(x, stages, rotation=20, ha="right")
    ax.set_ylabel("% of the domain's documents")
    ax.set_title("documents remaining per domain")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _png(fig)
