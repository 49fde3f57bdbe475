"""``corpusmix curate calibrate``: the calibration of ``curate.calibrate``, written without curating."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from corpusmix.config import ConfigError, add_config_args, config_from, load_params
from curate import calibrate as cal
from curate.calibrate import CalibrateConfig, calibrate_steps


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="choose per-domain thresholds on the input and write them (JSON)",
                       description=cal.__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True, help="Parquet/JSONL file or folder (the raw input of `curate run`)")
    p.add_argument("--output", required=True, help="calibration JSON to write")
    p.add_argument("--params", default="params.yaml", help="params file (sections curate.*)")
    add_config_args(p, CalibrateConfig)

    def _cmd(args: argparse.Namespace) -> int:
        from curate.chain import ChainConfig, build_steps, section

        params = load_params(args.params)  # read once, here
        cfg = config_from(CalibrateConfig, params=section(params, "curate.calibrate"), args=args,
                          where="curate.calibrate")
        cfg.file = ""  # this command always calibrates
        chain = ChainConfig.from_params(params, params_path=str(args.params))
        doc = calibrate_steps(build_steps(chain, stage="a"), inputs=[args.input], read_cfg=chain.read, cfg=cfg,
                              workers=chain.engine.workers)
        if doc is None:
            raise ConfigError("no step of curate.engine.steps needs a calibration (profile web, per_domain off)")
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(out)
        print(json.dumps({"output": str(out), "domains": doc["domain_docs"]}))
        return 0

    p.set_defaults(func=_cmd)
