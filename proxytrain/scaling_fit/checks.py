"""Design checks: a form scored on its own runs before any held-out run, each size left out in turn (the
largest one an extrapolation in N) and the largest token count left out (an extrapolation in D)."""

from __future__ import annotations

import warnings
from dataclasses import asdict
from typing import Any

import numpy as np

from proxytrain.scaling_fit.config import FitConfig, FitError, FitWarning
from proxytrain.scaling_fit.forms import get_form, law
from proxytrain.scaling_fit.per_d import D_MATCH, PER_D_SCOPE, fit_slices
from proxytrain.scaling_fit.points import renumber, retarget, usable_points


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
    runs = renumber(retarget(runs, cfg.target), cfg.params_count)
    pts, _ = usable_points(runs, cfg.min_tokens)
    if len(pts) == 0:
        raise FitError("no usable runs to check")

    def fold(keep: np.ndarray, name: str) -> dict[str, Any]:
        out: dict[str, Any] = {"left_out": name}
        train = [{"N": n, "D": d, "lr": 0.0, "loss": loss, "status": "ok"} for n, d, loss in pts[keep]]
        if cfg.form == "per_d":  # the slices only (no interval folds inside a fold, no lr law)
            slices, skipped, _ = fit_slices(pts[keep])
            c: dict[str, Any] = {"slices": slices, "skipped": skipped}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FitWarning)
                if cfg.form != "per_d":  # the fit_scaling path with the runs already retargeted and renumbered
                    fold_cfg = FitConfig(**{**asdict(cfg), "min_tokens": 0, "params_count": "", "target": "all"})
                    fold_cfg.validate()
                    c = get_form(cfg.form).fit(train, fold_cfg, None)["constants"]
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
