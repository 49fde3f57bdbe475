"""Numerics of RegMix (mix/regmix.py): Dirichlet sampling with epoch caps, targets, regression
with held-out scoring, and the candidate search."""

from __future__ import annotations

import numpy as np
import pytest

from mix.regmix import (
    LGBMModel,
    LinearModel,
    RegMixConfig,
    correlations,
    cross_validate,
    epoch_caps,
    kfold,
    make_regressor,
    sample_mixtures,
    search,
    target_values,
)


def test_dirichlet_samples_are_on_simplex_centred_on_prior_and_capped():
    rng = np.random.default_rng(0)
    prior = np.array([0.5, 0.3, 0.2])
    w = sample_mixtures(prior, 20_000, concentrations=[1.0, 3.0], rng=rng)
    assert w.shape == (20_000, 3)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)
    assert (w >= 0).all()
    # Dirichlet(conc * k * prior) has mean = prior
    np.testing.assert_allclose(w.mean(axis=0), prior, atol=0.01)
    # larger concentration -> tighter around the prior
    assert w[1::2].std(axis=0)[0] < w[0::2].std(axis=0)[0]
    caps = epoch_caps(np.array([1000, 200, 50]), budget_tokens=1000, max_epochs=2.0)
    np.testing.assert_allclose(caps, [1.0, 0.4, 0.1])
    wc = sample_mixtures(prior, 2000, concentrations=[1.0], rng=rng, caps=caps)
    assert (wc <= caps + 1e-12).all()


def test_infeasible_caps_are_a_clear_error():
    caps = epoch_caps(np.array([10, 10]), budget_tokens=1000, max_epochs=1.0)
    with pytest.raises(ValueError, match="raise max_epochs"):
        sample_mixtures(np.array([0.5, 0.5]), 5, concentrations=[1.0], rng=np.random.default_rng(0), caps=caps)
    with pytest.raises(ValueError, match="at least 2 domains"):
        sample_mixtures(np.array([1.0]), 5, concentrations=[1.0], rng=np.random.default_rng(0))
    # feasible in principle (caps sum to 1) but almost never drawn: the error names the caps and the
    # search's trust region
    with pytest.raises(ValueError, match=r"within the caps \[0.5, 0.5\].*trust_region"):
        sample_mixtures(np.array([0.5, 0.5]), 5, concentrations=[1.0], rng=np.random.default_rng(0),
                        caps=np.array([0.5, 0.5]), max_tries=3)


def test_targets():
    runs = [{"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 2.5}]
    np.testing.assert_allclose(target_values(runs, "avg", ["a", "b"]), [2.0, 2.25])
    np.testing.assert_allclose(target_values(runs, "worst", ["a", "b"]), [3.0, 2.5])
    np.testing.assert_allclose(target_values(runs, "a", ["a", "b"]), [1.0, 2.0])
    with pytest.raises(ValueError, match="one of"):
        target_values(runs, "c", ["a", "b"])


def test_linear_model_recovers_exact_linear_function():
    rng = np.random.default_rng(1)
    x = sample_mixtures(np.full(4, 0.25), 50, concentrations=[1.0], rng=rng)
    y = x @ np.array([1.0, 2.0, 3.0, 4.0]) + 0.5
    pred = LinearModel().fit(x, y).predict(x)
    np.testing.assert_allclose(pred, y, atol=1e-4)


def _synthetic_losses(x: np.ndarray) -> np.ndarray:
    # loss per domain falls like a power of its weight; noise domain (last) is irreducible
    a = np.array([2.0, 2.5, 3.0, 5.0])
    b = np.array([0.8, 0.6, 1.0, 0.0])
    return (a + b * (x + 1e-3) ** -0.3).mean(axis=1)


def test_lightgbm_ranks_heldout_mixtures_of_a_nonlinear_law_better_than_linear():
    rng = np.random.default_rng(2)
    prior = np.array([0.3, 0.3, 0.2, 0.2])
    x = sample_mixtures(prior, 96, concentrations=[0.3, 1.0, 3.0], rng=rng)
    y = _synthetic_losses(x)
    perm = rng.permutation(len(x))  # 24 held-out runs, never fitted on
    held_idx, fit_idx = np.sort(perm[:24]), np.sort(perm[24:])
    lgbm = LGBMModel(rounds=300, seed=0).fit(x[fit_idx], y[fit_idx])
    lin = LinearModel().fit(x[fit_idx], y[fit_idx])
    rep = {name: correlations(m.predict(x[held_idx]), y[held_idx]) for name, m in (("lightgbm", lgbm), ("linear", lin))}
    assert rep["lightgbm"]["spearman"] >= 0.9
    assert rep["lightgbm"]["spearman"] > rep["linear"]["spearman"]
    w, info = search(lgbm, prior, candidates=100_000, top_k=100, concentrations=[0.3, 1.0, 3.0],
                     rng=np.random.default_rng(3))
    assert w.sum() == pytest.approx(1.0)
    # the noise domain (irreducible loss) gets less than its prior; the searched mixture predicts
    # a lower loss than the prior and truly is better under the law
    assert w[3] < prior[3]
    assert _synthetic_losses(w[None])[0] < _synthetic_losses(prior[None])[0]
    assert info["candidates"] == 100_000 and info["best_predicted"] <= info["topk_mean_predicted"]


def test_cross_validation_never_fits_on_the_run_it_predicts():
    rng = np.random.default_rng(4)
    prior = np.array([0.3, 0.3, 0.2, 0.2])
    x = sample_mixtures(prior, 48, concentrations=[0.3, 1.0, 3.0], rng=rng)
    y = _synthetic_losses(x)
    fold = kfold(len(x), 4, np.random.default_rng(0))
    assert np.bincount(fold).tolist() == [12, 12, 12, 12]
    rep, oof = cross_validate(x, y, fold, rounds=100)
    assert rep["folds"] == 4 and rep["n_heldout"] == 48 and rep["n_fit"] == 36
    # the out-of-fold prediction of run 0 equals a model fitted without run 0's fold
    others = fold != fold[0]
    want = make_regressor("hybrid", rounds=100).fit(x[others], y[others]).predict(x[:1])[0]
    assert oof["hybrid"][0] == pytest.approx(want)
    # on a smooth power law with 48 runs the log-linear-initialised LightGBM ranks held-out runs
    # best; the raw-weight LightGBM and the linear model trail it
    assert rep["hybrid"]["spearman"] >= 0.95
    assert rep["hybrid"]["spearman"] > rep["linear"]["spearman"]
    assert rep["hybrid"]["spearman"] > rep["lightgbm"]["spearman"]
    with pytest.raises(ValueError, match="runs per fold"):
        kfold(10, 4, np.random.default_rng(0))


def test_domainwise_fits_each_target_domain_and_reduces_like_the_target():
    from mix.regmix import DomainwiseModel, OwnShareModel, target_matrix

    rng = np.random.default_rng(8)
    prior = np.array([0.3, 0.3, 0.2, 0.2])
    x = sample_mixtures(prior, 24, concentrations=[0.3, 1.0, 3.0], rng=rng)
    a, b = np.array([2.0, 2.5, 3.0]), np.array([0.8, 0.6, 1.0])
    # three target domains, each falling with its own share; noise of 0.01 on every loss
    ys = a + b * (x[:, :3] + 1e-3) ** -0.3 + rng.normal(0.0, 0.01, (24, 3))
    runs = [dict(zip("abc", row, strict=True)) for row in ys]
    mat, reduce = target_matrix(runs, "avg", ["a", "b", "c"])
    np.testing.assert_allclose(mat, ys)
    assert reduce == "mean" and target_matrix(runs, "worst", ["a", "b", "c"])[1] == "max"
    assert target_matrix(runs, "b", ["a", "b", "c"])[0].shape == (24, 1)
    m = DomainwiseModel("max").fit(x, ys)
    # the prediction is the reduction of one fit per domain: its loss against its own share only
    want = np.max([OwnShareModel(j).fit(x, ys[:, j]).predict(x[:3]) for j in range(3)], axis=0)
    np.testing.assert_allclose(m.predict(x[:3]), want)
    fit_b = OwnShareModel(1).fit(x, ys[:, 1])
    np.testing.assert_allclose(fit_b.predict(x), fit_b.coef[0] + fit_b.coef[1] * np.log(x[:, 1] + fit_b.eps))
    assert fit_b.coef[1] < 0  # more of a domain, lower its loss
    # columns: loss j belongs to weight column cols[j]
    swapped = DomainwiseModel("mean", cols=[2, 1, 0]).fit(x, ys[:, ::-1])
    np.testing.assert_allclose(swapped.predict(x), DomainwiseModel("mean").fit(x, ys).predict(x))
    fold = kfold(24, 4, np.random.default_rng(0))
    rep, oof = cross_validate(x, ys.mean(axis=1), fold, rounds=100, ys=ys, reduce="mean")
    others = fold != fold[0]
    assert oof["domainwise"][0] == pytest.approx(DomainwiseModel().fit(x[others], ys[others]).predict(x[:1])[0])
    # 18 fitting runs per fold, each domain's loss a function of its own share: the per-domain
    # fits rank held-out runs at least as well as one fit of the average, and better than raw-weight trees
    assert rep["domainwise"]["spearman"] >= 0.9
    assert rep["domainwise"]["spearman"] >= rep["hybrid"]["spearman"] - 0.02
    assert rep["domainwise"]["spearman"] > rep["lightgbm"]["spearman"]


def test_config_validation():
    with pytest.raises(ValueError, match="num_proxies"):
        RegMixConfig(num_proxies=4).validate()
    with pytest.raises(ValueError, match="top_k"):
        RegMixConfig(candidates=10, top_k=20).validate()
    with pytest.raises(ValueError, match="regressor"):
        RegMixConfig(regressor="xgboost").validate()
    with pytest.raises(ValueError, match="cv_folds"):
        RegMixConfig(cv_folds=1).validate()


# ----------------------------------------------------------------------------- end to end (tiny pools)

def test_regmix_cli_trains_scores_searches_and_resumes(tmp_path):
    import json

    from bench.lib.pools import write_pools
    from corpusmix.cli import main
    from corpusmix.mixture import load_mixture

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})
    out = tmp_path / "out" / "mixture.json"
    argv = ["mix", "regmix", "--input", str(pools), "--output", str(out), "--preset", "micro",
            "--params", str(tmp_path / "none.yaml"), "--proxy-steps", "10", "--proxy-batch-size", "4",
            "--proxy-seq-len", "32", "--proxy-val-batches", "1", "--num-proxies", "8",
            "--candidates", "2000", "--top-k", "20", "--target", "worst", "--max-epochs", "50",
            "--final-tokens", "20000", "--regressor", "auto"]
    assert main(argv) == 0
    mix = load_mixture(out, ["a", "b", "c"])
    assert mix.method == "regmix" and mix.params["regmix"]["target"] == "worst"
    rep = json.loads((tmp_path / "out" / "regmix_report.json").read_text())
    # 8 runs: 2 folds of 4; every run predicted while held out, by every regressor
    assert len(rep["runs"]) == 8 and rep["fit"]["folds"] == 2 and rep["fit"]["n_heldout"] == 8
    assert sorted(r["fold"] for r in rep["runs"]) == [0, 0, 0, 0, 1, 1, 1, 1]
    assert all(set(r["predicted_heldout"]) == {"hybrid", "lightgbm", "linear", "domainwise"} for r in rep["runs"])
    # auto: the search uses the regressor with the best out-of-fold Spearman over the better half of
    # the runs (all four reported, over all runs and over that half)
    best = max(("hybrid", "lightgbm", "linear", "domainwise"), key=lambda n: rep["fit"][n]["spearman_better_half"])
    assert rep["fit"]["regressor_setting"] == "auto"
    assert rep["fit"][rep["fit"]["regressor"]]["spearman_better_half"] == rep["fit"][best]["spearman_better_half"]
    assert all(-1 <= rep["fit"][n]["spearman"] <= 1 for n in ("hybrid", "lightgbm", "linear", "domainwise"))
    # the search's cost: 8 proxies of 10 steps x 4 rows x 32 tokens, FLOPs at flops_per_token
    assert rep["cost"]["proxy_runs"] == 8 and rep["cost"]["tokens"] == 8 * 10 * 4 * 32
    assert rep["cost"]["flops"] > 6 * rep["cost"]["tokens"] and mix.provenance["cost"] == rep["cost"]
    # the top-k mean is refined on the fitted surface: never predicted worse than before
    srch = rep["search"]
    assert srch["refined"] and srch["predicted_chosen"] <= srch["topk_mean_predicted"] + 0.02
    assert srch["predicted_chosen"] == pytest.approx(srch["predicted_refined"])
    # caps are for the final run's budget (--final-tokens), on the training split's tokens
    assert rep["budget_tokens"] == 20000 and rep["max_epochs"] == 50
    np.testing.assert_allclose(rep["caps"], np.minimum(1, 50 * np.array(
        [rep["train_tokens"][d] for d in rep["domains"]]) / 20000))
    for r in rep["runs"]:  # target = worst domain's validation loss of that run
        assert r["target"] == pytest.approx(max(r["val_loss"].values()))
        assert sum(r["weights"]) == pytest.approx(1.0)
    assert set(rep["fit"]["lightgbm"]) >= {"spearman", "pearson"}
    assert rep["search"]["candidates"] == 2000
    # trust region: no chosen weight beyond the largest weight any proxy run gave that domain
    run_max = np.max([r["weights"] for r in rep["runs"]], axis=0)
    assert rep["search"]["trust_region"] is True
    assert rep["search"]["search_caps"] == pytest.approx(np.minimum(rep["caps"], run_max).tolist())
    assert all(mix.weights[d] <= run_max[i] + 1e-9 for i, d in enumerate(rep["domains"]))
    cached = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "proxies").iterdir()}
    assert len(cached) == 8
    # resumable: a second run retrains nothing and gives the same mixture
    assert main(argv[:5] + [str(tmp_path / "out" / "again.json")] + argv[6:]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "proxies").iterdir()} == cached
    assert load_mixture(tmp_path / "out" / "again.json").weights == mix.weights


def test_compare_is_paired_over_seeds():
    from mix.ablation import compare

    # c is lower than a in every seed by ~0.01, while each arm's own seed range is 0.2: an unpaired
    # rule calls that noise, the paired one sees it; b vs a differs by +-0.1 in alternate seeds
    a = [5.0, 5.2, 5.1, 5.05, 5.15]
    rows = compare({"a": {"avg_per_seed": a}, "b": {"avg_per_seed": [x + (0.1 if i % 2 else -0.1) for i, x in
                                                                     enumerate(a)]},
                    "c": {"avg_per_seed": [x - 0.01 - 0.001 * i for i, x in enumerate(a)]}})
    got = {(r["a"], r["b"]): r for r in rows}
    assert set(got) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert got[("a", "c")]["verdict"] == "worse" and got[("a", "c")]["wins"] == 0
    assert got[("a", "c")]["ci"][1] < 0 < got[("a", "c")]["losses"]
    assert got[("a", "b")]["verdict"] == "no difference shown"
    assert all(r["p_holm"] >= r["t_p"] for r in rows)


def test_ablation_cli_reports_per_seed_losses_and_spread(tmp_path):
    import json

    from bench.lib.pools import write_pools
    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 4000, "b": 4000})
    manual = tmp_path / "manual.json"
    manual.write_text(json.dumps({"weights": {"a": 0.9, "b": 0.1}, "method": "manual"}))
    out = tmp_path / "ablation.json"
    assert main(["mix", "ablation", "--input", str(pools), "--output", str(out), "--preset", "micro",
                 "--params", str(tmp_path / "none.yaml"), "--proxy-steps", "8", "--proxy-batch-size", "4",
                 "--proxy-seq-len", "32", "--proxy-val-batches", "1", "--seeds", "2", "--workers", "1",
                 "--mixture", "uniform", "--mixture", f"skewed={manual}"]) == 0
    rep = json.loads(out.read_text())
    # seeds no search proxy uses; scored on the evaluation split
    assert set(rep["mixtures"]) == {"uniform", "skewed"} and rep["seeds"] == [1000, 1001]
    assert rep["eval_split"] == "eval" and len(rep["verdicts"]) == 1
    c = rep["comparisons"][0]
    assert c["verdict"] in ("better", "worse", "no difference shown") and c["n"] == 2
    assert (c["verdict"] == "no difference shown") == ("no difference shown" in rep["verdicts"][0])
    s = rep["mixtures"]["skewed"]
    assert s["weights"] == {"a": 0.9, "b": 0.1}
    per_seed = [np.mean(list(s["seeds"][k]["val_loss"].values())) for k in ("1000", "1001")]
    assert s["avg_per_seed"] == pytest.approx(per_seed, abs=1e-5)
    assert s["avg_range"] == pytest.approx(abs(per_seed[0] - per_seed[1]), abs=1e-5)
    assert len(rep["comparisons"]) == 1


def test_bad_targets_empty_eval_split_and_empty_simplex_are_clear_errors(tmp_path, capsys):
    import json

    from bench.lib.pools import write_pools
    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 4000, "b": 4000})
    base = ["--preset", "micro", "--proxy-steps", "2", "--proxy-batch-size", "2", "--proxy-seq-len", "16",
            "--proxy-val-batches", "1"]
    params = tmp_path / "params.yaml"
    params.write_text("mix:\n  target_domains: [a, web]\n")
    rc = main(["mix", "regmix", "--input", str(pools), "--output", str(tmp_path / "m.json"),
               "--params", str(params), *base])
    assert rc == 2 and "target domain(s) ['web'] are not in the pools" in capsys.readouterr().err
    params.write_text("mix:\n  garbage_domains: [a, b]\n")
    rc = main(["mix", "ablation", "--input", str(pools), "--output", str(tmp_path / "x.json"),
               "--params", str(params), *base])
    assert rc == 2 and "mix.target_domains" in capsys.readouterr().err
    # caps from the final run's budget that no mixture fits
    rc = main(["mix", "regmix", "--input", str(pools), "--output", str(tmp_path / "m.json"),
               "--params", str(tmp_path / "none.yaml"), *base, "--final-tokens", "100000000", "--max-epochs", "1"])
    assert rc == 2 and "pack.tokens" in capsys.readouterr().err
    # pools without an evaluation split
    meta = json.loads((pools / "pools.json").read_text())
    for m in meta["domains"].values():
        m["eval_docs"] = 0
    (pools / "pools.json").write_text(json.dumps(meta))
    rc = main(["mix", "ablation", "--input", str(pools), "--output", str(tmp_path / "x.json"),
               "--params", str(tmp_path / "none.yaml"), *base])
    assert rc == 2 and "pools.eval_fraction" in capsys.readouterr().err


def test_refine_finds_the_fitted_optimum_within_caps():
    from mix.regmix import refine

    class Bowl:  # predicted target: squared distance to a known mixture
        def __init__(self, best):
            self.best = np.asarray(best)

        def predict(self, x):
            return ((np.asarray(x) - self.best) ** 2).sum(axis=1)

    best = np.array([0.5, 0.3, 0.2, 0.0])
    got = refine(Bowl(best), np.full(4, 0.25))
    np.testing.assert_allclose(got, best, atol=0.01)
    assert got.sum() == pytest.approx(1.0) and got.min() >= 0
    capped = refine(Bowl(best), np.full(4, 0.25), caps=np.array([0.4, 1, 1, 1]))
    assert capped[0] <= 0.4 + 1e-12 and capped.sum() == pytest.approx(1.0)
