"""Score deduplication on the labelled near-duplicate set and on the demo ground truth.

Run as ``corpusmix curate dedup-eval``; returns/writes a JSON of pair precision, recall and F1
(``metrics``; on the demo data both against measured all-pair Jaccard and against the planted
duplicates only, ``planted``) for ours (verification on and off) and for datasketch's ``MinHash`` + ``MinHashLSH``
with the same number of permutations and threshold (same word shingles, its own hashing).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.dedup import dedup_table
from curate.dedup.components import rank_order, union_find
from curate.dedup.config import DedupConfig
from curate.dedup.labelled import all_pair_jaccard
from curate.dedup.metrics import score_demo, score_labelled


def datasketch_clusters(table: pa.Table, cfg: DedupConfig) -> pa.Table:
    """dup_cluster from datasketch MinHashLSH: candidates of every query, connected components."""
    from datasketch import MinHash, MinHashLSH

    ids = table.column("id").to_pylist()
    texts = table.column("text").to_pylist()
    order = rank_order(ids)
    lsh = MinHashLSH(threshold=cfg.threshold, num_perm=cfg.num_perm)
    sigs = []
    for rank, row in enumerate(order):
        words = (texts[row] or "").lower().split()
        sh = {" ".join(words[i:i + cfg.ngram]) for i in range(len(words) - cfg.ngram + 1)}
        if not sh:
            sigs.append(None)
            continue
        m = MinHash(num_perm=cfg.num_perm, seed=cfg.seed)
        m.update_batch([s.encode("utf-8") for s in sh])
        lsh.insert(rank, m)
        sigs.append(m)
    edges = [(r, o) for r, m in enumerate(sigs) if m is not None for o in lsh.query(m) if o != r]
    root = union_find(len(ids), np.array(edges, dtype=np.int64).reshape(-1, 2))
    cluster = [ids[order[root[r]]] for r in range(len(ids))]
    return pa.table({"id": [ids[order[r]] for r in range(len(ids))], "dup_cluster": cluster})


def _run(name: str, table: pa.Table, cfg: DedupConfig, scorer, out: dict[str, Any]) -> None:
    for label, c in (("ours_verified", dataclasses.replace(cfg, verify=True)),
                     ("ours_unverified", dataclasses.replace(cfg, verify=False))):
        t0 = time.time()
        res = dedup_table(table, c)
        out[f"{name}/{label}"] = {**scorer(res), "seconds": round(time.time() - t0, 3)}


def evaluate(cfg: DedupConfig, *, labelled: str | None = None, ground_truth: str | None = None,
             baseline: bool = True) -> dict[str, Any]:
    """Metrics per dataset and method; ``bands``/``rows`` and threshold are recorded too."""
    b, r = cfg.bands_rows()
    out: dict[str, Any] = {"threshold": cfg.threshold, "num_perm": cfg.num_perm, "bands": b, "rows": r}
    if labelled:
        docs = pq.read_table(Path(labelled) / "docs.parquet")
        pairs = pq.read_table(Path(labelled) / "pairs.parquet")

        def scorer(res: pa.Table) -> dict:
            return score_labelled(res, pairs, cfg.threshold)

        _run("labelled", docs, cfg, scorer, out)
        if baseline:
            t0 = time.time()
            out["labelled/datasketch"] = {**scorer(datasketch_clusters(docs, cfg)),
                                          "seconds": round(time.time() - t0, 3)}
    if ground_truth:
        from curate.dedup.reader import read_docs

        gt_dir = Path(ground_truth)
        docs = read_docs(gt_dir / "docs")
        truth = pq.read_table(gt_dir / "ground_truth.parquet")
        # the real sources hold natural duplicates the planted truth does not know: measure them
        i, j, jac = all_pair_jaccard(docs.column("text").to_pylist(), cfg.ngram)
        ids = np.array(docs.column("id").to_pylist(), dtype=object)
        a, b = ids[i], ids[j]
        measured = pa.table({"a": pa.array(np.where(a < b, a, b), pa.string()),
                             "b": pa.array(np.where(a < b, b, a), pa.string()), "jaccard": jac})

        def gscorer(res: pa.Table) -> dict:
            return {**score_labelled(res, measured, cfg.threshold),
                    "planted": score_demo(res, truth, cfg.threshold)["pair"]}

        _run("demo", docs, cfg, gscorer, out)
        if baseline:
            out["demo/datasketch"] = gscorer(datasketch_clusters(docs, cfg))
    return out
