"""Cost of one DoReMi DRO proxy: per-batch excess (the paper) vs the fixed probe, or (``--versus
update``) the paper's exponentiated-gradient update with the per-token clip vs the default
``eg_softmax`` update with the domain clip, both on the probe (docs/mix.md).

    python bench/bench_doremi_cost.py --pools out/pools [--preset tiny] [--steps 40] [--rounds 3]
        [--update-every 8] [--probe-windows 0] [--versus source|update]

The two settings alternate in rounds in one process (one torch thread, as a proxy worker runs),
each a DRO proxy of ``--steps`` steps against the same reference (its weights do not change the
cost; the reference's training is the same for both and not timed). Prints per round the seconds
of each, the ratio probe / batch and the load average; then the median ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time

import harness


def main() -> None:
    from mix.doremi import DoReMiConfig, dro_objective
    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, build_proxy_model, train_proxy

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pools", required=True)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--update-every", type=int, default=0, help="0 = DoReMiConfig's default")
    ap.add_argument("--probe-windows", type=int, default=-1, help="-1 = DoReMiConfig's default")
    ap.add_argument("--versus", default="source", choices=["source", "update"],
                    help="source: probe vs batch excess; update: eg (token clip) vs the default update (probe)")
    args = ap.parse_args()
    pcfg = ProxyConfig(**{**PRESETS[args.preset]["proxy"], "steps": args.steps}, device="cpu")
    base = DoReMiConfig(**{**PRESETS[args.preset]["doremi"], "steps": args.steps})
    over = {"update_every": args.update_every or None,
            "probe_windows": args.probe_windows if args.probe_windows >= 0 else None}
    probe = dataclasses.replace(base, excess_source="probe", **{k: v for k, v in over.items() if v is not None})
    batch = dataclasses.replace(base, excess_source="batch")
    if args.versus == "update":  # "batch" then names the paper's update on the same probe
        batch = dataclasses.replace(probe, update="eg", excess_clip="token")
    reference = build_proxy_model(args.pools, pcfg, 0)
    rounds = []
    for r in range(args.rounds):
        secs = {}
        for name, cfg in harness.order(r, (("batch", batch), ("probe", probe))):
            obj = dro_objective(cfg, pcfg, args.pools, reference)
            t0 = time.perf_counter()
            train_proxy(args.pools, None, pcfg, seed=1, objective=obj)
            secs[name] = round(time.perf_counter() - t0, 2)
        rounds.append({"round": r, **secs, "ratio_probe_over_batch": round(secs["probe"] / secs["batch"], 3),
                       "loadavg": harness.loadavg()})
        print(json.dumps(rounds[-1]), flush=True)
    harness.emit("doremi_cost", {"preset": args.preset, "steps": args.steps, "versus": args.versus,
                      "probe_setting": {"update": probe.update, "excess_clip": probe.excess_clip},
                      "batch_setting": {"source": batch.excess_source, "update": batch.update,
                                        "excess_clip": batch.excess_clip},
                      "update_every": probe.update_every,
                      "probe_windows": probe.probe_windows,
                      "median_ratio": statistics.median(r["ratio_probe_over_batch"] for r in rounds)})


if __name__ == "__main__":
    main()
