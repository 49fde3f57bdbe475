"""``corpusmix scale sweep|fit|predict``: plan the big run from small ones.

    corpusmix scale sweep   --data out/pools --mixture out/mix/mixture.json --tokenizer out/tokenizer/tokenizer.json \\
                            --out out/scale                      # the grid of small `corpusmix train` runs
    corpusmix scale fit     --sweep out/scale/sweep.json --output out/scale/fit.json [--form per_d|kaplan|hoffmann|auto]
    corpusmix scale check   --sweep out/scale/sweep.json         # each size / the largest D predicted from the rest
    corpusmix scale predict --fit out/scale/fit.json --flops 1e15 --output out/scale/prediction.json
    corpusmix scale predict --fit out/scale/fit.json --params 2e6 --tokens 4e7

Parameters come from ``params.yaml`` (``scale.sweep``, ``scale.fit``, ``scale.predict``); flags override
them. The law, the frontier and the intervals are described in :mod:`proxytrain.scaling_fit`, the runs in
:mod:`proxytrain.scaling_sweep`, the method and measured accuracy in docs/scaling.md.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpusmix.config import ConfigError, add_config_args, config_from, load_params
from corpusmix.logging import get_logger

log = get_logger("proxytrain.scale_cli")


@dataclass
class PredictConfig:
    """``corpusmix scale predict`` (``params.yaml``: ``scale.predict``)."""

    fit: str = field(default="out/scale/fit.json", metadata={"help": "fit.json written by `scale fit`"})
    flops: float = field(default=0.0, metadata={"help": "compute budget C = 6ND: predict at the optimal N, D"})
    params: float = field(default=0.0, metadata={"help": "or: non-embedding parameters N (with --tokens)"})
    tokens: float = field(default=0.0, metadata={"help": "training tokens D (with --params)"})
    output: str = field(default="", metadata={"help": "prediction JSON to write (empty = stdout only)"})


def register(sub: argparse._SubParsersAction) -> None:
    from proxytrain.scaling_fit.config import FitConfig
    from proxytrain.scaling_sweep import SweepConfig

    p = sub.add_parser("scale", help="scaling laws from small runs: sweep, fit, predict the big run",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ss = p.add_subparsers(dest="scale_command", metavar="SCALE_COMMAND")
    sw = ss.add_parser("sweep", help="train the grid of small runs (cached, resumable, parallel)")
    sw.add_argument("--params", default="params.yaml", help="params file; its scale.sweep section is read")
    add_config_args(sw, SweepConfig)
    sw.set_defaults(func=run_sweep_cmd)
    ft = ss.add_parser("fit", help="fit L(N, D), the compute-optimal frontier and the lr law")
    ft.add_argument("--params", default="params.yaml", help="params file; its scale.fit section is read")
    ft.add_argument("--sweep", action="append", required=True, help="sweep.json (repeatable)")
    ft.add_argument("--output", required=True, help="fit.json to write")
    add_config_args(ft, FitConfig)
    ft.set_defaults(func=run_fit_cmd)
    ck = ss.add_parser("check", help="design check: each size, and the largest D, predicted from the other runs")
    ck.add_argument("--params", default="params.yaml", help="params file; its scale.fit section is read")
    ck.add_argument("--sweep", action="append", required=True, help="sweep.json (repeatable)")
    ck.add_argument("--output", default="", help="checks JSON to write (empty = stdout only)")
    add_config_args(ck, FitConfig)
    ck.set_defaults(func=run_check_cmd)
    pr = ss.add_parser("predict", help="loss with an interval and the recommended N, D, lr, batch")
    pr.add_argument("--params-file", dest="params_file", default="params.yaml",
                    help="params file; its scale.predict section is read")
    add_config_args(pr, PredictConfig)
    pr.set_defaults(func=run_predict_cmd)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def run_sweep_cmd(args: argparse.Namespace) -> int:
    from proxytrain.scaling_sweep import SweepConfig, run_sweep

    cfg = config_from(SweepConfig, params=load_params(args.params, "scale.sweep"), args=args, where="scale.sweep")
    result = run_sweep(cfg)
    print(json.dumps({"sweep": str(Path(cfg.out) / "sweep.json"), **result["cost"]}))
    return 0


def read_runs(paths: list[str]) -> list[dict[str, Any]]:
    """Every run of the given sweep.json files (a clear error for a missing or foreign file)."""
    runs: list[dict[str, Any]] = []
    for p in paths:
        if not Path(p).is_file():
            raise ConfigError(f"--sweep {p} does not exist: run `corpusmix scale sweep` first")
        data = json.loads(Path(p).read_text())
        if not isinstance(data, dict) or "runs" not in data:
            raise ConfigError(f"--sweep {p} is not a sweep.json (no 'runs' list)")
        runs += data["runs"]
    return runs


def run_fit_cmd(args: argparse.Namespace) -> int:
    from proxytrain.scaling_fit.config import FitConfig, FitError
    from proxytrain.scaling_fit.fit import fit_scaling

    cfg = config_from(FitConfig, params=load_params(args.params, "scale.fit"), args=args, where="scale.fit")
    runs = read_runs(args.sweep)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit = fit_scaling(runs, cfg)
        except FitError as exc:
            print(f"corpusmix scale fit: error: {exc}", file=sys.stderr)
            return 2
    for w in caught:
        log.warning(str(w.message))
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fit, indent=1, sort_keys=True))
    summary = {"form": fit["form"], "constants": fit["constants"], "intervals": fit["intervals"], "rmse_log": fit["rmse_log"],
               "lr_law": fit["lr_law"], "drops": fit["drops"], "output": str(out)}
    print(json.dumps(summary))
    return 0


def run_check_cmd(args: argparse.Namespace) -> int:
    from proxytrain.scaling_fit.auto import compare_forms
    from proxytrain.scaling_fit.checks import design_checks
    from proxytrain.scaling_fit.config import FitConfig, FitError

    cfg = config_from(FitConfig, params=load_params(args.params, "scale.fit"), args=args, where="scale.fit")
    try:
        if cfg.form == "auto":  # both forms' checks, and the one auto picks
            both = compare_forms(read_runs(args.sweep), cfg)
            _write_json(args.output, both)
            print(json.dumps({"chosen": both["chosen"], "scores": both["scores"],
                              **{f: _check_summary(c) for f, c in both["checks"].items()}}))
            return 0
        checks = design_checks(read_runs(args.sweep), cfg)
    except FitError as exc:
        print(f"corpusmix scale check: error: {exc}", file=sys.stderr)
        return 2
    _write_json(args.output, checks)
    print(json.dumps(_check_summary(checks)))
    return 0


def _write_json(path: str | None, doc: dict[str, Any]) -> None:
    """``doc`` as indented, key-sorted JSON at ``path`` (its folder made); nothing when no path."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True))


def _check_summary(checks: dict[str, Any]) -> dict[str, Any]:
    return {"form": checks["form"], "score": checks["score"],
            "leave_one_size_out": {f["left_out"]: f.get("signed_error_pct", f.get("error"))
                                   for f in checks["leave_one_size_out"]},
            "leave_largest_d_out": checks["leave_largest_d_out"].get(
                "signed_error_pct", checks["leave_largest_d_out"].get("error", checks["leave_largest_d_out"].get(
                    "skipped")))}


def run_predict_cmd(args: argparse.Namespace) -> int:
    from proxytrain.scaling_fit.config import FitError
    from proxytrain.scaling_fit.fit import predict

    cfg = config_from(PredictConfig, params=load_params(args.params_file, "scale.predict"), args=args,
                      where="scale.predict")
    if not Path(cfg.fit).is_file():
        raise ConfigError(f"--fit {cfg.fit} does not exist: run `corpusmix scale fit` first")
    fit = json.loads(Path(cfg.fit).read_text())
    try:
        if cfg.flops > 0:
            pred = predict(fit, flops=cfg.flops)
        else:
            pred = predict(fit, n=cfg.params or None, d=cfg.tokens or None)
    except FitError as exc:
        print(f"corpusmix scale predict: error: {exc}", file=sys.stderr)
        return 2
    _write_json(cfg.output, pred)
    print(json.dumps(pred))
    x = pred["extrapolation"]
    print(f"scope: {x['N']:.3g}x N, {x['D']:.3g}x D, {x['C']:.3g}x compute past the largest fitted run "
          f"(validated: {pred['validated']['N']:g}x N, {pred['validated']['D']:g}x D, {pred['validated']['C']:g}x C)",
          file=sys.stderr)
    for key in ("scope_warning", "warning"):
        if pred.get(key):
            print(f"corpusmix scale predict: warning: {pred[key]}", file=sys.stderr)
    if pred.get("sweep_cost", {}).get("note"):
        print(f"corpusmix scale predict: note: {pred['sweep_cost']['note']}", file=sys.stderr)
    return 0
