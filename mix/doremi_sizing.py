"""Spread and group sizing of a DoReMi search: the mixture's standard error from its DRO proxies, and
how many proxies per reported seed its seed range needs (docs/mix.md)."""

from __future__ import annotations

import math

import numpy as np

SEED_RANGE_TARGET = 0.05  # the per-domain seed range DoReMi's output is held to (docs/mix.md; report/search.py)
MIN_PROXIES_FOR_SIZING = 6  # fewer proxies give too rough an sd to size anything from


def range_sizing(proxy_sd: np.ndarray, *, seeds: int, group_size: int, n_proxies: int,
                 target: float = SEED_RANGE_TARGET, probability: float = 0.95, confidence: float = 0.9,
                 draws: int = 20_000) -> dict:
    """How many proxies per reported seed a run needs for its seed range to meet ``target``.

    Model: each reported seed is the mean of ``m`` independent proxies, a proxy's weight on domain
    ``d`` normal with sd ``proxy_sd[d]`` (domains taken as independent). The largest per-domain
    range between ``seeds`` such means is ``R / sqrt(m)``, where ``R`` = max over ``d`` of
    ``proxy_sd[d]`` x the range of ``seeds`` standard normals; ``R`` is simulated once (``draws``,
    fixed rng: the same answer for the same sds) and scaled. Returns the share of runs expected to
    meet ``target`` at this ``group_size`` (``p_at_group_size``) and the smallest ``m`` expected to
    meet it in ``probability`` of runs (``group_size_needed``), both from the measured sds; and
    ``group_size_needed_upper``, the same with every sd at its one-sided ``confidence`` upper bound
    (chi-square with ``n_proxies - 1`` degrees of freedom: ``sd x sqrt((n - 1) / chi2_{1-conf}(n - 1))``,
    x1.40 for 12 proxies): an sd measured on a few proxies is often too small, and a group size
    chosen from it would miss the target more often than ``probability`` says."""
    from scipy.stats import chi2

    sd = np.asarray(proxy_sd, dtype=np.float64)
    rng = np.random.default_rng(0)
    z = rng.standard_normal((draws, seeds, sd.size))
    r = (np.ptp(z, axis=1) * sd).max(axis=1)  # the largest range for m = 1
    q = float(np.quantile(r, probability))
    inflate = math.sqrt((n_proxies - 1) / float(chi2.ppf(1.0 - confidence, n_proxies - 1)))

    def need(x: float) -> int:
        return max(1, math.ceil((x / target) ** 2 - 1e-9))

    return {"target": target, "probability": probability, "n_proxies": int(n_proxies),
            "p_at_group_size": round(float(np.mean(r <= target * np.sqrt(group_size))), 3),
            "group_size_needed": need(q), "confidence": confidence, "sd_inflation": round(inflate, 4),
            "group_size_needed_upper": need(q * inflate)}


def proxy_spread(proxies: np.ndarray, domains: list[str], *, independent: bool) -> dict:
    """The mixture's uncertainty from the DRO proxies' randomness: per domain the sd of the ``n``
    proxies' weights (``proxy_sd``) and the standard error of their mean, the mixture
    (``mixture_se`` = sd / sqrt(n)); ``{}`` with fewer than 2 proxies. ``independent`` is
    ``paired_reference``: with one shared reference the proxies share its noise, so the standard
    error is a lower bound (``se_lower_bound: true``)."""
    proxies = np.asarray(proxies, dtype=np.float64)
    n = len(proxies)
    if n < 2:
        return {}
    sd = proxies.std(axis=0, ddof=1)
    return {"n_proxies": n, "proxy_sd": dict(zip(domains, sd.round(6).tolist(), strict=True)),
            "mixture_se": dict(zip(domains, (sd / np.sqrt(n)).round(6).tolist(), strict=True)),
            "se_lower_bound": not independent}
