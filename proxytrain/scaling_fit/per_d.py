"""The per_d (fixed-D) form: a law in N alone at each swept token count, L(N | D) = E_D + A_D / N**alpha_D.

It makes no assumption on how the size effect changes with D and no claim outside the swept token counts:
``predict`` at an unswept D is a FitError and the frontier for a budget is discrete, over the swept D only.
Each slice (>= 3 usable sizes) is fitted by least squares on the log-loss; the interval is empirical, from
the slice's leave-one-size-out folds. Why this form and how it measured: docs/scaling.md."""

from __future__ import annotations

import math
import warnings
from dataclasses import asdict
from typing import Any

import numpy as np

from proxytrain.scaling_fit.config import MIN_EXPONENT, FitConfig, FitError, FitWarning
from proxytrain.scaling_fit.lr_law import lr_for, lr_law_noted
from proxytrain.scaling_fit.optimise import one_blas_thread
from proxytrain.scaling_fit.points import scope, usable_points

TEXT = "L(N|D) = E_D + A_D/N^alpha_D at each swept D (fixed-D law; no extrapolation in D)"
D_MATCH = 0.01  # a D within 1 % of a swept token count is that slice
PER_D_SCOPE = ("per_d predicts only at the swept token counts (no extrapolation in D); its design-check score "
               "is the leave-one-size-out folds only, while the joint forms' scores also include a "
               "leave-largest-D-out fold")
PER_D_INTERVAL = ("empirical: +-(largest |error| of the slice's leave-one-size-out folds), widened by the distance "
                  "in log N outside the swept sizes over the extrapolating fold's own log-N step; not a "
                  "calibrated confidence level (a bootstrap over 4-5 sizes with 3 free parameters is degenerate)")


def fit_slice(nl: np.ndarray) -> dict[str, float]:
    """E + A / N^alpha on one slice's ``[[N, loss], ...]``: least squares on log L = LSE(a - alpha log N, e),
    E in (0, the slice's lowest loss), alpha in (0, 10]. Starts: for each alpha of a 60-point grid the linear
    least squares in (E, A), the best by the log objective, and E ~ 0 (a line in log-log); L-BFGS-B from both."""
    from scipy.optimize import minimize

    logn, logl = np.log(nl[:, 0]), np.log(nl[:, 1])
    e_hi = float(logl.min()) - 1e-9

    def obj(t: np.ndarray) -> tuple[float, np.ndarray]:
        u = t[0] - t[2] * logn
        pred = np.logaddexp(u, t[1])
        r = pred - logl
        w = np.exp(u - pred)
        return float(r @ r), np.array([2 * (r * w).sum(), 2 * (r * (1 - w)).sum(), -2 * (r * w * logn).sum()])

    slope, icept = np.polyfit(logn, logl, 1)
    starts = [np.array([icept, -30.0, min(max(-slope, 1e-3), 10.0)])]  # E ~ 0: a power law in N
    best_g, x_g = math.inf, None
    for al in np.geomspace(0.01, 3.0, 60):
        x = np.exp(-al * logn)
        (e, a), *_ = np.linalg.lstsq(np.stack([np.ones_like(x), x], axis=1), nl[:, 1], rcond=None)
        if a <= 0 or not 0 < e < math.exp(e_hi):
            continue
        f = obj(np.array([math.log(a), math.log(e), al]))[0]
        if f < best_g:
            best_g, x_g = f, np.array([math.log(a), math.log(e), al])
    if x_g is not None:
        starts.append(x_g)
    best, best_f = None, math.inf
    with one_blas_thread(), np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for x0 in starts:
            res = minimize(obj, x0, jac=True, method="L-BFGS-B",
                           bounds=[(-50.0, 300.0), (-30.0, e_hi), (1e-6, 10.0)],
                           options={"maxiter": 1000, "ftol": 1e-15, "gtol": 1e-12})
            if np.all(np.isfinite(res.x)) and res.fun < best_f:
                best, best_f = res.x, float(res.fun)
    if best is None:
        raise FitError("per_d: L-BFGS found no finite fit of a slice: check that the losses are positive and finite")
    return {"E": math.exp(best[1]), "A": math.exp(best[0]), "alpha": float(best[2])}


def slice_law(s: dict[str, float], n: Any) -> Any:
    return s["E"] + s["A"] / np.power(n, s["alpha"])


def slice_key(c: dict[str, Any], d: float) -> str:
    """The fitted slice a token count D falls on (within 1 %), or a FitError naming the swept counts."""
    for k in c["slices"]:
        if abs(float(d) - float(k)) <= D_MATCH * float(k):
            return k
    swept = sorted(int(k) for k in c["slices"])
    skipped = c.get("skipped") or {}
    why = f" (D={int(round(d))} was swept but not fitted: {skipped[str(int(round(d)))]})" \
        if str(int(round(d))) in skipped else ""
    raise FitError(f"per_d law: D={d:.6g} tokens is not a fitted token count (fitted: {swept}){why}; the fixed-D "
                   "law does not extrapolate in D: add this D to scale.sweep.tokens and re-run the sweep, or use "
                   "scale.fit.form kaplan or hoffmann")


def per_d_law(c: dict[str, Any], n: Any, d: Any) -> Any:
    nb, db = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(d, dtype=np.float64))
    out = np.empty(nb.shape)
    for i in np.ndindex(nb.shape):
        out[i] = slice_law(c["slices"][slice_key(c, float(db[i]))], float(nb[i]))
    return float(out) if out.ndim == 0 else out


def discrete_frontier(c: dict[str, Any], flops: Any) -> tuple[Any, Any]:
    """The discrete frontier: at each swept D, N = C / 6D; the slice with the lowest predicted loss wins."""
    cs = np.asarray(flops, dtype=np.float64)
    ds = np.array(sorted(float(k) for k in c["slices"]))
    n_opt, d_opt = np.empty(cs.shape), np.empty(cs.shape)
    for i, cc in np.ndenumerate(cs):
        ls = [slice_law(c["slices"][slice_key(c, d)], cc / (6.0 * d)) for d in ds]
        j = int(np.argmin(ls))
        n_opt[i], d_opt[i] = cc / (6.0 * ds[j]), ds[j]
    if cs.ndim == 0:
        return float(n_opt), float(d_opt)
    return n_opt, d_opt


def fit_slices(pts: np.ndarray) -> tuple[dict[str, dict[str, float]], dict[str, str], list[str]]:
    slices: dict[str, dict[str, float]] = {}
    skipped: dict[str, str] = {}
    flat: list[str] = []
    for d in sorted(set(pts[:, 1])):
        nl = pts[pts[:, 1] == d][:, [0, 2]]
        if len(nl) < 3:
            skipped[str(int(d))] = f"{len(nl)} usable size(s); E_D, A_D, alpha_D need >= 3"
            continue
        if np.polyfit(np.log(nl[:, 0]), np.log(nl[:, 1]), 1)[0] > 0:  # loss rises with size across the slice
            skipped[str(int(d))] = ("loss rises with model size (log-log slope > 0): check for undertrained or "
                                    "diverged runs, or raise scale.fit.min_tokens past this D")
            continue
        s = fit_slice(nl)
        if s["alpha"] < MIN_EXPONENT:
            flat.append(f"D={int(d)}: alpha_D={s['alpha']:.3g}")
        slices[str(int(d))] = s
    return slices, skipped, flat


def slice_loso(nl: np.ndarray) -> dict[str, Any]:
    """Each size of a slice left out and predicted from the others (>= 4 sizes; 3 points fit 3 parameters)."""
    if len(nl) < 4:
        return {"signed_error_pct": [], "half_width_pct": None}
    errs = []
    for i in range(len(nl)):
        s = fit_slice(np.delete(nl, i, axis=0))
        errs.append(100 * (float(slice_law(s, nl[i, 0])) - nl[i, 1]) / nl[i, 1])
    ns = np.log(nl[:, 0])
    return {"sizes": [int(x) for x in nl[:, 0]], "signed_error_pct": [round(e, 3) for e in errs],
            "half_width_pct": round(max(abs(e) for e in errs), 3),
            "log_n_step_lo": float(ns[1] - ns[0]), "log_n_step_hi": float(ns[-1] - ns[-2])}


def interval(fit: dict[str, Any], key: str, n: float, point: float) -> list[float] | None:
    ch = fit.get("slice_checks", {}).get(key) or {}
    if ch.get("half_width_pct") is None:
        return None
    m = ch["half_width_pct"] / 100
    lo_n, hi_n = min(ch["sizes"]), max(ch["sizes"])
    if n > hi_n:
        m *= max(1.0, math.log(n / hi_n) / ch["log_n_step_hi"])
    elif n < lo_n:
        m *= max(1.0, math.log(lo_n / n) / ch["log_n_step_lo"])
    return [float(point / (1 + m)), float(point / (1 - m)) if m < 1 else math.inf]


class PerD:
    """The per_d form behind the same interface as the joint forms (name, text, law, frontier, exponents, fit,
    predict)."""

    name = "per_d"
    text = TEXT

    def law(self, c: dict[str, Any], n: Any, d: Any) -> Any:
        """L(N, D) at a fitted slice (FitError at a D that is not one)."""
        return per_d_law(c, n, d)

    def frontier(self, c: dict[str, Any], flops: Any) -> tuple[Any, Any]:
        return discrete_frontier(c, flops)

    def exponents(self, c: dict[str, Any]) -> dict[str, float]:
        """alpha at each fitted D."""
        return {f"alpha_{k}": s["alpha"] for k, s in c["slices"].items()}

    def fit(self, runs: list[dict[str, Any]], cfg: FitConfig, selection: dict[str, Any] | None) -> dict[str, Any]:
        pts, drops = usable_points(runs, cfg.min_tokens)
        if len(pts) == 0:
            raise FitError(f"no usable runs (dropped: {drops or 'none'})")
        notes = []
        bad = {k: v for k, v in drops.items() if k not in ("worse_lr_same_point", "below_min_tokens")}
        if bad:
            notes.append(f"dropped runs: {bad} (diverged or failed runs are not fitted; see their logs)")
        slices, skipped, flat = fit_slices(pts)
        if flat:
            notes.append(f"per_d: loss is almost flat in N at {', '.join(flat)} (E_D and A_D trade off there; the "
                         "predictions stay flat in N)")
        if not slices:
            raise FitError(f"per_d: no token count could be fitted ({skipped}); sweep at least 3 sizes (4+ for an "
                           "interval) at each token count in scale.sweep, with loss falling with size")
        if skipped:
            notes.append(f"per_d: token counts not fitted: {skipped}")
        c = {"slices": slices, "skipped": skipped}
        checks = {k: slice_loso(pts[pts[:, 1] == float(k)][:, [0, 2]]) for k in slices}
        for k, ch in checks.items():
            if ch["half_width_pct"] is None:
                notes.append(f"per_d: D={k} has 3 sizes: no leave-one-size-out fold, so no interval there")
        fitted = pts[np.isin(pts[:, 1], [float(k) for k in slices])]
        resid = np.log(fitted[:, 2]) - np.log(per_d_law(c, fitted[:, 0], fitted[:, 1]))
        optima, lr_law = lr_law_noted(runs, notes)
        for n in notes:
            warnings.warn(n, FitWarning, stacklevel=3)
        out = {"law": TEXT, "form": "per_d", "constants": c, "intervals": {}, "config": asdict(cfg),
               "objective": float(resid @ resid), "points": [[int(n), int(d), float(loss)] for n, d, loss in fitted],
               "log_residuals": [float(r) for r in resid], "rmse_log": float(np.sqrt(np.mean(resid ** 2))),
               "bootstrap": [], "drops": drops, "lr_optima": optima, "lr_law": lr_law, "notes": notes,
               "slice_checks": checks, "interval_method": PER_D_INTERVAL, "scope": PER_D_SCOPE,
               **scope(fitted, runs)}
        if selection:
            out["form_selection"] = selection
        return out

    def predict(self, fit: dict[str, Any], flops: float | None, n: float | None, d: float | None,
                seed: int = 0) -> dict[str, Any]:
        c = fit["constants"]
        out: dict[str, Any] = {}
        if flops is not None:
            if flops <= 0:
                raise FitError(f"--flops must be > 0, got {flops}")
            cands = [{"D": int(k), "N": flops / (6.0 * float(k)), "loss": float(slice_law(s, flops / (6.0 * float(k))))}
                     for k, s in sorted(c["slices"].items(), key=lambda kv: float(kv[0]))]
            best = min(cands, key=lambda x: x["loss"])
            n, d = best["N"], float(best["D"])
            out["frontier"] = cands
            out["frontier_note"] = ("discrete frontier over the swept token counts only: N = C / 6D at each fitted D, "
                                    "the lowest predicted loss wins; a D between or beyond them is not considered")
        elif n is None or d is None or n <= 0 or d <= 0:
            raise FitError("give --flops C, or both --params N and --tokens D (positive)")
        key = slice_key(c, d)
        point = float(slice_law(c["slices"][key], n))
        out = {"N": float(n), "D": float(d), "flops": 6.0 * n * d, "loss": point, "lr": lr_for(fit.get("lr_law"), n, d),
               "slice_D": int(key), **out}
        batches = fit.get("batch_sizes") or []
        if len(batches) == 1:
            out["batch_size"], out["seq_len"] = batches[0], (fit.get("seq_len") or [None])[0]
        iv = interval(fit, key, float(n), point)
        if iv is not None:
            out["interval"], out["interval_method"] = iv, PER_D_INTERVAL
        extrap = out["flops"] / fit["C_max"]
        out["extrapolation_x"] = extrap
        if extrap > 100:
            out["warning"] = f"{extrap:.0f}x the largest fitted run's compute: treat the interval as optimistic"
        return out


PER_D = PerD()
