"""Fit a sweep's runs in the configured law form (``auto``: the form the design checks pick) and predict the
loss, N, D and lr for a compute budget or a given (N, D) from a fit."""

from __future__ import annotations

from typing import Any

from proxytrain.scaling_fit.auto import compare_forms
from proxytrain.scaling_fit.config import FitConfig, FitError
from proxytrain.scaling_fit.forms import form_of, get_form
from proxytrain.scaling_fit.points import renumber, retarget


def fit_scaling(runs: list[dict[str, Any]], cfg: FitConfig | None = None) -> dict[str, Any]:
    """Fit L(N, D), bootstrap it, and fit the lr law; the JSON-able result ``predict`` reads."""
    cfg = cfg or FitConfig()
    cfg.validate()
    selection = None
    if cfg.form == "auto":
        selection = compare_forms(runs, cfg)
    form = selection["chosen"] if selection else cfg.form
    runs = renumber(retarget(runs, cfg.target), cfg.params_count)
    return get_form(form).fit(runs, cfg, selection)


def predict(fit: dict[str, Any], *, flops: float | None = None, n: float | None = None,
            d: float | None = None, seed: int = 0) -> dict[str, Any]:
    """Loss with a prediction interval at (N, D), or at the compute-optimal (N*, D*) for ``flops``.
    A budget below the smallest fitted run's compute (``C_min``) is a FitError: the law was not
    measured there and a plan for it would extrapolate downwards."""
    c_min = fit.get("C_min")
    if flops is not None and c_min and 0 < flops < c_min:
        raise FitError(f"a budget of {flops:.3g} FLOPs is below the smallest fitted run's compute ({c_min:.3g}): "
                       "plan it from a sweep of smaller sizes or fewer tokens")
    if fit.get("form") == "per_d":
        return get_form("per_d").predict(fit, flops, n, d)
    return get_form(form_of(fit["constants"])).predict(fit, flops, n, d, seed)
