"""One DoReMi DRO proxy of ~50M parameters on a GPU: tokens/s and the share of time outside the kernels.

    python bench/bench_gpu_proxy.py --pools POOLS [--d-model 768 --n-layers 7 --n-heads 12]
        [--steps 60] [--batch 32] [--seq 512]

It runs the path a DoReMi search takes per proxy (``mix.doremi.dro_objective`` with the default
``DoReMiConfig`` against a reference model, then ``mix.proxy.train_proxy`` on CUDA: the trainer,
bf16 autocast, the attention backend ``auto``) three times on the same pools and seed:

1. warm-up (CUDA context, cuBLAS handles, allocator), not reported;
2. timed: wall seconds of ``train_proxy`` and the trained tokens per second (steps x rows x seq);
3. under ``torch.profiler``: the summed device time of the GPU kernels, and from it the share of
   the timed run's wall time that no kernel covers (Python, launch gaps, host-side work).

Prints one JSON line. Exit 2 without CUDA.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import harness
import torch


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pools", required=True)
    ap.add_argument("--d-model", type=int, default=768)
    ap.add_argument("--n-layers", type=int, default=7)
    ap.add_argument("--n-heads", type=int, default=12)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--trace", default="", help="write the profiler's kernel table to this file")
    ap.add_argument("--device", default="cuda", help="cuda; cpu only to check the script (no kernel share)")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device: this benchmark needs a GPU"}))
        return 2
    from mix.doremi import DoReMiConfig, dro_objective
    from mix.proxy import ProxyConfig, build_proxy_model, dro_rows, pool_domains, train_proxy
    from proxytrain.attention import resolve_backend
    from proxytrain.model import count_params

    pcfg = ProxyConfig(model_preset="tiny", d_model=args.d_model, n_layers=args.n_layers, n_heads=args.n_heads,
                       steps=args.steps, batch_size=args.batch, seq_len=args.seq, lr=1e-3,
                       warmup=max(1, args.steps // 10), val_batches=2, device=args.device)
    dcfg = DoReMiConfig(steps=args.steps)
    reference = build_proxy_model(args.pools, pcfg, 0)
    params = count_params(reference)
    params_total = count_params(reference, non_embedding=False)
    rows = dro_rows(pcfg.batch_size, len(pool_domains(args.pools)))

    cuda = args.device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def run() -> float:
        obj = dro_objective(dcfg, pcfg, args.pools, reference)
        sync()
        t0 = time.perf_counter()
        train_proxy(args.pools, None, pcfg, seed=1, objective=obj)
        sync()
        return time.perf_counter() - t0

    run()  # warm-up
    wall = run()
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=acts) as prof:
        wall_prof = run()
    averages = prof.key_averages()
    # self device time of every event = the kernels' time on the GPU (memcpy/memset included)
    kernel_us = sum(e.self_device_time_total for e in averages) if cuda else float("nan")
    if args.trace:
        Path(args.trace).write_text(averages.table(sort_by="self_device_time_total", row_limit=30))
    tokens = args.steps * rows * args.seq
    harness.emit("gpu_proxy", {
        "gpu": torch.cuda.get_device_name() if cuda else "cpu", "torch": torch.__version__,
        "params_non_embedding": params, "params_total": params_total,
        "attention": resolve_backend("auto", args.device), "steps": args.steps, "rows": rows, "seq_len": args.seq,
        "doremi": {"update": dcfg.update, "excess_source": dcfg.excess_source},
        "wall_s": round(wall, 3), "tokens_per_s": round(tokens / wall),
        "kernel_s": round(kernel_us / 1e6, 3), "wall_s_profiled": round(wall_prof, 3),
        "share_outside_kernels": round(max(0.0, 1 - kernel_us / 1e6 / wall), 3)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
