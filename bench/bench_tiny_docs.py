"""Memory and conservation of `corpusmix curate run` on ONE JSONL file of many tiny documents.

    python bench/bench_tiny_docs.py --docs 1000000,10000000 [--steps normalize,dedup] [--tasks 2 --workers 2]
        [--quality-models-dir out/models] [--work /tmp/tiny]

The file (``--work/tiny-<N>.jsonl``, reused when present) holds N documents of 3-10 consecutive
words of ``data/demo/en/literature.parquet`` (seed 0), ids ``tiny-<n>``: bytes per document where
the texts are almost nothing, the shape that exposes per-document state. For every N, a fresh
``corpusmix curate run`` (the chain of ``params.yaml``, or ``--steps``) runs on it; a sampler reads
every 0.2 s the RSS of the run's process tree and reports the largest single process and the
largest sum. Conservation is checked from the outputs: documents in = rows of ``curated/`` + rows
of ``drops.parquet``. Bytes per document is the slope of the peak between the smallest and the
largest N. The tasks of the run share the one file through the reader's line-start units
(``curate.read.jsonl_split_bytes``). Writes ``bench/out/bench_tiny_docs.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]


def make_file(path: Path, n: int) -> None:
    import numpy as np
    import pyarrow.parquet as pq

    from corpusmix.paths import DEMO

    rng = np.random.default_rng(0)
    real = pq.read_table(DEMO / "en" / "literature.parquet", columns=["text"]).column("text").to_pylist()
    words = " ".join(real).split()
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for p0 in range(0, n, 100_000):
            k = min(100_000, n - p0)
            lens = rng.integers(3, 11, size=k)
            starts = rng.integers(0, len(words) - 11, size=k)
            fh.write("".join(json.dumps({"id": f"tiny-{p0 + i:08d}", "text": " ".join(words[s:s + ln])}) + "\n"
                             for i, (s, ln) in enumerate(zip(starts, lens, strict=True))))
    tmp.replace(path)


def run(argv: list[str]) -> tuple[int, float, float, float]:
    """(exit status, wall s, peak RSS of one process MB, peak summed RSS of the tree MB)."""
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root = psutil.Process(proc.pid)
    one = tree = 0
    while proc.poll() is None:
        rss = []
        try:
            for p in [root, *root.children(recursive=True)]:
                try:
                    rss.append(p.memory_info().rss)
                except psutil.Error:
                    pass
        except psutil.Error:
            pass
        if rss:
            one, tree = max(one, max(rss)), max(tree, sum(rss))
        time.sleep(0.2)
    return proc.returncode, time.perf_counter() - t0, one / 2**20, tree / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default="100000,1000000", help="comma-separated document counts")
    ap.add_argument("--steps", default="", help="curate.engine.steps to run (default: params.yaml's chain)")
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quality-models-dir", default="", help="quality models (needed by the default chain)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-tiny"))
    a = ap.parse_args()
    import pyarrow.parquet as pq

    a.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in [int(x) for x in a.docs.split(",") if x]:
        f = a.work / f"tiny-{n}.jsonl"
        if not f.exists():
            subprocess.run([sys.executable, "-c", "from bench_tiny_docs import make_file; from pathlib import Path; "
                            f"make_file(Path({str(f)!r}), {n})"], check=True, cwd=ROOT / "bench")
        out = a.work / f"run-{n}"
        subprocess.run(["rm", "-rf", str(out)], check=True)
        argv = [sys.executable, "-m", "corpusmix.cli", "curate", "run", "--input", str(f), "--output", str(out),
                "--params", str(ROOT / "params.yaml"), "--tasks", str(a.tasks), "--workers", str(a.workers)]
        if a.steps:
            argv += ["--steps", a.steps]
        if a.quality_models_dir:
            argv += ["--quality-models-dir", a.quality_models_dir]
        load = harness.load1()
        rc, wall, one, tree = run(argv)
        kept = sum(pq.read_metadata(p).num_rows for p in (out / "curated").rglob("*.parquet")) if rc == 0 else 0
        dropped = pq.read_metadata(out / "drops.parquet").num_rows if rc == 0 else 0
        reasons: dict[str, int] = {}
        if rc == 0:
            for b in pq.ParquetFile(out / "drops.parquet").iter_batches(columns=["step", "reason"]):
                for s, r in zip(b.column(0).to_pylist(), b.column(1).to_pylist(), strict=True):
                    reasons[f"{s}:{r}"] = reasons.get(f"{s}:{r}", 0) + 1
        row = {"docs": n, "file_mb": round(f.stat().st_size / 1e6, 1), "steps": a.steps or "params.yaml",
               "tasks": a.tasks, "workers": a.workers, "exit": rc, "wall_s": round(wall, 1),
               "peak_process_mb": round(one, 1), "peak_tree_mb": round(tree, 1), "kept": kept,
               "dropped": dropped, "conserved": rc == 0 and kept + dropped == n, "reasons": reasons,
               "loadavg_start": round(load, 2), "loadavg_end": round(harness.load1(), 2)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if len(rows) >= 2 and rows[-1]["docs"] > rows[0]["docs"]:
        slope = (rows[-1]["peak_tree_mb"] - rows[0]["peak_tree_mb"]) * 2**20 / (rows[-1]["docs"] - rows[0]["docs"])
        print(json.dumps({"bytes_per_document_tree": round(slope, 1)}))
    out_json = ROOT / "bench" / "out" / "bench_tiny_docs.json"
    out_json.parent.mkdir(parents=True, exist_ok=True)
    harness.write_record("tiny_docs", {"rows": rows}, out_json)


if __name__ == "__main__":
    main()
