"""A replication set for mixture searches: real domains plus one domain of LEARNABLE garbage.

Random-token or unigram noise is easy for excess-loss methods (nothing to learn, so no excess);
what a real corpus holds after imperfect curation is garbage a model learns quickly: repeated
spam phrases, number tables, hex/base64 blobs, word-shuffled documents, and some random
characters. :func:`garbage_docs` builds such documents from real text (any list of strings);
:func:`build_replication_pools` writes curated Parquet for ``real`` domains of a source folder
plus the garbage domain, trains a small BPE tokenizer and builds three-split token pools::

    from mix.replication import build_replication_pools
    pools = build_replication_pools("data/demo/en", "/tmp/rep", real=["code", "legal", "literature", "news"],
                                    garbage_from=["quotes", "reference"])

The garbage domain's text comes from domains that are not among the real ones, so no real domain's
sentences reappear inside the garbage.
"""

from __future__ import annotations

import base64
import random
import string
from collections.abc import Sequence
from pathlib import Path

GARBAGE_KINDS = ("spam", "table", "hex", "base64", "shuffled", "random_chars")


def _words(texts: Sequence[str], rng: random.Random, n: int) -> list[str]:
    text = texts[rng.randrange(len(texts))]
    words = text.split() or ["empty"]
    start = rng.randrange(max(1, len(words) - n))
    return words[start:start + n]


def garbage_doc(kind: str, texts: Sequence[str], rng: random.Random, chars: int = 1500) -> str:
    """One garbage document of ``kind`` (``GARBAGE_KINDS``) of about ``chars`` characters."""
    if kind == "spam":  # one real phrase, repeated with small variations (boilerplate, SEO spam)
        phrase = " ".join(_words(texts, rng, rng.randint(4, 10)))
        tail = rng.choice(["Click here!", "Buy now!!!", "Best price guaranteed.", "Subscribe today."])
        out = []
        while sum(map(len, out)) < chars:
            out.append(f"{phrase} {tail}" if rng.random() < 0.5 else phrase.upper())
        return "\n".join(out)
    if kind == "table":  # numeric tables: column counts fixed per document, digits random
        cols = rng.randint(3, 7)
        rows = [" | ".join(f"col{c}" for c in range(cols))]
        while sum(map(len, rows)) < chars:
            rows.append(" | ".join(str(rng.randint(0, 10 ** rng.randint(1, 5))) for _ in range(cols)))
        return "\n".join(rows)
    if kind == "hex":
        return "\n".join(rng.randbytes(32).hex() for _ in range(max(1, chars // 65)))
    if kind == "base64":
        return "\n".join(base64.b64encode(rng.randbytes(57)).decode() for _ in range(max(1, chars // 77)))
    if kind == "shuffled":  # real words in random order: real unigrams, no syntax
        words = []
        while sum(len(w) + 1 for w in words) < chars:
            words.extend(_words(texts, rng, 50))
        rng.shuffle(words)
        return " ".join(words)
    if kind == "random_chars":
        alphabet = string.ascii_letters + string.digits + string.punctuation + " "
        return "".join(rng.choice(alphabet) for _ in range(chars))
    raise ValueError(f"unknown garbage kind {kind!r}; choose one of {GARBAGE_KINDS}")


def garbage_docs(texts: Sequence[str], n: int, *, seed: int = 0, chars: int = 1500,
                 kinds: Sequence[str] = GARBAGE_KINDS) -> list[tuple[str, str]]:
    """``n`` ``(kind, text)`` garbage documents, the kinds cycling in order; seeded."""
    if not texts:
        raise ValueError("garbage_docs needs real source texts")
    rng = random.Random(seed)
    return [(kinds[i % len(kinds)], garbage_doc(kinds[i % len(kinds)], texts, rng, chars)) for i in range(n)]


def _read_texts(path: Path, max_chars: int, doc_chars: int) -> list[str]:
    import pyarrow.parquet as pq

    out, n = [], 0
    for t in pq.read_table(path, columns=["text"]).column("text").to_pylist():
        if not t:
            continue
        out.append(t[:doc_chars])
        n += len(out[-1])
        if n >= max_chars:
            break
    return out


def build_replication_pools(source_dir: str | Path, out_dir: str | Path, *, real: Sequence[str],
                            garbage_from: Sequence[str], garbage_name: str = "garbage",
                            chars_per_domain: int = 200_000, garbage_chars: int = 200_000,
                            doc_chars: int = 4000, vocab_size: int = 512, val_fraction: float = 0.1,
                            eval_fraction: float = 0.1, seed: int = 0) -> Path:
    """Curated Parquet, tokenizer and pools under ``out_dir`` (see the module docstring); returns
    the pools folder. Real documents are cut to ``doc_chars``; the garbage domain gets about
    ``garbage_chars`` characters of documents of every kind."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from proxytrain.pools import PoolsConfig, build_pools
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    src, root = Path(source_dir), Path(out_dir)
    cur = root / "curated"
    cur.mkdir(parents=True, exist_ok=True)
    if garbage_name in real or set(real) & set(garbage_from):
        raise ValueError("the garbage domain's sources must not be among the real domains")
    for d in real:
        texts = _read_texts(src / f"{d}.parquet", chars_per_domain, doc_chars)
        _write(cur / f"{d}.parquet", texts, d, [d] * len(texts), pa, pq)
    pool = [t for d in garbage_from for t in _read_texts(src / f"{d}.parquet", 10 ** 9, doc_chars)]
    docs = garbage_docs(pool, max(len(GARBAGE_KINDS), garbage_chars // 1500), seed=seed)
    _write(cur / f"{garbage_name}.parquet", [t for _, t in docs], garbage_name, [k for k, _ in docs], pa, pq)
    train_tokenizer(cur, root / "tokenizer.json", TokenizerConfig(vocab_size=vocab_size))
    build_pools(cur, root / "tokenizer.json", root / "pools",
                PoolsConfig(val_fraction=val_fraction, eval_fraction=eval_fraction, workers=1))
    return root / "pools"


def _write(path: Path, texts: list[str], domain: str, sources: list[str], pa, pq) -> None:
    # documents interleaved by a fixed shuffle so every split holds every garbage kind
    order = random.Random(len(texts)).sample(range(len(texts)), len(texts))
    texts, sources = [texts[i] for i in order], [sources[i] for i in order]
    pq.write_table(pa.table({"id": [f"{domain}/{i:05d}" for i in range(len(texts))], "text": texts,
                             "domain": [domain] * len(texts), "source": sources}), path)
