"""Benchmark: decontamination (and toxicity) throughput per core vs the fused heuristic filter step,
and the cost of a 10 M-item evaluation set.

Run: ``python bench/bench_decontam.py [--rounds R] [--big-items N]``.

1. Throughput: the same real documents (``data/demo/en``, every domain; deep copies per round) go
   through the anchor (``HeuristicFilter``, the fused Gopher/C4/FineWeb step) and through
   ``Decontaminator`` (the shipped demo evaluation set) and the toxicity scorer + filter, one core,
   alternating anchor / ours each round after a warm-up; prints MB/s and the ratios.
2. Scale (``--big-items``, default 10,000,000): a synthetic evaluation set of N items (20-40 words
   from a 200k-word vocabulary, so nearly every 13-gram is distinct: the worst case) is written as
   Parquet and indexed in a fresh child process; prints build seconds, index size, the child's
   peak RSS (the whole process, imports included) against the bound 1.5x the index + 256 MiB, and
   documents/s of lookups against that index.

Writes ``bench/out/bench_decontam.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import Document

ROOT = Path(__file__).resolve().parents[1]
DOMAINS = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")


def load_docs() -> list[Document]:
    out = []
    for d in DOMAINS:
        for r in pq.read_table(ROOT / f"data/demo/en/{d}.parquet", columns=["id", "text"]).to_pylist():
            out.append(Document(text=r["text"], id=r["id"], metadata={"domain": d, "lang": "en"}))
    return out


def run(steps: list, docs: list[Document]) -> float:
    docs = copy.deepcopy(docs)
    t0 = time.perf_counter()
    stream = iter(docs)
    for s in steps:
        stream = s.run(stream, 0, 1)
    for _ in stream:
        pass
    return time.perf_counter() - t0


def throughput(rounds: int, index_dir: str) -> dict:
    from curate.steps.decontam import DecontamConfig, Decontaminator
    from curate.steps.filters import FilterConfig, HeuristicFilter
    from curate.steps.toxicity import ToxicityConfig, toxicity_steps

    docs = load_docs()
    mb = sum(len(d.text.encode()) for d in docs) / 1e6
    dc = DecontamConfig(eval_sets=[str(ROOT / "data/demo/eval")], index_dir=index_dir)
    chains = {"fused_filter": lambda: [HeuristicFilter(FilterConfig())],
              "decontam": lambda: [Decontaminator(dc)],
              "toxicity": lambda: toxicity_steps(ToxicityConfig())}
    warm = docs[::20]
    for make in chains.values():
        run(make(), warm)
    secs: dict[str, list[float]] = {k: [] for k in chains}
    for _ in range(rounds):
        for name, make in chains.items():  # anchor and ours alternate within every round
            secs[name].append(run(make(), docs))
    best = {k: min(v) for k, v in secs.items()}
    return {"mb": round(mb, 3), "docs": len(docs), "seconds": secs,
            "mb_per_s": {k: round(mb / v, 3) for k, v in best.items()},
            "ratio_decontam_vs_filter": round(best["fused_filter"] / best["decontam"], 3),
            "ratio_toxicity_vs_filter": round(best["fused_filter"] / best["toxicity"], 3)}


def write_synthetic(path: Path, items: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(200_000)], dtype=object)
    writer = None
    for start in range(0, items, 500_000):
        k = min(500_000, items - start)
        lens = rng.integers(20, 41, k)
        ids = rng.integers(0, len(vocab), int(lens.sum()))
        words = vocab[ids]
        cut = np.cumsum(lens)[:-1]
        texts = [" ".join(x) for x in np.split(words, cut)]
        t = pa.table({"question": texts})
        writer = writer or pq.ParquetWriter(path, t.schema)
        writer.write_table(t)
    if writer:
        writer.close()


def peak_rss_kib() -> int:
    """This process's peak RSS (``VmHWM``): unlike ``ru_maxrss``, it does not carry the high-water mark
    of the process this one was forked from."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def big_child(path: str, index_dir: str) -> None:
    """In a fresh process: build the index of ``path``, report time and peak RSS."""
    from curate.steps.decontam import DecontamConfig, Decontaminator

    rss0 = peak_rss_kib()
    t0 = time.perf_counter()
    step = Decontaminator(DecontamConfig(eval_sets=[path], index_dir=index_dir))
    build = time.perf_counter() - t0
    rss1 = peak_rss_kib()
    docs = load_docs()[::4]
    t0 = time.perf_counter()
    for d in copy.deepcopy(docs):
        step.filter(d)
    look = time.perf_counter() - t0
    print(json.dumps({"build_seconds": round(build, 1), "ngrams": step.offsets[-1],
                      "index_mib": round(8 * step.offsets[-1] / 2**20, 1),
                      "peak_rss_mib_before": round(rss0 / 1024, 1), "peak_rss_mib": round(rss1 / 1024, 1),
                      "lookup_docs_per_s": round(len(docs) / look, 1),
                      # the bound of the external sort's build: 1.5x the final index + 256 MiB, whole process
                      "peak_within_bound": rss1 / 1024 <= 1.5 * 8 * step.offsets[-1] / 2**20 + 256}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="0 skips the throughput part")
    ap.add_argument("--big-items", type=int, default=10_000_000, help="0 skips the scale part")
    ap.add_argument("--big-child", nargs=2, metavar=("PARQUET", "INDEX_DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.big_child:
        big_child(*args.big_child)
        return
    load0 = harness.loadavg()
    with tempfile.TemporaryDirectory() as tmp:
        res: dict = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count()}
        if args.rounds:
            res["throughput"] = throughput(args.rounds, tmp)
            print(json.dumps(res["throughput"]))
        if args.big_items:
            path = Path(tmp) / "big.parquet"
            t0 = time.perf_counter()
            write_synthetic(path, args.big_items)
            res["big"] = {"items": args.big_items, "write_seconds": round(time.perf_counter() - t0, 1),
                          "file_mib": round(path.stat().st_size / 2**20, 1)}
            out = subprocess.run([sys.executable, __file__, "--big-child", str(path), str(Path(tmp) / "big_idx")],
                                 check=True, capture_output=True, text=True).stdout
            res["big"].update(json.loads(out.strip().splitlines()[-1]))
            print(json.dumps(res["big"]))
    res["loadavg_start"], res["loadavg_end"] = load0, harness.loadavg()
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    harness.write_record("decontam", res, out_dir / "bench_decontam.json")
    print(json.dumps({k: res[k] for k in ("loadavg_start", "loadavg_end")}))


if __name__ == "__main__":
    main()
