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

This module holds the settings (:class:`DoReMiConfig`) and the jobs that train a search's proxies
(:func:`run_doremi_job`); the search is :mod:`mix.doremi_search`, its spread and group sizing
:mod:`mix.doremi_sizing`, the Group-DRO step and objective hook :mod:`mix.dro`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mix.doremi_sizing import MIN_PROXIES_FOR_SIZING
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


def dro_job(pools_dir, cfg: DoReMiConfig, pcfg, s: int, ref_w: np.ndarray, ref_path, rcfg, fp: str,
            r: int) -> dict:
    """The job of one seed's DRO proxy against the round's reference (its key: pools, reference,
    proxy config, seed, DRO settings)."""
    import dataclasses
    from pathlib import Path

    from mix.proxy_cache import proxy_key

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


def reference_job(pools_dir, ref_w: np.ndarray, rcfg, rs: int, fp: str) -> dict:
    """The job of one reference model on the mixture ``ref_w``, trained with seed ``rs`` (its key:
    pools, mixture, reference config, seed)."""
    import dataclasses

    from mix.proxy_cache import proxy_key

    return {"kind": "reference", "runner": "mix.doremi:run_doremi_job",
            "key": f"reference-{proxy_key(fp, ref_w, rcfg, rs, 'reference')}",
            "pools": str(pools_dir), "weights": ref_w.tolist(), "seed": rs, "cfg": dataclasses.asdict(rcfg)}


def run_doremi_job(job: dict, cache) -> None:
    """Run a ``reference`` or ``doremi`` job (:mod:`mix.dispatch`) in this process (all ranks under
    torchrun); rank 0 writes the result into ``cache``."""
    import shutil
    from pathlib import Path

    import torch

    from mix.proxy import ProxyConfig, full_state_dict, train_proxy
    from mix.proxy_cache import write_json

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


def reference_cfg(pcfg, cfg: DoReMiConfig):
    """The reference's proxy config: same model, ``reference_factor`` x the steps (and warm-up)."""
    import dataclasses

    steps = max(1, int(round(cfg.steps * cfg.reference_factor)))
    return dataclasses.replace(pcfg, steps=steps, warmup=int(round(pcfg.warmup * cfg.reference_factor)))
