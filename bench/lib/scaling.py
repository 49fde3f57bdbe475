"""What the scaling benches share: the tokenizer and token pools they train on."""

from __future__ import annotations

from pathlib import Path


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
