"""Streaming reader of packed shards (``corpusmix pack`` output) for the trainer.

Every row is turned into the trainer-batch dict: ``tokens`` (int64 ``[seq_len]``), ``segment_ids``
(int32 ``[seq_len]``, 0..k-1 per packed document chunk, -1 on padding), ``domain_id`` (int64,
index into the manifest's ``domains``) and ``row`` (int64, the manifest row it came from).
Reading the files: ``proxytrain.shard_reader`` (local paths, pyarrow and fsspec URIs).

The stream and its cursor: the rows form one global stream ``g = 0, 1, 2, ...`` in a deterministic
order (``proxytrain.order``), repeated ``epochs`` times (``None``: forever); rank ``r`` of
``world_size`` reads ``g = start + r, start + r + world_size, ...``. The cursor is global, so a
checkpoint resumes exactly with any world size and number of workers; what the state holds and
checks: docs/formats.md (Reading shards).

Dataloader workers get whole batches: with ``batch_size=B`` and ``W`` workers, worker ``w`` makes
local batches ``w, w + W, ...``; ``torch.utils.data.DataLoader`` takes batches from workers round-robin,
so the batch sequence is the same for every ``W`` (including 0) and a resume with another worker
count continues exactly. Use it as::

    ds = ShardDataset("OUT/shards", batch_size=8, expect_tokenizer_sha256=sha)   # rank from torch.distributed
    loader = ShardLoader(ds, num_workers=2)          # a DataLoader that counts what the trainer consumed
    for step, batch in enumerate(loader):
        ...
        state = loader.state_dict()                  # save with the checkpoint
    loader = ShardLoader(ShardDataset(...), num_workers=4); loader.load_state_dict(state)

``ShardBatchSource(path, *, rank, world_size, expect_tokenizer_sha256, order, seed, num_workers)``
offers the same stream as ``next_batch(n)`` / ``eval_batches(n, count)`` / ``state_dict()`` for
the trainer (``proxytrain.trainer``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from proxytrain.order import GlobalOrder
from proxytrain.shard_reader import ShardError, ShardReader, manifest_digest, resolve_filesystem

__all__ = ["STATE_VERSION", "ShardBatchSource", "ShardDataset", "ShardError", "ShardLoader", "ShardReader",
           "manifest_digest", "resolve_filesystem"]

STATE_VERSION = 2  # 1: cursor over the manifest order, no order/seed/accounting fields


def _to_torch(row: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {"tokens": torch.from_numpy(row["tokens"]), "segment_ids": torch.from_numpy(row["segment_ids"]),
            "domain_id": torch.tensor(int(row["domain_id"]), dtype=torch.int64),
            "row": torch.tensor(int(row["row"]), dtype=torch.int64)}


def _batch_to_torch(b: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v) for k, v in b.items()}


def _as_numpy(b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The DataLoader's collate for whole batches: keep numpy. Workers then send a batch through their
    queue as one pickle instead of one shared-memory segment per tensor (the costlier path for
    batches of this size); the main process wraps the arrays without a copy."""
    return b


def _dist_rank_world() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def _weights_digest(weights: dict[str, float]) -> str:
    return hashlib.sha256(json.dumps(weights, sort_keys=True).encode()).hexdigest()


class ShardDataset(IterableDataset):
    """``IterableDataset`` of trainer rows from a shards folder/URI (see the module docstring).

    ``ShardDataset(source, *, batch_size=1, rank=None, world_size=None, epochs=1,
    expect_tokenizer_sha256=None, verify=False, filesystem=None, order="mixed", seed=0,
    cache_shards=4)``. ``rank``/``world_size`` default to ``torch.distributed``'s (or 0/1).
    ``batch_size`` must equal the DataLoader's so that workers own whole batches. Iterating
    in-process advances ``state_dict()``; with dataloader workers use :class:`ShardLoader`, which
    counts the rows the trainer received.
    """

    def __init__(self, source: str | Path, *, batch_size: int = 1, rank: int | None = None,
                 world_size: int | None = None, epochs: int | None = 1,
                 expect_tokenizer_sha256: str | None = None, verify: bool = False,
                 filesystem: Any = None, order: str = "mixed", seed: int = 0, cache_shards: int = 4) -> None:
        super().__init__()
        self.reader = ShardReader(str(source), expect_tokenizer_sha256=expect_tokenizer_sha256,
                                  verify=verify, filesystem=filesystem, cache_shards=cache_shards)
        d_rank, d_world = _dist_rank_world()
        self.rank = d_rank if rank is None else int(rank)
        self.world_size = d_world if world_size is None else int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise ShardError(f"rank {self.rank} is outside 0..{self.world_size - 1}")
        if batch_size < 1:
            raise ShardError(f"batch_size must be >= 1, got {batch_size}")
        if epochs is not None and epochs < 1:
            raise ShardError(f"epochs must be >= 1 or None (endless), got {epochs}")
        if self.reader.rows == 0:
            raise ShardError(f"the shards in {source} hold no rows; pack a positive token budget")
        try:
            self.order = GlobalOrder(self.reader.index(), order, seed)
        except ValueError as exc:
            raise ShardError(str(exc)) from None
        self.batch_size, self.epochs = int(batch_size), epochs
        self.start = 0  # global stream position of this rank's next row, minus the rank offset
        self.domains = self.reader.domains
        self.manifest = self.reader.manifest

    # --- the stream
    def local_rows(self, start: int | None = None) -> int | None:
        """Rows left for this rank from global position ``start`` (None when endless)."""
        if self.epochs is None:
            return None
        total = self.reader.rows * self.epochs
        first = (self.start if start is None else start) + self.rank
        return max(0, -(-(total - first) // self.world_size))

    def global_index(self, local: int, start: int | None = None) -> int:
        return (self.start if start is None else start) + self.rank + local * self.world_size

    def row(self, local: int, start: int | None = None) -> dict[str, np.ndarray]:
        return self.reader.row(self.order.row(self.global_index(local, start)))

    def batch(self, lo: int, hi: int, start: int | None = None) -> dict[str, np.ndarray]:
        """This rank's local rows ``lo..hi-1`` from ``start``, stacked (numpy)."""
        first = (self.start if start is None else start) + self.rank
        pos = first + np.arange(lo, hi, dtype=np.int64) * self.world_size
        return self.reader.batch(self.order.rows(pos))

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        start = self.start
        n = self.local_rows(start)
        if info is None:  # in-process: every yielded row advances the cursor
            i = 0
            while n is None or i < n:
                row = self.row(i, start)
                i += 1
                self.start = start + i * self.world_size
                yield _to_torch(row)
            return
        b = info.id
        B, W = self.batch_size, info.num_workers
        while n is None or b * B < n:
            hi = (b + 1) * B if n is None else min((b + 1) * B, n)
            for i in range(b * B, hi):
                yield _to_torch(self.row(i, start))
            b += W

    # --- the cursor and the accounting
    def accounting(self, cursor: int | None = None) -> dict[str, dict[str, float]]:
        """Per domain: document tokens consumed in global positions ``[0, cursor)`` and the mixture's plan.

        ``planned`` is the pack's effective mixture (its token shares) times the tokens consumed;
        ``mixture`` the weight the pack was asked for (they differ where a domain fell short).
        """
        n = self.start if cursor is None else int(cursor)
        consumed, planned = self.order.consumed(n), self.order.planned(n)
        asked = (self.manifest.get("mixture") or {}).get("weights", {})
        return {d: {"consumed": int(consumed[i]), "planned": round(float(planned[i]), 3),
                    "share": round(float(self.order.shares[i]), 9), "mixture": float(asked.get(d, 0.0))}
                for i, d in enumerate(self.domains) if self.order.domain_tokens[i] or d in asked}

    def state_dict(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "cursor": int(self.start), "world_size": self.world_size,
                "rank": self.rank, "manifest": self.reader.digest, "rows": self.reader.rows,
                "plan_sha256": self.manifest.get("plan_sha256"),
                "mixture": _weights_digest((self.manifest.get("mixture") or {}).get("weights", {})),
                "order": self.order.kind, "seed": self.order.seed, "order_sha256": self.order.digest(),
                "epoch": int(self.start) // self.reader.rows,
                "tokens": self.accounting()}

    def check_state(self, state: dict[str, Any]) -> None:
        """Refuse, with one line, a cursor of another shard set, mixture, order or seed."""
        version = int(state.get("version", 1))
        mix = _weights_digest((self.manifest.get("mixture") or {}).get("weights", {}))
        if state.get("manifest") != self.reader.digest:
            if state.get("mixture") not in (None, mix):
                raise ShardError("this cursor belongs to shards of another mixture (the pack's mixture weights "
                                 "differ); resume on the shards the checkpoint was trained on, or start a new run")
            raise ShardError("this cursor belongs to another shard set (the manifest's shards differ); "
                             "resume on the shards the checkpoint was trained on")
        kind = state.get("order", "manifest") if version >= 2 else "manifest"
        if kind != self.order.kind:
            raise ShardError(f"this cursor is over the {kind!r} data order, this loader reads the "
                             f"{self.order.kind!r} order; resume with data_order: {kind}")
        if kind == "mixed" and int(state.get("seed", 0)) != self.order.seed:
            raise ShardError(f"this cursor is over the mixed order of seed {state.get('seed')}, this loader's seed "
                             f"is {self.order.seed}; resume with the run's seed")
        if version >= 2 and "tokens" in state:
            now = self.accounting(int(state["cursor"]))
            if state.get("order_sha256", self.order.digest()) != self.order.digest() or \
                    {d: v["consumed"] for d, v in now.items()} != {d: v["consumed"] for d, v in state["tokens"].items()}:
                raise ShardError("the data order differs from the one this cursor was saved with (the tokens "
                                 "consumed per domain do not match); resume with the corpusmix version of the run")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.check_state(state)
        self.start = int(state["cursor"])


class _Batches(IterableDataset):
    """Whole local batches of a :class:`ShardDataset` (worker ``w`` of ``W``: batches ``w, w + W, ...``)."""

    def __init__(self, ds: ShardDataset, batch_size: int, start: int) -> None:
        super().__init__()
        self.ds, self.batch_size, self.start = ds, batch_size, start

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        info = torch.utils.data.get_worker_info()
        b, step = (0, 1) if info is None else (info.id, info.num_workers)
        n, B = self.ds.local_rows(self.start), self.batch_size
        while n is None or b * B < n:
            hi = (b + 1) * B if n is None else min((b + 1) * B, n)
            yield self.ds.batch(b * B, hi, self.start)
            b += step


class ShardLoader:
    """A ``DataLoader`` over a :class:`ShardDataset` whose ``state_dict`` is exact with any worker count.

    ``ShardLoader(dataset, *, num_workers=0, **dataloader_kwargs)``; the batch size is the dataset's.
    Workers assemble whole batches; the cursor counts the rows of the batches handed to the
    trainer, not what workers prefetched.
    """

    def __init__(self, dataset: ShardDataset, *, num_workers: int = 0, **kwargs: Any) -> None:
        if kwargs.get("in_order") is False or "batch_size" in kwargs or "sampler" in kwargs:
            raise ShardError("ShardLoader needs the DataLoader's default in-order, round-robin batches: "
                             "drop in_order/batch_size/sampler (the batch size is the dataset's)")
        if num_workers < 0:
            raise ShardError(f"num_workers must be >= 0, got {num_workers}")
        self.dataset, self.num_workers, self.kwargs = dataset, num_workers, kwargs
        self.cursor = dataset.start

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        ds = self.dataset
        ds.start = self.cursor
        ds.order.row(self.cursor)  # build the epoch's order here, once, not in every worker
        loader = DataLoader(_Batches(ds, ds.batch_size, self.cursor), batch_size=None,
                            num_workers=self.num_workers, **{"collate_fn": _as_numpy, **self.kwargs})
        for batch in loader:
            self.cursor += len(batch["tokens"]) * ds.world_size
            yield _batch_to_torch(batch) if isinstance(batch["tokens"], np.ndarray) else batch

    def state_dict(self) -> dict[str, Any]:
        return {**self.dataset.state_dict(), "cursor": int(self.cursor),
                "epoch": int(self.cursor) // self.dataset.reader.rows, "tokens": self.dataset.accounting(self.cursor)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)
        self.cursor = self.dataset.start


class ShardBatchSource:
    """The trainer's data-source interface over shards: ``next_batch(n)``, ``eval_batches``, cursor.

    ``ShardBatchSource(source, *, rank=0, world_size=1, expect_tokenizer_sha256=None, epochs=None,
    filesystem=None, order="mixed", seed=0, num_workers=0)``; the stream is endless by default.
    ``num_workers > 0`` assembles batches in that many dataloader worker processes. The manifest
    rows of the last batch are in ``last_rows``; ``accounting()`` gives the per-domain tokens.
    """

    resumes_across_world_sizes = True  # the cursor is global (see the module docstring)

    def __init__(self, source: str | Path, *, rank: int = 0, world_size: int = 1,
                 expect_tokenizer_sha256: str | None = None, epochs: int | None = None,
                 filesystem: Any = None, order: str = "mixed", seed: int = 0, num_workers: int = 0) -> None:
        if num_workers < 0:
            raise ShardError(f"loader workers must be >= 0, got {num_workers}")
        self.dataset = ShardDataset(source, rank=rank, world_size=world_size, epochs=epochs,
                                    expect_tokenizer_sha256=expect_tokenizer_sha256, filesystem=filesystem,
                                    order=order, seed=seed)
        self.domains = self.dataset.domains
        self.vocab_size = int(self.dataset.manifest.get("vocab_size", 0)) or None
        self.num_workers = num_workers
        self.last_rows = np.zeros(0, dtype=np.int64)
        self._it: Iterator[dict[str, torch.Tensor]] | None = None
        self._it_n = 0

    def _from_workers(self, n: int) -> dict[str, torch.Tensor]:
        ds = self.dataset
        if self._it is None or self._it_n != n:
            ds.order.row(ds.start)  # build the epoch's order here, once, not in every worker
            self._it = iter(DataLoader(_Batches(ds, n, ds.start), batch_size=None, num_workers=self.num_workers,
                                       persistent_workers=False, collate_fn=_as_numpy))
            self._it_n = n
        return _batch_to_torch(next(self._it))

    def next_batch(self, n: int) -> dict[str, torch.Tensor]:
        ds = self.dataset
        left = ds.local_rows()
        if left is not None and left < n:
            raise ShardError(f"the shards hold only {left} more rows for this rank; pack more tokens or "
                             "allow more epochs")
        b = self._from_workers(n) if self.num_workers else _batch_to_torch(ds.batch(0, n))
        ds.start += n * ds.world_size
        self.last_rows = b.pop("row").numpy()
        return b

    def eval_batches(self, n: int, count: int) -> list[dict[str, torch.Tensor]]:
        """The first ``n * count`` manifest rows (fewer if the shards are smaller), same on every rank."""
        r = self.dataset.reader
        total = min(n * count, r.rows)
        out = []
        for k in range(0, total, n):
            b = _batch_to_torch(r.batch(np.arange(k, min(k + n, total))))
            del b["row"]
            out.append(b)
        return out

    def accounting(self) -> dict[str, dict[str, float]]:
        return self.dataset.accounting()

    def state_dict(self) -> dict[str, Any]:
        return self.dataset.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)
        self._it = None  # workers restart at the loaded cursor
