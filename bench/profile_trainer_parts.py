"""Where a CPU training step goes: ours vs the nanoGPT-style reference, part by part (CPU time).

    python bench/profile_trainer_parts.py [--preset small] [--rounds 3]
    python bench/profile_trainer_parts.py --ops [--top 25]     # torch.profiler table of one step

Times forward + backward of one block, its attention, its MLP, one norm, the output head with the
loss, and the whole model, for ours and for the reference of ``bench_trainer_cpu.py`` (``lib/ref_gpt.py``) (same shapes,
batch 8 x 256, vocabulary 4096, one thread). Process CPU time, alternating, median of ``--rounds``
medians of 3: on a shared machine CPU time is steadier than wall time, though not immune to it.

``--ops`` profiles two whole training steps of each model with ``torch.profiler`` instead, each
step in ``record_function`` ranges (forward, loss, backward, clip, optimizer), and prints the ranges
and the costliest operators by self CPU time, grouped by input shape.
"""

from __future__ import annotations

import argparse
import statistics as st
import sys
import time

import torch
import torch.nn.functional as F
from lib.ref_gpt import RefGPT, ref_opt

from proxytrain.attention import prepare_attention
from proxytrain.loss import per_token_loss
from proxytrain.model import ModelConfig, build_model
from proxytrain.optim import make_optimizer
from proxytrain.train import TrainConfig
from proxytrain.train_cli import SyntheticSource


def _cpu(fn, n: int = 3) -> float:
    out = []
    for _ in range(n):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return st.median(out)


def op_table(ours, ref, tok: torch.Tensor, seg: torch.Tensor, top: int) -> None:
    """torch.profiler over two training steps of each model, in record_function ranges per part."""
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity, profile

    o_opt, r_opt = make_optimizer(ours, TrainConfig()), ref_opt(ref)

    def step(model, opt, forward, loss_fn, foreach: bool | None) -> None:
        with record_function("1 forward"):
            logits = forward()
        with record_function("2 loss"):
            loss = loss_fn(logits)
        with record_function("3 backward"):
            loss.backward()
        with record_function("4 clip"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=foreach)
        with record_function("5 optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)

    def o_loss(logits: torch.Tensor) -> torch.Tensor:
        loss, mask = per_token_loss(logits, tok, seg)
        return loss.sum() / mask.sum()

    def r_loss(logits: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tok[:, 1:].reshape(-1))

    sides = [("ours", lambda: step(ours, o_opt, lambda: ours(tok, seg), o_loss, True)),
             ("reference", lambda: step(ref, r_opt, lambda: ref(tok), r_loss, None))]
    for _, fn in sides:
        fn()  # warm-up (allocator, optimizer state)
    for name, fn in sides:
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
            fn()
            fn()
        events = prof.key_averages()
        ranges = {e.key: e.cpu_time_total / 2e3 for e in events if e.key[:1].isdigit() and e.key[1:2] == " "}
        print(f"==== {name}: ms per step by part (CPU time; backward includes everything autograd runs)")
        print("  ".join(f"{k[2:]} {v:.1f}" for k, v in sorted(ranges.items())))
        print(prof.key_averages(group_by_input_shape=True).table(
            sort_by="self_cpu_time_total", row_limit=top, max_name_column_width=48, max_shapes_column_width=60),
            flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ops", action="store_true", help="torch.profiler operator table of whole steps")
    ap.add_argument("--top", type=int, default=25, help="operators listed with --ops")
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = ModelConfig.preset(args.preset, vocab_size=4096, max_seq_len=256, attn_backend="sdpa")
    ours, ref = build_model(cfg), RefGPT(4096, 256, cfg.d_model, cfg.n_layers, cfg.n_heads)
    b = SyntheticSource(vocab_size=4096, seq_len=256, seed=1).next_batch(8)
    tok, seg = b["tokens"], b["segment_ids"]
    if args.ops:
        op_table(ours, ref, tok, seg, args.top)
        return 0
    x = torch.randn(8, 256, cfg.d_model, requires_grad=True)
    ctx = prepare_attention(seg, "sdpa", torch.float32)
    cos, sin = ours.rope_cos[:256], ours.rope_sin[:256]
    ob, rb = ours.layers[0], ref.blocks[0]

    def r_attn() -> None:
        bb, s, d = x.shape
        q, k, v = (u.view(bb, s, rb.h, d // rb.h).transpose(1, 2) for u in rb.c_attn(x).split(d, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(bb, s, d)
        rb.c_proj(y).sum().backward()

    def o_head() -> None:
        loss, mask = per_token_loss(F.linear(x, ours.tok_emb.weight), tok, seg)
        (loss.sum() / mask.sum()).backward()

    def r_head() -> None:
        logits = F.linear(x, ref.wte.weight)
        F.cross_entropy(logits[:, :-1].reshape(-1, 4096), tok[:, 1:].reshape(-1)).backward()

    def o_full() -> None:
        loss, mask = per_token_loss(ours(tok, seg), tok, seg)
        (loss.sum() / mask.sum()).backward()

    def r_full() -> None:
        logits = ref(tok)
        F.cross_entropy(logits[:, :-1].reshape(-1, 4096), tok[:, 1:].reshape(-1)).backward()

    parts = [
        ("block", lambda: ob(x, cos, sin, ctx).sum().backward(), lambda: rb(x).sum().backward()),
        ("attention", lambda: ob.attn(x, cos, sin, ctx).sum().backward(), r_attn),
        ("mlp", lambda: ob.ffn(x).sum().backward(), lambda: rb.mlp_proj(F.gelu(rb.c_fc(x))).sum().backward()),
        ("norm", lambda: ob.attn_norm(x).sum().backward(), lambda: rb.ln_1(x).sum().backward()),
        ("head+loss", o_head, r_head),
        ("model fwd+bwd", o_full, r_full),
    ]
    print(f"preset {args.preset}: CPU ms per fwd+bwd, ours / reference (ratio > 1: ours cheaper)")
    for name, mine, theirs in parts:
        mine(), theirs()
        a, r = [], []
        for _ in range(args.rounds):
            a.append(_cpu(mine))
            r.append(_cpu(theirs))
        print(f"{name:14s} {st.median(a) * 1e3:9.1f} {st.median(r) * 1e3:9.1f}   {st.median(r) / st.median(a):.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
