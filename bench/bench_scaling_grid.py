"""The pre-registered held-out grid of the scaling-law planner (docs/scaling.md, "Held-out grid").

The protocol (law forms, fit settings, grid, pass criteria) is written in docs/scaling.md before any
held-out run is trained; this script only carries it out.

1. Data: the seven English domains of ``--source`` (default ``../shared/corpora``, ~60 M characters; every
   run trains on fewer tokens than the pools hold), a 512-entry byte-level BPE trained on them, natural
   token shares, batch 8 x 128, fp32 on CPU, one thread per run.
2. Fit sweep, two parts with their own lr sweeps:
   A. sizes 8x2-48x2 at 192 / 288 / 576 / 960 steps (lr sweeps at 288 and 960 steps);
   B. the three smallest sizes at 1,920 and 3,840 steps (lr sweeps at both): runs where N binds, so the
      fit sees D over a 6.7x range (576-3,840 steps, ``MIN_TOKENS``), not 3.3x.
3. Fit: every form (per_d with its fallback, hoffmann, kaplan) on the same points, and ``auto``; the
   registered planner is ``auto`` for grid 1 and per_d (with its fallback) for grid 2 (``GRIDS``).
4. Held out (``--heldout``; new init and data seeds: 11 and 12, grid 2 21 and 22): N at ~{4, 10, 30}x the
   largest fitted N at 960 steps; D at {1, 2, 4}x the largest fitted D at a size fitted there; the
   planner's compute-optimal (N, D) at {4, 16, 64}x the largest fitted compute; grid 1 also the noise
   floor: fitted points at the longest horizon repeated with 3 new seeds. Every run at the lr law's lr.
5. Scored: each run's prediction by every form, the naive rule (the largest fitted run's loss) and the
   fixed-exponent rule (the largest fitted run's loss x (C / C_ref)^-0.05), interval coverage.

    python bench/bench_scaling_grid.py --work /tmp/sgrid --sweep-only    # fit data only
    python bench/bench_scaling_grid.py --work /tmp/sgrid --design-only   # + fits, design checks, the grid's plan
    python bench/bench_scaling_grid.py --work /tmp/sgrid --heldout       # + the held-out grid, scored
    python bench/bench_scaling_grid.py --work /tmp/sgrid --heldout --grid 2   # the second grid

--heldout in a fresh --work scores against the plan committed in docs/scaling-grid/ (the registered
predictions); --design-only writes a new plan there instead (in --work).

Runs are cached under --work (keyed by config): a re-run only fits and prints.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness
import numpy as np
from lib.scaling import common_args, prepare

from proxytrain.scaling_fit.auto import compare_forms
from proxytrain.scaling_fit.config import FitConfig, FitError, FitWarning
from proxytrain.scaling_fit.fit import baselines, fit_scaling, predict
from proxytrain.scaling_sweep import SweepConfig, data_fingerprint, model_params, run_one, run_sweep

SIZES_A = ["8x2", "16x2", "24x2", "32x2", "48x2"]
TOKENS_A = [196608, 294912, 589824, 983040]  # 192, 288, 576, 960 steps of 8 x 128 tokens
LR_SWEEP_A = [294912, 983040]
SIZES_B = ["8x2", "16x2", "24x2"]
TOKENS_B = [1966080, 3932160]  # 1,920 and 3,840 steps
LR_SWEEP_B = TOKENS_B
MIN_TOKENS = 589824  # 576 steps: the design checks of docs/scaling.md ("Held-out grid") chose it on the fit data
FORMS = ("per_d", "hoffmann", "kaplan")
N_X, D_X, C_X = (4, 10, 30), (1, 2, 4), (4, 16, 64)
STEP_TOKENS = 8 * 128


# Two grids. Grid 1 tested the registered auto planner; grid 2 (fresh seeds, deeper shapes, another size on the
# D axis) tests the planner adopted after grid 1: per_d where it can check itself, its joint fallback elsewhere.
GRIDS = {
    1: {"planner": "auto", "seeds": (11, 12), "noise_seeds": (11, 12, 13), "d_axis_size": "largest",
        "depth": ((1e5, 2), (5e5, 3), (1.5e6, 4), (math.inf, 5))},
    2: {"planner": "per_d", "seeds": (21, 22), "noise_seeds": (), "d_axis_size": "smallest_above_8x2",
        "depth": ((5e5, 4), (1.5e6, 6), (math.inf, 8))},
}


def shape_for(n_target: float, vocab: int, depth: tuple = GRIDS[1]["depth"]) -> tuple[str, int]:
    """The grid's model shape for a target total N: depth by N (``depth``: (N below, layers) pairs; grid 1: 2
    layers below 100k, 3 below 500k, 4 below 1.5M, else 5), then the d_model (a multiple of 8) whose total N
    is nearest in log N."""
    layers = next(lay for below, lay in depth if n_target < below)
    best = min((abs(math.log(model_params(f"{d}x{layers}", 8, vocab, 128)["total"] / n_target)), d)
                for d in range(8, 513, 8))
    size = f"{best[1]}x{layers}"
    return size, model_params(size, 8, vocab, 128)["total"]


def steps_tokens(d: float) -> int:
    """D rounded to whole optimizer steps of 8 x 128 tokens."""
    return max(1, round(d / STEP_TOKENS)) * STEP_TOKENS


def sweep_configs(work: Path, tok: str, pools: str, workers: int) -> tuple[SweepConfig, SweepConfig]:
    common = {"data": pools, "tokenizer": tok, "head_dim": 8, "workers": workers, "params_count": "total",
              "lr_extend": 2}
    a = SweepConfig(out=str(work / "sweepA"), sizes=SIZES_A, tokens=TOKENS_A, lr=1e-2, lr_tokens=TOKENS_A[1],
                    lr_sweep_tokens=LR_SWEEP_A, **common)
    b = SweepConfig(out=str(work / "sweepB"), sizes=SIZES_B, tokens=TOKENS_B, lr=5e-3, lr_tokens=TOKENS_B[0],
                    lr_sweep_tokens=LR_SWEEP_B, **common)
    return a, b


def fit_runs(work: Path, source: str, vocab: int, workers: int) -> tuple[list[dict], dict]:
    tok, pools = prepare(work, source, vocab)
    a, b = sweep_configs(work, tok, pools, workers)
    sa, sb = run_sweep(a), run_sweep(b)
    return sa["runs"] + sb["runs"], {"A": sa["cost"], "B": sb["cost"], "pools": pools, "tokenizer": tok}


def fit_all(runs: list[dict], bootstrap: int) -> dict[str, dict]:
    """Every form on the same runs, and ``auto`` (the same-fold design checks pick hoffmann or kaplan); per_d
    carries its joint fallback (``scale.fit.fallback: auto``)."""
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        sel = compare_forms(runs, FitConfig(min_tokens=MIN_TOKENS, bootstrap=0))
        for f in FORMS:
            try:
                fits[f] = fit_scaling(runs, FitConfig(min_tokens=MIN_TOKENS, bootstrap=bootstrap, form=f))
            except FitError as exc:
                fits[f] = {"error": str(exc)}
    fits["auto"] = {**fits[sel["chosen"]], "form_selection": sel}
    return fits


def plan_grid(fits: dict[str, dict], runs: list[dict], vocab: int, grid: int = 1) -> list[dict]:
    """The held-out runs (N, D, lr, seed) and every form's prediction for each, fixed before any is trained."""
    g = GRIDS[grid]
    planner = fits[g["planner"]]
    pts = np.array(planner["points"], dtype=float)
    n_max, c_max = pts[:, 0].max(), planner["C_max"]
    d_max = pts[:, 1].max()
    d_of_nmax = pts[pts[:, 0] == n_max][:, 1].max()
    at_dmax = sorted(pts[pts[:, 1] == d_max][:, 0])
    n_at_dmax = at_dmax[-1] if g["d_axis_size"] == "largest" else at_dmax[1]
    size_of = {int(r["N"]): r["size"] for r in runs}
    cells = []
    for x in N_X:
        size, n = shape_for(x * n_max, vocab, g["depth"])
        cells.append({"axis": "N", "factor": x, "size": size, "N": n, "D": int(d_of_nmax)})
    for x in D_X:
        cells.append({"axis": "D", "factor": x, "size": size_of[int(n_at_dmax)], "N": int(n_at_dmax),
                      "D": steps_tokens(x * d_max)})
    for x in C_X:
        p = predict(planner, flops=x * c_max)
        size, n = shape_for(p["N"], vocab, g["depth"])
        cells.append({"axis": "C", "factor": x, "size": size, "N": n, "D": steps_tokens(x * c_max / (6 * n)),
                      "frontier_N": p["N"], "frontier_D": p["D"]})
    plan = []
    for cell in cells:
        n, d = cell["N"], cell["D"]
        preds = {}
        for f, fit in fits.items():
            if "error" in fit:
                continue
            try:
                p = predict(fit, n=n, d=d)
                preds[f] = {"loss": p["loss"], "interval": p.get("interval")}
            except FitError as exc:
                preds[f] = {"error": str(exc)}
        lr = predict(planner, n=n, d=d)["lr"]
        for seed in g["seeds"]:
            plan.append({**cell, "seed": seed, "lr": lr, "C_over_C_max": 6 * n * d / c_max,
                         "predicted": preds, "baselines": baselines(planner, n, d)})
    for size, d in ((size_of[int(n_at_dmax)], int(d_max)), (size_of[int(n_max)], int(d_of_nmax))):
        if not g["noise_seeds"]:
            break
        n = next(int(r["N"]) for r in runs if r["size"] == size)
        fitted = min((r for r in runs if r["size"] == size and r["D"] == d and r["status"] == "ok"),
                     key=lambda r: r["loss"])
        for seed in g["noise_seeds"]:
            plan.append({"axis": "noise", "factor": 1, "size": size, "N": n, "D": d, "seed": seed, "lr": fitted["lr"],
                         "C_over_C_max": 6 * n * d / c_max, "seed0_loss": fitted["loss"]})
    return plan


def train_grid(plan: list[dict], cfg: SweepConfig, work: Path, workers: int) -> list[dict]:
    """Train every planned run (cached under ``work/heldout``), the largest compute first."""
    fp = data_fingerprint(cfg)
    order = sorted(range(len(plan)), key=lambda i: -plan[i]["N"] * plan[i]["D"])

    def one(i: int) -> dict:
        p = plan[i]
        c = SweepConfig(**{**cfg.__dict__, "seed": p["seed"], "out": str(work / "heldout")})
        return run_one(c, p["size"], p["D"], p["lr"], n_params=p["N"], fingerprint=fp)

    with ThreadPoolExecutor(max_workers=workers) as ex:
        done = dict(zip(order, ex.map(one, order), strict=True))
    return [done[i] for i in range(len(plan))]


def score(plan: list[dict], results: list[dict], planner: str = "auto") -> dict:
    """Signed % errors of every form and baseline, interval coverage, the registered criteria."""
    rows = []
    for p, r in zip(plan, results, strict=True):
        row = {k: p[k] for k in ("axis", "factor", "size", "N", "D", "seed", "lr", "C_over_C_max")}
        row.update(status=r["status"], loss=r.get("loss"), cpu_s=r.get("cpu_s"))
        if p["axis"] == "noise":
            row["seed0_loss"] = p["seed0_loss"]
            rows.append(row)
            continue
        true = r.get("loss")
        for name, pr in p["predicted"].items():
            if true and "loss" in pr:
                row[f"err_{name}"] = 100 * (pr["loss"] - true) / true
                if pr.get("interval"):
                    row[f"inside_{name}"] = pr["interval"][0] <= true <= pr["interval"][1]
        for name in ("naive_largest_run", "fixed_exponent"):
            if true:
                row[f"err_{name}"] = 100 * (p["baselines"][name] - true) / true
        rows.append(row)
    held = [r for r in rows if r["axis"] != "noise" and r["loss"]]
    summary = {}
    for name in dict.fromkeys((planner, "auto", *FORMS, "naive_largest_run", "fixed_exponent")):
        key = f"err_{name}"
        have = [r for r in held if key in r]
        if not have:
            continue
        near = [abs(r[key]) for r in have if r["C_over_C_max"] <= 10]
        far = [r[key] for r in have if r["C_over_C_max"] > 10]
        s = {"runs": len(have), "median_abs_err_le10x": float(np.median(near)) if near else None,
             "within3_le10x": float(np.mean(np.array(near) <= 3)) if near else None,
             "runs_le10x": len(near), "signed_err_gt10x": [round(e, 2) for e in far],
             "median_abs_err_all": float(np.median([abs(r[key]) for r in have]))}
        if name not in ("naive_largest_run", "fixed_exponent"):
            s["beats_naive"] = float(np.mean([abs(r[key]) < abs(r["err_naive_largest_run"]) for r in have]))
            s["beats_fixed_exponent"] = float(np.mean([abs(r[key]) < abs(r["err_fixed_exponent"]) for r in have]))
            ins = [r[f"inside_{name}"] for r in have if f"inside_{name}" in r]
            s["coverage"] = float(np.mean(ins)) if ins else None
            s["coverage_runs"] = len(ins)
        summary[name] = s
    noise = {}
    for r in rows:
        if r["axis"] == "noise" and r["loss"]:
            k = f"{r['size']}@{r['D']}"
            noise.setdefault(k, {"seed0": r["seed0_loss"], "others": []})["others"].append(r["loss"])
    for v in noise.values():
        allv = np.array([v["seed0"], *v["others"]])
        v["sd_pct"] = float(100 * allv.std(ddof=1) / allv.mean())
        v["range_pct"] = float(100 * (allv.max() - allv.min()) / allv.mean())
    p = summary.get(planner, {})
    criteria = {
        "median_abs_err_le10x<=3": p.get("median_abs_err_le10x") is not None and p["median_abs_err_le10x"] <= 3,
        "within3_le10x>=0.8": p.get("within3_le10x") is not None and p["within3_le10x"] >= 0.8,
        "beats_naive>=0.8": p.get("beats_naive") is not None and p["beats_naive"] >= 0.8,
        "coverage_within_15_points_of_0.9": p.get("coverage") is not None and abs(p["coverage"] - 0.9) <= 0.15,
    }
    valid = {}
    for axis in ("N", "D", "C"):  # the largest factor whose runs are all within 3 % with the planner
        ok = [r["factor"] for r in held if r["axis"] == axis
              and all(abs(x.get(f"err_{planner}", math.inf)) <= 3 for x in held
                      if x["axis"] == axis and x["factor"] == r["factor"])]
        valid[axis] = max(ok, default=1)
    return {"planner": planner, "rows": rows, "summary": summary, "noise": noise, "criteria": criteria,
            "validated_factors": valid}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    common_args(ap, work="/tmp/sgrid", source="../shared/corpora")
    ap.add_argument("--sweep-only", action="store_true", help="train the fit sweep and stop")
    ap.add_argument("--design-only", action="store_true",
                    help="fit, design checks and the grid's plan with every prediction; no held-out run trained")
    ap.add_argument("--heldout", action="store_true", help="train the planned held-out grid and score it")
    ap.add_argument("--grid", type=int, default=1, choices=sorted(GRIDS), help="which registered grid")
    args = ap.parse_args()
    work = Path(args.work)
    t0 = time.perf_counter()
    runs, info = fit_runs(work, args.source, args.vocab, args.workers)
    if args.sweep_only:
        print(json.dumps({"runs": len(runs), "cost": info, "wall_s": round(time.perf_counter() - t0, 1),
                          "loadavg": harness.loadavg()}, indent=1))
        return
    vocab = int(json.loads((Path(info["pools"]) / "pools.json").read_text())["vocab_size"])
    g = GRIDS[args.grid]
    plan_file = work / ("grid_plan.json" if args.grid == 1 else f"grid{args.grid}_plan.json")
    committed = Path(__file__).resolve().parent.parent / "docs" / "scaling-grid" / (
        "plan.json" if args.grid == 1 else f"plan{args.grid}.json")
    if not plan_file.is_file() and committed.is_file() and not args.design_only:
        plan_file.parent.mkdir(parents=True, exist_ok=True)  # reproduce: score against the registered plan
        plan_file.write_bytes(committed.read_bytes())
    if plan_file.is_file():  # the registered plan: predictions are never recomputed after it is written
        reg = json.loads(plan_file.read_text())
    else:
        if args.heldout:
            raise SystemExit("no registered plan: run --design-only first and record it")
        fits = fit_all(runs, args.bootstrap)
        reg = {"fit_runs": len(runs), "sweep_cost": info,
               "fits": {f: {k: ({kk: vv for kk, vv in v.items() if kk not in ("bootstrap", "lr_optima")}
                                if k == "fallback" else v) for k, v in fit.items() if k not in ("bootstrap", "lr_optima")}
                        for f, fit in fits.items()},
               "grid": args.grid, "planner": g["planner"], "plan": plan_grid(fits, runs, vocab, args.grid)}
        plan_file.write_text(json.dumps(reg, indent=1, default=float))
    if not args.heldout:
        brief = [{k: p.get(k) for k in ("axis", "factor", "size", "N", "D", "seed", "lr", "C_over_C_max")}
                 | {"pred": {f: round(v["loss"], 4) for f, v in p.get("predicted", {}).items() if "loss" in v}}
                 for p in reg["plan"]]
        print(json.dumps({"chosen": reg["fits"]["auto"]["form_selection"]["chosen"],
                          "scores": reg["fits"]["auto"]["form_selection"]["scores"], "plan": brief}, indent=1))
        return
    a, _ = sweep_configs(work, info["tokenizer"], info["pools"], args.workers)
    results = train_grid(reg["plan"], a, work, args.workers)
    out = {"registered_plan": str(plan_file), **score(reg["plan"], results, reg.get("planner", "auto")),
           "cost": {"heldout_cpu_s": round(sum(r.get("cpu_s") or 0 for r in results), 1),
                    "bench_wall_s": round(time.perf_counter() - t0, 1), "loadavg_end": harness.loadavg()}}
    harness.write_record("scaling_grid", out, work / ("bench_scaling_grid.json" if args.grid == 1
                                                      else f"bench_scaling_grid{args.grid}.json"))
    print(json.dumps({k: out[k] for k in ("summary", "noise", "criteria", "cost")}, indent=1))


if __name__ == "__main__":
    main()
