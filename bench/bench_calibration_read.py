"""The calibration pass's read of the whole input: one reader vs several processes vs Spark executors.

    python bench/bench_calibration_read.py --input GEN/docs [--workers 1,2] [--spark local[2]] [--rounds 2]

Before any task, ``curate.calibrate`` reads every record of the input for its per-domain sample
(the ``max_docs_per_domain`` smallest ``sha1(id)``) and the documents per domain. This times that
read, and only it (``curate.calibrate.sample_input``; the fit on the sample is bounded by the
sample and not timed): with one reader (what every engine did), with N processes
(``workers=N``: the local engine's), and, with ``--spark``, on the executors of a Spark session
(``curate.spark.engine.sample_on_executors``, two passes). Each result is checked against the
one-reader sample (same documents in the same order, same counts). Rounds alternate the ways.
Prints wall and CPU seconds, MB/s of text and the ratio to one reader.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="Parquet/JSONL file or folder (e.g. a gen_corpus.py docs/)")
    ap.add_argument("--workers", default="1,2", help="comma-separated process counts (1 = one reader)")
    ap.add_argument("--spark", default="", help="also on this Spark master's executors (e.g. local[2])")
    ap.add_argument("--max-docs", type=int, default=1000, help="curate.calibrate.max_docs_per_domain")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from curate import docio as cio
    from curate.calibrate import sample_input

    files = cio.list_input_files(args.input)
    mb = sum(pc.sum(pc.binary_length(pq.read_table(f, columns=["text"]).column("text"))).as_py() or 0
             for f in files if f.name.endswith(cio.PARQUET_SUFFIXES)) / 1e6
    units = cio.list_units(files, cio.ReadConfig().jsonl_split_bytes)
    print(f"input {args.input}: {len(files)} files, {len(units)} units, {mb:.1f} MB of Parquet text; "
          f"load {harness.load1():.2f}", flush=True)
    ways: list[tuple[str, object]] = [(f"{n} process{'es' if n > 1 else ''}", n)
                                      for n in (int(x) for x in args.workers.split(","))]
    spark = df = None
    if args.spark:
        from curate.spark.engine import SparkConfig, get_session, sample_on_executors
        from curate.spark.read import read_documents

        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        spark = get_session(SparkConfig(master=args.spark, conf={"spark.ui.enabled": "false"}))
        df = read_documents(spark, [args.input])
        sample_on_executors(spark, df, None, 1)  # warm: Python workers started, code shipped
        ways.append((f"Spark {args.spark} executors", "spark"))
    ref = None
    results: dict[str, list[tuple[float, float]]] = {w: [] for w, _ in ways}
    for r in range(args.rounds):
        for name, how in harness.order(r, ways):
            c0, t0 = harness.cpu_all(), time.perf_counter()
            if how == "spark":
                got = sample_on_executors(spark, df, None, args.max_docs)
            else:
                got = sample_input([args.input], cio.ReadConfig(), args.max_docs, units=units, workers=int(how),
                                   parallel_min_bytes=0)
            wall, cpu = time.perf_counter() - t0, harness.cpu_all() - c0
            key = ({d: [x.id for x in v] for d, v in got[0].items()}, got[1])
            ref = ref or key
            same = key == ref
            results[name].append((wall, cpu))
            print(f"round {r} {name}: wall {wall:.2f} s, CPU {cpu:.2f} s (driver side only for Spark), "
                  f"{mb / wall:.1f} MB/s, same sample as the first: {same}", flush=True)
            if not same:
                return 1
    base = min(w for w, _ in results[ways[0][0]])
    print("\n| way | best wall s | MB/s | vs one reader |")
    for name, _ in ways:
        w = min(x for x, _ in results[name])
        print(f"| {name} | {w:.2f} | {mb / w:.1f} | {base / w:.2f}x |")
    if spark is not None:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
