"""DoReMi: domain weights from a Group-DRO proxy (Xie et al. 2023, "DoReMi: Optimizing Data
Mixtures Speeds Up Language Model Pretraining").

Run as ``corpusmix mix doremi --input POOLS_DIR --output mixture.json [--variant paper|tuned]``.
The reference and the DRO proxies are runs of the trainer (:func:`mix.proxy.train_proxy`); the
Group-DRO step is the trainer's objective hook (:class:`DROObjective`), so proxies train wherever the
trainer does (CPU, GPU, FSDP2 under torchrun) and resume from its checkpoints with their weights.

``variant: paper`` (the default) is the paper's Algorithm 1: a reference trained on the baseline
mixture (``reference_mixture``: by default equal weights on the target domains and none on
garbage, so that junk the reference never learnt cannot look "not yet learnt"); a proxy trained on batches that hold every domain equally, whose
per-token loss is weighted by ``k * a[domain]``; at every step the per-domain excess on the
training batch, the mean of ``max(proxy - reference, 0)`` per token, updates the weights by
exponentiated gradient, ``log a += eta * excess``, then smoothing ``a = (1 - c) a + c / k``; the
output is the average of the weights over all steps (``seeds`` proxies averaged).

``variant: tuned`` (:data:`VARIANTS`) is this project's variant for tiny proxies: the excess on a
fixed probe of search-validation windows every ``update_every`` steps, clipped per domain, the
closed-form softmax update over the second half of the steps, the average over that half, groups
of proxies per seed. Its design notes are in docs/history/doremi-module-notes.md; docs/mix.md
gives how both variants fare on the known-answer testbeds. ``iterate: true`` repeats rounds with
the previous output as the next reference mixture until the weights move less than ``tol``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mix.dro import (  # noqa: F401  (re-exported: the DRO step and its objective hook)
    CLIPS,
    PROBE_CHUNK,
    UPDATES,
    DROObjective,
    GroupDRO,
    domain_excess_loss,
    domain_excess_sums,
    excess_from_sums,
    probe_windows,
    softmax_weights,
)

# the reference model's mixture (mix.doremi.reference_mixture)
REFERENCES = ("natural", "uniform", "targets")
SEED_RANGE_TARGET = 0.05  # the per-domain seed range DoReMi's output is held to (docs/mix.md; report/search.py)
MIN_PROXIES_FOR_SIZING = 6  # fewer proxies give too rough an sd to size anything from


# named variants: values applied over the dataclass defaults (the paper) and under explicit keys
VARIANTS: dict[str, dict[str, object]] = {
    "paper": {},
    "tuned": {"excess_source": "probe", "excess_clip": "domain", "update": "eg_softmax", "temperature": 0.5,
              "update_every": 4, "average_from": 0.5, "group_size": 4, "max_group_size": 26},
}


@dataclass
class DoReMiConfig:
    """DoReMi hyper-parameters (``params.yaml`` section ``mix.doremi``); defaults: the paper."""

    variant: str = field(default="paper", metadata={
        "help": "paper: the paper's Algorithm 1 | tuned: probe excess, softmax update over the second half, "
                "groups of proxies (mix.doremi.VARIANTS); explicit keys override the variant's values"})
    eta: float = field(default=1.0, metadata={"help": "exponentiated-gradient step size"})
    smoothing: float = field(default=1e-3, metadata={"help": "smoothing c toward uniform"})
    steps: int = field(default=200, metadata={"help": "DRO proxy steps (the reference trains reference_factor x)"})
    reference_mixture: str = field(default="targets", metadata={
        "help": "the reference's mixture: targets (equal weights on the target domains, none on garbage: the "
                "reference never learns junk, so a proxy's excess on junk is not positive) | natural (token shares, "
                "the paper's baseline) | uniform"})
    paired_reference: bool = field(default=True, metadata={
        "help": "one reference per DRO seed, trained with that seed (true), instead of one reference shared by "
                "all seeds (false): the reference's own seed noise is averaged over the seeds and is part of "
                "seed_range"})
    reference_factor: float = field(default=1.0, metadata={
        "help": "reference steps / proxy steps: a longer-trained reference estimates each domain's loss floor"})
    excess_ema: float = field(default=0.0, metadata={"help": "EMA factor of the per-domain excess (0 = none)"})
    excess_source: str = field(default="batch", metadata={
        "help": "probe: excess on a fixed set of search-validation windows, every update_every steps; "
                "batch: on each training batch (the paper)"})
    probe_windows: int = field(default=0, metadata={
        "help": "probe windows per domain, spread over its search-validation split (0 = the batch's windows "
                "per domain x update_every: the probe then costs what the per-step reference forward did)"})
    excess_clip: str = field(default="token", metadata={
        "help": "token: max(proxy - reference, 0) per token, then the domain's mean (the paper); domain: the "
                "domain's mean excess, clipped at 0 (no per-token noise floor)"})
    update: str = field(default="eg", metadata={
        "help": "eg: exponentiated gradient, log a += eta * excess (the paper); softmax: a = softmax(excess / "
                "(temperature * mean excess)) at each update, the closed-form maximiser of the KL-regularised "
                "Group-DRO step (no memory of earlier excess); eg_softmax: eg during the warm-up (the first "
                "average_from of the steps), softmax over the averaged steps"})
    temperature: float = field(default=0.5, metadata={
        "help": "softmax: tau as a fraction of the current mean per-domain excess (unit-free; larger = closer "
                "to uniform)"})
    update_every: int = field(default=1, metadata={
        "help": "probe: steps between weight updates (each update steps eta x update_every)"})
    average_from: float = field(default=0.0, metadata={
        "help": "fraction of DRO steps (warm-up) left out of the weight average"})
    restart: bool = field(default=False, metadata={
        "help": "reset the weights to uniform when the averaged steps begin (the warm-up's weights are "
                "discarded, not only left out of the average)"})
    seeds: int = field(default=3, metadata={"help": "DRO proxies (seeds) averaged; their spread is reported"})
    group_size: int = field(default=1, metadata={
        "help": "DRO proxies per seed: each of the `seeds` outputs whose spread is reported is the mean of this "
                "many proxies (each with its own reference when paired); the mixture is the mean of all "
                "seeds x group_size (cost: group_size x)"})
    max_group_size: int = field(default=0, metadata={
        "help": "0 = off. Above group_size: the run with group_size is a pilot; from its proxies' sd "
                "at its 90-percent upper bound (range_sizing) the group size that meets a seed range <= 0.05 in 95 percent "
                "of runs is estimated "
                "and the search is rerun with it, capped here (the pilot's proxies are reused from the cache)"})
    workers: int = field(default=2, metadata={"help": "DRO proxies trained in parallel"})
    iterate: bool = field(default=False, metadata={"help": "iterated DoReMi (rounds)"})
    max_rounds: int = field(default=3, metadata={"help": "max rounds when iterating"})
    tol: float = field(default=0.05, metadata={"help": "stop iterating when L1 change < tol"})

    def validate(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"doremi variant must be one of {sorted(VARIANTS)}, got {self.variant!r}")
        if self.eta <= 0:
            raise ValueError(f"doremi eta must be > 0, got {self.eta}; the paper uses 1.0")
        if not 0.0 <= self.smoothing < 1.0:
            raise ValueError(f"doremi smoothing must be in [0, 1), got {self.smoothing}; the paper uses 1e-3")
        if self.steps < 1:
            raise ValueError(f"doremi steps must be >= 1, got {self.steps}")
        if self.reference_mixture not in REFERENCES:
            raise ValueError(
                f"doremi reference_mixture must be one of {REFERENCES}, got {self.reference_mixture!r}")
        if self.reference_factor < 1:
            raise ValueError(f"doremi reference_factor must be >= 1, got {self.reference_factor}")
        if not 0.0 <= self.excess_ema < 1.0 or not 0.0 <= self.average_from < 1.0:
            raise ValueError("doremi excess_ema and average_from must be in [0, 1)")
        if self.excess_source not in ("probe", "batch"):
            raise ValueError(f"doremi excess_source must be 'probe' or 'batch', got {self.excess_source!r}")
        if self.probe_windows < 0 or self.update_every < 1:
            raise ValueError("doremi probe_windows must be >= 0 (0 = automatic) and update_every >= 1")
        if self.excess_clip not in CLIPS:
            raise ValueError(f"doremi excess_clip must be one of {', '.join(CLIPS)}, got {self.excess_clip!r}")
        if self.update not in UPDATES:
            raise ValueError(f"doremi update must be one of {', '.join(UPDATES)}, got {self.update!r}")
        if not self.temperature > 0 or not np.isfinite(self.temperature):
            raise ValueError(f"doremi temperature must be a finite number > 0, got {self.temperature}; it is a "
                             "fraction of the mean excess (0.5 = half of it)")
        if self.restart and self.update != "eg":
            raise ValueError("doremi restart only applies to update: eg (softmax weights keep no memory to reset)")
        if self.seeds < 1 or self.workers < 1 or self.group_size < 1:
            raise ValueError("doremi seeds, group_size and workers must be >= 1")
        if self.max_group_size < 0:
            raise ValueError(f"doremi max_group_size must be >= 0 (0 = off), got {self.max_group_size}")
        if self.max_group_size > self.group_size and self.seeds * self.group_size < MIN_PROXIES_FOR_SIZING:
            raise ValueError(f"doremi max_group_size sizes the groups from a pilot of seeds x group_size proxies, "
                             f"which must be >= {MIN_PROXIES_FOR_SIZING} (got {self.seeds} x {self.group_size}): "
                             "raise group_size or seeds, or set max_group_size: 0")
        if self.max_rounds < 1 or self.tol < 0:
            raise ValueError("doremi max_rounds must be >= 1 and tol >= 0")


def probe_size(cfg: DoReMiConfig, batch_rows: int, k: int) -> int:
    """Probe windows per domain: ``probe_windows``, or (0) the balanced batch's windows per domain x
    ``update_every``, so that scoring the probe every ``update_every`` steps costs as many forward
    rows as the per-step reference forward of ``excess_source: batch`` it replaces."""
    return cfg.probe_windows or max(1, batch_rows // k) * cfg.update_every


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
    "range_sizing" (:func:`range_sizing`: the proxies per seed a seed range <= 0.05 needs), "trajectory": [{"round", "step", domain: w, ...}] (the
    first seed's), "seconds"}``. Each seed's DRO run is cached as JSON and the round's reference
    model as a ``state_dict`` file, so finished work is never retrained.
    """
    import dataclasses
    import time
    from pathlib import Path

    from mix.proxy import pool_domains, pools_fingerprint, proxy_key

    cfg.validate()
    tokens = pool_domains(pools_dir)
    domains = list(tokens)
    k = len(domains)
    pcfg = dataclasses.replace(proxy_cfg, steps=cfg.steps)
    ref0 = reference_weights(cfg.reference_mixture, tokens, targets)
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    fp = pools_fingerprint(pools_dir)
    t0 = time.perf_counter()
    trajectory: list[dict] = []
    per_seed: list[np.ndarray] = []
    # the shared reference uses `seed`; DRO proxies the next ones, group g = seeds[g * m:(g + 1) * m]
    m = cfg.group_size
    seeds = [seed + 1 + i for i in range(cfg.seeds * m)]

    def run_round(ref_w: np.ndarray, r: int) -> np.ndarray:
        from mix.dispatch import run_jobs

        _log().info("doremi round", extra={"data": {"round": r, "reference": ref_w.tolist(), "seeds": seeds}})
        rcfg = _reference_cfg(pcfg, cfg)
        ref_seeds = seeds if cfg.paired_reference else [seed]
        ref_jobs = [{"kind": "reference", "runner": "mix.doremi:run_doremi_job",
                     "key": f"reference-{proxy_key(fp, ref_w, rcfg, rs, 'reference')}",
                     "pools": str(pools_dir), "weights": ref_w.tolist(), "seed": rs, "cfg": dataclasses.asdict(rcfg)}
                    for rs in ref_seeds]
        ref_paths = run_jobs(ref_jobs, cache, workers=min(cfg.workers, len(ref_jobs)), progress=progress,
                             device=pcfg.device, desc="doremi references")
        if not cfg.paired_reference:
            ref_paths = ref_paths * len(seeds)
        jobs = [_dro_job(pools_dir, cfg, pcfg, s, ref_w, rp, rcfg, fp, r)
                for s, rp in zip(seeds, ref_paths, strict=True)]
        paths = run_jobs(jobs, cache, workers=cfg.workers, progress=progress, device=pcfg.device, desc="doremi proxies")
        import json

        results = [json.loads(p.read_text()) for p in paths]
        for step, h in enumerate(results[0]["history"]):
            trajectory.append({"round": r, "step": step, **dict(zip(domains, h, strict=True))})
        per_seed[:] = [np.array(res["weights"]) for res in results]
        mean = np.mean(per_seed, axis=0)
        return mean / mean.sum()

    if cfg.iterate:
        final, rounds = iterate_rounds(run_round, ref0, max_rounds=cfg.max_rounds, tol=cfg.tol)
    else:
        final = run_round(ref0, 0)
        rounds = [{"round": 0, "reference": ref0.tolist(), "weights": final.tolist(),
                   "l1_change": l1_change(final, ref0)}]
    final = final / final.sum()
    proxies = np.array(per_seed)
    sw = proxies.reshape(cfg.seeds, m, k).mean(axis=1)  # one output per seed (group of m proxies)
    out = {"weights": dict(zip(domains, final.tolist(), strict=True)), "domains": domains, "rounds": rounds,
           "cost": search_cost(pools_dir, cfg, pcfg, n_proxies=len(seeds), n_rounds=len(rounds)),
           "seeds": seeds, "seed_weights": sw.round(6).tolist(),
           "seed_range": dict(zip(domains, np.ptp(sw, axis=0).round(6).tolist(), strict=True)),
           "trajectory": trajectory, "seconds": round(time.perf_counter() - t0, 2)}
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


def range_sizing(proxy_sd: np.ndarray, *, seeds: int, group_size: int, n_proxies: int,
                 target: float = SEED_RANGE_TARGET, probability: float = 0.95, confidence: float = 0.9,
                 draws: int = 20_000) -> dict:
    """How many proxies per reported seed a run needs for its seed range to meet ``target``.

    Model: each reported seed is the mean of ``m`` independent proxies, a proxy's weight on domain
    ``d`` normal with sd ``proxy_sd[d]`` (domains taken as independent). The largest per-domain
    range between ``seeds`` such means is ``R / sqrt(m)``, where ``R`` = max over ``d`` of
    ``proxy_sd[d]`` x the range of ``seeds`` standard normals; ``R`` is simulated once (``draws``,
    fixed rng: the same answer for the same sds) and scaled. Returns the share of runs expected to
    meet ``target`` at this ``group_size`` (``p_at_group_size``) and the smallest ``m`` expected to
    meet it in ``probability`` of runs (``group_size_needed``), both from the measured sds; and
    ``group_size_needed_upper``, the same with every sd at its one-sided ``confidence`` upper bound
    (chi-square with ``n_proxies - 1`` degrees of freedom: ``sd x sqrt((n - 1) / chi2_{1-conf}(n - 1))``,
    x1.40 for 12 proxies): an sd measured on a few proxies is often too small, and a group size
    chosen from it would miss the target more often than ``probability`` says."""
    from scipy.stats import chi2

    sd = np.asarray(proxy_sd, dtype=np.float64)
    rng = np.random.default_rng(0)
    z = rng.standard_normal((draws, seeds, sd.size))
    r = (np.ptp(z, axis=1) * sd).max(axis=1)  # the largest range for m = 1
    q = float(np.quantile(r, probability))
    inflate = math.sqrt((n_proxies - 1) / float(chi2.ppf(1.0 - confidence, n_proxies - 1)))

    def need(x: float) -> int:
        return max(1, math.ceil((x / target) ** 2 - 1e-9))

    return {"target": target, "probability": probability, "n_proxies": int(n_proxies),
            "p_at_group_size": round(float(np.mean(r <= target * np.sqrt(group_size))), 3),
            "group_size_needed": need(q), "confidence": confidence, "sd_inflation": round(inflate, 4),
            "group_size_needed_upper": need(q * inflate)}


def proxy_spread(proxies: np.ndarray, domains: list[str], *, independent: bool) -> dict:
    """The mixture's uncertainty from the DRO proxies' randomness: per domain the sd of the ``n``
    proxies' weights (``proxy_sd``) and the standard error of their mean, the mixture
    (``mixture_se`` = sd / sqrt(n)); ``{}`` with fewer than 2 proxies. ``independent`` is
    ``paired_reference``: with one shared reference the proxies share its noise, so the standard
    error is a lower bound (``se_lower_bound: true``)."""
    proxies = np.asarray(proxies, dtype=np.float64)
    n = len(proxies)
    if n < 2:
        return {}
    sd = proxies.std(axis=0, ddof=1)
    return {"n_proxies": n, "proxy_sd": dict(zip(domains, sd.round(6).tolist(), strict=True)),
            "mixture_se": dict(zip(domains, (sd / np.sqrt(n)).round(6).tolist(), strict=True)),
            "se_lower_bound": not independent}


def _dro_job(pools_dir, cfg: DoReMiConfig, pcfg, s: int, ref_w: np.ndarray, ref_path, rcfg, fp: str,
             r: int) -> dict:
    """The job of one seed's DRO proxy against the round's reference (its key: pools, reference,
    proxy config, seed, DRO settings)."""
    import dataclasses
    from pathlib import Path

    from mix.proxy import proxy_key

    tag = (f"doremi eta={cfg.eta} c={cfg.smoothing} ema={cfg.excess_ema} avg_from={cfg.average_from} "
           f"ref={Path(ref_path).name}")
    if cfg.excess_source == "probe":  # batch-excess runs keep the keys they were cached under
        tag += f" probe={cfg.probe_windows} every={cfg.update_every}"
    if cfg.restart:
        tag += " restart"
    if cfg.update != "eg":  # exponentiated-gradient runs keep the keys they were cached under
        tag += f" update={cfg.update} tau={cfg.temperature}"
    if cfg.excess_clip != "token":
        tag += f" clip={cfg.excess_clip}"
    return {"kind": "doremi", "runner": "mix.doremi:run_doremi_job",
            "key": f"doremi-{proxy_key(fp, ref_w.tolist(), pcfg, s, tag)}", "pools": str(pools_dir),
            "seed": s, "round": r, "reference_weights": ref_w.tolist(), "reference": Path(ref_path).name,
            "cfg": dataclasses.asdict(pcfg), "reference_cfg": dataclasses.asdict(rcfg),
            "doremi": dataclasses.asdict(cfg)}


def run_doremi_job(job: dict, cache) -> None:
    """Run a ``reference`` or ``doremi`` job (:mod:`mix.dispatch`) in this process (all ranks under
    torchrun); rank 0 writes the result into ``cache``."""
    import shutil
    from pathlib import Path

    import torch

    from mix.proxy import ProxyConfig, full_state_dict, train_proxy, write_json

    cache = Path(cache)
    work = cache / f"work-{job['key']}"
    pcfg = ProxyConfig(**job["cfg"])
    rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
    if job["kind"] == "reference":
        _log().info("doremi reference", extra={"data": {"steps": pcfg.steps, "mixture": job["weights"]}})
        model, _ = train_proxy(job["pools"], job["weights"], pcfg, seed=job["seed"], work_dir=work, keep_work=True)
        state = full_state_dict(model)  # every rank takes part in the gather
        if rank == 0:
            out = cache / f"{job['key']}.pt"
            tmp = out.with_suffix(".tmp")
            torch.save(state, tmp)
            tmp.replace(out)
            shutil.rmtree(work, ignore_errors=True)
        return
    cfg = DoReMiConfig(**job["doremi"])
    reference = load_reference(cache / job["reference"], job["pools"], ProxyConfig(**job["reference_cfg"]))
    objective = dro_objective(cfg, pcfg, job["pools"], reference, log=rank == 0)
    dro = objective.dro
    _, res = train_proxy(job["pools"], None, pcfg, seed=job["seed"], objective=objective, work_dir=work,
                         keep_work=True)
    res.update(weights=dro.average().tolist(), history=[h.tolist() for h in dro.history],
               reference_weights=list(job["reference_weights"]), reference=job["reference"], round=job["round"],
               seed=job["seed"])
    if rank == 0:
        write_json(cache / f"{job['key']}.json", res)
        shutil.rmtree(work, ignore_errors=True)


def dro_objective(cfg: DoReMiConfig, pcfg, pools_dir, reference, *, log: bool = False) -> DROObjective:
    """The DRO proxy's objective hook for ``cfg`` (batch or probe excess) against ``reference``."""
    from mix.proxy import dro_rows, pool_domains

    domains = list(pool_domains(pools_dir))
    k = len(domains)
    probe, every = None, 1
    if cfg.excess_source == "probe":
        every = cfg.update_every
        n = probe_size(cfg, dro_rows(pcfg.batch_size, k), k)
        probe = probe_windows(pools_dir, domains, seq_len=pcfg.seq_len, windows=n)
        if log:
            _log().info("doremi probe", extra={"data": {"windows_per_domain": n, "rows": int(probe["tokens"].shape[0]),
                                                        "update_every": every}})
    dro = GroupDRO(k, eta=cfg.eta * every, smoothing=cfg.smoothing, ema=cfg.excess_ema,
                   average_from=int(cfg.average_from * cfg.steps), restart=cfg.restart, update=cfg.update,
                   temperature=cfg.temperature)
    return DROObjective(dro, reference, domains, probe=probe, update_every=every, clip=cfg.excess_clip)


def load_reference(path, pools_dir, rcfg):
    """The reference model (plain module, CPU) from its state dict, refused with a clear error when
    it was trained for another vocabulary or model shape than ``rcfg`` on these pools."""
    import torch

    from corpusmix.config import ConfigError
    from mix.proxy import build_proxy_model

    model = build_proxy_model(pools_dir, rcfg, 0)
    try:
        state = torch.load(path, weights_only=True, map_location="cpu")
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"reference checkpoint {path} is unreadable ({exc}); delete it to retrain it") from None
    expect = model.state_dict()
    if not isinstance(state, dict):
        raise ConfigError(f"reference checkpoint {path} is not a model state dict; delete it to retrain it")
    emb, got_emb = expect["tok_emb.weight"].shape, state.get("tok_emb.weight", torch.empty(0, 0)).shape
    if len(got_emb) == 2 and got_emb[0] != emb[0]:
        raise ConfigError(f"reference checkpoint {path} was trained with a vocabulary of {got_emb[0]} tokens, the "
                          f"proxies use {emb[0]} (these pools' tokenizer): train the reference on these pools "
                          "(delete the file; the next run retrains it)")
    diff = sorted(set(expect) ^ set(state)) + [
        f"{n} {tuple(state[n].shape)} vs {tuple(t.shape)}" for n, t in expect.items()
        if n in state and tuple(state[n].shape) != tuple(t.shape)]
    if diff:
        raise ConfigError(f"reference checkpoint {path} has another model shape than the proxies ({rcfg.model_preset}"
                          f" d_model={rcfg.d_model or 'preset'} n_layers={rcfg.n_layers or 'preset'}): "
                          f"{', '.join(diff[:3])}; train it with the proxies' model (delete the file to retrain)")
    model.load_state_dict(state)
    return model


def _log():
    from corpusmix.logging import get_logger

    return get_logger("mix.doremi")


def _reference_cfg(pcfg, cfg: DoReMiConfig):
    """The reference's proxy config: same model, ``reference_factor`` x the steps (and warm-up)."""
    import dataclasses

    steps = max(1, int(round(cfg.steps * cfg.reference_factor)))
    return dataclasses.replace(pcfg, steps=steps, warmup=int(round(pcfg.warmup * cfg.reference_factor)))
