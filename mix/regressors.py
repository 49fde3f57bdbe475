"""The regressors of a RegMix search: target loss (or per-domain losses) from mixture weights.

``make_regressor(name)`` / ``fit_regressor(name, x, y, ys)`` by name (``REGRESSORS``):

- ``domainwise`` (:class:`DomainwiseModel`): each target domain's loss against the log of its own
  share (:class:`OwnShareModel`), reduced like the target;
- ``hybrid`` (:class:`LGBMModel` with ``init="loglinear"``): LightGBM boosted from a ridge fit on
  ``[w, log(w + eps)]`` (:class:`LogLinearModel`);
- ``lightgbm``: LightGBM on the raw weights (the paper); ``linear``: least squares (its baseline).

:func:`correlations` scores predictions (Spearman, Pearson, MAE). Used by :mod:`mix.regmix`.
"""

from __future__ import annotations

import numpy as np

REGRESSORS = ("hybrid", "lightgbm", "linear", "domainwise")


def reduce_rows(rows: np.ndarray, reduce: str) -> np.ndarray:
    if reduce == "max":
        return rows.max(axis=1)
    if reduce in ("mean", "single"):
        return rows.mean(axis=1)
    raise ValueError(f"unknown reduction {reduce!r}; choose mean, max or single")


class LinearModel:
    """Least squares on the weights with an intercept (tiny ridge so collinear simplex data works)."""

    def __init__(self, ridge: float = 1e-6):
        self.ridge = ridge
        self.coef: np.ndarray | None = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> LinearModel:
        xa = np.hstack([x, np.ones((x.shape[0], 1))])
        reg = self.ridge * np.eye(xa.shape[1])
        reg[-1, -1] = 0.0
        self.coef = np.linalg.solve(xa.T @ xa + reg, xa.T @ y)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        assert self.coef is not None, "fit() first"
        return np.hstack([x, np.ones((x.shape[0], 1))]) @ self.coef


class LogLinearModel:
    """Ridge regression on standardised ``[w, log(w + eps)]``: per-domain losses fall roughly
    log-linearly with a domain's share (data-mixing-law form), which a linear model on raw weights
    cannot follow. ``eps`` and the ridge strength are chosen by exact leave-one-out error on the
    fitting runs only (closed form for ridge), from ``EPS_GRID`` x ``RIDGE_GRID``."""

    EPS_GRID = (1e-3, 1e-2, 1e-1)
    RIDGE_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0)

    def __init__(self) -> None:
        self.eps = self.ridge = 0.0
        self.coef: np.ndarray | None = None

    @staticmethod
    def _features(x: np.ndarray, eps: float) -> np.ndarray:
        return np.hstack([x, np.log(x + eps)])

    def fit(self, x: np.ndarray, y: np.ndarray) -> LogLinearModel:
        best = None
        for eps in self.EPS_GRID:
            f = self._features(x, eps)
            mu, sd = f.mean(axis=0), f.std(axis=0) + 1e-12
            z, yc = (f - mu) / sd, y - y.mean()
            for lam in self.RIDGE_GRID:
                a = z.T @ z + lam * np.eye(z.shape[1])
                hat = z @ np.linalg.solve(a, z.T)
                loo = float(np.mean(((yc - hat @ yc) / np.maximum(1.0 - np.diag(hat), 1e-9)) ** 2))
                if best is None or loo < best[0]:
                    best = (loo, eps, lam, mu, sd, np.linalg.solve(a, z.T @ yc), float(y.mean()))
        _, self.eps, self.ridge, self._mu, self._sd, self.coef, self._ym = best
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        assert self.coef is not None, "fit() first"
        return ((self._features(x, self.eps) - self._mu) / self._sd) @ self.coef + self._ym


class LGBMModel:
    """LightGBM regressor on the raw weights with small-sample settings and a fixed number of rounds.

    ``init="loglinear"`` (the ``hybrid`` regressor) boosts from the predictions of a
    :class:`LogLinearModel` fitted on the same runs (LightGBM's ``init_score``): the trees then
    model what the log-linear law misses. With a few dozen runs the trees alone cannot recover
    the smooth log-shaped response (they are piecewise constant per weight); the paper's 512 runs
    can.
    """

    def __init__(self, *, rounds: int = 300, seed: int = 0, init: str = "none"):
        self.rounds = rounds
        self.seed = seed
        self.init = init
        self.base: LogLinearModel | None = None
        self.booster = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> LGBMModel:
        import lightgbm as lgb

        n = x.shape[0]
        params = {
            "objective": "regression", "learning_rate": 0.05, "num_leaves": 8,
            "min_data_in_leaf": max(2, n // 10), "min_data_in_bin": 1, "max_bin": 255,
            "feature_fraction": 1.0, "bagging_fraction": 1.0, "lambda_l2": 1e-3,
            "seed": self.seed, "deterministic": True, "force_row_wise": True, "num_threads": 1, "verbosity": -1,
        }
        init_score = None
        rounds = self.rounds
        if self.init == "loglinear":
            self.base = LogLinearModel().fit(x, y)
            init_score = self.base.predict(x)
            # residual trees: shallow, few rounds (the base already carries the trend)
            params.update(num_leaves=4, min_data_in_leaf=3)  # lambda_l2 as above
            rounds = min(self.rounds, 100)
        elif self.init != "none":
            raise ValueError(f"LGBMModel init must be 'none' or 'loglinear', got {self.init!r}")
        ds = lgb.Dataset(x, label=y, init_score=init_score, params={"min_data_in_bin": 1, "verbosity": -1})
        self.booster = lgb.train(params, ds, num_boost_round=rounds)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        assert self.booster is not None, "fit() first"
        pred = self.booster.predict(x, num_threads=1)
        return pred + self.base.predict(x) if self.base is not None else pred


class OwnShareModel:
    """``loss = a + b * log(w_own + eps)``: one domain's loss from its own share only, least squares;
    ``eps`` chosen by exact leave-one-out error on the fitting runs (``EPS_GRID``)."""

    EPS_GRID = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)

    def __init__(self, col: int) -> None:
        self.col = col
        self.eps = 0.0
        self.coef: np.ndarray | None = None

    def _features(self, x: np.ndarray, eps: float) -> np.ndarray:
        return np.column_stack([np.ones(x.shape[0]), np.log(x[:, self.col] + eps)])

    def fit(self, x: np.ndarray, y: np.ndarray) -> OwnShareModel:
        best = None
        for eps in self.EPS_GRID:
            f = self._features(x, eps)
            hat = f @ np.linalg.pinv(f)
            loo = float(np.mean(((y - hat @ y) / np.maximum(1.0 - np.diag(hat), 1e-9)) ** 2))
            if best is None or loo < best[0]:
                best = (loo, eps, np.linalg.lstsq(f, y, rcond=None)[0])
        _, self.eps, self.coef = best
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        assert self.coef is not None, "fit() first"
        return self._features(x, self.eps) @ self.coef


class DomainwiseModel:
    """One :class:`OwnShareModel` per target domain, fitted on that domain's own loss against its
    own share; the prediction is the per-domain predictions reduced like the target (mean for
    ``avg``, max for ``worst``).

    Why: a run gives one loss per target domain, and on the demo each of them is ranked almost
    entirely by its own domain's share (Spearman -0.88 to -0.99 over 26 tiny proxy runs), while
    the averaged target mixes seven such trends. Two coefficients per domain stay stable with a
    few dozen runs, where a fit on all shares (``hybrid``'s ridge on 2k features) swings with the
    fold assignment (docs/mix.md, demo section). What it cannot see: one domain's data lowering
    another's loss (transfer); ``auto`` keeps the best out-of-fold regressor either way.
    Fitted on ``ys [runs, T]`` (:func:`target_matrix`); ``cols``: each target domain's column
    in the weights (default: the first T).
    """

    def __init__(self, reduce: str = "mean", cols: list[int] | None = None) -> None:
        self.reduce = reduce
        self.cols = cols
        self.models: list[OwnShareModel] = []

    def fit(self, x: np.ndarray, ys: np.ndarray) -> DomainwiseModel:
        ys = np.asarray(ys, dtype=np.float64)
        ys = ys[:, None] if ys.ndim == 1 else ys
        cols = list(self.cols) if self.cols is not None else list(range(ys.shape[1]))
        if len(cols) != ys.shape[1]:
            raise ValueError(f"domainwise: {ys.shape[1]} loss columns but {len(cols)} weight columns")
        self.models = [OwnShareModel(c).fit(x, ys[:, j]) for j, c in enumerate(cols)]
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        assert self.models, "fit() first"
        return reduce_rows(np.column_stack([m.predict(x) for m in self.models]), self.reduce)


def make_regressor(name: str, *, rounds: int = 300, seed: int = 0, reduce: str = "mean",
                   cols: list[int] | None = None):
    """A fresh, unfitted regressor by name (``REGRESSORS``); ``domainwise`` is fitted on the
    per-domain loss matrix (:func:`fit_regressor`), the others on the target vector."""
    if name == "domainwise":
        return DomainwiseModel(reduce, cols)
    if name == "hybrid":
        return LGBMModel(rounds=rounds, seed=seed, init="loglinear")
    if name == "lightgbm":
        return LGBMModel(rounds=rounds, seed=seed)
    if name == "linear":
        return LinearModel()
    raise ValueError(f"unknown regressor {name!r}; choose one of {REGRESSORS}")


def fit_regressor(name: str, x: np.ndarray, y: np.ndarray, ys: np.ndarray | None = None, *,
                  reduce: str = "mean", cols: list[int] | None = None, rounds: int = 300, seed: int = 0):
    """Fit regressor ``name`` on runs ``x``: the target vector ``y``, or for ``domainwise`` the
    per-domain losses ``ys`` (``y`` when none are given)."""
    if name == "domainwise" and ys is None:
        raise ValueError("the domainwise regressor needs the per-domain losses (ys)")
    model = make_regressor(name, rounds=rounds, seed=seed, reduce=reduce, cols=cols)
    return model.fit(x, ys if name == "domainwise" else y)


def correlations(pred: np.ndarray, true: np.ndarray) -> dict[str, float]:
    from scipy import stats

    pred = np.asarray(pred, dtype=np.float64)
    true = np.asarray(true, dtype=np.float64)
    if np.ptp(pred) == 0 or np.ptp(true) == 0:
        return {"spearman": 0.0, "pearson": 0.0, "mae": float(np.abs(pred - true).mean())}
    return {
        "spearman": float(stats.spearmanr(pred, true).statistic),
        "pearson": float(stats.pearsonr(pred, true).statistic),
        "mae": float(np.abs(pred - true).mean()),
    }
