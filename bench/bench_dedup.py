"""Dedup throughput: ours (local, Spark local[2]) vs datasketch, datatrove and rensa; peak RSS.

    python bench/bench_dedup.py [--mb 4] [--rounds 2] [--spark] [--rss] [--json out.json]
    python bench/bench_dedup.py --gen 100 --ours-workers 1 --skip datatrove,rensa --rounds 1

``--gen MB`` replaces the data below by a corpus of distinct documents from ``bench/gen_corpus.py``
(seed 0, 3 % exact + 3 % near planted copies; generated under ``--gen-dir``); ``--ours-workers 1``
makes the alternating "ours" single-process, like datasketch.

Data: real English documents of /work/shared/corpora (round-robin over the seven domains, up to
``--mb`` MB of text), plus 5 % exact copies (case/whitespace changed) and 5 % near copies
(2 % word edits). Everyone runs threshold 0.8, word 5-shingles, 128 permutations, end to end
(text in, duplicate clusters out):

* ``datasketch``: ``MinHash.update_batch`` per document + ``MinHashLSH`` insert and query, one process;
* ``datatrove``: its 4-stage MinHash pipeline (signatures, buckets, clusters, filter) with
  ``LocalPipelineExecutor`` (1 task/worker, 14 buckets x 8 hashes: its default), Parquet in and out;
* ``rensa``: ``RMinHash`` + ``RMinHashLSH`` (16 bands), one process — the ceiling to approach;
* ``ours``: ``dedup_table`` with ``workers=2`` (and ``workers=1``), exact + near, verification on.

Each round runs every method once, alternating with ours, and the report gives medians (MB/s) and
the ratio ours / method. ``--spark`` adds ours on Spark ``local[2]`` (session start excluded);
``--rss`` measures ours' peak RSS (one process) in a fresh process at 1x and 10x the data.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA

CORPORA = _SHARED_CORPORA
DOMAINS = ["literature", "reference", "techdocs", "code", "legal", "news", "quotes"]


def load(mb: float, seed: int = 0) -> pa.Table:
    tables = {d: pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text"]).to_pylist() for d in DOMAINS}
    budget, rows, k = mb * 1e6, [], 0
    size = 0
    while size < budget * 0.9:
        progressed = False
        for d in DOMAINS:
            if k < len(tables[d]):
                r = tables[d][k]
                rows.append(r)
                size += len(r["text"].encode())
                progressed = True
        k += 1
        if not progressed:
            break
    from curate.dedup.labelled import edit_words

    rng = random.Random(seed)
    vocab = sorted({w for r in rows[:200] for w in r["text"].split()})
    extra = []
    for i, r in enumerate(rng.sample(rows, len(rows) // 10)):
        if i % 2:
            extra.append({"id": f"bench/exact/{i}", "text": r["text"].upper() + "\n"})
        else:
            extra.append({"id": f"bench/near/{i}", "text": edit_words(r["text"], 0.02, rng, vocab)})
    return pa.Table.from_pylist(rows + extra)


def load_generated(mb: float, gen_dir: Path) -> pa.Table:
    """``id``/``text`` of a gen_corpus corpus of ``mb`` MB (generated once under ``gen_dir``)."""
    out = gen_dir / f"gen-{mb:g}"
    if not (out / "manifest.json").exists():
        subprocess.run([sys.executable, str(Path(__file__).with_name("gen_corpus.py")), "--out", str(out),
                        "--mb", str(mb)], check=True, stdout=subprocess.DEVNULL)
    return pq.read_table(out / "docs", columns=["id", "text"])


def shingles(text: str, n: int = 5) -> set[str]:
    w = text.lower().split()
    return {" ".join(w[i:i + n]) for i in range(len(w) - n + 1)}


def run_datasketch(t: pa.Table) -> int:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    sigs = []
    for i, text in enumerate(t.column("text").to_pylist()):
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([s.encode() for s in shingles(text)])
        lsh.insert(i, m)
        sigs.append(m)
    return sum(1 for i, m in enumerate(sigs) if any(j < i for j in lsh.query(m)))


def run_rensa(t: pa.Table) -> int:
    from rensa import RMinHash, RMinHashLSH

    lsh = RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)
    sigs = []
    for i, text in enumerate(t.column("text").to_pylist()):
        m = RMinHash(num_perm=128, seed=1)
        m.update(list(shingles(text)))
        lsh.insert(i, m)
        sigs.append(m)
    return sum(1 for i, m in enumerate(sigs) if any(j < i for j in lsh.query(m)))


def run_datatrove(t: pa.Table) -> int:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.dedup import (
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )
    from datatrove.pipeline.dedup.minhash import MinhashConfig
    from datatrove.pipeline.readers import ParquetReader
    from datatrove.pipeline.writers import ParquetWriter

    cfg = MinhashConfig()
    with tempfile.TemporaryDirectory(prefix="bench-dt-") as tmp:
        src = Path(tmp) / "in"
        src.mkdir()
        pq.write_table(t, src / "docs.parquet")
        ex = dict(logging_dir=f"{tmp}/logs", skip_completed=False)
        LocalPipelineExecutor(pipeline=[ParquetReader(str(src)), MinhashDedupSignature(
            output_folder=f"{tmp}/sigs", config=cfg)], tasks=1, workers=1, **ex, ).run()
        LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(input_folder=f"{tmp}/sigs",
                                                            output_folder=f"{tmp}/buckets", config=cfg)],
                              tasks=cfg.num_buckets, workers=1, **ex).run()
        LocalPipelineExecutor(pipeline=[MinhashDedupCluster(input_folder=f"{tmp}/buckets",
                                                            output_folder=f"{tmp}/remove", config=cfg)],
                              tasks=1, workers=1, **ex).run()
        LocalPipelineExecutor(pipeline=[ParquetReader(str(src)), MinhashDedupFilter(input_folder=f"{tmp}/remove"),
                                        ParquetWriter(f"{tmp}/out")], tasks=1, workers=1, **ex).run()
        kept = sum(pq.read_table(f).num_rows for f in Path(f"{tmp}/out").glob("*.parquet"))
    return t.num_rows - kept


def run_ours(t: pa.Table, workers: int) -> int:
    from curate.dedup import DedupConfig, dedup_table

    out = dedup_table(t, DedupConfig(workers=workers))
    return int(sum(out.column("is_duplicate").to_pylist()))


def _status_mb(key: str) -> float:
    """VmRSS / VmHWM of this process in MB (VmHWM resets at exec, unlike ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def rss_child(path: str) -> None:
    t = pq.read_table(path)
    from curate.dedup import DedupConfig, dedup_table

    before = _status_mb("VmRSS")
    t0 = time.perf_counter()
    out = dedup_table(t, DedupConfig(workers=1))  # one process: its high-water mark is the whole cost
    peak = _status_mb("VmHWM")
    print(json.dumps({"mb": round(sum(len(x.encode()) for x in t.column("text").to_pylist()) / 1e6, 2),
                      "docs": t.num_rows, "dups": int(sum(out.column("is_duplicate").to_pylist())),
                      "seconds": round(time.perf_counter() - t0, 2), "rss_after_load_mb": before,
                      "peak_rss_mb": peak, "dedup_rss_mb": round(peak - before, 1)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=4.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--spark", action="store_true")
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("--skip", default="", help="comma-separated methods to skip")
    ap.add_argument("--json", default=None)
    ap.add_argument("--gen", type=float, default=0.0, help="MB of bench/gen_corpus.py documents instead")
    ap.add_argument("--gen-dir", default=tempfile.gettempdir())
    ap.add_argument("--ours-workers", type=int, default=2)
    ap.add_argument("--rss-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return
    t = load_generated(args.gen, Path(args.gen_dir)) if args.gen else load(args.mb)
    mb = sum(len(x.encode()) for x in t.column("text").to_pylist()) / 1e6
    methods = {"datasketch": run_datasketch, "datatrove": run_datatrove, "rensa": run_rensa,
               "ours_w1": lambda x: run_ours(x, 1)}
    methods = {k: v for k, v in methods.items() if k not in args.skip.split(",")}
    times: dict[str, list[float]] = {k: [] for k in [*methods, "ours"]}
    dups: dict[str, int] = {}
    for _ in range(args.rounds):
        for name, fn in methods.items():
            for label, f in (("ours", lambda x: run_ours(x, args.ours_workers)), (name, fn)):
                t0 = time.perf_counter()
                dups[label] = f(t)
                times[label].append(time.perf_counter() - t0)
                print(f"{label}: {times[label][-1]:.2f}s dups={dups[label]}", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in times.items() if v}
    report = {"mb": round(mb, 2), "docs": t.num_rows, "rounds": args.rounds, "ours_workers": args.ours_workers,
              "data": f"gen_corpus {args.gen:g} MB" if args.gen else "shared corpora + planted copies",
              "loadavg": Path("/proc/loadavg").read_text().split()[:3],
              "mb_per_s": {k: round(mb / v, 3) for k, v in med.items()},
              "seconds": {k: round(v, 3) for k, v in med.items()},
              "ours_speedup_vs": {k: round(v / med["ours"], 2) for k, v in med.items() if k != "ours"},
              "duplicates_found": dups}
    if args.spark:
        from curate.dedup import DedupConfig
        from curate.dedup.spark import dedup_table_spark, get_spark

        spark = get_spark("local[2]", shuffle_partitions=4)
        spark.sparkContext.setLogLevel("ERROR")
        sp = []
        for _ in range(2):
            t0 = time.perf_counter()
            out = dedup_table_spark(t, DedupConfig(), spark=spark)
            sp.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            run_ours(t, 2)
            sp.append(-(time.perf_counter() - t0))
        s_sp = statistics.median([x for x in sp if x > 0])
        s_ours = statistics.median([-x for x in sp if x < 0])
        report["spark_local2"] = {"seconds": round(s_sp, 2), "mb_per_s": round(mb / s_sp, 3),
                                  "ours_local_seconds": round(s_ours, 2),
                                  "local_speedup_vs_spark": round(s_sp / s_ours, 2),
                                  "dups": int(sum(out.column("is_duplicate").to_pylist()))}
    if args.rss:
        report["rss"] = {}
        with tempfile.TemporaryDirectory(prefix="bench-rss-") as tmp:
            for scale in (1, 10):
                path = f"{tmp}/docs-{scale}x.parquet"
                pq.write_table(load(args.mb * scale), path)
                # a fresh process reads the Parquet file and deduplicates it: peak - after-load is
                # what dedup itself needs on top of the input table
                r = subprocess.run([sys.executable, __file__, "--rss-child", path],
                                   capture_output=True, text=True, check=True)
                report["rss"][f"{scale}x"] = json.loads(r.stdout.strip().splitlines()[-1])
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
