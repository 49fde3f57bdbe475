"""Benchmark: peak RSS of ``corpusmix curate run`` on an input and on the same input grown 10x.

Run: ``python bench/bench_memory.py [--mb N] [--factor 10] [--steps normalize,langid,filters]``.
Builds two Parquet inputs from real English corpora (the big one repeats the documents under new
ids), runs the engine on each in a child process (1 task, 1 worker) and reads the child's peak RSS
from ``os.wait4``. The streaming stage holds one batch of documents at a time, so the peak should
not grow with the input. (Global dedup, when enabled, holds id/text of all documents by design.)
Writes ``bench/out/bench_memory.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA

ROOT = Path(__file__).resolve().parents[1]
CORPORA = _SHARED_CORPORA


def make_input(path: Path, mb: float, copies: int) -> int:
    parts = []
    for d in ("news", "legal", "techdocs", "literature"):
        parts.append(pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text", "domain", "source"]))
    base = pa.concat_tables(parts)
    sizes = pa.compute.utf8_length(base.column("text")).to_pylist()
    n, tot = 0, 0
    while n < len(sizes) and tot < mb * 1e6:
        tot += sizes[n]
        n += 1
    base = base.slice(0, n)
    with pq.ParquetWriter(path, base.schema, compression="zstd") as w:
        for c in range(copies):
            ids = pa.array([f"{i}~{c}" for i in base.column("id").to_pylist()])
            w.write_table(base.set_column(0, "id", ids), row_group_size=200)
    return tot * copies


def run(inp: Path, out: Path, params: Path) -> tuple[float, int]:
    cmd = [sys.executable, "-m", "corpusmix.cli", "curate", "run", "--input", str(inp), "--output", str(out),
           "--params", str(params), "--tasks", "1", "--workers", "1"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"curate run failed on {inp} (status {status})")
    return time.perf_counter() - t0, usage.ru_maxrss * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1.0)
    ap.add_argument("--factor", type=int, default=10)
    ap.add_argument("--steps", default="normalize,langid,filters")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        params = tmp / "params.yaml"
        params.write_text(f"curate:\n  engine:\n    steps: [{args.steps}]\n    batch_docs: 500\n")
        small, big = tmp / "small.parquet", tmp / "big.parquet"
        b_small = make_input(small, args.mb, 1)
        b_big = make_input(big, args.mb, args.factor)
        s_small, rss_small = run(small, tmp / "out_small", params)
        s_big, rss_big = run(big, tmp / "out_big", params)
    res = {"bench": "memory", "steps": args.steps, "small_mb": round(b_small / 1e6, 2), "big_mb": round(b_big / 1e6, 2),
           "small_peak_rss_mb": round(rss_small / 2**20, 1), "big_peak_rss_mb": round(rss_big / 2**20, 1),
           "rss_ratio": round(rss_big / rss_small, 3), "small_seconds": round(s_small, 1), "big_seconds": round(s_big, 1)}
    print(json.dumps(res))
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_memory.json").write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
