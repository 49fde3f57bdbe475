"""A joint law L(N, D) over every swept (N, D): the fit and prediction the Hoffmann and Kaplan forms share.

A form subclasses :class:`JointForm` with its start grid, bounds, objective and closed-form pieces; the
fit scores every grid point, runs L-BFGS-B from the best ones (:mod:`proxytrain.scaling_fit.optimise`),
bootstraps the constants, and fits the lr law. How and why: docs/scaling.md."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from dataclasses import asdict
from typing import Any

import numpy as np

from proxytrain.scaling_fit.config import MIN_EXPONENT, FitConfig, FitError, FitWarning
from proxytrain.scaling_fit.lr_law import lr_for, lr_law_noted
from proxytrain.scaling_fit.optimise import bootstrap, fit_theta
from proxytrain.scaling_fit.points import check_points, scope, usable_points


def theta_columns(th: np.ndarray) -> list[np.ndarray]:
    """The 5 parameters of rows ``th`` (shape (k, 5), or (5,)) as columns, to broadcast over the points."""
    th = np.atleast_2d(th)
    return [th[:, i:i + 1] for i in range(5)]


class JointForm(ABC):
    """A law L(N, D) with 5 free parameters fitted by Huber on the log-loss from a grid of starts."""

    name: str = ""
    text: str = ""
    grid: np.ndarray
    bounds: list[tuple[float, float]] | None = None
    box: list[tuple[float, float]]  # the global search's box (finite, so it can be searched)

    @abstractmethod
    def objective(self, theta: np.ndarray, logn: np.ndarray, logd: np.ndarray, logl: np.ndarray,
                  delta: float) -> tuple[float, np.ndarray]:
        """The Huber objective on the log residuals and its gradient in ``theta``."""

    @abstractmethod
    def log_pred(self, th: np.ndarray, logn: np.ndarray, logd: np.ndarray) -> np.ndarray:
        """log L for parameter rows ``th`` (shape (k, 5), or (5,)) at the points (broadcast)."""

    @abstractmethod
    def constants(self, theta: np.ndarray) -> dict[str, float]:
        """The named constants of an optimum ``theta``."""

    @abstractmethod
    def law(self, c: dict[str, Any], n: Any, d: Any) -> Any:
        """L(N, D) for constants ``c``."""

    @abstractmethod
    def frontier(self, c: dict[str, Any], flops: Any) -> tuple[Any, Any]:
        """Compute-optimal (N*, D*) for a budget C = 6 N D."""

    @abstractmethod
    def exponents(self, c: dict[str, Any]) -> dict[str, float]:
        """The N and D exponents, by their names in this form."""

    def check(self, c: dict[str, float], pts: np.ndarray) -> None:
        """Refuse (FitError) a fit that is degenerate on these points in a way the exponents do not show;
        a form without such a case (Hoffmann) keeps this default, which accepts every fit."""
        return None

    def fit(self, runs: list[dict[str, Any]], cfg: FitConfig, selection: dict[str, Any] | None) -> dict[str, Any]:
        """Fit the law, bootstrap it, and fit the lr law; the JSON-able result ``predict`` reads."""
        form = self.name
        pts, drops = usable_points(runs, cfg.min_tokens)
        notes = check_points(pts, drops, cfg)
        theta, obj = fit_theta(pts, cfg.huber_delta, cfg.starts, form=self, global_search=cfg.global_search,
                               seed=cfg.seed)
        try:
            const = self.constants(theta)
        except OverflowError:
            raise FitError(f"the {form} fit diverged (a fitted constant overflows a float): these runs do not pin "
                           "this form; add sizes/token counts or use another form") from None
        ex = self.exponents(const)
        if min(ex.values()) < MIN_EXPONENT:
            raise FitError(f"the fitted exponents are not positive ({_fmt(ex)}): loss does not fall with model size "
                           "or tokens in these runs; check for undertrained or diverged runs and widen the size/token "
                           "range")
        self.check(const, pts)
        if max(ex.values()) > 3:
            notes.append(f"steep exponents ({_fmt(ex, '.2f')}): the law may not extrapolate; add sizes/token counts")
        pred = self.law(const, pts[:, 0], pts[:, 1])
        resid = np.log(pts[:, 2]) - np.log(pred)
        if const["E"] > pts[:, 2].min():
            notes.append(f"fitted E={const['E']:.3f} is above the lowest observed loss {pts[:, 2].min():.3f}")
        boot, skipped = bootstrap(pts, cfg, theta, self)
        if skipped:
            notes.append(f"{skipped} bootstrap resamples skipped (one size/token count, or a non-positive exponent)")
        optima, lr_law = lr_law_noted(runs, notes)
        for n in notes:
            warnings.warn(n, FitWarning, stacklevel=3)  # at the caller of fit_scaling
        q = (1 - cfg.confidence) / 2
        intervals = {}
        if len(boot):
            for k in const:
                vals = np.array([b[k] for b in boot])
                intervals[k] = [float(np.quantile(vals, q)), float(np.quantile(vals, 1 - q))]
        out = {
            "law": self.text, "form": form,
            "constants": const, "intervals": intervals, "config": asdict(cfg),
            "objective": obj, "points": [[int(n), int(d), float(loss)] for n, d, loss in pts],
            "log_residuals": [float(r) for r in resid], "rmse_log": float(np.sqrt(np.mean(resid ** 2))),
            "bootstrap": boot, "drops": drops, "lr_optima": optima, "lr_law": lr_law, "notes": notes,
            **scope(pts, runs),
        }
        if selection:
            out["form_selection"] = selection
        return out

    def predict(self, fit: dict[str, Any], flops: float | None, n: float | None, d: float | None,
                seed: int = 0) -> dict[str, Any]:
        """Loss with a prediction interval at (N, D), or at the compute-optimal (N*, D*) for ``flops``."""
        c = fit["constants"]
        if flops is not None:
            if flops <= 0:
                raise FitError(f"--flops must be > 0, got {flops}")
            n_opt, d_opt = self.frontier(c, flops)
            n, d = float(n_opt), float(d_opt)
        elif n is None or d is None or n <= 0 or d <= 0:
            raise FitError("give --flops C, or both --params N and --tokens D (positive)")
        point = float(self.law(c, n, d))
        q = (1 - fit["config"]["confidence"]) / 2
        out: dict[str, Any] = {"N": n, "D": d, "flops": 6.0 * n * d, "loss": point,
                               "lr": lr_for(fit.get("lr_law"), n, d)}
        batches = fit.get("batch_sizes") or []
        if len(batches) == 1:  # batch size is not swept: recommend the one the law was measured at
            out["batch_size"], out["seq_len"] = batches[0], (fit.get("seq_len") or [None])[0]
        boot = fit.get("bootstrap") or []
        if boot:
            rng = np.random.default_rng(seed)
            resid = np.asarray(fit["log_residuals"])
            with np.errstate(over="ignore"):  # a resample's extreme exponent overflows to inf: an open-ended tail
                preds = np.array([self.law(b, n, d) for b in boot])
            draws = preds[rng.integers(0, len(preds), 4000)] * np.exp(resid[rng.integers(0, len(resid), 4000)])
            out["interval"] = [float(np.quantile(draws, q)), float(np.quantile(draws, 1 - q))]
            out["interval_params_only"] = [float(np.quantile(preds, q)), float(np.quantile(preds, 1 - q))]
            out["confidence"] = fit["config"]["confidence"]
        extrap = out["flops"] / fit["C_max"]
        out["extrapolation_x"] = extrap  # how far past the largest fitted run's compute
        if extrap > 100:
            out["warning"] = f"{extrap:.0f}x the largest fitted run's compute: treat the interval as optimistic"
        return out


def _fmt(ex: dict[str, float], spec: str = ".3g") -> str:
    return ", ".join(f"{k}={v:{spec}}" for k, v in ex.items())
