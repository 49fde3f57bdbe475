"""Dedup throughput: ours (local, Spark local[2]) vs datasketch, datatrove and rensa; peak RSS.

    python bench/bench_dedup.py [--mb 4] [--rounds 2] [--spark] [--rss] [--json out.json]
    python bench/bench_dedup.py --gen 100 --ours-workers 1 --skip datatrove,rensa --rounds 1
    python bench/bench_dedup.py --gen-dir CORPUS --ours-workers 2 --datatrove-workers 2 \
        --skip datasketch,rensa,ours_w1 --rounds 1

``--gen MB`` replaces the data below by a corpus of distinct documents from ``bench/gen_corpus.py``
(seed 0, 3 % exact + 3 % near planted copies; generated under ``--gen-dir``); ``--gen-dir`` naming
an existing gen_corpus output uses it as is. On generated data the removed ids of every method are
scored against the planted copies (found per kind, unplanted documents removed).
``--ours-workers 1`` makes the alternating "ours" single-process, like datasketch;
``--datatrove-workers N`` gives datatrove N processes (see ``run_datatrove``).

Data: real English documents of /work/shared/corpora (round-robin over the seven domains, up to
``--mb`` MB of text), plus 5 % exact copies (case/whitespace changed) and 5 % near copies
(2 % word edits). Everyone runs threshold 0.8, word 5-shingles, 128 permutations, end to end
(text in, duplicate clusters out):

* ``datasketch``: ``MinHash.update_batch`` per document + ``MinHashLSH`` insert and query, one process;
* ``datatrove``: its 4-stage MinHash pipeline (signatures, buckets, clusters, filter) with
  ``LocalPipelineExecutor`` (``--datatrove-workers`` tasks/workers, 14 buckets x 8 hashes: its
  default), Parquet in (written before the clock starts) and out;
* ``rensa``: ``RMinHash`` + ``RMinHashLSH`` (16 bands), one process — the ceiling to approach;
* ``ours``: ``dedup_table`` with ``workers=2`` (and ``workers=1``), exact + near, verification on.

Each round runs every method once, alternating with ours, and the report gives medians of wall
seconds (MB/s) and of CPU seconds (this process + reaped children: ``getrusage``), the ratios
method / ours, and the load average at the start of every run. ``--spark`` adds ours on Spark ``local[2]`` (session start excluded);
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
from collections.abc import Callable
from pathlib import Path

import harness
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


def load_generated(mb: float, gen_dir: Path) -> tuple[pa.Table, list[dict]]:
    """``id``/``text`` and planted-copy ground truth of a gen_corpus corpus: ``gen_dir`` itself when it
    is one (has ``manifest.json``), else one of ``mb`` MB generated once under ``gen_dir``."""
    out = gen_dir if (gen_dir / "manifest.json").exists() else gen_dir / f"gen-{mb:g}"
    if not (out / "manifest.json").exists():
        if mb <= 0:
            sys.exit(f"error: {gen_dir} is not a gen_corpus output (no manifest.json) and --gen MB was not given")
        subprocess.run([sys.executable, str(Path(__file__).with_name("gen_corpus.py")), "--out", str(out),
                        "--mb", str(mb)], check=True, stdout=subprocess.DEVNULL)
    truth = pq.read_table(out / "ground_truth.parquet").to_pylist()
    return pq.read_table(out / "docs", columns=["id", "text"]), truth


def shingles(text: str, n: int = 5) -> set[str]:
    w = text.lower().split()
    return {" ".join(w[i:i + n]) for i in range(len(w) - n + 1)}


def run_datasketch(t: pa.Table) -> set[str]:
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.8, num_perm=128)
    sigs = []
    for i, text in enumerate(t.column("text").to_pylist()):
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([s.encode() for s in shingles(text)])
        lsh.insert(i, m)
        sigs.append(m)
    ids = t.column("id").to_pylist()
    return {ids[i] for i, m in enumerate(sigs) if any(j < i for j in lsh.query(m))}


def run_rensa(t: pa.Table) -> set[str]:
    from rensa import RMinHash, RMinHashLSH

    lsh = RMinHashLSH(threshold=0.8, num_perm=128, num_bands=16)
    sigs = []
    for i, text in enumerate(t.column("text").to_pylist()):
        m = RMinHash(num_perm=128, seed=1)
        m.update(list(shingles(text)))
        lsh.insert(i, m)
        sigs.append(m)
    ids = t.column("id").to_pylist()
    return {ids[i] for i, m in enumerate(sigs) if any(j < i for j in lsh.query(m))}


def datatrove_input(t: pa.Table, tasks: int, folder: Path) -> Path:
    """``t`` as ``tasks`` Parquet files of about equal text bytes (datatrove's readers shard by file)."""
    src = folder / f"in-{tasks}"
    if src.exists():
        return src
    src.mkdir(parents=True)
    sizes = [len(x.encode()) for x in t.column("text").to_pylist()]
    total, start, acc = sum(sizes), 0, 0
    for k in range(tasks):
        end = start
        while end < len(sizes) and (k == tasks - 1 or acc + sizes[end] <= total * (k + 1) / tasks):
            acc += sizes[end]
            end += 1
        pq.write_table(t.slice(start, end - start), src / f"docs-{k:03d}.parquet")
        start = end
    return src


def run_datatrove(t: pa.Table, workers: int = 1, src: Path | None = None) -> set[str]:
    """datatrove's 4 MinHash stages on ``src`` (``workers`` Parquet files of ``t``), removed ids out.

    Signatures and the final filter run ``workers`` tasks on ``workers`` processes (one input file
    each; the filter's tasks must match the signature's ranks), buckets 14 tasks (one per bucket,
    its minimum) on ``workers`` processes; clustering is one task by datatrove's design. Pools use
    ``fork`` (datatrove's default is ``forkserver``, whose workers are not this process' children,
    so their CPU time would escape ``RUSAGE_CHILDREN``).
    """
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
        if src is None:
            src = datatrove_input(t, workers, Path(tmp))
        ex = dict(logging_dir=f"{tmp}/logs", skip_completed=False, start_method="fork")
        LocalPipelineExecutor(pipeline=[ParquetReader(str(src)), MinhashDedupSignature(
            output_folder=f"{tmp}/sigs", config=cfg)], tasks=workers, workers=workers, **ex).run()
        LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(input_folder=f"{tmp}/sigs",
                                                            output_folder=f"{tmp}/buckets", config=cfg)],
                              tasks=cfg.num_buckets, workers=workers, **ex).run()
        LocalPipelineExecutor(pipeline=[MinhashDedupCluster(input_folder=f"{tmp}/buckets",
                                                            output_folder=f"{tmp}/remove", config=cfg)],
                              tasks=1, workers=1, **ex).run()
        LocalPipelineExecutor(pipeline=[ParquetReader(str(src)), MinhashDedupFilter(input_folder=f"{tmp}/remove"),
                                        ParquetWriter(f"{tmp}/out")], tasks=workers, workers=workers, **ex).run()
        kept = {i for f in Path(f"{tmp}/out").glob("*.parquet")
                for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()}
    return set(t.column("id").to_pylist()) - kept


def run_ours(t: pa.Table, workers: int) -> set[str]:
    from curate.dedup import DedupConfig, dedup_table

    out = dedup_table(t, DedupConfig(workers=workers))
    return {i for i, d in zip(out.column("id").to_pylist(), out.column("is_duplicate").to_pylist(), strict=True) if d}


def timed(fn: Callable[[pa.Table], set[str]], t: pa.Table) -> tuple[set[str], dict]:
    """``fn(t)`` with its wall seconds, CPU seconds (this process + reaped children) and loadavg."""
    with harness.measured() as m:
        out = fn(t)
    return out, {"wall_s": m["wall_s"], "cpu_s": m["cpu_s"], "loadavg": m["loadavg_start"]}


def score_planted(removed: set[str], truth: list[dict]) -> dict:
    """Removed ids against gen_corpus' planted copies.

    A group is an original with its k planted copies; a method that finds them removes k of the
    k + 1 (which one it keeps is its choice), so a group counts min(removed in it, k) copies found
    (credited first to the copies it removed). ``unplanted_removed`` counts removed documents outside
    every group: the originals are distinct, so each is a false positive.
    """
    groups: dict[str, list[dict]] = {}
    for r in truth:
        groups.setdefault(r["dup_of"], []).append(r)
    found = {"exact": 0, "near": 0}
    total = {"exact": 0, "near": 0}
    in_group, whole = set(), 0
    for orig, copies in groups.items():
        members = {orig, *(c["id"] for c in copies)}
        in_group |= members
        n = len(members & removed)
        whole += n > len(copies)
        ranked = sorted(copies, key=lambda c: c["id"] not in removed)  # removed copies first
        for c in copies:
            total[c["kind"]] += 1
        for c in ranked[:min(n, len(copies))]:
            found[c["kind"]] += 1
    return {"exact_found": f"{found['exact']}/{total['exact']}", "near_found": f"{found['near']}/{total['near']}",
            "recall": round((found["exact"] + found["near"]) / max(1, total["exact"] + total["near"]), 4),
            "unplanted_removed": len(removed - in_group), "groups_wholly_removed": whole}


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
    ap.add_argument("--gen-dir", default=None,
                    help="a gen_corpus output to use as is, or where --gen generates one (default: the temp dir)")
    ap.add_argument("--ours-workers", type=int, default=2)
    ap.add_argument("--datatrove-workers", type=int, default=1,
                    help="datatrove's processes: signature/filter tasks and workers, bucket-stage workers")
    ap.add_argument("--rss-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(args.rss_child)
        return
    if args.ours_workers < 1 or args.datatrove_workers < 1:
        sys.exit("error: --ours-workers and --datatrove-workers must be >= 1")
    truth: list[dict] | None = None
    if args.gen or args.gen_dir:
        t, truth = load_generated(args.gen, Path(args.gen_dir or tempfile.gettempdir()))
    else:
        t = load(args.mb)
    mb = sum(len(x.encode()) for x in t.column("text").to_pylist()) / 1e6
    dt_tmp = tempfile.TemporaryDirectory(prefix="bench-dt-in-")
    dt_src = None  # datatrove's input files: written once, outside the clock
    if "datatrove" not in args.skip.split(","):
        dt_src = datatrove_input(t, args.datatrove_workers, Path(dt_tmp.name))
    methods = {"datasketch": run_datasketch,
               "datatrove": lambda x: run_datatrove(x, args.datatrove_workers, dt_src),
               "rensa": run_rensa, "ours_w1": lambda x: run_ours(x, 1)}
    methods = {k: v for k, v in methods.items() if k not in args.skip.split(",")}
    runs: dict[str, list[dict]] = {k: [] for k in [*methods, "ours"]}
    removed: dict[str, set[str]] = {}
    for _ in range(args.rounds):
        for name, fn in methods.items():
            for label, f in (("ours", lambda x: run_ours(x, args.ours_workers)), (name, fn)):
                removed[label], m = timed(f, t)
                runs[label].append(m)
                print(f"{label}: {m['wall_s']:.2f}s wall {m['cpu_s']:.2f} CPU s dups={len(removed[label])} "
                      f"loadavg {m['loadavg']}", file=sys.stderr)
    dt_tmp.cleanup()
    med = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items() if v}
    cpu = {k: statistics.median(r["cpu_s"] for r in v) for k, v in runs.items() if v}
    report = {"mb": round(mb, 2), "docs": t.num_rows, "rounds": args.rounds, "ours_workers": args.ours_workers,
              "datatrove_workers": args.datatrove_workers,
              "data": (f"gen_corpus {args.gen_dir or args.gen}" if truth is not None
                       else "shared corpora + planted copies"),
              "loadavg": harness.loadavg(),
              "mb_per_s": {k: round(mb / v, 3) for k, v in med.items()},
              "seconds": {k: round(v, 3) for k, v in med.items()},
              "cpu_seconds": {k: round(v, 2) for k, v in cpu.items()},
              "mb_per_cpu_s": {k: round(mb / v, 3) for k, v in cpu.items()},
              "ours_speedup_vs": {k: round(v / med["ours"], 2) for k, v in med.items() if k != "ours"},
              "ours_cpu_ratio_vs": {k: round(v / cpu["ours"], 2) for k, v in cpu.items() if k != "ours"},
              "runs": {k: [{**r, "wall_s": round(r["wall_s"], 2), "cpu_s": round(r["cpu_s"], 2)} for r in v]
                       for k, v in runs.items()},
              "duplicates_found": {k: len(v) for k, v in removed.items()}}
    if truth is not None:
        report["planted"] = {k: score_planted(v, truth) for k, v in removed.items()}
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
        harness.write_record("dedup", report, args.json)


if __name__ == "__main__":
    main()
