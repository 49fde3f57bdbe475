"""The Kaplan et al. 2020 law form, its numeric frontier, and ``form: auto`` (synthetic runs, no training)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from corpusmix.cli import main
from proxytrain.scaling_fit.auto import compare_forms
from proxytrain.scaling_fit.checks import design_checks
from proxytrain.scaling_fit.config import FitConfig, FitError
from proxytrain.scaling_fit.fit import fit_scaling, predict
from proxytrain.scaling_fit.forms import frontier, law
from proxytrain.scaling_fit.kaplan import objective as kaplan_objective

# made up, in the range of the benchmark's losses; both terms of the bracket matter over the design
KAPLAN = {"E": 2.5, "N_c": 2e4, "D_c": 2e5, "alpha_N": 0.45, "alpha_D": 0.3}
HOFFMANN = {"E": 3.1, "A": 180.0, "B": 2400.0, "alpha": 0.45, "beta": 0.5}
SIZES = (6184, 16464, 26232, 43168, 80112)
TOKENS = (196608, 294912, 393216, 589824)


def _synthetic(c: dict, noise: float, seed: int = 0, sizes: tuple = SIZES, tokens: tuple = TOKENS) -> list[dict]:
    """The benchmark's design scored by a known law, with log-normal noise of relative size ``noise``."""
    rng = np.random.default_rng(seed)
    return [{"N": n, "D": d, "lr": 1e-2, "status": "ok", "batch_size": 8, "seq_len": 128,
             "loss": float(law(c, n, d) * math.exp(noise * rng.standard_normal()))} for n in sizes for d in tokens]


def test_kaplan_law_shape():
    # the size effect grows with D: at small D the data term dominates, at large D N binds
    gap = [law(KAPLAN, SIZES[0], d) - law(KAPLAN, SIZES[-1], d) for d in (1e4, 1e5, 1e7)]
    assert 0 < gap[0] < gap[1] < gap[2]
    # E -> 0 is Kaplan's own form; at D -> infinity the loss is E + (N_c/N)^alpha_N
    assert law(KAPLAN, 1e4, 1e30) == pytest.approx(2.5 + (2e4 / 1e4) ** 0.45)


def test_kaplan_objective_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    logn, logd = np.log(rng.uniform(1e4, 1e5, 9)), np.log(rng.uniform(1e5, 1e6, 9))
    logl = np.log(rng.uniform(3, 5, 9))
    for delta in (1e-3, 1e-1):
        theta = np.array([12.0, 14.0, 1.3, 0.3, 0.5])
        _, g = kaplan_objective(theta, logn, logd, logl, delta)
        eps = 1e-6
        num = [(kaplan_objective(theta + eps * e, logn, logd, logl, delta)[0]
                - kaplan_objective(theta - eps * e, logn, logd, logl, delta)[0]) / (2 * eps) for e in np.eye(5)]
        np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-3)


def test_kaplan_fit_recovers_known_constants():
    exact = fit_scaling(_synthetic(KAPLAN, 0.0), FitConfig(bootstrap=0, starts=2, form="kaplan"))
    assert exact["form"] == "kaplan" and exact["law"].startswith("L(N,D)")
    for k, v in KAPLAN.items():
        assert exact["constants"][k] == pytest.approx(v, rel=1e-3), k
    # 0.3 % loss noise (the measured seed noise is 0.02-0.04 %): exponents close, a run at 4x C_max predicted
    noisy = fit_scaling(_synthetic(KAPLAN, 0.003, seed=1), FitConfig(bootstrap=8, starts=2, form="kaplan"))
    assert noisy["constants"]["alpha_N"] == pytest.approx(0.45, abs=0.1)
    assert noisy["constants"]["alpha_D"] == pytest.approx(0.3, abs=0.1)
    n, d = 271_000, 737_280
    assert 6 * n * d / noisy["C_max"] > 4
    p, true = predict(noisy, n=n, d=d), float(law(KAPLAN, n, d))
    assert abs(p["loss"] - true) / true < 0.01
    assert p["interval"][0] < true < p["interval"][1]
    assert set(noisy["intervals"]) == set(KAPLAN)


def test_kaplan_frontier_matches_a_brute_force_grid():
    for c in (KAPLAN, {**KAPLAN, "E": 0.0, "alpha_N": 0.076, "alpha_D": 0.095, "N_c": 8.8e13, "D_c": 5.4e13}):
        for flops in (1e12, 1e15, 1e21):
            n_opt, d_opt = frontier(c, flops)
            assert 6 * n_opt * d_opt == pytest.approx(flops)
            ns = np.geomspace(1.0, flops / 6, 200_001)
            brute = ns[np.argmin(law(c, ns, flops / (6 * ns)))]
            assert n_opt == pytest.approx(brute, rel=2e-3)
            # the bracket's minimum in closed form: N* = (r N_c^r C / (6 D_c))^(1/(r+1)), r = alpha_N/alpha_D
            r = c["alpha_N"] / c["alpha_D"]
            assert n_opt == pytest.approx((r * c["N_c"] ** r * flops / (6 * c["D_c"])) ** (1 / (r + 1)), rel=1e-5)
    ns, ds = frontier(KAPLAN, np.array([1e12, 1e15]))  # arrays in, arrays out
    assert ns.shape == (2,) and ns[1] > ns[0] and ds[1] > ds[0]
    p = predict(fit_scaling(_synthetic(KAPLAN, 0.0), FitConfig(bootstrap=0, starts=2, form="kaplan")), flops=1e13)
    assert p["loss"] < law(KAPLAN, p["N"] * 4, p["D"] / 4) and p["loss"] < law(KAPLAN, p["N"] / 4, p["D"] * 4)


@pytest.mark.parametrize("true_form", ["hoffmann", "kaplan"])
def test_auto_picks_the_form_the_runs_come_from(true_form):
    c = HOFFMANN if true_form == "hoffmann" else KAPLAN
    runs = _synthetic(c, 0.002, seed=2, sizes=SIZES[1:])  # 4 sizes x 4 D: every fold keeps 3 sizes, 3 D
    # 4 grid starts: from the single best grid point, scipy >= 1.15's L-BFGS-B (the C port) ends the Hoffmann
    # fit in a local minimum (E ~ 0) where 1.14's Fortran one reached the truth; the default is 16 starts
    sel = compare_forms(runs, FitConfig(starts=4))
    assert sel["chosen"] == true_form
    other = "kaplan" if true_form == "hoffmann" else "hoffmann"
    assert sel["scores"][true_form] < sel["scores"][other]
    assert set(sel["checks"]) == {"hoffmann", "kaplan", "per_d"} and "RMS" in sel["score"]
    assert sel["scores"][true_form] < sel["scores"]["per_d"]  # per_d is a candidate, and loses on joint-form data
    fit = fit_scaling(runs, FitConfig(bootstrap=0, starts=4, form="auto"))
    assert fit["form"] == true_form and fit["form_selection"]["chosen"] == true_form


def test_kaplan_bad_input_gives_clear_errors():
    # loss rises with model size: the fit's N term is dead (or alpha_N not positive): refused, never silent
    rising = [{"N": n, "D": d, "lr": 1e-3, "status": "ok", "loss": 4.0 + 0.3 * math.log(n / 1e4) + 50 / d ** 0.3}
              for n in (1e4, 3e4, 1e5) for d in (3e4, 1e5, 3e5)]
    with pytest.raises(FitError, match="loss does not fall with model size"):
        fit_scaling(rising, FitConfig(bootstrap=0, starts=1, form="kaplan"))
    with pytest.raises(FitError, match="form must be hoffmann, kaplan, per_d or auto"):
        fit_scaling(_synthetic(KAPLAN, 0.0), FitConfig(bootstrap=0, form="chinchilla"))
    with pytest.raises(FitError, match="one form"):
        design_checks(_synthetic(KAPLAN, 0.0), FitConfig(form="auto"))
    with pytest.raises(FitError, match="one token count"):
        fit_scaling(_synthetic(KAPLAN, 0.0, tokens=(294912,)), FitConfig(bootstrap=0, form="kaplan"))
    # too few sizes for any design-check fold: auto cannot decide and says so
    with pytest.raises(FitError, match="form auto"):
        fit_scaling(_synthetic(KAPLAN, 0.0, sizes=SIZES[:2]), FitConfig(bootstrap=0, starts=1, form="auto"))


def test_cli_fit_and_check_with_a_form(tmp_path, capsys):
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"runs": _synthetic(KAPLAN, 0.002, seed=3, sizes=SIZES[1:])}))
    none = str(tmp_path / "none.yaml")
    out = tmp_path / "fit.json"
    assert main(["scale", "fit", "--sweep", str(sweep), "--output", str(out), "--params", none, "--form", "kaplan",
                 "--bootstrap", "0", "--starts", "1"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["form"] == "kaplan"
    assert set(json.loads(out.read_text())["constants"]) == set(KAPLAN)
    assert main(["scale", "check", "--sweep", str(sweep), "--params", none, "--form", "auto", "--starts", "1"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["chosen"] == "kaplan" and set(summary["scores"]) == {"hoffmann", "kaplan", "per_d"}
    assert main(["scale", "fit", "--sweep", str(sweep), "--output", str(out), "--params", none,
                 "--form", "power"]) == 2
    assert "form must be hoffmann, kaplan, per_d or auto" in capsys.readouterr().err


def test_report_section_names_the_form_and_draws_the_kaplan_frontier():
    from report.render import Figure
    from report.scaling import scaling_section

    fit = fit_scaling(_synthetic(KAPLAN, 0.0, sizes=SIZES[1:]), FitConfig(bootstrap=0, starts=1, form="kaplan"))
    sec = scaling_section({"fit.json": fit, "prediction.json": predict(fit, flops=1e13)})
    assert "Law form: kaplan." in [b for b in sec.blocks if isinstance(b, str)]
    assert all(b.png.startswith(b"\x89PNG") for b in sec.blocks if isinstance(b, Figure))


def test_every_form_is_registered_behind_one_interface():
    from proxytrain.scaling_fit.config import FORMS
    from proxytrain.scaling_fit.forms import REGISTRY, form_of

    assert tuple(REGISTRY) == FORMS  # the order auto breaks ties in
    for name, form in REGISTRY.items():
        assert form.name == name
        assert form.text.startswith(("L(N,D)", "L(N|D)"))  # how the report recognises a fit.json
    assert [form_of(c) for c in (HOFFMANN, KAPLAN, {"slices": {}})] == ["hoffmann", "kaplan", "per_d"]


def test_one_grid_start_plus_the_global_search_recovers_known_constants():
    from proxytrain.scaling_fit.hoffmann import HOFFMANN as H
    from proxytrain.scaling_fit.optimise import fit_theta

    runs = _synthetic(HOFFMANN, 0.0)
    pts = np.array([[r["N"], r["D"], r["loss"]] for r in runs])
    theta, obj = fit_theta(pts, 1e-3, 1, form=H, global_search=True)
    c = H.constants(theta)
    assert obj < 1e-6
    assert all(law(c, n, d) == pytest.approx(loss, rel=1e-4) for n, d, loss in pts)
    again, _ = fit_theta(pts, 1e-3, 1, form=H, global_search=True)
    assert np.array_equal(theta, again)  # seeded: the same optimum every time


def test_bootstrap_refits_are_not_anchored_to_the_full_fit():
    # each refit searches from the grid and the global search, not from the full fit's solution: with
    # noise-free data every refit finds the true constants on its own, with noisy data the refits spread
    exact = fit_scaling(_synthetic(HOFFMANN, 0.0), FitConfig(form="hoffmann", bootstrap=4, starts=1))
    assert len(exact["bootstrap"]) >= 3
    assert all(b["alpha"] == pytest.approx(HOFFMANN["alpha"], abs=2e-3) for b in exact["bootstrap"])
    noisy = fit_scaling(_synthetic(HOFFMANN, 0.02, seed=5), FitConfig(form="hoffmann", bootstrap=6, starts=4))
    alphas = [b["alpha"] for b in noisy["bootstrap"]]
    assert len(alphas) >= 4 and np.std(alphas) > 1e-4


def test_predict_states_scope_baselines_and_sweep_cost():
    runs = _synthetic(HOFFMANN, 0.003, seed=1)
    fit = fit_scaling(runs, FitConfig(form="hoffmann", bootstrap=0, starts=4))
    n_max, d_max = max(SIZES), max(TOKENS)
    p = predict(fit, n=40 * n_max, d=d_max)
    assert p["extrapolation"]["N"] == pytest.approx(40) and p["extrapolation"]["D"] == pytest.approx(1)
    assert p["extrapolation"]["C"] == pytest.approx(40 * 6 * n_max * d_max / fit["C_max"])
    assert "N 40x past the largest fitted N" in p["scope_warning"]  # validated to 30x N
    assert "D " not in p["scope_warning"].split(":")[0].replace("N 40x", "")
    assert "D 5x past" in predict(fit, n=n_max, d=5 * d_max)["scope_warning"]  # validated to 4x D
    # a custom validated set (a user's own grid)
    assert "scope_warning" not in predict(fit, n=40 * n_max, d=d_max, validated={"N": 50, "D": 4, "C": 1e4})
    inside = predict(fit, n=2 * n_max, d=d_max)
    assert "scope_warning" not in inside
    # baselines: the largest fitted run's loss, and that loss scaled by compute^-0.05
    n0, d0, l0 = fit["largest_run"]
    assert 6 * n0 * d0 == pytest.approx(fit["C_max"])
    assert p["baselines"]["naive_largest_run"] == l0
    assert p["baselines"]["fixed_exponent"] == pytest.approx(l0 * (6 * 40 * n_max * d_max / fit["C_max"]) ** -0.05)
    # the sweep (every run, 6ND each) against the target
    spent = sum(6 * r["N"] * r["D"] for r in runs)
    assert fit["sweep_flops"] == pytest.approx(spent)
    small = predict(fit, n=n_max, d=min(TOKENS))
    assert small["sweep_cost"]["sweep_over_target"] > 1 and "dearer than training it" in small["sweep_cost"]["note"]
    assert "note" not in predict(fit, n=1000 * n_max, d=d_max)["sweep_cost"]


@pytest.mark.parametrize("form", ["hoffmann", "kaplan", "per_d"])
def test_bad_sweeps_give_one_clear_line(form):
    cfg = FitConfig(form=form, bootstrap=0, starts=2)
    runs = _synthetic(HOFFMANN, 0.003, seed=3)
    # runs of two tokenizers: losses in different units
    mixed = [{**r, "tokenizer_sha256": "a" * 64 if i % 2 else "b" * 64} for i, r in enumerate(runs)]
    with pytest.raises(FitError, match="come from 2 tokenizers"):
        fit_scaling(mixed, cfg)
    # NaN losses: dropped and counted, the rest fitted
    nan = [dict(r) for r in runs]
    for r in nan[:2]:
        r["loss"] = float("nan")
    with pytest.warns(UserWarning, match="non_finite_loss"):
        fit = fit_scaling(nan, cfg)
    assert fit["drops"]["non_finite_loss"] == 2
    # one model size
    with pytest.raises(FitError, match="one model size|no token count could be fitted"):
        fit_scaling([r for r in runs if r["N"] == SIZES[0]], cfg)
    # a budget below the smallest fitted run's compute
    with pytest.raises(FitError, match="below the smallest fitted run's compute"):
        predict(fit, flops=fit["C_min"] / 10)


@pytest.mark.parametrize("form", ["hoffmann", "kaplan"])
def test_one_token_count_is_refused_by_the_joint_forms(form):
    runs = [r for r in _synthetic(HOFFMANN, 0.003, seed=3) if r["D"] == TOKENS[-1]]
    with pytest.raises(FitError, match="one token count"):
        fit_scaling(runs, FitConfig(form=form, bootstrap=0, starts=2))
