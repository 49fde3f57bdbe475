"""The per_d (fixed-D) law form: one L(N) = E_D + A_D / N^alpha_D per swept token count (synthetic runs, no
training)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

from corpusmix.cli import main
from proxytrain.scaling_fit.auto import compare_forms
from proxytrain.scaling_fit.config import FitConfig, FitError, FitWarning
from proxytrain.scaling_fit.fit import fit_scaling, predict

SIZES = (6184, 16464, 26232, 43168, 80112)
# made up, in the range of the benchmark's losses: the size effect grows with D (alpha_D and A_D grow), which
# no joint (N, D) form here reproduces
SLICES = {294912: {"E": 4.2, "A": 4.0, "alpha": 0.15},
          589824: {"E": 3.6, "A": 20.0, "alpha": 0.30},
          983040: {"E": 3.0, "A": 60.0, "alpha": 0.40}}


def _runs(slices: dict, noise: float = 0.0, seed: int = 0, sizes: tuple = SIZES) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"N": n, "D": d, "lr": 1e-2, "status": "ok", "batch_size": 8, "seq_len": 128,
             "loss": (c["E"] + c["A"] / n ** c["alpha"]) * math.exp(noise * rng.standard_normal())}
            for d, c in slices.items() for n in sizes]


def _fit(runs: list[dict], **kw) -> dict:
    """per_d alone unless ``fallback`` is given (the fallback's own tests below)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)  # no lr sweep in these runs: no lr law
        return fit_scaling(runs, FitConfig(**{"bootstrap": 0, "form": "per_d", "fallback": "none", **kw}))


def test_per_d_recovers_known_slice_constants_and_predicts_at_swept_d():
    fit = _fit(_runs(SLICES))
    assert fit["form"] == "per_d" and fit["law"].startswith("L(N|D)") and "no extrapolation" in fit["law"]
    for d, c in SLICES.items():
        got = fit["constants"]["slices"][str(d)]
        for k in ("E", "A", "alpha"):
            assert got[k] == pytest.approx(c[k], rel=2e-3), (d, k)
        assert max(abs(e) for e in fit["slice_checks"][str(d)]["signed_error_pct"]) < 0.05  # exact data
    true = SLICES[983040]["E"] + SLICES[983040]["A"] / 4e5 ** SLICES[983040]["alpha"]
    p = predict(fit, n=4e5, d=983040 * 1.005)  # within 1 % of a swept D: that slice
    assert p["slice_D"] == 983040 and p["loss"] == pytest.approx(true, rel=1e-3)
    lo, hi = p["interval"]
    assert lo <= p["loss"] <= hi and hi / lo - 1 < 2e-3 and "leave-one-size-out" in p["interval_method"]
    assert "leave-one-size-out" in fit["scope"]  # the asymmetry of its design-check score is recorded


def test_per_d_interval_comes_from_the_slice_folds_and_widens_past_the_swept_sizes():
    fit = _fit(_runs(SLICES, noise=0.004, seed=5))
    ch = fit["slice_checks"]["983040"]
    inside = predict(fit, n=30000, d=983040)
    far = predict(fit, n=8e5, d=983040)
    half_in = inside["interval"][1] / inside["loss"] - 1
    assert half_in == pytest.approx(1 / (1 - ch["half_width_pct"] / 100) - 1, rel=1e-9)
    assert far["interval"][1] / far["loss"] - 1 > half_in  # 10x past the largest size: wider


def test_per_d_refuses_an_unswept_d_and_names_the_swept_ones():
    fit = _fit(_runs(SLICES))
    with pytest.raises(FitError, match=r"not a fitted token count \(fitted: \[294912, 589824, 983040\]\).*"
                                       r"scale.sweep.tokens.*kaplan or hoffmann"):
        predict(fit, n=4e5, d=2e6)


def test_per_d_discrete_frontier_picks_the_slice_with_the_lowest_loss():
    fit = _fit(_runs(SLICES))
    seen = set()
    for flops in (1.1e10, 2e10, 1e12, 1e14):  # from just above the smallest fitted run's compute
        p = predict(fit, flops=flops)
        by_hand = {d: c["E"] + c["A"] / (flops / (6 * d)) ** c["alpha"] for d, c in SLICES.items()}
        best = min(by_hand, key=by_hand.get)
        assert p["D"] == best and p["N"] == pytest.approx(flops / (6 * best))
        assert "swept token counts only" in p["frontier_note"] and len(p["frontier"]) == 3
        seen.add(best)
    assert len(seen) >= 2  # the budgets above cross from one slice to another: the choice is not trivial
    with pytest.raises(FitError, match="below the smallest fitted run's compute"):
        predict(fit, flops=1e9)


def test_auto_scores_per_d_but_chooses_a_form_that_predicts_at_any_d():
    # the size effect grows with D in no joint form: per_d scores best on its size folds, but it cannot
    # predict at an unswept D, so auto (a planner for any N and D) picks among the joint forms
    runs = _runs(SLICES, noise=0.002, seed=2)
    sel = compare_forms(runs, FitConfig(starts=1))
    assert sel["scores"]["per_d"] < min(sel["scores"]["hoffmann"], sel["scores"]["kaplan"])
    assert sel["chosen"] in ("hoffmann", "kaplan") and sel["eligible"] == ["hoffmann", "kaplan"]
    assert sel["scores"][sel["chosen"]] == min(sel["scores"]["hoffmann"], sel["scores"]["kaplan"])
    assert "skipped" in sel["checks"]["per_d"]["leave_largest_d_out"] and "per_d_scope" in sel


def test_per_d_bad_input_errors_clearly():
    two = _runs(SLICES, sizes=SIZES[:2])  # every slice has 2 sizes: nothing can be fitted
    with pytest.raises(FitError, match=r"no token count could be fitted .*2 usable size\(s\); E_D, A_D, alpha_D "
                                       r"need >= 3"):
        _fit(two)
    # one slice with 2 sizes: the others are fitted, that one is named, and predicting there says why
    mixed = [r for r in _runs(SLICES) if r["D"] != 294912 or r["N"] in SIZES[:2]]
    with pytest.warns(FitWarning, match="token counts not fitted"):
        fit = fit_scaling(mixed, FitConfig(bootstrap=0, form="per_d"))
    assert set(fit["constants"]["slices"]) == {"589824", "983040"}
    with pytest.raises(FitError, match="was swept but not fitted: 2 usable size"):
        predict(fit, n=1e5, d=294912)
    rising = [{**r, "loss": 3.0 + 0.1 * math.log(r["N"])} for r in _runs(SLICES)]
    with pytest.raises(FitError, match="loss rises with model size"):
        _fit(rising)


def test_per_d_hands_what_it_cannot_check_to_its_fallback():
    runs = _runs(SLICES, noise=0.002, seed=4)
    fit = _fit(runs, fallback="kaplan", starts=2)
    fb = fit["fallback"]
    assert fb["form"] == "kaplan" and "constants" in fb
    # a checked slice (5 sizes): per_d itself
    at = predict(fit, n=4e5, d=983040)
    assert at["predicted_by"] == "per_d" and at["slice_D"] == 983040
    # an unswept D: the fallback, said so, the same number as the fallback fit predicts
    off = predict(fit, n=4e5, d=2e6)
    assert off["predicted_by"] == "kaplan" and "not a swept token count" in off["per_d_note"]
    assert off["loss"] == pytest.approx(predict(fb, n=4e5, d=2e6)["loss"])
    # a budget: the fallback's continuous frontier, then the same rule at its (N*, D*)
    bud = predict(fit, flops=50 * fit["C_max"])
    ref = predict(fb, flops=50 * fit["C_max"])
    assert (bud["N"], bud["D"]) == pytest.approx((ref["N"], ref["D"]))
    # a slice of 3 sizes has no leave-one-size-out check: the fallback predicts there too
    three = _fit([r for r in runs if r["D"] != 294912 or r["N"] in SIZES[:3]], fallback="kaplan", starts=2)
    p = predict(three, n=4e5, d=294912)
    assert p["predicted_by"] == "kaplan" and "3 sizes" in p["per_d_note"]
    # a fallback that cannot be fitted is noted, and per_d then answers alone
    one_d = _fit([r for r in runs if r["D"] == 983040], fallback="kaplan")
    assert "error" in one_d["fallback"] and any("no kaplan fallback" in n for n in one_d["notes"])
    with pytest.raises(FitError, match="not a fitted token count"):
        predict(one_d, n=4e5, d=2e6)


def test_cli_per_d_fit_and_predict(tmp_path, capsys):
    sweep = tmp_path / "sweep.json"
    sweep.write_text(json.dumps({"runs": _runs(SLICES, noise=0.002, seed=3)}))
    none, out = str(tmp_path / "none.yaml"), tmp_path / "fit.json"
    assert main(["scale", "fit", "--sweep", str(sweep), "--output", str(out), "--params", none, "--form", "per_d",
                 "--fallback", "none"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["form"] == "per_d"
    assert main(["scale", "predict", "--fit", str(out), "--params-file", none, "--params", "4e5",
                 "--tokens", "983040"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["slice_D"] == 983040
    assert main(["scale", "predict", "--fit", str(out), "--params-file", none, "--params", "4e5",
                 "--tokens", "2e6"]) == 2
    assert "not a fitted token count" in capsys.readouterr().err
