"""Transfer check (RegMix's central claim): do proxy ranks of mixtures predict a larger model's?

    python bench/bench_mix_transfer.py [--mixtures 6] [--large-steps 240] [--work /tmp/bench_mix_transfer]

Data: the replication set of :mod:`mix.replication` (four real demo domains plus a learnable
garbage domain built from two other demo domains, 512-entry BPE, three disjoint splits). The
mixtures: natural, uniform and ``--mixtures - 2`` draws from RegMix's Dirichlet around the token
shares (seed 0). Each mixture trains one ``micro`` proxy (the search's size) and one larger model
with at least 10x the proxy's non-embedding parameters (``--large-*``); both are scored on the
EVALUATION split (never read by a search), averaged over the target domains (the real ones). The
report gives both rankings, their Spearman, and the parameter ratio. Seeds: 1000 (not a search
seed). Not a CI test: the larger models take minutes each on 2 cores. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import harness
import numpy as np


def non_embedding_params(cfg, vocab: int) -> int:
    from mix.proxy import _build

    model, _ = _build(cfg, vocab, 0)
    emb = {id(p) for n, p in model.named_parameters() if n.startswith(("tok_emb", "output"))}
    return int(sum(p.numel() for p in model.parameters() if id(p) not in emb))


def main() -> None:
    from scipy import stats

    from corpusmix.mixture import natural_mixture, uniform_mixture
    from corpusmix.paths import DEMO
    from mix.ablation import ABLATION_SEED0
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, pool_domains, train_proxies
    from mix.regmix import sample_mixtures
    from mix.replication import build_replication_pools

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/bench_mix_transfer")
    ap.add_argument("--mixtures", type=int, default=6)
    ap.add_argument("--large-d-model", type=int, default=128)
    ap.add_argument("--large-layers", type=int, default=6)
    ap.add_argument("--large-steps", type=int, default=240)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    work = Path(args.work)
    pools = work / "pools"
    if not (pools / "pools.json").exists():
        build_replication_pools(DEMO / "en", work, real=["code", "legal", "literature", "news"],
                                garbage_from=["quotes", "reference"])
    tokens = pool_domains(pools)
    domains = list(tokens)
    targets = [d for d in domains if d != "garbage"]
    prior = np.array([tokens[d] for d in domains], dtype=np.float64)
    prior /= prior.sum()
    mixes = {"natural": natural_mixture(tokens), "uniform": uniform_mixture(tokens)}
    draws = sample_mixtures(prior, args.mixtures - 2, concentrations=[0.3, 1.0, 3.0], rng=np.random.default_rng(0))
    mixes.update({f"dirichlet{i}": dict(zip(domains, w.tolist(), strict=True)) for i, w in enumerate(draws)})
    small = ProxyConfig(**PRESETS["micro"]["proxy"])
    large = dataclasses.replace(small, d_model=args.large_d_model, n_layers=args.large_layers, n_heads=4,
                                steps=args.large_steps, warmup=max(1, args.large_steps // 10))
    vocab = json.loads((pools / "pools.json").read_text())["vocab_size"]
    n_small, n_large = non_embedding_params(small, vocab), non_embedding_params(large, vocab)
    runs = [([m[d] for d in domains], ABLATION_SEED0) for m in mixes.values()]
    out = {"domains": domains, "targets": targets, "mixtures": mixes, "non_embedding_params":
           {"proxy": n_small, "large": n_large, "ratio": round(n_large / n_small, 2)},
           "proxy_cfg": dataclasses.asdict(small), "large_cfg": dataclasses.asdict(large)}
    t0 = time.perf_counter()
    res_small = train_proxies(pools, runs, small, cache_dir=work / "cache", workers=args.workers, eval_split="eval")
    t1 = time.perf_counter()
    res_large = train_proxies(pools, runs, large, cache_dir=work / "cache", workers=args.workers, eval_split="eval")
    t2 = time.perf_counter()
    ys = [float(np.mean([r["val_loss"][d] for d in targets])) for r in res_small]
    yl = [float(np.mean([r["val_loss"][d] for d in targets])) for r in res_large]
    out.update(proxy_eval_loss=dict(zip(mixes, ys, strict=True)), large_eval_loss=dict(zip(mixes, yl, strict=True)),
               spearman=float(stats.spearmanr(ys, yl).statistic),
               seconds={"proxies": round(t1 - t0, 1), "large": round(t2 - t1, 1)})
    harness.emit("mix_transfer", out, indent=1)


if __name__ == "__main__":
    main()
