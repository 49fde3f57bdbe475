"""DoReMi: domain weights from a Group-DRO proxy (Xie et al. 2023, "DoReMi: Optimizing Data
Mixtures Speeds Up Language Model Pretraining").

Run as ``corpusmix mix doremi --input POOLS_DIR --output mixture.json [--preset tiny]``; the
numerics live here and the proxy training glue in :mod:`mix.proxy`.

The algorithm, step by step (one DRO step = one proxy batch):

1. A *reference* model is trained on the baseline mixture (natural token shares by default,
   ``reference_mixture: natural|uniform``).
2. A *proxy* of the same size is trained with Group DRO. Its batches sample domains uniformly.
   For every domain present in the batch the excess loss is the mean over that domain's target
   tokens of ``max(proxy_loss - reference_loss, 0)`` (per token); a domain absent from the batch
   keeps its last excess (as the reference implementation does).
3. Exponentiated gradient: ``log a <- log a + eta * excess``; normalise (softmax);
   smooth toward uniform: ``a <- (1 - c) * a + c / k``.
4. The proxy's loss reweights tokens by the current weights: ``sum_t k * a[d(t)] * loss_t / n``
   (``k *`` keeps the scale of an unweighted mean when ``a`` is uniform).
5. The output is the average of the weights over all steps.

*Iterated DoReMi* (``iterate: true``) repeats rounds with the previous output as the next
reference mixture until the weights move less than ``tol`` (L1) or ``max_rounds`` is reached.

Choices that differ from the paper, and why:

- eta = 1 and c = 1e-3 are explicit params (the paper's values; the original repository's code
  default for c is 1e-4 while its scripts pass 1e-3).
- The proxy and the reference are tiny (the ``tiny`` preset of :mod:`proxytrain.model`,
  ~1M non-embedding parameters, a small vocabulary) and train for hundreds of steps instead of
  280M-parameter models trained for 200k steps: a mixture search has to finish in minutes on
  two CPU cores. Weights from such short runs are noisier, so the seed spread is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class DoReMiConfig:
    """DoReMi hyper-parameters (``params.yaml`` section ``mix.doremi``)."""

    eta: float = field(default=1.0, metadata={"help": "exponentiated-gradient step size"})
    smoothing: float = field(default=1e-3, metadata={"help": "smoothing c toward uniform"})
    steps: int = field(default=200, metadata={"help": "DRO proxy steps (and reference steps)"})
    reference_mixture: str = field(default="natural", metadata={"help": "natural | uniform"})
    iterate: bool = field(default=False, metadata={"help": "iterated DoReMi (rounds)"})
    max_rounds: int = field(default=3, metadata={"help": "max rounds when iterating"})
    tol: float = field(default=0.05, metadata={"help": "stop iterating when L1 change < tol"})

    def validate(self) -> None:
        if self.eta <= 0:
            raise ValueError(f"doremi eta must be > 0, got {self.eta}; the paper uses 1.0")
        if not 0.0 <= self.smoothing < 1.0:
            raise ValueError(f"doremi smoothing must be in [0, 1), got {self.smoothing}; the paper uses 1e-3")
        if self.steps < 1:
            raise ValueError(f"doremi steps must be >= 1, got {self.steps}")
        if self.reference_mixture not in ("natural", "uniform"):
            raise ValueError(
                f"doremi reference_mixture must be 'natural' or 'uniform', got {self.reference_mixture!r}")
        if self.max_rounds < 1 or self.tol < 0:
            raise ValueError("doremi max_rounds must be >= 1 and tol >= 0")


def domain_excess_loss(proxy_loss, reference_loss, mask, domain_ids, num_domains: int):
    """Per-domain mean of the clipped per-token excess loss.

    ``proxy_loss``/``reference_loss``/``mask``: ``[B, T]`` tensors (mask = target tokens);
    ``domain_ids``: ``[B]``. Returns ``(excess, present)`` numpy arrays of length ``num_domains``;
    ``excess[d]`` is 0 where ``present[d]`` is False (no target tokens of ``d`` in the batch).
    """
    import torch

    with torch.no_grad():
        m = mask.float()
        tok = (proxy_loss.detach().float() - reference_loss.detach().float()).clamp(min=0) * m
        onehot = torch.nn.functional.one_hot(domain_ids.long(), num_domains).float()  # [B, k]
        sums = onehot.T @ tok.sum(dim=1)
        counts = onehot.T @ m.sum(dim=1)
        present = counts > 0
        excess = torch.where(present, sums / counts.clamp(min=1), torch.zeros_like(sums))
    return excess.cpu().double().numpy(), present.cpu().numpy()


class GroupDRO:
    """Exponentiated-gradient domain weights with smoothing and step averaging."""

    def __init__(self, num_domains: int, *, eta: float = 1.0, smoothing: float = 1e-3):
        if num_domains < 2:
            raise ValueError(f"DoReMi needs at least 2 domains, got {num_domains}")
        self.k = num_domains
        self.eta = float(eta)
        self.c = float(smoothing)
        self.weights = np.full(self.k, 1.0 / self.k)
        self.last_excess = np.zeros(self.k)
        self.history: list[np.ndarray] = []

    def update(self, excess: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
        """One step; absent domains reuse their last excess. Returns the new weights."""
        excess = np.asarray(excess, dtype=np.float64)
        if excess.shape != (self.k,):
            raise ValueError(f"excess must have shape ({self.k},), got {excess.shape}")
        if present is None:
            present = np.ones(self.k, dtype=bool)
        self.last_excess = np.where(present, excess, self.last_excess)
        logw = np.log(self.weights) + self.eta * self.last_excess
        logw -= logw.max()
        w = np.exp(logw)
        w /= w.sum()
        self.weights = (1.0 - self.c) * w + self.c / self.k
        self.history.append(self.weights.copy())
        return self.weights

    def average(self) -> np.ndarray:
        """The output of DoReMi: weights averaged over all steps taken (uniform before any)."""
        if not self.history:
            return np.full(self.k, 1.0 / self.k)
        avg = np.mean(self.history, axis=0)
        return avg / avg.sum()

    def loss_weights(self, domain_ids):
        """Per-example loss weights ``k * a[d]`` (a tensor on ``domain_ids``' device)."""
        import torch

        w = torch.as_tensor(self.weights * self.k, dtype=torch.float32, device=domain_ids.device)
        return w[domain_ids.long()]


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


def run_doremi(pools_dir, cfg: DoReMiConfig, proxy_cfg, *, seed: int = 0, cache_dir, progress: bool = True
               ) -> dict:
    """Full DoReMi (optionally iterated) on a token-pools folder; resumable through ``cache_dir``.

    Returns ``{"weights": {domain: w}, "domains", "rounds", "trajectory": [{"round", "step",
    domain: w, ...}], "seconds"}``. Each round's result is cached as JSON and its reference model
    as a ``state_dict`` file, so a finished round (or reference) is never retrained.
    """
    import dataclasses
    import json
    import time
    from pathlib import Path

    from mix.mixture import natural_mixture
    from mix.proxy import pool_domains, pools_fingerprint, proxy_key

    cfg.validate()
    tokens = pool_domains(pools_dir)
    domains = list(tokens)
    k = len(domains)
    pcfg = dataclasses.replace(proxy_cfg, steps=cfg.steps)
    if cfg.reference_mixture == "natural":
        nat = natural_mixture(tokens)
        ref0 = np.array([nat[d] for d in domains])
    else:
        ref0 = np.full(k, 1.0 / k)
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    fp = pools_fingerprint(pools_dir)
    tag = f"doremi eta={cfg.eta} c={cfg.smoothing}"
    t0 = time.perf_counter()
    trajectory: list[dict] = []

    def run_round(ref_w: np.ndarray, r: int) -> np.ndarray:
        key = proxy_key(fp, ref_w, pcfg, seed, tag)
        out = cache / f"doremi-{key}.json"
        if not out.exists():
            _log().info("doremi round", extra={"data": {"round": r, "reference": ref_w.tolist()}})
            reference = _reference_model(pools_dir, ref_w, pcfg, seed, fp, cache)
            dro = GroupDRO(k, eta=cfg.eta, smoothing=cfg.smoothing)
            from mix.proxy import train_proxy

            _, res = train_proxy(pools_dir, None, pcfg, seed=seed + 1, dro=dro, reference=reference,
                                 progress=progress)
            res.update(weights=dro.average().tolist(), history=[h.tolist() for h in dro.history],
                       reference_weights=ref_w.tolist(), round=r)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(res))
            tmp.replace(out)
        res = json.loads(out.read_text())
        for step, h in enumerate(res["history"]):
            trajectory.append({"round": r, "step": step, **dict(zip(domains, h, strict=True))})
        return np.array(res["weights"])

    if cfg.iterate:
        final, rounds = iterate_rounds(run_round, ref0, max_rounds=cfg.max_rounds, tol=cfg.tol)
    else:
        final = run_round(ref0, 0)
        rounds = [{"round": 0, "reference": ref0.tolist(), "weights": final.tolist(),
                   "l1_change": l1_change(final, ref0)}]
    final = final / final.sum()
    return {"weights": dict(zip(domains, final.tolist(), strict=True)), "domains": domains, "rounds": rounds,
            "trajectory": trajectory, "seconds": round(time.perf_counter() - t0, 2)}


def _log():
    from corpusmix.logging import get_logger

    return get_logger("mix.doremi")


def _reference_model(pools_dir, ref_w: np.ndarray, pcfg, seed: int, fp: str, cache):
    """Train (or load) the reference model on ``ref_w``; its weights are cached as a state dict."""
    import torch

    from mix.proxy import build_proxy_model, proxy_key, train_proxy

    path = cache / f"reference-{proxy_key(fp, ref_w, pcfg, seed, 'reference')}.pt"
    if path.exists():
        model = build_proxy_model(pools_dir, pcfg, seed)
        model.load_state_dict(torch.load(path, weights_only=True))
        return model
    model, _ = train_proxy(pools_dir, ref_w, pcfg, seed=seed)
    tmp = path.with_suffix(".tmp")
    torch.save(model.state_dict(), tmp)
    tmp.replace(path)
    return model
