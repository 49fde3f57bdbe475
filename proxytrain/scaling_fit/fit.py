"""Fit a sweep's runs in the configured law form (``auto``: the form the design checks pick) and predict the
loss, N, D and lr for a compute budget or a given (N, D) from a fit."""

from __future__ import annotations

from dataclasses import asdict
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
    runs_n = renumber(retarget(runs, cfg.target), cfg.params_count)
    out = get_form(form).fit(runs_n, cfg, selection)
    if form == "per_d" and cfg.fallback != "none":  # the joint form for where per_d cannot check itself
        try:
            out["fallback"] = fit_scaling(runs, FitConfig(**{**asdict(cfg), "form": cfg.fallback, "fallback": "none"}))
        except FitError as exc:
            out["fallback"] = {"error": str(exc)}
            out["notes"].append(f"per_d: no {cfg.fallback} fallback ({exc}); per_d predicts at its checked slices only")
    return out


# The extrapolation factors (past the largest fitted N, D and compute) up to which the second held-out grid
# of docs/scaling.md validated the planner (per_d with its fallback): per axis, the largest factor whose
# runs were all within 3 %. ``predict`` warns beyond them.
VALIDATED = {"N": 30.0, "D": 4.0, "C": 64.0}
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


def _per_d_or_fallback(fit: dict[str, Any], flops: float | None, n: float | None, d: float | None,
                       seed: int) -> dict[str, Any]:
    """per_d at a slice it can check (>= 4 sizes: a leave-one-size-out interval); elsewhere the fit's joint
    ``fallback`` (a budget: the fallback's continuous frontier, since per_d's only spans the swept D).
    Without a usable fallback, per_d alone (an error at an unswept D)."""
    from proxytrain.scaling_fit.per_d import slice_key

    per_d = get_form("per_d")
    fb = fit.get("fallback")
    if not fb or "error" in fb:
        return per_d.predict(fit, flops, n, d)
    joint = get_form(form_of(fb["constants"]))
    if flops is not None:
        base = joint.predict(fb, flops, None, None, seed)
        n, d = base["N"], base["D"]
    try:
        key = slice_key(fit["constants"], d)
    except FitError:
        key = None
    checked = key is not None and (fit.get("slice_checks", {}).get(key) or {}).get("half_width_pct") is not None
    if checked:
        return {**per_d.predict(fit, None, n, d), "predicted_by": "per_d"}
    why = "not a swept token count" if key is None else "a slice of 3 sizes (no leave-one-size-out check)"
    out = joint.predict(fb, None, n, d, seed)
    return {**out, "predicted_by": fb["form"], "per_d_note": f"D={int(round(d))}: {why}; predicted by the "
            f"{fb['form']} fallback"}


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
        out = _per_d_or_fallback(fit, flops, n, d, seed)
    else:
        out = get_form(form_of(fit["constants"])).predict(fit, flops, n, d, seed)
    return {**out, **extrapolation(fit, out["N"], out["D"], validated), "baselines": baselines(fit, out["N"], out["D"])}
