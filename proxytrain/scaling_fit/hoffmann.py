"""The Hoffmann et al. 2022 form (approach 3): L(N, D) = E + A / N**alpha + B / D**beta.

Fitted on log L = LSE(a - alpha log N, b - beta log D, e) (A = exp a, B = exp b, E = exp e) from their start
grid; its compute-optimal frontier is closed-form. The method and its references: docs/scaling.md."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from proxytrain.scaling_fit.joint import JointForm, theta_columns
from proxytrain.scaling_fit.optimise import huber


def objective(theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
              delta: float) -> tuple[float, np.ndarray]:
    """Hoffmann form: theta = (a, b, e, alpha, beta), log L = LSE(a - alpha log N, b - beta log D, e)."""
    a, b, e, alpha, beta = theta
    terms = np.stack([a - alpha * logn, b - beta * logd, np.full_like(logn, e)])
    m = terms.max(axis=0)
    ex = np.exp(terms - m)
    s = ex.sum(axis=0)
    w = ex / s  # d LSE / d term
    f, g_r = huber(m + np.log(s) - logl, delta)
    grad = np.array([(g_r * w[0]).sum(), (g_r * w[1]).sum(), (g_r * w[2]).sum(),
                     -(g_r * w[0] * logn).sum(), -(g_r * w[1] * logd).sum()])
    return f, grad


def start_grid() -> np.ndarray:
    """Hoffmann et al.'s initialisation grid: a, b in 0..25, e in -1..1, alpha, beta in 0..2."""
    ab = np.arange(0.0, 26.0, 5.0)
    return np.array(list(itertools.product(ab, ab, np.arange(-1.0, 1.01, 0.5), np.arange(0.0, 2.01, 0.5),
                                           np.arange(0.0, 2.01, 0.5))))


GRID = start_grid()


class Hoffmann(JointForm):
    """E + A / N^alpha + B / D^beta; theta = (a, b, e, alpha, beta)."""

    name = "hoffmann"
    text = "L(N,D) = E + A/N^alpha + B/D^beta (Hoffmann et al. 2022, approach 3)"
    grid = GRID
    bounds = None
    # a, b: A and B in 4.5e-5..1.1e26 (A/N^alpha stays meaningful for alpha up to 3 at N up to 1e8); e: E in
    # 4.5e-5..20
    box = [(-10.0, 60.0), (-10.0, 60.0), (-10.0, 3.0), (0.0, 3.0), (0.0, 3.0)]
    objective = staticmethod(objective)

    def log_pred(self, th: np.ndarray, logn: np.ndarray, logd: np.ndarray) -> np.ndarray:
        a, b, e, al, be = theta_columns(th)
        return np.logaddexp(np.logaddexp(a - al * logn, b - be * logd), e)

    def constants(self, theta: np.ndarray) -> dict[str, float]:
        a, b, e, alpha, beta = (float(x) for x in theta)
        return {"E": math.exp(e), "A": math.exp(a), "B": math.exp(b), "alpha": alpha, "beta": beta}

    def exponents(self, c: dict[str, Any]) -> dict[str, float]:
        return {"alpha": c["alpha"], "beta": c["beta"]}

    def law(self, c: dict[str, Any], n: Any, d: Any) -> Any:
        return c["E"] + c["A"] / np.power(n, c["alpha"]) + c["B"] / np.power(d, c["beta"])

    def frontier(self, c: dict[str, Any], flops: Any) -> tuple[Any, Any]:
        """Closed form: N* = G (C/6)^(beta/(alpha+beta)), D* = (C/6)^(alpha/(alpha+beta)) / G,
        G = (alpha A / (beta B))^(1/(alpha+beta))."""
        al, be = c["alpha"], c["beta"]
        g = (al * c["A"] / (be * c["B"])) ** (1.0 / (al + be))
        x = np.asarray(flops, dtype=np.float64) / 6.0
        return g * x ** (be / (al + be)), x ** (al / (al + be)) / g


HOFFMANN = Hoffmann()
