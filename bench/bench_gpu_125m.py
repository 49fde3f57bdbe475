"""GPU training throughput and MFU of the ~125M model: flash-attn + torch.compile + bf16, one GPU.

    python bench/bench_gpu_125m.py                          # 125m preset, seq 2048, batch 8
    python bench/bench_gpu_125m.py --attn flex --no-compile --batch 4

It runs the trainer's own pieces (``build_model``, ``parallelize`` for per-block compile,
``make_optimizer`` (fused AdamW), ``per_token_loss`` with document masking on packed rows, bf16
autocast, clipping at 1.0) in a tight loop: ``--warmup`` steps (compilation) and then ``--steps``
timed steps with one device synchronisation at the end. Prints one JSON line: tokens/s, step time,
MFU from 6N + 12·L·d·S FLOPs per token against the GPU's dense bf16 peak (``proxytrain.flops``).
``--attn auto`` uses FlashAttention varlen (flash-attn when installed, else PyTorch's built-in
varlen kernel), else FlexAttention (compiled). The line also gives the GPU's measured bf16 matmul
rate (8192^3, ten products after three warm-ups) and the MFU against it beside the datasheet MFU.
``--profile FILE`` profiles five more steps and writes where the GPU time goes (kernels grouped as
matmul, attention, fused/elementwise, optimizer, other) to the JSON line and the table to FILE.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import harness
import torch

from proxytrain.attention import flash_available
from proxytrain.flops import device_family, flops_per_token, peak_flops
from proxytrain.loss import per_token_loss
from proxytrain.model import ModelConfig, build_model, count_params
from proxytrain.optim import make_optimizer
from proxytrain.parallel import parallelize
from proxytrain.train_cli import SyntheticSource


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="125m")
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--attn", default="auto", help="auto | flash | flex | sdpa")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--ac", action="store_true", help="activation checkpointing")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--profile", default="", help="profile 5 steps; write the kernel table to this file")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device: this benchmark needs a GPU"}))
        return 2
    dev = torch.device("cuda")
    attn = args.attn
    if attn == "auto":
        attn = "flash" if flash_available() else "flex"
    cfg = ModelConfig.preset(args.preset, vocab_size=args.vocab, max_seq_len=args.seq, attn_backend=attn)
    model = build_model(cfg, dev, materialize=False)
    parallelize(model, SimpleNamespace(activation_checkpointing=args.ac, compile=not args.no_compile, dtype="bf16"))
    model.to_empty(device=dev)
    model.init_weights(0)
    opt = make_optimizer(model, SimpleNamespace(lr=6e-4, weight_decay=0.1, beta1=0.9, beta2=0.95))
    src = SyntheticSource(vocab_size=args.vocab, seq_len=args.seq, seed=0)
    # pre-generate the batches on the device: the benchmark measures the model, not the data path
    batches = [{k: v.to(dev) for k, v in src.next_batch(args.batch).items()} for _ in range(4)]

    def step(b: dict[str, torch.Tensor]) -> torch.Tensor:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(b["tokens"], b["segment_ids"])
        loss, mask = per_token_loss(logits, b["tokens"], b["segment_ids"])
        loss = loss.sum() / mask.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss.detach()

    t_compile = time.perf_counter()
    for i in range(args.warmup):
        step(batches[i % len(batches)])
    torch.cuda.synchronize()
    t_compile = time.perf_counter() - t_compile
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    for i in range(args.steps):
        loss = step(batches[i % len(batches)])
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / args.steps
    breakdown = profile_steps(step, batches, args.profile) if args.profile else None
    tokens = args.batch * args.seq
    fpt = flops_per_token(cfg, model, seq_len=args.seq)
    peak = peak_flops(dev, "bf16")
    tps = tokens / dt
    mm = matmul_rate(dev)
    harness.emit("gpu_125m", {
        "gpu": torch.cuda.get_device_name(dev), "family": device_family(dev), "preset": args.preset,
        "params_non_embedding": count_params(model), "params_total": count_params(model, non_embedding=False),
        "seq_len": args.seq, "batch": args.batch, "attn": attn, "compile": not args.no_compile, "ac": args.ac,
        "dtype": "bf16", "step_s": round(dt, 4), "tokens_per_s": round(tps), "flops_per_token": fpt,
        "peak_flops": peak, "mfu": round(tps * fpt / peak, 4) if peak else None, "loss": float(loss),
        "mfu_formula": "tokens/s x (6N + 12 L d S) / peak (N: non-embedding + output head params)",
        "warmup_s": round(t_compile, 1), "max_mem_gb": round(torch.cuda.max_memory_allocated() / 2**30, 2),
        "matmul_peak_measured": mm, "mfu_vs_measured_matmul": round(tps * fpt / mm, 4),
        "torch": torch.__version__, **({"gpu_time_share": breakdown} if breakdown else {})})
    return 0


def matmul_rate(dev: torch.device, n: int = 8192) -> float:
    """Measured dense bf16 FLOP/s of an n^3 matmul (mean of ten after three warm-ups)."""
    a, b = (torch.randn(n, n, device=dev, dtype=torch.bfloat16) for _ in range(2))
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    return round(2 * n**3 * 10 / (time.perf_counter() - t0), -9)


KERNEL_GROUPS = (("attention", ("flash", "fmha", "attention", "attn")),
                 ("matmul", ("gemm", "cutlass", "xmma", "nvjet", "cublas", "wgmma", "sm90")),
                 ("optimizer", ("adam", "multi_tensor", "foreach", "_amp_")),
                 ("fused_elementwise", ("triton",)),
                 ("comm", ("nccl",)))


def profile_steps(step, batches: list, path: str, n: int = 5) -> dict:
    """Profile ``n`` steps: wall time and each kernel group's share of it (``KERNEL_GROUPS``)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        for i in range(n):
            step(batches[i % len(batches)])
        torch.cuda.synchronize()
        wall_us = (time.perf_counter() - t0) * 1e6
    groups: dict[str, float] = {}
    for e in prof.key_averages():
        t = e.self_device_time_total
        if t <= 0:
            continue
        name = e.key.lower()
        g = next((g for g, keys in KERNEL_GROUPS if any(k in name for k in keys)), "other_kernels")
        groups[g] = groups.get(g, 0.0) + t
    Path(path).write_text(prof.key_averages().table(sort_by="self_device_time_total", row_limit=40))
    share = {g: round(t / wall_us, 3) for g, t in sorted(groups.items(), key=lambda kv: -kv[1])}
    share["no_kernel"] = round(max(0.0, 1 - sum(groups.values()) / wall_us), 3)
    return share


if __name__ == "__main__":
    sys.exit(main())
