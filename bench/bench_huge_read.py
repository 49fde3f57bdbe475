"""Peak memory of reading a corpus that holds one huge document (JSONL line / Parquet value).

    python bench/bench_huge_read.py --mb 2000 [--formats jsonl,parquet] [--base-tree DIR] [--chain]

Writes, under ``--work`` (default: a temporary folder, removed after), a JSONL file and a Parquet
file that each hold 1,000 ordinary documents (``data/demo/en``) and, second, ONE document of
``--mb`` MB (repeated real text; Parquet values are limited to 2,147 MB). A fresh child process
reads each file with ``curate.docio.read_documents`` (the reader both curation engines use; default
``curate.read`` settings: ``max_doc_bytes`` 10 MB) and reports its peak RSS (``ru_maxrss`` from
``os.wait4``; the inputs are written by a separate child first, so the parent forked from is small),
seconds and drops; ``--base-tree`` runs the same child on another checkout (the
anchor: e.g. a ``git worktree`` of the commit before the bounded reader) in the same run.
``--chain`` also runs ``corpusmix curate run`` (the default chain of ``params.yaml``, 1 task, 1
worker) on the JSONL file and checks conservation: documents in = kept + dropped-with-reason.
``--spark`` reads the JSONL file with the Spark engine's reader (``curate.spark.read.read_documents``,
``local[2]``, default driver memory) and turns the rows into documents and drops in the partitions
as ``run_spark`` does; its peak is the summed RSS of the child's whole process tree (the driver's
JVM and the Python workers), sampled every 0.2 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]
N_ORDINARY = 1000

CHILD = """
import json, sys, time
from curate import docio
t0 = time.perf_counter()
n = kept = 0
drops = {}
for r in docio.read_documents(sys.argv[1]):
    n += 1
    if isinstance(r, docio.Drop):
        drops[r.reason] = drops.get(r.reason, 0) + 1
    else:
        kept += 1
print(json.dumps({"records": n, "documents": kept, "drops": drops, "seconds": round(time.perf_counter() - t0, 1)}))
"""


CHILD_SPARK = """
import json, os, shutil, sys, tempfile, time
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
from curate.docio import Drop, RecordReader
from curate.spark.engine import SparkConfig, get_session
from curate.spark.read import read_documents
from curate.spark.partition import records_to_docs
t0 = time.perf_counter()
spark = get_session(SparkConfig(master="local[2]", conf={"spark.ui.enabled": "false"}))

def count(rows):
    docs, drops = records_to_docs([r.asDict() for r in rows], RecordReader())
    out = {"documents": len(docs)}
    for d in drops:
        out[d.reason] = out.get(d.reason, 0) + 1
    yield out

total = {}
scratch = tempfile.mkdtemp(prefix="corpusmix-jsonl-")  # the reader's copy without over-long lines
for part in read_documents(spark, [sys.argv[1]], scratch=scratch).rdd.mapPartitions(count).collect():
    for k, v in part.items():
        total[k] = total.get(k, 0) + v
spark.stop()
shutil.rmtree(scratch, ignore_errors=True)
kept = total.pop("documents", 0)
print(json.dumps({"records": kept + sum(total.values()), "documents": kept, "drops": total,
                  "seconds": round(time.perf_counter() - t0, 1)}))
"""


def make_inputs(work: Path, mb: float, formats: list[str]) -> dict[str, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    real = [t for f in sorted((ROOT / "data" / "demo" / "en").glob("*.parquet"))
            for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()]
    ordinary = [t for t in real if t and t.strip()][:N_ORDINARY]
    if len(ordinary) < N_ORDINARY:
        raise SystemExit(f"data/demo/en holds {len(ordinary)} documents, {N_ORDINARY} needed")
    body = "\n\n".join(ordinary)
    size = int(mb * 1e6)
    out: dict[str, Path] = {}
    if "jsonl" in formats:
        p = work / "huge.jsonl"
        with p.open("w", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": "doc-00000", "text": ordinary[0]}) + "\n")
            fh.write('{"id": "huge", "text": "')  # the huge record, written in pieces
            left = size
            piece = json.dumps(body)[1:-1]
            while left > 0:
                chunk = piece[:left]
                fh.write(chunk)
                left -= len(chunk)
            fh.write('"}\n')
            for i, t in enumerate(ordinary[1:], start=1):
                fh.write(json.dumps({"id": f"doc-{i:05d}", "text": t}) + "\n")
        out["jsonl"] = p
    if "parquet" in formats:
        if size > 2_147_000_000:
            raise SystemExit("a Parquet value holds at most 2,147 MB: lower --mb or leave parquet out")
        huge = (body * (size // len(body) + 1))[:size]
        p = work / "huge.parquet"
        ids = ["doc-00000", "huge"] + [f"doc-{i:05d}" for i in range(1, len(ordinary))]
        texts = [ordinary[0], huge] + ordinary[1:]
        pq.write_table(pa.table({"id": ids, "text": texts}), p, compression="zstd", row_group_size=100)
        del huge, texts
        out["parquet"] = p
    return out


def run_child(argv: list[str], tree: Path) -> tuple[dict, float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as so:
        proc = subprocess.Popen([sys.executable, *argv], cwd=tree, stdout=so, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        so.seek(0)
        lines = so.read().strip().splitlines()
    if status != 0:
        return {"failed": f"exit status {status}"}, usage.ru_maxrss / 1024, time.perf_counter() - t0
    return json.loads(lines[-1]) if lines else {}, usage.ru_maxrss / 1024, time.perf_counter() - t0


def run_tree_child(argv: list[str], tree: Path) -> tuple[dict, float, float]:
    """Like ``run_child``, but the peak is the summed RSS of the child and all its descendants
    (a JVM started by the child is not in its ``ru_maxrss``), sampled every 0.2 s."""
    import psutil

    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    peak = 0
    with tempfile.TemporaryFile("w+") as so:
        proc = subprocess.Popen([sys.executable, *argv], cwd=tree, stdout=so, stderr=subprocess.DEVNULL, env=env)
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            total = 0
            try:
                for p in [root, *root.children(recursive=True)]:
                    with contextlib.suppress(psutil.Error):
                        total += p.memory_info().rss
            except psutil.Error:
                pass
            peak = max(peak, total)
            time.sleep(0.2)
        so.seek(0)
        lines = so.read().strip().splitlines()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return {"failed": f"exit status {proc.returncode}"}, peak / 2**20, wall
    return json.loads(lines[-1]) if lines else {}, peak / 2**20, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=2000.0, help="size of the huge document")
    ap.add_argument("--formats", default="jsonl,parquet")
    ap.add_argument("--base-tree", type=Path, default=None, help="another checkout to run the same reads on")
    ap.add_argument("--chain", action="store_true", help="also `corpusmix curate run` on the JSONL file")
    ap.add_argument("--spark", action="store_true", help="also read the JSONL file with the Spark engine's reader")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--make-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    formats = [f for f in a.formats.split(",") if f]
    work = a.work or Path(tempfile.mkdtemp(prefix="bench-huge-"))
    work.mkdir(parents=True, exist_ok=True)
    if a.make_only:
        make_inputs(work, a.mb, formats)
        return
    try:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--make-only", "--mb", str(a.mb), "--formats", a.formats,
                        "--work", str(work)], check=True)
        inputs = {f: work / f"huge.{f}" for f in formats}
        print(f"inputs written in {time.perf_counter() - t0:.0f} s: "
              + ", ".join(f"{k} {v.stat().st_size / 1e6:.0f} MB on disk" for k, v in inputs.items()), flush=True)
        trees = [("ours", ROOT)] + ([("base", a.base_tree.resolve())] if a.base_tree else [])
        rows = []
        for fmt, path in inputs.items():
            for name, tree in trees:
                load = harness.load1()
                res, rss, wall = run_child(["-c", CHILD, str(path)], tree)
                row = {"format": fmt, "tree": name, "huge_mb": a.mb, "peak_rss_mb": round(rss, 1),
                       "wall_s": round(wall, 1), "loadavg": load, **res}
                rows.append(row)
                print(json.dumps(row), flush=True)
        if a.spark and "jsonl" in inputs:
            for name, tree in trees:
                load = harness.load1()
                res, rss, wall = run_tree_child(["-c", CHILD_SPARK, str(inputs["jsonl"])], tree)
                row = {"format": "jsonl", "reader": "spark local[2]", "tree": name, "huge_mb": a.mb,
                       "peak_tree_rss_mb": round(rss, 1), "wall_s": round(wall, 1), "loadavg": load, **res}
                rows.append(row)
                print(json.dumps(row), flush=True)
        if a.chain and "jsonl" in inputs:
            out = work / "run"
            params = work / "params.yaml"
            params.write_text((ROOT / "params.yaml").read_text())
            argv = ["-m", "corpusmix.cli", "curate", "run", "--input", str(inputs["jsonl"]), "--output", str(out),
                    "--params", str(params), "--tasks", "1", "--workers", "1"]
            res, rss, wall = run_child(argv, ROOT)
            stats = json.loads((out / "stats.json").read_text()) if (out / "stats.json").exists() else {}
            import pyarrow.parquet as pq

            kept = sum(pq.read_metadata(p).num_rows for p in (out / "curated").rglob("*.parquet"))
            drops = pq.read_table(out / "drops.parquet").to_pylist() if (out / "drops.parquet").exists() else []
            reasons: dict[str, int] = {}
            for d in drops:
                key = f"{d.get('step')}:{d.get('reason')}"
                reasons[key] = reasons.get(key, 0) + 1
            row = {"chain": "curate run", "peak_rss_mb": round(rss, 1), "wall_s": round(wall, 1),
                   "documents_in": N_ORDINARY + 1, "kept": kept, "dropped": len(drops), "reasons": reasons,
                   "conserved": kept + len(drops) == N_ORDINARY + 1, "stats_keys": sorted(stats)[:6]}
            print(json.dumps(row), flush=True)
    finally:
        if a.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
