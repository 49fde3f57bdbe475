"""What the scaling benches share: the tokenizer and token pools they train on."""

from __future__ import annotations

import argparse
from pathlib import Path


def common_args(ap: argparse.ArgumentParser, *, work: str, source: str) -> None:
    """The options every scaling bench takes: its work folder, the text it trains on, the BPE size, parallel
    runs and bootstrap refits."""
    ap.add_argument("--work", default=work)
    ap.add_argument("--source", default=source, help="folder of <domain>.parquet (id, text, domain)")
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--bootstrap", type=int, default=100)


def prepare(work: Path, source: str, vocab: int) -> tuple[str, str]:
    """A ``vocab``-entry BPE trained on ``source`` (a folder of ``<domain>.parquet``) and its token pools, under
    ``work/data`` (reused when already built); returns (tokenizer path, pools folder)."""
    from proxytrain.pools import PoolsConfig, build_pools
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    tok, pools = work / "data" / "tok.json", work / "data" / "pools"
    if not tok.is_file():
        train_tokenizer(source, tok, TokenizerConfig(vocab_size=vocab))
    if not (pools / "pools.json").is_file():
        build_pools(source, tok, pools, PoolsConfig(workers=2))
    return str(tok), str(pools)
