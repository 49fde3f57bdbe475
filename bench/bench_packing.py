"""Packing benchmark: best-fit-decreasing vs pad-to-length vs concat-and-chunk on real documents.

Tokenises the shared multi-domain corpora (``/work/shared/corpora/*.parquet``; trained 4096-entry
byte-level BPE, cached under ``--work``), then packs every domain's documents into rows of
``seq_len`` with the three packers and reports, per method, rows, padding and truncation (documents
split into several rows, and among them documents that would have fit in one row). Timing: our
segment-tree best-fit runs ALTERNATELY with the anchor, a straightforward O(n^2) best-fit that scans
every open row (on a subset, since the anchor is quadratic), and the ratio is printed. Run as::

    python bench/bench_packing.py [--seq-len 512 2048] [--work /tmp/corpusmix-bench] [--json out.json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import harness
import numpy as np
from lib.pools import prepare_pools

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA

CORPORA = _SHARED_CORPORA


def reference_best_fit(lengths: np.ndarray, seq_len: int) -> int:
    """Anchor: best-fit-decreasing scanning every open row (O(n * rows)); returns the row count."""
    from proxytrain.packing import split_chunks

    _, _, length = split_chunks(lengths, seq_len)
    free: list[int] = []
    for n in sorted(length.tolist(), reverse=True):
        best = -1
        for r, f in enumerate(free):
            if n <= f and (best < 0 or f < free[best]):
                best = r
        if best < 0:
            free.append(seq_len - n)
        else:
            free[best] -= n
    return len(free)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq-len", type=int, nargs="+", default=[512, 2048])
    ap.add_argument("--work", default="/tmp/corpusmix-bench")
    ap.add_argument("--docs-per-domain", type=int, default=0, help="0 = every document")
    ap.add_argument("--anchor-docs", type=int, default=4000, help="documents timed against the O(n^2) anchor")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)

    from proxytrain.packing import pack_best_fit, pack_concat, pack_pad, packing_stats
    from proxytrain.pools import open_pools

    pools_dir = prepare_pools(Path(args.work), docs_per_domain=args.docs_per_domain)
    _, pools = open_pools(pools_dir)
    lengths = {d: p.doc_lengths("train") for d, p in pools.items() if p.docs}
    all_lengths = np.concatenate(list(lengths.values()))
    print(f"corpora: {len(lengths)} domains, {all_lengths.size} documents, {int(all_lengths.sum())} tokens "
          f"(median doc {int(np.median(all_lengths))}, p90 {int(np.percentile(all_lengths, 90))} tokens)")
    results: dict = {"docs": int(all_lengths.size), "tokens": int(all_lengths.sum()), "seq_len": {}}
    for seq_len in args.seq_len:
        rows = {}
        for name, packer in (("best_fit", pack_best_fit), ("pad_to_length", pack_pad),
                             ("concat_chunk", pack_concat)):
            tot = {"rows": 0, "pad_tokens": 0, "docs_split": 0, "docs_split_needlessly": 0, "seconds": 0.0}
            for lens in lengths.values():  # rows hold one domain each, as in `corpusmix pack`
                t0 = time.perf_counter()
                p = packer(lens, seq_len)
                tot["seconds"] += time.perf_counter() - t0
                s = packing_stats(p, lens)
                for k in ("rows", "pad_tokens", "docs_split", "docs_split_needlessly"):
                    tot[k] += getattr(s, k)
            tot["pad_fraction"] = tot["pad_tokens"] / (tot["rows"] * seq_len)
            rows[name] = tot
        results["seq_len"][seq_len] = {"methods": rows,
                                       "docs_longer_than_row": int((all_lengths > seq_len).sum())}
        print(f"\nseq_len {seq_len}: {int((all_lengths > seq_len).sum())} documents longer than a row")
        print("| method | rows | padding | docs split | split although they fit | pack time (s) |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for name, r in rows.items():
            print(f"| {name} | {r['rows']} | {100 * r['pad_fraction']:.3f} % | {r['docs_split']} | "
                  f"{r['docs_split_needlessly']} | {r['seconds']:.2f} |")

    # timing: ours vs the O(n^2) anchor, alternately, on the same subset
    seq_len = args.seq_len[0]
    rng = np.random.default_rng(0)
    subset = rng.choice(all_lengths, size=min(args.anchor_docs, all_lengths.size), replace=False)
    ours, anchor = [], []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        n_ref = reference_best_fit(subset, seq_len)
        anchor.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        n_ours = len(pack_best_fit(subset, seq_len))
        ours.append(time.perf_counter() - t0)
        assert n_ref == n_ours, (n_ref, n_ours)
    ratio = statistics.median(anchor) / statistics.median(ours)
    t0 = time.perf_counter()
    pack_best_fit(all_lengths, seq_len)
    full_s = time.perf_counter() - t0
    results["timing"] = {"docs": int(subset.size), "seq_len": seq_len, "anchor_s": anchor, "ours_s": ours,
                         "speedup": ratio, "all_docs_s": full_s}
    print(f"\nbest-fit timing on {subset.size} docs, seq_len {seq_len} (alternating, median of {args.rounds}): "
          f"O(n^2) anchor {statistics.median(anchor):.3f} s, segment tree {statistics.median(ours):.3f} s, "
          f"speedup {ratio:.1f}x (same row count {n_ours}); all {all_lengths.size} docs: {full_s:.2f} s")
    if args.json:
        harness.write_record("packing", results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
