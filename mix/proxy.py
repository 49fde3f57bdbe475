"""Proxy models for the mixture searches: trainer runs (``proxytrain.train.train``) on a mixture of
the token pools, scored by per-domain held-out loss; cached, resumable and dispatched over devices.

Library module; used by ``corpusmix mix doremi|regmix|ablation`` and ``corpusmix mix proxy-run``::

    from mix.proxy import ProxyConfig, train_proxy, train_proxies
    model, result = train_proxy("pools/", weights, ProxyConfig(steps=100), seed=0)
    results = train_proxies("pools/", [(w1, 0), (w2, 0)], cfg, cache_dir="cache/", workers=2)

There is one training loop: a proxy IS a run of the trainer (model, optimizer, schedule, clipping,
spike guard, FSDP2 under torchrun, DCP checkpoints, attention backend ``auto``: FlashAttention
varlen on CUDA when installed). This module runs a proxy and reads the pools; the mixture logic
around the trainer lives beside it:

- :mod:`mix.proxy_config`: :class:`ProxyConfig` and the trainer config it maps to;
- :mod:`mix.proxy_sources`: the batch sources, rows by mixture weight (``sampling: stratified``
  or ``iid``) or balanced DRO batches, and the validation windows every proxy of a search is
  scored on (``val`` for the searches, ``eval`` for the ablation, which no search reads);
- :mod:`mix.proxy_cache`: a finished proxy's result is ``cache_dir/proxy-<key>.json`` (the key
  hashes the pools, the weights, the config and the seed) and is never retrained;
- dispatch (:mod:`mix.dispatch`): ``workers`` proxies in parallel processes, one torch thread each
  on CPU, one GPU each on CUDA; or job files run one by one by ``corpusmix mix proxy-run``.

The Group-DRO reweighting of DoReMi is an objective hook of the trainer (``mix.doremi.DROObjective``).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger
from mix.proxy_cache import pools_fingerprint, proxy_key, write_json
from mix.proxy_config import (  # noqa: F401  (ProxyConfig: part of this module's documented API)
    PLACEMENT_FIELDS,
    ProxyConfig,
    resolve_device,
    shape_config,
    train_config,
)
from mix.proxy_sources import MixtureSource, ValidationSource

log = get_logger("mix.proxy")


# ----------------------------------------------------------------------------- pools

_LEFT_OUT_WARNED: set[tuple[str, tuple[str, ...]]] = set()  # (pools, domains) warned about in this process


def pool_domains(pools_dir: str | Path, split: str = "train") -> dict[str, int]:
    """``{domain: tokens of the split}`` (default: the training split, the tokens a mixture can
    draw on: priors, natural shares and epoch caps use it); clear errors for missing/empty/one-domain
    pools."""
    from proxytrain.pools import open_pools

    p = Path(pools_dir) / "pools.json"
    if not p.exists():
        raise ConfigError(
            f"{p} not found: --input must be a token-pools folder (build one with `corpusmix tokenize pools`)")
    meta, pools = open_pools(pools_dir)
    empty = sorted(d for d, pool in pools.items() if int(np.diff(pool.token_range("train"))[0]) <= 0)
    if empty:
        raise ConfigError(f"domain(s) {empty} have no tokens in {p}; drop them from the pools "
                          "(or add data) before a mixture search")
    doms = {d: int(np.diff(pool.token_range(split))[0]) for d, pool in pools.items()}
    # A domain that curation nearly emptied (1-2 documents) has no document left for the
    # search-validation or the evaluation split although the pools were built with both: it can be
    # neither searched nor judged, so it is left out of the search (weight 0 in every mixture), loudly.
    # Decided on document counts before any split's tokens are checked, so the train, val and eval
    # views of the same pools leave out the same domains.
    short = sorted(d for d, pool in pools.items()
                   if (meta.get("val_fraction", 0) > 0 and pool.val_docs == 0)
                   or (meta.get("eval_fraction", 0) > 0 and pool.eval_docs == 0))
    if short and len(short) < len(doms):
        warned = (str(Path(pools_dir).resolve()), tuple(short))
        if warned not in _LEFT_OUT_WARNED:  # once per process: a search reads the pools once per proxy
            _LEFT_OUT_WARNED.add(warned)
            log.warning("domains left out of the mixture search: too few documents for the train / "
                        "search-validation / evaluation splits", extra={"data": {
                            "domains": {d: pools[d].docs for d in short}}})
        doms = {d: n for d, n in doms.items() if d not in short}
    empty = sorted(d for d, n in doms.items() if n <= 0)
    if empty:
        raise ConfigError(f"domain(s) {empty} have no tokens in the {split} split of {p}; rebuild the pools "
                          "with that split (corpusmix tokenize pools) before a mixture search")
    if len(doms) < 2:
        raise ConfigError(f"a mixture search needs at least 2 domains, {p} has {sorted(doms)}")
    return doms


def pools_vocab(pools_dir: str | Path) -> int:
    return int(json.loads((Path(pools_dir) / "pools.json").read_text())["vocab_size"])


# ----------------------------------------------------------------------------- model

def build_proxy_model(pools_dir: str | Path, cfg: ProxyConfig, seed: int = 0, *, vocab_size: int = 0):
    """A freshly initialised proxy model (CPU, plain module) for the pools' vocabulary."""
    from proxytrain.model import build_model
    from proxytrain.train_config import model_config

    vocab = vocab_size or pools_vocab(pools_dir)
    return build_model(model_config(shape_config(cfg), vocab), "cpu", seed=seed)


def _build(cfg: ProxyConfig, vocab_size: int, seed: int):
    """``(model, None)``: kept for callers of the former loop's helper (parameter counts)."""
    return build_proxy_model("", cfg, seed, vocab_size=vocab_size), None


def full_state_dict(model) -> dict[str, Any]:
    """The whole model's tensors on CPU (gathered from the ranks under FSDP; every rank must call)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


# ----------------------------------------------------------------------------- training

def train_proxy(pools_dir: str | Path, weights: Sequence[float] | None, cfg: ProxyConfig, *, seed: int = 0,
                objective: Any = None, progress: bool = False, eval_split: str = "val",
                work_dir: str | Path | None = None, keep_work: bool = False):
    """Train one proxy with the trainer; return ``(model, result)``.

    ``weights``: the mixture (domain order of ``pools.json``, sorted). ``objective=None`` trains on
    it. With an ``objective`` (``mix.doremi.DROObjective``) and ``weights=None`` the batches are
    balanced (``batch_size`` rounded up to a multiple of the domain count, equal windows of every
    domain) and the objective reweights the loss.
    ``eval_split``: the held-out split the result's ``val_loss`` is measured on (``val`` for the
    searches, ``eval`` for the ablation). ``work_dir``: the trainer's folder (log, checkpoints:
    a killed run with ``ckpt_every`` resumes from it); a temporary one by default, removed after
    the run unless ``keep_work``.
    ``result``: ``{"val_loss": {domain: loss}, "train_loss_last", "curve", "steps", "tokens", ...}``.
    Under torchrun every rank calls it; the model it returns is this rank's (FSDP) model.
    """
    import torch

    from proxytrain.parallel import setup_distributed
    from proxytrain.train import train

    cfg.validate()
    domains = list(pool_domains(pools_dir))
    k = len(domains)
    if objective is None:
        w = check_weights(weights, k)
        rows = cfg.batch_size
    else:
        if weights is not None:
            raise ValueError("a proxy with an objective draws balanced batches: pass weights=None")
        w = np.full(k, 1.0 / k)
    rank, world, _ = setup_distributed(resolve_device(cfg.device))
    if objective is not None:
        rows = dro_rows(cfg.batch_size, k, world)
    # same bits on every machine: deterministic kernels where torch has them (warn, never fail)
    torch.use_deterministic_algorithms(True, warn_only=True)
    source = MixtureSource(pools_dir, domains, seq_len=cfg.seq_len, seed=seed,
                           weights=None if objective is not None else w, sampling=cfg.sampling,
                           rank=rank, world=world)
    val = ValidationSource(pools_dir, domains, seq_len=cfg.seq_len, seed=cfg.val_seed, split=eval_split,
                           spread=cfg.val_windows == "spread")
    val.eval_batches(cfg.batch_size, cfg.val_batches)  # an empty held-out split fails before training
    tmp = None
    if work_dir is None:
        tmp = work_dir = _temp_work_dir(rank, world)
    tcfg = train_config(cfg, vocab_size=source.vocab_size, seed=seed, out_dir=work_dir, rows=rows, world=world,
                        progress=progress)
    t0 = time.perf_counter()
    res = train(tcfg, source=source, val_source=val, objective=objective)
    train_s = time.perf_counter() - t0
    scores = _final_scores(res, val, cfg, domains)
    losses = _logged_losses(Path(work_dir) / "train_log.jsonl") if rank == 0 else []
    # logged, not returned: results are cached in DVC outputs, whose bytes must not depend on speed
    steps_done = [r for r in res.history if "event" not in r]
    if rank == 0:
        log.info("proxy trained", extra={"data": {"seed": seed, "seconds": round(train_s, 3),
                                                  "tokens_per_s": round(rows * cfg.seq_len * len(steps_done)
                                                                        / max(train_s, 1e-9), 1)}})
    if rank == 0 and (tmp is not None or not keep_work):
        shutil.rmtree(work_dir, ignore_errors=True)
    return res.model, _result(cfg, scores, domains, w, seed=seed, rows=rows, eval_split=eval_split, losses=losses)


def _temp_work_dir(rank: int, world: int) -> str:
    """A temporary trainer folder, made by rank 0 and shared with the other ranks."""
    import tempfile

    tmp = tempfile.mkdtemp(prefix="proxy-") if rank == 0 else None
    if world > 1:
        import torch.distributed as dist

        box = [tmp]
        dist.broadcast_object_list(box, src=0)
        tmp = box[0]
    return tmp


def _final_scores(res: Any, val: ValidationSource, cfg: ProxyConfig, domains: list[str]) -> dict[str, float]:
    """The run's per-domain held-out loss; evaluated here when the run resumed from its final
    checkpoint (killed before the result was written) and so has none."""
    scores = res.val
    if not scores:
        from proxytrain.loss import evaluate
        from proxytrain.parallel import all_reduce_sum, reshard_all

        scores = evaluate(res.model, val.eval_batches(cfg.batch_size, cfg.val_batches), domains,
                          reduce=all_reduce_sum)
        reshard_all(res.model)
    return scores


def _result(cfg: ProxyConfig, scores: dict[str, float], domains: list[str], w: np.ndarray, *, seed: int, rows: int,
            eval_split: str, losses: list[float]) -> dict[str, Any]:
    """A proxy's result (:func:`train_proxy`): held-out losses, the mixture, the loss curve, the config."""
    return {
        "val_loss": {d: float(scores[d]) for d in domains}, "domains": domains, "weights": [float(x) for x in w],
        "seed": seed, "steps": cfg.steps, "tokens": cfg.steps * rows * cfg.seq_len, "eval_split": eval_split,
        "train_loss_last": float(np.mean(losses[-10:])) if losses else float("nan"),
        "curve": [[i, round(float(np.mean(losses[max(0, i - 4): i + 1])), 5)]
                  for i in range(0, len(losses), max(1, len(losses) // 50))],
        "config": {k2: v for k2, v in asdict(cfg).items() if k2 not in PLACEMENT_FIELDS},
    }


def proxy_flops(cfg: ProxyConfig, vocab_size: int, *, rows: int, steps: int, forward_share: float = 0.0) -> float:
    """Training FLOPs of one proxy run (``steps`` x ``rows`` x ``seq_len`` tokens at
    ``proxytrain.flops.flops_per_token``), plus ``forward_share`` x that for extra forward passes
    over the same tokens (a DoReMi reference scoring every DRO batch: 1/3, a forward of 2N of 6N)."""
    from proxytrain.flops import flops_per_token
    from proxytrain.train_config import model_config

    per_token = flops_per_token(model_config(shape_config(cfg), vocab_size), seq_len=cfg.seq_len)
    return float(steps * rows * cfg.seq_len * per_token * (1.0 + forward_share))


def dro_rows(batch_size: int, k: int, world: int = 1) -> int:
    """Rows of a balanced DRO step: ``batch_size`` rounded up to a multiple of the domain count.

    Equal rows per domain every step: with fewer than one window per domain per step, a domain's
    excess would be missing or rest on one window, and the weights would swing between near
    one-hot states. Under torchrun each rank takes rows ``rank::world`` of a step, so every rank
    must get rows of every domain (its share of the reference / proxy work, and of the
    per-domain excess that is all-reduced): a clear error otherwise, before training starts.
    """
    rows = -(-batch_size // k) * k
    if (rows // k) % world:
        raise ConfigError(f"DRO batches hold {rows // k} window(s) per domain ({k} domains), which {world} ranks "
                          f"cannot share: some rank would have no token of some domain. Make the proxy batch_size "
                          f"a multiple of {k * world} (domains x ranks)")
    return rows


def _logged_losses(path: Path) -> list[float]:
    """The optimised loss of every step from the trainer's log (all attempts of a resumed run: a
    step logged twice, before a kill and again after the resume, counts once, the last time)."""
    by_step: dict[int, float] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if "event" not in rec and "loss" in rec:
                by_step[int(rec["step"])] = float(rec.get("objective_loss", rec["loss"]))
    return [by_step[s] for s in sorted(by_step)]


def check_weights(weights: Sequence[float] | None, k: int) -> np.ndarray:
    """The mixture as a float array on the simplex; clear errors otherwise."""
    if weights is None:
        raise ValueError("a proxy needs mixture weights (or a DRO objective)")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (k,):
        raise ValueError(f"mixture has {w.size} weights for {k} domains")
    if not np.all(np.isfinite(w)) or (w < 0).any() or abs(w.sum() - 1.0) > 1e-6:
        raise ValueError(f"mixture {w.tolist()} is outside the simplex: weights must be >= 0 and sum to 1")
    return w / w.sum()



def train_proxies(pools_dir: str | Path, runs: Sequence[tuple[Sequence[float], int]], cfg: ProxyConfig, *,
                  cache_dir: str | Path, workers: int = 2, progress: bool = True,
                  eval_split: str = "val") -> list[dict[str, Any]]:
    """Train (or read back) one proxy per ``(weights, seed)``, ``workers`` at a time (see
    :mod:`mix.dispatch`: processes on CPU cores or GPUs, or job files for a cluster).

    Results come back in the order of ``runs``; finished ones are read from ``cache_dir``.
    ``eval_split``: ``val`` (searches) or ``eval`` (ablation) for the results' ``val_loss``.
    """
    from mix.dispatch import run_jobs

    cfg.validate()
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    fp = pools_fingerprint(pools_dir)
    tag = "" if eval_split == "val" else f"eval_split={eval_split}"
    jobs = [{"kind": "proxy", "runner": "mix.proxy:run_proxy_job", "key": f"proxy-{proxy_key(fp, w, cfg, s, tag)}",
             "pools": str(pools_dir),
             "weights": [float(x) for x in w], "seed": int(s), "cfg": asdict(cfg), "eval_split": eval_split}
            for w, s in runs]
    paths = run_jobs(jobs, cache, workers=workers, progress=progress, device=cfg.device)
    return [json.loads(p.read_text()) for p in paths]


def run_proxy_job(job: dict[str, Any], cache: Path) -> dict[str, Any]:
    """One ``kind: proxy`` job (a mixture proxy); writes ``cache/<key>.json`` and returns the result."""
    out = cache / f"{job['key']}.json"
    work = cache / f"work-{job['key']}"
    _, result = train_proxy(job["pools"], job["weights"], ProxyConfig(**job["cfg"]), seed=job["seed"],
                            eval_split=job["eval_split"], work_dir=work, keep_work=True)
    if _rank() == 0:
        write_json(out, result)
        shutil.rmtree(work, ignore_errors=True)
    return result


def _rank() -> int:
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
