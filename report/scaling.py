"""The report's scaling-law section: fitted constants with intervals, the lr law, the prediction for
the big run, and two figures (loss vs compute with the fitted law and the compute-optimal frontier;
log residuals of the fit).

Inputs are the JSON files of ``corpusmix scale fit`` (``fit.json``) and ``corpusmix scale predict``
(``prediction.json``), found by :mod:`report.inputs` through :func:`scaling_kind`; the section is
added by :func:`report.build.build_report` when any was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from report.render import Figure, Section, Table


def scaling_kind(obj: Mapping[str, Any]) -> str | None:
    """``fit`` / ``prediction`` for the files of ``corpusmix scale``, else None."""
    if isinstance(obj.get("constants"), Mapping) and str(obj.get("law", "")).startswith(("L(N,D)", "L(N|D)")):
        return "fit"
    if "extrapolation_x" in obj and "loss" in obj and "N" in obj:
        return "prediction"
    return None


def _loss_vs_compute(fit: Mapping[str, Any], preds: list[Mapping[str, Any]]) -> bytes:
    from proxytrain.scaling_fit.forms import frontier, law
    from report.figures import _figure, _png, color

    c = fit["constants"]
    pts = np.asarray(fit["points"], dtype=np.float64)
    fig = _figure(7.0, 4.2)
    ax = fig.add_subplot(1, 1, 1)
    for i, n in enumerate(sorted(set(pts[:, 0]))):
        sel = pts[pts[:, 0] == n]
        ax.scatter(6 * sel[:, 0] * sel[:, 1], sel[:, 2], color=color(i), s=18, label=f"N={int(n):,}")
        d = np.geomspace(sel[:, 1].min() / 2, sel[:, 1].max() * 4, 40)
        if "slices" in c:  # per_d: the law exists at the fitted token counts only
            d = np.array(sorted(float(k) for k in c["slices"]))
        ax.plot(6 * n * d, law(c, n, d), color=color(i), lw=0.8, alpha=0.6)
    cmax = max([6 * pts[:, 0].max() * pts[:, 1].max()] + [float(p["flops"]) for p in preds])
    cs = np.geomspace(6 * pts[:, 0].min() * pts[:, 1].min(), cmax * 2, 80)
    n_opt, d_opt = frontier(c, cs)
    ax.plot(cs, law(c, n_opt, d_opt), color="black", lw=1.5, ls="--", label="compute-optimal frontier")
    for p in preds:
        lo, hi = p.get("interval", [p["loss"], p["loss"]])
        ax.errorbar([p["flops"]], [p["loss"]], yerr=[[p["loss"] - lo], [hi - p["loss"]]], fmt="*", ms=11,
                    color="crimson", label="prediction")
    ax.set_xscale("log")
    ax.set_xlabel("compute C = 6ND (non-embedding FLOPs)")
    ax.set_ylabel("validation loss")
    ax.set_title("Loss vs compute: runs, fitted law, frontier")
    ax.legend(fontsize=7)
    return _png(fig)


def _residuals(fit: Mapping[str, Any]) -> bytes:
    from report.figures import _figure, _png

    pts = np.asarray(fit["points"], dtype=np.float64)
    fig = _figure(6.0, 3.0)
    ax = fig.add_subplot(1, 1, 1)
    ax.axhline(0, color="grey", lw=0.8)
    ax.scatter(6 * pts[:, 0] * pts[:, 1], 100 * np.asarray(fit["log_residuals"]), s=16)
    ax.set_xscale("log")
    ax.set_xlabel("compute C = 6ND")
    ax.set_ylabel("log residual (%)")
    ax.set_title("Fit residuals: log(observed / fitted)")
    return _png(fig)


def scaling_section(scaling: Mapping[str, Mapping[str, Any]]) -> Section | None:
    """The section for ``{label: fit.json or prediction.json}``; None when there is no fit."""
    fits = {k: v for k, v in scaling.items() if scaling_kind(v) == "fit"}
    preds = [v for v in scaling.values() if scaling_kind(v) == "prediction"]
    if not fits:
        return None
    label, fit = next(iter(fits.items()))
    sec = Section("scaling", "Scaling law: predicting the big run")
    lvl = int(round(100 * fit.get("config", {}).get("confidence", 0.9)))
    iv = fit.get("intervals", {})
    rows = [[k, v, *(iv.get(k) or ["", ""])] for k, v in fit["constants"].items()]
    if "slices" in fit["constants"]:  # per_d: E, A, alpha of each fitted token count
        rows = [[f"{k} (D={d})", v, "", ""] for d, s in fit["constants"]["slices"].items() for k, v in s.items()]
    sec.blocks.append(f"{fit['law']}, fitted on {len(fit['points'])} runs ({label}): N {fit['N_range'][0]:,}-"
                      f"{fit['N_range'][1]:,} non-embedding parameters, D {fit['D_range'][0]:,}-"
                      f"{fit['D_range'][1]:,} tokens; RMSE of log residuals {100 * fit['rmse_log']:.2f} %.")
    sel = fit.get("form_selection")
    sec.blocks.append(f"Law form: {fit.get('form', 'hoffmann')}" + (
        f" (chosen by auto: design-check RMS left-out error {sel['scores']})" if sel else "") + ".")
    sec.blocks.append(Table("Fitted constants", ["constant", "value", f"{lvl} % low", f"{lvl} % high"], rows,
                            note=f"bootstrap over runs ({len(fit.get('bootstrap') or [])} refits)"))
    if fit.get("lr_law"):
        law_ = fit["lr_law"]
        sec.blocks.append(Table("Best learning rate", ["law", "c", "k", "m", "sizes"],
                                [["lr* = c N^k D^m", law_["c"], law_["k"], law_.get("m", 0.0), law_["sizes"]]]))
    if preds:
        sec.blocks.append(Table("Prediction", ["N", "D", "C", "loss", f"{lvl} % interval", "lr", "batch"],
                                [[int(p["N"]), int(p["D"]), p["flops"], p["loss"],
                                  "-".join(f"{x:.3f}" for x in p.get("interval", [])), p.get("lr") or "",
                                  p.get("batch_size") or ""] for p in preds]))
        base = [p for p in preds if p.get("baselines")]
        if base:  # the rules the law must beat, at the same N and D
            sec.blocks.append(Table(
                "Prediction against the baselines", ["N", "D", "law", "naive (largest fitted run)",
                                                     "fixed exponent (C^-0.050)"],
                [[int(p["N"]), int(p["D"]), p["loss"], p["baselines"]["naive_largest_run"],
                  p["baselines"]["fixed_exponent"]] for p in base]))
        scoped = [p for p in preds if p.get("extrapolation")]
        if scoped:
            sec.blocks.append(Table(
                "Scope: past the largest fitted run", ["N x", "D x", "C x", "validated (N, D, C)",
                                                       "sweep / run compute", "warning"],
                [[p["extrapolation"]["N"], p["extrapolation"]["D"], p["extrapolation"]["C"],
                  ", ".join(f"{p['validated'][k]:g}x" for k in "NDC"),
                  (p.get("sweep_cost") or {}).get("sweep_over_target", ""),
                  p.get("scope_warning", "")] for p in scoped],
                alert=any(p.get("scope_warning") for p in scoped)))
    if fit.get("notes"):
        sec.blocks.append(Table("Fit warnings", ["note"], [[n] for n in fit["notes"]], alert=True))
    sec.blocks.append(Figure("scaling_loss_vs_compute", "Loss vs compute", _loss_vs_compute(fit, preds)))
    sec.blocks.append(Figure("scaling_residuals", "Residuals", _residuals(fit)))
    return sec
