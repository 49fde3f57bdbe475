"""Where DoReMi's seed-to-seed spread comes from, and what the fixed probe does to it (docs/mix.md).

    python bench/bench_doremi_noise.py [--work /tmp/bench_doremi_noise] [--seeds 1,2,3]
        [--excess-source probe|batch] [--update-every 8] [--probe-windows 0] [--batch-size 16] [--eta 1]
        [--update eg|softmax|eg_softmax] [--temperature 0.5] [--excess-clip token|domain]
        [--excess-ema 0.5] [--pools DIR --preset tiny]

Trains the reference once (cached under ``--work``) and one DRO proxy per seed against it (two
processes), recording every step's per-domain excess. Default data: the replication set (real
domains plus learnable garbage, ``micro`` proxies); ``--pools`` runs on other pools (e.g. the demo
pipeline's ``out/pools`` with ``--preset tiny``). Prints, per domain: the mean excess of the
averaged window (the signal), the step-to-step standard deviation of the excess over that window
(with ``batch``: the noise of a one-batch estimate, ``batch_size / k`` windows per domain), the
spread that noise alone would give the log-weights through the exponentiated-gradient update (a
random walk: ``eta * sd * sqrt(steps)``; with ``probe`` the excess changes only at updates, so the
sd is taken over the updates and the walk is ``eta * update_every * sd * sqrt(updates)``), the
observed spread across seeds of the log-weights and of the output weights, how far the mean
weights are from the uniform and the natural mixture (L1; a uniform output has no seed spread), and
the seconds of each DRO proxy (2 in parallel; with the load average).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import harness
import numpy as np

REAL = ["code", "legal", "literature", "news"]


def _one_seed(pools: str, ref_path: str, pcfg_d: dict, cfg_d: dict, seed: int) -> dict:
    import torch

    from mix.doremi import DoReMiConfig, dro_objective
    from mix.proxy import ProxyConfig, build_proxy_model, train_proxy

    pcfg, cfg = ProxyConfig(**pcfg_d), DoReMiConfig(**cfg_d)
    ref = build_proxy_model(pools, pcfg, 0)
    ref.load_state_dict(torch.load(ref_path, weights_only=True))
    obj = dro_objective(cfg, pcfg, pools, ref)
    excess: list[list[float]] = []
    record = obj.record

    def recording() -> dict[str, float]:  # called once per step, after the step's update
        excess.append(obj.dro.last_excess.tolist())
        return record()

    obj.record = recording
    t0 = time.perf_counter()
    train_proxy(pools, None, pcfg, seed=seed, objective=obj)
    return {"excess": excess, "history": [h.tolist() for h in obj.dro.history], "avg": obj.dro.average().tolist(),
            "seconds": round(time.perf_counter() - t0, 1), "load": harness.load1()}


def main() -> None:
    import torch

    from corpusmix.mixture import natural_mixture
    from corpusmix.paths import DEMO
    from mix.doremi import DoReMiConfig
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, pool_domains, train_proxy
    from mix.replication import build_replication_pools

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/bench_doremi_noise")
    ap.add_argument("--pools", default="", help="token pools (default: the replication set, built under --work)")
    ap.add_argument("--preset", default="micro")
    ap.add_argument("--seeds", default="1,2,3", help="DRO proxy seeds (the reference uses seed 0)")
    ap.add_argument("--batch-size", type=int, default=0, help="DRO proxy batch (0 = the preset's)")
    ap.add_argument("--eta", type=float, default=0.0, help="DoReMi eta (0 = the default, 1.0)")
    ap.add_argument("--excess-source", default="", help="probe | batch (default: DoReMiConfig's)")
    ap.add_argument("--update-every", type=int, default=0)
    ap.add_argument("--probe-windows", type=int, default=-1)
    ap.add_argument("--restart", action="store_true", help="reset the weights when the averaged steps begin")
    ap.add_argument("--smoothing", type=float, default=-1.0)
    ap.add_argument("--excess-ema", type=float, default=-1.0)
    ap.add_argument("--excess-clip", default="", help="token | domain (default: DoReMiConfig's)")
    ap.add_argument("--update", default="", help="eg | softmax (default: DoReMiConfig's)")
    ap.add_argument("--temperature", type=float, default=0.0, help="softmax tau / mean excess (0 = the default)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dump", default="", help="write every seed's per-step excess and weights to this JSON")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    pools = Path(args.pools) if args.pools else work / "pools"
    if not (pools / "pools.json").exists():
        build_replication_pools(DEMO / "en", work, real=REAL, garbage_from=["quotes", "reference"])
    domains = list(pool_domains(pools))
    pcfg = ProxyConfig(**PRESETS[args.preset]["proxy"], device="cpu")
    cfg = DoReMiConfig(**PRESETS[args.preset]["doremi"])
    over = {"eta": args.eta or None, "excess_source": args.excess_source or None,
            "update_every": args.update_every or None,
            "probe_windows": args.probe_windows if args.probe_windows >= 0 else None,
            "restart": True if args.restart else None,
            "smoothing": args.smoothing if args.smoothing >= 0 else None,
            "update": args.update or None, "excess_ema": args.excess_ema if args.excess_ema >= 0 else None,
            "excess_clip": args.excess_clip or None, "temperature": args.temperature or None}
    cfg = dataclasses.replace(cfg, **{k: v for k, v in over.items() if v is not None})
    cfg.validate()
    tag = hashlib.sha256(f"{pools.resolve()} {args.preset}".encode()).hexdigest()[:12]
    ref_path = work / f"reference-{tag}.pt"
    if not ref_path.exists():  # as run_doremi's reference: natural mixture, seed 0, the proxy's steps
        nat = natural_mixture(pool_domains(pools))
        ref, _ = train_proxy(pools, [nat[d] for d in domains], dataclasses.replace(pcfg, steps=cfg.steps), seed=0)
        torch.save(ref.state_dict(), ref_path)
    pcfg = dataclasses.replace(pcfg, steps=cfg.steps, batch_size=args.batch_size or pcfg.batch_size)
    seeds = [int(s) for s in args.seeds.split(",")]
    load0 = harness.loadavg()
    t0 = time.perf_counter()
    import multiprocessing as mp

    with ProcessPoolExecutor(args.workers, mp_context=mp.get_context("spawn")) as ex:
        runs = list(ex.map(_one_seed, *zip(*[(str(pools), str(ref_path), dataclasses.asdict(pcfg),
                                                 dataclasses.asdict(cfg), s) for s in seeds], strict=True)))
    k = len(domains)
    start = int(cfg.average_from * cfg.steps)
    exc = np.array([r["excess"] for r in runs])  # [seeds, steps, k]
    hist = np.array([r["history"] for r in runs])
    late = exc[:, start:]
    every = cfg.update_every if cfg.excess_source == "probe" else 1
    late_upd = late[:, ::every]  # one value per update (probe: the excess is constant in between)
    sd = late_upd.std(axis=1).mean(axis=0)
    walk = cfg.eta * every * sd * np.sqrt(late_upd.shape[1])
    logw = np.log(hist[:, start:]).mean(axis=1)  # mean log-weight over the averaged window
    logw -= logw.mean(axis=1, keepdims=True)
    avg = np.array([r["avg"] for r in runs])
    rows = -(-pcfg.batch_size // k) * k
    mean = avg.mean(axis=0)
    nat = natural_mixture(pool_domains(pools))
    nat_w = np.array([nat[d] for d in domains])
    out = {"pools": str(pools), "preset": args.preset, "domains": domains, "seeds": seeds,
           "doremi": {f: getattr(cfg, f) for f in ("eta", "excess_source", "update_every", "probe_windows",
                                                    "average_from", "steps", "restart", "smoothing",
                                                    "update", "temperature", "excess_ema",
                                                    "excess_clip")},
           "batch_rows": rows, "tokens_per_domain_per_step": rows // k * (pcfg.seq_len - 1),
           "late_mean_excess": dict(zip(domains, late.mean(axis=(0, 1)).round(4).tolist(), strict=True)),
           "late_sd_excess": dict(zip(domains, sd.round(4).tolist(), strict=True)),
           "random_walk_sd_logw": dict(zip(domains, walk.round(3).tolist(), strict=True)),
           "observed_seed_range_logw": dict(zip(domains, np.ptp(logw, axis=0).round(3).tolist(), strict=True)),
           "seed_weights": avg.round(4).tolist(),
           "mean_weights": dict(zip(domains, avg.mean(axis=0).round(4).tolist(), strict=True)),
           "seed_range": dict(zip(domains, np.ptp(avg, axis=0).round(4).tolist(), strict=True)),
           "max_seed_range": round(float(np.ptp(avg, axis=0).max()), 4),
           # how far the output is from the do-nothing mixtures (a uniform output has seed range 0)
           "l1_from_uniform": round(float(np.abs(mean - 1.0 / k).sum()), 4),
           "l1_from_natural": round(float(np.abs(mean - nat_w).sum()), 4),
           "max_over_min_weight": round(float(mean.max() / mean.min()), 2),
           "proxy_seconds": [r["seconds"] for r in runs], "wall_seconds": round(time.perf_counter() - t0, 1),
           "loadavg_start": load0, "loadavg_end": harness.loadavg()}
    if args.dump:
        Path(args.dump).write_text(json.dumps({"domains": domains, "runs": runs}))
    harness.emit("doremi_noise", out, indent=1)


if __name__ == "__main__":
    main()
