"""Benchmark: the whole default curation chain per core, a baseline commit against the working tree.

    git worktree add /tmp/base 284cafe
    python bench/gen_corpus.py --out /tmp/gen100 --mb 100
    python bench/bench_chain_throughput.py --input /tmp/gen100/docs --base /tmp/base \
        --models out/models [--mb 20] [--rounds 2]

Both sides run ``corpusmix curate run`` (the local engine, ``--tasks 1 --workers 1``: one process,
one core) on the same input, each as a fresh subprocess of the same interpreter with ``PYTHONPATH``
pointing at its own tree and its own ``params.yaml`` (the chain of ``curate.engine.steps``:
normalize, decontam, langid, filters, toxicity, quality with ``--models``, dedup, pii), alternating
base/ours in every round. ``--mb`` takes the first documents of the input up to that many MB of
text (a slice written once next to the outputs); 0 takes everything.

Per run it records the CPU seconds of the process (user + system; with one worker, the core's
time), the wall seconds, and each step's own seconds from ``stats.json`` (or its timing side file
``stats.timing.json``, where the tree writes one). It prints MB/s per core
for the whole chain (input MB / CPU seconds) and for each step (the step's input MB / its
seconds), the ratios ours/base, each step's share of the run's wall time (one process: under an
even load, about its share of the CPU) and the share outside the steps (start-up, calibration,
merge), and the load average before each run.

The toxicity weights cache of a tree that has one (``curate.steps.toxicity_linear``) is built
before the timed runs, as any earlier run on the machine would have built it.

Decisions must be identical: for every run it hashes the kept output (every row of
``curated/*.parquet``, all columns, in file order) and ``drops.parquet`` (id, step, reason,
domain; as a set of rows); all runs of both sides must give the same two hashes, else it says which differ and
exits 1. With ``--decisions-may-differ`` (a tree whose rules decide differently by design) each
side's runs must agree among themselves, and the kept count of each side is printed. Results go to ``bench/out/bench_chain_throughput.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import harness
import pyarrow as pa
import pyarrow.parquet as pq
from lib.chain import warm_toxicity_cache

ROOT = Path(__file__).resolve().parent.parent


def make_slice(src: Path, mb: float, dest: Path) -> Path:
    """The first documents of ``src`` (file order, row order) up to ``mb`` MB of UTF-8 text."""
    out = dest / f"slice_{mb:g}mb" / "docs"
    if (out / "part-00000.parquet").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    files = sorted(src.glob("*.parquet")) if src.is_dir() else [src]
    budget, tables = mb * 1e6, []
    for f in files:
        t = pq.read_table(f)
        sizes = [len(s.encode()) for s in t.column("text").to_pylist()]
        take = 0
        while take < len(sizes) and budget > 0:
            budget -= sizes[take]
            take += 1
        tables.append(t.slice(0, take))
        if budget <= 0:
            break
    tmp = out / "part-00000.parquet.tmp"
    pq.write_table(pa.concat_tables(tables), tmp, compression="zstd", row_group_size=1000)
    tmp.rename(out / "part-00000.parquet")
    return out


def table_hash(path: Path, columns: list[str] | None = None, any_order: bool = False) -> str:
    """sha256 over the rows of Parquet files (all columns or ``columns``), in file and row order, or
    with ``any_order`` over the sorted rows (the same set of rows in any order hashes the same)."""
    h = hashlib.sha256()
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    for f in files:
        t = pq.read_table(f, columns=columns)
        h.update(f.name.encode())
        h.update(json.dumps(t.schema.names).encode())
        rows = [json.dumps(row, sort_keys=True, default=str) for row in t.to_pylist()]
        for row in sorted(rows) if any_order else rows:
            h.update(row.encode())
    return h.hexdigest()[:16]


def run_once(tree: Path, inp: Path, models: Path, out: Path) -> dict:
    shutil.rmtree(out, ignore_errors=True)  # a finished run left there would make this one a no-op
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-c", "from corpusmix.cli import main; import sys; sys.exit(main())",
           "curate", "run", "--input", str(inp), "--output", str(out), "--params", str(tree / "params.yaml"),
           "--quality-models-dir", str(models), "--tasks", "1", "--workers", "1"]
    proc, m = harness.run_child(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"curate run failed in {tree} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    stats = json.loads((out / "stats.json").read_text())
    # step seconds: in stats.json (older trees) or in its timing side file (stats.timing.json)
    timing_file = out / "stats.timing.json"
    timing = json.loads(timing_file.read_text()).get("steps", {}) if timing_file.exists() else {}
    steps = {}
    for name, s in stats["steps"].items():
        secs = s.get("seconds") or timing.get(name, {}).get("seconds")
        if secs:
            steps[name] = {"mb_in": s["bytes_in"] / 1e6, "seconds": secs}
    return {"cpu": m["cpu_s_children"], "wall": m["wall_s"], "load": m["loadavg_start"],
            "steps": steps, "kept_hash": table_hash(out / "curated"),
            # the drops as a set: trees before curate.runner's input-order outcomes wrote them in
            # decision order
            "drops_hash": table_hash(out / "drops.parquet", ["id", "step", "reason", "domain"], any_order=True),
            "kept": stats["totals"].get("kept")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, type=Path, help="folder of Parquet documents (gen_corpus.py docs/)")
    ap.add_argument("--base", required=True, type=Path, help="work tree of the baseline commit")
    ap.add_argument("--ours", type=Path, default=ROOT, help="work tree measured against it (default: this one)")
    ap.add_argument("--models", required=True, type=Path, help="quality models folder (train-quality output)")
    ap.add_argument("--mb", type=float, default=0.0, help="first MB of text of the input (0 = all)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "bench_chain_throughput")
    ap.add_argument("--decisions-may-differ", action="store_true",
                    help="the trees decide differently by design (new rules): each side's runs must still agree "
                         "among themselves; the kept count of each side is reported")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    inp = make_slice(args.input, args.mb, args.work) if args.mb else args.input
    mb = sum(len(s.encode()) for f in sorted(inp.glob("*.parquet"))
             for s in pq.read_table(f, columns=["text"]).column("text").to_pylist()) / 1e6
    print(f"input {inp}: {mb:.1f} MB of text", flush=True)
    sides = {"base": args.base.resolve(), "ours": args.ours.resolve()}
    warm_toxicity_cache(sides.values())
    runs: dict[str, list[dict]] = {"base": [], "ours": []}
    for r in range(args.rounds):
        for name in harness.order(r, ("base", "ours")):
            res = run_once(sides[name], inp, args.models.resolve(), args.work / f"out_{name}_{r}")
            runs[name].append(res)
            print(f"round {r} {name}: {mb / res['cpu']:.3f} MB/s per core ({res['cpu']:.1f} CPU-s, "
                  f"wall {res['wall']:.1f} s, load {res['load']}, kept {res['kept']}, "
                  f"hashes {res['kept_hash']}/{res['drops_hash']})", flush=True)
    summary: dict = {"mb": round(mb, 2), "rounds": args.rounds, "input": str(inp),
                     "commits": {k: harness.commit(v) for k, v in sides.items()}, "runs": runs}
    cpu = {k: sum(x["cpu"] for x in v) for k, v in runs.items()}
    chain = {k: mb * args.rounds / cpu[k] for k in runs}
    summary["chain_mb_per_s_per_core"] = {k: round(v, 3) for k, v in chain.items()}
    summary["chain_ratio"] = round(chain["ours"] / chain["base"], 3)
    per_step: dict = {}
    names = list(dict.fromkeys(n for v in runs.values() for x in v for n in x["steps"]))
    walls = {k: sum(x["wall"] for x in v) for k, v in runs.items()}
    print(f"\n{'step':18s} {'base MB/s':>10s} {'ours MB/s':>10s} {'ratio':>7s}   (s/MB of chain input: base, ours;"
          f" share of the run's wall time: base, ours)")
    for n in names:
        rate, share = {}, {}
        for k, v in runs.items():
            secs = sum(x["steps"].get(n, {}).get("seconds", 0.0) for x in v)
            mbs = sum(x["steps"].get(n, {}).get("mb_in", 0.0) for x in v)
            rate[k] = mbs / secs if secs else float("nan")
            share[k] = secs / (mb * args.rounds)
        wall_share = {k: share[k] * mb * args.rounds / walls[k] for k in runs}
        per_step[n] = {"mb_per_s": {k: round(x, 3) for k, x in rate.items()},
                       "s_per_chain_mb": {k: round(x, 4) for k, x in share.items()},
                       "wall_share": {k: round(x, 4) for k, x in wall_share.items()},
                       "ratio": round(rate["ours"] / rate["base"], 3) if rate["base"] == rate["base"] else None}
        print(f"{n:18s} {rate['base']:10.3f} {rate['ours']:10.3f} {per_step[n]['ratio'] or 0:7.2f}   "
              f"({share['base']:.3f}, {share['ours']:.3f}; {wall_share['base']:5.1%}, {wall_share['ours']:5.1%})")
    # one process: the wall time outside the steps is start-up (imports, models), the calibration
    # (langid and statistics of the sample), the global dedup phase and the merge
    outside = {k: 1.0 - sum(v["wall_share"][k] for v in per_step.values()) for k in runs}
    summary["outside_steps_wall_share"] = {k: round(x, 4) for k, x in outside.items()}
    print(f"{'outside steps':18s} {'':10s} {'':10s} {'':7s}   (start-up, calibration, merge: "
          f"{outside['base']:5.1%}, {outside['ours']:5.1%} of the wall time)")
    summary["steps"] = per_step
    print(f"{'whole chain':18s} {chain['base']:10.3f} {chain['ours']:10.3f} {summary['chain_ratio']:7.2f}   "
          f"({args.rounds / chain['base'] / args.rounds:.3f}, {1 / chain['ours']:.3f} CPU-s/MB)")
    if args.decisions_may_differ:  # every side reproduces itself; the sides may differ
        per_side = {k: {(x["kept_hash"], x["drops_hash"]) for x in v} for k, v in runs.items()}
        summary["kept"] = {k: v[0]["kept"] for k, v in runs.items()}
        print(f"kept documents per side: {summary['kept']}")
        hashes = set().union(*per_side.values()) if all(len(h) == 1 for h in per_side.values()) else {None, 0}
        summary["identical_decisions"] = all(len(h) == 1 for h in per_side.values())
    else:
        hashes = {(x["kept_hash"], x["drops_hash"]) for v in runs.values() for x in v}
        summary["identical_decisions"] = len(hashes) == 1
    summary["loadavg_end"] = harness.loadavg()
    print(f"identical decisions (kept output and drops, every run): {summary['identical_decisions']}")
    harness.write_record("chain_throughput", summary, ROOT / "bench" / "out" / "bench_chain_throughput.json",
                         row=["chain throughput", f"{chain['ours']:.3f} MB/s per core", f"x{summary['chain_ratio']}",
                             f"{args.rounds} rounds, {mb:.1f} MB"])
    if not summary["identical_decisions"]:
        print(f"DECISIONS DIFFER: {sorted(hashes)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
