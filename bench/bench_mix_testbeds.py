"""Mixture searches on known-answer testbeds (mix/testbeds.py), judged out of sample, paired.

    python bench/bench_mix_testbeds.py --family dev [--kinds noise,garbage] [--seeds 5] [--work DIR]
    python bench/bench_mix_testbeds.py --family heldout|heldout2 --source ../shared/corpora ...

Families (the domains and documents each testbed is built from):

- ``dev``: the shipped demo text (data/demo/en: code, legal, literature, news, quotes, reference,
  techdocs; garbage made of the domains that are not targets), testbed seed 0. The designs of the
  searches were chosen on this family.
- ``heldout``: text the designs never saw: the English domains of ``--source`` other than the
  demo's roles first (techdocs, reference, quotes, legal, literature, news, code), documents drawn
  in another seeded order (testbed seed 17), garbage made of the multilingual files; k12 takes its
  real domains from six languages of ``--source/multilingual``. Its results led to the proxies'
  spread validation windows (docs/mix.md), so it is development data since.
- ``heldout2``: roles no earlier family gave these texts: literature, code, Japanese and Chinese as
  the real domains (k4: literature and code), garbage made of news and Italian text; k12: the six
  English domains code, legal, literature, quotes, reference and techdocs, garbage made of Russian
  text; testbed seed 29.

Per testbed: RegMix (the library defaults of ``RegMixConfig`` with the micro preset's proxies and
``num_proxies``) and DoReMi (``--doremi`` arms VARIANT-REFERENCE, default ``paper`` with the
``targets`` reference (the default) and with the ``natural`` one (the paper's baseline)), then the ablation of oracle, uniform, natural and every searched mixture
with ``--seeds`` evaluation seeds (the tuned variant without its second-stage group sizing,
``max_group_size: 0``, to bound the cost), and the pre-registered pass rules of :func:`mix.testbeds.judge`.
Work is cached under ``--work`` (a re-run reads finished proxies back). Prints one JSON line per
testbed and writes them all to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]

DEV_REAL = ["code", "legal", "literature", "news", "techdocs", "reference"]
DEV_GARBAGE = ["quotes"]
HELD_REAL = ["techdocs", "reference", "quotes", "legal", "literature", "news"]
HELD_LANGS = ["de", "fr", "es", "it", "pl", "nl"]
# the second held-out family: roles no earlier family gave these texts
HELD2_REAL = ["literature", "code", "ja", "zh"]
HELD2_K12 = ["code", "legal", "literature", "quotes", "reference", "techdocs"]


def families(name: str, source: Path, kind: str) -> tuple[dict[str, Path], list[Path], int]:
    """``(real sources, garbage sources, testbed seed)`` of a family for one testbed kind."""
    from mix.testbeds import REAL_DOMAINS

    n = REAL_DOMAINS[kind]
    if name == "dev":
        src = ROOT / "data" / "demo" / "en"
        real = DEV_REAL[:n]
        garbage = [d for d in DEV_REAL + DEV_GARBAGE if d not in real][:2]
        return {d: src / f"{d}.parquet" for d in real}, [src / f"{d}.parquet" for d in garbage], 0
    if name == "heldout2":
        def path(d: str) -> Path:
            return source / "multilingual" / f"{d}.parquet" if len(d) == 2 else source / f"{d}.parquet"

        if kind == "k12":
            return {d: path(d) for d in HELD2_K12}, [path("ru")], 29
        return {d: path(d) for d in HELD2_REAL[:n]}, [path("news"), path("it")], 29
    if kind == "k12":
        real = {lang: source / "multilingual" / f"{lang}.parquet" for lang in HELD_LANGS}
        return real, [source / "code.parquet"], 17
    real = {d: source / f"{d}.parquet" for d in HELD_REAL[:n]}
    return real, [source / "multilingual" / "cs.parquet", source / "multilingual" / "ru.parquet"], 17


def main() -> int:
    from mix.doremi import VARIANTS, DoReMiConfig
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig
    from mix.regmix import RegMixConfig
    from mix.testbeds import KINDS, build_testbed, run_testbed

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--family", default="dev", choices=["dev", "heldout", "heldout2"])
    ap.add_argument("--source", default=str(ROOT.parent / "shared" / "corpora"))
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--doremi", default="paper-targets,paper-natural",
                    help="DoReMi arms VARIANT-REFERENCE, comma-separated ('' = none)")
    ap.add_argument("--no-regmix", action="store_true")
    ap.add_argument("--regmix", default="{}", help="JSON of RegMixConfig overrides")
    ap.add_argument("--transfer", type=int, default=0,
                    help="also train oracle, uniform, natural and RegMix's mixture on a model >= 10x the proxy "
                         "(d 128, 6 layers) with 10x the tokens, this many seeds (0 = off)")
    ap.add_argument("--work", default="/tmp/corpusmix-testbeds")
    ap.add_argument("--out", default="")
    ap.add_argument("--table", nargs="*", default=None,
                    help="print Markdown tables of earlier --out files (no training) and exit")
    args = ap.parse_args()
    if args.table is not None:
        print(markdown([r for f in args.table for r in json.loads(Path(f).read_text())["result"]["testbeds"]]))
        return 0
    pcfg = ProxyConfig(**PRESETS["micro"]["proxy"], device="cpu")
    rcfg = None if args.no_regmix else RegMixConfig(**{**PRESETS["micro"]["regmix"], "workers": args.workers,
                                                          **json.loads(args.regmix)})
    dcfgs = {}
    for arm in [a for a in args.doremi.split(",") if a]:
        variant, ref = arm.split("-")
        # max_group_size 0: no second-stage group sizing (bounded cost per testbed)
        dcfgs[f"doremi_{variant}_{ref}"] = DoReMiConfig(**{**PRESETS["micro"]["doremi"], **VARIANTS[variant],
                                                           "variant": variant, "reference_mixture": ref,
                                                           "workers": args.workers, "max_group_size": 0})
    results = []
    for kind in args.kinds.split(","):
        real, garbage, seed = families(args.family, Path(args.source), kind)
        work = Path(args.work) / args.family / kind
        t0 = time.perf_counter()
        tb = build_testbed(kind, real, garbage, work / "data", seed=seed)
        res = run_testbed(tb, proxy_cfg=pcfg, regmix_cfg=rcfg, doremi_cfgs=dcfgs, seeds=args.seeds,
                          workers=args.workers, work=work)
        if args.transfer and "regmix" in res["ablation"]:
            res["transfer"] = transfer(tb, res, pcfg, args.transfer, args.workers, work)
        res.update(family=args.family, seconds=round(time.perf_counter() - t0, 1))
        results.append(res)
        print(json.dumps(summary(res)), flush=True)
    if args.out:
        harness.write_record("mix_testbeds", {"testbeds": results}, args.out)
    return 0


def transfer(tb, res: dict, pcfg, seeds: int, workers: int, work: Path) -> dict:
    """Oracle, uniform, natural and RegMix's mixture trained on a larger model (d 128, 6 layers) with
    10x the proxy's steps (same batch and sequence: 10x the tokens), ``seeds`` evaluation seeds,
    scored like the ablation; RegMix's paired margins over uniform and natural there."""
    import dataclasses

    from mix.ablation import ablation_seeds, run_ablation
    from mix.paired import paired_stats
    from mix.proxy import build_proxy_model
    from proxytrain.model import count_params

    large = dataclasses.replace(pcfg, d_model=128, n_layers=6, n_heads=4, steps=10 * pcfg.steps,
                                warmup=10 * pcfg.warmup)
    arms = {n: res["ablation"][n]["weights"] for n in ("oracle", "uniform", "natural", "regmix")}
    abl = run_ablation(tb.pools, arms, large, seeds=ablation_seeds(seeds), cache_dir=work / "cache_transfer",
                       workers=workers, domains_for_avg=tb.targets, eval_split="eval")
    ratio = count_params(build_proxy_model(tb.pools, large)) / count_params(build_proxy_model(tb.pools, pcfg))
    out = {"params_ratio": round(ratio, 1), "tokens_ratio": 10, "seeds": seeds,
           "avg": {n: round(s["avg"], 4) for n, s in abl["mixtures"].items()}}
    for b in ("uniform", "natural"):
        for where, per in (("proxy", res["ablation"]), ("large", abl["mixtures"])):
            st = paired_stats(per["regmix"]["avg_per_seed"][:seeds], per[b]["avg_per_seed"][:seeds])
            out[f"{where}_vs_{b}"] = [round(st["mean_diff"], 4), [round(x, 4) for x in st["ci"]], round(st["t_p"], 4),
                                     f"{st['wins']}/{st['n']}"]
    return out


def summary(res: dict) -> dict:
    """The figures a reader needs per testbed: validity, and per searched arm its weights on junk,
    paired margins over the baselines (mean, interval, p, seeds won), the gap to the oracle, pass."""
    tb = res["testbed"]
    out = {"family": res["family"], "kind": tb["kind"], "valid": res["validity"]["valid"],
           "oracle_vs": {r["b"]: [round(r["mean_diff"], 4), round(r["t_p"], 4)] for r in res["validity"]["comparisons"]},
           "avg": {n: round(a["avg"], 4) for n, a in res["ablation"].items()}, "seconds": res["seconds"],
           **({"transfer": res["transfer"]} if "transfer" in res else {})}
    for name, j in res["judged"].items():
        out[name] = {"pass": j["pass"], "junk": round(j["junk_weight"], 3), "oracle_gap": round(j["oracle_gap"], 4),
                     **{f"vs_{b}": [round(r["mean_diff"], 4), [round(x, 4) for x in r["ci"]], round(r["t_p"], 4),
                                    f"{r['wins']}/{r['n']}"] for b, r in j["against"].items()},
                     "weights": {d: round(w, 3) for d, w in res["ablation"][name]["weights"].items()}}
    return out


def _cell(j: dict, base: str) -> str:
    r = j["against"].get(base)
    if r is None:
        return ""
    return f"{r['mean_diff']:+.3f} [{r['ci'][0]:+.3f}, {r['ci'][1]:+.3f}] p {r['t_p']:.3g} {r['wins']}/{r['n']}"


def markdown(results: list[dict]) -> str:
    """One row per (testbed, searched arm): validity, the paired margins over the baselines, the gap
    to the oracle, the junk weight and pass/fail."""
    head = ("| family | testbed | valid (oracle - uniform, - natural) | arm | vs uniform | vs natural | vs its reference "
            "| loss - oracle | junk weight | pass |\n|" + " --- |" * 10)
    rows = [head]
    for res in results:
        v = {r["b"]: r["mean_diff"] for r in res["validity"]["comparisons"]}
        valid = f"{'yes' if res['validity']['valid'] else 'NO'} (+{v['uniform']:.3f}, +{v['natural']:.3f})"
        for arm, j in res["judged"].items():
            ref = next((b for b in j["against"] if b not in ("uniform", "natural")), None)
            rows.append(f"| {res['family']} | {res['testbed']['kind']} | {valid} | {arm} | {_cell(j, 'uniform')} | "
                        f"{_cell(j, 'natural')} | {_cell(j, ref) if ref else ''} | {j['oracle_gap']:+.3f} | "
                        f"{j['junk_weight']:.3f} | {'**pass**' if j['pass'] else 'fail'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
