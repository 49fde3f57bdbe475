"""Spark engine (``local[2]``) vs the local engine on the shared corpora, alternately, same chain.

    python bench/bench_spark.py [--per-domain 150] [--rounds 2] [--no-dedup]

Input: the first ``--per-domain`` documents of each English domain of ``/work/shared/corpora``
(``$CORPUSMIX_CORPORA``). Both engines run the chain of ``params.yaml`` (normalize, langid,
filters, dedup, pii; quality when its models are configured). Rounds alternate local, Spark, local,
Spark, ... in one process; one Spark session serves every Spark round (its start is timed
separately). Prints per round the wall seconds and, for Spark, where the time goes: session start,
each phase's wall time (stage a, dedup shuffles, stage b, writes) against the seconds the steps
themselves spent in the Python workers; the rest of a stage is Spark's overhead (task scheduling,
Arrow transfer into Python workers, materialisation). Also checks that both give the same kept ids.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DOMAINS = ("code", "legal", "literature", "news", "quotes", "reference", "techdocs")


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


def kept_ids(out: Path) -> set[str]:
    return {i for p in (out / "curated").glob("*.parquet") for i in pq.read_table(p, columns=["id"]).column("id").to_pylist()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-domain", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--no-dedup", action="store_true", help="leave global dedup out of both chains")
    args = ap.parse_args()
    corpora = Path(os.environ.get("CORPUSMIX_CORPORA", "/work/shared/corpora"))
    if not (corpora / "reference.parquet").exists():
        print(f"shared corpora not found at {corpora}; set CORPUSMIX_CORPORA", file=sys.stderr)
        return 2

    from corpusmix.config import config_from, load_params
    from curate.engine_local import EngineConfig, run_local
    from curate.engine_spark import SparkConfig, get_session, run_spark
    from curate.spark_submit import chain_from_params

    tmp = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    n_docs = build_input(corpora, tmp / "in", args.per_domain)
    mb = sum(p.stat().st_size for p in (tmp / "in").glob("*.parquet")) / 1e6
    ecfg = config_from(EngineConfig, params=load_params(args.params, "curate.engine"), where="curate.engine")
    if args.no_dedup:
        ecfg.steps = [s for s in ecfg.steps if s != "dedup"]
    ecfg.workers, ecfg.tasks, ecfg.keep_work = 2, 2, False
    steps, dedup, after = chain_from_params(args.params, engine_cfg=ecfg)
    print(f"input: {n_docs} documents ({mb:.2f} MB Parquet), chain: {[s.step_name for s in steps]}"
          f"{' + dedup' if dedup else ''} + {[s.step_name for s in after]}; local engine: 2 workers, "
          f"Spark: {args.master}", flush=True)

    t0 = time.perf_counter()
    spark = get_session(SparkConfig(master=args.master, conf={"spark.ui.enabled": "false"}))
    spark.range(4).count()  # the first job starts the Python worker daemon
    session_s = time.perf_counter() - t0
    print(f"spark session start: {session_s:.1f} s", flush=True)

    local_s, spark_s, phases, steps_py = [], [], [], []
    ids = {}
    for r in range(args.rounds):
        out = tmp / f"local-{r}"
        t = time.perf_counter()
        run_local(inputs=tmp / "in", output=out, params_path=args.params, cfg=ecfg)
        local_s.append(time.perf_counter() - t)
        ids["local"] = kept_ids(out)
        shutil.rmtree(out)
        out = tmp / f"spark-{r}"
        t = time.perf_counter()
        doc = run_spark(inputs=[str(tmp / "in")], output=str(out), steps=steps, dedup=dedup, steps_after=after,
                        spark=spark)
        spark_s.append(time.perf_counter() - t)
        ids["spark"] = kept_ids(out)
        shutil.rmtree(out)
        phases.append(doc["engine"]["phases"])
        steps_py.append({k: v["seconds"] for k, v in doc["steps"].items()})
        print(f"round {r}: local {local_s[-1]:.1f} s, spark {spark_s[-1]:.1f} s "
              f"(ratio {spark_s[-1] / local_s[-1]:.2f}); spark phases {json.dumps(phases[-1])}; "
              f"step seconds in Python workers {json.dumps(steps_py[-1])}", flush=True)
    spark.stop()
    same = ids["local"] == ids["spark"]
    ml, ms = statistics.median(local_s), statistics.median(spark_s)
    print(f"\nsame kept ids: {same} ({len(ids['local'])} kept of {n_docs})")
    print(f"median wall: local {ml:.1f} s, spark {ms:.1f} s (+ {session_s:.1f} s session start): "
          f"spark/local = {ms / ml:.2f}x ({(ms + session_s) / ml:.2f}x with the session start)")
    last_p, last_s = phases[-1], steps_py[-1]
    a_py = sum(v for k, v in last_s.items() if k not in ("dedup", "pii"))
    # stats' dedup seconds = verdict application (stage b) + the global shuffles
    b_py = last_s.get("pii", 0.0) + last_s.get("dedup", 0.0) - last_p.get("dedup_shuffles", 0.0)
    print(f"where Spark's time goes (last round): stage a {last_p.get('stage_a', 0):.1f} s wall vs "
          f"{a_py:.1f} s in the steps (summed over the Python workers); dedup shuffles {last_p.get('dedup_shuffles', 0):.1f} s; stage b "
          f"{last_p.get('stage_b', 0):.1f} s wall vs {b_py:.1f} s in the steps; writes {last_p.get('write', 0):.1f} s")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
