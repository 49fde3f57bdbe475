"""How much of RegMix's out-of-fold error is proxy noise, and how much is the regressor's form.

    python bench/bench_regmix_noise.py --pools out/pools --report out/mix/regmix_report.json \
        [--replicates 4] [--workers 2] [--preset tiny] [--folds 10]

Reads a finished RegMix run (``regmix_report.json``: every proxy's mixture and per-domain
search-validation losses, the target domains) on ``--pools`` and measures, with the same proxy
config as the run (``--preset``; proxies at the run's seed):

1. **data-order noise**: ``--replicates`` proxies on ONE mixture (the run's token-share prior) with
   the same initialisation (seed) and different data streams (the mixture source's seed offset by
   1, 2, ...; nothing else changes). Their spread of the target (the mean loss over the target
   domains) is the noise a proxy's loss carries at a fixed mixture.
2. **perturbation noise**: the prior with 0.002 moved between the first two domains, same seed and
   data seed: nearly the same batches; the change of the target is the trainer's sensitivity to
   tiny differences (chaos), not data order.
3. the runs' **signal**: the standard deviation of the target over the report's proxies.

From these: the reliability of one proxy's target, ``r = 1 - sigma_noise^2 / var(target)``, and
the Pearson correlation a perfect regressor could reach against the observed targets,
``sqrt(r)``; against it, each regressor's out-of-fold Spearman (mean and range over ``--folds``
fold assignments) and in-sample Spearman (fitted on all runs: what its functional form can
express at all). A regressor far below the ceiling in-sample is limited by its form, not noise.

The data-stream offset is applied by a subclass of ``mix.proxy.MixtureSource`` in the child
process (the search itself has no such knob: its proxies share seed and streams on purpose).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import harness
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def child(args: argparse.Namespace) -> None:
    """One proxy: ``--weights`` JSON list, init seed ``--seed``, data streams offset by ``--data-offset``."""
    import mix.proxy as mp
    from mix.presets import preset_values

    base = mp.MixtureSource

    class OffsetSource(base):  # type: ignore[misc, valid-type]
        def __init__(self, *a, seed: int = 0, **kw) -> None:
            super().__init__(*a, seed=seed + args.data_offset, **kw)

    mp.MixtureSource = OffsetSource
    cfg = mp.ProxyConfig(**preset_values(args.preset, "proxy"))
    _, res = mp.train_proxy(args.pools, json.loads(args.weights), cfg, seed=args.seed)
    print(json.dumps({"val_loss": res["val_loss"]}))


def run_child(pools: str, weights: list[float], seed: int, offset: int, preset: str) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", "--pools", pools, "--weights", json.dumps(weights), "--seed",
           str(seed), "--data-offset", str(offset), "--preset", preset]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["val_loss"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pools", default="out/pools")
    ap.add_argument("--report", default="out/mix/regmix_report.json")
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--replicates", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--folds", type=int, default=10, help="fold assignments for the out-of-fold figures")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--weights", default="", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--data-offset", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    from scipy import stats

    from mix.regmix import REGRESSORS, cross_validate, fit_regressor, kfold

    if args.replicates < 2:
        raise SystemExit("--replicates must be >= 2 (a spread needs two runs)")
    rep = json.loads(Path(args.report).read_text())
    doms, targets = rep["domains"], rep.get("target_domains") or rep["domains"]
    runs = rep["runs"]
    if len(runs) < 12:
        raise SystemExit(f"{args.report} holds {len(runs)} runs: need >= 12 for 4-fold figures")
    seed = int(rep.get("seed", 0))
    x = np.array([r["weights"] for r in runs])
    ys = np.array([[r["val_loss"][d] for d in targets] for r in runs])
    y = ys.mean(1)
    cols = [doms.index(d) for d in targets]
    prior = [float(v) for v in rep["prior"]]
    moved = list(prior)
    moved[0] += 0.002
    moved[1] -= 0.002

    def target(vl: dict[str, float]) -> float:
        return float(np.mean([vl[d] for d in targets]))

    jobs = [(prior, off) for off in range(args.replicates)] + [(moved, 0)]
    print(f"training {len(jobs)} {args.preset} proxies on {args.pools} ({args.workers} at a time) ...", flush=True)
    with ThreadPoolExecutor(args.workers) as ex:
        res = list(ex.map(lambda j: run_child(args.pools, j[0], seed, j[1], args.preset), jobs))
    rep_t = np.array([target(v) for v in res[:-1]])
    noise_sd = float(rep_t.std(ddof=1))
    chaos = abs(target(res[-1]) - rep_t[0])
    sig_sd = float(y.std(ddof=1))
    rel = 1.0 - noise_sd**2 / sig_sd**2
    print(f"target over {targets}")
    print(f"data-order replicates (same init, {args.replicates} data streams): "
          f"{np.round(rep_t, 4).tolist()}  sd {noise_sd:.4f}")
    print(f"0.002 moved between {doms[0]} and {doms[1]} (same streams): |change| {chaos:.4f}")
    print(f"signal: sd of the target over the report's {len(y)} runs {sig_sd:.4f}")
    print(f"reliability 1 - noise^2/var {rel:.3f}; Pearson ceiling of a perfect regressor "
          f"{np.sqrt(max(rel, 0.0)):.3f}")
    print(f"{'regressor':<12} {'OOF Spearman mean (min-max)':>30} {'in-sample Spearman':>20}")
    names = [n for n in REGRESSORS]
    oof: dict[str, list[float]] = {n: [] for n in names}
    for s in range(1, args.folds + 1):
        fold = kfold(len(y), 4, np.random.default_rng(s))
        fit, _ = cross_validate(x, y, fold, ys=ys, cols=cols, seed=seed)
        for n in names:
            oof[n].append(fit[n]["spearman"])
    for n in names:
        model = fit_regressor(n, x, y, ys, cols=cols, seed=seed)
        ins = float(stats.spearmanr(model.predict(x), y).statistic)
        v = oof[n]
        print(f"{n:<12} {np.mean(v):>14.3f} ({min(v):.3f}-{max(v):.3f}) {ins:>20.3f}")
    print(f"load average {harness.loadavg()}")


if __name__ == "__main__":
    main()
