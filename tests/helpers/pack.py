"""A small packed corpus (pools, then ``proxytrain.pack``) for the loader and order tests."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from proxytrain.pack import PackConfig, pack

WEIGHTS = {"a": 0.45, "b": 0.30, "c": 0.25}


def make_pack(root: Path, *, weights: dict[str, float] = WEIGHTS, tokens: int = 60_000, seq_len: int = 16,
              vocab: int = 64, seed: int = 0, shard_max_bytes: int = 40_000, max_doc: int = 24) -> Path:
    """Pools with ~10 % more of each domain than ``weights * tokens`` asks, packed with those weights.

    Documents are 1..``max_doc`` random tokens in 3..vocab-1 (0/1/2 are BOS/EOS/PAD); returns the shards folder.
    """
    rng = np.random.default_rng(seed)
    pools = root / "pools"
    pools.mkdir(parents=True)
    meta = {}
    for d, w in weights.items():
        lens = rng.integers(1, max_doc + 1, size=int(1.1 * w * tokens / ((max_doc + 1) / 2)) + 1)
        rng.integers(3, vocab, size=int(lens.sum())).astype(np.uint32).tofile(pools / f"{d}.bin")
        np.save(pools / f"{d}.idx.npy", np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        meta[d] = {"tokens": int(lens.sum()), "docs": int(lens.size), "val_docs": 0}
    (pools / "pools.json").write_text(json.dumps({
        "tokenizer_sha256": "ab" * 32, "vocab_size": vocab, "dtype": "uint32", "bos_id": 0, "eos_id": 1,
        "pad_id": 2, "domains": meta}))
    out = root / "shards"
    pack(pools, {"weights": weights}, out, PackConfig(seq_len=seq_len, tokens=tokens, seed=seed,
                                                     shard_max_bytes=shard_max_bytes, batch_rows=64))
    return out
