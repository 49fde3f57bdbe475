"""Byte-level BPE training on real curated Parquet: determinism, specials, round trip, errors."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusmix.config import ConfigError
from corpusmix.paths import DEMO
from proxytrain.tokenizer import (
    TokenizerConfig,
    install_tokenizer,
    load_tokenizer,
    special_ids,
    tokenizer_sha256,
    train_tokenizer,
)

CORPORA = DEMO / "en"  # shipped with the repository: never skips
DOMAINS = ("code", "legal", "quotes")


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    out = tmp_path_factory.mktemp("curated")
    for d in DOMAINS:
        t = pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text", "domain", "source"]).slice(0, 40)
        texts = [s[:3000] for s in t.column("text").to_pylist()]
        t = t.set_column(1, "text", pa.array(texts))
        pq.write_table(t, out / f"{d}.parquet", compression="zstd")
    return out


def test_train_is_deterministic_and_has_specials(curated, tmp_path):
    cfg = TokenizerConfig(vocab_size=400)
    sha1 = train_tokenizer(curated, tmp_path / "a.json", cfg)
    sha2 = train_tokenizer(curated, tmp_path / "b.json", cfg)
    assert sha1 == sha2 == tokenizer_sha256(tmp_path / "a.json")
    tok = load_tokenizer(tmp_path / "a.json")
    assert tok.get_vocab_size() == 400
    assert special_ids(tok) == {"bos": 0, "eos": 1, "pad": 2}
    spec = json.loads((tmp_path / "a.json").read_text())
    assert spec["model"]["type"] == "BPE" and spec["pre_tokenizer"]["type"] == "ByteLevel"


def test_roundtrip_on_real_text(curated, tmp_path):
    train_tokenizer(curated, tmp_path / "t.json", TokenizerConfig(vocab_size=400))
    tok = load_tokenizer(tmp_path / "t.json")
    texts = pq.read_table(curated / "code.parquet").column("text").to_pylist()[:10]
    texts.append("naïve café — 東京 ✓ <|bos|> literal")  # unseen bytes still encode (byte-level)
    for text in texts:
        ids = tok.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids, skip_special_tokens=False) == text
    # the merges compress: fewer tokens than bytes on the training text
    sample = texts[0]
    assert len(tok.encode(sample).ids) < 0.7 * len(sample.encode())


def test_per_domain_cap_changes_the_training_data(curated, tmp_path):
    a = train_tokenizer(curated, tmp_path / "a.json", TokenizerConfig(vocab_size=400))
    b = train_tokenizer(curated, tmp_path / "b.json", TokenizerConfig(vocab_size=400, max_docs_per_domain=5))
    assert a != b


def test_install_given_tokenizer(curated, tmp_path):
    sha = train_tokenizer(curated, tmp_path / "given.json", TokenizerConfig(vocab_size=300))
    assert install_tokenizer(tmp_path / "given.json", tmp_path / "out" / "tokenizer.json") == sha
    assert (tmp_path / "out" / "tokenizer.json").read_bytes() == (tmp_path / "given.json").read_bytes()


def test_errors(curated, tmp_path):
    with pytest.raises(ConfigError, match="too small"):
        train_tokenizer(curated, tmp_path / "x.json", TokenizerConfig(vocab_size=100))
    with pytest.raises(ConfigError, match="does not exist"):
        train_tokenizer(tmp_path / "nope", tmp_path / "x.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no <domain>.parquet"):
        train_tokenizer(tmp_path / "empty", tmp_path / "x.json")
    with pytest.raises(ConfigError, match="does not exist"):
        load_tokenizer(tmp_path / "missing.json")
    (tmp_path / "junk.json").write_text("{}")
    with pytest.raises(ConfigError, match="not a valid"):
        load_tokenizer(tmp_path / "junk.json")
    from tokenizers import Tokenizer, models

    Tokenizer(models.BPE()).save(str(tmp_path / "nospecial.json"))
    with pytest.raises(ConfigError, match="lacks the special token"):
        load_tokenizer(tmp_path / "nospecial.json")


def test_empty_texts_are_an_error(tmp_path):
    (tmp_path / "c").mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "text": ["", None]}), tmp_path / "c" / "x.parquet")
    with pytest.raises(ConfigError, match="empty"):
        train_tokenizer(tmp_path / "c", tmp_path / "t.json", TokenizerConfig(vocab_size=300))
