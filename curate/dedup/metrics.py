"""Pair precision / recall / F1 of a deduplication against ground truth (DVC metrics).

Two views, both over unordered document pairs:

* ``pair``: predicted = two documents in the same ``dup_cluster``; true = their exact shingle
  Jaccard is >= the threshold. Strict: a cluster that chains A~B~C counts (A, C) as a false
  positive when J(A, C) < threshold.
* ``cluster``: predicted as above; true = same connected component of the graph of pairs with
  Jaccard >= threshold (what transitive deduplication can at best recover).

The demo ground truth (``ground_truth.parquet``) only knows each copy's Jaccard to its original:
there a true cluster is an original plus its exact copies and its near copies with ``jaccard >=
threshold``; near copies below the threshold are singletons. Both views coincide there.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from curate.dedup.components import union_find

Pair = tuple[str, str]


def cluster_pairs(ids: Iterable[str], clusters: Iterable[str]) -> set[Pair]:
    """All unordered pairs (a < b) of ids sharing a cluster label."""
    groups: dict[str, list[str]] = defaultdict(list)
    for i, c in zip(ids, clusters, strict=True):
        groups[c].append(i)
    out: set[Pair] = set()
    for members in groups.values():
        if len(members) > 1:
            m = sorted(members)
            out.update((m[x], m[y]) for x in range(len(m)) for y in range(x + 1, len(m)))
    return out


def prf(pred: set[Pair], true: set[Pair]) -> dict[str, float | int]:
    tp = len(pred & true)
    p = tp / len(pred) if pred else 1.0
    r = tp / len(true) if true else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 6), "recall": round(r, 6), "f1": round(f, 6), "tp": tp,
            "fp": len(pred) - tp, "fn": len(true) - tp}


def components_of(ids: list[str], pairs: Iterable[Pair]) -> list[str]:
    """Cluster label (smallest id) of every id under the given pairs."""
    ids = sorted(ids)
    index = {x: k for k, x in enumerate(ids)}
    e = np.array([(index[a], index[b]) for a, b in pairs], dtype=np.int64).reshape(-1, 2)
    root = union_find(len(ids), e)
    lab = dict(zip(ids, (ids[r] for r in root), strict=True))
    return [lab[x] for x in ids]


def score_labelled(result: pa.Table, pairs: pa.Table, threshold: float) -> dict[str, dict]:
    """Metrics of a dedup output (``id``, ``dup_cluster``) against a labelled ``pairs.parquet``."""
    ids = result.column("id").to_pylist()
    pred = cluster_pairs(ids, result.column("dup_cluster").to_pylist())
    a, b, j = (pairs.column(c).to_pylist() for c in ("a", "b", "jaccard"))
    true = {(x, y) if x < y else (y, x) for x, y, v in zip(a, b, j, strict=True) if v >= threshold}
    comp = components_of(sorted(ids), true)
    return {"pair": prf(pred, true), "cluster": prf(pred, cluster_pairs(sorted(ids), comp)),
            "true_pairs": len(true)}


def score_demo(result: pa.Table, truth: pa.Table, threshold: float) -> dict[str, dict]:
    """Metrics against the demo ``ground_truth.parquet`` (see module docstring)."""
    t = truth.select(["id", "defects", "dup_cluster", "jaccard"]).to_pylist()
    label = {}
    for r in t:
        d = r["defects"] or []
        if "exact_dup" in d or ("near_dup" in d and r["jaccard"] >= threshold):
            label[r["id"]] = r["dup_cluster"]
        else:
            label[r["id"]] = r["id"]
    ids = [i for i in result.column("id").to_pylist() if i in label]
    keep = set(ids)
    res = {i: c for i, c in zip(result.column("id").to_pylist(), result.column("dup_cluster").to_pylist(),
                                strict=True) if i in keep}
    pred = cluster_pairs(ids, [res[i] for i in ids])
    true = cluster_pairs(ids, [label[i] for i in ids])
    out = prf(pred, true)
    return {"pair": out, "cluster": out, "true_pairs": len(true)}
