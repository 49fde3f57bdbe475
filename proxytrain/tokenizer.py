"""Byte-level BPE tokenizer: train on curated Parquet, load, hash.

The tokenizer is an HF ``tokenizers`` ``tokenizer.json`` (docs/formats.md) with the special
tokens ``<|bos|>``, ``<|eos|>``, ``<|pad|>`` (ids 0, 1, 2 when trained here). Its identity is the
sha256 of the file's bytes (:func:`tokenizer_sha256`); pools and shards record it and the reader
refuses shards made with another tokenizer.

Training streams the ``text`` column of ``DIR/<domain>.parquet`` record batch by record batch (in
sorted domain order, so the same input gives the same ``tokenizer.json``), optionally capped per
domain so that no single domain dominates the merges. Run it as::

    corpusmix tokenize train --curated OUT/curated --output OUT/tokenizer.json [--vocab-size 4096]
    corpusmix tokenize train --from-file given/tokenizer.json --output OUT/tokenizer.json

The proxies default to a small vocabulary (4096): with 8k+ entries the embedding and output head
dominate a ~1M-parameter proxy, so most of its compute would go to the vocabulary instead of the
layers whose loss differences the mixture search measures.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger

if TYPE_CHECKING:  # heavy import kept out of module import time
    from tokenizers import Tokenizer

BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"
SPECIAL_TOKENS = (BOS, EOS, PAD)

log = get_logger("proxytrain.tokenizer")


@dataclass
class TokenizerConfig:
    vocab_size: int = field(default=4096, metadata={"help": "BPE vocabulary size incl. 256 bytes + specials"})
    min_frequency: int = field(default=2, metadata={"help": "minimum pair count for a merge"})
    max_docs_per_domain: int = field(default=0, metadata={"help": "cap on training docs per domain (0 = all)"})
    max_chars_per_doc: int = field(default=20000, metadata={"help": "cut longer docs for training (0 = no cut)"})
    text_column: str = field(default="text", metadata={"help": "column holding the document text"})
    require_redacted: bool = field(default=False, metadata={
        "help": "refuse curated files without the PII step's pii_spans column (the vocabulary is an "
                "artefact: it must not learn raw e-mails, numbers or keys)"})


def domain_files(curated_dir: str | Path) -> dict[str, Path]:
    """``{domain: path}`` of ``DIR/<domain>.parquet``, sorted by domain; a clear error if none."""
    d = Path(curated_dir)
    if not d.is_dir():
        raise ConfigError(f"curated folder {d} does not exist; run the curation first or pass "
                          "--curated pointing at a folder of <domain>.parquet files")
    files = {p.stem: p for p in sorted(d.glob("*.parquet"))}
    if not files:
        raise ConfigError(f"no <domain>.parquet files in {d}; expected the curation output "
                          "(one Parquet file per domain)")
    return files


def iter_domain_texts(path: str | Path, *, text_column: str = "text", max_docs: int = 0,
                      batch_rows: int = 1024) -> Iterator[list[str]]:
    """Stream lists of texts from one Parquet file (only the text column is read).

    Null texts are skipped here; the pools builder counts them as drops.
    """
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path, pre_buffer=False)  # one row group held at a time, not the whole file
    if text_column not in pf.schema_arrow.names:
        raise ConfigError(f"{path} has no column {text_column!r} (columns: {pf.schema_arrow.names})")
    seen = 0
    for batch in pf.iter_batches(batch_size=batch_rows, columns=[text_column]):
        texts = batch.column(0).to_pylist()
        if max_docs:
            texts = texts[: max_docs - seen]
        seen += len(texts)
        yield [t for t in texts if t is not None]
        if max_docs and seen >= max_docs:
            return


def _training_iterator(curated_dir: str | Path, cfg: TokenizerConfig) -> Iterator[list[str]]:
    for _domain, path in domain_files(curated_dir).items():
        if cfg.require_redacted:
            import pyarrow.parquet as pq

            if "pii_spans" not in pq.read_schema(path).names:
                raise ConfigError(f"{path} was not PII-redacted (no pii_spans column); keep 'pii' in "
                                  "curate.engine.steps, run `corpusmix curate pii` on it, or set "
                                  "tokenizer.require_redacted: false")
        for texts in iter_domain_texts(path, text_column=cfg.text_column, max_docs=cfg.max_docs_per_domain):
            if cfg.max_chars_per_doc:
                texts = [t[: cfg.max_chars_per_doc] for t in texts]
            yield texts


def new_bpe_tokenizer() -> Tokenizer:
    """An untrained byte-level BPE tokenizer (GPT-2 style pre-tokenisation, no added prefix space)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    return tok


def train_tokenizer(curated_dir: str | Path, output: str | Path, cfg: TokenizerConfig | None = None) -> str:
    """Train byte-level BPE on ``curated_dir`` and write ``output`` atomically; return its sha256."""
    from tokenizers import pre_tokenizers, trainers

    cfg = cfg or TokenizerConfig()
    min_vocab = 256 + len(SPECIAL_TOKENS)
    if cfg.vocab_size < min_vocab:
        raise ConfigError(f"vocab_size {cfg.vocab_size} is too small: byte-level BPE needs at least "
                          f"{min_vocab} (256 bytes + {len(SPECIAL_TOKENS)} specials)")
    if cfg.vocab_size > 2**32 - 1:
        raise ConfigError("vocab_size must fit in uint32")
    tok = new_bpe_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=cfg.vocab_size, min_frequency=cfg.min_frequency, show_progress=False,
        special_tokens=list(SPECIAL_TOKENS), initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(_training_iterator(curated_dir, cfg), trainer=trainer)
    if tok.get_vocab_size() <= min_vocab:
        raise ConfigError(f"the curated data in {curated_dir} is empty: the tokenizer learned no merges")
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tok.save(tmp, pretty=False)
    os.replace(tmp, out)
    sha = tokenizer_sha256(out)
    log.info("tokenizer trained", extra={"data": {"path": str(out), "vocab_size": tok.get_vocab_size(),
                                                   "sha256": sha}})
    return sha


def install_tokenizer(source: str | Path, output: str | Path) -> str:
    """Use a given ``tokenizer.json``: check it has the specials, copy it to ``output``; return sha256."""
    load_tokenizer(source)
    out = Path(output)
    if Path(source).resolve() != out.resolve():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        shutil.copyfile(source, tmp)
        os.replace(tmp, out)
    return tokenizer_sha256(out)


def load_tokenizer(path: str | Path) -> Tokenizer:
    """Load a ``tokenizer.json``; a clear error if missing or lacking ``<|bos|>/<|eos|>/<|pad|>``."""
    from tokenizers import Tokenizer

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"tokenizer file {p} does not exist; train one with `corpusmix tokenize train`")
    try:
        tok = Tokenizer.from_file(str(p))
    except Exception as exc:  # tokenizers raises a bare Exception on malformed files
        raise ConfigError(f"{p} is not a valid HF tokenizers tokenizer.json: {exc}") from None
    missing = [s for s in SPECIAL_TOKENS if tok.token_to_id(s) is None]
    if missing:
        raise ConfigError(f"tokenizer {p} lacks the special token(s) {missing}; add them "
                          "(tokenizer.add_special_tokens) or train one with `corpusmix tokenize train`")
    return tok


def special_ids(tok: Tokenizer) -> dict[str, int]:
    """``{"bos": id, "eos": id, "pad": id}``."""
    return {"bos": tok.token_to_id(BOS), "eos": tok.token_to_id(EOS), "pad": tok.token_to_id(PAD)}


def tokenizer_sha256(path: str | Path) -> str:
    """sha256 of the tokenizer file's bytes (the tokenizer's identity in pools and shards)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
