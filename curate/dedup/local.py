"""Local deduplication engine: exact + MinHash-LSH near dedup on one machine, across processes.

Run through :func:`curate.dedup.dedup_table` or ``corpusmix curate dedup --engine local``.

Flow (documents are numbered by rank, see ``components``):

1. batches of texts are hashed in ``workers`` processes (exact hash, shingles, signatures, band keys);
   band keys are spilled to disk per batch (:class:`~curate.dedup.lsh.BandSpill`);
2. exact groups by sorting the normalised-text hashes;
3. candidate pairs band by band, among exact-group representatives that have at least one shingle;
4. optional exact-Jaccard verification of candidates;
5. union-find over exact + near edges; the representative is the smallest rank.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm import tqdm

from corpusmix.logging import get_logger
from curate.dedup.components import union_find
from curate.dedup.config import DedupConfig
from curate.dedup.exact import exact_roots
from curate.dedup.lsh import BandSpill
from curate.dedup.minhash import hash_batch
from curate.dedup.verify import verify_pairs

log = get_logger("curate.dedup")


@dataclass
class DedupResult:
    """Per document (in rank order): root rank and kind; plus counters for stats."""

    root: np.ndarray
    kind: np.ndarray  # 0 = representative / unique, 1 = exact, 2 = near
    stats: dict[str, Any] = field(default_factory=dict)


def _hash_job(args: tuple[list[str], dict[str, int]]) -> dict[str, np.ndarray]:
    texts, kw = args
    out = hash_batch(texts, **kw)
    out.pop("sig")
    return out


def batch_starts(texts: Sequence[str | None], max_docs: int, max_mb: float) -> list[int]:
    """First index of every batch: at most ``max_docs`` documents and about ``max_mb`` MB of text,
    so the numpy temporaries of a batch stay bounded however long the documents are."""
    limit = max(1, int(max_mb * 1e6))
    starts, size, count = [0], 0, 0
    for i, t in enumerate(texts):
        n = len(t) if t else 0
        if count and (count >= max_docs or size + n > limit):
            starts.append(i)
            size, count = 0, 0
        size += n
        count += 1
    return starts if texts else []


def hash_all(texts: Sequence[str | None], cfg: DedupConfig, *, keep_sig: bool = False,
             desc: str = "dedup: hashing") -> Iterator[tuple[int, dict[str, np.ndarray]]]:
    """Yield ``(first_index, hash_batch output)`` per batch, in order, using ``cfg.workers`` processes."""
    bands, rows = cfg.bands_rows()
    kw = {"ngram": cfg.ngram, "num_perm": cfg.num_perm, "seed": cfg.seed, "bands": bands, "rows": rows}
    starts = batch_starts(texts, cfg.batch_docs, cfg.batch_mb)
    ends = starts[1:] + [len(texts)]
    jobs = ((list(texts[s:e]), kw) for s, e in zip(starts, ends, strict=True))
    bar = tqdm(total=len(texts), desc=desc, unit="doc", disable=len(texts) < 50_000)
    if cfg.workers > 1 and len(starts) > 1 and not keep_sig:
        with mp.get_context("fork").Pool(cfg.workers) as pool:
            for s, out in zip(starts, pool.imap(_hash_job, jobs), strict=True):
                bar.update(out["exact"].shape[0])
                yield s, out
    else:
        for s, (batch, k) in zip(starts, jobs, strict=True):
            out = hash_batch(batch, **k)
            if not keep_sig:
                out.pop("sig")
            bar.update(len(batch))
            yield s, out
    bar.close()


def dedup_ranked(texts: Sequence[str | None], cfg: DedupConfig) -> DedupResult:
    """Deduplicate texts already in rank order (index = rank)."""
    n = len(texts)
    exact = np.zeros((n, 2), np.uint64)
    n_words = np.zeros(n, np.int64)
    n_sh = np.zeros(n, np.int64)
    with BandSpill(cfg.spill_dir or None) as spill:
        for s, out in hash_all(texts, cfg):
            e = s + out["exact"].shape[0]
            exact[s:e], n_words[s:e], n_sh[s:e] = out["exact"], out["n_words"], out["n_shingles"]
            spill.add(out["keys"], np.arange(s, e))  # filtered to eligible docs below
        return resolve(exact, n_words > 0, n_sh > 0, spill, lambda docs: [texts[i] or "" for i in docs], cfg)


def resolve(exact: np.ndarray, nonempty: np.ndarray, has_shingles: np.ndarray, spill: BandSpill,
            text_of: Callable[[np.ndarray], list[str]], cfg: DedupConfig, *, remap: np.ndarray | None = None,
            text_bytes: np.ndarray | None = None, verify_mb: float = 0.0, band_max_keys: int = 0,
            verifier: Callable[[np.ndarray], np.ndarray] | None = None) -> DedupResult:
    """Decisions from the hashes of all documents (arrays in rank order) and their spilled band keys.

    ``remap[doc]`` turns the document numbers of the spill into ranks (identity when None). With
    ``text_bytes`` and ``verify_mb``, candidate pairs are verified in chunks whose texts stay near
    ``verify_mb`` MB (``text_of`` is called once per chunk); ``band_max_keys`` bounds the keys of one
    band held at once (see :meth:`BandSpill.candidate_pairs`). ``verifier`` (pairs -> the pairs at
    or above the threshold) replaces the text-based verification. None of these changes a decision.
    """
    n = exact.shape[0]
    bands, rows = cfg.bands_rows()
    eroot = exact_roots(exact, nonempty) if cfg.exact else np.arange(n, dtype=np.int64)
    eligible = (eroot == np.arange(n)) & has_shingles
    pairs = np.zeros((0, 2), np.int64)
    n_candidates = 0
    if cfg.near and eligible.sum() > 1:
        pairs = spill.candidate_pairs(max_bucket_pairs=cfg.max_bucket_pairs, keep=eligible, remap=remap,
                                      max_keys=band_max_keys)
        n_candidates = len(pairs)
        if cfg.verify and verifier is not None:
            pairs = verifier(pairs)
        elif cfg.verify:
            kept = [verify_pairs(chunk, text_of, ngram=cfg.ngram, threshold=cfg.threshold)[0]
                    for chunk in pair_chunks(pairs, text_bytes, verify_mb)]
            pairs = np.concatenate(kept) if kept else pairs
    exact_edges = np.stack((np.arange(n), eroot), axis=1)[eroot != np.arange(n)]
    root = union_find(n, np.concatenate((exact_edges, pairs)))
    kind = np.zeros(n, np.int8)
    dup = root != np.arange(n)
    same_text = np.all(exact[root] == exact, axis=1) & nonempty
    kind[dup & same_text] = 1
    kind[dup & ~same_text] = 2
    stats = {
        "docs": n, "bands": bands, "rows": rows,
        "exact_duplicates": int((kind == 1).sum()), "near_duplicates": int((kind == 2).sum()),
        "clusters": int((~dup).sum()), "candidate_pairs": int(n_candidates),
        "verified_pairs": int(len(pairs)) if cfg.verify else None,
        "skipped": {"empty_text": int((~nonempty).sum()),
                    "shorter_than_shingle": int((nonempty & ~has_shingles).sum())},
    }
    log.info("dedup done", extra={"data": stats})
    return DedupResult(root=root, kind=kind, stats=stats)


def pair_chunks(pairs: np.ndarray, text_bytes: np.ndarray | None, verify_mb: float) -> Iterator[np.ndarray]:
    """Consecutive slices of ``pairs`` whose documents hold about ``verify_mb`` MB of text each
    (one slice when either is unset). A document repeated in consecutive pairs counts once."""
    if text_bytes is None or verify_mb <= 0 or len(pairs) == 0:
        yield pairs
        return
    u, v = pairs[:, 0], pairs[:, 1]
    new_u = np.ones(len(pairs), bool)
    new_u[1:] = u[1:] != u[:-1]
    cum = np.cumsum(text_bytes[v] + np.where(new_u, text_bytes[u], 0))
    limit = max(1, int(verify_mb * 1e6))
    start = 0
    while start < len(pairs):
        base = cum[start - 1] if start else 0
        end = max(start + 1, int(np.searchsorted(cum, base + limit, side="right")))
        yield pairs[start:end]
        start = end
