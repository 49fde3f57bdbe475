"""The batch sources of a proxy run: :class:`MixtureSource` (training rows by mixture weight, or
balanced DRO batches) and :class:`ValidationSource` (the held-out windows every proxy is scored on)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

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
    """``count * n`` windows of every domain's held-out split (``val`` or ``eval``), in batches of
    ``n``: evenly spaced over the split with ``spread`` (the proxies' default, ``val_windows``), else
    its first ones; the same rows on every rank and in every proxy of a search."""

    def __init__(self, pools_dir: str | Path, domains: list[str], *, seq_len: int, seed: int, split: str,
                 spread: bool = False) -> None:
        from proxytrain.pools import PoolSampler

        if split not in ("val", "eval"):
            raise ValueError(f"eval_split must be 'val' (search) or 'eval' (ablation), got {split!r}")
        self.sampler = PoolSampler(pools_dir, seq_len=seq_len, seed=seed, split=split, domains=domains)
        self.domains, self.split, self.spread = list(domains), split, spread
        self.vocab_size = int(self.sampler.meta["vocab_size"])

    def eval_batches(self, n: int, count: int) -> list[dict[str, Any]]:
        out = []
        for d in self.domains:
            got = list(self.sampler.eval_batches(d, n, max_rows=n * count, spread=self.spread))
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
