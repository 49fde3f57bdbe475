"""``corpusmix curate run --engine spark [--master URL]``: the Spark engine behind the ``run`` command.

The ``run`` subcommand belongs to the local engine (``curate/engine_local.py``); this module,
listed after it in ``curate/cli.py``, adds ``--engine`` and ``--master`` to that parser and routes
``--engine spark`` to :func:`curate.engine_spark.run_spark` with the same chain (same params,
same step objects). ``--engine local`` (the default) runs the local engine unchanged. Spark
settings come from the ``spark`` section of ``params.yaml``; ``--master`` overrides its master.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

ENGINES = ("local", "spark")


def run_with_spark(args: argparse.Namespace) -> dict[str, Any]:
    """The ``curate run`` arguments, on Spark; returns the stats document."""
    from corpusmix.config import config_from, load_params
    from curate.engine_local import EngineConfig
    from curate.engine_spark import SparkConfig, run_spark
    from curate.io import ReadConfig
    from curate.spark_submit import chain_from_params

    params = load_params(args.params, "spark")
    if getattr(args, "master", None):
        params = {**params, "master": args.master}
    cfg = config_from(SparkConfig, params=params, where="params.yaml section spark")
    engine_cfg = config_from(EngineConfig, params=load_params(args.params, "curate.engine"), args=args,
                             where="curate.engine")
    steps, dedup, after = chain_from_params(args.params, engine_cfg=engine_cfg)
    read_cfg = config_from(ReadConfig, params=load_params(args.params, "curate.read"), where="curate.read")
    from curate.calibrate import CalibrateConfig

    ccfg = config_from(CalibrateConfig, params=load_params(args.params, "curate.calibrate"), where="curate.calibrate")
    return run_spark(inputs=[str(args.input)], output=str(args.output), steps=steps, dedup=dedup,
                     steps_after=after, cfg=cfg, read_cfg=read_cfg, calibrate_cfg=ccfg)


def _dispatch(local_func: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        if getattr(args, "engine", "local") == "spark":
            doc = run_with_spark(args)
            print(json.dumps(doc["totals"]))
            return 0
        return local_func(args)

    return run


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.choices.get("run")
    if run is None:  # the local engine's command is absent: offer the Spark engine on its own
        run = sub.add_parser("spark-run", help="run the configured curation chain on Spark")
        run.add_argument("--input", required=True, help="Parquet/JSONL file or folder (any Spark URI)")
        run.add_argument("--output", required=True, help="output folder (curated/, drops.parquet, stats.json)")
        run.add_argument("--params", default="params.yaml", help="params file")
        run.set_defaults(func=lambda a: (print(json.dumps(run_with_spark(a)["totals"])), 0)[1], engine="spark")
        run.add_argument("--master", default=None, help="Spark master (default: params.yaml spark.master)")
        return
    run.add_argument("--engine", choices=ENGINES, default="local",
                     help="local: datatrove on this machine; spark: Spark (see docs/spark.md)")
    run.add_argument("--master", default=None,
                     help="Spark master for --engine spark: local[*], local[N,F], spark://HOST:PORT, yarn, k8s://... "
                          "(default: params.yaml spark.master)")
    run.set_defaults(func=_dispatch(run.get_default("func")))
