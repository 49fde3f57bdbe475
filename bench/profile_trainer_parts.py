"""Where a CPU training step goes: ours vs the nanoGPT-style reference, part by part (CPU time).

    python bench/profile_trainer_parts.py [--preset small] [--rounds 3]

Times forward + backward of one block, its attention, its MLP, one norm, the output head with the
loss, and the whole model, for ours and for the reference of ``bench_trainer_cpu.py`` (same shapes,
batch 8 x 256, vocabulary 4096, one thread). Process CPU time, alternating, median of ``--rounds``
medians of 3: on a shared machine CPU time is steadier than wall time, though not immune to it.
"""

from __future__ import annotations

import argparse
import statistics as st
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_trainer_cpu import RefGPT  # noqa: E402

from proxytrain.attention import prepare_attention  # noqa: E402
from proxytrain.model import ModelConfig, build_model, per_token_loss  # noqa: E402
from proxytrain.train_cli import SyntheticSource  # noqa: E402


def _cpu(fn, n: int = 3) -> float:
    out = []
    for _ in range(n):
        t0 = time.process_time()
        fn()
        out.append(time.process_time() - t0)
    return st.median(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    cfg = ModelConfig.preset(args.preset, vocab_size=4096, max_seq_len=256, attn_backend="sdpa")
    ours, ref = build_model(cfg), RefGPT(4096, 256, cfg.d_model, cfg.n_layers, cfg.n_heads)
    b = SyntheticSource(vocab_size=4096, seq_len=256, seed=1).next_batch(8)
    tok, seg = b["tokens"], b["segment_ids"]
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
