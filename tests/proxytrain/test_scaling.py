"""Scaling laws: the Huber/LSE objective, the fit on real run results, bad input, real sweep runs, the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusmix.cli import main
from proxytrain.scaling_fit.config import FitConfig, FitError, FitWarning
from proxytrain.scaling_fit.fit import fit_scaling, predict
from proxytrain.scaling_fit.forms import frontier, law
from proxytrain.scaling_fit.hoffmann import objective as hoffmann_objective
from proxytrain.scaling_fit.lr_law import fit_lr_law, lr_optima
from proxytrain.scaling_fit.points import usable_points
from proxytrain.scaling_sweep import SweepConfig, data_fingerprint, non_embedding_params, parse_size, run_one

# real results of `bench/bench_scaling.py`'s sweep (corpusmix train runs on the demo text; docs/scaling.md)
SWEEP = Path(__file__).parent / "data" / "scale_sweep_demo.json"
FAST = FitConfig(bootstrap=4, starts=2)  # CI: a few starts and refits (the benchmark uses 16 and 30+)
NOBOOT = FitConfig(bootstrap=0, starts=2)


@pytest.fixture(scope="module")
def runs():
    return json.loads(SWEEP.read_text())["runs"]


@pytest.fixture(scope="module")
def fit(runs):
    return fit_scaling(runs, FAST)


def test_objective_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    logn, logd = np.log(rng.uniform(1e4, 1e5, 9)), np.log(rng.uniform(1e5, 1e6, 9))
    logl = np.log(rng.uniform(3, 5, 9))
    for delta in (1e-3, 1e-1):  # linear and quadratic parts of the Huber loss
        theta = np.array([6.0, 7.0, 1.0, 0.4, 0.3])
        _, g = hoffmann_objective(theta, logn, logd, logl, delta)
        eps = 1e-6
        num = [(hoffmann_objective(theta + eps * e, logn, logd, logl, delta)[0]
                - hoffmann_objective(theta - eps * e, logn, logd, logl, delta)[0]) / (2 * eps) for e in np.eye(5)]
        np.testing.assert_allclose(g, num, rtol=1e-4, atol=1e-3)


def test_frontier_is_the_minimum_of_the_law_at_fixed_compute():
    c = {"E": 1.7, "A": 406.4, "B": 410.7, "alpha": 0.34, "beta": 0.28}  # Hoffmann et al.'s constants
    flops = 1e21
    n_opt, d_opt = frontier(c, flops)
    assert 6 * n_opt * d_opt == pytest.approx(flops)
    ns = np.geomspace(n_opt / 30, n_opt * 30, 4001)
    assert ns[np.argmin(law(c, ns, flops / (6 * ns)))] == pytest.approx(n_opt, rel=0.01)
    assert frontier(c, 4 * flops)[0] / n_opt == pytest.approx(4 ** (0.28 / 0.62))  # N* ~ C^(beta/(alpha+beta))


def test_fit_on_real_runs(fit, runs):
    c = fit["constants"]
    assert 0 < c["alpha"] < 3 and 0 < c["beta"] < 3 and c["E"] > 0
    assert fit["rmse_log"] < 0.02  # the law explains the real runs to within ~2 % of the loss
    assert len(fit["points"]) == len({(r["N"], r["D"]) for r in runs if r["status"] == "ok"})
    for k, (lo, hi) in fit["intervals"].items():
        assert lo <= hi, k
    # the lr sweeps bracket an optimum for every size, and larger models want a smaller lr
    assert fit["lr_law"] is not None and fit["lr_law"]["sizes"] == len({r["N"] for r in runs})
    assert fit["lr_law"]["k"] < 0
    # more parameters or more tokens never predict a higher loss
    n0, d0 = fit["N_range"][1], fit["D_range"][1]
    assert law(c, 2 * n0, d0) < law(c, n0, d0) and law(c, n0, 2 * d0) < law(c, n0, d0)


def test_fit_is_reproducible(runs, fit):
    again = fit_scaling(runs, FitConfig(bootstrap=2, starts=2))
    assert again["constants"] == fit["constants"]  # same starts, same optimum
    # same seed, same resamples (a skipped resample is skipped in both): the shorter run is a prefix
    assert again["bootstrap"] and again["bootstrap"] == fit["bootstrap"][:len(again["bootstrap"])]


def test_predict_by_budget_and_by_size(fit):
    p = predict(fit, flops=4 * fit["C_max"])
    assert 6 * p["N"] * p["D"] == pytest.approx(4 * fit["C_max"])
    assert p["interval"][0] < p["loss"] < p["interval"][1]
    assert p["lr"] > 0 and p["batch_size"] == 8 and p["extrapolation_x"] == pytest.approx(4.0)
    q = predict(fit, n=p["N"], d=p["D"])
    assert q["loss"] == pytest.approx(p["loss"])
    # at a fixed budget the frontier point beats a lopsided split of the same compute
    assert law(fit["constants"], p["N"] * 8, p["D"] / 8) > p["loss"]
    with pytest.raises(FitError, match="--flops"):
        predict(fit, n=1e5)
    # a budget below every fitted run's compute: one clear line, no plan
    assert fit["C_min"] < fit["C_max"]
    with pytest.raises(FitError, match="below the smallest fitted run's compute"):
        predict(fit, flops=fit["C_min"] / 2)


def test_too_few_runs_one_size_one_token_count(runs):
    ok = [r for r in runs if r["status"] == "ok"]
    with pytest.raises(FitError, match="need at least 8"):
        fit_scaling([r for r in ok if r["D"] != 65536][:5], NOBOOT)
    one_n = [r for r in ok if r["N"] == ok[0]["N"]] * 3
    with pytest.raises(FitError, match="one model size"):
        fit_scaling([{**r, "D": r["D"] * (1 + i)} for i, r in enumerate(one_n)], NOBOOT)
    one_d = [{**r, "D": 65536, "N": r["N"] + i} for i, r in enumerate(ok)]
    with pytest.raises(FitError, match="one token count"):
        fit_scaling(one_d, NOBOOT)


def test_diverged_and_nan_runs_are_dropped_with_a_count(runs):
    bad = [{"N": 20000, "D": 65536, "lr": 1.0, "loss": None, "status": "diverged"},
           {"N": 20000, "D": 65536, "lr": 0.5, "loss": float("nan"), "status": "ok"},
           {"N": 20000, "D": 65536, "lr": 0.25, "loss": None, "status": "failed"}]
    pts, drops = usable_points(runs + bad)
    assert drops["diverged"] == 1 and drops["non_finite_loss"] == 1 and drops["failed"] == 1
    with pytest.warns(FitWarning, match="dropped runs"):
        f = fit_scaling(runs + bad, NOBOOT)
    assert len(f["points"]) == len(pts) == len(usable_points(runs)[0])


def test_fit_one_domain_loss(runs):
    from proxytrain.scaling_fit.points import retarget

    pts, _ = usable_points(retarget(runs, "code"))
    best = min(r["val"]["code"] for r in runs if (r["N"], r["D"]) == (pts[0][0], pts[0][1]))
    assert pts[0][2] == pytest.approx(best)
    with pytest.raises(FitError, match="must be all or one of"):
        fit_scaling(runs, FitConfig(bootstrap=0, target="poetry"))


def test_absurd_fit_is_refused():
    # loss rises with model size: a non-positive alpha must be an error, never a silent fit
    runs = [{"N": n, "D": d, "lr": 1e-3, "status": "ok",
             "loss": 4.0 + 0.3 * math.log(n / 1e4) + 50 / d ** 0.3}
            for n in (1e4, 3e4, 1e5) for d in (3e4, 1e5, 3e5)]
    with pytest.raises(FitError, match="not positive"):
        fit_scaling(runs, NOBOOT)


def test_lr_optimum_vertex_and_edge():
    runs = [{"N": n, "D": 1000, "lr": lr, "status": "ok", "loss": 3 + (math.log(lr) - math.log(opt)) ** 2}
            for n, opt in ((1e4, 4e-3), (1e5, 2e-3)) for lr in (1e-3, 3e-3, 9e-3)]
    runs.append({"N": 1e6, "D": 1000, "lr": 1e-3, "status": "ok", "loss": 5.0})  # 1 point: no optimum
    opts = lr_optima(runs)
    assert [o["how"] for o in opts] == ["parabola vertex"] * 2
    assert [o["lr"] for o in opts] == pytest.approx([4e-3, 2e-3])
    law_ = fit_lr_law(opts)
    assert law_["k"] == pytest.approx(math.log(0.5) / math.log(10)) and law_["at_sweep_edge"] == 0
    edge = lr_optima([{**r, "loss": -math.log(r["lr"])} for r in runs if r["N"] == 1e4])
    assert edge[0]["edge"] and edge[0]["lr"] == 9e-3 and edge[0]["how"] == "best swept"


def test_size_parsing_and_parameter_count():
    assert parse_size("64x2", 16) == (64, 2, 4)
    from corpusmix.config import ConfigError

    with pytest.raises(ConfigError, match="D_MODELxN_LAYERS"):
        parse_size("64", 16)
    with pytest.raises(ConfigError, match="multiple of head_dim"):
        parse_size("40x2", 16)
    # per layer: attention 4 d^2, SwiGLU 3 d h (h = 8d/3 rounded), two norms; plus the final norm
    from proxytrain.model import ModelConfig

    h = ModelConfig(d_model=32, n_layers=2, n_heads=4).ffn_hidden
    assert non_embedding_params("32x2", 8, 512, 128) == 2 * (4 * 32 * 32 + 3 * 32 * h + 2 * 32) + 32


# ----------------------------------------------------------------------------- real runs and the CLI

@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    from proxytrain.pools import PoolsConfig, build_pools
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    root = tmp_path_factory.mktemp("scale")
    cur = root / "curated"
    cur.mkdir()
    demo = Path(__file__).parents[2] / "data" / "demo" / "en"
    for d in ("code", "legal", "news"):
        t = pq.read_table(demo / f"{d}.parquet", columns=["id", "text", "domain", "source"]).slice(0, 12)
        texts = [s[:3000] for s in t.column("text").to_pylist()]
        pq.write_table(t.set_column(1, "text", pa.array(texts, pa.string())), cur / f"{d}.parquet")
    train_tokenizer(cur, root / "tok.json", TokenizerConfig(vocab_size=300))
    build_pools(cur, root / "tok.json", root / "pools", PoolsConfig(val_fraction=0.2, workers=1))
    return root


def test_real_runs_are_cached_and_failures_reported(pools):
    cfg = SweepConfig(data=str(pools / "pools"), tokenizer=str(pools / "tok.json"), out=str(pools / "sweep"),
                      head_dim=8, batch_size=4, seq_len=32, eval_batches=2, eval_batch_size=4)
    n = non_embedding_params("16x1", 8, 300, 32)
    fp = data_fingerprint(cfg)
    r = run_one(cfg, "16x1", 4 * 32 * 6, 3e-3, n_params=n, fingerprint=fp)
    assert r["status"] == "ok" and r["steps"] == 6 and r["D"] == 768 and r["N"] == n
    assert 3.0 < r["loss"] < math.log(300) + 0.5 and r["cpu_s"] > 0
    assert sorted(r["val"]) == ["all", "code", "legal", "news"]
    run_dir = pools / "sweep" / "cache" / r["key"]
    assert (run_dir / "train_log.jsonl").is_file() and not (run_dir / "checkpoints").exists()
    log_mtime = (run_dir / "train_log.jsonl").stat().st_mtime_ns
    assert run_one(cfg, "16x1", 768, 3e-3, n_params=n, fingerprint=fp) == r  # read back, not retrained
    assert (run_dir / "train_log.jsonl").stat().st_mtime_ns == log_mtime
    # a run that cannot be scored is reported with the reason, not raised mid-sweep, and is not cached
    bad_cfg = SweepConfig(**{**cfg.__dict__, "target": "poetry"})
    bad = run_one(bad_cfg, "16x1", 768, 6e-3, n_params=n, fingerprint=fp)
    assert bad["status"] == "failed" and "scale.sweep.target" in bad["error"]
    assert not (pools / "sweep" / "cache" / bad["key"] / "result.json").exists()


def test_cli_fit_predict_and_errors(tmp_path, capsys):
    out = tmp_path / "fit.json"
    assert main(["scale", "fit", "--sweep", str(SWEEP), "--output", str(out), "--bootstrap", "2",
                 "--starts", "1", "--params", str(tmp_path / "none.yaml")]) == 0
    fit = json.loads(out.read_text())
    assert fit["constants"]["alpha"] > 0 and len(fit["bootstrap"]) <= 2
    capsys.readouterr()
    pred = tmp_path / "pred.json"
    assert main(["scale", "predict", "--fit", str(out), "--flops", "1e13", "--output", str(pred),
                 "--params-file", str(tmp_path / "none.yaml")]) == 0
    cap = capsys.readouterr()
    printed = json.loads(cap.out.strip().splitlines()[-1])
    assert printed == json.loads(pred.read_text()) and printed["flops"] == pytest.approx(1e13)
    # the scope line: how far past the fit this prediction lies, against what the held-out grid validated
    x = printed["extrapolation"]
    assert f"{x['C']:.3g}x compute past the largest fitted run" in cap.err and "validated:" in cap.err
    assert ("scope_warning" in printed) == any(x[k] > printed["validated"][k] for k in "NDC")
    one = tmp_path / "one.json"
    runs = [r for r in json.loads(SWEEP.read_text())["runs"] if r["size"] == "32x2"]
    one.write_text(json.dumps({"runs": runs}))
    assert main(["scale", "fit", "--sweep", str(one), "--output", str(tmp_path / "x.json"),
                 "--params", str(tmp_path / "none.yaml")]) == 2
    assert "one model size" in capsys.readouterr().err
    assert main(["scale", "fit", "--sweep", str(tmp_path / "missing.json"), "--output", str(out)]) == 2
    assert "scale sweep" in capsys.readouterr().err


def test_report_section_from_fit_and_prediction(fit, tmp_path):
    from report.inputs import collect_inputs
    from report.render import Figure, Table
    from report.scaling import scaling_section

    (tmp_path / "scale" / "cache").mkdir(parents=True)
    (tmp_path / "scale" / "fit.json").write_text(json.dumps(fit))
    (tmp_path / "scale" / "prediction.json").write_text(json.dumps(predict(fit, flops=1e13)))
    inputs = collect_inputs([tmp_path])
    assert sorted(inputs.scaling) == [f"{tmp_path.name}/scale/fit.json", f"{tmp_path.name}/scale/prediction.json"]
    sec = scaling_section(inputs.scaling)
    figs = [b for b in sec.blocks if isinstance(b, Figure)]
    assert [f.name for f in figs] == ["scaling_loss_vs_compute", "scaling_residuals"]
    assert all(f.png.startswith(b"\x89PNG") for f in figs)
    tables = {b.title: b for b in sec.blocks if isinstance(b, Table)}
    assert [r[0] for r in tables["Fitted constants"].rows] == ["E", "A", "B", "alpha", "beta"]
    assert tables["Prediction"].rows[0][2] == pytest.approx(1e13)
    pred = predict(fit, flops=1e13)
    base = tables["Prediction against the baselines"].rows[0]
    assert base[3] == fit["largest_run"][2] and base[4] == pytest.approx(pred["baselines"]["fixed_exponent"])
    scope = tables["Scope: past the largest fitted run"]
    assert scope.rows[0][2] == pytest.approx(1e13 / fit["C_max"]) and scope.alert == bool(pred.get("scope_warning"))


# ----------------------------------------------------------------------------- synthetic runs from a known law

TRUE = {"E": 3.1, "A": 180.0, "B": 2400.0, "alpha": 0.45, "beta": 0.5}  # made up, in the sweep's range of losses


def _synthetic(noise: float, seed: int = 0) -> list[dict]:
    """The benchmark's design (5 sizes x 4 token counts) scored by a known law, with log-normal noise."""
    rng = np.random.default_rng(seed)
    return [{"N": n, "D": d, "lr": 1e-2, "status": "ok", "batch_size": 8, "seq_len": 128,
             "loss": float(law(TRUE, n, d) * math.exp(noise * rng.standard_normal()))}
            for n in (6184, 16464, 26232, 43168, 80112) for d in (196608, 294912, 393216, 589824)]


def test_noise_free_runs_recover_the_constants():
    fit = fit_scaling(_synthetic(0.0), FitConfig(bootstrap=0, starts=2))
    for k, v in TRUE.items():
        assert fit["constants"][k] == pytest.approx(v, rel=1e-3), k
    assert fit["rmse_log"] < 1e-6


def test_noisy_runs_predict_a_run_at_4x_the_compute_within_its_interval():
    runs = _synthetic(0.003, seed=1)  # 0.3 % loss noise, the seed noise measured on the real runs
    fit = fit_scaling(runs, FitConfig(bootstrap=8, starts=2))
    n, d = 271_000, 737_280  # the benchmark's held-out run: 4.2 x C_max
    assert 6 * n * d / fit["C_max"] > 4
    p = predict(fit, n=n, d=d)
    true = float(law(TRUE, n, d))
    assert abs(p["loss"] - true) / true < 0.01
    assert p["interval"][0] < true < p["interval"][1]
    assert fit["constants"]["alpha"] == pytest.approx(TRUE["alpha"], abs=0.15)


def test_n_is_counted_as_the_fit_asks():
    runs = [{**r, "N_total": r["N"], "N_non_embedding": r["N"] // 2} for r in _synthetic(0.0)]
    total = fit_scaling(runs, FitConfig(bootstrap=0, starts=1, params_count="total"))
    nonemb = fit_scaling(runs, FitConfig(bootstrap=0, starts=1, params_count="non_embedding"))
    assert total["N_range"] == [6184, 80112] and nonemb["N_range"] == [3092, 40056]
    with pytest.raises(FitError, match="no N_total"):
        fit_scaling(_synthetic(0.0), FitConfig(bootstrap=0, params_count="total"))
    with pytest.raises(FitError, match="total or non_embedding"):
        fit_scaling(runs, FitConfig(bootstrap=0, params_count="all"))


def test_total_and_non_embedding_counts_and_bad_count_name(tmp_path):
    from corpusmix.config import ConfigError
    from proxytrain.scaling_sweep import model_params

    c = model_params("32x2", 8, 512, 128)
    assert c["total"] - c["non_embedding"] == 512 * 32  # the tied embedding table, counted once
    (tmp_path / "pools.json").write_text("{}")
    with pytest.raises(ConfigError, match="params_count must be one of"):
        SweepConfig(data=str(tmp_path), params_count="embedding").validate()


def test_runs_below_min_tokens_are_left_out_and_counted():
    runs = _synthetic(0.0) + [{"N": 6184, "D": 98304, "lr": 1e-2, "status": "ok", "loss": 5.4}]
    pts, drops = usable_points(runs, min_tokens=196608)
    assert len(pts) == 20 and drops == {"below_min_tokens": 1}
    fit = fit_scaling(runs, FitConfig(bootstrap=0, starts=1, min_tokens=196608))
    assert fit["drops"] == {"below_min_tokens": 1} and fit["D_range"][0] == 196608
    assert not any("dropped runs" in n for n in fit["notes"])  # left out by design, not a bad run


def test_lr_law_with_a_token_exponent_recovers_k_and_m():
    # lr sweeps at two token counts: the best lr falls with N and with D; the law separates the two
    c, k, m = 0.5, -0.3, -0.2
    optima = [{"N": n, "D": d, "lr": c * n ** k * d ** m, "edge": False}
              for n in (6e3, 2e4, 8e4) for d in (3e5, 1e6)]
    law_ = fit_lr_law(optima)
    assert law_["k"] == pytest.approx(k) and law_["m"] == pytest.approx(m) and law_["token_counts"] == 2
    from proxytrain.scaling_fit.lr_law import lr_for

    assert lr_for(law_, 4e5, 1e6) == pytest.approx(c * 4e5 ** k * 1e6 ** m)
    # one token count: no D term, and lr_for ignores D
    one = fit_lr_law([o for o in optima if o["D"] == 3e5])
    assert one["m"] == 0.0 and lr_for(one, 4e5, 1e6) == pytest.approx(lr_for(one, 4e5))


def test_phase2_lr_is_interpolated_between_swept_token_counts(tmp_path):
    from proxytrain.scaling_sweep import interpolate_lr

    best = {300_000: 2e-2, 1_200_000: 5e-3}
    assert interpolate_lr(best, 600_000, 1.0) == pytest.approx(1e-2)  # half-way in log D: geometric mean
    assert interpolate_lr(best, 100_000, 1.0) == 2e-2 and interpolate_lr(best, 5_000_000, 1.0) == 5e-3
    assert interpolate_lr({}, 600_000, 3e-3) == 3e-3
    from proxytrain.scaling_sweep import phase2_lrs

    assert phase2_lrs(best, 600_000, 1.0) == pytest.approx([1e-2, 2e-2])  # interpolated + the shorter optimum
    assert phase2_lrs(best, 100_000, 1.0) == [2e-2] and phase2_lrs({300_000: 2e-2}, 600_000, 1.0) == [2e-2]
    from corpusmix.config import ConfigError

    with pytest.raises(ConfigError, match="lr_sweep_tokens"):
        (tmp_path / "pools.json").write_text("{}")
        SweepConfig(data=str(tmp_path), tokens=[1024, 2048], lr_sweep_tokens=[4096]).validate()


def test_design_checks_on_a_known_law():
    from proxytrain.scaling_fit.checks import design_checks

    sizes = (6184, 16464, 43168, 80112)  # every fold keeps >= 3 sizes and 3 token counts: E, A, alpha identifiable
    runs = [{**r, "N_total": r["N"], "N_non_embedding": r["N"] // 2} for r in _synthetic(0.0) if r["N"] in sizes]
    chk = design_checks(runs, FitConfig(starts=2, params_count="total"))
    assert [f["left_out"] for f in chk["leave_one_size_out"]] == [f"N={n}" for n in sizes]
    # noise-free runs of the law itself: every left-out size and the largest D are predicted exactly
    assert chk["max_abs_error_pct_sizes"] < 0.05
    assert chk["leave_largest_d_out"]["points"] == [[n, 589824] for n in sizes]
    assert chk["leave_largest_d_out"]["max_abs_error_pct"] < 0.05
    assert chk["leave_largest_size_out"] is chk["leave_one_size_out"][-1]
    # a fold left with too few points reports why instead of failing the whole check
    few = design_checks([r for r in runs if r["N"] in sizes[:2]], FitConfig(starts=1))  # 8 points, 2 sizes
    assert all("one model size" in f["error"] for f in few["leave_one_size_out"])
    assert "need at least 8" in few["leave_largest_d_out"]["error"] and few["max_abs_error_pct_sizes"] is None


def test_cli_check_errors(tmp_path, capsys):
    bad = tmp_path / "sweep.json"
    bad.write_text(json.dumps({"runs": [{"N": 1000, "D": 4096, "lr": 1e-2, "loss": None, "status": "diverged"}]}))
    assert main(["scale", "check", "--sweep", str(bad), "--params", str(tmp_path / "none.yaml")]) == 2
    assert "no usable runs" in capsys.readouterr().err
    assert main(["scale", "check", "--sweep", str(tmp_path / "missing.json")]) == 2
    assert "scale sweep" in capsys.readouterr().err


def test_a_fold_whose_fit_overflows_is_reported_not_raised(runs):
    """On the demo sweep with the early-plateau runs kept, one Hoffmann fold's constants overflow a float:
    the design check names that fold's failure and goes on (it used to stop with OverflowError)."""
    from proxytrain.scaling_fit.checks import design_checks

    chk = design_checks(runs, FitConfig(starts=4, min_tokens=0, form="hoffmann"))
    errors = [f.get("error", "") for f in chk["leave_one_size_out"]]
    assert any("diverged" in e for e in errors)
    assert chk["score"] is None
