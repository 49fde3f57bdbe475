"""The points a law is fitted to (the best lr of each (N, D) of a sweep's runs) and the checks that they can
identify a law at all."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from proxytrain.scaling_fit.config import N_FREE, FitConfig, FitError


def usable_points(runs: list[dict[str, Any]], min_tokens: int = 0) -> tuple[np.ndarray, dict[str, int]]:
    """``[[N, D, loss], ...]`` (the best lr per (N, D)) and the count of dropped runs by reason."""
    toks = sorted({str(r["tokenizer_sha256"]) for r in runs if r.get("tokenizer_sha256")})
    if len(toks) > 1:  # losses in different token units: no law relates them
        raise FitError(f"the runs come from {len(toks)} tokenizers ({', '.join(t[:12] for t in toks)}): their losses "
                       "are per token of different vocabularies; fit one sweep's runs (one tokenizer) at a time")
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


def retarget(runs: list[dict[str, Any]], target: str) -> list[dict[str, Any]]:
    """Score every run by ``val[target]`` (one domain's loss) instead of its sweep target."""
    if target in ("", "all"):
        return runs
    have = sorted({k for r in runs for k in (r.get("val") or {})})
    if target not in have:
        raise FitError(f"no run has a validation loss for {target!r}; scale.fit.target must be all or one of {have}")
    return [{**r, "loss": (r.get("val") or {}).get(target)} for r in runs]


def renumber(runs: list[dict[str, Any]], params: str) -> list[dict[str, Any]]:
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


def scope(pts: np.ndarray, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """What a fit covers: the ranges of N, D and compute of its points, the batch sizes and sequence
    lengths of its runs (every form's fit result carries these; ``predict``'s extrapolation factor is
    against ``C_max``; a budget below ``C_min`` is refused; the report prints the ranges)."""
    spent = [6.0 * float(r["N"]) * float(r["D"]) for r in runs if r.get("N") and r.get("D")]
    top = int(np.lexsort((pts[:, 2], -(pts[:, 0] * pts[:, 1])))[0])  # the largest compute; a tie: the lowest loss
    return {
        "sweep_flops": float(sum(spent)),  # every run the fit was given (lr sweeps and dropped runs too)
        "largest_run": [int(pts[top, 0]), int(pts[top, 1]), float(pts[top, 2])],
        "N_range": [int(pts[:, 0].min()), int(pts[:, 0].max())],
        "D_range": [int(pts[:, 1].min()), int(pts[:, 1].max())],
        "C_max": float((6 * pts[:, 0] * pts[:, 1]).max()),
        "C_min": float((6 * pts[:, 0] * pts[:, 1]).min()),
        "batch_sizes": sorted({int(r["batch_size"]) for r in runs if r.get("batch_size")}),
        "seq_len": sorted({int(r["seq_len"]) for r in runs if r.get("seq_len")}),
    }
