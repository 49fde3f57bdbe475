"""The Group-DRO step of DoReMi: per-domain excess loss, the weight updates (:class:`GroupDRO`) and
the trainer's objective hook that applies them (:class:`DROObjective`), with the fixed probe of
search-validation windows the ``tuned`` variant scores. The search around it is :mod:`mix.doremi`.
"""

from __future__ import annotations

import numpy as np

# weight updates of mix.doremi.update (GroupDRO)
UPDATES = ("eg", "softmax", "eg_softmax")
# where the excess is clipped at 0 (mix.doremi.excess_clip)
CLIPS = ("token", "domain")


def domain_excess_sums(proxy_loss, reference_loss, mask, domain_ids, num_domains: int, *, clip: str = "token"):
    """``[2, num_domains]`` float64 tensor: per domain, the sum of the per-token excess loss
    ``proxy - reference`` over its target tokens (``clip: token``, the paper: each token's excess
    clipped at 0; ``domain``: unclipped, the domain's mean is clipped by :func:`excess_from_sums`),
    and the number of those tokens (summed over ranks before :func:`excess_from_sums`)."""
    import torch

    if clip not in CLIPS:
        raise ValueError(f"excess clip must be one of {', '.join(CLIPS)}, got {clip!r}")
    with torch.no_grad():
        m = mask.float()
        tok = proxy_loss.detach().float() - reference_loss.detach().float()
        tok = (tok.clamp(min=0) if clip == "token" else tok) * m
        onehot = torch.nn.functional.one_hot(domain_ids.long(), num_domains).float()  # [B, k]
        return torch.stack([onehot.T @ tok.sum(dim=1), onehot.T @ m.sum(dim=1)]).double()


def excess_from_sums(sums) -> tuple[np.ndarray, np.ndarray]:
    """``(excess, present)`` numpy arrays from :func:`domain_excess_sums`' (reduced) tensor."""
    s = sums.detach().cpu().double().numpy()
    present = s[1] > 0
    # a per-token clipped sum is >= 0 already; an unclipped one (clip: domain) is clipped here
    return np.where(present, np.maximum(s[0] / np.maximum(s[1], 1.0), 0.0), 0.0), present


def domain_excess_loss(proxy_loss, reference_loss, mask, domain_ids, num_domains: int):
    """Per-domain mean of the clipped per-token excess loss.

    ``proxy_loss``/``reference_loss``/``mask``: ``[B, T]`` tensors (mask = target tokens);
    ``domain_ids``: ``[B]``. Returns ``(excess, present)`` numpy arrays of length ``num_domains``;
    ``excess[d]`` is 0 where ``present[d]`` is False (no target tokens of ``d`` in the batch).
    """
    return excess_from_sums(domain_excess_sums(proxy_loss, reference_loss, mask, domain_ids, num_domains))


def softmax_weights(excess: np.ndarray, *, temperature: float, smoothing: float) -> np.ndarray:
    """``update: softmax``: ``(1 - c) * softmax(excess / tau) + c / k`` with
    ``tau = temperature * mean(excess)`` (the excess is clipped, so >= 0; uniform when it is 0).

    ``softmax(e / tau)`` is the closed-form maximiser over the simplex of the KL-regularised
    Group-DRO objective ``sum_d a_d e_d - tau * KL(a || uniform)`` (the inner maximisation of
    KL-regularised DRO, e.g. Qi et al. 2021, "An Online Method for a Class of Distributionally
    Robust Optimization with Non-Convex Objectives"; Sagawa et al. 2020's group DRO without the
    regulariser takes exponentiated-gradient steps on the same objective). It equals one
    exponentiated-gradient step of size ``1 / tau`` from the uniform prior: the weights answer the
    current excess and do not integrate past differences. Taking ``tau`` relative to the mean excess
    makes it unit-free: domains whose excess differs by a small fraction of its level stay close."""
    e = np.asarray(excess, dtype=np.float64)
    k = e.shape[0]
    scale = float(np.mean(np.abs(e)))
    if not scale > 0:
        w = np.full(k, 1.0 / k)
    else:
        z = e / (temperature * scale)
        w = np.exp(z - z.max())
        w /= w.sum()
    return (1.0 - smoothing) * w + smoothing / k


class GroupDRO:
    """Group-DRO domain weights (exponentiated gradient or the softmax of the current excess) with
    smoothing and step averaging."""

    def __init__(self, num_domains: int, *, eta: float = 1.0, smoothing: float = 1e-3, ema: float = 0.0,
                 average_from: int = 0, restart: bool = False, update: str = "eg", temperature: float = 0.5):
        if num_domains < 2:
            raise ValueError(f"DoReMi needs at least 2 domains, got {num_domains}")
        if update not in UPDATES:
            raise ValueError(f"DoReMi update must be one of {', '.join(UPDATES)}, got {update!r}")
        self.k = num_domains
        self.update_rule, self.temperature = update, float(temperature)
        self.eta = float(eta)
        self.c = float(smoothing)
        self.ema = float(ema)
        self.average_from = int(average_from)
        self.restart, self._restarted = bool(restart), False
        self.weights = np.full(self.k, 1.0 / self.k)
        self.last_excess = np.zeros(self.k)
        self._seen = np.zeros(self.k, dtype=bool)
        self.history: list[np.ndarray] = []

    def update(self, excess: np.ndarray, present: np.ndarray | None = None) -> np.ndarray:
        """One step; absent domains reuse their last (smoothed) excess. Returns the new weights
        (``eg``: from the previous weights; ``softmax``: from the current excess alone).

        With ``ema > 0`` the excess used is ``ema * previous + (1 - ema) * new`` per present domain
        (its first observation is taken as is)."""
        excess = np.asarray(excess, dtype=np.float64)
        if excess.shape != (self.k,):
            raise ValueError(f"excess must have shape ({self.k},), got {excess.shape}")
        if present is None:
            present = np.ones(self.k, dtype=bool)
        present = np.asarray(present, dtype=bool)
        smoothed = np.where(self._seen, self.ema * self.last_excess + (1.0 - self.ema) * excess, excess)
        self.last_excess = np.where(present, smoothed, self.last_excess)
        self._seen |= present
        if self.restart and not self._restarted and len(self.history) >= self.average_from:
            self.weights = np.full(self.k, 1.0 / self.k)  # the first update of the averaged steps
            self._restarted = True
        closed = self.update_rule == "softmax" or (
            self.update_rule == "eg_softmax" and len(self.history) >= self.average_from)
        if closed:
            self.weights = softmax_weights(self.last_excess, temperature=self.temperature, smoothing=self.c)
        else:
            logw = np.log(self.weights) + self.eta * self.last_excess
            logw -= logw.max()
            w = np.exp(logw)
            w /= w.sum()
            self.weights = (1.0 - self.c) * w + self.c / self.k
        self.history.append(self.weights.copy())
        return self.weights

    def hold(self) -> np.ndarray:
        """A step without an update (probe excess between updates): the current weights count for
        this step in the average."""
        self.history.append(self.weights.copy())
        return self.weights

    def average(self) -> np.ndarray:
        """The output of DoReMi: weights averaged over the steps after ``average_from`` (all steps
        when fewer were taken; uniform before any)."""
        if not self.history:
            return np.full(self.k, 1.0 / self.k)
        hist = self.history[self.average_from:] if len(self.history) > self.average_from else self.history
        avg = np.mean(hist, axis=0)
        return avg / avg.sum()

    def loss_weights(self, domain_ids):
        """Per-example loss weights ``k * a[d]`` (a tensor on ``domain_ids``' device)."""
        import torch

        w = torch.as_tensor(self.weights * self.k, dtype=torch.float32, device=domain_ids.device)
        return w[domain_ids.long()]

    def state_dict(self) -> dict:
        """JSON-able state (weights, last excess, the weights of every step for the average):
        saved in the trainer's checkpoints, so a resumed proxy continues the same trajectory."""
        return {"weights": self.weights.tolist(), "last_excess": self.last_excess.tolist(),
                "seen": self._seen.tolist(), "history": [h.tolist() for h in self.history],
                "restarted": self._restarted}

    def load_state_dict(self, state: dict) -> None:
        self.weights = np.asarray(state["weights"], dtype=np.float64)
        self.last_excess = np.asarray(state["last_excess"], dtype=np.float64)
        self._seen = np.asarray(state["seen"], dtype=bool)
        self.history = [np.asarray(h, dtype=np.float64) for h in state["history"]]
        self._restarted = bool(state.get("restarted", False))


class DROObjective:
    """The Group-DRO step as the trainer's objective hook (``proxytrain.train.Objective``).

    ``probe=None`` (``excess_source: batch``, the paper): per batch the reference's per-token loss
    (no gradient), the per-domain excess sums and counts all-reduced over ranks, the
    :class:`GroupDRO` update, then each token's loss weighted by ``k * a[domain]`` with the updated
    weights (the order of the original implementation).

    ``probe`` (a batch of fixed search-validation windows, :func:`probe_windows`): the reference's
    per-token loss on the probe is computed once (the reference is fixed; it is then released);
    before every ``update_every``-th step (``begin_step``, called by the trainer before the step's
    forward) the proxy's loss on the probe (eval mode, no gradient) gives the excess and the
    weights take one update of ``eta * update_every``; the steps in between keep the weights. The
    same windows at every update and for every seed: no batch-sampling noise enters the weights.
    Under torchrun every rank scores the whole probe (as the trainer's validation does).
    """

    def __init__(self, dro: GroupDRO, reference, domains: list[str], *, probe: dict | None = None,
                 update_every: int = 1, clip: str = "token"):
        self.dro, self.reference, self.domains = dro, reference, list(domains)
        self.clip = clip
        self.probe, self.update_every = probe, int(update_every)
        self.reference.eval()
        self.reference.requires_grad_(False)
        self._ref_probe = None  # the reference's per-token probe loss (computed on first use)
        self._updated_at = -1  # the step of the last probe update (a repeated step does not update twice)

    # ---- probe excess (excess_source: probe)
    def _probe_loss(self, model, dev):
        """Per-token loss ``[N, S-1]`` and mask of ``model`` on the probe, in chunks, eval mode."""
        import torch

        from proxytrain.loss import per_token_loss

        was_training = model.training
        model.eval()
        losses, masks = [], []
        with torch.no_grad():
            n = self.probe["tokens"].shape[0]
            for i in range(0, n, PROBE_CHUNK):
                tok = self.probe["tokens"][i:i + PROBE_CHUNK].to(dev)
                seg = self.probe["segment_ids"][i:i + PROBE_CHUNK].to(dev)
                loss, mask = per_token_loss(model(tok, seg), tok, seg)
                losses.append(loss.float())
                masks.append(mask)
        model.train(was_training)
        return torch.cat(losses), torch.cat(masks)

    def begin_step(self, step: int, model) -> None:
        """Trainer hook before step ``step``'s forward: a probe update every ``update_every`` steps."""
        if self.probe is None:
            return
        from proxytrain.parallel import all_reduce_sum, reshard_all

        del self.dro.history[step:]  # a step repeated after a skipped batch is recorded once
        if step % self.update_every or step == self._updated_at:
            self.dro.hold()
            return
        dev = next(model.parameters()).device
        if self._ref_probe is None:
            self.reference.to(dev)
            self._ref_probe = self._probe_loss(self.reference, dev)[0]
            self.reference = self.reference.to("cpu")
        proxy_tok, mask = self._probe_loss(model, dev)
        reshard_all(model)  # an FSDP forward without backward leaves the root unsharded
        dom = self.probe["domain_id"].to(dev)
        sums = all_reduce_sum(domain_excess_sums(proxy_tok, self._ref_probe, mask, dom, self.dro.k, clip=self.clip))
        self.dro.update(*excess_from_sums(sums))
        self._updated_at = step

    def token_loss(self, step: int, batch: dict, loss_tok, mask):
        if self.probe is not None:
            return loss_tok * self.dro.loss_weights(batch["domain_id"])[:, None]
        import torch

        from proxytrain.loss import per_token_loss
        from proxytrain.parallel import all_reduce_sum

        dev = loss_tok.device
        if next(self.reference.parameters()).device != dev:
            self.reference.to(dev)
        with torch.no_grad():
            ref_tok, _ = per_token_loss(self.reference(batch["tokens"], batch["segment_ids"]), batch["tokens"],
                                        batch["segment_ids"])
        sums = all_reduce_sum(domain_excess_sums(loss_tok, ref_tok, mask, batch["domain_id"], self.dro.k,
                                                 clip=self.clip))
        self.dro.update(*excess_from_sums(sums))
        return loss_tok * self.dro.loss_weights(batch["domain_id"])[:, None]

    def record(self) -> dict[str, float]:
        out = {f"dro_weight/{d}": float(w) for d, w in zip(self.domains, self.dro.weights, strict=True)}
        out.update({f"dro_excess/{d}": float(e) for d, e in zip(self.domains, self.dro.last_excess, strict=True)})
        return out

    def state_dict(self) -> dict:
        return {**self.dro.state_dict(), "updated_at": self._updated_at}

    def load_state_dict(self, state: dict) -> None:
        self.dro.load_state_dict(state)
        self._updated_at = int(state.get("updated_at", -1))


# rows per forward when scoring the probe (bounds the activation memory of a large proxy)
PROBE_CHUNK = 64


def probe_windows(pools_dir, domains: list[str], *, seq_len: int, windows: int) -> dict:
    """The fixed probe of ``excess_source: probe``: per domain, up to ``windows`` non-overlapping
    ``seq_len`` windows spread evenly over its search-validation (``val``) split (all of them when
    the split holds fewer; one padded window when it is shorter than ``seq_len``). Independent of
    any seed: every update and every DRO proxy scores the same tokens. A trainer batch (``domain_id``
    indexes ``domains``)."""
    from proxytrain.pools import PoolSampler

    sampler = PoolSampler(pools_dir, seq_len=seq_len, split="val", domains=list(domains))
    rows = []
    for i, d in enumerate(sampler.domains):
        lo, hi = sampler.check_nonempty(d)
        avail = max(1, (hi - lo) // seq_len)
        n = min(windows, avail)
        rows.extend(sampler.window(i, lo + (j * avail // n) * seq_len) for j in range(n))
    return sampler.stack(rows)
