"""Random access to the rows of a packed shard set (``corpusmix pack`` output, docs/formats.md).

The shards folder may be a local path or any URI pyarrow understands (``file://``, ``s3://``,
``gs://``, ``hdfs://``) or, failing that, any fsspec URI (``memory://``, ``gcs://``, ...).
``ShardReader`` checks at open that every shard the manifest lists exists, builds the per-row index
(domain and document tokens, read from the shards' ``domain`` and ``doc_lens`` columns only) on
first use, and keeps the last ``cache_shards`` decoded shards in memory (local shards are memory
mapped: their tokens are not copied until a batch is assembled).
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from corpusmix.config import ConfigError
from proxytrain.order import RowIndex


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


# a decoded shard: (tokens int32 [rows, seq_len], segment ids int32 [rows, seq_len], domain ids int64 [rows])
_Decoded = tuple[np.ndarray, np.ndarray, np.ndarray]


class ShardReader:
    """Rows of one shard set by manifest row number; see the module docstring.

    ``ShardReader(source, *, expect_tokenizer_sha256=None, verify=False, allow_incomplete=False,
    filesystem=None, cache_shards=4)``. ``verify``: check each shard's sha256 when it is decoded.
    """

    def __init__(self, source: str, *, expect_tokenizer_sha256: str | None = None, verify: bool = False,
                 allow_incomplete: bool = False, filesystem: Any = None, cache_shards: int = 4) -> None:
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
        self.cache_shards = max(1, int(cache_shards))
        self.decodes = 0  # shards decoded so far (in this process)
        self._fs = fs
        self._cache: OrderedDict[int, _Decoded] = OrderedDict()
        self._index: RowIndex | None = None
        self._check_files()

    def __getstate__(self) -> dict[str, Any]:  # filesystems and decoded shards stay per process
        return {**self.__dict__, "_fs": None, "_cache": OrderedDict()}

    @property
    def fs(self) -> Any:
        if self._fs is None:
            self._fs = resolve_filesystem(self.source, self._filesystem)[0]
        return self._fs

    def _path(self, k: int) -> str:
        return f"{self.root}/{self.shards[k]['file']}"

    def _check_files(self) -> None:
        import pyarrow.fs as pafs

        if not self.shards:
            return
        infos = self.fs.get_file_info([self._path(k) for k in range(len(self.shards))])
        missing = [self.shards[k]["file"] for k, i in enumerate(infos) if i.type != pafs.FileType.File]
        if missing:
            raise ShardError(f"{len(missing)} of the {len(self.shards)} shards listed in {self.source}/manifest.json "
                             f"are missing (first: {missing[0]}); restore them or re-run the same `corpusmix pack` "
                             "command, which rewrites missing shards")

    def _open(self, k: int, columns: list[str] | None = None) -> Any:
        """Shard ``k`` as an Arrow table (only ``columns`` when given); local files are memory mapped."""
        import pyarrow as pa
        import pyarrow.fs as pafs

        path = self._path(k)
        if isinstance(self.fs, pafs.LocalFileSystem):
            src: Any = pa.memory_map(path, "r")
        else:
            src = self.fs.open_input_file(path)
        if self.verify and (columns is None or self._index is None):  # on decode, and once when indexing
            buf = src.read_buffer()
            if hashlib.sha256(memoryview(buf)).hexdigest() != self.shards[k]["sha256"]:
                raise ShardError(f"{path}: sha256 differs from the manifest (corrupt or replaced shard)")
            src = pa.BufferReader(buf)
        try:
            if columns is None:
                return pa.ipc.open_file(src).read_all()
            names = pa.ipc.open_file(src).schema.names
            missing = [c for c in columns if c not in names]
            if missing:
                raise ShardError(f"{path}: no column(s) {missing}; it was not written by `corpusmix pack`")
            opts = pa.ipc.IpcReadOptions(included_fields=[names.index(c) for c in columns])
            return pa.ipc.open_file(src, options=opts).read_all()
        except pa.ArrowException as exc:
            raise ShardError(f"{path}: not a readable Arrow IPC shard ({str(exc).splitlines()[0]}); restore it or "
                             "re-pack") from None

    def _check_rows(self, k: int, n: int) -> None:
        if n != int(self.shards[k]["rows"]):
            raise ShardError(f"{self._path(k)}: {n} rows, manifest says {self.shards[k]['rows']}")

    def _domain_column(self, k: int, col: Any) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        ids = pc.index_in(col, value_set=pa.array(self.domains, type=pa.string()))
        if ids.null_count:
            bad = col.filter(pc.is_null(ids))[0].as_py()
            raise ShardError(f"{self._path(k)}: domain {bad!r} is not in the manifest's domains")
        return ids.to_numpy().astype(np.int64)

    # --- the per-row index (domain, document tokens)
    def index(self) -> RowIndex:
        """Domain id and document tokens of every manifest row (read once, then kept)."""
        if self._index is None:
            dom_parts, tok_parts = [], []
            for k in range(len(self.shards)):
                t = self._open(k, ["doc_lens", "domain"])
                self._check_rows(k, t.num_rows)
                dl = t.column("doc_lens").combine_chunks()
                cs = np.concatenate([[0], np.cumsum(dl.flatten().to_numpy().astype(np.int64))])
                off = (dl.offsets.to_numpy() - dl.offsets[0].as_py()).astype(np.int64)
                tok_parts.append(cs[off[1:]] - cs[off[:-1]])
                dom_parts.append(self._domain_column(k, t.column("domain").combine_chunks()))
            empty = np.zeros(0, dtype=np.int64)
            idx = RowIndex(domain=np.concatenate([empty, *dom_parts]), tokens=np.concatenate([empty, *tok_parts]),
                           first_rows=list(self.first_rows), n_domains=len(self.domains))
            want = self.manifest.get("tokens_per_domain")
            if want is not None:
                got = dict(zip(self.domains, idx.domain_tokens().tolist(), strict=True))
                bad = [d for d in self.domains if int(want.get(d, 0)) != got[d]]
                if bad:
                    raise ShardError(f"shards in {self.source} hold {got[bad[0]]} tokens of domain {bad[0]!r}, the "
                                     f"manifest says {want.get(bad[0], 0)}: the folder mixes shards of different packs")
            self._index = idx
        return self._index

    # --- decoded rows
    def _load(self, k: int) -> _Decoded:
        hit = self._cache.get(k)
        if hit is not None:
            self._cache.move_to_end(k)
            return hit
        table = self._open(k)
        self._check_rows(k, table.num_rows)
        n_rows, seq_len = table.num_rows, self.seq_len
        tok_col = table.column("tokens").combine_chunks()
        tokens = tok_col.flatten().to_numpy().reshape(n_rows, seq_len)  # int32, zero-copy when memory mapped
        dl = table.column("doc_lens").combine_chunks()
        lens = dl.flatten().to_numpy().astype(np.int64)
        offs = (dl.offsets.to_numpy() - dl.offsets[0].as_py()).astype(np.int64)
        # segment ids of the whole shard at once: chunk j of row r covers its tokens with value j
        counts = np.diff(offs)
        row_of_chunk = np.repeat(np.arange(n_rows, dtype=np.int64), counts)
        chunk_in_row = np.arange(lens.size, dtype=np.int64) - offs[:-1][row_of_chunk]
        row_tokens = np.bincount(row_of_chunk, weights=lens, minlength=n_rows).astype(np.int64)
        if (row_tokens > seq_len).any():
            raise ShardError(f"{self._path(k)}: a row's doc_lens sum to more than seq_len {seq_len}")
        first_tok = np.cumsum(row_tokens) - row_tokens
        total = int(row_tokens.sum())
        pos = np.arange(total, dtype=np.int64) - np.repeat(first_tok, row_tokens)
        seg = np.full((n_rows, seq_len), -1, dtype=np.int32)
        seg.reshape(-1)[np.repeat(np.arange(n_rows, dtype=np.int64), row_tokens) * seq_len + pos] = \
            np.repeat(chunk_in_row, lens).astype(np.int32)
        dom_ids = self._domain_column(k, table.column("domain").combine_chunks())
        self.decodes += 1
        self._cache[k] = (tokens, seg, dom_ids)
        while len(self._cache) > self.cache_shards:
            self._cache.popitem(last=False)
        return self._cache[k]

    def shard_of(self, g: int) -> tuple[int, int]:
        """(shard, row in shard) of manifest row ``g``."""
        k = bisect.bisect_right(self.first_rows, g) - 1
        return k, g - self.first_rows[k]

    def row(self, g: int) -> dict[str, np.ndarray]:
        """Manifest row ``g`` (modulo the number of rows): ``tokens`` int64, ``segment_ids``, ``domain_id``, ``row``."""
        g %= self.rows
        k, i = self.shard_of(g)
        tokens, seg, dom = self._load(k)
        return {"tokens": tokens[i].astype(np.int64), "segment_ids": seg[i], "domain_id": dom[i],
                "row": np.int64(g)}

    def batch(self, rows: np.ndarray | list[int]) -> dict[str, np.ndarray]:
        """Manifest rows ``rows`` stacked: ``tokens`` int64 [n, S], ``segment_ids`` int32, ``domain_id``, ``row``."""
        rows = np.asarray(rows, dtype=np.int64) % self.rows
        n, s = rows.size, self.seq_len
        out = {"tokens": np.empty((n, s), dtype=np.int64), "segment_ids": np.empty((n, s), dtype=np.int32),
               "domain_id": np.empty(n, dtype=np.int64), "row": rows}
        shard = np.searchsorted(self.first_rows, rows, side="right") - 1
        # shards in the order the batch first needs them (the cache keeps the most recent ones)
        _, first = np.unique(shard, return_index=True)
        for k in shard[np.sort(first)].tolist():
            at = np.flatnonzero(shard == k)
            local = rows[at] - self.first_rows[k]
            tokens, seg, dom = self._load(k)
            out["tokens"][at] = tokens[local]
            out["segment_ids"][at] = seg[local]
            out["domain_id"][at] = dom[local]
        return out
