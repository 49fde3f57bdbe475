"""RegMix: mixture search by regression over many tiny proxy runs (Liu et al. 2024, "RegMix: Data
Mixture as Regression for Language Model Pre-training").

Run as ``corpusmix mix regmix --input POOLS_DIR --output mixture.json [--preset tiny]``; the proxy
runs are done by :func:`mix.proxy.train_proxies` (parallel processes, resumable); this module holds
the numerics:

1. :func:`sample_mixtures`: ``M`` mixtures from ``Dirichlet(conc * k * prior)`` for a grid of
   concentrations around the token-share prior; a mixture is rejected when a domain would need
   more than ``max_epochs`` passes over its tokens for the proxy's token budget.
2. :func:`target_values`: the regression target from per-domain validation losses:
   ``avg`` (mean over domains), ``worst`` (max) or one domain's name.
3. :func:`fit_and_score`: LightGBM and a (ridge-stabilised) linear regressor are fitted on the
   fitting runs; Spearman and Pearson are measured on held-out runs that are used neither for
   fitting nor for early stopping (LightGBM trains a fixed number of rounds; nothing stops early).
4. :func:`search`: ``candidates`` (>= 100k) mixtures are sampled the same way (same prior, grid
   and epoch caps), predicted with a LightGBM refitted on all ``M`` runs (the held-out scores of
   step 3 measure how well that works), and the ``top_k`` best (lowest predicted) are averaged.

Choices that differ from the paper, and why:

- Fewer and smaller proxies (``M`` of a few dozen ~1M-parameter models trained for a few hundred
  steps, instead of 512 1M-parameter models trained on 1B tokens): the ``tiny`` preset must finish
  in ~10 minutes on 2 CPU cores. LightGBM is configured for small samples (``min_data_in_leaf``
  scales with ``M``) accordingly.
- The paper fits on all runs and evaluates on separately trained runs; here a fixed fraction of
  the ``M`` runs (``heldout_fraction``) is held out for the same purpose.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class RegMixConfig:
    """RegMix hyper-parameters (``params.yaml`` section ``mix.regmix``)."""

    num_proxies: int = field(default=32, metadata={"help": "M: number of proxy runs"})
    concentrations: list[float] = field(
        default_factory=lambda: [0.3, 1.0, 3.0],
        metadata={"help": "grid of Dirichlet concentrations around the token-share prior"})
    max_epochs: float = field(default=4.0, metadata={"help": "cap: passes over a domain's tokens"})
    heldout_fraction: float = field(default=0.25, metadata={"help": "runs held out for Spearman"})
    target: str = field(default="avg", metadata={"help": "avg | worst | <domain name>"})
    target_domains: list[str] = field(
        default_factory=list, metadata={"help": "domains avg/worst are taken over (empty = all)"})
    candidates: int = field(default=100_000, metadata={"help": "mixtures searched"})
    top_k: int = field(default=100, metadata={"help": "best candidates averaged"})
    workers: int = field(default=2, metadata={"help": "parallel proxy processes"})
    lgbm_rounds: int = field(default=300, metadata={"help": "LightGBM boosting rounds (fixed)"})

    def validate(self) -> None:
        if self.num_proxies < 8:
            raise ValueError(f"regmix num_proxies must be >= 8 to hold out runs, got {self.num_proxies}")
        if not self.concentrations or any(c <= 0 for c in self.concentrations):
            raise ValueError(f"regmix concentrations must be positive, got {self.concentrations}")
        if not 0.0 < self.heldout_fraction < 0.9:
            raise ValueError(f"regmix heldout_fraction must be in (0, 0.9), got {self.heldout_fraction}")
        if self.max_epochs <= 0:
            raise ValueError(f"regmix max_epochs must be > 0, got {self.max_epochs}")
        if self.candidates < 1 or self.top_k < 1 or self.top_k > self.candidates:
            raise ValueError("regmix needs 1 <= top_k <= candidates")
        if self.workers < 1:
            raise ValueError("regmix workers must be >= 1")


def epoch_caps(available_tokens: np.ndarray, budget_tokens: float, max_epochs: float) -> np.ndarray:
    """Largest weight per domain such that ``w * budget <= max_epochs * available``."""
    available = np.asarray(available_tokens, dtype=np.float64)
    if budget_tokens <= 0:
        raise ValueError(f"token budget must be > 0, got {budget_tokens}")
    return np.minimum(1.0, max_epochs * available / float(budget_tokens))


def sample_mixtures(prior: np.ndarray, n: int, *, concentrations: list[float], rng: np.random.Generator,
                    caps: np.ndarray | None = None, max_tries: int = 1000) -> np.ndarray:
    """``n`` mixtures ``[n, k]`` from ``Dirichlet(conc * k * prior)``, conc cycling over the grid.

    Mixtures with a weight above its cap are resampled (rejection, vectorised); if the caps make
    the simplex nearly empty this raises with the fix instead of looping forever.
    """
    prior = np.asarray(prior, dtype=np.float64)
    k = prior.size
    if k < 2:
        raise ValueError("a mixture search needs at least 2 domains")
    if np.any(prior <= 0) or not np.isclose(prior.sum(), 1.0):
        raise ValueError(f"prior must be strictly positive and sum to 1, got {prior.tolist()}")
    if caps is not None:
        caps = np.asarray(caps, dtype=np.float64)
        if caps.sum() < 1.0:
            raise ValueError(
                f"the epoch caps sum to {caps.sum():.3f} < 1: no mixture fits; raise max_epochs, "
                "lower the proxy token budget, or add tokens")
    concs = np.asarray(concentrations, dtype=np.float64)
    conc_of = concs[np.arange(n) % concs.size]
    out = np.empty((n, k))
    todo = np.arange(n)
    for _ in range(max_tries):
        alpha = conc_of[todo, None] * k * prior[None, :]
        draws = rng.gamma(alpha)
        sums = draws.sum(axis=1, keepdims=True)
        # a draw can underflow to all zeros for tiny alphas; resample those
        ok = sums[:, 0] > 0
        draws = draws / np.where(sums > 0, sums, 1.0)
        if caps is not None:
            ok &= np.all(draws <= caps[None, :] + 1e-12, axis=1)
        out[todo[ok]] = draws[ok]
        todo = todo[~ok]
        if todo.size == 0:
            return out
    raise ValueError(
        f"could not sample {todo.size} of {n} mixtures within the epoch caps after {max_tries} tries; "
        "raise max_epochs or use larger concentrations")


def target_values(val_losses: list[dict[str, float]], target: str, domains: list[str]) -> np.ndarray:
    """Regression target per run from per-domain validation losses (avg/worst over ``domains``)."""
    if target not in ("avg", "worst") and target not in domains:
        raise ValueError(f"regmix target must be 'avg', 'worst' or one of {domains}, got {target!r}")
    if target not in ("avg", "worst"):
        return np.array([run[target] for run in val_losses], dtype=np.float64)
    rows = np.array([[run[d] for d in domains] for run in val_losses], dtype=np.float64)
    if target == "avg":
        return rows.mean(axis=1)
    return rows.max(axis=1)


def split_heldout(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random (fit, heldout) index split; at least 3 runs on each side."""
    n_held = int(round(n * fraction))
    n_held = min(max(n_held, 3), n - 3)
    if n_held < 3:
        raise ValueError(f"need >= 6 runs to hold out 3 for scoring, got {n}")
    perm = rng.permutation(n)
    return np.sort(perm[n_held:]), np.sort(perm[:n_held])


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


class LGBMModel:
    """LightGBM regressor with small-sample settings and a fixed number of rounds."""

    def __init__(self, *, rounds: int = 300, seed: int = 0):
        self.rounds = rounds
        self.seed = seed
        self.booster = None

    def fit(self, x: np.ndarray, y: np.ndarray) -> LGBMModel:
        import lightgbm as lgb

        n = x.shape[0]
        params = {
            "objective": "regression", "learning_rate": 0.05, "num_leaves": 8,
            "min_data_in_leaf": max(2, n // 10), "min_data_in_bin": 1, "max_bin": 255,
            "feature_fraction": 1.0, "bagging_fraction": 1.0, "lambda_l2": 1e-3,
            "seed": self.seed, "deterministic": True, "num_threads": 1, "verbosity": -1,
        }
        ds = lgb.Dataset(x, label=y, params={"min_data_in_bin": 1, "verbosity": -1})
        self.booster = lgb.train(params, ds, num_boost_round=self.rounds)
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        assert self.booster is not None, "fit() first"
        return self.booster.predict(x, num_threads=1)


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


def fit_and_score(x: np.ndarray, y: np.ndarray, fit_idx: np.ndarray, held_idx: np.ndarray, *,
                  rounds: int = 300, seed: int = 0):
    """Fit LightGBM and linear on ``fit_idx``; score both on ``held_idx`` only.

    Returns ``(lgbm_model, linear_model, report)`` with ``report = {"lightgbm": {...}, "linear":
    {...}, "n_fit", "n_heldout"}``; the held-out runs never touch the fitting.
    """
    assert len(np.intersect1d(fit_idx, held_idx)) == 0, "held-out runs leaked into fitting"
    lgbm = LGBMModel(rounds=rounds, seed=seed).fit(x[fit_idx], y[fit_idx])
    lin = LinearModel().fit(x[fit_idx], y[fit_idx])
    report = {
        "lightgbm": correlations(lgbm.predict(x[held_idx]), y[held_idx]),
        "linear": correlations(lin.predict(x[held_idx]), y[held_idx]),
        "n_fit": int(len(fit_idx)), "n_heldout": int(len(held_idx)),
    }
    return lgbm, lin, report


def search(model, prior: np.ndarray, *, candidates: int, top_k: int, concentrations: list[float],
           rng: np.random.Generator, caps: np.ndarray | None = None, batch: int = 50_000):
    """Predict the target of ``candidates`` sampled mixtures; average the ``top_k`` lowest.

    Returns ``(weights, info)``; ``info`` has the best and top-k mean predicted target.
    """
    best_w = np.empty((0, np.asarray(prior).size))
    best_p = np.empty(0)
    done = 0
    while done < candidates:
        n = min(batch, candidates - done)
        cand = sample_mixtures(prior, n, concentrations=concentrations, rng=rng, caps=caps)
        pred = model.predict(cand)
        best_w = np.vstack([best_w, cand])
        best_p = np.concatenate([best_p, pred])
        keep = np.argsort(best_p, kind="stable")[:top_k]
        best_w, best_p = best_w[keep], best_p[keep]
        done += n
    w = best_w.mean(axis=0)
    w /= w.sum()
    return w, {"candidates": int(candidates), "top_k": int(top_k),
               "best_predicted": float(best_p[0]), "topk_mean_predicted": float(best_p.mean())}


def run_regmix(pools_dir, cfg: RegMixConfig, proxy_cfg, *, seed: int = 0, cache_dir) -> dict:
    """Full RegMix on a token-pools folder: sample, train (cached, parallel), fit, score, search.

    Returns ``{"weights": {domain: w}, "report": {...}}``; the report holds the fit scores on the
    held-out runs (``fit``), the search summary, and every run's weights, losses and target.
    """
    import time

    from mix.proxy import pool_domains, train_proxies

    cfg.validate()
    t0 = time.perf_counter()
    tokens = pool_domains(pools_dir)
    domains = list(tokens)
    avail = np.array([tokens[d] for d in domains], dtype=np.float64)
    prior = avail / avail.sum()
    tgt_domains = list(cfg.target_domains) or domains
    unknown = sorted(set(tgt_domains) - set(domains))
    if unknown:
        raise ValueError(f"regmix target_domains {unknown} are not in the pools {domains}")
    if cfg.target not in ("avg", "worst") and cfg.target not in domains:
        raise ValueError(f"regmix target must be 'avg', 'worst' or one of {domains}, got {cfg.target!r}")
    budget = proxy_cfg.steps * proxy_cfg.batch_size * proxy_cfg.seq_len
    caps = epoch_caps(avail, budget, cfg.max_epochs)
    rng = np.random.default_rng(seed)
    x = sample_mixtures(prior, cfg.num_proxies, concentrations=cfg.concentrations, rng=rng, caps=caps)
    results = train_proxies(pools_dir, [(w, seed) for w in x], proxy_cfg, cache_dir=cache_dir,
                            workers=cfg.workers)
    losses = [r["val_loss"] for r in results]
    y = target_values(losses, cfg.target, tgt_domains)
    fit_idx, held_idx = split_heldout(len(x), cfg.heldout_fraction, np.random.default_rng(seed + 1))
    lgbm, lin, fit = fit_and_score(x, y, fit_idx, held_idx, rounds=cfg.lgbm_rounds, seed=seed)
    # the final regressor uses every run: the held-out scores above measure how well this works
    final = LGBMModel(rounds=cfg.lgbm_rounds, seed=seed).fit(x, y)
    w, info = search(final, prior, candidates=cfg.candidates, top_k=cfg.top_k,
                     concentrations=cfg.concentrations, rng=np.random.default_rng(seed + 2), caps=caps)
    info["predicted_prior"] = float(final.predict(prior[None])[0])
    info["predicted_chosen"] = float(final.predict(w[None])[0])
    report = {
        "domains": domains, "target": cfg.target, "target_domains": tgt_domains, "fit": fit,
        "search": info, "prior": prior.tolist(), "caps": caps.tolist(), "budget_tokens": int(budget),
        "runs": [{"weights": xi.tolist(), "val_loss": li, "target": float(yi), "heldout": bool(i in set(held_idx))}
                 for i, (xi, li, yi) in enumerate(zip(x, losses, y, strict=True))],
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return {"weights": dict(zip(domains, w.tolist(), strict=True)), "report": report}
