"""Benchmark: CPU seconds of the toxicity and PII steps alone, a baseline tree against ours.

    git worktree add /tmp/prev <commit>
    python bench/bench_chain_steps.py --input SLICE/docs --base /tmp/prev [--ours .] [--rounds 2]

``bench_chain_throughput.py`` times the whole chain; its per-step figures are wall seconds of a
shared machine. This one gives each step's own CPU time: per run, a fresh subprocess of the same
interpreter with ``PYTHONPATH`` at one tree reads the documents (untimed), imports torch (the
``corpusmix`` command imports it before any step), then times with ``time.process_time`` the
toxicity scorer and filter (``ToxicityScorer.filter_batch`` in batches of ``toxicity.batch_size``,
model loading included) and the PII step (``PIIRedactor.filter`` per document, presidio's import
and engines included) on every document (``lang`` = en). Sides alternate in every round; the
load average is printed with each run. Outputs (scores, drops, redacted text, spans) are hashed
per step: both sides must agree, else it exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import harness
from lib.chain import warm_toxicity_cache

CHILD = r'''
import hashlib, json, sys, time
import pyarrow.parquet as pq
import torch  # noqa: F401  (imported by the corpusmix command before any step)
from datatrove.data import Document
rows = [r for f in sorted(__import__("pathlib").Path(sys.argv[1]).glob("*.parquet"))
        for r in pq.read_table(f, columns=["id", "text", "domain"]).to_pylist()]
def docs():
    return [Document(text=r["text"], id=r["id"], metadata={"domain": r["domain"], "lang": "en"}) for r in rows]
def digest(ds, res):
    h = hashlib.sha256()
    for d, x in zip(ds, res):
        h.update(json.dumps([d.id, d.text, d.metadata, x], sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]
out = {}
from curate.steps.toxicity import ToxicityConfig, toxicity_steps
ds = docs()
t0 = time.process_time()
cfg = ToxicityConfig()
scorer, filt = toxicity_steps(cfg)
res = []
for i in range(0, len(ds), cfg.batch_size):
    scorer.filter_batch(ds[i:i + cfg.batch_size])
res = [filt.filter(d) for d in ds]
out["toxicity"] = {"cpu": time.process_time() - t0, "hash": digest(ds, res)}
from curate.steps.pii import PIIConfig, PIIRedactor
ds = docs()
t0 = time.process_time()
red = PIIRedactor(PIIConfig())
res = [red.filter(d) for d in ds]
out["pii"] = {"cpu": time.process_time() - t0, "hash": digest(ds, res)}
out["mb"] = sum(len(r["text"].encode()) for r in rows) / 1e6
print(json.dumps(out))
'''


def run_once(tree: Path, inp: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    proc, _ = harness.run_child([sys.executable, "-c", CHILD, str(inp)], cwd=tree, env=env, capture_output=True,
                                text=True)
    if proc.returncode != 0:
        raise SystemExit(f"step run failed in {tree} (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, type=Path, help="folder of Parquet documents (id, text, domain)")
    ap.add_argument("--base", required=True, type=Path, help="work tree of the baseline commit")
    ap.add_argument("--ours", type=Path, default=Path(__file__).resolve().parents[1])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    sides = {"base": args.base.resolve(), "ours": args.ours.resolve()}
    warm_toxicity_cache(sides.values())  # as an earlier run on the machine would have built it
    runs: dict[str, list[dict]] = {"base": [], "ours": []}
    for r in range(args.rounds):
        for name in harness.order(r, ("base", "ours")):
            load = harness.loadavg()
            res = run_once(sides[name], args.input)
            res["load"] = load
            runs[name].append(res)
            print(f"round {r} {name}: toxicity {res['toxicity']['cpu']:.1f} CPU-s, pii {res['pii']['cpu']:.1f} CPU-s "
                  f"({res['mb']:.1f} MB, load {load}, hashes {res['toxicity']['hash']}/{res['pii']['hash']})",
                  flush=True)
    ok = True
    for step in ("toxicity", "pii"):
        cpu = {k: sum(x[step]["cpu"] for x in v) for k, v in runs.items()}
        mb = runs["ours"][0]["mb"] * args.rounds
        hashes = {x[step]["hash"] for v in runs.values() for x in v}
        ok &= len(hashes) == 1
        print(f"{step:9s} base {mb / cpu['base']:.3f} MB/s, ours {mb / cpu['ours']:.3f} MB/s per core: "
              f"{cpu['base'] / cpu['ours']:.2f}x; identical outputs: {len(hashes) == 1}")
    print(f"load average at the end: {harness.loadavg()}")
    harness.write_record("chain_steps", {"commits": {k: harness.commit(v) for k, v in sides.items()}, **runs},
                         Path(__file__).resolve().parent / "out" / "bench_chain_steps.json")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
