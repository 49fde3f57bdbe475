"""The Kaplan et al. 2020 form (eq. 1.5 / 4.1) plus an irreducible loss E:
L(N, D) = E + [(N_c / N)**(alpha_N / alpha_D) + D_c / D]**alpha_D.

The size effect depends on D in it (the additive Hoffmann form cannot represent that). Fitted on
log L = LSE(e, alpha_D * LSE(r (log N_c - log N), log D_c - log D)), r = alpha_N / alpha_D, with bounds; its
frontier is found numerically. E -> 0 (the grid's e = -5 row) is Kaplan's original 4-parameter form.
Measured behaviour: docs/scaling.md."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from proxytrain.scaling_fit.config import FitError
from proxytrain.scaling_fit.joint import JointForm, theta_columns
from proxytrain.scaling_fit.optimise import huber


def objective(theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
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
    f, g_r = huber(pred - logl, delta)
    gp = g_r * v1
    grad = np.array([(gp * ad * w1 * r).sum(), (gp * ad * w2).sum(), (gp * ad * w1 * x1).sum(), (gp * u).sum(),
                     (g_r * (1.0 - v1)).sum()])
    return f, grad


def start_grid() -> np.ndarray:
    """Kaplan-form starts: log N_c in 0..30, log D_c in 0..40 (by 5), r = alpha_N/alpha_D in 0.25..4,
    alpha_D in 0.05..1, e in {-5 (E ~ 0: Kaplan's original form), -1..1.5}: 9,450 points."""
    return np.array(list(itertools.product(np.arange(0.0, 31.0, 5.0), np.arange(0.0, 41.0, 5.0),
                                           (0.25, 0.5, 1.0, 2.0, 4.0), (0.05, 0.1, 0.2, 0.5, 1.0),
                                           (-5.0, -1.0, 0.0, 0.5, 1.0, 1.5))))


GRID = start_grid()
# L-BFGS-B bounds: exponents >= 0 (a negative one is refused after the fit anyway), and finite ranges so exp()
# of a constant never overflows
BOUNDS = [(-50.0, 300.0), (-50.0, 300.0), (0.0, 50.0), (0.0, 10.0), (-30.0, 10.0)]


class Kaplan(JointForm):
    """E + [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D; theta = (log N_c, log D_c, r, alpha_D, e)."""

    name = "kaplan"
    text = "L(N,D) = E + [(N_c/N)^(alpha_N/alpha_D) + D_c/D]^alpha_D (Kaplan et al. 2020, eq. 1.5)"
    grid = GRID
    bounds = BOUNDS
    # the global search's box: the grid's ranges widened (r, alpha_D up to where a law is still plausible)
    box = [(-10.0, 60.0), (-10.0, 60.0), (0.05, 8.0), (0.01, 2.0), (-10.0, 3.0)]
    objective = staticmethod(objective)

    def log_pred(self, th: np.ndarray, logn: np.ndarray, logd: np.ndarray) -> np.ndarray:
        lnc, ldc, r, ad, e = theta_columns(th)
        return np.logaddexp(ad * np.logaddexp(r * (lnc - logn), ldc - logd), e)

    def constants(self, theta: np.ndarray) -> dict[str, float]:
        lnc, ldc, r, ad, e = (float(x) for x in theta)
        return {"E": math.exp(e), "N_c": math.exp(lnc), "D_c": math.exp(ldc), "alpha_N": r * ad, "alpha_D": ad}

    def exponents(self, c: dict[str, Any]) -> dict[str, float]:
        return {"alpha_N": c["alpha_N"], "alpha_D": c["alpha_D"]}

    def law(self, c: dict[str, Any], n: Any, d: Any) -> Any:
        n, d = np.asarray(n, dtype=np.float64), np.asarray(d, dtype=np.float64)
        r = c["alpha_N"] / c["alpha_D"]
        bracket = np.exp(np.logaddexp(r * (math.log(c["N_c"]) - np.log(n)), math.log(c["D_c"]) - np.log(d)))
        return c["E"] + np.power(bracket, c["alpha_D"])

    def frontier(self, c: dict[str, Any], flops: Any) -> tuple[Any, Any]:
        """A bounded 1-D search in log N with D = C / 6N (L is unimodal in log N at fixed C): a coarse scan,
        then Brent inside the bracket around the best scan point."""
        from scipy.optimize import minimize_scalar

        cs = np.asarray(flops, dtype=np.float64)
        n_opt = np.empty(cs.shape)
        for i, cc in np.ndenumerate(cs):
            hi = math.log(cc / 6.0)  # N <= C/6, i.e. D >= 1 token
            xs = np.linspace(0.0, hi, 65)  # coarse scan, then Brent inside the bracket around the best point
            ls = self.law(c, np.exp(xs), cc / (6.0 * np.exp(xs)))
            j = int(np.argmin(ls))
            lo_x, hi_x = xs[max(j - 1, 0)], xs[min(j + 1, len(xs) - 1)]
            res = minimize_scalar(lambda x, cc=cc: float(self.law(c, math.exp(x), cc / (6.0 * math.exp(x)))),
                                  bounds=(lo_x, hi_x), method="bounded", options={"xatol": 1e-10})
            n_opt[i] = math.exp(res.x)
        if cs.ndim == 0:
            n0 = float(n_opt)
            return n0, float(cs) / (6.0 * n0)
        return n_opt, cs / (6.0 * n_opt)

    def check(self, c: dict[str, float], pts: np.ndarray) -> None:
        """A fit whose N (or D) term is negligible at every run has a positive exponent on a dead term: loss
        does not fall with size (tokens) in it; refuse it like a non-positive exponent."""
        r = c["alpha_N"] / c["alpha_D"]
        t_n = r * (math.log(c["N_c"]) - np.log(pts[:, 0]))
        t_d = math.log(c["D_c"]) - np.log(pts[:, 1])
        share_n = np.exp(t_n - np.logaddexp(t_n, t_d))
        for name, share, what in (("N", share_n, "model size"), ("D", 1.0 - share_n, "tokens")):
            if share.max() < 0.01:
                raise FitError(f"the fitted {name} term is < 1 % of the bracket at every run "
                               f"(max {share.max():.2g}): loss does not fall with {what} in these runs; check for "
                               "undertrained or diverged runs and widen the size/token range")


KAPLAN = Kaplan()
