"""One proxy training step on CPU: the output projection and loss before and after ``head_dtype: bf16``.

    python bench/bench_proxy_step.py [--presets micro,tiny] [--rounds 5] [--steps 30]

A step is what the trainer does per batch (forward, per-token loss, backward, AdamW) on one torch
thread (the proxies' setting), on random tokens of the proxies' 4096-token vocabulary, at each mix
preset's model shape and batch. Three variants, alternated in rounds (the machine is shared,
timings drift), each reported as the median ms per step over the rounds:

- ``torch-ce``: fp32 output projection, torch's log-softmax cross-entropy (before this change);
- ``fused-ce``: fp32 output projection, the fused one-pass cross-entropy kernel;
- ``bf16-head``: bf16 output projection (fp32 accumulation, bf16 logits) and the fused kernel.

It prints the ratios against ``torch-ce``, the mean per-token loss of each variant after the same
steps on the same batches (bf16 rounding of the logits is the only difference), the CPU's native
bf16 support and the load average.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import harness
import torch

from mix.presets import PRESETS
from proxytrain import cpu_kernels
from proxytrain.loss import per_token_loss
from proxytrain.model import ModelConfig, build_model
from proxytrain.optim import make_optimizer
from proxytrain.train import TrainConfig

ROOT = Path(__file__).resolve().parents[1]

VOCAB = 4096
VARIANTS = ("torch-ce", "fused-ce", "bf16-head")


def run(preset: str, variant: str, steps: int, warmup: int = 5) -> tuple[float, float]:
    """(ms per step, mean loss of the last step) for one variant."""
    p = PRESETS[preset]["proxy"]
    cfg = ModelConfig.preset(p["model_preset"], vocab_size=VOCAB, max_seq_len=p["seq_len"],
                             head_dtype="bf16" if variant == "bf16-head" else "fp32",
                             **{k: p[k] for k in ("d_model", "n_layers", "n_heads") if k in p})
    model = build_model(cfg, "cpu", seed=0)
    opt = make_optimizer(model, TrainConfig(lr=p["lr"], warmup_steps=0))
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, VOCAB, (p["batch_size"], p["seq_len"]), generator=g) for _ in range(4)]
    seg = torch.zeros_like(batches[0], dtype=torch.int32)
    orig = cpu_kernels.ce_usable
    if variant == "torch-ce":
        cpu_kernels.ce_usable = lambda *t: False
    try:
        def step(i: int) -> float:
            loss, mask = per_token_loss(model(batches[i % 4], seg), batches[i % 4], seg)
            mean = loss.sum() / mask.sum()
            mean.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return float(mean.detach())

        for i in range(warmup):
            step(i)
        t0 = time.perf_counter()
        for i in range(steps):
            last = step(warmup + i)
        return (time.perf_counter() - t0) / steps * 1000, last
    finally:
        cpu_kernels.ce_usable = orig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="micro,tiny")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = {"native_bf16": cpu_kernels.native_bf16(), "kernels": cpu_kernels.lib() is not None,
           "load_before": harness.load1(), "presets": {}}
    for preset in args.presets.split(","):
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        losses: dict[str, float] = {}
        for _ in range(args.rounds):
            for v in VARIANTS:
                ms, loss = run(preset, v, args.steps)
                times[v].append(ms)
                losses[v] = round(loss, 4)
        med = {v: round(statistics.median(t), 2) for v, t in times.items()}
        out["presets"][preset] = {
            "ms_per_step": med, "loss_after": losses,
            "speedup_vs_torch_ce": {v: round(med["torch-ce"] / med[v], 2) for v in VARIANTS},
        }
        print(f"{preset}: " + ", ".join(f"{v} {med[v]} ms" for v in VARIANTS)
              + f"; bf16-head {out['presets'][preset]['speedup_vs_torch_ce']['bf16-head']}x torch-ce", flush=True)
    out["load_after"] = harness.load1()
    harness.emit("proxy_step", out, indent=1)


if __name__ == "__main__":
    main()
