"""Where DoReMi's seed-to-seed spread comes from, on the replication set (docs/mix.md).

    python bench/bench_doremi_noise.py [--work /tmp/bench_doremi_noise] [--seeds 3] [--batch-size 16] [--eta 1]

Trains the ``micro`` reference once and ``--seeds`` DRO proxies against it (the replication
test's settings), recording every step's per-domain excess. Prints, per domain: the mean excess of
the averaged window (the signal), the step-to-step standard deviation of the excess (the noise of a
one-batch estimate: ``batch_size / k`` windows of ``seq_len`` tokens per domain), the spread the
exponentiated-gradient update would accumulate from that noise alone over the averaged window
(a random walk of the log-weights: ``eta * sd * sqrt(steps)``), and the observed spread across
seeds of the log-weights and of the output weights. If the random-walk figure explains the
observed log-weight spread, the spread comes from too few tokens per domain per step.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from pathlib import Path

import numpy as np

REAL = ["code", "legal", "literature", "news"]


def main() -> None:
    from corpusmix.mixture import natural_mixture
    from corpusmix.paths import DEMO
    from mix.doremi import DoReMiConfig, DROObjective, GroupDRO
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, pool_domains, train_proxy
    from mix.replication import build_replication_pools

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/bench_doremi_noise")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=0, help="DRO proxy batch (0 = the micro preset's)")
    ap.add_argument("--eta", type=float, default=0.0, help="DoReMi eta (0 = the default, 1.0)")
    args = ap.parse_args()
    work = Path(args.work)
    pools = work / "pools"
    if not (pools / "pools.json").exists():
        build_replication_pools(DEMO / "en", work, real=REAL, garbage_from=["quotes", "reference"])
    domains = list(pool_domains(pools))
    pcfg = ProxyConfig(**PRESETS["micro"]["proxy"])
    cfg = DoReMiConfig(**PRESETS["micro"]["doremi"])
    if args.eta:
        cfg = dataclasses.replace(cfg, eta=args.eta)
    nat = natural_mixture(pool_domains(pools))
    ref, _ = train_proxy(pools, [nat[d] for d in domains], pcfg, seed=0)  # as run_doremi's reference
    if args.batch_size:
        pcfg = dataclasses.replace(pcfg, batch_size=args.batch_size)
    t0 = time.perf_counter()

    class Recording(DROObjective):
        def __init__(self, *a):
            super().__init__(*a)
            self.excess: list[np.ndarray] = []

        def token_loss(self, step, batch, loss_tok, mask):
            out = super().token_loss(step, batch, loss_tok, mask)
            self.excess.append(self.dro.last_excess.copy())
            return out

    k = len(domains)
    start = int(cfg.average_from * cfg.steps)
    runs = []
    for s in range(1, args.seeds + 1):
        dro = GroupDRO(k, eta=cfg.eta, smoothing=cfg.smoothing, average_from=start)
        obj = Recording(dro, ref, domains)
        train_proxy(pools, None, pcfg, seed=s, objective=obj)
        runs.append({"excess": np.array(obj.excess), "history": np.array(dro.history), "avg": dro.average()})
    exc = np.stack([r["excess"] for r in runs])  # [seeds, steps, k]
    hist = np.stack([r["history"] for r in runs])
    late = exc[:, start:]
    sd_step = late.std(axis=1).mean(axis=0)  # per-domain step-to-step sd, mean over seeds
    walk = cfg.eta * sd_step * np.sqrt(cfg.steps - start)
    logw = np.log(hist[:, start:]).mean(axis=1)  # mean log-weight over the averaged window
    logw -= logw.mean(axis=1, keepdims=True)
    avg = np.stack([r["avg"] for r in runs])
    out = {"domains": domains, "seeds": args.seeds, "batch_size": pcfg.batch_size, "eta": cfg.eta,
           "tokens_per_domain_per_step": (-(-pcfg.batch_size // k)) * (pcfg.seq_len - 1),
           "late_mean_excess": late.mean(axis=(0, 1)).round(4).tolist(),
           "late_step_sd_excess": sd_step.round(4).tolist(),
           "random_walk_sd_logw": walk.round(3).tolist(),
           "observed_seed_range_logw": np.ptp(logw, axis=0).round(3).tolist(),
           "seed_weights": avg.round(4).tolist(), "seed_range": np.ptp(avg, axis=0).round(4).tolist(),
           "seconds": round(time.perf_counter() - t0, 1), "loadavg": os.getloadavg()}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
