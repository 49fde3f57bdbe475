"""The learning-rate law: the best lr of each lr sweep and the power law lr* = c N^k (D^m) through them."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np


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


def lr_law_noted(runs: list[dict[str, Any]], notes: list[str]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The lr optima and lr law of a sweep (every law form uses the same), with their warnings added to ``notes``."""
    optima = lr_optima(runs)
    lr_law = fit_lr_law(optima)
    if lr_law is None:
        notes.append("no lr law: fewer than 2 model sizes have an lr sweep of >= 3 learning rates")
    elif lr_law["at_sweep_edge"]:
        notes.append(f"{lr_law['at_sweep_edge']} size(s) had their best lr at the edge of the sweep: widen it")
    return optima, lr_law
