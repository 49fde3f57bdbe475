"""``corpusmix curate run``: the configured curation chain on the local engine (datatrove) or on Spark.

The command reads ``params.yaml`` once into a ``curate.chain.ChainConfig`` and ``--engine`` picks the
engine that runs it: ``local`` (:func:`curate.engine_local.run_local`) or ``spark``
(:func:`curate.spark.cli.run_with_spark`, same chain).
"""

from __future__ import annotations

import argparse
import json

from corpusmix.config import add_config_args, config_from, load_params
from curate.chain import ChainConfig, EngineConfig, section
from curate.engine_local import run_local

ENGINES = ("local", "spark")


def _cmd(args: argparse.Namespace) -> int:
    """``curate run``: params read once here; ``--engine`` picks the engine that runs the chain."""
    params = load_params(args.params)
    engine = config_from(EngineConfig, params=section(params, "curate.engine"), args=args, where="curate.engine")
    chain = ChainConfig.from_params(params, engine=engine, params_path=str(args.params))
    if args.engine == "spark":
        from curate.spark.cli import run_with_spark  # imports Spark only when asked for

        doc = run_with_spark(args, chain=chain, params=params)
    else:
        doc = run_local(inputs=args.input, output=args.output, chain=chain)
    print(json.dumps(doc["totals"]))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run the configured curation chain (datatrove locally, or Spark)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True, help="Parquet/JSONL(.gz/.zst) file or folder (any Spark URI with --engine spark)")
    p.add_argument("--output", required=True, help="output folder (curated/, drops.parquet, stats.json)")
    p.add_argument("--params", default="params.yaml", help="params file (sections curate.*, dedup, pii, quality)")
    p.add_argument("--engine", choices=ENGINES, default="local",
                   help="local: datatrove on this machine; spark: Spark (see docs/spark.md)")
    p.add_argument("--master", default=None,
                   help="Spark master for --engine spark: local[*], local[N,F], spark://HOST:PORT, yarn, k8s://... "
                        "(default: params.yaml spark.master)")
    add_config_args(p, EngineConfig)
    p.set_defaults(func=_cmd)
