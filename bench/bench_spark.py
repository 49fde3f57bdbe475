"""Spark engine (``local[2]``, or a real standalone cluster) vs the local engine, alternately, same chain.

    python bench/bench_spark.py [--per-domain 150] [--rounds 2] [--no-dedup]
    python bench/bench_spark.py --gen-dir G10 --gen-dir G30 --gen-dir G100 --standalone --json-out R.jsonl

Input: the first ``--per-domain`` documents of each English domain of ``/work/shared/corpora``
(``$CORPUSMIX_CORPORA``), or, with ``--gen-dir`` (repeatable: one size each, run in the order
given), the ``docs/`` of a ``bench/gen_corpus.py`` corpus. Every engine runs the chain of
``params.yaml`` (normalize, decontam, langid, filters, toxicity, dedup, pii; quality when its
models are configured). Per size and round the engines alternate: local engine (``--cores`` workers,
default 2), Spark ``--master`` (default ``local[CORES]``), and with ``--standalone`` Spark on a
standalone master + ``--cores`` workers of 1 core each
(``curate.spark.cluster``, started once, always torn down). Each Spark run gets a fresh session
(its start is timed apart from the run's wall time: it is paid once per ``spark-submit``), so the
driver UI's REST API (``/api/v1/applications/<id>/stages``, ``/allexecutors``) describes that run
alone.

Printed per run: wall seconds; ``engine.phases`` of ``stats.json``; the step seconds; and

* ``inside`` = (sum of ``stats.json`` step seconds of every step but dedup, summed over the
  worker processes) / cores: the wall time the per-document steps would take spread perfectly
  over the engine's cores (``--cores``);
* ``dedup`` = ``stats.json`` dedup seconds (global stage or shuffles wall + verdict application);
* ``overhead`` = wall - inside (the brief's definition: dedup, being global, is outside the
  per-document steps), and ``overhead_x`` = wall - inside - dedup (what is neither);
* shuffle bytes per document (stages' ``shuffleWriteBytes`` + ``shuffleReadBytes``, summed);
* peak memory: the executors' ``peakMemoryMetrics`` (REST) and the peak summed RSS of the
  process tree doing the work (sampled from ``/proc`` every 0.5 s: the bench's children for the
  local engine (JVMs excluded) and ``local[2]``, the worker daemons' children for the cluster);
* dedup docs/s per core = documents into dedup / (dedup seconds x cores).

With several sizes it fits ``wall = fixed + per_MB x MB`` (and the same for ``inside``) per
engine and prints the size where overhead falls under 20 % of wall and where Spark's wall comes
within 20 % of the local engine's (extrapolated from the fit unless measured). Each run's record
is appended to ``--json-out`` as it finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import harness
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]

DOMAINS = ("code", "legal", "literature", "news", "quotes", "reference", "techdocs")
CORES = 2
TEXT_DEDUP_DOCS_S_CORE = 42e6 / (40 * 60 * 160)  # text-dedup's Spark MinHash: 42 M docs, < 40 min, 160 cores


def build_input(corpora: Path, out: Path, per_domain: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    for d in DOMAINS:
        t = pq.read_table(corpora / f"{d}.parquet").slice(0, per_domain)
        cols = {"id": [f"{d}/{i}" for i in range(t.num_rows)], "text": t.column("text").to_pylist(),
                "domain": [d] * t.num_rows, "source": [f"shared/{d}"] * t.num_rows}
        pq.write_table(pa.table(cols), out / f"{d}.parquet", row_group_size=100)
        n += t.num_rows
    return n


def gen_input(gen: Path, out: Path, max_docs: int) -> tuple[Path, int, float]:
    """A generated corpus' docs/ (or its first ``max_docs`` documents); (folder, documents, text MB)."""
    docs = gen / "docs"
    if not docs.is_dir():
        raise SystemExit(f"{gen} has no docs/ folder (make one with bench/gen_corpus.py --out {gen})")
    if max_docs:
        t = pq.read_table(docs).slice(0, max_docs)
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(t, out / "part-00000.parquet", row_group_size=max(1, max_docs // 4))
        docs = out
    t = pq.read_table(docs, columns=["text"])
    text_mb = sum(len(s.encode()) for s in t.column("text").to_pylist()) / 1e6
    return docs, t.num_rows, text_mb


def kept_ids(out: Path) -> set[str]:
    return {i for p in (out / "curated").glob("*.parquet") for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()}


class TreeRSS:
    """Peak summed RSS of the descendants of ``roots`` (sampled from /proc every ``every`` s)."""

    def __init__(self, roots: list[int], *, skip_java: bool = False, every: float = 0.5) -> None:
        self.roots, self.skip_java, self.every = set(roots), skip_java, every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        parent, comm = {}, {}
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            head, _, rest = stat.rpartition(") ")
            parent[int(p.name)] = int(rest.split()[1])
            comm[int(p.name)] = head.partition(" (")[2]
        total, page = 0, os.sysconf("SC_PAGE_SIZE")
        for pid in parent:
            q, seen, java = parent.get(pid), 0, comm.get(pid) == "java"
            while q and q not in self.roots and seen < 64:
                java |= comm.get(q) == "java"
                q, seen = parent.get(q), seen + 1
            if q not in self.roots or (self.skip_java and java):  # a JVM and everything under it
                continue
            try:
                total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page
            except OSError:
                continue
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.every)

    def __enter__(self) -> TreeRSS:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def rest(spark: Any, what: str) -> Any:
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{what}"
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read().decode())


def shuffle_bytes(spark: Any) -> tuple[int, int]:
    stages = rest(spark, "stages")
    return (sum(s.get("shuffleWriteBytes", 0) for s in stages), sum(s.get("shuffleReadBytes", 0) for s in stages))


def executor_peaks(spark: Any, standalone: bool) -> dict[str, float]:
    """Max over executors of their peakMemoryMetrics (MB); the driver entry only in local mode."""
    out: dict[str, float] = {}
    for ex in rest(spark, "allexecutors"):
        if standalone and ex.get("id") == "driver":
            continue
        for k, v in (ex.get("peakMemoryMetrics") or {}).items():
            if k in ("JVMHeapMemory", "ProcessTreeJVMRSS", "ProcessTreePythonRSS"):
                out[k] = max(out.get(k, 0.0), round(v / 1e6, 1))
    return out


def spark_session(master: str, tmp: Path, args: argparse.Namespace) -> Any:
    from curate.spark.cluster import free_port
    from curate.spark.engine import SparkConfig, get_session

    conf = {"spark.ui.enabled": "true", "spark.ui.port": str(free_port()), "spark.ui.retainedStages": "100000",
            "spark.ui.retainedJobs": "100000", "spark.sql.ui.retainedExecutions": "100000",
            "spark.executor.processTreeMetrics.enabled": "true", "spark.executor.metrics.pollingInterval": "1s",
            "spark.local.dir": str(tmp / "spark-local")}
    if args.max_partition_mb:  # input splits of at most this much Parquet (Spark's default: 128 MB or bytes / cores)
        conf["spark.sql.files.maxPartitionBytes"] = str(int(args.max_partition_mb * 2**20))
    if master.startswith("spark://"):
        conf.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                     "spark.executor.cores": "1", "spark.cores.max": str(CORES),
                     "spark.executor.memory": args.executor_memory, "spark.driver.memory": "1g"})
    # shuffle partitions as local[2] gets them (2 per core), so both Spark masters run the same plan
    return get_session(SparkConfig(master=master, shuffle_partitions=2 * CORES, conf=conf))


def derive(rec: dict[str, Any], stats: dict[str, Any]) -> None:
    steps = stats["steps"]
    per_doc = sum(v["seconds"] for k, v in steps.items() if k != "dedup")
    dedup = steps.get("dedup", {})
    rec["step_seconds"] = {k: round(v["seconds"], 2) for k, v in steps.items()}
    rec["inside"] = round(per_doc / CORES, 2)
    rec["dedup"] = round(dedup.get("seconds", 0.0), 2)
    rec["overhead"] = round(rec["wall"] - rec["inside"], 2)
    rec["overhead_share"] = round(rec["overhead"] / rec["wall"], 3)
    rec["overhead_x"] = round(rec["wall"] - rec["inside"] - rec["dedup"], 2)
    rec["dedup_docs_in"] = dedup.get("docs_in", 0)
    if rec["dedup"] > 0:
        rec["dedup_docs_s_core"] = round(rec["dedup_docs_in"] / (rec["dedup"] * CORES), 1)
    rec["phases"] = stats.get("engine", {}).get("phases", {})
    rec["kept"] = stats["totals"]["kept"]
    rec["kernels"] = stats.get("engine", {}).get("kernels", {})  # which implementation of the statistics ran


def run_local_engine(inp: Path, out: Path, args: argparse.Namespace, ecfg: Any) -> dict[str, Any]:
    from curate.engine_local import run_local

    rec: dict[str, Any] = {"engine": "local", "load_start": harness.load1()}
    with TreeRSS([os.getpid()], skip_java=True) as tree:
        t = time.perf_counter()
        stats = run_local(inputs=inp, output=out, params_path=args.params, cfg=ecfg)
        rec["wall"] = round(time.perf_counter() - t, 2)
    rec["tree_peak_rss_mb"] = round(tree.peak / 1e6, 1)
    derive(rec, stats)
    return rec


def run_spark_engine(name: str, master: str, inp: Path, out: Path, args: argparse.Namespace, chain: tuple,
                     tmp: Path, roots: list[int]) -> dict[str, Any]:
    from curate.spark.engine import run_spark

    steps, dedup, after = chain
    rec: dict[str, Any] = {"engine": name, "load_start": harness.load1()}
    t = time.perf_counter()
    spark = spark_session(master, tmp, args)
    try:
        spark.range(4).count()  # the first job starts the executors and the Python worker daemon
        rec["session_start"] = round(time.perf_counter() - t, 2)
        w0, r0 = shuffle_bytes(spark)
        with TreeRSS(roots) as tree:
            t = time.perf_counter()
            stats = run_spark(inputs=[str(inp)], output=str(out), steps=steps, dedup=dedup, steps_after=after,
                              spark=spark)
            rec["wall"] = round(time.perf_counter() - t, 2)
        time.sleep(1.5)  # let the last task metrics and executor heartbeats reach the UI
        w1, r1 = shuffle_bytes(spark)
        rec["shuffle_write_mb"], rec["shuffle_read_mb"] = round((w1 - w0) / 1e6, 2), round((r1 - r0) / 1e6, 2)
        rec["executor_peaks_mb"] = executor_peaks(spark, master.startswith("spark://"))
    finally:
        spark.stop()
    rec["tree_peak_rss_mb"] = round(tree.peak / 1e6, 1)
    derive(rec, stats)
    return rec


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares (fixed, per_MB) of y = fixed + per_MB * x."""
    n, mx, my = len(xs), statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if n > 1 and sxx else 0.0
    return my - b * mx, b


def summarize(recs: list[dict[str, Any]]) -> None:
    engines = list(dict.fromkeys(r["engine"] for r in recs))
    print("\n| engine | MB | docs | wall s | inside s | dedup s | overhead % | overhead_x % | shuffle B/doc | "
          "tree peak MB | dedup docs/s/core | load |")
    for r in recs:
        sh = (r.get("shuffle_write_mb", 0) + r.get("shuffle_read_mb", 0)) * 1e6 / r["docs"] if "shuffle_write_mb" in r else 0
        print(f"| {r['engine']} | {r['mb']:.1f} | {r['docs']} | {r['wall']:.1f} | {r['inside']:.1f} | {r['dedup']:.1f} | "
              f"{100 * r['overhead_share']:.0f} | {100 * r['overhead_x'] / r['wall']:.0f} | {sh:,.0f} | "
              f"{r['tree_peak_rss_mb']:.0f} | {r.get('dedup_docs_s_core', 0):.0f} | {r['load_start']:.1f} |")
    for e in dict.fromkeys(r["engine"] for r in recs):
        if e == "local":
            continue
        rs = [r for r in recs if r["engine"] == e]
        per = ", ".join("{:.0f} MB: {:.0f}".format(r["mb"], r.get("dedup_docs_s_core", 0)) for r in rs)
        print(f"{e}: session start {max(r['session_start'] for r in rs):.1f} s cold, {min(r['session_start'] for r in rs):.1f} s warm; "
              f"dedup docs/s per core vs text-dedup's ~{TEXT_DEDUP_DOCS_S_CORE:.0f}: {per}")
    sizes = sorted({r["mb"] for r in recs})
    for s in sizes:  # the wall ratio per size, each Spark run against the local run of the same round
        for r in recs:
            loc = [q for q in recs if q["engine"] == "local" and q["mb"] == s and q["round"] == r["round"]]
            if r["engine"] != "local" and r["mb"] == s and loc:
                print(f"{r['engine']} / local at {s:.0f} MB, round {r['round']}: wall {r['wall'] / loc[0]['wall']:.2f}x, "
                      f"inside {r['inside'] / loc[0]['inside']:.2f}x; kernels {r.get('kernels', {})}")
    if len(sizes) < 2:
        return
    fits: dict[str, dict[str, tuple[float, float]]] = {}
    for e in engines:
        rs = [r for r in recs if r["engine"] == e]
        xs = [r["mb"] for r in rs]
        fits[e] = {k: fit(xs, [r[k] for r in rs]) for k in ("wall", "inside", "dedup")}
        fw, fi, fd = fits[e]["wall"], fits[e]["inside"], fits[e]["dedup"]
        print(f"\n{e}: wall = {fw[0]:.1f} s + {fw[1]:.3f} s/MB x MB; inside = {fi[0]:.1f} + {fi[1]:.3f} x MB; "
              f"dedup = {fd[0]:.1f} + {fd[1]:.3f} x MB; marginal {1 / fw[1] if fw[1] > 0 else float('inf'):.2f} MB/s")
        for label, sub in (("overhead < 20 % of wall", 0.0), ("overhead_x (outside steps and dedup) < 20 %", 1.0)):
            # wall - inside - sub*dedup < 0.2 wall  <=>  0.8 wall < inside + sub*dedup (linear in MB)
            a = 0.8 * fw[0] - fi[0] - sub * fd[0]
            b = fi[1] + sub * fd[1] - 0.8 * fw[1]
            measured = [r["mb"] for r in rs if r["wall"] - r["inside"] - sub * r["dedup"] < 0.2 * r["wall"]]
            cross = f"measured at {', '.join(f'{m:.0f}' for m in measured)} MB" if measured else (
                f"extrapolated: {a / b:,.0f} MB" if b > 0 and a / b > 0 else
                ("already at 0 MB by the fit" if a <= 0 and b >= 0 else "never (the fit's slope does not get there)"))
            print(f"  {label}: {cross}")
        print(f"  1 GB projection: wall {fw[0] + 1000 * fw[1]:,.0f} s, overhead "
              f"{100 * (1 - (fi[0] + 1000 * fi[1]) / (fw[0] + 1000 * fw[1])):.0f} %")
    if "local" in fits:
        fl = fits["local"]["wall"]
        med = {(r["engine"], r["mb"]): statistics.median(q["wall"] for q in recs
                                                           if q["engine"] == r["engine"] and q["mb"] == r["mb"])
               for r in recs}
        for e in engines:
            if e == "local":
                continue
            fs = fits[e]["wall"]
            cold = max(r["session_start"] for r in recs if r["engine"] == e)  # the first: JVM + executors
            for label, extra in (("without", 0.0), (f"with its cold {cold:.0f} s", cold)):
                a, b = fs[0] + extra - 1.2 * fl[0], 1.2 * fl[1] - fs[1]
                met = [f"{s:.0f} MB {'yes' if med[(e, s)] + extra <= 1.2 * med[('local', s)] else 'no'} "
                       f"({(med[(e, s)] + extra) / med[('local', s)]:.2f}x)" for s in sizes if (e, s) in med and ('local', s) in med]
                where = (f"extrapolated from the fits: {a / b:,.0f} MB" if b > 0 and a > 0 else
                         ("at every size by the fits" if a <= 0 and b >= 0 else
                          "never by the fits (slope above 1.2x the local engine's)"))
                print(f"  {e} within 20 % of the local engine's wall ({label} session start): "
                      f"measured {'; '.join(met)}; {where}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-domain", type=int, default=150)
    ap.add_argument("--gen-dir", action="append", default=[], help="a bench/gen_corpus.py corpus (repeatable)")
    ap.add_argument("--max-docs", type=int, default=0, help="only the first N documents of each --gen-dir")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2,
                    help="cores of each engine: local engine workers, local[N], standalone workers of 1 core")
    ap.add_argument("--master", default="", help="Spark master of the non-cluster run (default local[CORES])")
    ap.add_argument("--standalone", action="store_true", help="also run on a standalone master + 2 workers")
    ap.add_argument("--no-spark-local", action="store_true", help="leave the --master run out")
    ap.add_argument("--no-local", action="store_true",
                    help="leave the local engine's run out (the kept-ids check is then between the Spark runs)")
    ap.add_argument("--max-partition-mb", type=float, default=0.0,
                    help="spark.sql.files.maxPartitionBytes in MB for both Spark masters (0 = Spark's own splits)")
    ap.add_argument("--executor-memory", default="1g", help="spark.executor.memory on the standalone cluster")
    ap.add_argument("--worker-memory", default="2g", help="memory each standalone worker offers")
    ap.add_argument("--work-dir", default="", help="folder for inputs, outputs and Spark's local dirs")
    ap.add_argument("--json-out", default="", help="append one JSON record per run to this file")
    ap.add_argument("--from-json", action="append", default=[],
                    help="only print the tables and fits of the records in these --json-out files")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--no-dedup", action="store_true", help="leave global dedup out of both chains")
    args = ap.parse_args()
    if args.cores < 1:
        ap.error(f"--cores must be >= 1 (got {args.cores})")
    global CORES
    CORES = args.cores
    args.master = args.master or f"local[{CORES}]"
    if args.from_json:
        summarize([json.loads(line) for f in args.from_json for line in Path(f).read_text().splitlines() if line])
        return 0

    from corpusmix.config import config_from, load_params
    from curate.engine_local import EngineConfig
    from curate.spark.cluster import standalone_cluster
    from curate.spark.submit import chain_from_params

    if args.work_dir:
        Path(args.work_dir).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-spark-", dir=args.work_dir or None))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["SPARK_LOCAL_DIRS"] = str(tmp / "spark-local")
    inputs: list[tuple[str, Path, int, float]] = []
    if args.gen_dir:
        for i, g in enumerate(args.gen_dir):
            docs, n, mb = gen_input(Path(g), tmp / f"in-{i}", args.max_docs)
            inputs.append((g, docs, n, mb))
    else:
        corpora = Path(os.environ.get("CORPUSMIX_CORPORA", "/work/shared/corpora"))
        if not (corpora / "reference.parquet").exists():
            print(f"shared corpora not found at {corpora}; set CORPUSMIX_CORPORA", file=sys.stderr)
            return 2
        n = build_input(corpora, tmp / "in", args.per_domain)
        mb = sum(len(s.encode()) for s in pq.read_table(tmp / "in", columns=["text"]).column("text").to_pylist()) / 1e6
        inputs.append((str(corpora), tmp / "in", n, mb))
    ecfg = config_from(EngineConfig, params=load_params(args.params, "curate.engine"), where="curate.engine")
    if args.no_dedup:
        ecfg.steps = [s for s in ecfg.steps if s != "dedup"]
    ecfg.workers, ecfg.tasks, ecfg.keep_work = CORES, CORES, False
    chain = chain_from_params(args.params, engine_cfg=ecfg)
    steps, dedup, after = chain
    print(f"chain: {[s.step_name for s in steps]}{' + dedup' if dedup else ''} + {[s.step_name for s in after]}; "
          f"local engine: {CORES} workers; Spark: {'' if args.no_spark_local else args.master}"
          f"{f' + standalone ({CORES} workers x 1 core)' if args.standalone else ''}", flush=True)

    recs: list[dict[str, Any]] = []
    same = True
    with ExitStack() as stack:  # the cluster is stopped on the way out, errors and Ctrl-C included
        cluster, worker_pids = None, []
        if args.standalone:
            t = time.perf_counter()
            cluster = stack.enter_context(standalone_cluster(workers=CORES, cores=1, memory=args.worker_memory,
                                                             root=tmp / "cluster"))
            print(f"standalone cluster {cluster.master_url} up in {time.perf_counter() - t:.1f} s", flush=True)
            worker_pids = [int(p.read_text()) for p in (cluster.root / "pids").glob("*Worker*.pid")]
        for src, inp, n_docs, mb in inputs:
            print(f"\ninput {src}: {n_docs} documents, {mb:.1f} MB of text", flush=True)
            for r in range(args.rounds):
                runs = [] if args.no_local else [("local", None)]
                if not args.no_spark_local:
                    runs.append((f"spark {args.master}", args.master))
                if cluster is not None:
                    runs.append(("spark standalone", cluster.master_url))
                ids = {}
                for name, master in runs:
                    out = tmp / "out"
                    shutil.rmtree(out, ignore_errors=True)
                    if master is None:
                        rec = run_local_engine(inp, out, args, ecfg)
                    else:
                        roots = worker_pids if master.startswith("spark://") else [os.getpid()]
                        rec = run_spark_engine(name, master, inp, out, args, chain, tmp, roots)
                    rec.update({"input": src, "docs": n_docs, "mb": round(mb, 2), "round": r, "cores": CORES})
                    ids[name] = kept_ids(out)
                    shutil.rmtree(out, ignore_errors=True)
                    recs.append(rec)
                    print(json.dumps(rec), flush=True)
                    if args.json_out:
                        with open(args.json_out, "a") as fh:
                            fh.write(json.dumps(rec) + "\n")
                first = next(iter(ids.values()), set())
                agree = all(v == first for v in ids.values())
                same &= agree
                print(f"same kept ids on every engine: {agree} ({len(first)} kept of {n_docs})", flush=True)
    summarize(recs)
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
