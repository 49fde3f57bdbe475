"""The DoReMi search (:mod:`mix.doremi`): reference and DRO proxies per round, iterated rounds, the
two-stage group sizing, the search's cost and its reference mixture.

Run as ``corpusmix mix doremi``; the settings and the jobs that train the proxies are in
:mod:`mix.doremi`, the spread and sizing statistics in :mod:`mix.doremi_sizing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mix.doremi import DoReMiConfig, dro_job, reference_cfg, reference_job
from mix.doremi_sizing import MIN_PROXIES_FOR_SIZING, proxy_spread, range_sizing


def l1_change(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).sum())


def iterate_rounds(run_round, initial: np.ndarray, *, max_rounds: int, tol: float):
    """Iterated DoReMi driver: ``run_round(reference_weights, round_index) -> weights``.

    Returns ``(final_weights, rounds)`` where ``rounds`` lists ``{"round", "reference", "weights",
    "l1_change"}``; stops when the L1 change between consecutive outputs is below ``tol``.
    """
    ref = np.asarray(initial, dtype=np.float64)
    rounds = []
    for r in range(max_rounds):
        w = np.asarray(run_round(ref, r), dtype=np.float64)
        change = l1_change(w, ref)
        rounds.append({"round": r, "reference": ref.tolist(), "weights": w.tolist(), "l1_change": change})
        ref = w
        if r > 0 and change < tol:
            break
    return ref, rounds


def run_doremi(pools_dir, cfg: DoReMiConfig, proxy_cfg, *, seed: int = 0, cache_dir, progress: bool = True,
               targets: list[str] | None = None) -> dict:
    """DoReMi (:func:`run_doremi_once`), with ``max_group_size`` > ``group_size`` sized in two
    stages (Stein's two-stage design): the run with ``group_size`` is a pilot; its proxies' sd, at
    its 90 % upper confidence bound, gives the group size expected to meet a seed range <= 0.05 in
    95 % of runs (``range_sizing["group_size_needed_upper"]``), and when that is larger the search
    runs again with it, capped at ``max_group_size``. The decision reads only the pilot's sd, never its range; the
    proxies are exchangeable (independent seeds), so the pilot's are reused from the cache as the
    first seeds of the larger run. The result is the final run's, plus ``pilot`` (its group size,
    proxies, estimate and seconds)."""
    import dataclasses

    res = run_doremi_once(pools_dir, cfg, proxy_cfg, seed=seed, cache_dir=cache_dir, progress=progress,
                          targets=targets)
    if cfg.max_group_size <= cfg.group_size or "range_sizing" not in res:
        return res
    need = int(res["range_sizing"]["group_size_needed_upper"])
    pilot = {"group_size": cfg.group_size, "n_proxies": res["n_proxies"], "group_size_needed_upper": need,
             "max_group_size": cfg.max_group_size, "seconds": res["seconds"]}
    m = min(need, cfg.max_group_size)
    _log().info("doremi pilot", extra={"data": {**pilot, "group_size_next": max(m, cfg.group_size)}})
    if m <= cfg.group_size:
        return {**res, "pilot": pilot}
    final = run_doremi_once(pools_dir, dataclasses.replace(cfg, group_size=m), proxy_cfg, seed=seed,
                            cache_dir=cache_dir, progress=progress, targets=targets)
    final["seconds"] = round(final["seconds"] + res["seconds"], 2)
    return {**final, "pilot": pilot}

def run_doremi_once(pools_dir, cfg: DoReMiConfig, proxy_cfg, *, seed: int = 0, cache_dir, progress: bool = True,
                    targets: list[str] | None = None) -> dict:
    """Full DoReMi (optionally iterated) on a token-pools folder; resumable through ``cache_dir``.
    ``targets``: the target domains (:mod:`mix.targets`), needed by ``reference_mixture: targets``.

    Returns ``{"weights": {domain: w}, "domains", "rounds", "seed_weights": [[w per domain] per
    seed (with ``group_size`` m > 1: the mean of the seed's m proxies; ``proxy_weights`` has every
    proxy's)], "seed_range": {domain: max - min}, with 2+ proxies the mixture's standard error
    (:func:`proxy_spread`: "n_proxies", "proxy_sd", "mixture_se", "se_lower_bound"), with 6+ proxies
    "range_sizing" (:func:`range_sizing`: the proxies per seed a seed range <= 0.05 needs),
    "trajectory": [{"round", "step", domain: w, ...}] (the first seed's), "seconds"}``. Each seed's
    DRO run is cached as JSON and the round's reference model as a ``state_dict`` file, so finished
    work is never retrained.
    """
    import dataclasses
    import time

    from mix.proxy import pool_domains
    from mix.proxy_cache import pools_fingerprint

    cfg.validate()
    tokens = pool_domains(pools_dir)
    domains = list(tokens)
    pcfg = dataclasses.replace(proxy_cfg, steps=cfg.steps)
    ref0 = reference_weights(cfg.reference_mixture, tokens, targets)
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    fp = pools_fingerprint(pools_dir)
    t0 = time.perf_counter()
    # the shared reference uses `seed`; DRO proxies the next ones, group g = seeds[g * m:(g + 1) * m]
    m = cfg.group_size
    seeds = [seed + 1 + i for i in range(cfg.seeds * m)]
    search = _Search(pools_dir, cfg, pcfg, cache, fp, seed, seeds, domains, progress)
    if cfg.iterate:
        final, rounds = iterate_rounds(search.run_round, ref0, max_rounds=cfg.max_rounds, tol=cfg.tol)
    else:
        final = search.run_round(ref0, 0)
        rounds = [{"round": 0, "reference": ref0.tolist(), "weights": final.tolist(),
                   "l1_change": l1_change(final, ref0)}]
    final = final / final.sum()
    return _summary(search, final, rounds, t0)


@dataclass
class _Search:
    """A DoReMi search's fixed inputs, and what its rounds collect: the first seed's weight
    trajectory and the last round's weights of every DRO proxy."""

    pools_dir: Any
    cfg: DoReMiConfig
    pcfg: Any
    cache: Path
    fp: str
    seed: int
    seeds: list[int]
    domains: list[str]
    progress: bool
    trajectory: list[dict] = field(default_factory=list)
    per_seed: list[np.ndarray] = field(default_factory=list)

    def run_round(self, ref_w: np.ndarray, r: int) -> np.ndarray:
        """One round: the references on ``ref_w``, then every seed's DRO proxy; the mean weights."""
        import json

        from mix.dispatch import run_jobs

        cfg, pcfg, seeds = self.cfg, self.pcfg, self.seeds
        _log().info("doremi round", extra={"data": {"round": r, "reference": ref_w.tolist(), "seeds": seeds}})
        rcfg = reference_cfg(pcfg, cfg)
        ref_seeds = seeds if cfg.paired_reference else [self.seed]
        ref_jobs = [reference_job(self.pools_dir, ref_w, rcfg, rs, self.fp) for rs in ref_seeds]
        ref_paths = run_jobs(ref_jobs, self.cache, workers=min(cfg.workers, len(ref_jobs)), progress=self.progress,
                             device=pcfg.device, desc="doremi references")
        if not cfg.paired_reference:
            ref_paths = ref_paths * len(seeds)
        jobs = [dro_job(self.pools_dir, cfg, pcfg, s, ref_w, rp, rcfg, self.fp, r)
                for s, rp in zip(seeds, ref_paths, strict=True)]
        paths = run_jobs(jobs, self.cache, workers=cfg.workers, progress=self.progress, device=pcfg.device,
                         desc="doremi proxies")
        results = [json.loads(p.read_text()) for p in paths]
        for step, h in enumerate(results[0]["history"]):
            self.trajectory.append({"round": r, "step": step, **dict(zip(self.domains, h, strict=True))})
        self.per_seed[:] = [np.array(res["weights"]) for res in results]
        mean = np.mean(self.per_seed, axis=0)
        return mean / mean.sum()


def _summary(search: _Search, final: np.ndarray, rounds: list[dict], t0: float) -> dict:
    """The search's result (:func:`run_doremi_once`); ``t0``: its start (``time.perf_counter``)."""
    import time

    cfg, domains, seeds = search.cfg, search.domains, search.seeds
    m, k = cfg.group_size, len(domains)
    proxies = np.array(search.per_seed)
    sw = proxies.reshape(cfg.seeds, m, k).mean(axis=1)  # one output per seed (group of m proxies)
    out = {"weights": dict(zip(domains, final.tolist(), strict=True)), "domains": domains, "rounds": rounds,
           "cost": search_cost(search.pools_dir, cfg, search.pcfg, n_proxies=len(seeds), n_rounds=len(rounds)),
           "seeds": seeds, "seed_weights": sw.round(6).tolist(),
           "seed_range": dict(zip(domains, np.ptp(sw, axis=0).round(6).tolist(), strict=True)),
           "trajectory": search.trajectory, "seconds": round(time.perf_counter() - t0, 2)}
    if m > 1:
        out["group_size"] = m
        out["proxy_weights"] = proxies.round(6).tolist()
    out.update(proxy_spread(proxies, domains, independent=cfg.paired_reference))
    if "proxy_sd" in out and len(proxies) >= MIN_PROXIES_FOR_SIZING:
        out["range_sizing"] = range_sizing(np.array([out["proxy_sd"][d] for d in domains]), seeds=cfg.seeds,
                                           group_size=m, n_proxies=len(proxies))
    return out


def search_cost(pools_dir, cfg: DoReMiConfig, pcfg, *, n_proxies: int, n_rounds: int) -> dict:
    """Training FLOPs of a DoReMi search: per round its references (``reference_factor`` x the
    steps) and DRO proxies (balanced batches, plus the reference's forward on every batch: the
    paper's excess; the probe's forward passes cost about the same by its default size)."""
    from mix.proxy import dro_rows, pool_domains, pools_vocab, proxy_flops

    vocab, k = pools_vocab(pools_dir), len(pool_domains(pools_dir))
    refs = n_proxies if cfg.paired_reference else 1
    ref_steps = max(1, int(round(cfg.steps * cfg.reference_factor)))
    rows = dro_rows(pcfg.batch_size, k)
    flops = n_rounds * (refs * proxy_flops(pcfg, vocab, rows=pcfg.batch_size, steps=ref_steps)
                        + n_proxies * proxy_flops(pcfg, vocab, rows=rows, steps=cfg.steps, forward_share=1 / 3))
    tokens = n_rounds * (refs * ref_steps * pcfg.batch_size + n_proxies * cfg.steps * rows) * pcfg.seq_len
    return {"proxy_runs": n_rounds * (refs + n_proxies), "tokens": int(tokens), "flops": float(flops)}


def reference_weights(rule: str, tokens: dict[str, int], targets: list[str] | None) -> np.ndarray:
    """The reference model's mixture (domain order of ``tokens``) for ``reference_mixture``."""
    from corpusmix.config import ConfigError
    from corpusmix.mixture import natural_mixture

    domains = list(tokens)
    if rule == "natural":
        nat = natural_mixture(tokens)
        return np.array([nat[d] for d in domains])
    if rule == "uniform":
        return np.full(len(domains), 1.0 / len(domains))
    # no targets named: every domain is a target (the uniform reference)
    chosen = domains if targets is None else [d for d in domains if d in set(targets)]
    if not chosen:
        raise ConfigError("doremi reference_mixture: targets needs the target domains (mix.target_domains, or every "
                          "domain not in mix.garbage_domains); none of them is in the pools")
    return np.array([1.0 / len(chosen) if d in chosen else 0.0 for d in domains])


def _log():
    from corpusmix.logging import get_logger

    return get_logger("mix.doremi")
