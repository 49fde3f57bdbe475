"""CPU training throughput: our Llama-style proxy vs a nanoGPT-style reference of the same shape.

Both models get the same width, depth, heads, vocabulary, sequence length and batch, fp32, and
the same packed synthetic batches; ours also does document masking (the reference attends across
packed documents, as nanoGPT does). Each side runs its own training step as its trainer does:
ours is the trainer's (``make_optimizer``: fused AdamW with decay on matrices, ``per_token_loss``,
foreach clipping), the reference is nanoGPT's on CPU (plain AdamW with the same decay groups, mean
cross-entropy, ``clip_grad_norm_``). The two are timed ALTERNATELY in one run (timings on shared
VMs drift), and the ratio of tokens/s (wall clock; also of CPU time) is printed with the load
average seen during the run::

    python bench/bench_trainer_cpu.py                      # tiny and small presets
    python bench/bench_trainer_cpu.py --presets tiny --rounds 9 --steps 2 --threads 1
    python bench/bench_trainer_cpu.py --compile both       # both models torch.compile'd per block
    python bench/bench_trainer_cpu.py --compile ours       # ours compiled (train.compile), reference eager

The reference follows nanoGPT's model.py: learned positions, LayerNorm, fused c_attn, GELU MLP
of 4·d, tied head, ``scaled_dot_product_attention(is_causal=True)``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time

import harness
import torch
import torch.nn.functional as F
from lib.ref_gpt import RefGPT, ref_opt

from proxytrain import cpu_kernels
from proxytrain.loss import per_token_loss
from proxytrain.model import ModelConfig, build_model
from proxytrain.optim import make_optimizer
from proxytrain.train import TrainConfig
from proxytrain.train_cli import SyntheticSource


def _time_ours(model, opt, batches) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        loss, mask = per_token_loss(model(b["tokens"], b["segment_ids"]), b["tokens"], b["segment_ids"])
        (loss.sum() / mask.sum()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)  # as the trainer
        opt.step()
        opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0, time.process_time() - c0


def _time_ref(model, opt, batches) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    for b in batches:
        logits = model(b["tokens"])
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), b["tokens"][:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0, time.process_time() - c0


def bench(preset: str, *, vocab: int, seq: int, batch: int, steps: int, rounds: int,
          compile: str = "none") -> dict:
    cfg = ModelConfig.preset(preset, vocab_size=vocab, max_seq_len=seq, attn_backend="sdpa")
    ours = build_model(cfg, "cpu", seed=0)
    ref = RefGPT(vocab, seq, cfg.d_model, cfg.n_layers, cfg.n_heads)
    # per block, as proxytrain.parallel does (and nanoGPT's whole-model compile would)
    for blk in [*(ours.layers if compile in ("ours", "both") else []), *(ref.blocks if compile == "both" else [])]:
        blk.compile()
    src = SyntheticSource(vocab_size=vocab, seq_len=seq, seed=1)
    batches = [src.next_batch(batch) for _ in range(steps)]
    o_opt, r_opt = make_optimizer(ours, TrainConfig()), ref_opt(ref)
    load0 = harness.load1()
    warm_ours = _time_ours(ours, o_opt, batches[:2])[0]  # warm-up both (and compile)
    warm_ref = _time_ref(ref, r_opt, batches[:2])[0]
    t_ours, t_ref = [], []
    for r in range(rounds):
        # alternate which one goes first, so drift within a round does not favour either
        for side in harness.order(r, ("ours", "ref")):
            if side == "ours":
                t_ours.append(_time_ours(ours, o_opt, batches))
            else:
                t_ref.append(_time_ref(ref, r_opt, batches))
    tokens = steps * batch * seq
    # wall time is the target's measure; CPU time (process_time) is reported too: on a loaded
    # machine it leaves out the time spent waiting for a core, which wall time charges to whichever
    # side happened to be descheduled
    c_ours, c_ref = [c for _, c in t_ours], [c for _, c in t_ref]
    t_ours, t_ref = [w for w, _ in t_ours], [w for w, _ in t_ref]
    ratios = [tr / to for to, tr in zip(t_ours, t_ref, strict=True)]
    cpu_ratios = [cr / co for co, cr in zip(c_ours, c_ref, strict=True)]
    n_ours = sum(p.numel() for p in ours.parameters())
    n_ref = sum(p.numel() for p in ref.parameters())
    return {"preset": preset, "d_model": cfg.d_model, "n_layers": cfg.n_layers, "vocab": vocab, "seq_len": seq,
            "batch": batch, "params_ours": n_ours, "params_ref": n_ref,
            "tokens_per_s_ours": tokens / statistics.median(t_ours),
            "tokens_per_s_ref": tokens / statistics.median(t_ref),
            "ratio_median": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
            "ratio_of_medians": statistics.median(t_ref) / statistics.median(t_ours),
            "cpu_ratio_median": statistics.median(cpu_ratios), "cpu_ratio_min": min(cpu_ratios),
            "cpu_ratio_max": max(cpu_ratios), "rounds": rounds,
            "steps_per_round": steps, "threads": torch.get_num_threads(), "compile": compile,
            "fused_cpu_kernels": cpu_kernels.usable(torch.zeros(1)),  # False: torch-op fallback ran
            "warmup_s_ours": warm_ours, "warmup_s_ref": warm_ref,
            "loadavg_1m_start": load0, "loadavg_1m_end": harness.load1()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--presets", default="tiny,small")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps per timed block")
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds per preset")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0 = torch's default)")
    ap.add_argument("--compile", default="none", choices=["none", "ours", "both"],
                    help="torch.compile each block: of neither model, of ours only, of both")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    for preset in args.presets.split(","):
        res = bench(preset, vocab=args.vocab, seq=args.seq, batch=args.batch, steps=args.steps, rounds=args.rounds,
                    compile=args.compile)
        harness.emit(f"trainer_cpu_{preset}", {k: (round(v, 3) if isinstance(v, float) and not math.isnan(v) else v)
                                                for k, v in res.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
