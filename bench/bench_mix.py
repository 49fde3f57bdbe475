"""Wall time of the ``tiny`` mixture-search presets (DoReMi and RegMix) on 2 CPU cores.

    python bench/bench_mix.py [--preset tiny] [--chars 1000000] [--work /tmp/bench_mix]

Data: the seven English domains of /work/shared/corpora (each capped to ``--chars`` characters),
a 4096-token BPE (the ``tokenizer`` default of params.yaml) and a random-token noise domain.
The anchor is one proxy of the same preset trained on the natural mixture (the unit of cost of
both methods); it runs before, between and after the two methods, and the report gives each
method's time absolutely and as a ratio to the mean anchor time, so machine drift shows.
Every run uses a fresh cache (nothing is read back). ``--num-proxies`` trains fewer RegMix proxies
on a loaded machine; the report then also extrapolates to the preset's M (waves of ``workers``
proxies; labelled as such). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import harness

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA

CORPORA = _SHARED_CORPORA
DOMAINS = ["code", "legal", "literature", "news", "quotes", "reference", "techdocs"]


def build_pools(work: Path, chars: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mix.ablation import add_noise_domain
    from proxytrain.pools import PoolsConfig
    from proxytrain.pools import build_pools as _build
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    pools = work / "pools"
    if (pools / "pools.json").exists() and "noise" in json.loads((pools / "pools.json").read_text())["domains"]:
        return pools
    cur = work / "curated"
    cur.mkdir(parents=True, exist_ok=True)
    for d in DOMAINS:
        t = pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text", "domain", "source"])
        texts, n, keep = t.column("text").to_pylist(), 0, []
        for i, x in enumerate(texts):
            keep.append(i)
            n += min(len(x), 20_000)
            if n >= chars:
                break
        sub = t.take(keep)
        sub = sub.set_column(1, "text", pa.array([x[:20_000] for x in sub.column("text").to_pylist()]))
        pq.write_table(sub, cur / f"{d}.parquet")
    train_tokenizer(cur, work / "tokenizer.json", TokenizerConfig(vocab_size=4096))
    _build(cur, work / "tokenizer.json", pools, PoolsConfig(val_fraction=0.05, workers=2))
    add_noise_domain(pools, name="noise", tokens=300_000, doc_len=512, seed=0)
    return pools


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--chars", type=int, default=1_000_000)
    ap.add_argument("--work", default="/tmp/bench_mix")
    ap.add_argument("--methods", default="doremi,regmix", help="comma-separated: doremi, regmix")
    ap.add_argument("--num-proxies", type=int, default=0,
                    help="RegMix M override (0 = the preset's); the report extrapolates to the preset's M")
    args = ap.parse_args()

    from corpusmix.mixture import natural_mixture
    from mix.doremi import DoReMiConfig
    from mix.doremi_search import run_doremi
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, pool_domains, train_proxy
    from mix.regmix import RegMixConfig, run_regmix

    work = Path(args.work)
    t = time.perf_counter()
    pools = build_pools(work, args.chars)
    setup_s = time.perf_counter() - t
    preset = PRESETS[args.preset]
    pcfg = ProxyConfig(**preset["proxy"])
    tokens = pool_domains(pools)
    nat = natural_mixture(tokens)
    nat_w = [nat[d] for d in tokens]

    anchors: list[float] = []
    methods = [m for m in args.methods.split(",") if m]

    def phase(name: str, seconds: float) -> None:  # partial results survive an interrupted run
        print(json.dumps({"phase": name, "seconds": round(seconds, 1)}), flush=True)

    def anchor() -> None:
        t0 = time.perf_counter()
        train_proxy(pools, nat_w, pcfg, seed=len(anchors))
        anchors.append(time.perf_counter() - t0)
        phase("anchor", anchors[-1])

    anchor()
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    dres, doremi_s = {"weights": {}}, float("nan")
    if "doremi" in methods:
        t0 = time.perf_counter()
        dres = run_doremi(pools, DoReMiConfig(**preset["doremi"]), pcfg, seed=0, cache_dir=cache / "doremi",
                          progress=False)
        doremi_s = time.perf_counter() - t0
        phase("doremi", doremi_s)
        anchor()
    if "regmix" not in methods:
        print(json.dumps({"preset": args.preset, "anchor_proxy_s": anchors, "doremi_s": round(doremi_s, 1),
                          "doremi_over_anchor": round(doremi_s / (sum(anchors) / len(anchors)), 2),
                          "doremi_weights": dres["weights"]}, indent=1))
        return
    t0 = time.perf_counter()
    m_preset = preset["regmix"]["num_proxies"]
    m = args.num_proxies or m_preset
    rcfg = RegMixConfig(**{**preset["regmix"], "num_proxies": m})
    rres = run_regmix(pools, rcfg, pcfg, seed=0, cache_dir=cache / "regmix")
    regmix_s = time.perf_counter() - t0
    phase("regmix", regmix_s)
    anchor()
    shutil.rmtree(cache, ignore_errors=True)
    mean_anchor = sum(anchors) / len(anchors)
    harness.emit("mix", {
        "preset": args.preset, "proxy": preset["proxy"], "domains": len(tokens),
        "pool_tokens": sum(tokens.values()), "setup_s": round(setup_s, 1),
        "anchor_proxy_s": [round(a, 1) for a in anchors],
        "doremi_s": round(doremi_s, 1), "doremi_over_anchor": round(doremi_s / mean_anchor, 2),
        "regmix_s": round(regmix_s, 1), "regmix_over_anchor": round(regmix_s / mean_anchor, 2),
        "regmix_proxies": m, "regmix_proxies_preset": m_preset,
        # proxies run in waves of `workers`; the regression and search add a few seconds
        "regmix_s_extrapolated_to_preset": round(regmix_s * -(-m_preset // rcfg.workers) / -(-m // rcfg.workers), 1),
        "within_10_min": {"doremi": doremi_s <= 600,
                          "regmix": regmix_s * -(-m_preset // rcfg.workers) / -(-m // rcfg.workers) <= 600},
        "doremi_weights": {d: round(w, 4) for d, w in dres["weights"].items()},
        "regmix_weights": {d: round(w, 4) for d, w in rres["weights"].items()},
        "regmix_fit": rres["report"]["fit"],
    }, indent=1)


if __name__ == "__main__":
    main()
