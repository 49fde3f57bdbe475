"""Held-out validation of the scaling-law planner (docs/scaling.md).

1. Sweep: small `corpusmix train` runs (4 sizes x 3 token counts, a 3+ point lr sweep per size) on token
   pools of the shipped demo text (data/demo/en, 7 domains, a 512-entry BPE trained here).
2. Fit L(N, D) on every run (compute up to C_max) and the lr law.
3. Held out: one size the fit never saw, trained at >= 4 x C_max, with the predicted lr and with
   lr/2 and 2 lr (a 3-point lr sweep around the prediction); prediction error and interval coverage.
4. Stability: the constants refitted from the grid (8 best starts, no warm start) on 3 bootstrap resamples.
5. Cost: CPU and wall seconds of every run, the load average during the benchmark.

    python bench/bench_scaling.py --work /tmp/scale-bench            # ~30-40 min on 2 busy cores

Runs are cached under --work (keyed by config): a re-run only fits and prints.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from proxytrain.scaling_fit import FitConfig, _constants, _fit_theta, fit_scaling, predict, usable_points
from proxytrain.scaling_sweep import (
    SweepConfig,
    data_fingerprint,
    non_embedding_params,
    run_one,
    run_sweep,
)


def prepare(work: Path, source: str, vocab: int) -> tuple[str, str]:
    from proxytrain.pools import PoolsConfig, build_pools
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    tok, pools = work / "data" / "tok.json", work / "data" / "pools"
    if not tok.is_file():
        train_tokenizer(source, tok, TokenizerConfig(vocab_size=vocab))
    if not (pools / "pools.json").is_file():
        build_pools(source, tok, pools, PoolsConfig(workers=2))
    return str(tok), str(pools)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/scale-bench")
    ap.add_argument("--source", default="data/demo/en", help="folder of <domain>.parquet (id, text, domain)")
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--heldout-size", default="64x2")
    ap.add_argument("--heldout-tokens", type=int, default=294912)
    args = ap.parse_args()
    work = Path(args.work)
    load0, t0 = os.getloadavg(), time.perf_counter()
    tok, pools = prepare(work, args.source, args.vocab)
    cfg = SweepConfig(data=pools, tokenizer=tok, out=str(work / "sweep"), head_dim=8,
                      sizes=["16x2", "24x2", "32x2", "48x2"], tokens=[32768, 65536, 131072], lr=6e-3,
                      workers=args.workers)
    sweep = run_sweep(cfg)
    fit = fit_scaling(sweep["runs"], FitConfig(bootstrap=args.bootstrap))

    # ---- held out: a bigger size at >= 4 x C_max, lr from the law and a 3-point sweep around it
    vocab = int(json.loads((Path(pools) / "pools.json").read_text())["vocab_size"])
    n_h = non_embedding_params(args.heldout_size, cfg.head_dim, vocab, cfg.seq_len)
    d_h = args.heldout_tokens
    ratio = 6 * n_h * d_h / fit["C_max"]
    pred = predict(fit, n=n_h, d=d_h)
    lr_pred = pred["lr"]
    fp = data_fingerprint(cfg)
    lrs = [lr_pred / 2, lr_pred, lr_pred * 2]
    with ThreadPoolExecutor(max_workers=args.workers) as ex:
        held = list(ex.map(lambda lr: run_one(cfg, args.heldout_size, d_h, lr, n_params=n_h, fingerprint=fp), lrs))
    true = held[1]["loss"]
    ok = [h for h in held if h["status"] == "ok"]
    best = min(ok, key=lambda h: h["loss"]) if ok else None
    lo, hi = pred["interval"]

    # ---- stability: full refits (whole grid of starts) on 3 bootstrap resamples of the runs
    pts, _ = usable_points(sweep["runs"])
    stab = []
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        sample = pts[rng.integers(0, len(pts), len(pts))]
        c = _constants(_fit_theta(sample, 1e-3, 8)[0])
        c["pred_heldout"] = float(c["E"] + c["A"] / n_h ** c["alpha"] + c["B"] / d_h ** c["beta"])
        stab.append({"seed": seed, **c})

    heldout_cost = {"cpu_s": round(sum(h["cpu_s"] for h in held), 1), "wall_s": round(sum(h["wall_s"] for h in held), 1)}
    out = {
        "data": {"source": args.source, "vocab": vocab, "pools_tokens": json.loads((Path(pools) / "pools.json")
                                                                                  .read_text())["domains"]},
        "sizes": sweep["sizes"], "constants": fit["constants"], "intervals": fit["intervals"],
        "rmse_log": fit["rmse_log"], "lr_law": fit["lr_law"], "C_max": fit["C_max"], "notes": fit["notes"],
        "heldout": {"size": args.heldout_size, "N": n_h, "D": d_h, "compute_ratio": ratio,
                    "predicted": pred["loss"], "interval": pred["interval"], "true_at_lr_pred": true,
                    "error_pct": 100 * abs(pred["loss"] - true) / true if true else None,
                    "inside_interval": bool(true is not None and lo <= true <= hi),
                    "lr_pred": lr_pred, "lr_sweep": [[h["lr"], h["loss"], h["status"]] for h in held],
                    "best_lr": best["lr"] if best else None,
                    "loss_gap_lr_pred_vs_best_pct": 100 * (true - best["loss"]) / best["loss"] if best else None,
                    "error_vs_best_pct": 100 * abs(pred["loss"] - best["loss"]) / best["loss"] if best else None},
        "stability": stab,
        "cost": {"sweep": sweep["cost"], "heldout": heldout_cost, "bench_wall_s": round(time.perf_counter() - t0, 1),
                 "loadavg_start": load0, "loadavg_end": os.getloadavg()},
    }
    (work / "bench_scaling.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
