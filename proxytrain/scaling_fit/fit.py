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


# The extrapolation factors (past the largest fitted N, D and compute) up to which the held-out grid of
# docs/scaling.md ("Held-out grid") validated the planner; ``predict`` warns beyond them.
VALIDATED = {"N": 10.0, "D": 4.0, "C": 16.0}
# The fixed-exponent baseline: loss falls as C^-0.050 from the largest fitted run (Kaplan et al. 2020's
# compute-frontier exponent alpha_C^min)
FIXED_EXPONENT = 0.050


def baselines(fit: dict[str, Any], n: float, d: float) -> dict[str, Any]:
    """The two rules a law must beat at (N, D): the largest fitted run's loss (naive), and that loss scaled
    by (C / C_ref)^-0.050 (fixed exponent)."""
    lr = fit.get("largest_run")
    if not lr:
        return {}
    c_ref, loss = 6.0 * lr[0] * lr[1], lr[2]
    return {"naive_largest_run": loss, "fixed_exponent": loss * (6.0 * n * d / c_ref) ** -FIXED_EXPONENT,
            "reference_run": {"N": lr[0], "D": lr[1], "loss": loss}, "fixed_exponent_alpha_C": FIXED_EXPONENT}


def extrapolation(fit: dict[str, Any], n: float, d: float, validated: dict[str, float] | None = None
                  ) -> dict[str, Any]:
    """How far (N, D) lies past the fit's largest N, D and compute, the factors the held-out grid validated,
    the sweep's cost against this run's, and a warning for each factor beyond its validated one."""
    validated = validated or VALIDATED
    nr, dr = fit.get("N_range") or [n, n], fit.get("D_range") or [d, d]
    x = {"N": n / nr[1], "D": d / dr[1], "C": 6.0 * n * d / fit["C_max"]}
    out: dict[str, Any] = {"extrapolation": x, "validated": dict(validated)}
    warn = [f"{k} {v:.3g}x past the largest fitted {k} (validated up to {validated[k]:g}x)"
            for k, v in x.items() if v > validated[k]]
    if warn:
        out["scope_warning"] = "; ".join(warn) + ": the held-out grid did not test this far"
    sweep = fit.get("sweep_flops")
    if sweep:
        ratio = sweep / (6.0 * n * d)
        out["sweep_cost"] = {"sweep_flops": sweep, "target_flops": 6.0 * n * d, "sweep_over_target": ratio}
        if ratio > 1:
            out["sweep_cost"]["note"] = (
                f"the sweep cost {ratio:.2f}x this run: predicting it is dearer than training it; plan a run at "
                "least this much bigger, or sweep fewer lr points at the largest token count (the lr law "
                "interpolates them)")
    return out


def predict(fit: dict[str, Any], *, flops: float | None = None, n: float | None = None,
            d: float | None = None, seed: int = 0, validated: dict[str, float] | None = None) -> dict[str, Any]:
    """Loss with a prediction interval at (N, D), or at the compute-optimal (N*, D*) for ``flops``, with its
    extrapolation factors, the baselines and the sweep's cost (:func:`extrapolation`, :func:`baselines`).
    A budget below the smallest fitted run's compute (``C_min``) is a FitError: the law was not
    measured there and a plan for it would extrapolate downwards."""
    c_min = fit.get("C_min")
    if flops is not None and c_min and 0 < flops < c_min:
        raise FitError(f"a budget of {flops:.3g} FLOPs is below the smallest fitted run's compute ({c_min:.3g}): "
                       "plan it from a sweep of smaller sizes or fewer tokens")
    if fit.get("form") == "per_d":
        out = get_form("per_d").predict(fit, flops, n, d)
    else:
        out = get_form(form_of(fit["constants"])).predict(fit, flops, n, d, seed)
    return {**out, **extrapolation(fit, out["N"], out["D"], validated), "baselines": baselines(fit, out["N"], out["D"])}
