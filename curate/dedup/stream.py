"""Bounded-memory dedup over Parquet part files: the local engine's global dedup stage.

Run by ``corpusmix curate run`` (``curate.engine_local.run_dedup``) over stage a's parts, or
directly: ``write_verdicts(parts, verdicts_dir, DedupConfig())``. Same decisions as
:func:`curate.dedup.dedup_table` on the concatenated parts (tests compare them), without ever holding
the corpus' text:

1. each part is read batch by batch (``text`` only); batches are hashed in ``cfg.workers``
   processes with a bounded number in flight; per document only the id, the 128-bit exact hash, two
   flags, the text length and the quality stay in memory; band keys go to disk
   (:class:`~curate.dedup.lsh.BandSpill`, numbered by row);
2. rank order (quality desc, id asc) from the ids and qualities; exact groups by sorting hashes;
3. candidate pairs band by band from the spill, each band grouped in passes of at most
   ``band_max_keys`` keys (external grouping by key residue);
4. verification: the shingle sets of candidate documents are built in ONE pass over the parts in
   row order (only row groups holding a candidate are read, each once, ``verify_mb`` MB of text at
   a time) and spilled beside the band keys; pairs are then verified chunk by chunk from the spill;
5. union-find over int ranks; verdicts written per task prefix of the part names.

Memory that grows with the corpus is per-document arrays only: 84 bytes held from hashing to the
end (exact hash 16 + its rank-order copy 16, text bytes 8 + copy 8, quality 8, rank order 8 and
its inverse 8, flags 4, ...), about 60 more of temporaries while exact groups and components are
resolved, and the ids (Arrow strings, plus one sorted copy while repeats are checked). Everything
else is bounded: batches of ``batch_mb`` (``2 x workers`` in flight), one band pass of at most
``band_max_keys`` keys (~50 bytes each), one verification chunk of ``verify_mb`` MB of text (its shingle sets and
sort temporaries are ~8x that). The
measured slope is in BENCHMARKS.md (``bench/bench_memory.py``). Bad input is a clear error
(:class:`ValueError`) before any decision; null texts count as empty (never duplicates).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from corpusmix.logging import get_logger
from curate.dedup import DUP_KINDS, DuplicateIdError
from curate.dedup.config import DedupConfig
from curate.dedup.local import _hash_job, pair_chunks, resolve
from curate.dedup.lsh import BandSpill
from curate.dedup.minhash import hash_batch
from curate.dedup.verify import pair_jaccard, shingle_sets

log = get_logger("curate.dedup.stream")

_READ_ROWS = 64  # rows decoded per Parquet read (documents may be up to curate.read.max_doc_bytes)

@dataclass
class StreamResult:
    """Per row (parts concatenated in order): id, root row, kind; counters."""

    ids: pa.ChunkedArray
    root_row: np.ndarray
    kind: np.ndarray  # 0 representative / unique, 1 exact, 2 near (rank-independent, per row)
    part_rows: list[int]
    bytes_in: int
    stats: dict[str, Any] = field(default_factory=dict)


def _check_part(pf: pq.ParquetFile, path: Path) -> None:
    names = pf.schema_arrow.names
    missing = [c for c in ("id", "text") if c not in names]
    if missing:
        raise ValueError(f"dedup input {str(path)!r} lacks column(s) {missing}; it needs `id` (unique "
                         "string) and `text`")
    for col in ("id", "text"):
        t = pf.schema_arrow.field(col).type
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            raise ValueError(f"dedup input {str(path)!r}: column `{col}` is {t}, not string; cast it "
                             "(docs/formats.md)")


def _text_batches(parts: Sequence[Path], cfg: DedupConfig
                  ) -> Iterator[tuple[int, list[str | None], np.ndarray]]:
    """``(first row, texts, UTF-8 bytes)`` batches over all parts in order: at most ``batch_docs``
    documents and about ``batch_mb`` MB each (a longer document is a batch of its own). Parts are
    read ``_READ_ROWS`` rows at a time, so a row group of long documents is never decoded whole."""
    limit = max(1, int(cfg.batch_mb * 1e6))
    texts: list[str | None] = []
    sizes: list[int] = []
    start = row = size = 0
    for p in parts:
        # pre_buffer=False: the reader holds one row group at a time, not every one it has read
        for rb in pq.ParquetFile(p, pre_buffer=False).iter_batches(batch_size=_READ_ROWS, columns=["text"]):
            col = rb.column(0)
            nb = pc.fill_null(pc.binary_length(col), 0).to_numpy().astype(np.int64).tolist()
            for t, n in zip(col.to_pylist(), nb, strict=True):
                if texts and (len(texts) >= cfg.batch_docs or size + n > limit):
                    yield start, texts, np.array(sizes, np.int64)
                    start, texts, sizes, size = row, [], [], 0
                texts.append(t)
                sizes.append(n)
                size += n
                row += 1
    if texts:
        yield start, texts, np.array(sizes, np.int64)


def _hashed(parts: Sequence[Path], cfg: DedupConfig, n: int) -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Hash every batch, in order; at most ``2 * workers`` batches in flight (bounded memory)."""
    bands, rows = cfg.bands_rows()
    kw = {"ngram": cfg.ngram, "num_perm": cfg.num_perm, "seed": cfg.seed, "bands": bands, "rows": rows}
    bar = tqdm(total=n, desc="dedup: hashing", unit="doc", disable=n < 50_000)
    if cfg.workers > 1:
        with mp.get_context("fork").Pool(cfg.workers) as pool:
            pending: deque = deque()
            for s, texts, nb in _text_batches(parts, cfg):
                pending.append((s, nb, pool.apply_async(_hash_job, ((texts, kw),))))
                del texts
                while len(pending) >= 2 * cfg.workers:
                    s0, nb0, job = pending.popleft()
                    out = job.get()
                    out["text_bytes"] = nb0
                    bar.update(out["exact"].shape[0])
                    yield s0, out
            while pending:
                s0, nb0, job = pending.popleft()
                out = job.get()
                out["text_bytes"] = nb0
                bar.update(out["exact"].shape[0])
                yield s0, out
    else:
        for s, texts, nb in _text_batches(parts, cfg):
            out = hash_batch(texts, **kw)
            out.pop("sig")
            out["text_bytes"] = nb
            bar.update(len(texts))
            yield s, out
    bar.close()


def _read_columns(parts: Sequence[Path], cfg: DedupConfig) -> tuple[pa.ChunkedArray, np.ndarray, list[int]]:
    """Ids (as read), qualities (NaN when absent) and row counts of every part."""
    id_chunks: list[pa.Array] = []
    quality: list[np.ndarray] = []
    part_rows = []
    for p in parts:
        pf = pq.ParquetFile(p)
        _check_part(pf, p)
        col = cfg.quality_column
        cols = ["id"] + ([col] if col and col in pf.schema_arrow.names else [])
        t = pf.read(columns=cols)
        ids = t.column("id")
        if ids.null_count:
            raise ValueError(f"dedup input {str(p)!r} has {ids.null_count} null id(s); give every document an id")
        id_chunks += [c.cast(pa.string()) if pa.types.is_large_string(c.type) else c for c in ids.chunks]
        q = (t.column(col).cast(pa.float64()).to_numpy(zero_copy_only=False) if len(cols) == 2
             else np.full(t.num_rows, np.nan))
        quality.append(np.asarray(q, dtype=np.float64))
        part_rows.append(t.num_rows)
    ids = pa.chunked_array(id_chunks, pa.string())
    return ids, (np.concatenate(quality) if quality else np.zeros(0)), part_rows


def _rank_order(ids: pa.ChunkedArray, quality: np.ndarray) -> np.ndarray:
    """``order[r]`` = row of rank ``r`` (quality desc, missing last, then id asc), as
    :func:`curate.dedup.components.rank_order`; raises :class:`DuplicateIdError` on repeated ids."""
    by_id = pc.sort_indices(ids).to_numpy().astype(np.int64)
    if len(by_id) > 1:
        s = pc.take(ids, pa.array(by_id))
        same = pc.equal(s.slice(1), s.slice(0, len(s) - 1))
        n_same = pc.sum(same).as_py() or 0
        if n_same:
            dup = pc.unique(pc.filter(s.slice(1), same))
            sample = [str(v) for v in dup[:5].to_pylist()]
            raise DuplicateIdError(
                f"dedup input has {len(dup)} duplicate id(s), e.g. {sample}; ids must be unique "
                "(prefix them with their source, or drop the repeated rows first)")
    key = np.where(np.isnan(quality), np.inf, -quality)[by_id]
    return by_id[np.argsort(key, kind="stable")]


class _TextFetcher:
    """Texts of given rows, re-read from the row groups of the parts that hold them."""

    def __init__(self, parts: Sequence[Path], part_rows: list[int], nbytes: np.ndarray) -> None:
        self.parts = list(parts)
        self.nbytes = nbytes
        self.starts = np.concatenate(([0], np.cumsum(part_rows))).astype(np.int64)

    def __call__(self, rows: np.ndarray) -> list[str]:
        out: dict[int, str] = {}
        rows = np.sort(np.asarray(rows, np.int64))
        part_of = np.searchsorted(self.starts, rows, side="right") - 1
        for pi in np.unique(part_of):
            local = rows[part_of == pi] - self.starts[pi]
            pf = pq.ParquetFile(self.parts[pi])
            rg_start = 0
            for g in range(pf.metadata.num_row_groups):
                g_rows = pf.metadata.row_group(g).num_rows
                sel = local[(local >= rg_start) & (local < rg_start + g_rows)]
                if sel.size:
                    col = pf.read_row_group(g, columns=["text"]).column(0)
                    for r, t in zip(sel, col.take(pa.array(sel - rg_start)).to_pylist(), strict=True):
                        out[int(r + self.starts[pi])] = t or ""
                rg_start += g_rows
        return [out[int(r)] for r in rows]


class _ShingleStore:
    """Sorted unique shingle hashes of the candidate documents, spilled to one file.

    Built in ONE pass over the parts in row order (each row group holding a candidate is read once,
    ``verify_mb`` MB of text at a time), then read back per chunk of pairs with ``pread``: memory is
    one chunk, whatever the number of candidates. Same shingle sets, so the same Jaccard, as
    :func:`curate.dedup.verify.verify_pairs`."""

    def __init__(self, folder: Path, docs: np.ndarray, rows: np.ndarray, fetch: _TextFetcher, *, ngram: int,
                 verify_mb: float) -> None:
        self.docs = docs  # sorted ranks of the candidate documents
        by_row = np.argsort(rows, kind="stable")
        self.start = np.zeros(docs.size, np.int64)
        self.size = np.zeros(docs.size, np.int64)
        self.path = folder / "shingles.bin"
        limit = max(1, int(verify_mb * 1e6))
        pos = 0
        with open(self.path, "wb") as f:
            i = 0
            while i < by_row.size:  # groups of consecutive rows, about verify_mb MB of text each
                j, size = i, 0
                while j < by_row.size and (j == i or size < limit):
                    size += int(fetch.nbytes[rows[by_row[j]]])
                    j += 1
                sel = by_row[i:j]
                flat, off = shingle_sets(fetch(rows[sel]), ngram)
                self.start[sel] = pos + off[:-1]
                self.size[sel] = np.diff(off)
                f.write(np.ascontiguousarray(flat, np.uint64).tobytes())
                pos += flat.size
                i = j

    def sets(self, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Flat shingle sets and offsets of ``docs`` (ranks, sorted unique)."""
        k = np.searchsorted(self.docs, docs)
        sizes = self.size[k]
        offsets = np.zeros(docs.size + 1, np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = np.empty(int(offsets[-1]), np.uint64)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            for i, (st, n) in enumerate(zip(self.start[k].tolist(), sizes.tolist(), strict=True)):
                if n:
                    flat[offsets[i]:offsets[i + 1]] = np.frombuffer(os.pread(fd, 8 * n, 8 * st), np.uint64)
        finally:
            os.close(fd)
        return flat, offsets

    def verify(self, pairs: np.ndarray, threshold: float, text_bytes: np.ndarray, verify_mb: float) -> np.ndarray:
        kept = []
        for chunk in pair_chunks(pairs, text_bytes, verify_mb):
            docs = np.unique(chunk)
            flat, offsets = self.sets(docs)
            local = np.searchsorted(docs, chunk)
            jac = pair_jaccard(local, flat, offsets, np.arange(docs.size))
            kept.append(chunk[jac >= threshold])
        return np.concatenate(kept) if kept else pairs


def dedup_parts(parts: Sequence[str | Path], cfg: DedupConfig, *, verify_mb: float = 8.0,
                band_max_keys: int = 8_000_000) -> StreamResult:
    """Dedup the rows of Parquet ``parts`` (concatenated in the given order) in bounded memory."""
    parts = [Path(p) for p in parts]
    ids, quality, part_rows = _read_columns(parts, cfg)
    n = len(ids)
    exact = np.zeros((n, 2), np.uint64)
    nonempty = np.zeros(n, bool)
    has_sh = np.zeros(n, bool)
    nbytes = np.zeros(n, np.int64)
    with BandSpill(cfg.spill_dir or None) as spill:
        for s, out in _hashed(parts, cfg, n):
            e = s + out["exact"].shape[0]
            exact[s:e], nonempty[s:e], has_sh[s:e] = out["exact"], out["n_words"] > 0, out["n_shingles"] > 0
            nbytes[s:e] = out["text_bytes"]
            spill.add(out["keys"], np.arange(s, e))
        order = _rank_order(ids, quality)
        rank_of = np.empty(n, np.int64)
        rank_of[order] = np.arange(n)
        fetch = _TextFetcher(parts, part_rows, nbytes)
        bytes_r = nbytes[order]

        def verifier(pairs: np.ndarray) -> np.ndarray:
            docs = np.unique(pairs)
            store = _ShingleStore(spill.folder, docs, order[docs], fetch, ngram=cfg.ngram, verify_mb=verify_mb)
            return store.verify(pairs, cfg.threshold, bytes_r, verify_mb)

        res = resolve(exact[order], nonempty[order], has_sh[order], spill,
                      lambda docs: _in_rank_order(fetch, order, docs), cfg,
                      remap=rank_of, text_bytes=bytes_r, verify_mb=verify_mb, band_max_keys=band_max_keys,
                      verifier=verifier)
    root_row = order[res.root[rank_of]]
    kind = res.kind[rank_of]
    return StreamResult(ids=ids, root_row=root_row, kind=kind, part_rows=part_rows,
                        bytes_in=int(nbytes.sum()), stats=res.stats)


def _in_rank_order(fetch: _TextFetcher, order: np.ndarray, docs: np.ndarray) -> list[str]:
    """Texts of ranks ``docs`` in that order (the fetcher returns them by ascending row)."""
    rows = order[docs]
    by_row = np.argsort(rows, kind="stable")
    texts = fetch(rows[by_row])
    out: list[str] = [""] * len(docs)
    for k, i in enumerate(by_row):
        out[i] = texts[k]
    return out


def _atomic_write(table: pa.Table, path: Path) -> None:
    """Write under a temporary name, then rename (a killed run never leaves a half verdict file)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)


def write_verdicts(parts: Sequence[str | Path], verdicts_dir: str | Path, cfg: DedupConfig, **kw: Any
                   ) -> dict[str, Any]:
    """Dedup ``parts`` and write ``<verdicts_dir>/<task>.parquet`` (``id, dup_cluster, is_duplicate,
    dup_kind``; task = the first 5 characters of the part's name), rows in part order.

    Returns ``docs_in``, ``bytes_in``, ``dropped`` (``exact_duplicate`` / ``near_duplicate``) and the
    dedup ``stats``."""
    parts = sorted(Path(p) for p in parts)
    vdir = Path(verdicts_dir)
    vdir.mkdir(parents=True, exist_ok=True)
    if not parts:
        return {"docs_in": 0, "bytes_in": 0, "dropped": {}, "stats": {}}
    res = dedup_parts(parts, cfg, **kw)
    rows = np.arange(len(res.root_row))
    is_dup = res.root_row != rows
    kinds = np.array(DUP_KINDS, dtype=object)
    starts = np.concatenate(([0], np.cumsum(res.part_rows))).astype(np.int64)
    tasks = [p.name[:5] for p in parts]
    i = 0
    while i < len(parts):  # parts are sorted: a task's parts are consecutive
        j = i
        while j < len(parts) and tasks[j] == tasks[i]:
            j += 1
        s, e = int(starts[i]), int(starts[j])
        table = pa.table({
            "id": res.ids.slice(s, e - s).combine_chunks(),
            "dup_cluster": pc.take(res.ids, pa.array(res.root_row[s:e])).combine_chunks(),
            "is_duplicate": pa.array(is_dup[s:e], pa.bool_()),
            "dup_kind": pa.array(kinds[res.kind[s:e]].tolist(), pa.string()),
        })
        _atomic_write(table, vdir / f"{tasks[i]}.parquet")
        i = j
    dropped = {}
    for name, k in (("exact_duplicate", 1), ("near_duplicate", 2)):
        c = int(((res.kind == k) & is_dup).sum())
        if c:
            dropped[name] = c
    return {"docs_in": len(rows), "bytes_in": res.bytes_in, "dropped": dropped, "stats": res.stats}


def verdicts_in_memory(parts: Sequence[str | Path], cfg: DedupConfig) -> pa.Table:
    """The in-memory reference: every part's ``id``/``text``/quality in one table through
    :func:`curate.dedup.dedup_table` (the engine's dedup stage before streaming). Returns ``id,
    dup_cluster, is_duplicate, dup_kind, _task`` in part order; used by tests and benchmarks."""
    from curate.dedup import dedup_table

    tables = []
    for p in sorted(Path(x) for x in parts):
        names = pq.read_schema(p).names
        t = pq.read_table(p, columns=[c for c in ("id", "text", cfg.quality_column) if c in names])
        tables.append(t.append_column("_task", pa.array([p.name[:5]] * t.num_rows, pa.string())))
    table = pa.concat_tables(tables, promote_options="permissive")
    res = dedup_table(table.drop_columns(["_task"]), cfg)
    return res.append_column("_task", table.column("_task")).select(
        ["id", "dup_cluster", "is_duplicate", "dup_kind", "_task"])
