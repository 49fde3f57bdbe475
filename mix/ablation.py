"""Mixture ablation: train the same small model on each candidate mixture with S seeds and report
per-domain and average validation loss with the seed spread.

Run as ``corpusmix mix ablation --input POOLS_DIR --mixture NAME=FILE ... --output report.json``
(or from Python with :func:`run_ablation`). It answers "is the searched mixture really better?"
out of sample: every run is scored on the pools' evaluation split (``eval``), which no search
reads, with seeds (``ABLATION_SEED0`` on) that no search proxy uses, and the average is taken over
the target domains (:mod:`mix.targets`). Every mixture is trained with the same seeds, so mixtures
are compared in pairs of runs that share a seed (:mod:`mix.paired`): per-seed differences of the
average loss, a paired t interval and sign test, Holm's correction over all pairs, and a verdict
"better", "worse" or "no difference shown"; see :func:`compare`.

Also here, for replications and sanity checks: :func:`add_noise_domain` appends a pure
random-token domain (uniform token ids, nothing to learn) to a pools folder, in the pools format
of docs/formats.md. A good mixture search must not upweight it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mix.proxy import ProxyConfig, pool_domains, train_proxies

# ablation seeds start here: the searches use seeds 0..~10 (RegMix proxies, DoReMi reference and
# DRO proxies), so an ablation run never shares initialisation or data stream with a search proxy
ABLATION_SEED0 = 1000


def ablation_seeds(n: int) -> list[int]:
    return [ABLATION_SEED0 + i for i in range(n)]


def run_ablation(pools_dir: str | Path, mixtures: Mapping[str, Mapping[str, float]], cfg: ProxyConfig, *,
                 seeds: Sequence[int] = (1000, 1001, 1002, 1003, 1004), cache_dir: str | Path,
                 workers: int = 2, domains_for_avg: Sequence[str] | None = None,
                 eval_split: str = "eval") -> dict[str, Any]:
    """Train ``len(mixtures) * len(seeds)`` proxies (cached, parallel) and summarise them.

    ``mixtures``: ``{name: {domain: weight}}``; missing domains get weight 0. Losses are measured
    on ``eval_split`` (the evaluation split; an empty one is a clear error). The average loss is
    the unweighted mean over ``domains_for_avg`` (the target domains; default: every domain).
    Returns ``{"mixtures": {name: summary}, "seeds", "domains", "avg_over", "eval_split",
    "comparisons", "verdicts"}``.
    """
    from corpusmix.mixture import validate_mixture

    tokens = pool_domains(pools_dir)
    if eval_split != "val":
        held = pool_domains(pools_dir, split=eval_split) if _has_split(pools_dir, eval_split) else {}
        empty = sorted(d for d in tokens if held.get(d, 0) <= 0)
        if empty:
            raise ValueError(f"the {eval_split!r} split is empty for domain(s) {empty}; rebuild the pools "
                             "with pools.eval_fraction > 0 (e.g. 0.05) so mixtures are judged out of sample")
    domains = list(tokens)
    avg_over = list(domains_for_avg or domains)
    runs, names = [], []
    for name, weights in mixtures.items():
        w = validate_mixture(weights, tokens)
        vec = [w.get(d, 0.0) for d in domains]
        for s in seeds:
            runs.append((vec, int(s)))
            names.append(name)
    results = train_proxies(pools_dir, runs, cfg, cache_dir=cache_dir, workers=workers, eval_split=eval_split)
    out: dict[str, Any] = {"seeds": list(seeds), "domains": domains, "avg_over": avg_over,
                           "eval_split": eval_split, "mixtures": {}}
    for name in mixtures:
        rs = [r for r, n in zip(results, names, strict=True) if n == name]
        per = np.array([[r["val_loss"][d] for d in domains] for r in rs])
        avg = np.array([np.mean([r["val_loss"][d] for d in avg_over]) for r in rs])
        out["mixtures"][name] = {
            "weights": dict(zip(domains, rs[0]["weights"], strict=True)),
            "val_loss": dict(zip(domains, per.mean(axis=0).round(5).tolist(), strict=True)),
            "val_loss_std": dict(zip(domains, per.std(axis=0, ddof=1).round(5).tolist() if len(rs) > 1
                                     else [0.0] * len(domains), strict=True)),
            "avg": float(avg.mean()), "avg_per_seed": avg.round(5).tolist(),
            "avg_std": float(avg.std(ddof=1)) if len(avg) > 1 else 0.0,
            "avg_range": float(np.ptp(avg)),
            "seeds": {str(r["seed"]): {"val_loss": r["val_loss"], "curve": r.get("curve", [])} for r in rs},
        }
    out["comparisons"] = compare(out["mixtures"])
    out["verdicts"] = verdicts(out["comparisons"])
    return out


def _has_split(pools_dir: str | Path, split: str) -> bool:
    from proxytrain.pools import read_pools_json

    return any(int(m.get(f"{split}_docs", 0)) > 0 for m in read_pools_json(pools_dir)["domains"].values())


def verdicts(comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    """One plain sentence per compared pair (:func:`mix.paired.sentence`)."""
    from mix.paired import sentence

    return [sentence(c) for c in comparisons]


def compare(summaries: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every unordered pair (a, b) of mixtures, paired over their seeds (``avg_per_seed``, same seed
    order in every mixture): :func:`mix.paired.compare_all` (``mean_diff`` > 0: a's loss is lower;
    ``ci``, ``t_p``, ``sign_p``, Holm-adjusted ``p_holm``, ``verdict``)."""
    from mix.paired import compare_all

    rows = compare_all({name: s["avg_per_seed"] for name, s in summaries.items()})
    for r in rows:
        r.update({k: round(r[k], 6) for k in ("mean_diff", "sd")}, ci=[round(x, 6) for x in r["ci"]])
    return rows


def add_noise_domain(pools_dir: str | Path, *, name: str = "noise", tokens: int, doc_len: int = 512,
                     seed: int = 0, reserved: int = 3) -> dict[str, Any]:
    """Append a domain of uniformly random token ids (no structure) to a pools folder.

    Documents are ``BOS doc EOS`` with ``doc_len`` random ids in ``[reserved, vocab)`` (the first
    ``reserved`` ids are the special tokens). ``pools.json`` is rewritten atomically; the validation
    split gets the same fraction of documents as the other domains. Returns the new pools.json.
    """
    from proxytrain.pools import split_doc_counts, token_dtype
    from proxytrain.tokenizer import BOS, EOS

    root = Path(pools_dir)
    meta = json.loads((root / "pools.json").read_text())
    if name in meta["domains"]:
        raise ValueError(f"domain {name!r} already exists in {root}; choose another name")
    vocab = int(meta["vocab_size"])
    dtype = token_dtype(vocab)
    ids = _special_ids(meta, root)
    n_docs = max(2, tokens // doc_len)
    rng = np.random.default_rng(seed)
    body = rng.integers(reserved, vocab, size=(n_docs, doc_len))
    docs = np.concatenate([np.full((n_docs, 1), ids[BOS]), body, np.full((n_docs, 1), ids[EOS])], axis=1)
    flat = docs.reshape(-1).astype(dtype)
    idx = np.arange(n_docs + 1, dtype=np.int64) * (doc_len + 2)
    flat.tofile(root / f"{name}.bin.tmp")
    os.replace(root / f"{name}.bin.tmp", root / f"{name}.bin")
    with open(root / f"{name}.idx.tmp", "wb") as fh:
        np.save(fh, idx)
    os.replace(root / f"{name}.idx.tmp", root / f"{name}.idx.npy")
    va, ev = split_doc_counts(n_docs, float(meta.get("val_fraction", 0.05)), float(meta.get("eval_fraction", 0.0)))
    meta["domains"][name] = {"tokens": int(flat.size), "docs": n_docs, "val_docs": max(1, va), "eval_docs": ev,
                             "dropped": {}}
    meta["domains"] = dict(sorted(meta["domains"].items()))
    tmp = root / "pools.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2))
    os.replace(tmp, root / "pools.json")
    return meta


def _special_ids(meta: Mapping[str, Any], root: Path) -> dict[str, int]:
    from proxytrain.tokenizer import BOS, EOS

    if "bos_id" in meta and "eos_id" in meta:
        return {BOS: int(meta["bos_id"]), EOS: int(meta["eos_id"])}
    return {BOS: 0, EOS: 1}  # ids of the specials when the tokenizer is trained by proxytrain
