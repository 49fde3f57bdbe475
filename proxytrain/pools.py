"""Build per-domain token pools for proxy training, and samplers that draw trainer batches from them.

The folder layout and its numpy reading API (``open_pools``, ``TokenPool``, the three splits
``train`` / ``val`` / ``eval``) are the contract in :mod:`corpusmix.pools`. ``build_pools``
tokenises ``DIR/<domain>.parquet`` with one process per domain; a domain whose marker
``<domain>.done.json`` matches the tokenizer and the input file is skipped on re-runs, and files
are renamed into place only when complete::

    corpusmix tokenize pools --curated OUT/curated --tokenizer OUT/tokenizer.json --output OUT/pools

Sampling (used by the mixture-search proxies and per-domain validation)::

    s = PoolSampler("OUT/pools", seq_len=256, split="train", seed=0)
    batch = s.sample("code", batch_size=8)            # one chosen domain
    batch = s.sample_weighted({"code": .3, "legal": .7}, batch_size=8)  # domain drawn per row
    for batch in s.eval_batches("code", batch_size=8): ...   # deterministic, covers the split

A batch is the trainer-batch dict of docs/formats.md with a leading batch dimension: ``tokens``
(int64 ``[B, seq_len]``), ``segment_ids`` (int32 ``[B, seq_len]``, 0..k-1 per document inside the
window, -1 on padding), ``domain_id`` (int64 ``[B]``, index into ``sampler.domains``, the sorted
domains of ``pools.json``). Windows are ``seq_len`` consecutive tokens starting anywhere in the
split (nanoGPT-style random crops); ``PoolDataset`` wraps the same draws as an ``IterableDataset``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import multiprocessing as mp
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from corpusmix.columns import TEXT
from corpusmix.config import ConfigError
from corpusmix.logging import get_logger
from corpusmix.pools import (  # noqa: F401  (the reading API, re-exported for proxytrain callers)
    POOLS_VERSION,
    TokenPool,
    open_pools,
    read_pools_json,
    split_doc_counts,
    token_dtype,
    val_doc_count,
)

log = get_logger("proxytrain.pools")

@dataclass
class PoolsConfig:
    val_fraction: float = field(default=0.05, metadata={
        "help": "fraction of each domain's docs held out for search validation (split val)"})
    eval_fraction: float = field(default=0.05, metadata={
        "help": "last fraction of each domain's docs held out for evaluation only (split eval)"})
    workers: int = field(default=0, metadata={"help": "domain processes in parallel (0 = CPU count)"})
    batch_docs: int = field(default=512, metadata={"help": "documents per encode_batch call"})
    text_column: str = field(default=TEXT, metadata={"help": "column holding the document text"})


# ---------------------------------------------------------------------------------------- building

def _write_domain(args: tuple[str, str, str, str, str, int, str]) -> dict[str, Any]:
    """Tokenise one domain file into <domain>.bin/.idx.npy (run in a worker process)."""
    domain, src, tok_path, tok_sha, out_dir, batch_docs, text_column = args
    import pyarrow.parquet as pq

    from proxytrain.tokenizer import iter_domain_texts, load_tokenizer, special_ids

    tok = load_tokenizer(tok_path)
    ids = special_ids(tok)
    dtype = token_dtype(tok.get_vocab_size())
    out = Path(out_dir)
    bin_tmp, idx_tmp = out / f"{domain}.bin.tmp", out / f"{domain}.idx.tmp.npy"
    offsets = [0]
    dropped = {"null_text": 0, "empty_text": 0}
    rows_in = pq.ParquetFile(src).metadata.num_rows
    kept_docs = 0
    with open(bin_tmp, "wb") as fh:
        for texts in iter_domain_texts(src, text_column=text_column, batch_rows=batch_docs):
            nonempty = [t for t in texts if t]
            dropped["empty_text"] += len(texts) - len(nonempty)
            if not nonempty:
                continue
            encs = tok.encode_batch_fast(nonempty, add_special_tokens=False) if hasattr(
                tok, "encode_batch_fast") else tok.encode_batch(nonempty, add_special_tokens=False)
            lens = np.fromiter((len(e.ids) + 2 for e in encs), dtype=np.int64, count=len(encs))
            flat = np.empty(int(lens.sum()), dtype=dtype)
            pos = 0
            for e, n in zip(encs, lens.tolist(), strict=True):
                flat[pos] = ids["bos"]
                flat[pos + 1: pos + n - 1] = e.ids
                flat[pos + n - 1] = ids["eos"]
                pos += n
            fh.write(flat.tobytes())
            offsets.extend((offsets[-1] + np.cumsum(lens)).tolist())
            kept_docs += len(nonempty)
    dropped["null_text"] = rows_in - kept_docs - dropped["empty_text"]
    np.save(idx_tmp, np.asarray(offsets, dtype=np.int64))
    os.replace(bin_tmp, out / f"{domain}.bin")
    os.replace(idx_tmp, out / f"{domain}.idx.npy")
    # the source is identified by content, not mtime: the marker is part of the stage's output,
    # which must hash the same in every fresh run
    meta = {"domain": domain, "tokens": offsets[-1], "docs": kept_docs, "docs_in": rows_in,
            "dropped": {k: v for k, v in dropped.items() if v}, "tokenizer_sha256": tok_sha,
            "source": {"path": str(src), "size": os.stat(src).st_size, "sha256": _file_sha256(src)}}
    tmp = out / f"{domain}.done.json.tmp"
    tmp.write_text(json.dumps(meta))
    os.replace(tmp, out / f"{domain}.done.json")
    return meta


def _done_meta(out: Path, domain: str, src: Path, tok_sha: str) -> dict[str, Any] | None:
    marker = out / f"{domain}.done.json"
    if not (marker.exists() and (out / f"{domain}.bin").exists() and (out / f"{domain}.idx.npy").exists()):
        return None
    meta = json.loads(marker.read_text())
    source = meta.get("source", {})
    if meta.get("tokenizer_sha256") != tok_sha or source.get("size") != os.stat(src).st_size or \
            source.get("sha256") != _file_sha256(src):
        return None
    return meta


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build_pools(curated_dir: str | Path, tokenizer_path: str | Path, output_dir: str | Path,
                cfg: PoolsConfig | None = None) -> dict[str, Any]:
    """Tokenise every ``<domain>.parquet`` of ``curated_dir`` into a pools folder; return pools.json."""
    from tqdm import tqdm

    from proxytrain.tokenizer import domain_files, load_tokenizer, special_ids, tokenizer_sha256

    cfg = cfg or PoolsConfig()
    if not 0 <= cfg.val_fraction < 1 or not 0 <= cfg.eval_fraction < 1 or cfg.val_fraction + cfg.eval_fraction >= 1:
        raise ConfigError(f"val_fraction and eval_fraction must be in [0, 1) with a sum below 1, got "
                          f"{cfg.val_fraction} and {cfg.eval_fraction}")
    files = domain_files(curated_dir)
    tok = load_tokenizer(tokenizer_path)
    tok_sha = tokenizer_sha256(tokenizer_path)
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    metas: dict[str, dict[str, Any]] = {}
    todo = []
    for domain, src in files.items():
        meta = _done_meta(out, domain, src, tok_sha)
        if meta is not None:
            metas[domain] = meta
        else:
            todo.append((domain, str(src), str(tokenizer_path), tok_sha, str(out), cfg.batch_docs,
                         cfg.text_column))
    if todo:
        workers = min(len(todo), cfg.workers or os.cpu_count() or 1)
        if workers == 1:
            results = map(_write_domain, todo)
        else:
            # spawn: the tokenizers thread pool does not survive fork; one domain per process
            pool = mp.get_context("spawn").Pool(workers)
            results = pool.imap_unordered(_write_domain, todo)
        try:
            for meta in tqdm(results, total=len(todo), desc="pools", unit="domain"):
                metas[meta["domain"]] = meta
                log.info("pool built", extra={"data": {k: meta[k] for k in ("domain", "tokens", "docs", "dropped")}})
        finally:
            if workers > 1:
                pool.close()
                pool.join()
    domains = {}
    for d, m in sorted(metas.items()):
        va, ev = split_doc_counts(m["docs"], cfg.val_fraction, cfg.eval_fraction)
        idx = np.load(out / f"{d}.idx.npy")
        cut_val, cut_eval = m["docs"] - va - ev, m["docs"] - ev
        domains[d] = {"tokens": m["tokens"], "docs": m["docs"], "val_docs": va, "eval_docs": ev,
                      "split_tokens": {"train": int(idx[cut_val]), "val": int(idx[cut_eval] - idx[cut_val]),
                                       "eval": int(idx[m["docs"]] - idx[cut_eval])},
                      "dropped": m.get("dropped", {})}
    verdicts = Path(curated_dir) / "domain_verdicts.json"  # the curation's domain verdicts (curate.calibrate)
    judged = json.loads(verdicts.read_text()) if verdicts.is_file() else {}
    for d, v in (judged.get("domain_verdicts") or {}).items():
        if d in domains:
            domains[d]["verdict"] = v.get("verdict")
    pools = {
        "version": POOLS_VERSION, "tokenizer_sha256": tok_sha, "vocab_size": tok.get_vocab_size(),
        "dtype": token_dtype(tok.get_vocab_size()).name, "val_fraction": cfg.val_fraction,
        "eval_fraction": cfg.eval_fraction, **{f"{k}_id": v for k, v in special_ids(tok).items()},
        "domains": domains,
        # judged mostly garbage by the curation: never a mixture target by default (mix.targets)
        "garbage_domains": sorted(d for d in judged.get("garbage_domains") or [] if d in domains),
    }
    for d, m in pools["domains"].items():
        if m["docs"] == 0:
            log.warning("empty domain", extra={"data": {"domain": d, "dropped": m["dropped"]}})
    tmp = out / "pools.json.tmp"
    tmp.write_text(json.dumps(pools, indent=2))
    os.replace(tmp, out / "pools.json")
    return pools


# ---------------------------------------------------------------------------------------- reading

class PoolSampler:
    """Seeded random ``seq_len`` windows from per-domain pools (see the module docstring).

    ``PoolSampler(pools_dir, *, seq_len, split="train", seed=0, expect_tokenizer_sha256=None)``.
    The RNG state is exact to save and restore with ``state_dict`` / ``load_state_dict``.
    """

    def __init__(self, pools_dir: str | Path, *, seq_len: int, split: str = "train", seed: int = 0,
                 expect_tokenizer_sha256: str | None = None, domains: list[str] | None = None) -> None:
        if seq_len < 2:
            raise ConfigError(f"seq_len must be >= 2, got {seq_len}")
        self.meta, self.pools = open_pools(pools_dir, expect_tokenizer_sha256)
        if domains is not None:  # a subset (sorted order kept): domain ids index this subset
            unknown = sorted(set(domains) - set(self.pools))
            if unknown:
                raise ConfigError(f"unknown domain(s) {unknown}; pools hold {list(self.pools)}")
            self.pools = {d: p for d, p in self.pools.items() if d in set(domains)}
        self.domains: list[str] = list(self.pools)
        self.seq_len = seq_len
        self.split = split
        self.rng = np.random.default_rng(seed)
        self.pad_id = int(self.meta["pad_id"])
        self._ranges = {d: p.token_range(split) for d, p in self.pools.items()}

    # --- helpers
    def domain_index(self, domain: str | int) -> int:
        if isinstance(domain, (int, np.integer)):
            if not 0 <= int(domain) < len(self.domains):
                raise ConfigError(f"domain id {domain} out of range 0..{len(self.domains) - 1}")
            return int(domain)
        if domain not in self.pools:
            raise ConfigError(f"unknown domain {domain!r}; pools hold {self.domains}")
        return self.domains.index(domain)

    def check_nonempty(self, d: str) -> tuple[int, int]:
        """The token range ``[lo, hi)`` of domain ``d`` in this split; a clear error when it is empty."""
        lo, hi = self._ranges[d]
        if hi <= lo:
            raise ConfigError(f"domain {d!r} has no tokens in the {self.split!r} split; give it weight 0 "
                              "or add data for it")
        return lo, hi

    def window(self, domain: str | int, start: int) -> dict[str, np.ndarray]:
        """The row starting at absolute token ``start`` of the domain's pool (padded at the split end)."""
        i = self.domain_index(domain)
        pool = self.pools[self.domains[i]]
        lo, hi = self._ranges[pool.domain]
        end = min(start + self.seq_len, hi)
        toks = np.full(self.seq_len, self.pad_id, dtype=np.int64)
        seg = np.full(self.seq_len, -1, dtype=np.int32)
        n = end - start
        toks[:n] = pool.tokens[start:end]
        doc = np.searchsorted(pool.idx, np.arange(start, end), side="right") - 1
        seg[:n] = doc - doc[0] if n else seg[:n]
        return {"tokens": toks, "segment_ids": seg, "domain_id": np.int64(i)}

    def _draw(self, domain: str | int) -> dict[str, np.ndarray]:
        d = self.domains[self.domain_index(domain)]
        lo, hi = self.check_nonempty(d)
        start = lo + int(self.rng.integers(0, max(hi - lo - self.seq_len, 0) + 1))
        return self.window(d, start)

    @staticmethod
    def stack(rows: Sequence[dict[str, np.ndarray]]) -> dict[str, Any]:
        """Rows of :meth:`window` as one trainer batch of torch tensors."""
        import torch

        return {"tokens": torch.from_numpy(np.stack([r["tokens"] for r in rows])),
                "segment_ids": torch.from_numpy(np.stack([r["segment_ids"] for r in rows])),
                "domain_id": torch.tensor([int(r["domain_id"]) for r in rows], dtype=torch.int64)}

    # --- public sampling API
    def sample(self, domain: str | int, batch_size: int) -> dict[str, Any]:
        """A batch of ``batch_size`` random windows from one domain."""
        return self.stack([self._draw(domain) for _ in range(batch_size)])

    def domain_probs(self, weights: Mapping[str, float] | Sequence[float]) -> np.ndarray:
        if isinstance(weights, Mapping):
            from corpusmix.mixture import validate_mixture

            w = validate_mixture(weights, {d: self._ranges[d][1] - self._ranges[d][0] for d in self.domains})
            p = np.array([w.get(d, 0.0) for d in self.domains], dtype=np.float64)
        else:
            p = np.asarray(weights, dtype=np.float64)
            if p.shape != (len(self.domains),) or (p < 0).any() or abs(p.sum() - 1) > 1e-6:
                raise ConfigError(f"weights must be {len(self.domains)} non-negative numbers summing to 1 "
                                  f"(one per domain in {self.domains})")
        return p / p.sum()

    def sample_weighted(self, weights: Mapping[str, float] | Sequence[float], batch_size: int) -> dict[str, Any]:
        """A batch whose rows draw their domain from ``weights`` (by name or by domain id order)."""
        p = self.domain_probs(weights)
        doms = self.rng.choice(len(self.domains), size=batch_size, p=p)
        return self.stack([self._draw(int(d)) for d in doms])

    def eval_batches(self, domain: str | int, batch_size: int, max_rows: int = 0,
                     spread: bool = False) -> Iterator[dict[str, Any]]:
        """Non-overlapping windows over the domain's split (deterministic, RNG untouched).

        With ``max_rows`` the first ``max_rows`` consecutive windows, or with ``spread`` ``max_rows``
        windows evenly spaced over the whole split (window ``i`` of ``n``: the one at ``(i + 1/2) n /
        max_rows``), so a small evaluation reads every part of the domain, not its first documents.
        """
        d = self.domains[self.domain_index(domain)]
        lo, hi = self._ranges[d]
        starts = list(range(lo, hi, self.seq_len))
        if max_rows and spread and len(starts) > max_rows:
            n = len(starts)
            starts = [starts[(2 * i + 1) * n // (2 * max_rows)] for i in range(max_rows)]
        elif max_rows:
            starts = starts[:max_rows]
        for k in range(0, len(starts), batch_size):
            yield self.stack([self.window(d, s) for s in starts[k: k + batch_size]])

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "split": self.split, "seq_len": self.seq_len}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]


class _PoolDatasetBase:
    """``IterableDataset`` of rows drawn from pools: one domain or by weights, endless.

    ``PoolDataset(pools_dir, *, seq_len, domain=None, weights=None, split="train", seed=0, rank=0)``;
    exactly one of ``domain`` / ``weights``. Each dataloader worker (and rank) gets its own RNG
    stream derived from ``(seed, rank, worker_id)``; rows are the unbatched trainer dicts.
    """

    def __init__(self, pools_dir: str | Path, *, seq_len: int, domain: str | None = None,
                 weights: Mapping[str, float] | None = None, split: str = "train", seed: int = 0,
                 rank: int = 0, expect_tokenizer_sha256: str | None = None) -> None:
        if (domain is None) == (weights is None):
            raise ConfigError("PoolDataset needs exactly one of domain= or weights=")
        self.sampler = PoolSampler(pools_dir, seq_len=seq_len, split=split, seed=seed,
                                   expect_tokenizer_sha256=expect_tokenizer_sha256)
        self.domain, self.seed, self.rank = domain, seed, rank
        self.probs = self.sampler.domain_probs(weights) if weights is not None else None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        import torch

        info = torch.utils.data.get_worker_info()
        wid = info.id if info is not None else 0
        rng = np.random.default_rng([self.seed, self.rank, wid])
        s = self.sampler
        s.rng = rng
        while True:
            d = self.domain if self.probs is None else int(rng.choice(len(s.domains), p=self.probs))
            row = s._draw(d)
            yield {"tokens": torch.from_numpy(row["tokens"]), "segment_ids": torch.from_numpy(row["segment_ids"]),
                   "domain_id": torch.tensor(int(row["domain_id"]), dtype=torch.int64)}


@functools.cache
def _pool_dataset_class() -> type:
    from torch.utils.data import IterableDataset

    cls = type("PoolDataset", (_PoolDatasetBase, IterableDataset), {"__module__": __name__})
    cls.__doc__ = _PoolDatasetBase.__doc__
    return cls


def __getattr__(name: str) -> Any:
    # PoolDataset subclasses torch's IterableDataset; built on first use so that importing this
    # module (CLI registration, pool-building worker processes) does not import torch
    if name == "PoolDataset":
        return _pool_dataset_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
