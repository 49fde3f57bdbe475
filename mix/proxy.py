"""Proxy models for the mixture searches: trainer runs (``proxytrain.train.train``) on a mixture of
the token pools, scored by per-domain held-out loss; cached, resumable and dispatched over devices.

Library module; used by ``corpusmix mix doremi|regmix|ablation`` and ``corpusmix mix proxy-run``::

    from mix.proxy import ProxyConfig, train_proxy, train_proxies
    model, result = train_proxy("pools/", weights, ProxyConfig(steps=100), seed=0)
    results = train_proxies("pools/", [(w1, 0), (w2, 0)], cfg, cache_dir="cache/", workers=2)

There is one training loop: a proxy IS a run of the trainer (model, optimizer, schedule, clipping,
spike guard, FSDP2 under torchrun, DCP checkpoints, attention backend ``auto``: FlashAttention
varlen on CUDA when installed). This module adds only the mixture logic:

- :class:`MixtureSource`, the trainer's ``BatchSource``: which domain each row comes from
  (``sampling: stratified`` or ``iid``), or balanced DRO batches (the same number of windows of
  every domain, DoReMi); under torchrun every rank draws the same global batch and keeps its rows
  ``rank, rank + world, ...``, so N ranks train on exactly the rows of one process;
- the validation source: the first windows of each domain's held-out split, independent of the
  run's seed, so every proxy of a search is scored on the same tokens (``val`` for the searches,
  ``eval`` for the ablation, which no search reads);
- caching: a finished proxy's result is ``cache_dir/proxy-<key>.json`` (the key hashes the pools,
  the weights, the config and the seed) and is never retrained;
- dispatch (:mod:`mix.dispatch`): ``workers`` proxies in parallel processes, one torch thread each
  on CPU, one GPU each on CUDA; or job files run one by one by ``corpusmix mix proxy-run``.

The Group-DRO reweighting of DoReMi is an objective hook of the trainer (``mix.doremi.DROObjective``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger

log = get_logger("mix.proxy")


@dataclass
class ProxyConfig:
    """One proxy run (``params.yaml``: ``mix.presets.<name>.proxy``)."""

    model_preset: str = field(default="tiny", metadata={"help": "proxytrain.model preset"})
    d_model: int = field(default=0, metadata={"help": "override the preset's width (0 = preset)"})
    n_layers: int = field(default=0, metadata={"help": "override the preset's depth (0 = preset)"})
    n_heads: int = field(default=0, metadata={"help": "override the preset's heads (0 = preset)"})
    steps: int = field(default=200, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=8, metadata={"help": "sequences per step (all ranks together)"})
    seq_len: int = field(default=128, metadata={"help": "tokens per sequence"})
    lr: float = field(default=3e-3, metadata={"help": "peak learning rate"})
    warmup: int = field(default=20, metadata={"help": "warmup steps"})
    val_batches: int = field(default=4, metadata={"help": "validation batches per domain"})
    val_seed: int = field(default=1234, metadata={"help": "seed of the (shared) validation batches"})
    sampling: str = field(default="stratified", metadata={
        "help": "stratified: each domain gets its exact share of rows (low-discrepancy sequence) and "
                "its own window stream, so runs on nearby mixtures see nearly the same data; "
                "iid: every row's domain drawn independently"})
    head_dtype: str = field(default="fp32", metadata={
        "help": "fp32 | bf16: the output projection's precision (bf16 inputs, fp32 accumulation, fp32 loss); "
                "on CPUs with native bf16 (avx512_bf16 / AMX) about half a small proxy's step"})
    device: str = field(default="auto", metadata={
        "help": "auto (CUDA when present) | cpu | cuda: where proxies train (not part of the cache key on CPU)"})
    ckpt_every: int = field(default=0, metadata={
        "help": "checkpoint a proxy every N steps so a killed long proxy resumes (0 = off: it restarts)"})

    def validate(self) -> None:
        for name in ("steps", "batch_size", "seq_len", "val_batches"):
            if getattr(self, name) < 1:
                raise ValueError(f"proxy {name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"proxy lr must be > 0, got {self.lr}")
        if self.sampling not in ("stratified", "iid"):
            raise ValueError(f"proxy sampling must be 'stratified' or 'iid', got {self.sampling!r}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"proxy device must be auto, cpu or cuda, got {self.device!r}")
        if self.ckpt_every < 0:
            raise ValueError(f"proxy ckpt_every must be >= 0, got {self.ckpt_every}")
        if self.head_dtype not in ("fp32", "bf16"):
            raise ValueError(f"proxy head_dtype must be fp32 or bf16, got {self.head_dtype!r}")


# fields that say where and how safely a proxy runs, not what it computes: out of the cache key
PLACEMENT_FIELDS = ("device", "ckpt_every")


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


def pools_fingerprint(pools_dir: str | Path) -> str:
    """Hash of ``pools.json`` (tokenizer hash, token counts): proxies are keyed by it."""
    return hashlib.sha256((Path(pools_dir) / "pools.json").read_bytes()).hexdigest()[:16]


def pools_vocab(pools_dir: str | Path) -> int:
    return int(json.loads((Path(pools_dir) / "pools.json").read_text())["vocab_size"])


# ----------------------------------------------------------------------------- batch sources

_INV_PHI = (5 ** 0.5 - 1) / 2


class MixtureSource:
    """The trainer's ``BatchSource`` for a proxy: rows by mixture weight, or balanced (DRO).

    ``weights`` (domain order of ``pools.json``) with ``sampling`` ``stratified``: row ``t`` takes
    the domain whose cumulative-weight interval holds ``u_t = frac(u0 + t / golden ratio)`` (a Weyl
    sequence: every domain's row count stays within O(log t) of ``weight * t``) and each domain
    draws its windows from its own RNG stream, so the n-th row of a domain is the same whatever the
    other weights are (common random numbers); ``iid``: each row's domain drawn independently.
    ``weights=None``: balanced batches (``n / k`` windows of every domain, from the domain streams).
    ``rank``/``world``: every rank draws the global batch of ``n * world`` rows and keeps rows
    ``rank::world``.
    """

    def __init__(self, pools_dir: str | Path, domains: list[str], *, seq_len: int, seed: int,
                 weights: Sequence[float] | None, sampling: str = "stratified", rank: int = 0,
                 world: int = 1) -> None:
        from proxytrain.pools import PoolSampler

        self.sampler = PoolSampler(pools_dir, seq_len=seq_len, seed=seed, split="train", domains=domains)
        assert self.sampler.domains == domains, "pools.json domains must be sorted"
        self.domains = list(domains)
        self.vocab_size = int(self.sampler.meta["vocab_size"])
        self.seq_len, self.sampling, self.rank, self.world = seq_len, sampling, rank, world
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self._row = 0
        self._u0 = float(np.random.default_rng([seed, 1]).random())
        self._dom_rng = [np.random.default_rng([seed, 2, i]) for i in range(len(domains))]

    def _stream_row(self, d: int) -> dict[str, np.ndarray]:
        lo, hi = self.sampler.check_nonempty(self.domains[d])
        start = lo + int(self._dom_rng[d].integers(0, max(hi - lo - self.seq_len, 0) + 1))
        return self.sampler.window(d, start)

    def global_batch(self, rows: int) -> dict[str, Any]:
        """The next ``rows`` rows of the run (all ranks together)."""
        if self.weights is None:
            k = len(self.domains)
            return self.sampler.stack([self._stream_row(d) for d in range(k) for _ in range(rows // k)])
        if self.sampling == "iid":
            return self.sampler.sample_weighted(self.weights, rows)
        u = np.mod(self._u0 + (self._row + np.arange(rows)) * _INV_PHI, 1.0)
        self._row += rows
        cum = np.cumsum(self.weights)
        doms = np.minimum(np.searchsorted(cum / cum[-1], u, side="right"), len(self.domains) - 1)
        return self.sampler.stack([self._stream_row(int(d)) for d in doms])

    def next_batch(self, n: int) -> dict[str, Any]:
        b = self.global_batch(n * self.world)
        if self.world == 1:
            return b
        return {k: v[self.rank::self.world].contiguous() for k, v in b.items()}

    def eval_batches(self, n: int, count: int) -> list[dict[str, Any]]:  # the trainer's protocol
        raise NotImplementedError("validation comes from ValidationSource")

    def state_dict(self) -> dict[str, Any]:
        return {"row": self._row, "u0": self._u0, "domain_rng": [g.bit_generator.state for g in self._dom_rng],
                "sampler": self.sampler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._row, self._u0 = int(state["row"]), float(state["u0"])
        for g, s in zip(self._dom_rng, state["domain_rng"], strict=True):
            g.bit_generator.state = s
        self.sampler.load_state_dict(state["sampler"])


class ValidationSource:
    """The first ``count * n`` windows of every domain's held-out split (``val`` or ``eval``), in
    batches of ``n``; the same rows on every rank and in every proxy of a search."""

    def __init__(self, pools_dir: str | Path, domains: list[str], *, seq_len: int, seed: int, split: str) -> None:
        from proxytrain.pools import PoolSampler

        if split not in ("val", "eval"):
            raise ValueError(f"eval_split must be 'val' (search) or 'eval' (ablation), got {split!r}")
        self.sampler = PoolSampler(pools_dir, seq_len=seq_len, seed=seed, split=split, domains=domains)
        self.domains, self.split = list(domains), split
        self.vocab_size = int(self.sampler.meta["vocab_size"])

    def eval_batches(self, n: int, count: int) -> list[dict[str, Any]]:
        out = []
        for d in self.domains:
            got = list(self.sampler.eval_batches(d, n, max_rows=n * count))
            if not got:
                frac = "val_fraction" if self.split == "val" else "eval_fraction"
                raise ValueError(f"domain {d!r} has no tokens in the {self.split!r} split; rebuild the "
                                 f"pools with a pools.{frac} that leaves it at least one document")
            out.extend(got)
        return out

    def next_batch(self, n: int) -> dict[str, Any]:  # the trainer's protocol; never trained on
        raise NotImplementedError("a validation source is not trained on")

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


# ----------------------------------------------------------------------------- model + trainer config

def train_config(cfg: ProxyConfig, *, vocab_size: int, seed: int, out_dir: str | Path, rows: int,
                 world: int = 1, progress: bool = False) -> Any:
    """The ``proxytrain.train.TrainConfig`` of a proxy run (``rows`` per step, all ranks together)."""
    from proxytrain.train import TrainConfig

    if rows % world:
        raise ConfigError(f"a proxy step of {rows} rows cannot be split over {world} ranks: make the proxy "
                          f"batch_size a multiple of the world size ({world})")
    device = resolve_device(cfg.device)
    return TrainConfig(
        model=cfg.model_preset, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
        vocab_size=vocab_size, seq_len=cfg.seq_len, steps=cfg.steps, micro_batch_size=rows // world, grad_accum=1,
        lr=cfg.lr, min_lr=cfg.lr * 0.1, warmup_steps=cfg.warmup, weight_decay=0.1, beta1=0.9, beta2=0.95,
        grad_clip=1.0, dtype="auto", attn_backend="auto", head_dtype=cfg.head_dtype, device=device,
        # one thread per proxy on CPU: `workers` proxies share the cores (and the bits do not depend
        # on the machine's OMP_NUM_THREADS)
        threads=1 if device == "cpu" else 0, seed=seed, ckpt_every=cfg.ckpt_every, keep_checkpoints=1,
        resume=True, eval_every=cfg.steps, eval_batches=cfg.val_batches, eval_batch_size=cfg.batch_size,
        dvclive=False, progress=progress, monitor_every=0, out_dir=str(out_dir))


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("proxy device cuda: no CUDA device here; use device auto or cpu")
    return device


def build_proxy_model(pools_dir: str | Path, cfg: ProxyConfig, seed: int = 0, *, vocab_size: int = 0):
    """A freshly initialised proxy model (CPU, plain module) for the pools' vocabulary."""
    from proxytrain.model import build_model
    from proxytrain.train import TrainConfig, model_config

    vocab = vocab_size or pools_vocab(pools_dir)
    tcfg = TrainConfig(model=cfg.model_preset, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                       seq_len=cfg.seq_len, head_dtype=cfg.head_dtype)
    return build_model(model_config(tcfg, vocab), "cpu", seed=seed)


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
    import tempfile

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
    val = ValidationSource(pools_dir, domains, seq_len=cfg.seq_len, seed=cfg.val_seed, split=eval_split)
    val.eval_batches(cfg.batch_size, cfg.val_batches)  # an empty held-out split fails before training
    tmp = None
    if work_dir is None:
        tmp = tempfile.mkdtemp(prefix="proxy-") if rank == 0 else None
        if world > 1:
            import torch.distributed as dist

            box = [tmp]
            dist.broadcast_object_list(box, src=0)
            tmp = box[0]
        work_dir = tmp
    tcfg = train_config(cfg, vocab_size=source.vocab_size, seed=seed, out_dir=work_dir, rows=rows, world=world,
                        progress=progress)
    t0 = time.perf_counter()
    res = train(tcfg, source=source, val_source=val, objective=objective)
    train_s = time.perf_counter() - t0
    scores = res.val
    if not scores:  # resumed from the final checkpoint (killed before the result was written)
        from proxytrain.model import evaluate
        from proxytrain.parallel import all_reduce_sum, reshard_all

        scores = evaluate(res.model, val.eval_batches(cfg.batch_size, cfg.val_batches), domains,
                          reduce=all_reduce_sum)
        reshard_all(res.model)
    losses = _logged_losses(Path(work_dir) / "train_log.jsonl") if rank == 0 else []
    # logged, not returned: results are cached in DVC outputs, whose bytes must not depend on speed
    steps_done = [r for r in res.history if "event" not in r]
    if rank == 0:
        log.info("proxy trained", extra={"data": {"seed": seed, "seconds": round(train_s, 3),
                                                  "tokens_per_s": round(rows * cfg.seq_len * len(steps_done)
                                                                        / max(train_s, 1e-9), 1)}})
    if rank == 0 and (tmp is not None or not keep_work):
        shutil.rmtree(work_dir, ignore_errors=True)
    result = {
        "val_loss": {d: float(scores[d]) for d in domains}, "domains": domains, "weights": [float(x) for x in w],
        "seed": seed, "steps": cfg.steps, "tokens": cfg.steps * rows * cfg.seq_len, "eval_split": eval_split,
        "train_loss_last": float(np.mean(losses[-10:])) if losses else float("nan"),
        "curve": [[i, round(float(np.mean(losses[max(0, i - 4): i + 1])), 5)]
                  for i in range(0, len(losses), max(1, len(losses) // 50))],
        "config": {k2: v for k2, v in asdict(cfg).items() if k2 not in PLACEMENT_FIELDS},
    }
    return res.model, result


def proxy_flops(cfg: ProxyConfig, vocab_size: int, *, rows: int, steps: int, forward_share: float = 0.0) -> float:
    """Training FLOPs of one proxy run (``steps`` x ``rows`` x ``seq_len`` tokens at
    ``proxytrain.flops.flops_per_token``), plus ``forward_share`` x that for extra forward passes
    over the same tokens (a DoReMi reference scoring every DRO batch: 1/3, a forward of 2N of 6N)."""
    from proxytrain.flops import flops_per_token
    from proxytrain.train import TrainConfig, model_config

    tcfg = TrainConfig(model=cfg.model_preset, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                       seq_len=cfg.seq_len, head_dtype=cfg.head_dtype)
    per_token = flops_per_token(model_config(tcfg, vocab_size), seq_len=cfg.seq_len)
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


def proxy_key(pools_fp: str, weights: Sequence[float], cfg: ProxyConfig, seed: int, tag: str = "") -> str:
    """Cache key: pools, weights, the config fields that change results, seed, tag, the code that
    computes a proxy and what governs its numbers (:func:`numerics_key`), and the device kind when it
    is not the CPU (GPU runs compute in bf16). So a cache folder holds only results that the current
    code and environment would compute again: the same inputs give the same set of files."""
    c = {k: v for k, v in asdict(cfg).items() if k not in PLACEMENT_FIELDS}
    payload = {"pools": pools_fp, "w": [round(float(x), 10) for x in weights], "cfg": c, "seed": seed, "tag": tag,
               "code": code_fingerprint(), "numerics": numerics_key()}
    dev = resolve_device(cfg.device)
    if dev != "cpu":
        payload["device"] = dev
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


# the modules whose code computes a proxy's result (a change re-keys every cached run)
_PROXY_CODE = ("proxytrain", "mix/proxy.py", "mix/doremi.py", "mix/dro.py", "corpusmix/pools.py",
               "corpusmix/mixture.py")


@functools.cache
def code_fingerprint() -> str:
    """Hash of the source of the modules that compute a proxy's result (:data:`_PROXY_CODE`)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for entry in _PROXY_CODE:
        path = root / entry
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def numerics_key() -> dict[str, Any]:
    """What decides a CPU proxy's bits besides its inputs: the numerics mode and level, the fused
    kernels' build and the torch version (``corpusmix.numerics``)."""
    import torch

    from corpusmix import numerics
    from proxytrain import cpu_kernels

    cpu_kernels.lib()
    st = numerics.state()
    return {"torch": torch.__version__, **{k: st.get(k) for k in ("mode", "at_reference", "aten", "kernels")}}


def write_json(path: Path, obj: Any) -> None:
    """Atomic JSON write (a killed writer never leaves a half file under the final name)."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    os.replace(tmp, path)


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
