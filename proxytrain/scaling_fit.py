"""Scaling-law fits on small training runs: L(N, D), the compute-optimal frontier and the lr law.

Library module behind ``corpusmix scale fit|predict`` (:mod:`proxytrain.scale_cli`)::

    from proxytrain.scaling_fit import FitConfig, fit_scaling, predict
    fit = fit_scaling(runs, FitConfig())     # runs: dicts with N, D, lr, loss, status
    predict(fit, flops=1e15)                 # recommended N, D, lr and the loss with an interval

The loss law is the parametric form of Hoffmann et al. 2022 ("Training Compute-Optimal Large
Language Models", approach 3)::

    L(N, D) = E + A / N**alpha + B / D**beta

fitted as they did: Huber loss (delta 1e-3) between the log of the predicted and observed loss,
with the prediction written as a log-sum-exp, log L = LSE(a - alpha log N, b - beta log D, e)
(A = exp a, B = exp b, E = exp e), minimised with L-BFGS from a grid of starts. The grid is their
grid (alpha, beta in 0..2, e in -1..1, a, b in 0..25); every grid point is scored and L-BFGS starts
from the ``starts`` best ones (through Huber deltas 1e-1, 1e-2, then 1e-3: see ``_fit_theta``). Tolerances are tight because an early stop of the optimiser is what
made the published fit hard to reproduce (Besiroglu et al. 2024, "Chinchilla Scaling: A replication
attempt"). N is the non-embedding parameter count, D the training tokens, compute C = 6 N D.

Minimising L(N, C / 6N) over N gives the frontier in closed form:
N* = G (C/6)^(beta/(alpha+beta)), D* = (C/6)^(alpha/(alpha+beta)) / G, G = (alpha A / (beta B))^(1/(alpha+beta)).

Uncertainty: ``bootstrap`` refits on runs resampled with replacement; constants get percentile
intervals, and a predicted loss gets a prediction interval from the bootstrap fits times a resampled
log-residual of the full fit (parameter uncertainty plus the run-to-run scatter the law cannot explain).

The best learning rate is a power law lr* = c N^k (times D^m when lr sweeps ran at several token
counts) fitted by least squares in log-log to the optimum of each lr sweep (the vertex of a parabola
in log lr through the swept points when it is convex and inside the swept range, else the best swept lr).

``design_checks`` scores a design on its own runs before any held-out run: every size left out in turn
and predicted from a fit on the others (the largest size is an extrapolation in N), and the largest
token count left out (an extrapolation in D).

A second form (``FitConfig.form = "kaplan"``) is the law of Kaplan et al. 2020 ("Scaling Laws for Neural
Language Models", eq. 1.5 / 4.1) plus an irreducible loss E::

    L(N, D) = E + [ (N_c / N)**(alpha_N / alpha_D) + D_c / D ]**alpha_D

In it the size effect depends on D (at small D the data term dominates and N barely matters; at large
D N binds), which the additive Hoffmann form cannot represent. It is fitted the same way: Huber on the
log-loss, log L = LSE(e, alpha_D * LSE(r (log N_c - log N), log D_c - log D)) with r = alpha_N / alpha_D,
L-BFGS from the best points of a start grid, delta continuation. E makes it 5 free parameters like
Hoffmann's, and E -> 0 (the grid's e = -5 row) is Kaplan's original 4-parameter form. Its
compute-optimal frontier is found numerically (a bounded 1-D search in log N with D = C / 6N).
A third form (``FitConfig.form = "per_d"``) is a law in N alone at each swept token count ("fixed D")::

    L(N | D) = E_D + A_D / N**alpha_D        (one fit per swept D with >= 3 usable sizes)

It makes no assumption on how the size effect changes with D (the measured one grows with D, which the
joint forms average over), and it makes no claim outside the swept token counts: ``predict`` at an
unswept D is an error, and the frontier for a budget C is discrete, over the swept D only (N = C / 6D
in each slice, the lowest predicted loss wins). Each slice is fitted by least squares on the log-loss
(3-5 points carry no outlier for Huber to down-weight), L-BFGS-B from 2 starts (E ~ 0, and the best
linear least-squares fit in (E, A) over a grid of alpha), E_D in (0, the slice's lowest loss), alpha_D > 0.
Its interval is empirical: the largest |error| of the slice's leave-one-size-out folds, widened in
proportion to how far (in log N) the prediction lies outside the swept sizes relative to the extrapolating
fold's own step (a bootstrap over 4-5 sizes with 3 free parameters is degenerate).

``form = "auto"`` runs the design checks for every form and fits the one with the lower RMS left-out
error (``compare_forms``); per_d is scored on the leave-one-size-out folds only (it has no leave-largest-D
fold: it does not predict across D), so its score covers less than the joint forms' scores do.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

N_FREE = 5  # E, A, B, alpha, beta (Kaplan form: E, N_c, D_c, alpha_N, alpha_D)
FORMS = ("hoffmann", "kaplan", "per_d")
LAW_TEXT = {"per_d": "L(N|D) = E_D + A_D/N^alpha_D at each swept D (fixed-D law; no extrapolation in D)",
            "hoffmann": "L(N,D) = E + A/N^alpha + B/D^beta (Hoffmann et al. 2022, approach 3)",
            "kaplan": "L(N,D) = E + [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D (Kaplan et al. 2020, eq. 1.5)"}
# an exponent this small makes its term a constant that trades off against E: the law says nothing
MIN_EXPONENT = 0.01


class FitError(ValueError):
    """The runs cannot support a fit (too few, one size, an absurd result); the message says why."""


class FitWarning(UserWarning):
    """The fit ran but is weakly supported (few sizes, dropped runs, optimum at a sweep's edge)."""


@dataclass
class FitConfig:
    """``corpusmix scale fit`` (``params.yaml``: ``scale.fit``)."""

    huber_delta: float = field(default=1e-3, metadata={"help": "Huber delta on log-loss residuals (paper: 1e-3)"})
    starts: int = field(default=16, metadata={"help": "L-BFGS runs from the best-scoring grid points"})
    bootstrap: int = field(default=100, metadata={"help": "bootstrap refits for the intervals (0 = off)"})
    boot_starts: int = field(default=0, metadata={"help": "grid starts per bootstrap refit besides the "
                                                                 "full fit's solution"})
    confidence: float = field(default=0.9, metadata={"help": "two-sided interval level"})
    min_runs: int = field(default=8, metadata={"help": "fewest usable (N, D) points accepted for 5 free parameters"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed"})
    target: str = field(default="all", metadata={"help": "validation loss fitted: all (every domain's tokens) "
                                                          "or a domain name"})
    min_tokens: int = field(default=0, metadata={"help": "fit only runs with D >= this (runs still on the early "
                                                         "loss plateau follow no power law; counted as dropped)"})
    params_count: str = field(default="", metadata={"help": "N fitted: empty = the sweep's count, or total / "
                                                      "non_embedding (runs record both counts)"})
    form: str = field(default="hoffmann", metadata={"help": "law form: hoffmann (E + A/N^a + B/D^b), kaplan "
                                                    "(E + [(N_c/N)^(aN/aD) + D_c/D]^aD), or auto (the one with "
                                                    "the lower design-check error), per_d (E_D + A_D/N^a_D "
                                                    "at each swept D; no D extrapolation)"})

    def validate(self) -> None:
        if not 0 < self.confidence < 1:
            raise FitError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.min_runs < N_FREE + 1:
            raise FitError(f"min_runs must be >= {N_FREE + 1} (the law has {N_FREE} free parameters)")
        if self.huber_delta <= 0 or self.starts < 1:
            raise FitError("huber_delta must be > 0 and starts >= 1")
        if self.form not in (*FORMS, "auto"):
            raise FitError(f"form must be hoffmann, kaplan, per_d or auto, got {self.form!r}")
        if self.params_count not in ("", "total", "non_embedding"):
            raise FitError(f"params_count must be empty, total or non_embedding, got {self.params_count!r}")


# ----------------------------------------------------------------------------- input checks

def usable_points(runs: list[dict[str, Any]], min_tokens: int = 0) -> tuple[np.ndarray, dict[str, int]]:
    """``[[N, D, loss], ...]`` (the best lr per (N, D)) and the count of dropped runs by reason."""
    drops: Counter[str] = Counter()
    best: dict[tuple[int, int], float] = {}
    for r in runs:
        loss = r.get("loss")
        if int(r.get("D", 0)) < min_tokens:
            drops["below_min_tokens"] += 1  # by design (scale.fit.min_tokens), not a bad run
        elif r.get("status", "ok") != "ok":
            drops[str(r.get("status"))] += 1
        elif loss is None or not math.isfinite(float(loss)):
            drops["non_finite_loss"] += 1
        elif float(loss) <= 0 or int(r["N"]) <= 0 or int(r["D"]) <= 0:
            drops["non_positive_value"] += 1
        else:
            key = (int(r["N"]), int(r["D"]))
            if key in best:
                drops["worse_lr_same_point"] += 1  # not lost: the best lr of each (N, D) is the point
            best[key] = min(best.get(key, math.inf), float(loss))
    pts = np.array([[n, d, loss] for (n, d), loss in sorted(best.items())], dtype=np.float64).reshape(-1, 3)
    return pts, dict(drops)


def check_points(pts: np.ndarray, drops: dict[str, int], cfg: FitConfig) -> list[str]:
    """Raise FitError when the law is not identifiable; return warnings for weak support."""
    notes = []
    bad = {k: v for k, v in drops.items() if k not in ("worse_lr_same_point", "below_min_tokens")}
    if bad:
        notes.append(f"dropped runs: {bad} (diverged or failed runs are not fitted; see their logs)")
    n_sizes, n_tokens = len(set(pts[:, 0])), len(set(pts[:, 1]))
    if n_sizes < 2:
        raise FitError("all runs have one model size: A and alpha are not identifiable; sweep at least 2 sizes "
                       "(3+ recommended) in scale.sweep.sizes")
    if n_tokens < 2:
        raise FitError("all runs have one token count: B and beta are not identifiable; sweep at least 2 token "
                       "counts in scale.sweep.tokens")
    if len(pts) < cfg.min_runs:
        raise FitError(f"{len(pts)} usable (N, D) points for a law with {N_FREE} free parameters; need at least "
                       f"{cfg.min_runs}: add model sizes or token counts to scale.sweep (dropped: {bad or 'none'})")
    if n_sizes < 3 or n_tokens < 3:
        notes.append(f"only {n_sizes} model sizes and {n_tokens} token counts: exponents are weakly constrained")
    return notes


# ----------------------------------------------------------------------------- the Huber / LSE objective

def _huber(r: np.ndarray, delta: float) -> tuple[float, np.ndarray]:
    """Huber loss of the log residuals and its derivative, scaled by 1/delta^2 so the objective is O(1) and
    L-BFGS's tolerances mean something."""
    small = np.abs(r) <= delta
    f = np.where(small, 0.5 * r * r, delta * (np.abs(r) - 0.5 * delta)).sum() / delta ** 2
    return float(f), np.where(small, r, delta * np.sign(r)) / delta ** 2


def _objective(theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
               delta: float) -> tuple[float, np.ndarray]:
    """Hoffmann form: theta = (a, b, e, alpha, beta), log L = LSE(a - alpha log N, b - beta log D, e)."""
    a, b, e, alpha, beta = theta
    terms = np.stack([a - alpha * logn, b - beta * logd, np.full_like(logn, e)])
    m = terms.max(axis=0)
    ex = np.exp(terms - m)
    s = ex.sum(axis=0)
    w = ex / s  # d LSE / d term
    f, g_r = _huber(m + np.log(s) - logl, delta)
    grad = np.array([(g_r * w[0]).sum(), (g_r * w[1]).sum(), (g_r * w[2]).sum(),
                     -(g_r * w[0] * logn).sum(), -(g_r * w[1] * logd).sum()])
    return f, grad


def _objective_kaplan(theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
                      delta: float) -> tuple[float, np.ndarray]:
    """Kaplan form: theta = (log N_c, log D_c, r, alpha_D, e) with r = alpha_N / alpha_D,
    log L = LSE(e, alpha_D u), u = LSE(r (log N_c - log N), log D_c - log D) (the log of the bracket)."""
    lnc, ldc, r, ad, e = theta
    x1 = lnc - logn
    t1, t2 = r * x1, ldc - logd
    u = np.logaddexp(t1, t2)
    w1 = np.exp(t1 - u)  # share of the N term in the bracket
    w2 = 1.0 - w1
    p = ad * u
    pred = np.logaddexp(p, e)
    v1 = np.exp(p - pred)  # share of the power term in L (1 - v1: share of E)
    f, g_r = _huber(pred - logl, delta)
    gp = g_r * v1
    grad = np.array([(gp * ad * w1 * r).sum(), (gp * ad * w2).sum(), (gp * ad * w1 * x1).sum(), (gp * u).sum(),
                     (g_r * (1.0 - v1)).sum()])
    return f, grad


def _grid() -> np.ndarray:
    """Hoffmann et al.'s initialisation grid: a, b in 0..25, e in -1..1, alpha, beta in 0..2."""
    ab = np.arange(0.0, 26.0, 5.0)
    return np.array(list(itertools.product(ab, ab, np.arange(-1.0, 1.01, 0.5), np.arange(0.0, 2.01, 0.5),
                                           np.arange(0.0, 2.01, 0.5))))


def _grid_kaplan() -> np.ndarray:
    """Kaplan-form starts: log N_c in 0..30, log D_c in 0..40 (by 5), r = alpha_N/alpha_D in 0.25..4,
    alpha_D in 0.05..1, e in {-5 (E ~ 0: Kaplan's original form), -1..1.5}: 9,450 points."""
    return np.array(list(itertools.product(np.arange(0.0, 31.0, 5.0), np.arange(0.0, 41.0, 5.0),
                                           (0.25, 0.5, 1.0, 2.0, 4.0), (0.05, 0.1, 0.2, 0.5, 1.0),
                                           (-5.0, -1.0, 0.0, 0.5, 1.0, 1.5))))


_GRID = _grid()
_GRID_K = _grid_kaplan()
# L-BFGS-B bounds of the Kaplan form: exponents >= 0 (a negative one is refused after the fit anyway), and
# finite ranges so exp() of a constant never overflows
_BOUNDS_K = [(-50.0, 300.0), (-50.0, 300.0), (0.0, 50.0), (0.0, 10.0), (-30.0, 10.0)]


def _log_pred(form: str, th: np.ndarray, logn: np.ndarray, logd: np.ndarray) -> np.ndarray:
    """log L for parameter rows ``th`` (shape (k, 5), or (5,)) at the points (broadcast)."""
    th = np.atleast_2d(th)
    c = [th[:, i:i + 1] for i in range(5)]
    if form == "hoffmann":
        a, b, e, al, be = c
        return np.logaddexp(np.logaddexp(a - al * logn, b - be * logd), e)
    lnc, ldc, r, ad, e = c
    return np.logaddexp(ad * np.logaddexp(r * (lnc - logn), ldc - logd), e)


def _grid_scores(logn: np.ndarray, logd: np.ndarray, logl: np.ndarray, delta: float,
                 form: str = "hoffmann") -> np.ndarray:
    grid = _GRID if form == "hoffmann" else _GRID_K
    r = np.abs(_log_pred(form, grid, logn, logd) - logl)
    return np.where(r <= delta, 0.5 * r * r, delta * (r - 0.5 * delta)).sum(axis=1)


def _fit_theta(pts: np.ndarray, delta: float, starts: int, extra: np.ndarray | None = None,
               form: str = "hoffmann") -> tuple[np.ndarray, float]:
    logn, logd, logl = np.log(pts[:, 0]), np.log(pts[:, 1]), np.log(pts[:, 2])
    grid, obj, bounds = (_GRID, _objective, None) if form == "hoffmann" else (_GRID_K, _objective_kaplan, _BOUNDS_K)
    order = np.argsort(_grid_scores(logn, logd, logl, delta, form), kind="stable")[:starts]
    # continuation: with delta 1e-3 almost every residual of a far start sits in Huber's linear (L1) part,
    # where L-BFGS stalls on the kinks; the smoother deltas bring it near the basin first. A warm start
    # (``extra``: the full fit's solution, for a bootstrap refit) is already there.
    schedule = [x for x in (1e-1, 1e-2) if x > delta] + [delta]
    runs = [(x0, schedule) for x0 in grid[order]] + ([] if extra is None else [(extra, [delta])])
    best, best_f = None, math.inf
    with _one_blas_thread():
        best, best_f = _lbfgs_runs(obj, runs, bounds, (logn, logd, logl))
    if best is None:
        raise FitError("L-BFGS found no finite fit from any start: check that the losses are positive and finite")
    return best, best_f


def _one_blas_thread() -> Any:
    """L-BFGS-B's small dense steps call BLAS; a multi-threaded BLAS on a loaded machine spins in them
    (measured: 13 ms per L-BFGS-B iteration on the shared 2 cores, vs < 1 ms with one thread)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own thread count
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _lbfgs_runs(obj: Any, runs: list[tuple[np.ndarray, list[float]]], bounds: Any,
                data: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray | None, float]:
    from scipy.optimize import minimize

    best, best_f = None, math.inf
    for x0, deltas in runs:
        x = x0
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            for dl in deltas:
                res = minimize(obj, x, args=(*data, dl), jac=True, method="L-BFGS-B", bounds=bounds,
                               options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-10})
                x = res.x
        if np.all(np.isfinite(res.x)) and res.fun < best_f:
            best, best_f = res.x, float(res.fun)
    return best, best_f


def _constants(theta: np.ndarray, form: str = "hoffmann") -> dict[str, float]:
    if form == "kaplan":
        lnc, ldc, r, ad, e = (float(x) for x in theta)
        return {"E": math.exp(e), "N_c": math.exp(lnc), "D_c": math.exp(ldc), "alpha_N": r * ad, "alpha_D": ad}
    a, b, e, alpha, beta = (float(x) for x in theta)
    return {"E": math.exp(e), "A": math.exp(a), "B": math.exp(b), "alpha": alpha, "beta": beta}


def form_of(c: dict[str, Any]) -> str:
    """``kaplan``, ``hoffmann`` or ``per_d``, from the names of the constants."""
    return "per_d" if "slices" in c else "kaplan" if "N_c" in c else "hoffmann"


def exponents(c: dict[str, float]) -> dict[str, float]:
    """The N and D exponents of a fit, by their names in its form (per_d: alpha at each fitted D)."""
    if "slices" in c:
        return {f"alpha_{k}": s["alpha"] for k, s in c["slices"].items()}
    return {"alpha_N": c["alpha_N"], "alpha_D": c["alpha_D"]} if "N_c" in c else \
        {"alpha": c["alpha"], "beta": c["beta"]}


def law(c: dict[str, float], n: Any, d: Any) -> Any:
    """L(N, D) for constants ``c`` (any form; per_d: a FitError at a D that is not a fitted slice)."""
    if "slices" in c:
        return _law_per_d(c, n, d)
    if "N_c" in c:
        n, d = np.asarray(n, dtype=np.float64), np.asarray(d, dtype=np.float64)
        r = c["alpha_N"] / c["alpha_D"]
        bracket = np.exp(np.logaddexp(r * (math.log(c["N_c"]) - np.log(n)), math.log(c["D_c"]) - np.log(d)))
        return c["E"] + np.power(bracket, c["alpha_D"])
    return c["E"] + c["A"] / np.power(n, c["alpha"]) + c["B"] / np.power(d, c["beta"])


def frontier(c: dict[str, float], flops: Any) -> tuple[Any, Any]:
    """Compute-optimal (N*, D*) for a budget C = 6 N D: closed form for the Hoffmann form, a bounded 1-D
    search in log N (D = C / 6N) for the Kaplan form (its L is unimodal in log N at fixed C), and the
    discrete frontier over the fitted token counts for the per_d form."""
    if "slices" in c:
        return _frontier_per_d(c, flops)
    if "N_c" in c:
        return _frontier_numeric(c, flops)
    al, be = c["alpha"], c["beta"]
    g = (al * c["A"] / (be * c["B"])) ** (1.0 / (al + be))
    x = np.asarray(flops, dtype=np.float64) / 6.0
    return g * x ** (be / (al + be)), x ** (al / (al + be)) / g


def _frontier_numeric(c: dict[str, float], flops: Any) -> tuple[Any, Any]:
    from scipy.optimize import minimize_scalar

    cs = np.asarray(flops, dtype=np.float64)
    n_opt = np.empty(cs.shape)
    for i, cc in np.ndenumerate(cs):
        hi = math.log(cc / 6.0)  # N <= C/6, i.e. D >= 1 token
        xs = np.linspace(0.0, hi, 65)  # coarse scan, then Brent inside the bracket around the best point
        ls = law(c, np.exp(xs), cc / (6.0 * np.exp(xs)))
        j = int(np.argmin(ls))
        lo_x, hi_x = xs[max(j - 1, 0)], xs[min(j + 1, len(xs) - 1)]
        res = minimize_scalar(lambda x, cc=cc: float(law(c, math.exp(x), cc / (6.0 * math.exp(x)))),
                              bounds=(lo_x, hi_x), method="bounded", options={"xatol": 1e-10})
        n_opt[i] = math.exp(res.x)
    if cs.ndim == 0:
        n0 = float(n_opt)
        return n0, float(cs) / (6.0 * n0)
    return n_opt, cs / (6.0 * n_opt)


# ----------------------------------------------------------------------------- the lr law

def lr_optima(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Best lr of every (N, D) that was swept over >= 3 learning rates (finite, ok runs only)."""
    groups: dict[tuple[int, int], dict[float, float]] = {}
    for r in runs:
        if r.get("status", "ok") == "ok" and r.get("loss") is not None and math.isfinite(float(r["loss"])):
            groups.setdefault((int(r["N"]), int(r["D"])), {})[float(r["lr"])] = float(r["loss"])
    out = []
    for (n, d), by_lr in sorted(groups.items()):
        if len(by_lr) < 3:
            continue
        lrs = np.array(sorted(by_lr))
        losses = np.array([by_lr[x] for x in lrs])
        x = np.log(lrs)
        i = int(np.argmin(losses))
        opt, how = float(lrs[i]), "best swept"
        c2, c1, _ = np.polyfit(x, losses, 2)
        if c2 > 0 and x[0] <= -c1 / (2 * c2) <= x[-1]:
            opt, how = float(math.exp(-c1 / (2 * c2))), "parabola vertex"
        out.append({"N": n, "D": d, "lr": opt, "how": how, "edge": i in (0, len(lrs) - 1),
                    "swept": [float(v) for v in lrs], "losses": [float(v) for v in losses]})
    return out


def fit_lr_law(optima: list[dict[str, Any]]) -> dict[str, Any] | None:
    """lr* = c N^k (D^m) by least squares in log-log over the lr-sweep optima (None below 2 sizes).

    With optima at one token count (or too few to separate N from D) m is 0 and each size's optimum is the
    mean over its token counts; with lr sweeps at >= 2 token counts, each for >= 2 sizes, log lr is
    regressed on log N and log D together (the best lr falls with the horizon as well as with width)."""
    per_n: dict[int, list[float]] = {}
    for o in optima:
        per_n.setdefault(o["N"], []).append(math.log(o["lr"]))
    if len(per_n) < 2:
        return None
    edge = sum(o["edge"] for o in optima)
    per_d = Counter(int(o["D"]) for o in optima)
    if sum(v >= 2 for v in per_d.values()) >= 2 and len(optima) >= 4:
        x = np.array([[1.0, math.log(o["N"]), math.log(o["D"])] for o in optima])
        y = np.array([math.log(o["lr"]) for o in optima])
        (logc, k, m), *_ = np.linalg.lstsq(x, y, rcond=None)
        resid = y - x @ np.array([logc, k, m])
        return {"c": float(math.exp(logc)), "k": float(k), "m": float(m), "sizes": len(per_n),
                "token_counts": len(per_d), "log_resid_std": float(resid.std(ddof=0)), "at_sweep_edge": edge}
    ns = np.array(sorted(per_n), dtype=np.float64)
    y = np.array([np.mean(per_n[int(n)]) for n in ns])
    k, logc = np.polyfit(np.log(ns), y, 1)
    resid = y - (logc + k * np.log(ns))
    return {"c": float(math.exp(logc)), "k": float(k), "m": 0.0, "sizes": len(ns), "token_counts": len(per_d),
            "log_resid_std": float(resid.std(ddof=0)), "at_sweep_edge": edge}


def lr_for(lr_law: dict[str, Any] | None, n: float, d: float | None = None) -> float | None:
    """The lr law at N (and D, when the law has a token exponent m)."""
    if lr_law is None:
        return None
    m = float(lr_law.get("m") or 0.0)
    return float(lr_law["c"] * n ** lr_law["k"] * (d ** m if m and d else 1.0))


# ----------------------------------------------------------------------------- fit + bootstrap + predict

def _lr_law_noted(runs: list[dict[str, Any]], notes: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The lr optima and lr law of a sweep (every law form uses the same), with their warnings added to ``notes``."""
    optima = lr_optima(runs)
    lr_law = fit_lr_law(optima)
    if lr_law is None:
        notes.append("no lr law: fewer than 2 model sizes have an lr sweep of >= 3 learning rates")
    elif lr_law["at_sweep_edge"]:
        notes.append(f"{lr_law['at_sweep_edge']} size(s) had their best lr at the edge of the sweep: widen it")
    return optima, lr_law


def fit_scaling(runs: list[dict[str, Any]], cfg: FitConfig | None = None) -> dict[str, Any]:
    """Fit L(N, D), bootstrap it, and fit the lr law; the JSON-able result ``predict`` reads."""
    cfg = cfg or FitConfig()
    cfg.validate()
    selection = None
    if cfg.form == "auto":
        selection = compare_forms(runs, cfg)
    form = selection["chosen"] if selection else cfg.form
    runs = _renumber(_retarget(runs, cfg.target), cfg.params_count)
    if form == "per_d":
        return _fit_per_d(runs, cfg, selection)
    pts, drops = usable_points(runs, cfg.min_tokens)
    notes = check_points(pts, drops, cfg)
    theta, obj = _fit_theta(pts, cfg.huber_delta, cfg.starts, form=form)
    const = _constants(theta, form)
    ex = exponents(const)
    if min(ex.values()) < MIN_EXPONENT:
        raise FitError(f"the fitted exponents are not positive ({_fmt(ex)}): loss does not fall with model size "
                       "or tokens in these runs; check for undertrained or diverged runs and widen the size/token "
                       "range")
    _check_kaplan_terms(const, pts)
    if max(ex.values()) > 3:
        notes.append(f"steep exponents ({_fmt(ex, '.2f')}): the law may not extrapolate; add sizes/token counts")
    pred = law(const, pts[:, 0], pts[:, 1])
    resid = np.log(pts[:, 2]) - np.log(pred)
    if const["E"] > pts[:, 2].min():
        notes.append(f"fitted E={const['E']:.3f} is above the lowest observed loss {pts[:, 2].min():.3f}")
    boot, skipped = _bootstrap(pts, cfg, theta, form)
    if skipped:
        notes.append(f"{skipped} bootstrap resamples skipped (one size/token count, or a non-positive exponent)")
    optima, lr_law = _lr_law_noted(runs, notes)
    for n in notes:
        warnings.warn(n, FitWarning, stacklevel=2)
    q = (1 - cfg.confidence) / 2
    intervals = {}
    if len(boot):
        for k in const:
            vals = np.array([b[k] for b in boot])
            intervals[k] = [float(np.quantile(vals, q)), float(np.quantile(vals, 1 - q))]
    out = {
        "law": LAW_TEXT[form], "form": form,
        "constants": const, "intervals": intervals, "config": asdict(cfg),
        "objective": obj, "points": [[int(n), int(d), float(loss)] for n, d, loss in pts],
        "log_residuals": [float(r) for r in resid], "rmse_log": float(np.sqrt(np.mean(resid ** 2))),
        "bootstrap": boot, "drops": drops, "lr_optima": optima, "lr_law": lr_law, "notes": notes,
        "N_range": [int(pts[:, 0].min()), int(pts[:, 0].max())],
        "D_range": [int(pts[:, 1].min()), int(pts[:, 1].max())],
        "C_max": float((6 * pts[:, 0] * pts[:, 1]).max()),
        "batch_sizes": sorted({int(r["batch_size"]) for r in runs if r.get("batch_size")}),
        "seq_len": sorted({int(r["seq_len"]) for r in runs if r.get("seq_len")}),
    }
    if selection:
        out["form_selection"] = selection
    return out


def _check_kaplan_terms(c: dict[str, float], pts: np.ndarray) -> None:
    """A Kaplan fit whose N (or D) term is negligible at every run has a positive exponent on a dead term:
    loss does not fall with size (tokens) in it; refuse it like a non-positive exponent."""
    if "N_c" not in c:
        return
    r = c["alpha_N"] / c["alpha_D"]
    t_n = r * (math.log(c["N_c"]) - np.log(pts[:, 0]))
    t_d = math.log(c["D_c"]) - np.log(pts[:, 1])
    share_n = np.exp(t_n - np.logaddexp(t_n, t_d))
    for name, share, what in (("N", share_n, "model size"), ("D", 1.0 - share_n, "tokens")):
        if share.max() < 0.01:
            raise FitError(f"the fitted {name} term is < 1 % of the bracket at every run (max {share.max():.2g}): "
                           f"loss does not fall with {what} in these runs; check for undertrained or diverged runs "
                           "and widen the size/token range")


def _fmt(ex: dict[str, float], spec: str = ".3g") -> str:
    return ", ".join(f"{k}={v:{spec}}" for k, v in ex.items())


def _retarget(runs: list[dict[str, Any]], target: str) -> list[dict[str, Any]]:
    """Score every run by ``val[target]`` (one domain's loss) instead of its sweep target."""
    if target in ("", "all"):
        return runs
    have = sorted({k for r in runs for k in (r.get("val") or {})})
    if target not in have:
        raise FitError(f"no run has a validation loss for {target!r}; scale.fit.target must be all or one of {have}")
    return [{**r, "loss": (r.get("val") or {}).get(target)} for r in runs]


def _renumber(runs: list[dict[str, Any]], params: str) -> list[dict[str, Any]]:
    """Use ``N_total`` or ``N_non_embedding`` as N (``params``); empty keeps each run's N."""
    if not params:
        return runs
    key = f"N_{params}"
    missing = sum(key not in r for r in runs)
    if missing:
        raise FitError(f"{missing} of {len(runs)} runs have no {key}: they come from a sweep that recorded one "
                       "count only; re-run `corpusmix scale sweep` (cached runs are read back, not retrained) "
                       "or leave scale.fit.params_count empty")
    return [{**r, "N": r[key]} for r in runs]


def _bootstrap(pts: np.ndarray, cfg: FitConfig, theta: np.ndarray, form: str = "hoffmann"
               ) -> tuple[list[dict[str, float]], int]:
    """Refits on resampled points, each from the full fit's solution plus the best grid starts."""
    rng = np.random.default_rng(cfg.seed)
    out, skipped = [], 0
    for _ in range(cfg.bootstrap):
        sample = pts[rng.integers(0, len(pts), len(pts))]
        if len(set(sample[:, 0])) < 2 or len(set(sample[:, 1])) < 2:
            skipped += 1
            continue
        c = _constants(_fit_theta(sample, cfg.huber_delta, cfg.boot_starts, extra=theta, form=form)[0], form)
        if min(exponents(c).values()) < MIN_EXPONENT:
            skipped += 1
            continue
        out.append(c)
    return out, skipped


def predict(fit: dict[str, Any], *, flops: float | None = None, n: float | None = None,
            d: float | None = None, seed: int = 0) -> dict[str, Any]:
    """Loss with a prediction interval at (N, D), or at the compute-optimal (N*, D*) for ``flops``."""
    if fit.get("form") == "per_d":
        return _predict_per_d(fit, flops, n, d)
    c = fit["constants"]
    if flops is not None:
        if flops <= 0:
            raise FitError(f"--flops must be > 0, got {flops}")
        n_opt, d_opt = frontier(c, flops)
        n, d = float(n_opt), float(d_opt)
    elif n is None or d is None or n <= 0 or d <= 0:
        raise FitError("give --flops C, or both --params N and --tokens D (positive)")
    point = float(law(c, n, d))
    q = (1 - fit["config"]["confidence"]) / 2
    out: dict[str, Any] = {"N": n, "D": d, "flops": 6.0 * n * d, "loss": point, "lr": lr_for(fit.get("lr_law"), n, d)}
    batches = fit.get("batch_sizes") or []
    if len(batches) == 1:  # batch size is not swept: recommend the one the law was measured at
        out["batch_size"], out["seq_len"] = batches[0], (fit.get("seq_len") or [None])[0]
    boot = fit.get("bootstrap") or []
    if boot:
        rng = np.random.default_rng(seed)
        resid = np.asarray(fit["log_residuals"])
        with np.errstate(over="ignore"):  # a resample's extreme exponent overflows to inf: an open-ended tail
            preds = np.array([law(b, n, d) for b in boot])
        draws = preds[rng.integers(0, len(preds), 4000)] * np.exp(resid[rng.integers(0, len(resid), 4000)])
        out["interval"] = [float(np.quantile(draws, q)), float(np.quantile(draws, 1 - q))]
        out["interval_params_only"] = [float(np.quantile(preds, q)), float(np.quantile(preds, 1 - q))]
        out["confidence"] = fit["config"]["confidence"]
    extrap = out["flops"] / fit["C_max"]
    out["extrapolation_x"] = extrap  # how far past the largest fitted run's compute
    if extrap > 100:
        out["warning"] = f"{extrap:.0f}x the largest fitted run's compute: treat the interval as optimistic"
    return out


def design_checks(runs: list[dict[str, Any]], cfg: FitConfig | None = None) -> dict[str, Any]:
    """Leave-one-size-out and leave-largest-D-out prediction errors on the fit's own runs (no bootstrap).

    Each check refits (in ``cfg.form``; ``auto`` is not a form here: see ``compare_forms``) without the
    left-out points and predicts them; the result lists the signed errors in % (predicted - observed) /
    observed, or the FitError a fold raised (too few points left), and ``score``: the RMS of every left-out
    point's error over all folds (None when a fold could not be fitted)."""
    cfg = FitConfig(**{**asdict(cfg or FitConfig()), "bootstrap": 0})
    cfg.validate()
    if cfg.form == "auto":
        raise FitError("design_checks needs one form (hoffmann, kaplan or per_d); compare_forms checks them all")
    runs = _renumber(_retarget(runs, cfg.target), cfg.params_count)
    pts, _ = usable_points(runs, cfg.min_tokens)
    if len(pts) == 0:
        raise FitError("no usable runs to check")

    def fold(keep: np.ndarray, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {"left_out": name}
        train = [{"N": n, "D": d, "lr": 0.0, "loss": loss, "status": "ok"} for n, d, loss in pts[keep]]
        if cfg.form == "per_d":  # the slices only (no interval folds inside a fold, no lr law)
            slices, skipped, _ = _per_d_slices(pts[keep])
            c: dict[str, Any] = {"slices": slices, "skipped": skipped}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitWarning)
                if cfg.form != "per_d":
                    c = fit_scaling(train, FitConfig(**{**asdict(cfg), "min_tokens": 0, "params_count": "",
                                                        "target": "all"}))["constants"]
        except FitError as exc:
            return {**out, "error": str(exc)}
        test = pts[~keep]
        if "slices" in c:  # per_d: a point at a token count the fold could not fit is listed, not scored
            hit = np.array([any(abs(d - float(k)) <= D_MATCH * float(k) for k in c["slices"]) for d in test[:, 1]])
            if not hit.any():
                return {**out, "error": f"per_d: no left-out point lies on a slice this fold fitted ({c['skipped']})"}
            out["unscored"] = [[int(n), int(d)] for n, d, _ in test[~hit]]
            test = test[hit]
        err = 100 * (law(c, test[:, 0], test[:, 1]) - test[:, 2]) / test[:, 2]
        return {**out, "points": [[int(n), int(d)] for n, d, _ in test],
                "signed_error_pct": [round(float(e), 2) for e in err],
                "max_abs_error_pct": round(float(np.abs(err).max()), 2), "constants": c}

    sizes = sorted(set(pts[:, 0]))
    by_size = [fold(pts[:, 0] != n, f"N={int(n)}") for n in sizes]
    d_max = pts[:, 1].max()
    if cfg.form == "per_d":  # it makes no claim across D: no such fold (the score covers the size folds only)
        largest_d = {"left_out": f"D={int(d_max)}", "skipped": PER_D_SCOPE}
    else:
        largest_d = fold(pts[:, 1] != d_max, f"D={int(d_max)}")
    ok = [f["max_abs_error_pct"] for f in by_size if "error" not in f]
    folds = [*by_size] if cfg.form == "per_d" else [*by_size, largest_d]
    errs = [e for f in folds for e in f.get("signed_error_pct", [])]
    score = None if any("error" in f for f in folds) else round(float(np.sqrt(np.mean(np.square(errs)))), 3)
    return {"form": cfg.form, "leave_one_size_out": by_size, "leave_largest_size_out": by_size[-1],
            "leave_largest_d_out": largest_d, "max_abs_error_pct_sizes": max(ok) if ok else None,
            "max_abs_error_pct": round(max(abs(e) for e in errs), 2) if errs else None, "score": score}


SCORE_TEXT = ("RMS of the signed % errors of every left-out point over all folds (each size left out in turn, "
              "and the largest token count left out); lower wins, a form with a fold it could not fit loses")


def compare_forms(runs: list[dict[str, Any]], cfg: FitConfig | None = None) -> dict[str, Any]:
    """Design checks of every law form on the same runs and the form ``auto`` picks (lower ``score``; per_d's
    score has no leave-largest-D fold: ``PER_D_SCOPE``)."""
    cfg = cfg or FitConfig()
    checks = {f: design_checks(runs, FitConfig(**{**asdict(cfg), "form": f})) for f in FORMS}
    scores = {f: (math.inf if c["score"] is None else c["score"]) for f, c in checks.items()}
    if all(math.isinf(v) for v in scores.values()):
        raise FitError("form auto: no design-check fold could be fitted for any form (each fold needs >= 3 "
                       "sizes and 3 token counts left); choose scale.fit.form hoffmann, kaplan or per_d")
    chosen = min(FORMS, key=lambda f: (scores[f], FORMS.index(f)))  # a tie keeps hoffmann, then kaplan
    return {"chosen": chosen, "score": SCORE_TEXT, "scores": {f: checks[f]["score"] for f in FORMS},
            "per_d_scope": PER_D_SCOPE, "checks": checks}


# ----------------------------------------------------------------------------- the per_d (fixed-D) form

D_MATCH = 0.01  # a D within 1 % of a swept token count is that slice
PER_D_SCOPE = ("per_d predicts only at the swept token counts (no extrapolation in D); its design-check score "
               "is the leave-one-size-out folds only, while the joint forms' scores also include a "
               "leave-largest-D-out fold")
PER_D_INTERVAL = ("empirical: +-(largest |error| of the slice's leave-one-size-out folds), widened by the distance "
                  "in log N outside the swept sizes over the extrapolating fold's own log-N step; not a "
                  "calibrated confidence level (a bootstrap over 4-5 sizes with 3 free parameters is degenerate)")


def _fit_slice(nl: np.ndarray) -> dict[str, float]:
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
    with _one_blas_thread(), np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for x0 in starts:
            res = minimize(obj, x0, jac=True, method="L-BFGS-B",
                           bounds=[(-50.0, 300.0), (-30.0, e_hi), (1e-6, 10.0)],
                           options={"maxiter": 1000, "ftol": 1e-15, "gtol": 1e-12})
            if np.all(np.isfinite(res.x)) and res.fun < best_f:
                best, best_f = res.x, float(res.fun)
    if best is None:
        raise FitError("per_d: L-BFGS found no finite fit of a slice: check that the losses are positive and finite")
    return {"E": math.exp(best[1]), "A": math.exp(best[0]), "alpha": float(best[2])}


def _slice_law(s: dict[str, float], n: Any) -> Any:
    return s["E"] + s["A"] / np.power(n, s["alpha"])


def _slice_key(c: dict[str, Any], d: float) -> str:
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


def _law_per_d(c: dict[str, Any], n: Any, d: Any) -> Any:
    nb, db = np.broadcast_arrays(np.asarray(n, dtype=np.float64), np.asarray(d, dtype=np.float64))
    out = np.empty(nb.shape)
    for i in np.ndindex(nb.shape):
        out[i] = _slice_law(c["slices"][_slice_key(c, float(db[i]))], float(nb[i]))
    return float(out) if out.ndim == 0 else out


def _frontier_per_d(c: dict[str, Any], flops: Any) -> tuple[Any, Any]:
    """The discrete frontier: at each swept D, N = C / 6D; the slice with the lowest predicted loss wins."""
    cs = np.asarray(flops, dtype=np.float64)
    ds = np.array(sorted(float(k) for k in c["slices"]))
    n_opt, d_opt = np.empty(cs.shape), np.empty(cs.shape)
    for i, cc in np.ndenumerate(cs):
        ls = [_slice_law(c["slices"][_slice_key(c, d)], cc / (6.0 * d)) for d in ds]
        j = int(np.argmin(ls))
        n_opt[i], d_opt[i] = cc / (6.0 * ds[j]), ds[j]
    if cs.ndim == 0:
        return float(n_opt), float(d_opt)
    return n_opt, d_opt


def _per_d_slices(pts: np.ndarray) -> tuple[dict[str, dict[str, float]], dict[str, str], list[str]]:
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
        s = _fit_slice(nl)
        if s["alpha"] < MIN_EXPONENT:
            flat.append(f"D={int(d)}: alpha_D={s['alpha']:.3g}")
        slices[str(int(d))] = s
    return slices, skipped, flat


def _slice_loso(nl: np.ndarray) -> dict[str, Any]:
    """Each size of a slice left out and predicted from the others (>= 4 sizes; 3 points fit 3 parameters)."""
    if len(nl) < 4:
        return {"signed_error_pct": [], "half_width_pct": None}
    errs = []
    for i in range(len(nl)):
        s = _fit_slice(np.delete(nl, i, axis=0))
        errs.append(100 * (float(_slice_law(s, nl[i, 0])) - nl[i, 1]) / nl[i, 1])
    ns = np.log(nl[:, 0])
    return {"sizes": [int(x) for x in nl[:, 0]], "signed_error_pct": [round(e, 3) for e in errs],
            "half_width_pct": round(max(abs(e) for e in errs), 3),
            "log_n_step_lo": float(ns[1] - ns[0]), "log_n_step_hi": float(ns[-1] - ns[-2])}


def _fit_per_d(runs: list[dict[str, Any]], cfg: FitConfig, selection: dict[str, Any] | None) -> dict[str, Any]:
    pts, drops = usable_points(runs, cfg.min_tokens)
    if len(pts) == 0:
        raise FitError(f"no usable runs (dropped: {drops or 'none'})")
    notes = []
    bad = {k: v for k, v in drops.items() if k not in ("worse_lr_same_point", "below_min_tokens")}
    if bad:
        notes.append(f"dropped runs: {bad} (diverged or failed runs are not fitted; see their logs)")
    slices, skipped, flat = _per_d_slices(pts)
    if flat:
        notes.append(f"per_d: loss is almost flat in N at {', '.join(flat)} (E_D and A_D trade off there; the "
                     "predictions stay flat in N)")
    if not slices:
        raise FitError(f"per_d: no token count could be fitted ({skipped}); sweep at least 3 sizes (4+ for an "
                       "interval) at each token count in scale.sweep, with loss falling with size")
    if skipped:
        notes.append(f"per_d: token counts not fitted: {skipped}")
    c = {"slices": slices, "skipped": skipped}
    checks = {k: _slice_loso(pts[pts[:, 1] == float(k)][:, [0, 2]]) for k in slices}
    for k, ch in checks.items():
        if ch["half_width_pct"] is None:
            notes.append(f"per_d: D={k} has 3 sizes: no leave-one-size-out fold, so no interval there")
    fitted = pts[np.isin(pts[:, 1], [float(k) for k in slices])]
    resid = np.log(fitted[:, 2]) - np.log(_law_per_d(c, fitted[:, 0], fitted[:, 1]))
    optima, lr_law = _lr_law_noted(runs, notes)
    for n in notes:
        warnings.warn(n, FitWarning, stacklevel=3)
    out = {"law": LAW_TEXT["per_d"], "form": "per_d", "constants": c, "intervals": {}, "config": asdict(cfg),
           "objective": float(resid @ resid), "points": [[int(n), int(d), float(loss)] for n, d, loss in fitted],
           "log_residuals": [float(r) for r in resid], "rmse_log": float(np.sqrt(np.mean(resid ** 2))),
           "bootstrap": [], "drops": drops, "lr_optima": optima, "lr_law": lr_law, "notes": notes,
           "slice_checks": checks, "interval_method": PER_D_INTERVAL, "scope": PER_D_SCOPE,
           "N_range": [int(fitted[:, 0].min()), int(fitted[:, 0].max())],
           "D_range": [int(fitted[:, 1].min()), int(fitted[:, 1].max())],
           "C_max": float((6 * fitted[:, 0] * fitted[:, 1]).max()),
           "batch_sizes": sorted({int(r["batch_size"]) for r in runs if r.get("batch_size")}),
           "seq_len": sorted({int(r["seq_len"]) for r in runs if r.get("seq_len")})}
    if selection:
        out["form_selection"] = selection
    return out


def _per_d_interval(fit: dict[str, Any], key: str, n: float, point: float) -> list[float] | None:
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


def _predict_per_d(fit: dict[str, Any], flops: float | None, n: float | None, d: float | None) -> dict[str, Any]:
    c = fit["constants"]
    out: dict[str, Any] = {}
    if flops is not None:
        if flops <= 0:
            raise FitError(f"--flops must be > 0, got {flops}")
        cands = [{"D": int(k), "N": flops / (6.0 * float(k)), "loss": float(_slice_law(s, flops / (6.0 * float(k))))}
                 for k, s in sorted(c["slices"].items(), key=lambda kv: float(kv[0]))]
        best = min(cands, key=lambda x: x["loss"])
        n, d = best["N"], float(best["D"])
        out["frontier"] = cands
        out["frontier_note"] = ("discrete frontier over the swept token counts only: N = C / 6D at each fitted D, "
                                "the lowest predicted loss wins; a D between or beyond them is not considered")
    elif n is None or d is None or n <= 0 or d <= 0:
        raise FitError("give --flops C, or both --params N and --tokens D (positive)")
    key = _slice_key(c, d)
    point = float(_slice_law(c["slices"][key], n))
    out = {"N": float(n), "D": float(d), "flops": 6.0 * n * d, "loss": point, "lr": lr_for(fit.get("lr_law"), n, d),
           "slice_D": int(key), **out}
    batches = fit.get("batch_sizes") or []
    if len(batches) == 1:
        out["batch_size"], out["seq_len"] = batches[0], (fit.get("seq_len") or [None])[0]
    iv = _per_d_interval(fit, key, float(n), point)
    if iv is not None:
        out["interval"], out["interval_method"] = iv, PER_D_INTERVAL
    extrap = out["flops"] / fit["C_max"]
    out["extrapolation_x"] = extrap
    if extrap > 100:
        out["warning"] = f"{extrap:.0f}x the largest fitted run's compute: treat the interval as optimistic"
    return out
