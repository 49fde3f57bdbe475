"""Proxy runs through the trainer (``mix.proxy``) against the former proxy-only loop, on CPU.

    python bench/bench_proxy_loop.py [--rounds 3] [--preset tiny] [--steps 60]
    python bench/bench_proxy_loop.py --record tests/mix/data/proxy_loop_1d15e2c.json

The former loop (``train_proxy`` of ``mix/proxy.py`` at commit 1d15e2c, before proxies became
trainer runs) is read from git history into a temporary module, so it runs against the same
``proxytrain.model`` code as the trainer does today. ``--record`` writes its losses for the small
fixed runs that ``tests/mix/test_proxy_trainer.py`` compares the trainer's proxies with (RegMix
proxies on two mixtures and two seeds, a reference and a DoReMi proxy). Without ``--record`` it
times both loops on the same pools, alternating in rounds (the machine is shared, timings drift),
and prints tokens/s of each, the ratio (ours / old) per round and its median, and the load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "1d15e2c"

# the runs the fixture holds (small: the test that compares them must stay fast)
FIXTURE_POOLS = {"a": 6000, "b": 6000, "c": 3000}
FIXTURE_CFG = dict(model_preset="tiny", d_model=32, n_layers=2, n_heads=2, steps=20, batch_size=4, seq_len=32,
                   lr=3e-3, warmup=4, val_batches=1)
FIXTURE_RUNS = [([0.5, 0.3, 0.2], 0), ([0.2, 0.2, 0.6], 0), ([0.5, 0.3, 0.2], 1)]


def load_old_loop():
    """``mix/proxy.py`` of ``OLD_COMMIT`` as a module (``old_proxy``)."""
    src = subprocess.run(["git", "show", f"{OLD_COMMIT}:mix/proxy.py"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="old_proxy_")) / "old_proxy.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_proxy", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_proxy"] = mod
    spec.loader.exec_module(mod)
    return mod


def record(out: Path) -> None:
    """The old loop's numbers on the fixture runs (see the module docstring)."""
    import numpy as np
    from lib.pools import write_pools

    from mix.doremi import GroupDRO

    old = load_old_loop()
    work = Path(tempfile.mkdtemp(prefix="proxy_fixture_"))
    pools = write_pools(work / "pools", FIXTURE_POOLS)
    cfg = old.ProxyConfig(**FIXTURE_CFG)
    runs = []
    for w, seed in FIXTURE_RUNS:
        _, res = old.train_proxy(pools, w, cfg, seed=seed)
        runs.append({"weights": w, "seed": seed, "val_loss": res["val_loss"], "curve": res["curve"],
                     "train_loss_last": res["train_loss_last"]})
    # DoReMi: a reference on the natural mixture (seed 0), then one DRO proxy (seed 1) against it
    tokens = old.pool_domains(pools)
    nat = np.array(list(tokens.values()), dtype=np.float64)
    nat /= nat.sum()
    ref, ref_res = old.train_proxy(pools, nat.tolist(), cfg, seed=0)
    dro = GroupDRO(len(tokens), eta=1.0, smoothing=1e-3, average_from=10)
    _, dro_res = old.train_proxy(pools, None, cfg, seed=1, dro=dro, reference=ref)
    fixture = {"commit": OLD_COMMIT, "pools": FIXTURE_POOLS, "config": FIXTURE_CFG, "runs": runs,
               "reference": {"weights": nat.tolist(), "seed": 0, "val_loss": ref_res["val_loss"]},
               "doremi": {"seed": 1, "eta": 1.0, "smoothing": 1e-3, "average_from": 10,
                          "history": [h.tolist() for h in dro.history], "average": dro.average().tolist(),
                          "val_loss": dro_res["val_loss"]},
               "torch": __import__("torch").__version__}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--record", default=None, help="write the old loop's fixture numbers to this JSON file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--preset", default="tiny", help="mix preset of mix/cli.py (tiny | micro)")
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.record:
        record(Path(args.record))
        return
    bench(args)


def bench(args: argparse.Namespace) -> None:
    """Alternate old / ours on the same pools, mixture and seed; tokens/s over each whole run
    (set-up, training and validation: what a proxy of a search costs)."""
    import statistics
    import time

    import numpy as np
    from lib.pools import write_pools

    from mix.presets import PRESETS
    from mix.proxy import ProxyConfig, pool_domains, train_proxy

    old = load_old_loop()
    work = Path(tempfile.mkdtemp(prefix="bench_proxy_loop_"))
    pools = write_pools(work / "pools", {"a": 60000, "b": 60000, "c": 30000, "d": 30000}, vocab=512)
    pc = {**PRESETS[args.preset]["proxy"], "steps": args.steps}
    ours_cfg, old_cfg = ProxyConfig(**pc, device="cpu"), old.ProxyConfig(**pc)
    k = len(pool_domains(pools))
    w = (np.arange(1, k + 1) / np.arange(1, k + 1).sum()).tolist()
    tokens = pc["steps"] * pc["batch_size"] * pc["seq_len"]
    rows = []
    for r in range(args.rounds):
        for name in harness.order(r, ("old", "ours")):
            t = time.perf_counter()
            if name == "old":
                _, res = old.train_proxy(pools, w, old_cfg, seed=0)
            else:
                _, res = train_proxy(pools, w, ours_cfg, seed=0)
            dt = time.perf_counter() - t
            rows.append({"round": r, "loop": name, "seconds": round(dt, 3), "tokens_per_s": round(tokens / dt, 1),
                         "val_loss_avg": round(float(np.mean(list(res["val_loss"].values()))), 6),
                         "loadavg": harness.loadavg()})
            print(json.dumps(rows[-1]), flush=True)
    ratios = []
    for r in range(args.rounds):
        o = next(x for x in rows if x["round"] == r and x["loop"] == "old")
        n = next(x for x in rows if x["round"] == r and x["loop"] == "ours")
        ratios.append(n["tokens_per_s"] / o["tokens_per_s"])
    harness.emit("proxy_loop", {"preset": args.preset, "steps": args.steps, "tokens_per_run": tokens,
                                "ratio_ours_over_old": [round(x, 3) for x in ratios],
                                "median_ratio": round(statistics.median(ratios), 3),
                                "loadavg_end": harness.loadavg()})


if __name__ == "__main__":
    main()
