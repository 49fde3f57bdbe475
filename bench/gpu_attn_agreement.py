"""FlashAttention varlen vs SDPA on packed rows with document masks, bf16, outputs and gradients.

    python bench/gpu_attn_agreement.py [--batch 4] [--seq 2048] [--heads 12] [--head-dim 64]

Packed rows of several documents of random lengths (and a padded tail on some rows) go through
``proxytrain.attention.attend`` twice: the ``flash`` backend (FlashAttention varlen over
``cu_seqlens``; flash-attn when installed, else PyTorch's built-in kernel) and the ``sdpa`` backend
(block-diagonal causal mask), both in bf16, then an fp32 reference (SDPA on fp32 copies of the same
inputs). For MHA and GQA it prints one JSON line per case: max |flash - sdpa| of the output and of
dq/dk/dv on the non-padding positions, and each kernel's max error against the fp32 reference.

Pass rule (FlashAttention's own test convention): the flash kernel's error against the fp32
reference is at most twice the bf16 SDPA kernel's error against it, plus 1e-3. Exit 1 when a
case fails; exit 2 without CUDA.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from proxytrain.attention import attend, flash_available, flash_impl, prepare_attention


def packed_segments(batch: int, seq: int, gen: torch.Generator) -> torch.Tensor:
    """[B, S] int32 segment ids: documents of 1..seq/2 tokens back to back; odd rows end in padding (-1)."""
    rows = []
    for r in range(batch):
        ids, doc = [], 0
        limit = seq - (seq // 8 if r % 2 else 0)
        while len(ids) < limit:
            n = int(torch.randint(1, seq // 2, (1,), generator=gen))
            ids += [doc] * min(n, limit - len(ids))
            doc += 1
        rows.append(ids + [-1] * (seq - len(ids)))
    return torch.tensor(rows, dtype=torch.int32)


def run_case(batch: int, seq: int, heads: int, kv_heads: int, dim: int, dev: torch.device, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    seg = packed_segments(batch, seq, gen).to(dev)
    q32 = torch.randn(batch, heads, seq, dim, generator=gen).to(dev)
    k32, v32 = (torch.randn(batch, kv_heads, seq, dim, generator=gen).to(dev) for _ in range(2))
    dout = torch.randn(batch, heads, seq, dim, generator=gen).to(dev)
    keep = (seg >= 0)[:, None, :, None]

    def grads(backend: str, dtype: torch.dtype) -> list[torch.Tensor]:
        q, k, v = (t.detach().to(dtype).requires_grad_(True) for t in (q32, k32, v32))
        out = attend(q, k, v, prepare_attention(seg, backend, dtype))
        # padding positions attend only among themselves and are ignored by the loss: leave them out
        (out.float() * dout * keep).sum().backward()
        return [(out.detach() * keep).float(), q.grad.float(), k.grad.float(), v.grad.float()]

    names = ("out", "dq", "dk", "dv")
    ref = grads("sdpa", torch.float32)
    flash = grads("flash", torch.bfloat16)
    sdpa = grads("sdpa", torch.bfloat16)
    res: dict = {"batch": batch, "seq": seq, "heads": heads, "kv_heads": kv_heads, "head_dim": dim,
                 "docs": int(sum(len(torch.unique(r[r >= 0])) for r in seg)), "ok": True}
    for n, f, s, r in zip(names, flash, sdpa, ref, strict=True):
        err_f, err_s = float((f - r).abs().max()), float((s - r).abs().max())
        res[n] = {"flash_vs_sdpa": round(float((f - s).abs().max()), 5), "flash_vs_fp32": round(err_f, 5),
                  "sdpa_vs_fp32": round(err_s, 5)}
        res["ok"] = res["ok"] and err_f <= 2 * err_s + 1e-3
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--head-dim", type=int, default=64)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device: FlashAttention needs a GPU"}))
        return 2
    if not flash_available():
        print(json.dumps({"error": f"no FlashAttention varlen kernel in torch {torch.__version__} and no flash-attn"}))
        return 1
    dev = torch.device("cuda")
    ok = True
    for seed, kv in enumerate((args.heads, args.heads // 4 or 1)):
        res = run_case(args.batch, args.seq, args.heads, kv, args.head_dim, dev, seed)
        res.update(impl=flash_impl(), torch=torch.__version__, gpu=torch.cuda.get_device_name(dev))
        print(json.dumps(res), flush=True)
        ok = ok and res["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
