"""The token-pools contract: the on-disk layout of a pools folder and its numpy reading API.

A pools folder (docs/formats.md) holds ``pools.json`` plus, per domain, ``<domain>.bin`` (flat
uint16/uint32 tokens, every document stored as ``BOS doc EOS``) and ``<domain>.idx.npy`` (int64
document start offsets, length docs+1). Three disjoint splits per domain, by document, in file
order: ``train``, ``val`` (search validation) and ``eval`` (evaluation only). Written by
``proxytrain.pools.build_pools``; read here by every room (samplers, packing, mixture search,
report) without importing torch::

    meta, pools = open_pools("out/pools")
    a, b = pools["code"].token_range("val")       # token offsets of the split
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from corpusmix.config import ConfigError

POOLS_VERSION = 1
POOLS_JSON = "pools.json"
SPLITS = ("train", "val", "eval")


def bin_path(pools_dir: str | Path, domain: str) -> Path:
    """``<domain>.bin``: the domain's tokens."""
    return Path(pools_dir) / f"{domain}.bin"


def idx_path(pools_dir: str | Path, domain: str) -> Path:
    """``<domain>.idx.npy``: the domain's document start offsets (length docs+1)."""
    return Path(pools_dir) / f"{domain}.idx.npy"


def tokens_by_domain(pools_dir: str | Path) -> dict[str, int]:
    """``{domain: tokens}`` of a pools folder, sorted by domain."""
    meta = read_pools_json(pools_dir)
    return {d: int(m["tokens"]) for d, m in sorted(meta["domains"].items())}


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size <= 2**16 else np.dtype(np.uint32)


def val_doc_count(docs: int, val_fraction: float) -> int:
    """Held-out documents of a domain: ceil(docs * fraction), always leaving >= 1 training doc."""
    if docs < 2 or val_fraction <= 0:
        return 0
    return min(docs - 1, math.ceil(docs * val_fraction))


def split_doc_counts(docs: int, val_fraction: float, eval_fraction: float) -> tuple[int, int]:
    """``(val_docs, eval_docs)`` of a domain: ceil(docs * fraction) each, always leaving >= 1
    training document; when documents are scarce the evaluation split is served first (it is the
    one a mixture is judged on), then validation."""
    ev = val_doc_count(docs, eval_fraction)
    va = val_doc_count(docs - ev, val_fraction) if docs - ev >= 2 else 0
    if val_fraction > 0 and va == 0 and ev > 1:  # keep one doc for validation too
        ev, va = ev - 1, 1
    return va, ev


def read_pools_json(pools_dir: str | Path, expect_tokenizer_sha256: str | None = None) -> dict[str, Any]:
    p = Path(pools_dir) / POOLS_JSON
    if not p.exists():
        raise ConfigError(f"{p} does not exist; build the pools with `corpusmix tokenize pools`")
    meta = json.loads(p.read_text())
    if expect_tokenizer_sha256 and meta["tokenizer_sha256"] != expect_tokenizer_sha256:
        raise ConfigError(
            f"pools in {pools_dir} were tokenised with tokenizer {meta['tokenizer_sha256'][:12]}..., "
            f"expected {expect_tokenizer_sha256[:12]}...; rebuild the pools with the trainer's tokenizer")
    return meta


class TokenPool:
    """One domain's tokens (memory-mapped) and document offsets, with its train/val split."""

    def __init__(self, pools_dir: str | Path, domain: str, meta: Mapping[str, Any], dtype: str) -> None:
        self.domain = domain
        self.dir = Path(pools_dir)
        self.docs = int(meta["docs"])
        self.n_tokens = int(meta["tokens"])
        self.val_docs = int(meta.get("val_docs", 0))
        self.eval_docs = int(meta.get("eval_docs", 0))
        self.dtype = np.dtype(dtype)
        self._tokens: np.ndarray | None = None
        self._idx: np.ndarray | None = None

    @property
    def idx(self) -> np.ndarray:
        if self._idx is None:
            self._idx = np.load(idx_path(self.dir, self.domain))
        return self._idx

    @property
    def tokens(self) -> np.ndarray:
        if self._tokens is None:  # opened lazily so that pickling to dataloader workers stays cheap
            self._tokens = (np.memmap(bin_path(self.dir, self.domain), dtype=self.dtype, mode="r")
                            if self.n_tokens else np.zeros(0, dtype=self.dtype))
        return self._tokens

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_tokens": None, "_idx": None}

    def doc_range(self, split: str) -> tuple[int, int]:
        """Documents ``[first, end)`` of the split (``train``, ``val``, ``eval`` or ``all``)."""
        cut_eval = self.docs - self.eval_docs
        cut_val = cut_eval - self.val_docs
        if split == "train":
            return 0, cut_val
        if split == "val":
            return cut_val, cut_eval
        if split == "eval":
            return cut_eval, self.docs
        if split == "all":
            return 0, self.docs
        raise ConfigError(f"split must be 'train', 'val', 'eval' or 'all', got {split!r}")

    def token_range(self, split: str) -> tuple[int, int]:
        a, b = self.doc_range(split)
        return int(self.idx[a]), int(self.idx[b])

    def doc_lengths(self, split: str = "train") -> np.ndarray:
        a, b = self.doc_range(split)
        return np.diff(self.idx[a: b + 1])


def open_pools(pools_dir: str | Path, expect_tokenizer_sha256: str | None = None) -> tuple[dict[str, Any], dict[str, TokenPool]]:
    meta = read_pools_json(pools_dir, expect_tokenizer_sha256)
    pools = {d: TokenPool(pools_dir, d, m, meta["dtype"]) for d, m in sorted(meta["domains"].items())}
    return meta, pools
