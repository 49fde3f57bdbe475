"""Benchmark: fused heuristic filters vs datatrove's four filters chained, same docs, same thresholds.

Run: ``python bench/bench_filters.py [--mb N] [--rounds R] [--workers W]``, or on a corpus of
distinct documents: ``--gen-dir DIR`` (a ``bench/gen_corpus.py`` output: ``DIR/docs``) or
``--input PATH`` (a Parquet file or folder with ``id``/``text`` and optionally ``domain``).

The default data are real English documents from /work/shared/corpora (round robin over domains,
each <= 50 KB). The anchor is GopherRepetition -> GopherQuality ->
C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQuality, each a datatrove pipeline step;
ours is ``HeuristicFilter`` (a fresh instance each round, so its word cache starts cold). Both
sides run with the same ``--workers`` processes, each on an equal contiguous shard of the
documents (equal by text bytes); inside a worker a short warm-up on its first documents loads
spaCy before the clock starts. Each round runs the anchor, then ours.

Decisions are checked identical: the kept ids with a hash of their (possibly C4-rewritten) text,
and the dropped ids with their drop reason (datatrove's ``filter_reason``), hashed on both sides;
a difference is reported (count and examples) and the script exits 1.

Reported per side: wall (first worker start to last worker end, filtering only), CPU seconds
(sum of the workers' process time while filtering; ``cpu_s_children`` also counts loading and
warm-up from ``getrusage(RUSAGE_CHILDREN)``), MB/s, MB/s per core of CPU time, and the ratio;
with the load average at the start and end of each side. Writes ``bench/out/bench_filters.json``
(or ``--json``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import sys
import time
from collections import Counter
from pathlib import Path

import harness
import pyarrow.parquet as pq
from datatrove.data import Document

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA
from curate.steps.filters import FilterConfig, HeuristicFilter, datatrove_chain

CORPORA = _SHARED_CORPORA
DOMAINS = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")
WARMUP_DOCS = 20

# documents of the run, as (id, text, domain); set in the parent before the workers fork
_ROWS: list[tuple[str, str, str | None]] = []


def load_docs(mb: float, skip: int = 0) -> list[tuple[str, str, str | None]]:
    per = {d: pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text"]).to_pylist()[skip:] for d in DOMAINS}
    out, size, i = [], 0, 0
    while size < mb * 1e6:
        for d in DOMAINS:
            rows = per[d]
            if i < len(rows) and len(rows[i]["text"]) <= 50_000:
                out.append((rows[i]["id"], rows[i]["text"], d))
                size += len(rows[i]["text"].encode())
        i += 1
    return out


def load_parquet(path: Path) -> list[tuple[str, str, str | None]]:
    """``id``/``text``/``domain`` rows of a Parquet file or folder (``domain`` None when absent)."""
    files = sorted(path.rglob("*.parquet")) if path.is_dir() else [path]
    if not files:
        sys.exit(f"error: no Parquet file under {path}")
    out: list[tuple[str, str, str | None]] = []
    for f in files:
        names = pq.read_schema(f).names
        if "id" not in names or "text" not in names:
            sys.exit(f"error: {f} has no id/text columns (columns: {names})")
        t = pq.read_table(f, columns=[c for c in ("id", "text", "domain") if c in names])
        doms = t.column("domain").to_pylist() if "domain" in names else [None] * t.num_rows
        out.extend(zip(t.column("id").to_pylist(), t.column("text").to_pylist(), doms, strict=True))
    return out


def shard_bounds(sizes: list[int], workers: int) -> list[tuple[int, int]]:
    """Contiguous [start, end) shards with about equal byte totals."""
    total, bounds, start, acc = sum(sizes), [], 0, 0
    for w in range(1, workers):
        target = total * w / workers
        end = start
        while end < len(sizes) and acc + sizes[end] <= target:
            acc += sizes[end]
            end += 1
        bounds.append((start, end))
        start = end
    bounds.append((start, len(sizes)))
    return bounds


class _DropRecorder:
    """An exclusion writer that keeps (id, reason) of every drop in memory."""

    def __init__(self) -> None:
        self.drops: list[tuple[str, str]] = []

    def __enter__(self) -> _DropRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def write(self, doc: Document, rank: int = 0) -> None:
        self.drops.append((doc.id, doc.metadata.get("filter_reason", "")))


def _make(side: str, cfg: FilterConfig) -> list:
    return datatrove_chain(cfg) if side == "datatrove" else [HeuristicFilter(cfg)]


def _run(steps: list, rows: list[tuple[str, str, str | None]], progress: str | None = None,
         ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    rec = _DropRecorder()
    for s in steps:
        s.exclusion_writer = rec
    docs = (Document(text=t, id=i, metadata={"domain": d} if d is not None else {}) for i, t, d in rows)
    if progress:
        from tqdm import tqdm

        docs = tqdm(docs, total=len(rows), desc=progress, mininterval=60, file=sys.stderr)
    stream = docs
    for s in steps:
        stream = s.run(stream, 0, 1)
    kept = [(d.id, hashlib.sha1(d.text.encode()).hexdigest()) for d in stream]
    return kept, rec.drops


def _worker(side: str, rank: int, lo: int, hi: int, cfg: FilterConfig, q: mp.Queue) -> None:
    rows = _ROWS[lo:hi]
    _run(_make(side, cfg), rows[:WARMUP_DOCS])  # loads spaCy; a separate instance, so ours starts cold
    steps = _make(side, cfg)
    c0, t0 = time.process_time(), time.time()
    kept, drops = _run(steps, rows, progress=f"{side}[{rank}]")
    q.put({"rank": rank, "start": t0, "end": time.time(), "cpu": time.process_time() - c0,
           "kept": kept, "drops": drops})


def run_side(side: str, bounds: list[tuple[int, int]], cfg: FilterConfig) -> dict:
    ctx = mp.get_context("fork")
    q: mp.Queue = ctx.Queue()
    c0 = harness.cpu_seconds()
    load0 = harness.loadavg()
    procs = [ctx.Process(target=_worker, args=(side, r, lo, hi, cfg, q)) for r, (lo, hi) in enumerate(bounds)]
    for p in procs:
        p.start()
    res = []
    for _ in procs:
        while True:
            try:
                res.append(q.get(timeout=30))
                break
            except Exception:  # queue.Empty: check that no worker died
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    for p in procs:
                        p.kill()
                    sys.exit(f"error: a {side} worker exited with code {dead[0].exitcode}")
    for p in procs:
        p.join()
    children_cpu = harness.cpu_seconds() - c0
    kept = sorted(k for r in res for k in r["kept"])
    drops = sorted(d for r in res for d in r["drops"])
    return {"wall_s": max(r["end"] for r in res) - min(r["start"] for r in res),
            "cpu_s": sum(r["cpu"] for r in res),
            "cpu_s_children": children_cpu,
            "worker_cpu_s": [round(r["cpu"], 2) for r in sorted(res, key=lambda r: r["rank"])],
            "loadavg_start": load0, "loadavg_end": harness.loadavg(),
            "n_kept": len(kept), "dropped_by_reason": dict(sorted(Counter(r for _, r in drops).items())),
            "kept": kept, "drops": drops}


def _digest(items: list[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for a, b in items:
        h.update(f"{a}\t{b}\n".encode())
    return h.hexdigest()


def compare(a: dict, o: dict) -> tuple[int, list[str]]:
    """Documents whose decision (kept + text hash, or dropped + reason) differs, with examples."""
    da = {i: ("kept", h) for i, h in a["kept"]} | {i: ("drop", r) for i, r in a["drops"]}
    do = {i: ("kept", h) for i, h in o["kept"]} | {i: ("drop", r) for i, r in o["drops"]}
    diff = sorted(i for i in da.keys() | do.keys() if da.get(i) != do.get(i))
    return len(diff), [f"{i}: datatrove {da.get(i)} vs fused {do.get(i)}" for i in diff[:10]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1.0, help="MB of shared-corpora text per round")
    ap.add_argument("--gen-dir", type=Path, default=None, help="a bench/gen_corpus.py output folder")
    ap.add_argument("--input", type=Path, default=None, help="a Parquet file or folder (id, text[, domain])")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1, help="processes per side, each on an equal shard")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    if args.workers < 1 or args.rounds < 1:
        sys.exit("error: --workers and --rounds must be >= 1")
    cfg = FilterConfig()
    if args.gen_dir is not None:
        if not (args.gen_dir / "docs").is_dir():
            sys.exit(f"error: {args.gen_dir} is not a gen_corpus output (no docs/ folder)")
        data, rows = f"gen_corpus {args.gen_dir}", load_parquet(args.gen_dir / "docs")
    elif args.input is not None:
        if not args.input.exists():
            sys.exit(f"error: {args.input} does not exist")
        data, rows = f"parquet {args.input}", load_parquet(args.input)
    else:
        data, rows = f"shared corpora, {args.mb:g} MB", load_docs(args.mb, skip=200)
    _ROWS[:] = rows
    sizes = [len(t.encode()) for _, t, _ in rows]
    nbytes = sum(sizes)
    bounds = shard_bounds(sizes, args.workers)
    print(f"{len(rows)} docs, {nbytes / 1e6:.2f} MB, {args.workers} worker(s) per side, shards "
          f"{[round(sum(sizes[lo:hi]) / 1e6, 2) for lo, hi in bounds]} MB", file=sys.stderr)
    sides: dict[str, list[dict]] = {"datatrove": [], "fused": []}
    n_diff, examples = 0, []
    for r in range(args.rounds):
        a = run_side("datatrove", bounds, cfg)
        o = run_side("fused", bounds, cfg)
        n, ex = compare(a, o)
        if n and not n_diff:
            n_diff, examples = n, ex
        for side, x in (("datatrove", a), ("fused", o)):
            x["kept_digest"], x["drops_digest"] = _digest(x.pop("kept")), _digest(x.pop("drops"))
            sides[side].append(x)
        print(f"round {r}: datatrove {a['wall_s']:.1f} s wall / {a['cpu_s']:.1f} CPU s  fused {o['wall_s']:.1f} s / "
              f"{o['cpu_s']:.1f} CPU s  ratio wall {a['wall_s'] / o['wall_s']:.2f}x CPU {a['cpu_s'] / o['cpu_s']:.2f}x"
              f"  differing decisions {n}  loadavg {a['loadavg_start']} -> {o['loadavg_end']}", file=sys.stderr)
    mb = nbytes / 1e6
    tot = {s: {k: sum(x[k] for x in v) for k in ("wall_s", "cpu_s", "cpu_s_children")} for s, v in sides.items()}
    res = {"data": data,
           "docs": len(rows), "mb": round(mb, 3), "rounds": args.rounds, "workers": args.workers,
           "kept": sides["fused"][-1]["n_kept"], "dropped_by_reason": sides["fused"][-1]["dropped_by_reason"],
           "per_side": {s: {"wall_s": round(t["wall_s"], 2), "cpu_s": round(t["cpu_s"], 2),
                            "cpu_s_children": round(t["cpu_s_children"], 2),
                            "mb_s": round(args.rounds * mb / t["wall_s"], 4),
                            "mb_s_per_cpu_s": round(args.rounds * mb / t["cpu_s"], 4)} for s, t in tot.items()},
           "ratio_wall": round(tot["datatrove"]["wall_s"] / tot["fused"]["wall_s"], 3),
           "ratio_cpu": round(tot["datatrove"]["cpu_s"] / tot["fused"]["cpu_s"], 3),
           "rounds_detail": sides, "identical": n_diff == 0, "differing_docs": n_diff, "examples": examples}
    print(json.dumps(res))
    harness.write_record("filters", res, args.json or Path(__file__).resolve().parent / "out" / "bench_filters.json")
    if n_diff:
        print(f"error: {n_diff} documents decided differently, e.g. {examples[:3]}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
