"""Mixture materialisation and shard writing: pools + mixture.json -> packed Arrow IPC shards.

For each domain the token target is ``weight * tokens`` (the budget). Documents of the pool's
training split are taken in a seeded random order, whole epochs first and then a random subset of
whole documents until the target is reached; a domain with too few tokens is repeated at most
``max_epochs`` times and falls short of its target, which shows in the ``effective_mixture`` of the
manifest. Each domain's documents are packed into ``seq_len`` rows with best-fit-decreasing
(``proxytrain.packing``; a document is split only where it exceeds a row), so every row holds one
domain. The rows of all domains are then shuffled globally with the seed and written to
``shard-00000.arrow``, ... of at most ``shard_max_bytes`` each, plus ``manifest.json``
(docs/formats.md).

Writes are atomic: a shard is written to a temp file, fsynced and renamed, and only then listed in
the manifest (itself replaced atomically). The plan is deterministic, so re-running the same
command after a crash keeps the shards already listed (their sha256 re-checked) and writes the
rest; an output folder holding another plan is a clear error. Run it as::

    corpusmix pack --pools OUT/pools --mixture mixture.json --tokens 20000000 --output OUT/shards
    corpusmix pack --curated OUT/curated --tokenizer OUT/tokenizer.json --mixture m.json \
        --tokens 2e7 --output OUT/shards          # builds OUT/shards/pools first (one process per domain)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpusmix.config import ConfigError
from corpusmix.holds import hold
from corpusmix.logging import get_logger
from corpusmix.mixture import Mixture, mixture_from_dict
from corpusmix.pools import TokenPool, open_pools
from proxytrain.packing import pack_best_fit, packing_stats

log = get_logger("proxytrain.pack")

MANIFEST_VERSION = 1
_SHARD_FIXED_OVERHEAD = 8192  # IPC magic, schema, footer
_BATCH_OVERHEAD = 2048  # record batch metadata and buffer alignment


@dataclass
class PackConfig:
    seq_len: int = field(default=512, metadata={"help": "tokens per packed row"})
    tokens: int = field(default=0, metadata={"help": "token budget (document tokens over all domains)"})
    max_epochs: float = field(default=4.0, metadata={"help": "most times a domain's documents are repeated"})
    shard_max_bytes: int = field(default=64 * 2**20, metadata={"help": "upper bound on one shard file's size"})
    seed: int = field(default=0, metadata={"help": "seed of document order and the global row shuffle"})
    split: str = field(default="train", metadata={"help": "pools split to pack (train/val/all)"})
    batch_rows: int = field(default=256, metadata={"help": "rows per Arrow record batch"})


@dataclass
class _Rows:
    """Planned rows: row r has chunks ``chunk_off/len[row_ptr[r]:row_ptr[r+1]]`` of domain ``domain[r]``."""

    row_ptr: np.ndarray
    chunk_off: np.ndarray  # absolute token offset in the domain's pool
    chunk_len: np.ndarray
    domain: np.ndarray


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_json(path: Path, data: Any) -> None:
    tmp = path.with_name("." + path.name + ".tmp")
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def select_documents(pool: TokenPool, split: str, target: int, max_epochs: float,
                     seed: int, domain_index: int) -> tuple[np.ndarray, float]:
    """Pool document ids (repeats allowed) reaching ``target`` tokens, capped at ``max_epochs``.

    Returns the ids and the epochs used (tokens taken / tokens available).
    """
    first, end = pool.doc_range(split)
    lengths = pool.doc_lengths(split)
    avail = int(lengths.sum())
    if target <= 0 or avail == 0:
        return np.zeros(0, dtype=np.int64), 0.0
    goal = min(target, math.floor(max_epochs * avail))
    parts, taken, epoch = [], 0, 0
    while taken < goal:
        order = np.random.default_rng([seed, domain_index, epoch]).permutation(end - first)
        need = goal - taken
        if need >= avail:
            parts.append(order)
            taken += avail
        else:  # whole documents until the target is reached (the last may overshoot it)
            cum = np.cumsum(lengths[order])
            k = int(np.searchsorted(cum, need, side="left")) + 1
            parts.append(order[:k])
            taken += int(cum[k - 1])
        epoch += 1
    return np.concatenate(parts) + first, taken / avail


def plan_rows(pools: dict[str, TokenPool], domains: list[str], targets: dict[str, int],
              cfg: PackConfig) -> tuple[_Rows, dict[str, Any]]:
    """Select and pack every domain, then shuffle all rows globally."""
    row_ptr_parts, off_parts, len_parts, dom_parts = [], [], [], []
    info: dict[str, Any] = {}
    n_chunks = 0
    for di, d in enumerate(domains):
        pool = pools[d]
        docs, epochs = select_documents(pool, cfg.split, targets.get(d, 0), cfg.max_epochs, cfg.seed, di)
        lengths = (pool.idx[docs + 1] - pool.idx[docs]) if docs.size else np.zeros(0, dtype=np.int64)
        packing = pack_best_fit(lengths, cfg.seq_len)
        st = packing_stats(packing, lengths)
        counts = np.fromiter((len(r) for r in packing.rows), dtype=np.int64, count=len(packing.rows))
        flat = [c for r in packing.rows for c in r]
        k = np.array([c[0] for c in flat], dtype=np.int64)
        off = pool.idx[docs[k]] + np.array([c[1] for c in flat], dtype=np.int64) if flat else k
        ln = np.array([c[2] for c in flat], dtype=np.int64)
        row_ptr_parts.append(n_chunks + np.cumsum(counts))
        n_chunks += len(flat)
        off_parts.append(off)
        len_parts.append(ln)
        dom_parts.append(np.full(len(packing.rows), di, dtype=np.int64))
        info[d] = {"docs": int(docs.size), "tokens": st.tokens, "rows": st.rows, "epochs": round(epochs, 6),
                   "target_tokens": int(targets.get(d, 0)), "pad_tokens": st.pad_tokens,
                   "docs_split": st.docs_split, "docs_split_needlessly": st.docs_split_needlessly}
    row_end = np.concatenate([np.zeros(0, dtype=np.int64), *row_ptr_parts])
    row_ptr = np.concatenate([[0], row_end]).astype(np.int64)
    domain = np.concatenate([np.zeros(0, dtype=np.int64), *dom_parts])
    chunk_off = np.concatenate([np.zeros(0, dtype=np.int64), *off_parts])
    chunk_len = np.concatenate([np.zeros(0, dtype=np.int64), *len_parts])
    # global shuffle: permute rows, then regather their chunks
    perm = np.random.default_rng([cfg.seed, 2**31 - 1]).permutation(domain.size)
    counts = np.diff(row_ptr)[perm]
    starts = row_ptr[:-1][perm]
    new_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    gather = np.repeat(starts - new_ptr[:-1], counts) + np.arange(int(new_ptr[-1]), dtype=np.int64)
    rows = _Rows(row_ptr=new_ptr, chunk_off=chunk_off[gather], chunk_len=chunk_len[gather], domain=domain[perm])
    return rows, info


def _row_bytes(rows: _Rows, seq_len: int, names: list[str]) -> np.ndarray:
    chunks = np.diff(rows.row_ptr)
    name_len = np.array([len(n.encode()) for n in names], dtype=np.int64)
    # tokens values + offset, doc_lens values + offset, domain bytes + offset
    return 4 * seq_len + 4 + 4 * chunks + 4 + name_len[rows.domain] + 4 if rows.domain.size else chunks


def shard_bounds(rows: _Rows, cfg: PackConfig, names: list[str]) -> list[tuple[int, int]]:
    """Row ranges of the shards so that each file stays under ``shard_max_bytes``."""
    sizes = _row_bytes(rows, cfg.seq_len, names)
    bounds, start, acc = [], 0, _SHARD_FIXED_OVERHEAD
    for r, b in enumerate(sizes.tolist()):
        batches = (r - start) // cfg.batch_rows + 1
        if r > start and acc + b + batches * _BATCH_OVERHEAD > cfg.shard_max_bytes:
            bounds.append((start, r))
            start, acc = r, _SHARD_FIXED_OVERHEAD
        acc += b
    if sizes.size:
        bounds.append((start, int(sizes.size)))
    min_needed = _SHARD_FIXED_OVERHEAD + _BATCH_OVERHEAD + (int(sizes.max()) if sizes.size else 0)
    if cfg.shard_max_bytes < min_needed:
        raise ConfigError(f"shard_max_bytes={cfg.shard_max_bytes} cannot hold one row of seq_len "
                          f"{cfg.seq_len}; use at least {min_needed}")
    return bounds


def _shard_table(rows: _Rows, lo: int, hi: int, pools: dict[str, TokenPool], domains: list[str],
                 seq_len: int, pad_id: int) -> Any:
    import pyarrow as pa

    n = hi - lo
    toks = np.full((n, seq_len), pad_id, dtype=np.int32)
    token_arrays = [pools[d].tokens for d in domains]
    p = rows.row_ptr
    for i in range(n):
        r = lo + i
        src = token_arrays[rows.domain[r]]
        pos = 0
        for off, ln in zip(rows.chunk_off[p[r]:p[r + 1]].tolist(), rows.chunk_len[p[r]:p[r + 1]].tolist(),
                           strict=True):
            toks[i, pos:pos + ln] = src[off:off + ln]
            pos += ln
    tok_offsets = pa.array(np.arange(0, n * seq_len + 1, seq_len, dtype=np.int32))
    doc_offsets = pa.array((p[lo:hi + 1] - p[lo]).astype(np.int32))
    doc_lens = pa.array(rows.chunk_len[p[lo]:p[hi]].astype(np.int32))
    names = pa.array(np.asarray(domains, dtype=object)[rows.domain[lo:hi]].tolist(), type=pa.string())
    return pa.table({
        "tokens": pa.ListArray.from_arrays(tok_offsets, pa.array(toks.reshape(-1))),
        "doc_lens": pa.ListArray.from_arrays(doc_offsets, doc_lens),
        "domain": names,
    })


def _write_shard(path: Path, table: Any, batch_rows: int) -> str:
    import pyarrow as pa

    tmp = path.with_name("." + path.name + ".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=batch_rows)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    sha = _sha256_file(tmp)
    hold("pack shard")  # CORPUSMIX_PHASE_HOLD: the kill test's window between the write and the rename
    os.replace(tmp, path)
    return sha


def pack(pools_dir: str | Path, mixture: Mixture | dict[str, Any] | str | Path, output_dir: str | Path,
         cfg: PackConfig | None = None) -> dict[str, Any]:
    """Materialise ``mixture`` from the pools into shards in ``output_dir``; return the manifest."""
    from tqdm import tqdm

    from corpusmix.mixture import load_mixture

    cfg = cfg or PackConfig()
    if cfg.tokens <= 0:
        raise ConfigError("pack needs a positive token budget: pass --tokens N (or pack.tokens in params.yaml)")
    if cfg.seq_len < 2:
        raise ConfigError(f"seq_len must be >= 2, got {cfg.seq_len}")
    if cfg.max_epochs <= 0:
        raise ConfigError(f"max_epochs must be > 0, got {cfg.max_epochs}")
    meta, pools = open_pools(pools_dir)
    domains = list(pools)
    available = {d: int(np.diff(p.token_range(cfg.split))[0]) for d, p in pools.items()}
    if isinstance(mixture, (str, Path)):
        mix = load_mixture(mixture, available)
    else:
        mix = mixture_from_dict(mixture.to_dict() if isinstance(mixture, Mixture) else mixture, available)
    targets = {d: int(round(w * cfg.tokens)) for d, w in mix.weights.items()}
    plan = {"pools": meta, "mixture": mix.weights, "cfg": asdict(cfg), "version": MANIFEST_VERSION}
    plan_sha = hashlib.sha256(json.dumps(plan, sort_keys=True).encode()).hexdigest()

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    mpath = out / "manifest.json"
    done: dict[str, dict[str, Any]] = {}
    if mpath.exists():
        old = json.loads(mpath.read_text())
        if old.get("plan_sha256") != plan_sha:
            raise ConfigError(f"{out} already holds shards of a different pack (other pools, mixture or "
                              "params); write to a new --output folder or delete that one")
        for s in old.get("shards", []):
            f = out / s["file"]
            if f.exists() and _sha256_file(f) == s["sha256"]:
                done[s["file"]] = s
    for stale in out.glob(".*.tmp"):  # leftovers of an interrupted run
        stale.unlink()

    rows, info = plan_rows(pools, domains, targets, cfg)
    bounds = shard_bounds(rows, cfg, domains)
    tok_per_domain = {d: info[d]["tokens"] for d in domains}
    total = sum(tok_per_domain.values())
    manifest: dict[str, Any] = {
        "version": MANIFEST_VERSION, "seq_len": cfg.seq_len, "pad_id": meta["pad_id"],
        "bos_id": meta["bos_id"], "eos_id": meta["eos_id"], "vocab_size": meta["vocab_size"],
        "tokenizer_sha256": meta["tokenizer_sha256"], "mixture": mix.to_dict(),
        "effective_mixture": {d: (n / total if total else 0.0) for d, n in tok_per_domain.items()},
        "shards": [], "tokens_per_domain": tok_per_domain, "rows": int(rows.domain.size),
        "domains": domains, "split": cfg.split, "token_budget": cfg.tokens, "tokens": total,
        "seed": cfg.seed, "max_epochs": cfg.max_epochs, "per_domain": info,
        "pad_fraction": 1 - total / (rows.domain.size * cfg.seq_len) if rows.domain.size else 0.0,
        "plan_sha256": plan_sha, "complete": False,
    }
    short = {d: round(info[d]["tokens"] / t, 4) for d, t in targets.items() if t and info[d]["tokens"] < 0.999 * t}
    if short:
        log.warning("domains below their target (max_epochs cap)", extra={"data": {"fraction_of_target": short}})
    for k, (lo, hi) in enumerate(tqdm(bounds, desc="shards", unit="shard")):
        name = f"shard-{k:05d}.arrow"
        if name in done and done[name]["rows"] == hi - lo and done[name].get("first_row") == lo:
            manifest["shards"].append(done[name])
            continue
        table = _shard_table(rows, lo, hi, pools, domains, cfg.seq_len, meta["pad_id"])
        sha = _write_shard(out / name, table, cfg.batch_rows)
        tokens = int(rows.chunk_len[rows.row_ptr[lo]:rows.row_ptr[hi]].sum())
        manifest["shards"].append({"file": name, "sha256": sha, "rows": hi - lo, "tokens": tokens,
                                   "first_row": lo, "bytes": (out / name).stat().st_size})
        _atomic_json(mpath, manifest)
    manifest["complete"] = True
    _atomic_json(mpath, manifest)
    log.info("packed", extra={"data": {"rows": manifest["rows"], "shards": len(bounds), "tokens": total,
                                        "pad_fraction": round(manifest["pad_fraction"], 6),
                                        "effective_mixture": manifest["effective_mixture"]}})
    return manifest
