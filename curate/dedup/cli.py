"""``corpusmix curate dedup`` and its helpers ``dedup-labelled`` / ``dedup-eval``.

* ``corpusmix curate dedup --input FILE_OR_DIR --output FILE [--engine local|spark] [--threshold 0.8]``
  writes every input row plus ``dup_cluster``, ``is_duplicate``, ``dup_kind`` (Parquet, zstd) and,
  with ``--stats PATH``, a JSON of counters. ``--index-dir DIR`` persists an incremental index;
  ``--against DIR`` deduplicates the input against an earlier index (see ``incremental``).
* ``corpusmix curate dedup-labelled --corpora data/demo/en --output DIR`` builds the labelled
  near-duplicate set (``labelled``).
* ``corpusmix curate dedup-eval --labelled DIR [--ground-truth data/raw] --metrics FILE`` scores
  ours and datasketch's MinHashLSH (same permutations, threshold) and writes DVC metrics.

Every command reads the ``dedup`` section of ``--params`` (default ``params.yaml``); flags override.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from corpusmix.config import add_config_args, config_from, load_params
from corpusmix.logging import get_logger
from curate.dedup.reader import read_docs

log = get_logger("curate.dedup")


def _cfg(args: argparse.Namespace):
    from curate.dedup.config import DedupConfig

    return config_from(DedupConfig, params=load_params(args.params, "dedup"), args=args, where="params dedup")


def _run_dedup(args: argparse.Namespace) -> int:
    import pyarrow.parquet as pq

    from curate.dedup import dedup_table

    cfg = _cfg(args)
    table = read_docs(args.input)
    stats: dict = {}
    t0 = time.time()
    if args.against:
        from curate.dedup.incremental import dedup_against_index

        out = dedup_against_index(table, args.against, cfg, stats=stats)
    else:
        out = dedup_table(table, cfg, engine=cfg.engine, stats=stats)
    if args.index_dir:
        from curate.dedup.incremental import build_index

        build_index(out, args.index_dir, cfg)
    stats["seconds"] = round(time.time() - t0, 3)
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(out, args.output, compression="zstd")
    if args.stats:
        Path(args.stats).parent.mkdir(parents=True, exist_ok=True)
        Path(args.stats).write_text(json.dumps(stats, indent=2) + "\n")
    log.info("dedup written", extra={"data": {"output": str(args.output), **stats}})
    return 0


def _run_labelled(args: argparse.Namespace) -> int:
    from curate.dedup.labelled import LabelledConfig, build_labelled

    cfg = config_from(LabelledConfig, params=load_params(args.params, "dedup_labelled"), args=args,
                      where="params dedup_labelled")
    counts = build_labelled(args.corpora, args.output, cfg)
    log.info("labelled set written", extra={"data": {"output": args.output, **counts}})
    return 0


def _run_eval(args: argparse.Namespace) -> int:
    from curate.dedup.evaluate import evaluate

    metrics = evaluate(_cfg(args), labelled=args.labelled, ground_truth=args.ground_truth,
                       baseline=not args.no_baseline)
    from corpusmix import timing
    from corpusmix.environment import environment

    # per-method seconds go to the untracked dedup.timing.json: the metrics file is a DVC output (pure)
    timing.write_json(args.metrics, {**metrics, "environment": environment()})
    log.info("dedup metrics written", extra={"data": {"metrics": args.metrics}})
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from curate.dedup.config import DedupConfig
    from curate.dedup.labelled import LabelledConfig

    p = sub.add_parser("dedup", help="exact + MinHash-LSH near deduplication (local or Spark)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--input", required=True, help="Parquet/JSONL file or folder with `id` and `text`")
    p.add_argument("--output", required=True, help="output Parquet (every row + dup columns)")
    p.add_argument("--params", default="params.yaml", help="params file (section `dedup`)")
    p.add_argument("--stats", default=None, help="write counters as JSON here")
    p.add_argument("--index-dir", default=None, help="persist an incremental index of this corpus here")
    p.add_argument("--against", default=None, help="deduplicate the input against this earlier index")
    add_config_args(p, DedupConfig)
    p.set_defaults(func=_run_dedup)

    q = sub.add_parser("dedup-labelled", help="build the labelled near-duplicate set from real corpora")
    q.add_argument("--corpora", default="data/demo/en", help="folder with <domain>.parquet files (e.g. ../shared/corpora)")
    q.add_argument("--output", required=True, help="output folder (docs.parquet, pairs.parquet)")
    q.add_argument("--params", default="params.yaml", help="params file (section `dedup_labelled`)")
    add_config_args(q, LabelledConfig)
    q.set_defaults(func=_run_labelled)

    e = sub.add_parser("dedup-eval", help="pair precision/recall/F1 of dedup (and datasketch) as DVC metrics")
    e.add_argument("--labelled", default=None, help="folder written by dedup-labelled")
    e.add_argument("--ground-truth", default=None, help="demo data folder (docs/ + ground_truth.parquet)")
    e.add_argument("--metrics", required=True, help="output JSON (DVC metric)")
    e.add_argument("--params", default="params.yaml", help="params file (section `dedup`)")
    e.add_argument("--no-baseline", action="store_true", help="skip datasketch's MinHashLSH")
    add_config_args(e, DedupConfig)
    e.set_defaults(func=_run_eval)
