"""Proxy models for the mixture searches: train one small model on given domain weights (or with
a Group-DRO callback for DoReMi) from the token pools, and measure per-domain validation loss.

Library module; used by ``corpusmix mix doremi|regmix`` and by :mod:`mix.ablation`::

    from mix.proxy import ProxyConfig, train_proxy, train_proxies
    model, result = train_proxy("pools/", weights, ProxyConfig(steps=100), seed=0)
    results = train_proxies("pools/", [(w1, 0), (w2, 0)], cfg, cache_dir="cache/", workers=2)

Everything model- and data-specific comes from ``proxytrain``: the model (``proxytrain.model``:
preset config, ``build_model``, ``per_token_loss``, ``make_optimizer``, ``lr_at``, ``evaluate``)
and the token pools (``proxytrain.pools``: seeded per-domain sampling of trainer batches and the
held-out validation split). This module only adds the mixture logic: which domain each example
comes from, the DRO reweighting hook, and resumable parallel runs.

Every proxy runs in-process on one torch thread (``torch.set_num_threads(1)``), so ``workers``
processes use ``workers`` cores. A finished proxy's result is saved as JSON under
``cache_dir/<key>.json`` (the key hashes the pools, the weights, the config and the seed) and is
never retrained: a re-run reads it back.

Validation batches are the first windows of each domain's held-out split, independent of the
run's seed, so every proxy of a search is scored on exactly the same tokens. Searches score on the
search-validation split (``val``); the ablation scores on the evaluation split (``eval``), which no
search ever reads (``eval_split`` of :func:`train_proxy` / :func:`train_proxies`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import SimpleNamespace
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
    batch_size: int = field(default=8, metadata={"help": "sequences per step"})
    seq_len: int = field(default=128, metadata={"help": "tokens per sequence"})
    lr: float = field(default=3e-3, metadata={"help": "peak learning rate"})
    warmup: int = field(default=20, metadata={"help": "warmup steps"})
    val_batches: int = field(default=4, metadata={"help": "validation batches per domain"})
    val_seed: int = field(default=1234, metadata={"help": "seed of the (shared) validation batches"})
    sampling: str = field(default="stratified", metadata={
        "help": "stratified: each domain gets its exact share of rows (low-discrepancy sequence) and "
                "its own window stream, so runs on nearby mixtures see nearly the same data; "
                "iid: every row's domain drawn independently"})

    def validate(self) -> None:
        for name in ("steps", "batch_size", "seq_len", "val_batches"):
            if getattr(self, name) < 1:
                raise ValueError(f"proxy {name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"proxy lr must be > 0, got {self.lr}")
        if self.sampling not in ("stratified", "iid"):
            raise ValueError(f"proxy sampling must be 'stratified' or 'iid', got {self.sampling!r}")


# ----------------------------------------------------------------------------- pools + model glue

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
    doms = {d: int(np.diff(pool.token_range(split))[0]) for d, pool in pools.items()}
    empty = sorted(d for d, n in doms.items() if n <= 0)
    if empty:
        raise ConfigError(f"domain(s) {empty} have no tokens in {p}; drop them from the pools "
                         "(or add data) before a mixture search")
    # A domain that curation nearly emptied (1-2 documents) has no document left for the
    # search-validation or the evaluation split although the pools were built with both: it can be
    # neither searched nor judged, so it is left out of the search (weight 0 in every mixture), loudly.
    short = sorted(d for d, pool in pools.items()
                   if (meta.get("val_fraction", 0) > 0 and pool.val_docs == 0)
                   or (meta.get("eval_fraction", 0) > 0 and pool.eval_docs == 0))
    if short and len(short) < len(doms):
        log.warning("domains left out of the mixture search: too few documents for the train / "
                    "search-validation / evaluation splits", extra={"data": {
                        "domains": {d: pools[d].docs for d in short}}})
        doms = {d: n for d, n in doms.items() if d not in short}
    if len(doms) < 2:
        raise ConfigError(f"a mixture search needs at least 2 domains, {p} has {sorted(doms)}")
    return doms


def pools_fingerprint(pools_dir: str | Path) -> str:
    """Hash of ``pools.json`` (tokenizer hash, token counts): proxies are keyed by it."""
    return hashlib.sha256((Path(pools_dir) / "pools.json").read_bytes()).hexdigest()[:16]


_INV_PHI = (5 ** 0.5 - 1) / 2


class _Data:
    """Training and validation batches from the token pools (``proxytrain.pools.PoolSampler``)."""

    def __init__(self, pools_dir: str | Path, cfg: ProxyConfig, seed: int, eval_split: str = "val"):
        from proxytrain.pools import PoolSampler

        if eval_split not in ("val", "eval"):
            raise ValueError(f"eval_split must be 'val' (search) or 'eval' (ablation), got {eval_split!r}")
        self.domains = list(pool_domains(pools_dir))
        self.sampler = PoolSampler(pools_dir, seq_len=cfg.seq_len, seed=seed, split="train", domains=self.domains)
        self.val = PoolSampler(pools_dir, seq_len=cfg.seq_len, seed=cfg.val_seed, split=eval_split,
                               domains=self.domains)
        self.eval_split = eval_split
        assert self.sampler.domains == self.domains, "pools.json domains must be sorted"
        self.cfg = cfg
        # stratified sampling: row t takes the domain whose cumulative-weight interval holds
        # u_t = frac(u0 + t / golden ratio) (a Weyl sequence: every domain's row count stays within
        # O(log t) of weight * t), and each domain draws its windows from its own RNG stream, so the
        # n-th row of a domain is the same whatever the other weights are (common random numbers)
        self._row = 0
        self._u0 = float(np.random.default_rng([seed, 1]).random())
        self._dom_rng = [np.random.default_rng([seed, 2, i]) for i in range(len(self.domains))]

    def batch(self, weights: np.ndarray) -> dict[str, Any]:
        """One training batch; rows take their domains from ``weights`` (see ``cfg.sampling``)."""
        if self.cfg.sampling == "iid":
            return self.sampler.sample_weighted(weights, self.cfg.batch_size)
        n = self.cfg.batch_size
        u = np.mod(self._u0 + (self._row + np.arange(n)) * _INV_PHI, 1.0)
        self._row += n
        cum = np.cumsum(np.asarray(weights, dtype=np.float64))
        doms = np.minimum(np.searchsorted(cum / cum[-1], u, side="right"), len(self.domains) - 1)
        rows = []
        for d in doms:
            lo, hi = self.sampler._check_nonempty(self.domains[d])
            start = lo + int(self._dom_rng[d].integers(0, max(hi - lo - self.cfg.seq_len, 0) + 1))
            rows.append(self.sampler.window(int(d), start))
        return self.sampler._stack(rows)

    def balanced_batch(self, per_domain: int) -> dict[str, Any]:
        """``per_domain`` windows of every domain (DoReMi's DRO batches), from the domain streams."""
        rows = []
        for d in range(len(self.domains)):
            lo, hi = self.sampler._check_nonempty(self.domains[d])
            for _ in range(per_domain):
                start = lo + int(self._dom_rng[d].integers(0, max(hi - lo - self.cfg.seq_len, 0) + 1))
                rows.append(self.sampler.window(d, start))
        return self.sampler._stack(rows)

    def val_batches(self) -> list[dict[str, Any]]:
        """The first ``val_batches * batch_size`` windows of every domain's validation split."""
        rows = self.cfg.val_batches * self.cfg.batch_size
        out = []
        for d in self.domains:
            got = list(self.val.eval_batches(d, self.cfg.batch_size, max_rows=rows))
            if not got:
                frac = "val_fraction" if self.eval_split == "val" else "eval_fraction"
                raise ValueError(f"domain {d!r} has no tokens in the {self.eval_split!r} split; rebuild the "
                                 f"pools with a pools.{frac} that leaves it at least one document")
            out.extend(got)
        return out


def build_proxy_model(pools_dir: str | Path, cfg: ProxyConfig, seed: int):
    """A freshly initialised proxy model for the pools' vocabulary (e.g. to load a state dict)."""
    vocab = json.loads((Path(pools_dir) / "pools.json").read_text())["vocab_size"]
    return _build(cfg, vocab, seed)[0]


def _build(cfg: ProxyConfig, vocab_size: int, seed: int):
    import torch

    from proxytrain.model import ModelConfig, build_model, make_optimizer

    torch.manual_seed(seed)
    shape = {k: getattr(cfg, k) for k in ("d_model", "n_layers", "n_heads") if getattr(cfg, k)}
    mcfg = ModelConfig.preset(cfg.model_preset, vocab_size=vocab_size, max_seq_len=cfg.seq_len,
                              attn_backend="sdpa", **shape)
    model = build_model(mcfg, "cpu", seed=seed)
    opt = make_optimizer(model, _optim_fields(cfg))
    return model, opt


def _optim_fields(cfg: ProxyConfig) -> SimpleNamespace:
    """The optimizer/schedule fields ``proxytrain.model.make_optimizer``/``lr_at`` read."""
    return SimpleNamespace(lr=cfg.lr, min_lr=cfg.lr * 0.1, warmup_steps=cfg.warmup, steps=cfg.steps,
                           weight_decay=0.1, beta1=0.9, beta2=0.95)


def _per_token_loss(model, batch: dict[str, Any]):
    from proxytrain.model import per_token_loss

    return per_token_loss(model(batch["tokens"], batch["segment_ids"]), batch["tokens"], batch["segment_ids"])


def evaluate_proxy(model, data: _Data) -> dict[str, float]:
    """Mean loss per target token, per domain, on the shared held-out batches (``data.eval_split``)."""
    from proxytrain.model import evaluate

    losses = evaluate(model, data.val_batches(), data.domains)
    return {d: float(losses[d]) for d in data.domains}


# ----------------------------------------------------------------------------- training

def train_proxy(pools_dir: str | Path, weights: Sequence[float] | None, cfg: ProxyConfig, *, seed: int = 0,
                dro: Any = None, reference: Any = None, on_step: Callable[[int, float], None] | None = None,
                progress: bool = False, eval_split: str = "val"):
    """Train one proxy; return ``(model, result)``.

    ``weights``: the mixture (domain order of ``pools.json``, sorted): each example's domain is drawn
    from it. With ``dro`` (a :class:`mix.doremi.GroupDRO`) and ``reference`` (a trained model)
    domains are drawn uniformly instead, the per-domain excess loss updates ``dro`` every step and
    the loss is reweighted by ``dro``'s current weights; a DRO batch holds the same number of rows
    of every domain (``batch_size`` rounded up to a multiple of the domain count), so every step
    measures every domain's excess.
    ``eval_split``: the held-out split the result's ``val_loss`` is measured on (``val`` for the
    searches, ``eval`` for the ablation).
    ``result``: ``{"val_loss": {domain: loss}, "train_loss", "steps", "tokens", ...}`` (seconds: logged).
    """
    import torch

    from mix.doremi import domain_excess_loss
    from proxytrain.model import lr_at

    cfg.validate()
    torch.set_num_threads(1)
    # same bits on every machine: deterministic kernels where torch has them (warn, never fail)
    torch.use_deterministic_algorithms(True, warn_only=True)
    data = _Data(pools_dir, cfg, seed, eval_split)
    k = len(data.domains)
    if dro is None:
        w = _check_weights(weights, k)
    else:
        if reference is None:
            raise ValueError("DRO proxy training needs a trained reference model")
        w = np.full(k, 1.0 / k)
        reference.eval()
        # equal rows per domain every step: with fewer than one window per domain per step, a
        # domain's excess would be missing or rest on one window, and the weights would swing
        # between near one-hot states
        per_domain = -(-cfg.batch_size // k)
    vocab = json.loads((Path(pools_dir) / "pools.json").read_text())["vocab_size"]
    model, opt = _build(cfg, vocab, seed)
    sched = _optim_fields(cfg)
    t0 = time.perf_counter()
    losses = []
    steps = range(cfg.steps)
    if progress:
        from tqdm import tqdm
        steps = tqdm(steps, desc="proxy", unit="step")
    model.train()
    for step in steps:
        batch = data.batch(w) if dro is None else data.balanced_batch(per_domain)
        tok_loss, mask = _per_token_loss(model, batch)
        n = mask.sum().clamp(min=1)
        if dro is None:
            loss = (tok_loss * mask).sum() / n
        else:
            with torch.no_grad():
                ref_loss, _ = _per_token_loss(reference, batch)
            excess, present = domain_excess_loss(tok_loss, ref_loss, mask, batch["domain_id"], k)
            dro.update(excess, present)
            lw = dro.loss_weights(batch["domain_id"])[:, None]
            loss = (tok_loss * mask * lw).sum() / n
        for g in opt.param_groups:
            g["lr"] = lr_at(step, sched)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
    train_s = time.perf_counter() - t0
    # logged, not returned: results are cached in DVC outputs, whose bytes must not depend on speed
    log.info("proxy trained", extra={"data": {"seed": seed, "seconds": round(train_s, 3)}})
    model.eval()
    val = evaluate_proxy(model, data)
    result = {
        "val_loss": val, "domains": data.domains, "weights": [float(x) for x in w],
        "seed": seed, "steps": cfg.steps, "tokens": cfg.steps * int(batch["tokens"].shape[0]) * cfg.seq_len,
        "eval_split": eval_split,
        "train_loss_last": float(np.mean(losses[-10:])),
        "curve": [[i, round(float(np.mean(losses[max(0, i - 4): i + 1])), 5)]
                  for i in range(0, len(losses), max(1, len(losses) // 50))],
        "config": asdict(cfg),
    }
    return model, result


def _check_weights(weights: Sequence[float] | None, k: int) -> np.ndarray:
    if weights is None:
        raise ValueError("a proxy needs mixture weights (or a DRO callback)")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (k,):
        raise ValueError(f"mixture has {w.size} weights for {k} domains")
    if not np.all(np.isfinite(w)) or (w < 0).any() or abs(w.sum() - 1.0) > 1e-6:
        raise ValueError(f"mixture {w.tolist()} is outside the simplex: weights must be >= 0 and sum to 1")
    return w / w.sum()


def proxy_key(pools_fp: str, weights: Sequence[float], cfg: ProxyConfig, seed: int, tag: str = "") -> str:
    payload = json.dumps({"pools": pools_fp, "w": [round(float(x), 10) for x in weights],
                          "cfg": asdict(cfg), "seed": seed, "tag": tag}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    os.replace(tmp, path)


def _run_one(args: tuple) -> dict[str, Any]:
    pools_dir, weights, cfg_dict, seed, out_path, eval_split = args
    _, result = train_proxy(pools_dir, weights, ProxyConfig(**cfg_dict), seed=seed, eval_split=eval_split)
    _write_json(Path(out_path), result)
    return result


def train_proxies(pools_dir: str | Path, runs: Sequence[tuple[Sequence[float], int]], cfg: ProxyConfig, *,
                  cache_dir: str | Path, workers: int = 2, progress: bool = True,
                  eval_split: str = "val") -> list[dict[str, Any]]:
    """Train (or read back) one proxy per ``(weights, seed)``, ``workers`` processes in parallel.

    Results come back in the order of ``runs``; finished ones are read from ``cache_dir``.
    ``eval_split``: ``val`` (searches) or ``eval`` (ablation) for the results' ``val_loss``.
    """
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    fp = pools_fingerprint(pools_dir)
    tag = "" if eval_split == "val" else f"eval_split={eval_split}"
    paths = [cache / f"proxy-{proxy_key(fp, w, cfg, s, tag)}.json" for w, s in runs]
    todo = [i for i, p in enumerate(paths) if not p.exists()]
    log.info("proxy runs", extra={"data": {"total": len(runs), "cached": len(runs) - len(todo),
                                            "to_train": len(todo), "workers": workers}})
    if todo:
        jobs = [(str(pools_dir), [float(x) for x in runs[i][0]], asdict(cfg), int(runs[i][1]), str(paths[i]),
                 eval_split) for i in todo]
        bar = None
        if progress:
            from tqdm import tqdm
            bar = tqdm(total=len(jobs), desc="proxies", unit="run")
        if workers <= 1:
            for j in jobs:
                _run_one(j)
                bar and bar.update(1)
        else:
            import multiprocessing as mp

            with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as ex:
                for _ in ex.map(_run_one, jobs):
                    bar and bar.update(1)
        bar and bar.close()
    return [json.loads(p.read_text()) for p in paths]
