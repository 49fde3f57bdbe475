"""Pools folders (docs/formats.md) for benches and tests: synthetic ones, and the shared corpora's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from corpusmix.paths import SHARED_CORPORA as CORPORA


def write_pools(root: Path, sizes: dict[str, int], vocab: int = 64, seed: int = 0) -> Path:
    """A pools folder (docs/formats.md) with learnable synthetic domains: domain i repeats its own
    short token motifs with noise, so proxies learn different things from different domains."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    meta = {"version": 1, "tokenizer_sha256": "0" * 64, "vocab_size": vocab, "dtype": "uint16",
            "val_fraction": 0.2, "bos_id": 0, "eos_id": 1, "pad_id": 2, "domains": {}}
    for i, (d, n) in enumerate(sorted(sizes.items())):
        docs, toks, offs = max(n // 50, 0), [], [0]
        motif = rng.integers(3, vocab, size=8 + 4 * i)
        for _ in range(docs):
            body = np.resize(motif, 48).copy()
            flip = rng.random(48) < 0.1 * (i + 1)
            body[flip] = rng.integers(3, vocab, size=int(flip.sum()))
            toks.extend([0, *body.tolist(), 1])
            offs.append(len(toks))
        np.asarray(toks, dtype=np.uint16).tofile(root / f"{d}.bin")
        np.save(root / f"{d}.idx.npy", np.asarray(offs, dtype=np.int64))
        held = docs // 5 if docs >= 3 else 0  # search-validation and evaluation splits, disjoint
        meta["domains"][d] = {"tokens": len(toks), "docs": docs, "val_docs": held, "eval_docs": held}
    (root / "pools.json").write_text(json.dumps(meta))
    return root


def prepare_pools(work: Path, *, docs_per_domain: int = 0, vocab_size: int = 4096) -> Path:
    """Tokenizer + pools of the shared corpora in ``work`` (reused when already built)."""
    import pyarrow.parquet as pq

    from proxytrain.pools import PoolsConfig, build_pools
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    if not CORPORA.is_dir():
        sys.exit(f"{CORPORA} not found: this benchmark needs the shared corpora")
    work.mkdir(parents=True, exist_ok=True)
    curated = CORPORA
    if docs_per_domain:
        curated = work / f"curated-{docs_per_domain}"
        curated.mkdir(exist_ok=True)
        for f in sorted(CORPORA.glob("*.parquet")):
            if not (curated / f.name).exists():
                pq.write_table(pq.read_table(f, columns=["id", "text", "domain", "source"]).slice(0, docs_per_domain),
                               curated / f.name)
    tok = work / f"tokenizer-{vocab_size}.json"
    if not tok.exists():
        train_tokenizer(curated, tok, TokenizerConfig(vocab_size=vocab_size, max_docs_per_domain=300))
    pools = work / f"pools-{vocab_size}-{docs_per_domain}"
    build_pools(curated, tok, pools, PoolsConfig(val_fraction=0.05))
    return pools
