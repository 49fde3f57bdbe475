"""Incremental deduplication: a new batch against a persisted index of an earlier corpus version.

``corpusmix curate dedup --input v1 --output v1.dedup.parquet --index-dir index/v1`` writes the
index; ``corpusmix curate dedup --input v2_new --output v2.dedup.parquet --against index/v1``
deduplicates only the new batch, within itself and against v1, without re-hashing v1.

Index folder (all numpy / Parquet, memory-mappable):

* ``meta.json``: ``hashing_key`` (ngram, permutations, seed, bands, rows), threshold, doc count;
* ``docs.parquet``: ``id``, ``dup_cluster`` (cluster of the old document), ``h0``/``h1`` (exact hash);
* ``band-XXX.keys.npy`` / ``band-XXX.docs.npy``: per band, sorted band keys and old doc indices
  (documents with at least one shingle);
* ``shingles.npy`` + ``shingle_offsets.npy``: sorted unique shingle hashes per old doc, for exact
  Jaccard verification of new-vs-old candidates.

Old documents always win: a new document connected to an old one is a duplicate whose
``dup_cluster`` is the old document's cluster.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from corpusmix.config import ConfigError
from curate.dedup import DUP_KINDS, check_input, dedup_table
from curate.dedup.components import union_find
from curate.dedup.config import DedupConfig
from curate.dedup.local import hash_all
from curate.dedup.verify import pair_jaccard, shingle_sets

_BATCH = 2000


def build_index(table: pa.Table, folder: str | Path, cfg: DedupConfig) -> dict[str, int]:
    """Persist the index of ``table`` (needs ``id``, ``text``; ``dup_cluster`` kept when present)."""
    check_input(table)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    texts = table.column("text").to_pylist()
    n = len(texts)
    bands, _ = cfg.bands_rows()
    exact = np.zeros((n, 2), np.uint64)
    n_sh = np.zeros(n, np.int64)
    keys = np.zeros((bands, n), np.uint64)
    for s, out in hash_all(texts, cfg, desc="dedup: indexing"):
        e = s + out["exact"].shape[0]
        exact[s:e], n_sh[s:e], keys[:, s:e] = out["exact"], out["n_shingles"], out["keys"]
    has = np.flatnonzero(n_sh > 0)
    for j in range(bands):
        order = np.argsort(keys[j, has], kind="stable")
        np.save(folder / f"band-{j:03d}.keys.npy", keys[j, has][order])
        np.save(folder / f"band-{j:03d}.docs.npy", has[order])
    flats, offs = [], [np.zeros(1, np.int64)]
    total = 0
    for s in range(0, n, _BATCH):
        f, o = shingle_sets(texts[s:s + _BATCH], cfg.ngram)
        flats.append(f)
        offs.append(o[1:] + total)
        total += int(o[-1])
    np.save(folder / "shingles.npy", np.concatenate(flats) if flats else np.zeros(0, np.uint64))
    np.save(folder / "shingle_offsets.npy", np.concatenate(offs))
    cluster = table.column("dup_cluster") if "dup_cluster" in table.column_names else table.column("id")
    ev = exact.view(np.int64)
    pq.write_table(pa.table({"id": table.column("id"), "dup_cluster": cluster,
                             "h0": ev[:, 0], "h1": ev[:, 1]}), folder / "docs.parquet")
    meta = {"hashing_key": cfg.hashing_key(), "threshold": cfg.threshold, "docs": n, "bands": bands,
            "ngram": cfg.ngram, "num_perm": cfg.num_perm, "seed": cfg.seed}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return {"docs": n, "indexed": int(has.size)}


def _probe(old_keys: np.ndarray, old_docs: np.ndarray, new_keys: np.ndarray, cap: int) -> np.ndarray:
    """(new, old) pairs with equal keys; at most ``cap`` old docs per key."""
    lo = np.searchsorted(old_keys, new_keys, side="left")
    hi = np.minimum(np.searchsorted(old_keys, new_keys, side="right"), lo + cap)
    cnt = hi - lo
    new_idx = np.repeat(np.arange(new_keys.size), cnt)
    pos = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)
    return np.stack((new_idx, old_docs[pos]), axis=1)


def dedup_against_index(table: pa.Table, folder: str | Path, cfg: DedupConfig, *,
                        stats: dict[str, Any] | None = None) -> pa.Table:
    """Every row of the new batch plus dup columns, deduplicated within itself and against the index."""
    folder = Path(folder)
    old = _open_index(table, folder, cfg)
    new = dedup_table(table, cfg, stats=stats)  # within the new batch
    n, n_old = new.num_rows, old.num_rows
    texts = new.column("text").to_pylist()
    is_dup = np.asarray(new.column("is_duplicate").to_numpy(zero_copy_only=False), dtype=bool)
    exact, n_sh, n_words, keys = _hash_batch(texts, cfg, n)
    ex_pairs = _exact_pairs(old, exact, n_words, cfg)
    # near candidates: representatives of the new batch with shingles, band by band
    probe = np.flatnonzero(~is_dup & (n_sh > 0))
    cand = [np.zeros((0, 2), np.int64)]
    for j in range(keys.shape[0]):
        ok_, od = np.load(folder / f"band-{j:03d}.keys.npy"), np.load(folder / f"band-{j:03d}.docs.npy")
        p = _probe(ok_, od, keys[j, probe], cfg.max_bucket_pairs)
        p[:, 0] = probe[p[:, 0]]
        cand.append(p)
    near = np.unique(np.concatenate(cand), axis=0)
    n_cand = len(near)
    if cfg.near is False:
        near = near[:0]
    if cfg.verify and len(near):
        near = _verify_near(near, texts, folder, cfg, n, n_old)
    cluster, kinds, matched = _join_old(new, old, ex_pairs, near)
    dup = np.array([c != x for c, x in zip(cluster, new.column("id").to_pylist(), strict=True)])
    out = new.drop_columns(["dup_cluster", "is_duplicate", "dup_kind"])
    kinds = [k if d else None for k, d in zip(kinds, dup, strict=True)]
    assert all(k in DUP_KINDS for k in kinds)
    if stats is not None:
        stats.update({"against_index": str(folder), "old_docs": n_old, "old_candidate_pairs": int(n_cand),
                      "old_exact_matches": int(len(ex_pairs)), "matched_old": matched})
    return (out.append_column("dup_cluster", pa.array(cluster, pa.string()))
            .append_column("is_duplicate", pa.array(dup, pa.bool_()))
            .append_column("dup_kind", pa.array(kinds, pa.string())))


def _open_index(table: pa.Table, folder: Path, cfg: DedupConfig) -> pa.Table:
    """The index's documents table, after checking its hashing parameters and that no id is reused."""
    meta_p = folder / "meta.json"
    if not meta_p.exists():
        raise ConfigError(f"{folder} is not a dedup index (no meta.json); build one with --index-dir")
    meta = json.loads(meta_p.read_text())
    if meta["hashing_key"] != cfg.hashing_key():
        raise ConfigError(
            f"index {folder} was built with ngram={meta['ngram']}, num_perm={meta['num_perm']}, "
            f"seed={meta['seed']}, bands={meta['bands']}; use the same dedup params or rebuild the index")
    old = pq.read_table(folder / "docs.parquet")
    clash = pc.is_in(table.column("id"), value_set=old.column("id"))
    if pc.any(clash).as_py():
        sample = table.filter(clash).column("id")[:5].to_pylist()
        raise ConfigError(f"new batch reuses ids of the indexed corpus, e.g. {sample}; ids must be unique")
    return old


def _hash_batch(texts: list[str | None], cfg: DedupConfig,
                n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Exact hashes, shingle counts, word counts and band keys (bands x n) of the new batch."""
    bands, _ = cfg.bands_rows()
    exact = np.zeros((n, 2), np.uint64)
    n_sh = np.zeros(n, np.int64)
    n_words = np.zeros(n, np.int64)
    keys = np.zeros((bands, n), np.uint64)
    for s, out in hash_all(texts, cfg, desc="dedup: probing"):
        e = s + out["exact"].shape[0]
        exact[s:e], n_sh[s:e], keys[:, s:e] = out["exact"], out["n_shingles"], out["keys"]
        n_words[s:e] = out["n_words"]
    return exact, n_sh, n_words, keys


def _exact_pairs(old: pa.Table, exact: np.ndarray, n_words: np.ndarray, cfg: DedupConfig) -> np.ndarray:
    """(new row, old row) pairs whose exact hashes are equal (a sorted-hash join); none when exact is off."""
    old_h = np.stack((old.column("h0").to_numpy(), old.column("h1").to_numpy()), axis=1).view(np.uint64)
    old_code = old_h[:, 0] ^ (old_h[:, 1] * np.uint64(0x9E3779B97F4A7C15))
    new_code = exact[:, 0] ^ (exact[:, 1] * np.uint64(0x9E3779B97F4A7C15))
    o_order = np.argsort(old_code, kind="stable")
    ex_pairs = _probe(old_code[o_order], o_order, new_code, 1)
    ok = np.all(old_h[ex_pairs[:, 1]] == exact[ex_pairs[:, 0]], axis=1) & (n_words[ex_pairs[:, 0]] > 0)
    return ex_pairs[ok] if cfg.exact else ex_pairs[:0]


def _verify_near(near: np.ndarray, texts: list[str | None], folder: Path, cfg: DedupConfig, n: int,
                 n_old: int) -> np.ndarray:
    """The (new row, old row) candidate pairs whose shingle Jaccard is at least the threshold."""
    new_docs = np.unique(near[:, 0])
    nf, no = shingle_sets([texts[i] or "" for i in new_docs], cfg.ngram)
    of = np.load(folder / "shingles.npy", mmap_mode="r")
    oo = np.load(folder / "shingle_offsets.npy")
    old_docs = np.unique(near[:, 1])
    parts = [np.asarray(of[oo[d]:oo[d + 1]]) for d in old_docs]
    sizes = np.array([nf.size] + [x.size for x in parts])
    flat = np.concatenate([nf] + parts)
    offsets = np.concatenate((no, no[-1] + np.cumsum(sizes[1:])))
    slot_new = np.full(n, -1, np.int64)
    slot_new[new_docs] = np.arange(new_docs.size)
    slot_old = np.full(n_old, -1, np.int64)
    slot_old[old_docs] = new_docs.size + np.arange(old_docs.size)
    # pair_jaccard takes one slot array: give old docs node numbers n.. in a joint space
    joint = np.concatenate((slot_new, slot_old))
    jp = np.stack((near[:, 0], n + near[:, 1]), axis=1)
    return near[pair_jaccard(jp, flat, offsets, joint) >= cfg.threshold]


def _join_old(new: pa.Table, old: pa.Table, ex_pairs: np.ndarray,
              near: np.ndarray) -> tuple[list[str], list[str | None], int]:
    """Clusters and kinds of the new rows after joining them to old documents, and how many joined."""
    n, n_old = new.num_rows, old.num_rows
    # components over new docs (0..n-1) and old docs (n..n+n_old-1): old nodes are taken last in
    # numbering, so pick the old member explicitly below
    within = np.array([[i, r] for i, r in enumerate(_root_rows(new))], np.int64).reshape(-1, 2)
    edges = np.concatenate((within, np.stack((ex_pairs[:, 0], n + ex_pairs[:, 1]), 1),
                            np.stack((near[:, 0], n + near[:, 1]), 1)))
    # number old nodes first so an old document is always the component root
    perm = np.concatenate((n_old + np.arange(n), np.arange(n_old)))
    root = union_find(n + n_old, perm[edges])
    new_root = root[perm[:n]]
    old_cluster = old.column("dup_cluster").to_pylist()
    cluster = new.column("dup_cluster").to_pylist()
    kinds = list(new.column("dup_kind").to_pylist())
    exact_old = set(ex_pairs[:, 0].tolist())
    matched = 0
    for i in range(n):
        r = int(new_root[i])
        if r < n_old:  # joined to an old document: its text equals an old text, or it is near
            matched += 1
            cluster[i] = old_cluster[r]
            kinds[i] = "exact" if i in exact_old else "near"
    return cluster, kinds, matched


def _root_rows(t: pa.Table) -> list[int]:
    ids = t.column("id").to_pylist()
    pos = {x: i for i, x in enumerate(ids)}
    return [pos[c] for c in t.column("dup_cluster").to_pylist()]
