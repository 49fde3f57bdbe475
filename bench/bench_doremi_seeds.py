"""DoReMi's stability across independent searches, not only across the seeds of one search.

    python bench/bench_doremi_seeds.py [--pools DIR] [--base-seeds 0,4,8,12,16,20] [--work DIR]
        [--preset micro] [--variants paired,shared] [--set KEY=VALUE ...] [--proxy-set KEY=VALUE ...]

One search = ``mix.doremi_search.run_doremi`` with the preset's DoReMi defaults and base seed ``s`` (DRO
seeds ``s+1..s+3``; the reference: seed ``s`` when shared, each DRO seed's own when paired). For
each variant (``paired``: one reference per DRO seed, the default; ``shared``: one reference for all
seeds) and each base seed it prints the search's largest per-domain seed range (what one search
reports) and its mixture; then, across the searches, each domain's sd and range of the mixture
(what a user who reruns the search with another seed sees) and the garbage domain's weight against
its targets (below its natural share and below 1/(2k)) where the pools have one.

With ``--set seeds=N`` (N >= 6) each search also prints ``groups`` (:func:`group_ranges`): the
seed range a search would report if each of its 3 outputs averaged N // 3 DRO proxies.

Pools: ``--pools`` (a token-pools folder, e.g. the demo's ``out/pools``) or, by default, the
replication set of :mod:`mix.replication` built from the shipped demo text under ``--work``
(real: code, legal, literature, news; a learnable-garbage domain). Base seeds 4 apart keep the
searches' seeds disjoint (a search uses seeds s+1 .. s + seeds x group_size: 3 m + 1 apart with
``--set group_size=m``). Cached under ``--work``: a re-run reads finished proxies back.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import harness
import numpy as np


def group_ranges(seed_weights: np.ndarray, domains: list[str], *, draws: int = 2000) -> dict:
    """What averaging ``m`` DRO proxies per output would buy: the search's ``n`` per-seed mixtures
    (``--set seeds=n``, n >= 6) split at random into 3 disjoint groups of ``m`` (``m`` = 1 ..
    n // 3, ``draws`` splits, fixed rng), each group's mean mixture an output; per ``m``, the median
    of the largest per-domain range between the 3 outputs and the share of splits where it is
    <= 0.05. Drawn without replacement from one finite set of seeds, so optimistic for large m."""
    n = len(seed_weights)
    rng = np.random.default_rng(0)
    out = {"per_seed_sd": dict(zip(domains, seed_weights.std(axis=0, ddof=1).round(4).tolist(), strict=True))}
    for m in range(1, n // 3 + 1):
        largest = np.array([np.ptp(seed_weights[rng.permutation(n)[:3 * m].reshape(3, m)].mean(axis=1),
                                   axis=0).max() for _ in range(draws)])
        out[f"m={m}"] = {"median_largest_range": round(float(np.median(largest)), 4),
                         "share_le_0.05": round(float(np.mean(largest <= 0.05)), 3)}
    return out


def main() -> None:
    from corpusmix.mixture import natural_mixture
    from corpusmix.paths import DEMO
    from mix.doremi import DoReMiConfig
    from mix.doremi_search import run_doremi
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, pool_domains
    from mix.replication import build_replication_pools

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pools", default=None, help="token-pools folder (default: the replication set)")
    ap.add_argument("--base-seeds", default="0,4,8,12,16,20")
    ap.add_argument("--work", default="/tmp/bench_doremi_seeds")
    ap.add_argument("--preset", default="micro")
    ap.add_argument("--variants", default="paired,shared")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a mix.doremi key of the preset (repeatable), e.g. --set temperature=0.35")
    ap.add_argument("--proxy-set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a mix.proxy key of the preset (repeatable), e.g. --proxy-set lr=5e-4")
    args = ap.parse_args()

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.pools:
        pools = Path(args.pools)
    else:
        marker = work / "replication_pools.txt"
        if not marker.exists():
            built = build_replication_pools(DEMO / "en", work / "replication", real=["code", "legal", "literature", "news"],
                                            garbage_from=["quotes", "reference"])
            marker.write_text(str(built))
        pools = Path(marker.read_text())
    tokens = pool_domains(pools)
    domains = list(tokens)
    natural = natural_mixture(tokens)
    k = len(domains)
    preset = PRESETS[args.preset]
    pcfg = ProxyConfig(**preset["proxy"])
    base = DoReMiConfig(**preset["doremi"])

    def override(obj, kv: str, flag: str):
        key, _, value = kv.partition("=")
        if not hasattr(obj, key) or not value:
            ap.error(f"{flag} {kv!r}: expected KEY=VALUE with KEY one of {', '.join(dataclasses.asdict(obj))}")
        current = getattr(obj, key)
        return dataclasses.replace(obj, **{key: value.lower() == "true" if isinstance(current, bool)
                                           else type(current)(value)})

    for kv in args.set:
        base = override(base, kv, "--set")
    for kv in args.proxy_set:
        pcfg = override(pcfg, kv, "--proxy-set")
    seeds = [int(s) for s in args.base_seeds.split(",")]
    out: dict = {"pools": str(pools), "domains": domains, "preset": args.preset, "base_seeds": seeds,
                 "doremi": dataclasses.asdict(base), "proxy": dataclasses.asdict(pcfg), "variants": {}}
    for variant in args.variants.split(","):
        cfg = dataclasses.replace(base, paired_reference=variant == "paired")
        runs = []
        for s in seeds:
            r = run_doremi(pools, cfg, pcfg, seed=s, cache_dir=work / f"cache_{variant}", progress=False)
            w = [r["weights"][d] for d in domains]
            runs.append({"seed": s, "weights": dict(zip(domains, np.round(w, 4).tolist(), strict=True)),
                         "largest_seed_range": round(max(r["seed_range"].values()), 4),
                         "largest_range_domain": max(r["seed_range"], key=r["seed_range"].get),
                         "seconds": r["seconds"]})
            for key in ("range_sizing", "pilot", "group_size"):  # what the run says of its own sizing
                if key in r:
                    runs[-1][key] = r[key]
            if cfg.seeds >= 6:
                runs[-1]["groups"] = group_ranges(np.array(r["seed_weights"]), domains)
            print(json.dumps({"variant": variant, **runs[-1]}), flush=True)
        W = np.array([[run["weights"][d] for d in domains] for run in runs])
        summary = {"runs": runs,
                   "mixture_sd": dict(zip(domains, W.std(axis=0, ddof=1).round(4).tolist(), strict=True)),
                   "mixture_range": dict(zip(domains, np.ptp(W, axis=0).round(4).tolist(), strict=True)),
                   "searches_with_largest_seed_range_le_0.05": sum(r["largest_seed_range"] <= 0.05 for r in runs)}
        if "garbage" in domains:
            g = W[:, domains.index("garbage")]
            summary["garbage"] = {"natural": round(natural["garbage"], 4), "half_uniform": round(1 / (2 * k), 4),
                                  "weights": g.round(4).tolist(),
                                  "below_natural": int((g < natural["garbage"]).sum()),
                                  "below_half_uniform": int((g < 1 / (2 * k)).sum())}
        out["variants"][variant] = summary
    harness.emit("doremi_seeds", out, indent=1)


if __name__ == "__main__":
    main()
