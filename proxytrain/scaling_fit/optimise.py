"""The fitting machinery the joint L(N, D) forms share: Huber loss on the log residuals, the start grid's
scores, L-BFGS-B from the best starts through a delta continuation, and the bootstrap refits.

Why the continuation and one BLAS thread: docs/scaling.md ("How the joint forms are fitted")."""

from __future__ import annotations

import contextlib
import math
from typing import Any, Protocol

import numpy as np

from proxytrain.scaling_fit.config import MIN_EXPONENT, FitConfig, FitError


class JointLaw(Protocol):
    """What the machinery needs of a joint form: its start grid, bounds, objective and constants."""

    grid: np.ndarray
    bounds: list[tuple[float, float]] | None
    box: list[tuple[float, float]]

    def objective(self, theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
                  delta: float) -> tuple[float, np.ndarray]: ...

    def log_pred(self, th: np.ndarray, logn: np.ndarray, logd: np.ndarray) -> np.ndarray: ...

    def constants(self, theta: np.ndarray) -> dict[str, float]: ...

    def exponents(self, c: dict[str, Any]) -> dict[str, float]: ...


def huber(r: np.ndarray, delta: float) -> tuple[float, np.ndarray]:
    """Huber loss of the log residuals and its derivative, scaled by 1/delta^2 so the objective is O(1) and
    L-BFGS's tolerances mean something."""
    small = np.abs(r) <= delta
    f = np.where(small, 0.5 * r * r, delta * (np.abs(r) - 0.5 * delta)).sum() / delta ** 2
    return float(f), np.where(small, r, delta * np.sign(r)) / delta ** 2


def grid_scores(logn: np.ndarray, logd: np.ndarray, logl: np.ndarray, delta: float, form: JointLaw) -> np.ndarray:
    """The Huber objective of every start-grid point of ``form`` (unscaled)."""
    r = np.abs(form.log_pred(form.grid, logn, logd) - logl)
    return np.where(r <= delta, 0.5 * r * r, delta * (r - 0.5 * delta)).sum(axis=1)


def global_start(form: JointLaw, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray, delta: float,
                 seed: int = 0) -> np.ndarray:
    """The best point of a seeded differential evolution (Storn & Price 1997, scipy's implementation) over
    the form's whole box ``form.box``, on the Huber objective at ``max(delta, 1e-2)``: a search of the whole
    parameter space, so a basin no grid point is near still gets a start (deterministic for a seed)."""
    from scipy.optimize import differential_evolution

    dl = max(delta, 1e-2)

    def f(x: np.ndarray) -> np.ndarray:  # x: (5, S), the population's columns (vectorized=True)
        with np.errstate(over="ignore", invalid="ignore"):
            r = np.abs(form.log_pred(x.T, logn, logd) - logl)
            v = np.where(r <= dl, 0.5 * r * r, dl * (r - 0.5 * dl)).sum(axis=1)
        return np.where(np.isfinite(v), v, 1e30)

    res = differential_evolution(f, form.box, seed=seed, vectorized=True, updating="deferred", polish=False,
                                 maxiter=1000, popsize=20, tol=1e-10, init="sobol")
    return np.asarray(res.x)


def fit_theta(pts: np.ndarray, delta: float, starts: int, extra: np.ndarray | None = None, *,
              form: JointLaw, global_search: bool = True, seed: int = 0) -> tuple[np.ndarray, float]:
    """The best L-BFGS-B optimum of ``form`` on ``[[N, D, loss], ...]`` from the ``starts`` best grid points,
    the global search's best point (``global_search``) and ``extra`` (a warm start), and its objective."""
    logn, logd, logl = np.log(pts[:, 0]), np.log(pts[:, 1]), np.log(pts[:, 2])
    grid, obj, bounds = form.grid, form.objective, form.bounds
    order = np.argsort(grid_scores(logn, logd, logl, delta, form), kind="stable")[:starts]
    # continuation: with delta 1e-3 almost every residual of a far start sits in Huber's linear (L1) part,
    # where L-BFGS stalls on the kinks; the smoother deltas bring it near the basin first. A warm start
    # (``extra``) is already there.
    schedule = [x for x in (1e-1, 1e-2) if x > delta] + [delta]
    runs = [(x0, schedule) for x0 in grid[order]] + ([] if extra is None else [(extra, [delta])])
    if global_search:
        with one_blas_thread():
            runs.append((global_start(form, logn, logd, logl, delta, seed), [x for x in schedule if x <= 1e-2]))
    best, best_f = None, math.inf
    with one_blas_thread():
        best, best_f = lbfgs_runs(obj, runs, bounds, (logn, logd, logl))
    if best is None:
        raise FitError("L-BFGS found no finite fit from any start: check that the losses are positive and finite")
    return best, best_f


def one_blas_thread() -> Any:
    """One BLAS thread while it is held: L-BFGS-B's small dense steps call BLAS, and a multi-threaded BLAS
    on a loaded machine spins in them (docs/scaling.md)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own thread count
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def lbfgs_runs(obj: Any, runs: list[tuple[np.ndarray, list[float]]], bounds: Any,
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


def bootstrap(pts: np.ndarray, cfg: FitConfig, theta: np.ndarray, form: JointLaw
              ) -> tuple[list[dict[str, float]], int]:
    """Refits on resampled points, each searched like the full fit (the global search and the
    ``boot_starts`` best grid starts), not warm-started from the full fit's solution: a resample whose
    optimum lies in another basin finds it, so the intervals include the other basins."""
    rng = np.random.default_rng(cfg.seed)
    out, skipped = [], 0
    for _ in range(cfg.bootstrap):
        sample = pts[rng.integers(0, len(pts), len(pts))]
        if len(set(sample[:, 0])) < 2 or len(set(sample[:, 1])) < 2:
            skipped += 1
            continue
        try:
            c = form.constants(fit_theta(sample, cfg.huber_delta, cfg.boot_starts, form=form,
                                         global_search=cfg.global_search, seed=cfg.seed)[0])
        except OverflowError:  # a resample the form cannot pin: counted like a degenerate refit
            skipped += 1
            continue
        if min(form.exponents(c).values()) < MIN_EXPONENT:
            skipped += 1
            continue
        out.append(c)
    return out, skipped
