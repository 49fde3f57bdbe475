"""RegMix: mixture search by regression over many tiny proxy runs (Liu et al. 2024, "RegMix: Data
Mixture as Regression for Language Model Pre-training").

Run as ``corpusmix mix regmix --input POOLS_DIR --output mixture.json``; the proxies are trained by
:func:`mix.proxy.train_proxies` (parallel, cached, resumable); this module holds the numerics:

1. :func:`sample_mixtures`: ``M`` mixtures, Dirichlet draws around the token shares (``sampling:
   natural``, the paper), around equal weights (``uniform``), alternately (``mixed``, the default),
   or a Sobol design over the simplex; a mixture that would need more than ``max_epochs`` passes
   over a domain in the FINAL run (``final_tokens``) is rejected, so ``pack`` can materialise it.
2. :func:`target_values` / :func:`target_matrix`: the target, the mean (``avg``) or max
   (``worst``) search-validation loss over the target domains (:mod:`mix.targets`), or one domain's.
3. :func:`cross_validate`: every regressor (``REGRESSORS``) scored by K-fold out-of-fold
   predictions: Spearman/Pearson/MAE over all runs and Spearman over the better half.
4. :func:`search`: candidates sampled like the runs, predicted by the configured regressor fitted
   on all runs; the ``top_k`` best are averaged; :func:`refine` then moves weight between pairs of
   domains while the predicted target falls. ``trust_region`` keeps every weight within the range
   the runs covered.

The default regressor is ``domainwise``: each target domain's loss against the log of its own
share, reduced like the target. It cannot see transfer between domains, and it is the form whose
optimum puts nothing on a domain that no target gains from (junk); regressors over all shares
(``hybrid``, ``lightgbm``, ``linear``; ``auto`` = the best out-of-fold Spearman over the better half
of the runs) are kept and always scored. docs/mix.md gives the measurements behind the defaults and
the differences from the paper (far fewer, smaller proxies; K-fold scoring instead of separate runs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mix.regressors import (  # noqa: F401  (re-exported: the search's regressors)
    REGRESSORS,
    DomainwiseModel,
    LGBMModel,
    LinearModel,
    LogLinearModel,
    OwnShareModel,
    correlations,
    fit_regressor,
    make_regressor,
    reduce_rows,
)

# where the proxy runs' (and the search's candidate) mixtures are drawn from (RegMixConfig.sampling)
SAMPLINGS = ("natural", "uniform", "mixed", "sobol")
SEARCH_REGRESSORS = ("auto", *REGRESSORS)


@dataclass
class RegMixConfig:
    """RegMix hyper-parameters (``params.yaml`` section ``mix.regmix``)."""

    num_proxies: int = field(default=32, metadata={"help": "M: number of proxy runs"})
    concentrations: list[float] = field(
        default_factory=lambda: [0.3, 1.0, 3.0],
        metadata={"help": "grid of Dirichlet concentrations around the sampling's centre (natural, uniform)"})
    sampling: str = field(default="mixed", metadata={
        "help": "where run and candidate mixtures are drawn: natural (Dirichlet around the token shares, the paper) "
                "| uniform (around equal weights: the whole simplex) | mixed (alternately natural and uniform) | "
                "sobol (a scrambled Sobol design, uniform over the simplex)"})
    max_epochs: float = field(default=4.0, metadata={
        "help": "cap: passes over a domain's training tokens in the final run (the CLI uses pack.max_epochs)"})
    final_tokens: int = field(default=0, metadata={
        "help": "token budget of the final run the caps are for (the CLI uses pack.tokens; 0 = the proxy's)"})
    cv_folds: int = field(default=4, metadata={
        "help": "K-fold scoring: every run is predicted by regressors fitted on the other folds only "
                "(at most num_proxies // 3 folds are used)"})
    regressor: str = field(default="domainwise", metadata={
        "help": "regressor of the search: domainwise (per target domain: its loss against the log of its own "
                "share, reduced like the target) | auto (best out-of-fold Spearman over the better half of the "
                "runs) | hybrid (LightGBM boosted from a log-linear init score) | lightgbm (raw weights, as the "
                "paper) | linear"})
    target: str = field(default="avg", metadata={"help": "avg | worst | <domain name>"})
    target_domains: list[str] = field(
        default_factory=list, metadata={"help": "domains avg/worst are taken over (empty = all)"})
    candidates: int = field(default=100_000, metadata={"help": "mixtures searched"})
    top_k: int = field(default=100, metadata={"help": "best candidates averaged"})
    refine: bool = field(default=True, metadata={
        "help": "after the top-k mean, a local search on the fitted surface (weight moved between pairs of "
                "domains while the predicted target falls; within the trust region and caps)"})
    trust_region: bool = field(default=True, metadata={
        "help": "search only mixtures whose every weight lies within the range the proxy runs covered "
                "(per domain, up to the largest weight any run gave it): no extrapolation"})
    workers: int = field(default=2, metadata={"help": "parallel proxy processes"})
    lgbm_rounds: int = field(default=300, metadata={"help": "LightGBM boosting rounds (fixed)"})

    def validate(self) -> None:
        if self.num_proxies < 8:
            raise ValueError(f"regmix num_proxies must be >= 8 to hold out runs, got {self.num_proxies}")
        if not self.concentrations or any(c <= 0 for c in self.concentrations):
            raise ValueError(f"regmix concentrations must be positive, got {self.concentrations}")
        if self.cv_folds < 2:
            raise ValueError(f"regmix cv_folds must be >= 2, got {self.cv_folds}")
        if self.sampling not in SAMPLINGS:
            raise ValueError(f"regmix sampling must be one of {SAMPLINGS}, got {self.sampling!r}")
        if self.regressor not in SEARCH_REGRESSORS:
            raise ValueError(f"regmix regressor must be one of {SEARCH_REGRESSORS}, got {self.regressor!r}")
        if self.final_tokens < 0:
            raise ValueError(f"regmix final_tokens must be >= 0, got {self.final_tokens}")
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
                    caps: np.ndarray | None = None, max_tries: int = 1000, sampling: str = "natural") -> np.ndarray:
    """``n`` mixtures ``[n, k]``: ``Dirichlet(conc * k * centre)``, conc cycling over the grid and
    the centre set by ``sampling`` (``natural``: the token-share ``prior``; ``uniform``: equal
    weights; ``mixed``: the two alternately), or (``sobol``) a scrambled Sobol design mapped to the
    simplex (uniform spacings of sorted coordinates).

    Mixtures with a weight above its cap are resampled (rejection, vectorised); if the caps make
    the simplex nearly empty this raises with the fix instead of looping forever.
    """
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
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
                f"the epoch caps {np.round(caps, 3).tolist()} sum to {caps.sum():.3f} < 1: no mixture fits "
                "the final run's budget; raise max_epochs (pack.max_epochs), lower the token budget "
                "(pack.tokens), or add tokens")
    concs = np.asarray(concentrations, dtype=np.float64)
    conc_of = concs[np.arange(n) % concs.size]
    centre = np.tile(prior, (n, 1))
    if sampling == "uniform":
        centre[:] = 1.0 / k
    elif sampling == "mixed":  # odd draws around equal weights: every concentration meets both centres
        centre[(np.arange(n) // concs.size) % 2 == 1] = 1.0 / k
    out = np.empty((n, k))
    todo = np.arange(n)
    for _ in range(max_tries):
        if sampling == "sobol":
            draws = _sobol_simplex(todo.size, k, rng)
        else:
            draws = rng.gamma(conc_of[todo, None] * k * centre[todo])
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
        f"could not sample {todo.size} of {n} mixtures within the caps "
        f"{None if caps is None else np.round(caps, 3).tolist()} after "
        f"{max_tries} tries; raise max_epochs, use larger concentrations, or (search only) train more "
        "proxies or set trust_region: false")


def _sobol_simplex(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` points of a scrambled Sobol sequence in ``[0, 1)^(k-1)`` mapped to the simplex: the
    spacings of the sorted coordinates (with 0 and 1) are uniformly distributed on the simplex."""
    import warnings

    from scipy.stats import qmc

    with warnings.catch_warnings():  # n need not be a power of 2 for a design this size
        warnings.simplefilter("ignore", UserWarning)
        u = qmc.Sobol(d=k - 1, scramble=True, seed=rng).random(n)
    edges = np.hstack([np.zeros((n, 1)), np.sort(u, axis=1), np.ones((n, 1))])
    return np.diff(edges, axis=1)


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


def target_matrix(val_losses: list[dict[str, float]], target: str, domains: list[str]) -> tuple[np.ndarray, str]:
    """Per-domain losses ``[runs, T]`` the target is reduced from, and the reduction: ``mean``
    (``avg``), ``max`` (``worst``), or one domain's column (``single``). ``target_values`` is this
    matrix reduced."""
    if target not in ("avg", "worst") and target not in domains:
        raise ValueError(f"regmix target must be 'avg', 'worst' or one of {domains}, got {target!r}")
    cols = domains if target in ("avg", "worst") else [target]
    rows = np.array([[run[d] for d in cols] for run in val_losses], dtype=np.float64)
    return rows, {"avg": "mean", "worst": "max"}.get(target, "single")


def kfold(n: int, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold index per run: a seeded permutation cut into ``folds`` near-equal parts."""
    if folds < 2 or n < 3 * folds:
        raise ValueError(f"need >= 3 runs per fold: {n} runs, {folds} folds")
    fold = np.empty(n, dtype=np.int64)
    fold[rng.permutation(n)] = np.arange(n) % folds
    return fold


def cross_validate(x: np.ndarray, y: np.ndarray, fold: np.ndarray, *, rounds: int = 300, seed: int = 0,
                   ys: np.ndarray | None = None, reduce: str = "mean", cols: list[int] | None = None):
    """Out-of-fold predictions of every regressor: run ``i`` is predicted by a model fitted on the
    other folds only (never on ``i``; nothing stops early). ``ys``/``reduce``: the per-domain
    losses the target is reduced from (:func:`target_matrix`; ``domainwise`` fits them). Returns
    ``(report, oof)`` with Spearman/Pearson/MAE of each regressor over all runs' held-out
    predictions."""
    names = [n for n in REGRESSORS if ys is not None or n != "domainwise"]
    oof = {name: np.empty(len(y)) for name in names}
    for f in np.unique(fold):
        fit_idx, held_idx = np.flatnonzero(fold != f), np.flatnonzero(fold == f)
        assert len(np.intersect1d(fit_idx, held_idx)) == 0, "held-out runs leaked into fitting"
        for name in names:
            oof[name][held_idx] = fit_regressor(
                name, x[fit_idx], y[fit_idx], None if ys is None else ys[fit_idx], reduce=reduce, cols=cols,
                rounds=rounds, seed=seed).predict(x[held_idx])
    n_folds = int(len(np.unique(fold)))
    report = {name: correlations(oof[name], y) for name in names}
    better = np.argsort(y, kind="stable")[: max(3, len(y) // 2)]  # the runs with the lower half of targets
    for name in names:
        report[name]["spearman_better_half"] = correlations(oof[name][better], y[better])["spearman"]
    report.update({"folds": n_folds, "n_runs": int(len(y)), "n_heldout": int(len(y)),
                   "n_fit": int(len(y) - np.bincount(fold).max())})
    return report, oof


def search(model, prior: np.ndarray, *, candidates: int, top_k: int, concentrations: list[float],
           rng: np.random.Generator, caps: np.ndarray | None = None, batch: int = 50_000,
           sampling: str = "natural"):
    """Predict the target of ``candidates`` mixtures sampled like the runs (``sampling``); average
    the ``top_k`` lowest.

    Returns ``(weights, info)``; ``info`` has the best candidate (its weights and predicted target),
    the top-k mean predicted target and the predicted target of the average (``predicted_chosen``).
    """
    best_w = np.empty((0, np.asarray(prior).size))
    best_p = np.empty(0)
    done = 0
    while done < candidates:
        n = min(batch, candidates - done)
        cand = sample_mixtures(prior, n, concentrations=concentrations, rng=rng, caps=caps, sampling=sampling)
        pred = model.predict(cand)
        best_w = np.vstack([best_w, cand])
        best_p = np.concatenate([best_p, pred])
        keep = np.argsort(best_p, kind="stable")[:top_k]
        best_w, best_p = best_w[keep], best_p[keep]
        done += n
    w = best_w.mean(axis=0)
    w /= w.sum()
    chosen = float(model.predict(w[None])[0])
    return w, {"candidates": int(candidates), "top_k": int(top_k), "sampling": sampling,
               "best_weights": best_w[0].tolist(), "best_predicted": float(best_p[0]),
               "topk_mean_predicted": float(best_p.mean()), "predicted_chosen": chosen,
               "predicted_gap_chosen_vs_best": chosen - float(best_p[0])}


def refine(model, w: np.ndarray, caps: np.ndarray | None = None, *,
           steps: tuple[float, ...] = (0.2, 0.1, 0.05, 0.02, 0.01, 0.005), max_moves: int = 500) -> np.ndarray:
    """Local search on the fitted surface from ``w``: move weight between two domains (``step`` of
    it, or all of a domain's weight), keep a move when the predicted target falls, shrink the step
    when no move helps. Stays on the simplex and under ``caps``; deterministic."""
    k = w.size
    caps = np.ones(k) if caps is None else np.asarray(caps, dtype=np.float64)
    cur = np.asarray(w, dtype=np.float64).copy()
    f = float(model.predict(cur[None])[0])
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    moves = 0
    for step in steps:
        while moves < max_moves:
            cands = []
            for i, j in pairs:
                room = caps[j] - cur[j]
                for m in {min(step, cur[i], room), min(cur[i], room)}:
                    if m > 1e-12:
                        c = cur.copy()
                        c[i] -= m
                        c[j] += m
                        cands.append(c)
            if not cands:
                break
            pred = model.predict(np.array(cands))
            b = int(np.argmin(pred))
            if pred[b] >= f - 1e-9:
                break
            cur, f = np.clip(cands[b], 0.0, None), float(pred[b])
            cur /= cur.sum()
            moves += 1
    return cur


def choose_regressor(fit: dict, configured: str) -> str:
    """The search's regressor: ``configured``, or with ``auto`` the best out-of-fold Spearman over
    the better half of the runs (``spearman_better_half``: the search needs the order among good
    mixtures, not how bad the worst are; ties: the order of ``REGRESSORS``)."""
    if configured != "auto":
        return configured
    return max((n for n in REGRESSORS if n in fit),
               key=lambda name: (fit[name]["spearman_better_half"], -REGRESSORS.index(name)))


def run_regmix(pools_dir, cfg: RegMixConfig, proxy_cfg, *, seed: int = 0, cache_dir,
               targets: list[str] | None = None) -> dict:
    """Full RegMix on a token-pools folder: sample, train (cached, parallel), fit, score, search.

    ``targets``: the domains of the target (default ``cfg.target_domains``, else all; the CLI
    passes :func:`mix.targets.resolve_targets`). Returns ``{"weights": {domain: w}, "report":
    {...}}``; the report holds the out-of-fold fit scores (``fit``), the search summary, the caps
    and every run's weights, losses and target.
    """
    import time

    from mix.proxy import pool_domains, train_proxies

    cfg.validate()
    t0 = time.perf_counter()
    tokens = pool_domains(pools_dir)  # training-split tokens: what a mixture can draw on
    domains = list(tokens)
    avail = np.array([tokens[d] for d in domains], dtype=np.float64)
    prior = avail / avail.sum()
    tgt_domains = list(targets or cfg.target_domains) or domains
    unknown = sorted(set(tgt_domains) - set(domains))
    if unknown:
        raise ValueError(f"regmix target_domains {unknown} are not in the pools {domains}")
    if cfg.target not in ("avg", "worst") and cfg.target not in domains:
        raise ValueError(f"regmix target must be 'avg', 'worst' or one of {domains}, got {cfg.target!r}")
    proxy_budget = proxy_cfg.steps * proxy_cfg.batch_size * proxy_cfg.seq_len
    budget = int(cfg.final_tokens) or proxy_budget
    caps = epoch_caps(avail, budget, cfg.max_epochs)
    if caps.sum() < 1.0:
        raise ValueError(
            f"the epoch caps {dict(zip(domains, np.round(caps, 3).tolist(), strict=True))} sum to "
            f"{caps.sum():.3f} < 1: no mixture of {budget} tokens fits {cfg.max_epochs} epochs of the "
            "training tokens; raise pack.max_epochs, lower pack.tokens, or add data")
    rng = np.random.default_rng(seed)
    x = sample_mixtures(prior, cfg.num_proxies, concentrations=cfg.concentrations, rng=rng, caps=caps,
                        sampling=cfg.sampling)
    results = train_proxies(pools_dir, [(w, seed) for w in x], proxy_cfg, cache_dir=cache_dir,
                            workers=cfg.workers)
    losses = [r["val_loss"] for r in results]
    y = target_values(losses, cfg.target, tgt_domains)
    ys, reduce = target_matrix(losses, cfg.target, tgt_domains)
    cols = [domains.index(d) for d in (tgt_domains if cfg.target in ("avg", "worst") else [cfg.target])]
    # at least 3 runs per fold (fewer folds for small M)
    fold = kfold(len(x), min(cfg.cv_folds, len(x) // 3), np.random.default_rng(seed + 1))
    fit, oof = cross_validate(x, y, fold, rounds=cfg.lgbm_rounds, seed=seed, ys=ys, reduce=reduce, cols=cols)
    chosen = choose_regressor(fit, cfg.regressor)
    fit["regressor"] = chosen
    fit["regressor_setting"] = cfg.regressor
    # the final regressor uses every run: the out-of-fold scores above measure how well this works
    final = fit_regressor(chosen, x, y, ys, reduce=reduce, cols=cols, rounds=cfg.lgbm_rounds, seed=seed)
    w, info = _search_fitted(final, cfg, x, prior, caps, seed=seed)
    from mix.proxy import pools_vocab, proxy_flops

    one = proxy_flops(proxy_cfg, pools_vocab(pools_dir), rows=proxy_cfg.batch_size, steps=proxy_cfg.steps)
    report = {
        "cost": {"proxy_runs": int(len(x)), "tokens": int(len(x) * proxy_budget), "flops": float(len(x) * one)},
        "domains": domains, "target": cfg.target, "target_domains": tgt_domains, "fit": fit,
        "search": info, "prior": prior.tolist(), "caps": caps.tolist(), "budget_tokens": int(budget),
        "proxy_budget_tokens": int(proxy_budget), "max_epochs": float(cfg.max_epochs),
        "train_tokens": dict(zip(domains, avail.astype(int).tolist(), strict=True)),
        "runs": [{"weights": xi.tolist(), "val_loss": li, "target": float(yi), "fold": int(fold[i]),
                  "predicted_heldout": {name: float(oof[name][i]) for name in REGRESSORS}}
                 for i, (xi, li, yi) in enumerate(zip(x, losses, y, strict=True))],
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return {"weights": dict(zip(domains, w.tolist(), strict=True)), "report": report}


def _search_fitted(final, cfg: RegMixConfig, x: np.ndarray, prior: np.ndarray, caps: np.ndarray, *,
                   seed: int) -> tuple[np.ndarray, dict]:
    """The mixture the fitted regressor ``final`` predicts best (:func:`search`, then :func:`refine`
    when ``cfg.refine``) and the search summary with the predictions of the chosen, prior and
    uniform mixtures."""
    # each row of x sums to 1, so the per-domain maxima sum to >= 1 and the region is never empty
    search_caps = np.minimum(caps, x.max(axis=0)) if cfg.trust_region else caps
    w, info = search(final, prior, candidates=cfg.candidates, top_k=cfg.top_k,
                     concentrations=cfg.concentrations, rng=np.random.default_rng(seed + 2),
                     caps=search_caps, sampling=cfg.sampling)
    if cfg.refine:
        info["topk_mean_weights"] = w.tolist()
        w = refine(final, w, search_caps)
        info["predicted_refined"] = float(final.predict(w[None])[0])
        info["predicted_gap_refined_vs_best"] = info["predicted_refined"] - info["best_predicted"]
    info["predicted_chosen"] = float(final.predict(w[None])[0])
    info["refined"] = bool(cfg.refine)
    info["trust_region"] = bool(cfg.trust_region)
    info["search_caps"] = search_caps.tolist()
    info["predicted_prior"] = float(final.predict(prior[None])[0])
    info["predicted_uniform"] = float(final.predict(np.full((1, len(prior)), 1.0 / len(prior)))[0])
    return w, info
