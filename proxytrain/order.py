"""The global row order of a shard set and its per-domain token accounting.

The trainer's data is one global stream of rows, positions ``g = 0, 1, 2, ...``; position ``g`` is
row ``order_e[g % R]`` of epoch ``e = g // R`` (``R`` rows in the shard set). Ranks and dataloader
workers only slice this stream (``proxytrain.shards``), so the stream and a cursor into it (the
number of positions consumed) do not depend on how many ranks or workers read it.

Two orders, both functions of the shard set and a seed only:

- ``manifest``: the manifest's rows in file order, the same every epoch (``corpusmix pack``
  shuffled them globally, so domains are mixed by chance: a prefix of ``n`` rows holds a domain's
  share up to binomial noise of order ``sqrt(n)`` rows).
- ``mixed`` (the default): per epoch ``e``, the shards in a permutation seeded by ``(seed, e)`` and
  the rows of each shard in a permutation seeded by ``(seed, e, shard)`` give the *stream order*;
  the rows of each domain are then merged by virtual time (weighted fair queueing): the ``j``-th
  row of domain ``d`` in stream order, with ``c_j`` tokens of ``d`` before it and ``s_j`` of its own,
  gets the key ``(c_j + s_j / 2) / D_d`` (``D_d``: the domain's tokens in the shard set), and the
  epoch is all rows sorted by key (ties: domain index, then stream order).

Guarantee of ``mixed`` (by construction, for every prefix of every epoch): each domain's consumed
tokens stay within ``S/2 * (1 + (K - 2) w_d)`` of its share ``w_d`` of the total (``S``: the most
document tokens in one row, ``K``: domains with rows; proof: docs/formats.md, Reading shards).
Each domain's rows are consumed in stream order, so all domains advance through the same shards
together and a few decoded shards serve the reader (``ShardReader(cache_shards=...)``).

Accounting: :meth:`GlobalOrder.consumed` gives the tokens of each domain in positions ``[0, n)``
(whole epochs plus a prefix), :meth:`GlobalOrder.planned` the mixture's share of their total.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

ORDERS = ("mixed", "manifest")
_TAG = 0x0D3E5  # separates the order's random streams from the pack's (which use [seed, ...] too)


@dataclass
class RowIndex:
    """Per manifest row: its domain id and its document (non-pad) tokens."""

    domain: np.ndarray  # int64, index into the manifest's domains
    tokens: np.ndarray  # int64
    first_rows: list[int]  # shard k holds manifest rows first_rows[k]:first_rows[k + 1]
    n_domains: int

    @property
    def rows(self) -> int:
        return int(self.domain.size)

    def domain_tokens(self) -> np.ndarray:
        """Tokens of each domain over the whole shard set (``D_d``)."""
        return np.bincount(self.domain, weights=self.tokens, minlength=self.n_domains).astype(np.int64)


@dataclass
class _Epoch:
    order: np.ndarray  # manifest rows in epoch order
    positions: list[np.ndarray] | None = None  # per domain: its positions in the epoch, ascending
    cum: list[np.ndarray] | None = None  # per domain: tokens in its first j rows (length rows_d + 1)


def mixed_epoch_order(index: RowIndex, seed: int, epoch: int) -> np.ndarray:
    """The manifest rows of epoch ``epoch`` in the ``mixed`` order (see the module docstring)."""
    n_shards = len(index.first_rows) - 1
    parts = []
    for k in np.random.default_rng([seed, _TAG, epoch]).permutation(n_shards).tolist():
        lo, hi = index.first_rows[k], index.first_rows[k + 1]
        parts.append(lo + np.random.default_rng([seed, _TAG, epoch, k]).permutation(hi - lo))
    stream = np.concatenate([np.zeros(0, dtype=np.int64), *parts])
    dom, tok = index.domain[stream], index.tokens[stream]
    total = index.domain_tokens()
    key = np.zeros(stream.size, dtype=np.float64)
    for d in np.unique(dom).tolist():
        mask = dom == d
        t = tok[mask]
        # exact in float64 below 2**53 tokens; a domain without tokens keeps key 0 (read first)
        key[mask] = ((np.cumsum(t) - t) + t / 2) / max(int(total[d]), 1)
    return stream[np.lexsort((dom, key))]  # by key, then domain; stable: stream order within a domain


class GlobalOrder:
    """Random access to the global stream of a shard set: ``rows(positions)``, ``consumed(n)``.

    ``GlobalOrder(index, kind="mixed", seed=0, cache_epochs=2)``; epochs are built on first use
    (``O(R log R)``) and the last ``cache_epochs`` are kept.
    """

    def __init__(self, index: RowIndex, kind: str = "mixed", seed: int = 0, cache_epochs: int = 2) -> None:
        if kind not in ORDERS:
            raise ValueError(f"data order must be one of {', '.join(ORDERS)}, got {kind!r}")
        if index.rows == 0:
            raise ValueError("the shard set holds no rows")
        self.index, self.kind, self.seed = index, kind, int(seed)
        self.rows_per_epoch = index.rows
        self.domain_tokens = index.domain_tokens()
        total = int(self.domain_tokens.sum())
        self.shares = self.domain_tokens / total if total else np.zeros(index.n_domains)
        self._epochs: OrderedDict[int, _Epoch] = OrderedDict()
        self._cache_epochs = max(1, int(cache_epochs))
        self._digests: dict[int, str] = {}

    def _epoch(self, e: int) -> _Epoch:
        key = 0 if self.kind == "manifest" else e  # the manifest order repeats every epoch
        ep = self._epochs.get(key)
        if ep is None:
            order = (np.arange(self.rows_per_epoch, dtype=np.int64) if self.kind == "manifest"
                     else mixed_epoch_order(self.index, self.seed, e))
            ep = self._epochs[key] = _Epoch(order)
            while len(self._epochs) > self._cache_epochs:
                self._epochs.popitem(last=False)
        else:
            self._epochs.move_to_end(key)
        return ep

    def rows(self, positions: np.ndarray | list[int]) -> np.ndarray:
        """Manifest rows at global stream positions (any shape, non-negative)."""
        pos = np.asarray(positions, dtype=np.int64)
        e, r = np.divmod(pos, self.rows_per_epoch)
        out = np.empty_like(pos)
        for ep in np.unique(e).tolist():
            m = e == ep
            out[m] = self._epoch(ep).order[r[m]]
        return out

    def row(self, position: int) -> int:
        e, r = divmod(int(position), self.rows_per_epoch)
        return int(self._epoch(e).order[r])

    def consumed(self, n: int) -> np.ndarray:
        """Document tokens of each domain in positions ``[0, n)`` (int64, one per domain)."""
        e, r = divmod(int(n), self.rows_per_epoch)
        out = e * self.domain_tokens
        if r:
            ep = self._epoch(e)
            if ep.positions is None:
                dom = self.index.domain[ep.order]
                tok = self.index.tokens[ep.order]
                ep.positions = [np.flatnonzero(dom == d) for d in range(self.index.n_domains)]
                ep.cum = [np.concatenate([[0], np.cumsum(tok[p])]).astype(np.int64) for p in ep.positions]
            assert ep.cum is not None
            out = out + np.array([c[np.searchsorted(p, r)] for p, c in zip(ep.positions, ep.cum, strict=True)],
                                 dtype=np.int64)
        return out

    def digest(self, rows: int = 4096) -> str:
        """Identity of the order: sha256 of the manifest rows at the first ``rows`` positions of epochs 0 and 1."""
        import hashlib

        if rows not in self._digests:  # computed once: it would evict the current epochs from the cache
            n = min(rows, self.rows_per_epoch)
            pos = np.concatenate([np.arange(n), self.rows_per_epoch + np.arange(n)])
            self._digests[rows] = hashlib.sha256(self.rows(pos).astype("<i8").tobytes()).hexdigest()
        return self._digests[rows]

    def planned(self, n: int) -> np.ndarray:
        """The mixture's plan for positions ``[0, n)``: their total tokens times each domain's share."""
        return self.consumed(n).sum() * self.shares
