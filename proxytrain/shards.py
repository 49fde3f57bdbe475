"""Streaming reader of packed shards (``corpusmix pack`` output) for the trainer.

The shards folder (docs/formats.md) may be a local path or any URI pyarrow understands
(``file://``, ``s3://``, ``gs://``, ``hdfs://``) or, failing that, any fsspec URI (``memory://``,
``gcs://``, ...). Every row is turned into the trainer-batch dict: ``tokens`` (int64 ``[seq_len]``),
``segment_ids`` (int32 ``[seq_len]``, 0..k-1 per packed document chunk, -1 on padding) and
``domain_id`` (int64, index into the manifest's ``domains``).

The stream and its cursor. The manifest's rows, in order (already shuffled globally by ``pack``),
repeated ``epochs`` times (``None``: forever), form the global stream ``g = 0, 1, 2, ...``. Rank
``r`` of ``world_size`` reads ``g = start + r, start + r + world_size, ...``: no overlap, no gap,
and per-rank row counts differ by at most one. The cursor is the global position ``start`` plus
``world_size`` times the rows this rank consumed, so a checkpoint taken when all ranks consumed the
same number of rows resumes exactly, also with another ``world_size``.

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

``ShardBatchSource(path, *, rank, world_size, expect_tokenizer_sha256)`` offers the same stream as
``next_batch(n)`` / ``eval_batches(n, count)`` / ``state_dict()`` for ``proxytrain.train``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from corpusmix.config import ConfigError

STATE_VERSION = 1


class ShardError(ConfigError):
    """Shards that cannot be read as asked (other tokenizer, incomplete pack, wrong cursor)."""


def resolve_filesystem(source: str, filesystem: Any = None) -> tuple[Any, str]:
    """``(pyarrow FileSystem, path)`` for a local path, a pyarrow URI or an fsspec URI."""
    import pyarrow.fs as pafs

    if filesystem is not None:
        if not isinstance(filesystem, pafs.FileSystem):  # an fsspec filesystem object
            filesystem = pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
        return filesystem, source
    if "://" not in source:
        return pafs.LocalFileSystem(), str(Path(source).resolve())
    try:
        return pafs.FileSystem.from_uri(source)
    except Exception:  # pyarrow does not know the scheme: let fsspec try  # noqa: BLE001
        pass
    try:
        import fsspec
    except ImportError as exc:
        raise ShardError(f"pyarrow cannot open {source!r} and fsspec is not installed") from exc
    try:
        fs, path = fsspec.core.url_to_fs(source)
    except (ValueError, ImportError) as exc:
        raise ShardError(f"cannot open {source!r}: {exc}") from exc
    return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path


def manifest_digest(manifest: dict[str, Any]) -> str:
    """Identity of a shard set (its files' sha256 and row counts) for cursor checks."""
    key = [(s["file"], s["sha256"], s["rows"]) for s in manifest["shards"]]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()


class ShardReader:
    """Random access to the rows of one shard set; keeps the last opened shard decoded in memory."""

    def __init__(self, source: str, *, expect_tokenizer_sha256: str | None = None, verify: bool = False,
                 allow_incomplete: bool = False, filesystem: Any = None) -> None:
        self.source, self.verify, self._filesystem = source, verify, filesystem
        fs, root = resolve_filesystem(source, filesystem)
        self.root = root.rstrip("/")
        try:
            with fs.open_input_stream(f"{self.root}/manifest.json") as fh:
                self.manifest = json.loads(fh.read().decode())
        except FileNotFoundError:
            raise ShardError(f"no manifest.json in {source}; write shards with `corpusmix pack`") from None
        m = self.manifest
        if expect_tokenizer_sha256 and m["tokenizer_sha256"] != expect_tokenizer_sha256:
            raise ShardError(
                f"shards in {source} were made with tokenizer {m['tokenizer_sha256'][:12]}..., but the trainer "
                f"uses {expect_tokenizer_sha256[:12]}...; re-pack them with the trainer's tokenizer "
                "(corpusmix pack --tokenizer ...) or train with the tokenizer they were made with")
        if not m.get("complete", True) and not allow_incomplete:
            raise ShardError(f"the pack in {source} is incomplete (interrupted); re-run the same "
                             "`corpusmix pack` command to finish it")
        self.seq_len, self.pad_id = int(m["seq_len"]), int(m["pad_id"])
        self.domains: list[str] = list(m["domains"])
        self._domain_ids = {d: i for i, d in enumerate(self.domains)}
        self.shards = m["shards"]
        self.first_rows = np.cumsum([0] + [int(s["rows"]) for s in self.shards]).tolist()
        self.rows = self.first_rows[-1]
        self.digest = manifest_digest(m)
        self._fs = None
        self._cur: tuple[int, np.ndarray, np.ndarray, np.ndarray] | None = None

    def __getstate__(self) -> dict[str, Any]:  # filesystems and decoded shards stay per process
        return {**self.__dict__, "_fs": None, "_cur": None}

    @property
    def fs(self) -> Any:
        if self._fs is None:
            self._fs = resolve_filesystem(self.source, self._filesystem)[0]
        return self._fs

    def _load(self, k: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
        import pyarrow as pa
        import pyarrow.fs as pafs

        info = self.shards[k]
        path = f"{self.root}/{info['file']}"
        if isinstance(self.fs, pafs.LocalFileSystem):
            buf = pa.memory_map(path, "r").read_buffer()
        else:
            with self.fs.open_input_file(path) as fh:
                buf = fh.read_buffer()
        if self.verify and hashlib.sha256(memoryview(buf)).hexdigest() != info["sha256"]:
            raise ShardError(f"{path}: sha256 differs from the manifest (corrupt or replaced shard)")
        table = pa.ipc.open_file(buf).read_all()
        if table.num_rows != int(info["rows"]):
            raise ShardError(f"{path}: {table.num_rows} rows, manifest says {info['rows']}")
        n_rows, seq_len = table.num_rows, self.seq_len
        tok_col = table.column("tokens").combine_chunks()
        tokens = tok_col.flatten().to_numpy().reshape(n_rows, seq_len).astype(np.int64)
        dl = table.column("doc_lens").combine_chunks()
        lens = dl.flatten().to_numpy().astype(np.int64)
        offs = (dl.offsets.to_numpy() - dl.offsets[0].as_py()).astype(np.int64)
        # segment ids of the whole shard at once: chunk j of row r covers its tokens with value j
        counts = np.diff(offs)
        row_of_chunk = np.repeat(np.arange(n_rows, dtype=np.int64), counts)
        chunk_in_row = np.arange(lens.size, dtype=np.int64) - offs[:-1][row_of_chunk]
        row_tokens = np.bincount(row_of_chunk, weights=lens, minlength=n_rows).astype(np.int64)
        if (row_tokens > seq_len).any():
            raise ShardError(f"{path}: a row's doc_lens sum to more than seq_len {seq_len}")
        first_tok = np.cumsum(row_tokens) - row_tokens
        total = int(row_tokens.sum())
        pos = np.arange(total, dtype=np.int64) - np.repeat(first_tok, row_tokens)
        seg = np.full((n_rows, seq_len), -1, dtype=np.int32)
        seg.reshape(-1)[np.repeat(np.arange(n_rows, dtype=np.int64), row_tokens) * seq_len + pos] = \
            np.repeat(chunk_in_row, lens).astype(np.int32)
        dom = table.column("domain").to_pylist()
        try:
            dom_ids = np.fromiter((self._domain_ids[d] for d in dom), dtype=np.int64, count=len(dom))
        except KeyError as exc:
            raise ShardError(f"{path}: domain {exc.args[0]!r} is not in the manifest's domains") from None
        self._cur = (k, tokens, seg, dom_ids)
        return self._cur

    def row(self, g: int) -> dict[str, np.ndarray]:
        """Row ``g`` of the stream (``g`` modulo the number of rows, i.e. epochs repeat the order)."""
        g %= self.rows
        cur = self._cur
        if cur is None or not self.first_rows[cur[0]] <= g < self.first_rows[cur[0] + 1]:
            cur = self._load(bisect.bisect_right(self.first_rows, g) - 1)
        k, tokens, seg, dom_ids = cur
        i = g - self.first_rows[k]
        return {"tokens": tokens[i], "segment_ids": seg[i], "domain_id": dom_ids[i]}


def _to_torch(row: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {"tokens": torch.from_numpy(row["tokens"]), "segment_ids": torch.from_numpy(row["segment_ids"]),
            "domain_id": torch.tensor(int(row["domain_id"]), dtype=torch.int64)}


def _stack(rows: list[dict[str, np.ndarray]]) -> dict[str, torch.Tensor]:
    return {"tokens": torch.from_numpy(np.stack([r["tokens"] for r in rows])),
            "segment_ids": torch.from_numpy(np.stack([r["segment_ids"] for r in rows])),
            "domain_id": torch.tensor([int(r["domain_id"]) for r in rows], dtype=torch.int64)}


def _dist_rank_world() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


class ShardDataset(IterableDataset):
    """``IterableDataset`` of trainer rows from a shards folder/URI (see the module docstring).

    ``ShardDataset(source, *, batch_size=1, rank=None, world_size=None, epochs=1,
    expect_tokenizer_sha256=None, verify=False, filesystem=None)``. ``rank``/``world_size`` default
    to ``torch.distributed``'s (or 0/1). ``batch_size`` must equal the DataLoader's so that workers
    own whole batches. Iterating in-process advances ``state_dict()``; with dataloader workers use
    :class:`ShardLoader`, which counts the rows the trainer received.
    """

    def __init__(self, source: str | Path, *, batch_size: int = 1, rank: int | None = None,
                 world_size: int | None = None, epochs: int | None = 1,
                 expect_tokenizer_sha256: str | None = None, verify: bool = False,
                 filesystem: Any = None) -> None:
        super().__init__()
        self.reader = ShardReader(str(source), expect_tokenizer_sha256=expect_tokenizer_sha256,
                                  verify=verify, filesystem=filesystem)
        d_rank, d_world = _dist_rank_world()
        self.rank = d_rank if rank is None else int(rank)
        self.world_size = d_world if world_size is None else int(world_size)
        if not 0 <= self.rank < self.world_size:
            raise ShardError(f"rank {self.rank} is outside 0..{self.world_size - 1}")
        if batch_size < 1:
            raise ShardError(f"batch_size must be >= 1, got {batch_size}")
        if epochs is not None and epochs < 1:
            raise ShardError(f"epochs must be >= 1 or None (endless), got {epochs}")
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
        return self.reader.row(self.global_index(local, start))

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

    # --- the cursor
    def state_dict(self) -> dict[str, Any]:
        return {"version": STATE_VERSION, "cursor": int(self.start), "world_size": self.world_size,
                "rank": self.rank, "manifest": self.reader.digest, "rows": self.reader.rows}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("manifest") != self.reader.digest:
            raise ShardError("this cursor belongs to another shard set (the manifest's shards differ); "
                             "resume on the shards the checkpoint was trained on")
        self.start = int(state["cursor"])


class ShardLoader:
    """A ``DataLoader`` over a :class:`ShardDataset` whose ``state_dict`` is exact with any worker count.

    ``ShardLoader(dataset, *, num_workers=0, **dataloader_kwargs)``; the batch size is the dataset's.
    The cursor counts the rows of the batches handed to the trainer, not what workers prefetched.
    """

    def __init__(self, dataset: ShardDataset, *, num_workers: int = 0, **kwargs: Any) -> None:
        if kwargs.get("in_order") is False or "batch_size" in kwargs or "sampler" in kwargs:
            raise ShardError("ShardLoader needs the DataLoader's default in-order, round-robin batches: "
                             "drop in_order/batch_size/sampler (the batch size is the dataset's)")
        self.dataset, self.num_workers, self.kwargs = dataset, num_workers, kwargs
        self.cursor = dataset.start

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        ds = self.dataset
        ds.start = self.cursor
        loader = DataLoader(ds, batch_size=ds.batch_size, num_workers=self.num_workers, **self.kwargs)
        for batch in loader:
            self.cursor += len(batch["tokens"]) * ds.world_size
            yield batch

    def state_dict(self) -> dict[str, Any]:
        return {**self.dataset.state_dict(), "cursor": int(self.cursor)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)
        self.cursor = self.dataset.start


class ShardBatchSource:
    """The trainer's data-source interface over shards: ``next_batch(n)``, ``eval_batches``, cursor.

    ``ShardBatchSource(source, *, rank=0, world_size=1, expect_tokenizer_sha256=None, epochs=None)``;
    the stream is endless by default (epochs repeat the shard order).
    """

    def __init__(self, source: str | Path, *, rank: int = 0, world_size: int = 1,
                 expect_tokenizer_sha256: str | None = None, epochs: int | None = None,
                 filesystem: Any = None) -> None:
        self.dataset = ShardDataset(source, rank=rank, world_size=world_size, epochs=epochs,
                                    expect_tokenizer_sha256=expect_tokenizer_sha256, filesystem=filesystem)
        self.domains = self.dataset.domains
        self.vocab_size = int(self.dataset.manifest.get("vocab_size", 0)) or None

    def next_batch(self, n: int) -> dict[str, torch.Tensor]:
        ds = self.dataset
        left = ds.local_rows()
        if left is not None and left < n:
            raise ShardError(f"the shards hold only {left} more rows for this rank; pack more tokens or "
                             "allow more epochs")
        rows = [ds.row(i) for i in range(n)]
        ds.start += n * ds.world_size
        return _stack(rows)

    def eval_batches(self, n: int, count: int) -> list[dict[str, torch.Tensor]]:
        """The first ``n * count`` rows (fewer if the shards are smaller), same on every rank."""
        r = self.dataset.reader
        total = min(n * count, r.rows)
        return [_stack([r.row(g) for g in range(k, min(k + n, total))]) for k in range(0, total, n)]

    def state_dict(self) -> dict[str, Any]:
        return self.dataset.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.dataset.load_state_dict(state)
