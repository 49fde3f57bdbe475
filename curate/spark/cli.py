"""``corpusmix curate run --engine spark [--master URL]``: the Spark side of the ``run`` command.

``curate run`` (``curate/run_cli.py``) reads ``params.yaml`` once and dispatches on
``--engine``: ``local`` runs :func:`curate.engine_local.run_local`, ``spark`` calls
:func:`run_with_spark` here, which runs :func:`curate.spark.engine.run_spark` with the same chain
(same typed configs, same step objects, ``curate.chain``). Spark settings come from the ``spark``
section of the params; ``--master`` overrides its master.
"""

from __future__ import annotations

import argparse
from typing import Any

from corpusmix.config import config_from, load_params
from curate.chain import ChainConfig, build_steps, section


def run_with_spark(args: argparse.Namespace, *, chain: ChainConfig | None = None,
                   params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ``curate run`` arguments on Spark; returns the stats document.

    ``params`` (the loaded params file) and ``chain`` (its typed chain) come from the command's edge;
    when absent they are read from ``args.params``.
    """
    from curate.spark.engine import SparkConfig, run_spark

    params = load_params(args.params) if params is None else params
    chain = chain or ChainConfig.from_params(params, params_path=str(args.params))
    spark_params = section(params, "spark")
    if getattr(args, "master", None):
        spark_params["master"] = args.master
    cfg = config_from(SparkConfig, params=spark_params, where="params.yaml section spark")
    return run_spark(inputs=[str(args.input)], output=str(args.output), steps=build_steps(chain, stage="a"),
                     dedup=chain.dedup, steps_after=build_steps(chain, stage="b"), cfg=cfg, read_cfg=chain.read,
                     calibrate_cfg=chain.calibrate, inspect_cfg=chain.inspect)
