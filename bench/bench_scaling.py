"""Held-out validation of the scaling-law planner (docs/scaling.md).

1. Sweep: small `corpusmix train` runs (5 sizes x 4 token counts, a 3+ point lr sweep per size at 288
   and at 960 steps, the other counts at the lr interpolated between them) on token pools of the shipped demo text (data/demo/en, 7 domains, a 512-entry
   BPE trained here). Every run has its own full warmup + cosine schedule ending at its own D and is
   scored by its final loss on the fixed evaluation windows; N counts every parameter (embedding table
   included: it is 20-65 % of these models); D spans 192-960 optimizer steps.
2. Fit L(N, D) on the runs with D >= --min-tokens (the 192-step runs are still on the early loss plateau,
   where size makes no difference; see docs/scaling.md) and the lr law; residuals per point.
3. Design checks on the fit data only (``compare_forms``): for both law forms (Hoffmann, Kaplan), every
   size left out in turn and predicted from the others, and the largest token count left out (N counted
   with and without the embedding table); the fixed-D cross-check L(N) = E + A/N^alpha on the largest
   D's points (the largest size left out); ``--design-only`` stops here, before any held-out run is
   trained.
4. Held out: one size the fit never saw (default 128x2, seed 3: the fourth design), trained at >= 4 x
   C_max at the largest fitted D, with the predicted lr and with lr/2 and 2 lr (a 3-point lr sweep around
   the prediction); prediction error and interval coverage; the seed noise of two runs repeated with seed 1.
5. Stability: the constants refitted from the grid (8 best starts, no warm start) on 3 bootstrap resamples.
6. Cost: CPU and wall seconds of every run, the load average sampled during the benchmark.

    python bench/bench_scaling.py --work /tmp/scale-bench --design-only   # sweep + fit + checks
    python bench/bench_scaling.py --work /tmp/scale-bench                 # then the held-out runs
    python bench/bench_scaling.py --work /tmp/scale-bench --form hoffmann --heldout-size 112x2 --heldout-seed 2
                                                                          # the third design
    python bench/bench_scaling.py --work /tmp/scale-bench --form per_d --heldout-size 96x3 --heldout-seed 4
                                                                          # the fifth design (fixed-D law)

Runs are cached under --work (keyed by config): a re-run only fits and prints.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness
import numpy as np
from lib.scaling import common_args, prepare

from proxytrain.scaling_fit.auto import compare_forms
from proxytrain.scaling_fit.config import FitConfig
from proxytrain.scaling_fit.fit import fit_scaling, predict
from proxytrain.scaling_fit.forms import get_form, law
from proxytrain.scaling_fit.optimise import fit_theta
from proxytrain.scaling_fit.points import usable_points
from proxytrain.scaling_sweep import SweepConfig, data_fingerprint, model_params, run_one, run_sweep

SIZES = ["8x2", "16x2", "24x2", "32x2", "48x2"]
TOKENS = [196608, 294912, 589824, 983040]  # 192, 288, 576, 960 steps of 8 x 128 tokens
LR_SWEEP_TOKENS = [294912, 983040]  # an lr sweep per size at 288 and at 960 steps


class LoadSampler:
    """The 1-minute load average every ``every`` seconds while the benchmark runs (the machine is shared)."""

    def __init__(self, every: float = 30.0) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, args=(every,), daemon=True)
        self._t.start()

    def _loop(self, every: float) -> None:
        while not self._stop.is_set():
            self.samples.append(harness.load1())
            self._stop.wait(every)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._t.join()
        a = np.array(self.samples)
        return {"mean": round(float(a.mean()), 2), "min": round(float(a.min()), 2), "max": round(float(a.max()), 2),
                "samples": len(a)}


def stability(runs: list[dict], min_tokens: int, heldout: tuple[int, int] | None, form: str = "hoffmann"
              ) -> list[dict]:
    """Full refits (8 best grid starts, no warm start) on 3 bootstrap resamples of the fitted points (per_d:
    none; its slices' leave-one-size-out folds, ``slice_checks``, stand for it)."""
    if form == "per_d":
        return []
    pts, _ = usable_points(runs, min_tokens)
    joint = get_form(form)
    out = []
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        c = joint.constants(fit_theta(pts[rng.integers(0, len(pts), len(pts))], 1e-3, 8, form=joint)[0])
        if heldout is not None:
            c["pred_heldout"] = float(law(c, *heldout))
        out.append({"seed": seed, **c})
    return out


def fit_fixed_d(pts: np.ndarray) -> dict[str, float]:
    """L(N) = E + A / N^alpha on the points of one D (``[[N, loss], ...]``): least squares on the log-loss,
    log L = LSE(a - alpha log N, e), L-BFGS from a small grid of starts (the cross-check at the planned D)."""
    from scipy.optimize import minimize

    logn, logl = np.log(pts[:, 0]), np.log(pts[:, 1])

    def f(t: np.ndarray) -> float:
        return float(np.sum((np.logaddexp(t[0] - t[2] * logn, t[1]) - logl) ** 2))

    best = min((minimize(f, [a0, e0, al], method="L-BFGS-B") for e0 in np.log([1.0, 2.0, 3.0, 3.5])
                for al in (0.1, 0.3, 0.6, 1.0) for a0 in (0.0, 2.0, 5.0, 10.0)), key=lambda r: r.fun)
    a, e, al = (float(x) for x in best.x)
    return {"E": float(np.exp(e)), "A": float(np.exp(a)), "alpha": al}


def fixed_d_check(runs: list[dict], heldout_n: float | None = None) -> dict:
    """The fixed-D N law on the largest D's points: its fit, the largest size left out, and a prediction."""
    pts, _ = usable_points(runs)
    d_max = pts[:, 1].max()
    nl = pts[pts[:, 1] == d_max][:, [0, 2]]
    full, lolo = fit_fixed_d(nl), fit_fixed_d(nl[:-1])
    pred_big = lolo["E"] + lolo["A"] / nl[-1, 0] ** lolo["alpha"]
    out = {"D": int(d_max), "fit": full, "leave_largest_size_out_error_pct": 100 * (pred_big - nl[-1, 1]) / nl[-1, 1]}
    if heldout_n:
        out["pred_heldout"] = full["E"] + full["A"] / heldout_n ** full["alpha"]
        out["pred_heldout_without_largest"] = lolo["E"] + lolo["A"] / heldout_n ** lolo["alpha"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common_args(ap, work="/tmp/scale-bench", source="data/demo/en")
    ap.add_argument("--heldout-size", default="128x2")
    ap.add_argument("--form", default="kaplan", choices=["hoffmann", "kaplan", "per_d", "auto"], help="law form fitted")
    ap.add_argument("--heldout-tokens", type=int, default=983040)
    ap.add_argument("--min-tokens", type=int, default=TOKENS[1],
                    help="fit only runs with D >= this (the 192-step runs are still on the loss plateau)")
    ap.add_argument("--heldout-seed", type=int, default=3, help="init and data seed of the held-out runs")
    ap.add_argument("--check-starts", type=int, default=8, help="grid starts of each design-check refit")
    ap.add_argument("--design-only", action="store_true",
                    help="sweep, fit and design checks only: no held-out run is trained or looked at")
    args = ap.parse_args()
    work = Path(args.work)
    load, load0, t0 = LoadSampler(), harness.loadavg(), time.perf_counter()
    tok, pools = prepare(work, args.source, args.vocab)
    cfg = SweepConfig(data=pools, tokenizer=tok, out=str(work / "sweep"), head_dim=8, sizes=SIZES, tokens=TOKENS,
                      lr=1e-2, lr_tokens=TOKENS[1], lr_sweep_tokens=LR_SWEEP_TOKENS, lr_extend=1, workers=args.workers,
                      params_count="total")
    sweep = run_sweep(cfg)
    runs = sweep["runs"]
    fit = fit_scaling(runs, FitConfig(bootstrap=args.bootstrap, min_tokens=args.min_tokens, form=args.form))
    fp = data_fingerprint(cfg)

    # ---- checks on the fit data only: extrapolation to the largest fitted size, seed noise
    design_file = work / f"bench_scaling_design_{args.form}.json"  # --design-only's checks, reused when points match
    prior_fit = json.loads(design_file.read_text()) if design_file.is_file() else {}
    if prior_fit.get("points") == fit["points"] and prior_fit.get("form_checks"):
        checks = prior_fit["form_checks"]
    else:  # both forms, N with and without the embedding table
        checks = {p: compare_forms(runs, FitConfig(params_count=p, min_tokens=args.min_tokens,
                                                   starts=args.check_starts)) for p in ("total", "non_embedding")}
    design = {"sizes": SIZES, "tokens": TOKENS, "lr_sweep_tokens": LR_SWEEP_TOKENS, "min_tokens": args.min_tokens,
              "params_count": "total", "lr_centre": cfg.lr, "batch": [cfg.batch_size, cfg.seq_len], "form": args.form}
    fit_part = {"design": design, "sizes": sweep["sizes"], "form": fit["form"], "law": fit["law"],
                "constants": fit["constants"],
                "intervals": fit["intervals"], "rmse_log": fit["rmse_log"], "points": fit["points"],
                "log_residuals": [round(r, 5) for r in fit["log_residuals"]], "lr_law": fit["lr_law"],
                "lr_optima": [{k: o[k] for k in ("N", "D", "lr", "how", "edge")} for o in fit["lr_optima"]],
                "C_max": fit["C_max"], "notes": fit["notes"], "form_checks": checks,
                "slice_checks": fit.get("slice_checks"), "interval_method": fit.get("interval_method"),
                "form_scores": {p: c["scores"] for p, c in checks.items()},
                "fixed_d_check": fixed_d_check([r for r in runs if r["D"] >= args.min_tokens]),
                "stability": stability(runs, args.min_tokens, None, fit["form"])}
    if args.design_only:
        fit_part["cost"] = {"sweep": sweep["cost"], "bench_wall_s": round(time.perf_counter() - t0, 1),
                            "loadavg_start": load0, "loadavg_end": harness.loadavg(),
                            "loadavg_1min_sampled": load.stop()}
        design_file.write_text(json.dumps(fit_part, indent=1))
        print(json.dumps(fit_part, indent=1))
        return
    # ---- held out: a bigger size at >= 4 x C_max, lr from the law and a 3-point sweep around it
    vocab = int(json.loads((Path(pools) / "pools.json").read_text())["vocab_size"])
    counts = model_params(args.heldout_size, cfg.head_dim, vocab, cfg.seq_len)
    n_h, d_h = counts["total"], args.heldout_tokens
    ratio = 6 * n_h * d_h / fit["C_max"]
    if ratio < 4:
        raise SystemExit(f"held-out compute is {ratio:.2f} x C_max: raise --heldout-tokens to reach >= 4x")
    pred = predict(fit, n=n_h, d=d_h)
    lr_pred = pred["lr"]
    held_cfg = SweepConfig(**{**cfg.__dict__, "seed": args.heldout_seed})
    noise_cfg = SweepConfig(**{**cfg.__dict__, "seed": 1})
    # seed noise: phase-2 runs (each size's best lr) at the smallest D, repeated with another init and data seed
    noise_jobs = [(s, TOKENS[0], sweep["sizes"][s]["best_lr"] or cfg.lr) for s in ("16x2", "48x2")]
    jobs = [(held_cfg, args.heldout_size, d_h, lr, n_h) for lr in (lr_pred / 2, lr_pred, lr_pred * 2)]
    jobs += [(noise_cfg, s, d, lr, sweep["sizes"][s]["N"]) for s, d, lr in noise_jobs]
    with ThreadPoolExecutor(max_workers=args.workers) as ex:  # at most --workers trainings at once
        done = list(ex.map(lambda j: run_one(j[0], *j[1:4], n_params=j[4], fingerprint=fp), jobs))
    held, rep = done[:3], done[3:]
    noise = []
    for (s, d, lr), r in zip(noise_jobs, rep, strict=True):
        r0 = next(x for x in runs if x["size"] == s and x["D"] == d and x["lr"] == lr)
        noise.append({"size": s, "D": d, "lr": lr, "loss_seed0": r0["loss"], "loss_seed1": r["loss"],
                      "diff_pct": 100 * abs(r["loss"] - r0["loss"]) / r0["loss"], "cpu_s": r["cpu_s"]})
    true = held[1]["loss"]
    ok = [h for h in held if h["status"] == "ok"]
    best = min(ok, key=lambda h: h["loss"]) if ok else None
    lo, hi = pred["interval"]

    stab = stability(runs, args.min_tokens, (n_h, d_h), fit["form"])
    fit_part["fixed_d_check"] = fixed_d_check([r for r in runs if r["D"] >= args.min_tokens], n_h)
    heldout_cost = {"cpu_s": round(sum(h["cpu_s"] for h in held), 1), "wall_s": round(sum(h["wall_s"] for h in held), 1)}
    out = {
        "data": {"source": args.source, "vocab": vocab, "pools_tokens": json.loads((Path(pools) / "pools.json")
                                                                                  .read_text())["domains"]},
        **{k: v for k, v in fit_part.items() if k != "stability"}, "seed_noise": noise,
        "heldout": {"size": args.heldout_size, "N": n_h, "N_non_embedding": counts["non_embedding"], "D": d_h,
                    "seed": args.heldout_seed, "compute_ratio": ratio,
                    "predicted": pred["loss"], "interval": pred["interval"], "true_at_lr_pred": true,
                    "error_pct": 100 * abs(pred["loss"] - true) / true if true else None,
                    "inside_interval": bool(true is not None and lo <= true <= hi),
                    "lr_pred": lr_pred, "lr_sweep": [[h["lr"], h["loss"], h["status"]] for h in held],
                    "best_lr": best["lr"] if best else None,
                    "loss_gap_lr_pred_vs_best_pct": 100 * (true - best["loss"]) / best["loss"] if best else None,
                    "error_vs_best_pct": 100 * abs(pred["loss"] - best["loss"]) / best["loss"] if best else None},
        "stability": stab,
        "cost": {"sweep": sweep["cost"], "heldout": heldout_cost,
                 "noise_cpu_s": round(sum(n["cpu_s"] for n in noise), 1),
                 "bench_wall_s": round(time.perf_counter() - t0, 1),
                 "loadavg_start": load0, "loadavg_end": harness.loadavg(), "loadavg_1min_sampled": load.stop()},
    }
    name = f"bench_scaling_{args.heldout_size}_seed{args.heldout_seed}_{fit['form']}.json"
    harness.write_record("scaling", out, work / name)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
