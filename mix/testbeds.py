"""Known-answer testbeds for mixture searches: pool sets whose best mixture is known by construction.

A testbed is a token-pools folder of real-text domains (the targets) plus junk domains that no
target can gain from (random tokens, learnable garbage, a duplicated useless domain), built so that
the natural mixture is dominated by junk. The oracle puts equal weight on the targets and none on
junk, within the epoch caps a search is held to (:func:`capped_oracle`); it is the positive
control: a testbed is valid only when the oracle beats both the uniform and the natural mixture,
paired over evaluation seeds (:func:`validity`). Kinds (``KINDS``):

- ``noise``: 4 real domains + uniformly random tokens, 3x their tokens (the natural mixture is 75 % noise);
- ``garbage``: 4 real domains + learnable garbage (:mod:`mix.replication`), 3x their tokens;
- ``duplicate``: 4 real domains + one useless garbage domain written twice under two names;
- ``tiny``: 4 real domains, one of them 1/8 the size of the others (its equal share of a micro proxy
  run needs about the default 4-epoch cap), + learnable garbage 2x the real tokens (the natural
  mixture nearly ignores the tiny target);
- ``k4``: 2 real domains + noise + garbage;
- ``k12``: 6 real domains + 5 garbage domains (one kind each) + noise.

::

    from mix.testbeds import build_testbed
    tb = build_testbed("noise", {"code": "data/demo/en/code.parquet", ...}, ["data/demo/en/quotes.parquet"],
                       "/tmp/tb-noise", seed=0)
    tb.pools, tb.targets, tb.junk, tb.oracle

Documents are drawn from each source file in a seeded random order (``seed``), so testbeds built
with different seeds from the same files hold different documents. ``bench/bench_mix_testbeds.py``
runs the searches on them and judges the results (docs/mix.md, "Known-answer testbeds").
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

KINDS = ("noise", "garbage", "duplicate", "tiny", "k4", "k12")
# how many real (target) domains each kind takes from the sources
TINY_FRACTION = 8  # the tiny target's size: 1/8 of the others (module docstring)
REAL_DOMAINS = {"noise": 4, "garbage": 4, "duplicate": 4, "tiny": 4, "k4": 2, "k12": 6}
GARBAGE_KINDS_K12 = ("spam", "table", "hex", "base64", "shuffled")


@dataclass
class Testbed:
    """One built testbed: its pools folder, target and junk domains and the known best mixture."""

    kind: str
    pools: str
    targets: list[str]
    junk: list[str]
    oracle: dict[str, float]
    seed: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _sample_texts(path: str | Path, max_chars: int, doc_chars: int, seed: int) -> list[str]:
    """Documents of ``path`` (Parquet with a ``text`` column) in a seeded random order, each cut to
    ``doc_chars``, until ``max_chars`` characters."""
    import pyarrow.parquet as pq

    texts = [t for t in pq.read_table(path, columns=["text"]).column("text").to_pylist() if t and t.strip()]
    if not texts:
        raise ValueError(f"{path} has no text to build a testbed domain from")
    random.Random(seed).shuffle(texts)
    out, n = [], 0
    for t in texts:
        out.append(t[:doc_chars])
        n += len(out[-1])
        if n >= max_chars:
            break
    return out


def _write_domain(cur: Path, name: str, texts: Sequence[str], sources: Sequence[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": [f"{name}/{i:05d}" for i in range(len(texts))], "text": list(texts),
                             "domain": [name] * len(texts), "source": list(sources)}), cur / f"{name}.parquet")


def build_testbed(kind: str, sources: Mapping[str, str | Path], garbage_sources: Sequence[str | Path],
                  out_dir: str | Path, *, seed: int = 0, chars_per_domain: int = 200_000, doc_chars: int = 4000,
                  vocab_size: int = 512, val_fraction: float = 0.1, eval_fraction: float = 0.1) -> Testbed:
    """Build testbed ``kind`` under ``out_dir`` (curated Parquet, tokenizer, pools, ``testbed.json``).

    ``sources``: ``{domain: parquet}`` of real text, the first ``REAL_DOMAINS[kind]`` are the targets;
    ``garbage_sources``: Parquet files whose text the garbage is made of (none of them a target's).
    Reuses a finished build of the same arguments (``testbed.json``)."""
    from mix.ablation import add_noise_domain
    from mix.replication import GARBAGE_KINDS, garbage_docs
    from proxytrain.pools import PoolsConfig, build_pools
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    if kind not in KINDS:
        raise ValueError(f"unknown testbed kind {kind!r}; choose one of {KINDS}")
    n_real = REAL_DOMAINS[kind]
    if len(sources) < n_real:
        raise ValueError(f"testbed {kind} needs {n_real} real domains, got {len(sources)} ({sorted(sources)})")
    if not garbage_sources:
        raise ValueError("a testbed needs garbage_sources (text the learnable garbage is made of)")
    real = list(sources)[:n_real]
    root = Path(out_dir)
    args = {"kind": kind, "real": {d: str(sources[d]) for d in real}, "garbage": [str(g) for g in garbage_sources],
            "seed": seed, "chars": chars_per_domain, "doc_chars": doc_chars, "vocab": vocab_size,
            "val": val_fraction, "eval": eval_fraction}
    if kind == "tiny":
        args["tiny_fraction"] = TINY_FRACTION
    done = root / "testbed.json"
    if done.exists() and json.loads(done.read_text()).get("args") == args:
        return Testbed(**json.loads(done.read_text())["testbed"])
    shutil.rmtree(root, ignore_errors=True)
    cur = root / "curated"
    cur.mkdir(parents=True)
    real_chars = 0
    for i, d in enumerate(real):
        chars = chars_per_domain // TINY_FRACTION if kind == "tiny" and i == n_real - 1 else chars_per_domain
        texts = _sample_texts(sources[d], chars, doc_chars, seed + i)
        real_chars += sum(map(len, texts))
        _write_domain(cur, d, texts, [d] * len(texts))
    pool = [t for j, g in enumerate(garbage_sources) for t in _sample_texts(g, 10 ** 9, doc_chars, seed + 100 + j)]
    junk: list[str] = []

    def garbage(name: str, chars: int, kinds: Sequence[str] = GARBAGE_KINDS, copies: Sequence[str] = ()) -> None:
        docs = garbage_docs(pool, max(len(kinds), chars // 1500), seed=seed + len(junk), kinds=kinds)
        for n in (name, *copies):
            _write_domain(cur, n, [t for _, t in docs], [k for k, _ in docs])
            junk.append(n)

    if kind == "garbage":
        garbage("garbage", 3 * real_chars)
    elif kind == "duplicate":
        garbage("junk_a", 3 * real_chars // 2, copies=["junk_b"])
    elif kind == "tiny":
        garbage("garbage", 2 * real_chars)
    elif kind == "k4":
        garbage("garbage", real_chars)
    elif kind == "k12":
        for g in GARBAGE_KINDS_K12:
            garbage(f"junk_{g}", real_chars // 4, kinds=[g])
    train_tokenizer(cur, root / "tokenizer.json", TokenizerConfig(vocab_size=vocab_size))
    pools = root / "pools"
    build_pools(cur, root / "tokenizer.json", pools,
                PoolsConfig(val_fraction=val_fraction, eval_fraction=eval_fraction, workers=1))
    if kind in ("noise", "k4", "k12"):
        meta = json.loads((pools / "pools.json").read_text())
        real_tokens = sum(int(meta["domains"][d]["tokens"]) for d in real)
        share = {"noise": 3.0, "k4": 1.0, "k12": 0.5}[kind]
        add_noise_domain(pools, name="noise", tokens=int(share * real_tokens), seed=seed)
        junk.append("noise")
    tb = Testbed(kind=kind, pools=str(pools), targets=sorted(real), junk=sorted(junk),
                 oracle={d: (1.0 / n_real if d in real else 0.0) for d in sorted([*real, *junk])}, seed=seed)
    done.write_text(json.dumps({"args": args, "testbed": tb.to_json()}, indent=1))
    return tb


def capped_oracle(oracle: Mapping[str, float], caps: Mapping[str, float]) -> dict[str, float]:
    """``oracle`` within per-domain ``caps``: a domain above its cap gets the cap and its excess is
    shared equally by the domains of positive weight still under theirs (repeated until none is
    above; water-filling). Raises when the caps cannot hold the oracle's domains."""
    w = {d: float(v) for d, v in oracle.items()}
    free = [d for d, v in w.items() if v > 0]
    if sum(min(1.0, float(caps[d])) for d in free) < 1.0 - 1e-9:
        raise ValueError(f"the epoch caps {dict(caps)} cannot hold the oracle's domains {free}")
    while True:
        over = [d for d in free if w[d] > caps[d] + 1e-12]
        if not over:
            return w
        excess = sum(w[d] - caps[d] for d in over)
        for d in over:
            w[d] = float(caps[d])
        free = [d for d in free if d not in over]
        for d in free:
            w[d] += excess / len(free)


def validity(ablation: Mapping[str, Any], *, oracle: str = "oracle",
             baselines: Sequence[str] = ("uniform", "natural"), alpha: float = 0.05) -> dict[str, Any]:
    """Is the testbed valid: does the oracle beat every baseline, paired over the ablation's seeds
    (Holm over the baselines, two-sided ``alpha``)? Returns ``{"valid", "comparisons", "reason"}``."""
    from mix.paired import compare_all

    per_seed = {n: s["avg_per_seed"] for n, s in ablation["mixtures"].items()}
    missing = [n for n in (oracle, *baselines) if n not in per_seed]
    if missing:
        raise ValueError(f"testbed validity needs the arms {[oracle, *baselines]} in the ablation; missing {missing}")
    rows = compare_all(per_seed, pairs=[(oracle, b) for b in baselines], alpha=alpha)
    bad = [r["b"] for r in rows if r["verdict"] != "better"]
    return {"valid": not bad, "comparisons": rows,
            "reason": "" if not bad else f"the oracle does not beat {', '.join(bad)} (paired, Holm, alpha {alpha}): "
                                         "this testbed cannot judge a search"}


# pre-registered pass rules (docs/mix.md, "Known-answer testbeds"); p is the paired t p-value of one
# comparison over the evaluation seeds, not adjusted (each rule is judged on its own)
P_MAX = 0.01
ORACLE_GAP = 0.02
JUNK_MAX = 0.05


def judge(name: str, ablation: Mapping[str, Any], tb: Testbed, *, against: Sequence[str],
          oracle_gap: bool = True) -> dict[str, Any]:
    """The pass rules for the searched mixture ``name``: paired better than each of ``against``
    (p < ``P_MAX``, lower in every seed), less than ``JUNK_MAX`` total weight on junk, and (with
    ``oracle_gap``) within ``ORACLE_GAP`` of the oracle's mean loss (always reported)."""
    from mix.paired import paired_stats

    arms = ablation["mixtures"]
    mine = arms[name]["avg_per_seed"]
    rows = {}
    for b in against:
        st = paired_stats(mine, arms[b]["avg_per_seed"])
        rows[b] = {"mean_diff": st["mean_diff"], "ci": st["ci"], "t_p": st["t_p"], "wins": st["wins"], "n": st["n"],
                   "pass": st["t_p"] < P_MAX and st["wins"] == st["n"] and st["mean_diff"] > 0}
    gap = float(sum(mine) / len(mine) - sum(arms["oracle"]["avg_per_seed"]) / len(mine))
    junk = float(sum(arms[name]["weights"].get(d, 0.0) for d in tb.junk))
    return {"against": rows, "oracle_gap": gap, "oracle_gap_pass": gap <= ORACLE_GAP, "junk_weight": junk,
            "junk_pass": junk < JUNK_MAX,
            "pass": all(r["pass"] for r in rows.values()) and (gap <= ORACLE_GAP or not oracle_gap)
            and junk < JUNK_MAX}


def run_testbed(tb: Testbed, *, proxy_cfg: Any, regmix_cfg: Any | None = None,
                doremi_cfgs: Mapping[str, Any] | None = None, seeds: int = 5, workers: int = 2,
                work: str | Path) -> dict[str, Any]:
    """Run the searches on ``tb`` and judge them out of sample.

    RegMix (``regmix_cfg``, target = the mean loss over ``tb.targets``) and each DoReMi config of
    ``doremi_cfgs`` (``{arm name: DoReMiConfig}``) search on the pools (search seeds from 0); then
    the ablation trains ``oracle``, ``uniform``, ``natural`` and every searched mixture with
    ``seeds`` evaluation seeds (from 1000: no search uses them) and scores them on the evaluation
    split, averaged over the targets. Returns the weights, the ablation, :func:`validity` and, per
    searched arm, :func:`judge` (RegMix against uniform and natural; DoReMi against natural and its
    reference mixture)."""
    import dataclasses
    import time

    import numpy as np

    from corpusmix.mixture import natural_mixture, uniform_mixture
    from mix.ablation import ablation_seeds, run_ablation
    from mix.doremi_search import run_doremi
    from mix.proxy import pool_domains
    from mix.regmix import RegMixConfig, epoch_caps, run_regmix

    work = Path(work)
    tokens = pool_domains(tb.pools)
    # the oracle within the epoch caps RegMix is held to (its max_epochs; the final run here is the
    # ablation's proxy run)
    max_epochs = (regmix_cfg or RegMixConfig()).max_epochs
    budget = proxy_cfg.steps * proxy_cfg.batch_size * proxy_cfg.seq_len
    caps = dict(zip(tokens, epoch_caps(np.array(list(tokens.values()), dtype=np.float64), budget,
                                       max_epochs).tolist(), strict=True))
    oracle = capped_oracle(tb.oracle, caps)
    mixtures: dict[str, dict[str, float]] = {"oracle": oracle, "uniform": uniform_mixture(tokens),
                                             "natural": natural_mixture(tokens)}
    # DoReMi's `targets` reference is the uncapped oracle: its own arm when the caps moved the oracle
    targets_ref = "oracle" if oracle == dict(tb.oracle) else "targets_reference"
    if targets_ref != "oracle" and any(c.reference_mixture == "targets" for c in (doremi_cfgs or {}).values()):
        mixtures[targets_ref] = dict(tb.oracle)
    out: dict[str, Any] = {"testbed": tb.to_json(), "searches": {}, "oracle": oracle, "caps": caps}
    if regmix_cfg is not None:
        t0 = time.perf_counter()
        res = run_regmix(tb.pools, dataclasses.replace(regmix_cfg, final_tokens=0), proxy_cfg, seed=0,
                         cache_dir=work / "cache_regmix", targets=tb.targets)
        mixtures["regmix"] = res["weights"]
        rep = res["report"]
        out["searches"]["regmix"] = {"weights": res["weights"], "fit": rep["fit"], "search": rep["search"],
                                     "seconds": round(time.perf_counter() - t0, 1)}
    for name, dcfg in (doremi_cfgs or {}).items():
        t0 = time.perf_counter()
        res = run_doremi(tb.pools, dcfg, proxy_cfg, seed=0, cache_dir=work / f"cache_{name}", progress=False,
                         targets=tb.targets)
        mixtures[name] = res["weights"]
        out["searches"][name] = {"weights": res["weights"], "seed_range": res["seed_range"],
                                 "reference": dcfg.reference_mixture, "seconds": round(time.perf_counter() - t0, 1)}
    abl = run_ablation(tb.pools, mixtures, proxy_cfg, seeds=ablation_seeds(seeds), cache_dir=work / "cache_ablation",
                       workers=workers, domains_for_avg=tb.targets, eval_split="eval")
    out["ablation"] = {n: {"weights": s["weights"], "avg": s["avg"], "avg_per_seed": s["avg_per_seed"]}
                       for n, s in abl["mixtures"].items()}
    out["verdicts"] = abl["verdicts"]
    out["validity"] = validity(abl)
    out["judged"] = {}
    if "regmix" in mixtures:
        out["judged"]["regmix"] = judge("regmix", abl, tb, against=["uniform", "natural"])
    for name, dcfg in (doremi_cfgs or {}).items():
        ref = {"targets": targets_ref}.get(dcfg.reference_mixture, dcfg.reference_mixture)  # its reference's mixture
        out["judged"][name] = judge(name, abl, tb, against=sorted({"natural", ref}), oracle_gap=False)
    return out
