"""Benchmark: peak RSS of the local engine's dedup stage (streaming vs in-memory) and of the whole
chain, on corpora of DISTINCT documents from ``bench/gen_corpus.py``.

    python bench/bench_memory.py --mb 100,300 [--modes stream,memory] [--chain-mb 20] [--gen-dir /tmp/x]

For every size, a corpus is generated once (``--gen-dir/gen-<mb>``, reused when its manifest
matches; seed 0, 3 % exact + 3 % near planted copies) and each mode runs in a fresh child process
whose peak RSS comes from ``os.wait4`` (``ru_maxrss``; one process: ``dedup.workers=1`` so no pool
worker hides memory):

* ``stream``: ``curate.dedup.stream.write_verdicts`` over the corpus parts (what ``corpusmix curate
  run`` does after stage a, with the default budgets);
* ``memory``: ``verdicts_in_memory`` (id/text of every document in one Arrow table through
  ``dedup_table``: the stage before streaming).

Modes alternate within a size (stream, memory), the load average is read before each run, and
bytes/document is the slope of peak RSS between the smallest and the largest size. ``--chain-mb``
adds ``corpusmix curate run`` (the default chain of ``params.yaml``, 1 task, 1 worker) on a corpus of
that size and reports its peak RSS and per-step seconds. Bad-input shapes: ``--tiny N`` runs both
modes on N and N/10 tiny documents (3-10 real words each: bytes/document where texts are nothing),
``--huge-mb M`` on one M-MB document plus 1,000 ordinary ones (``curate run`` itself drops
documents over ``curate.read.max_doc_bytes``, 10 MB by default, before dedup). Every corpus is
built in a child process: a child's ``ru_maxrss`` includes the high-water RSS of the process it was
spawned from, so this process holds no corpus (before this, the tiny and huge corpora were built in
it; their rows in BENCHMARKS.md are the larger of this process' and the child's peak).
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

import harness

ROOT = Path(__file__).resolve().parents[1]


def corpus(gen_dir: Path, mb: float, source: str | None) -> tuple[Path, dict]:
    out = gen_dir / f"gen-{mb:g}"
    man = out / "manifest.json"
    if man.exists():
        m = json.loads(man.read_text())
        if m["mb_requested"] == mb and m["seed"] == 0:
            return out, m
    cmd = [sys.executable, str(ROOT / "bench" / "gen_corpus.py"), "--out", str(out), "--mb", str(mb)]
    if source:
        cmd += ["--source", source]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out, json.loads(man.read_text())


def child(mode: str, docs: str, work: str) -> None:
    """Run one dedup mode in this (fresh) process and print its result."""
    from curate.dedup import DedupConfig
    from curate.dedup.stream import verdicts_in_memory, write_verdicts

    parts = sorted(Path(docs).glob("*.parquet"))
    cfg = DedupConfig(workers=1, spill_dir=str(Path(work) / "spill"))
    t0 = time.perf_counter()
    if mode == "stream":
        info = write_verdicts(parts, Path(work) / "verdicts", cfg)
        dups = sum(info["dropped"].values())
    else:
        res = verdicts_in_memory(parts, cfg)
        dups = int(sum(res.column("is_duplicate").to_pylist()))
    print(json.dumps({"seconds": round(time.perf_counter() - t0, 1), "duplicates": dups}))


def special(gen_dir: Path, kind: str, size: float) -> tuple[Path, dict]:
    """A corpus of tiny documents (``size`` = count) or one huge document (``size`` MB) + 1,000 others."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from corpusmix.paths import DEMO

    out = gen_dir / f"{kind}-{size:g}"
    docs = out / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    real = pq.read_table(DEMO / "en" / "literature.parquet", columns=["text"]).column("text").to_pylist()
    words = " ".join(real).split()
    n_bytes, n_docs = 0, 0
    if kind == "tiny":
        n = int(size)
        for p0 in range(0, n, 100_000):
            k = min(100_000, n - p0)
            lens = rng.integers(3, 11, size=k)
            starts = rng.integers(0, len(words) - 11, size=k)
            texts = [" ".join(words[s0:s0 + ln]) for s0, ln in zip(starts, lens, strict=True)]
            n_bytes += sum(len(t.encode()) for t in texts)
            n_docs += k
            pq.write_table(pa.table({"id": [f"tiny-{p0 + i:08d}" for i in range(k)], "text": texts}),
                           docs / f"{p0 // 100_000:05d}-00000.parquet", compression="zstd")
    else:
        body = "\n\n".join(real)
        huge = (body * (int(size * 1e6) // len(body) + 1))[: int(size * 1e6)]
        texts = [huge] + real[:1000]
        n_bytes, n_docs = sum(len(t.encode()) for t in texts), len(texts)
        pq.write_table(pa.table({"id": [f"doc-{i:05d}" for i in range(n_docs)], "text": texts}),
                       docs / "00000-00000.parquet", compression="zstd", row_group_size=100)
    man = {"text_bytes": n_bytes, "docs": n_docs}
    (out / "manifest.json").write_text(json.dumps(man))
    return out, man


def special_in_child(gen_dir: Path, kind: str, size: float) -> tuple[Path, dict]:
    """:func:`special` in a child process: a spawned child's ``ru_maxrss`` includes the high-water
    RSS of the process it was spawned from (``vfork`` + ``exec``), so this process must never hold a
    corpus, or its peak would be reported as the children's."""
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--special", kind, str(size), str(gen_dir)],
                   check=True, cwd=ROOT)
    out = gen_dir / f"{kind}-{size:g}"
    return out, json.loads((out / "manifest.json").read_text())


def run_child(args: list[str], cwd: Path = ROOT) -> tuple[int, float, str, float]:
    """(peak RSS bytes, wall seconds, last stdout line, CPU seconds) of a child process."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([sys.executable, *args], cwd=cwd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        lines = out.read().strip().splitlines()
    if status != 0:
        raise SystemExit(f"child {args} failed (status {status})")
    cpu = usage.ru_utime + usage.ru_stime
    return usage.ru_maxrss * 1024, time.perf_counter() - t0, lines[-1] if lines else "", cpu


def chain(gen: Path, work: Path) -> dict:
    params = work / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text())
    rss, wall, _, cpu = run_child(["-m", "corpusmix.cli", "curate", "run", "--input", str(gen / "docs"),
                              "--output", str(work / "out"), "--params", str(params), "--tasks", "1",
                              "--workers", "1"])
    stats = json.loads((work / "out" / "stats.json").read_text())
    return {"peak_rss_mb": round(rss / 2**20, 1), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "step_seconds": {k: v.get("seconds") for k, v in stats.get("steps", {}).items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", default="100,300", help="comma-separated corpus sizes (MB of text)")
    ap.add_argument("--modes", default="stream,memory")
    ap.add_argument("--chain-mb", type=float, default=0.0, help="also run the whole chain at this size")
    ap.add_argument("--tiny", type=int, default=0, help="also N and N/10 tiny documents")
    ap.add_argument("--huge-mb", type=float, default=0.0, help="also one document of this many MB")
    ap.add_argument("--gen-dir", type=Path, default=Path(tempfile.gettempdir()) / "corpusmix-gen")
    ap.add_argument("--source", default=None, help="gen_corpus --source (default: the shared corpora)")
    ap.add_argument("--keep", action="store_true", help="keep the generated corpora")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--special", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    if a.special:
        special(Path(a.special[2]), a.special[0], float(a.special[1]))
        return
    sizes = [float(x) for x in a.mb.split(",") if x]
    modes = a.modes.split(",")
    rows = []
    inputs = [(f"gen {mb:g} MB", lambda mb=mb: corpus(a.gen_dir, mb, a.source)) for mb in sizes]
    if a.tiny:
        inputs += [(f"tiny {n}", lambda n=n: special_in_child(a.gen_dir, "tiny", n)) for n in (a.tiny // 10, a.tiny)]
    if a.huge_mb:
        inputs.append((f"huge {a.huge_mb:g} MB", lambda: special_in_child(a.gen_dir, "huge", a.huge_mb)))
    for label, make in inputs:
        gen, man = make()
        for mode in modes:
            with tempfile.TemporaryDirectory(prefix="bench-mem-", dir=a.gen_dir) as work:
                load = harness.load1()
                rss, wall, line, cpu = run_child([str(Path(__file__).resolve()), "--child", mode, str(gen / "docs"), work])
                r = {"input": label, "mb": round(man["text_bytes"] / 1e6, 1), "docs": man["docs"], "mode": mode,
                     "peak_rss_mb": round(rss / 2**20, 1), "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                     "loadavg": load,
                     **json.loads(line)}
                rows.append(r)
                print(json.dumps(r), flush=True)
    res: dict = {"bench": "memory", "runs": rows, "bytes_per_doc": {}}
    for family in ("gen", "tiny"):
        for mode in modes:
            rs = sorted((r for r in rows if r["mode"] == mode and r["input"].startswith(family)),
                        key=lambda r: r["docs"])
            if len(rs) >= 2 and rs[-1]["docs"] > rs[0]["docs"]:
                res["bytes_per_doc"][f"{family}/{mode}"] = round(
                    (rs[-1]["peak_rss_mb"] - rs[0]["peak_rss_mb"]) * 2**20 / (rs[-1]["docs"] - rs[0]["docs"]), 1)
    if a.chain_mb:
        gen, man = corpus(a.gen_dir, a.chain_mb, a.source)
        with tempfile.TemporaryDirectory(prefix="bench-chain-", dir=a.gen_dir) as work:
            load = harness.load1()
            res["chain"] = {"mb": round(man["text_bytes"] / 1e6, 1), "docs": man["docs"], "loadavg": load,
                            **chain(gen, Path(work))}
        print(json.dumps(res["chain"]), flush=True)
    print(json.dumps({k: v for k, v in res.items() if k != "runs"}))
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    harness.write_record("memory", res, out / "bench_memory.json")
    if not a.keep:
        import shutil

        for mb in sizes + ([a.chain_mb] if a.chain_mb else []):
            shutil.rmtree(a.gen_dir / f"gen-{mb:g}", ignore_errors=True)
        for d in list(a.gen_dir.glob("tiny-*")) + list(a.gen_dir.glob("huge-*")):
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
