"""A labelled near-duplicate set built from real corpora, with the true Jaccard of every pair.

``corpusmix curate dedup-labelled --corpora data/demo/en --output data/dedup/labelled`` writes

* ``docs.parquet``: ``id``, ``text``, ``domain``, ``source``, ``family`` (id of the original),
  ``edit_rate`` (0 for originals and exact variants) — originals, variants of them with a controlled
  number of word edits (``round(rate * words)`` positions, each replaced, deleted or followed by an
  inserted word), case/whitespace-only variants (exact duplicates after normalisation), and
  unrelated real documents as distractors;
* ``pairs.parquet``: ``a``, ``b`` (ids, ``a < b``), ``jaccard``: the exact word-5-shingle Jaccard
  (lower-cased, whitespace-split words; a text shorter than one shingle is one shingle of all its
  words) of EVERY pair of documents that share at least one shingle, computed with a sparse
  document x shingle matrix. Pairs not listed have Jaccard 0.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DOMAIN_FILES = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")


@dataclass
class LabelledConfig:
    originals: int = field(default=400, metadata={"help": "originals that get variants"})
    distractors: int = field(default=1200, metadata={"help": "unrelated real documents"})
    variants: int = field(default=3, metadata={"help": "variants per original"})
    rates: str = field(default="0,0.01,0.02,0.03,0.05,0.08,0.12,0.2,0.3",
                       metadata={"help": "word-edit rates to draw from (0 = case/whitespace variant)"})
    min_words: int = field(default=20, metadata={"help": "shortest original, in words"})
    max_words: int = field(default=1500, metadata={"help": "originals are cut to this many words"})
    ngram: int = field(default=5, metadata={"help": "words per shingle of the true Jaccard"})
    seed: int = field(default=7, metadata={"help": "random seed"})


def word_shingles(text: str, n: int) -> set[tuple[str, ...]]:
    words = text.lower().split()
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def edit_words(text: str, rate: float, rng: random.Random, vocab: list[str]) -> str:
    """Exactly ``round(rate * words)`` word edits (replace 1/2, delete 1/4, insert after 1/4)."""
    words = text.split()
    k = round(rate * len(words))
    for pos in sorted(rng.sample(range(len(words)), k), reverse=True):
        op = rng.random()
        if op < 0.5:
            words[pos] = rng.choice(vocab)
        elif op < 0.75:
            del words[pos]
        else:
            words.insert(pos + 1, rng.choice(vocab))
    return " ".join(words)


def case_space_variant(text: str, rng: random.Random) -> str:
    words = text.split()
    return "  ".join(w.upper() if rng.random() < 0.3 else w for w in words) + "\n"


def all_pair_jaccard(texts: list[str], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, jaccard) for every pair i < j sharing at least one shingle (exact, no hashing)."""
    import scipy.sparse as sp

    vocab: dict[tuple[str, ...], int] = {}
    rows, cols = [], []
    for i, t in enumerate(texts):
        ids = [vocab.setdefault(s, len(vocab)) for s in word_shingles(t, n)]
        rows.extend([i] * len(ids))
        cols.extend(ids)
    x = sp.csr_matrix((np.ones(len(rows), np.int32), (rows, cols)), shape=(len(texts), len(vocab)))
    sizes = np.asarray(x.sum(axis=1)).ravel()
    inter = sp.triu(x @ x.T, k=1).tocoo()
    i, j, c = inter.row.astype(np.int64), inter.col.astype(np.int64), inter.data.astype(np.float64)
    return i, j, c / (sizes[i] + sizes[j] - c)


def build_labelled(corpora: str | Path, out: str | Path, cfg: LabelledConfig) -> dict[str, int]:
    """Write ``docs.parquet`` and ``pairs.parquet`` under ``out``; returns counts."""
    corpora = Path(corpora)
    files = [corpora / f"{d}.parquet" for d in DOMAIN_FILES if (corpora / f"{d}.parquet").exists()]
    if not files:
        raise FileNotFoundError(f"no corpora ({', '.join(DOMAIN_FILES)}).parquet under {corpora}; "
                                "point --corpora at the shared corpora folder")
    rng = random.Random(cfg.seed)
    pool: list[dict] = []
    for f in files:
        t = pq.read_table(f, columns=["id", "text", "domain", "source"]).to_pylist()
        pool.extend(r for r in t if r["text"] and len(r["text"].split()) >= cfg.min_words)
    pool.sort(key=lambda r: r["id"])
    rng.shuffle(pool)
    need = cfg.originals + cfg.distractors
    if len(pool) < need:
        raise ValueError(f"only {len(pool)} usable documents for {need} requested; lower --originals/--distractors")
    chosen = pool[:need]
    vocab = sorted({w for r in chosen[: 200] for w in r["text"].split()})
    rates = [float(x) for x in cfg.rates.split(",")]
    docs: list[dict] = []
    for k, r in enumerate(chosen):
        text = " ".join(r["text"].split()[: cfg.max_words]) if len(r["text"].split()) > cfg.max_words else r["text"]
        docs.append({"id": r["id"], "text": text, "domain": r["domain"], "source": r["source"],
                     "family": r["id"], "edit_rate": 0.0})
        if k >= cfg.originals:
            continue
        for v in range(cfg.variants):
            rate = rng.choice(rates)
            var = case_space_variant(text, rng) if rate == 0 else edit_words(text, rate, rng, vocab)
            docs.append({"id": f"variant/{k:05d}/{v}", "text": var, "domain": r["domain"],
                         "source": r["source"], "family": r["id"], "edit_rate": rate})
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(docs), out / "docs.parquet", compression="zstd")
    i, j, jac = all_pair_jaccard([d["text"] for d in docs], cfg.ngram)
    ids = np.array([d["id"] for d in docs], dtype=object)
    a, b = ids[i], ids[j]
    swap = a > b
    a2, b2 = np.where(swap, b, a), np.where(swap, a, b)
    # a fixed row order (all_pair_jaccard's order depends on its workers): same bytes every run
    order = np.lexsort((b2.astype(str), a2.astype(str)))
    a2, b2, jac = a2[order], b2[order], np.asarray(jac)[order]
    pq.write_table(pa.table({"a": pa.array(a2, pa.string()), "b": pa.array(b2, pa.string()),
                             "jaccard": pa.array(jac, pa.float64())}), out / "pairs.parquet", compression="zstd")
    return {"docs": len(docs), "pairs": int(len(jac)), "pairs_ge_0.8": int((jac >= 0.8).sum())}
