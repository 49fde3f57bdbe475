"""Replication figures for docs/mix.md: DoReMi and RegMix on real text plus learnable garbage,
judged out of sample (evaluation split, ablation seeds no search uses).

    python bench/bench_mix_replication.py [--only doremi,regmix,ablation] [--seeds 5] [--work DIR]

Data: :func:`mix.replication.build_replication_pools` on the shipped demo text (real: code, legal,
literature, news; garbage built from quotes and reference text), 512-entry BPE, three disjoint
splits (80/10/10 % of documents). ``micro`` proxies (``mix/cli.py``). Steps:

1. DoReMi (``mix.doremi`` defaults of the micro preset, 3 seeds): weights, per-seed weights, range;
2. RegMix (M = 48, auto regressor, target = mean search-validation loss over the real domains):
   out-of-fold scores of the three regressors, the chosen mixture;
3. ablation: natural, uniform, DoReMi and RegMix mixtures, ``--seeds`` seeds from 1000, scored on
   the evaluation split, averaged over the real domains; margins, spreads and plain verdicts.

Work is cached under ``--work`` (a re-run reads finished proxies back). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import harness

REAL = ["code", "legal", "literature", "news"]


def main() -> None:
    from corpusmix.mixture import natural_mixture, uniform_mixture
    from corpusmix.paths import DEMO
    from mix.ablation import ablation_seeds, run_ablation
    from mix.doremi import DoReMiConfig
    from mix.doremi_search import run_doremi
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, pool_domains
    from mix.regmix import RegMixConfig, run_regmix
    from mix.replication import build_replication_pools

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/bench_mix_replication")
    ap.add_argument("--only", default="doremi,regmix,ablation")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    steps = set(args.only.split(","))
    work = Path(args.work)
    pools = work / "pools"
    if not (pools / "pools.json").exists():
        build_replication_pools(DEMO / "en", work, real=REAL, garbage_from=["quotes", "reference"])
    tokens = pool_domains(pools)
    pcfg = ProxyConfig(**PRESETS["micro"]["proxy"])
    out: dict = {"natural": natural_mixture(tokens), "load_start": harness.loadavg()}
    mixtures = {"natural": natural_mixture(tokens), "uniform": uniform_mixture(tokens)}
    if "doremi" in steps or "ablation" in steps:
        t = time.perf_counter()
        dor = run_doremi(pools, DoReMiConfig(**PRESETS["micro"]["doremi"]), pcfg, seed=0,
                         cache_dir=work / "cache", progress=False)
        out["doremi"] = {k: dor[k] for k in ("weights", "seed_weights", "seed_range")}
        out["doremi"]["seconds"] = round(time.perf_counter() - t, 1)
        mixtures["doremi"] = dor["weights"]
    if "regmix" in steps or "ablation" in steps:
        t = time.perf_counter()
        reg = run_regmix(pools, RegMixConfig(**PRESETS["micro"]["regmix"]), pcfg, seed=0,
                         cache_dir=work / "cache", targets=REAL)
        out["regmix"] = {"weights": reg["weights"], "fit": reg["report"]["fit"],
                         "search": reg["report"]["search"], "seconds": round(time.perf_counter() - t, 1)}
        mixtures["regmix"] = reg["weights"]
    if "ablation" in steps:
        abl = run_ablation(pools, mixtures, pcfg, seeds=ablation_seeds(args.seeds), cache_dir=work / "cache",
                           workers=2, domains_for_avg=REAL, eval_split="eval")
        out["ablation"] = {n: {k: s[k] for k in ("avg", "avg_per_seed", "avg_range", "val_loss")}
                           for n, s in abl["mixtures"].items()}
        out["verdicts"] = abl["verdicts"]
    out["load_end"] = harness.loadavg()
    harness.emit("mix_replication", out, indent=1)


if __name__ == "__main__":
    main()
