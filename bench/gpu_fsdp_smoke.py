"""Two-step FSDP2 smoke run on CUDA (NCCL, bf16 params), checked against one unsharded process.

    torchrun --standalone --nproc_per_node=N bench/gpu_fsdp_smoke.py      # N = GPUs (1 works too)

Each rank builds the model on the meta device, shards it with ``proxytrain.parallel.parallelize``
(bf16 ``MixedPrecisionPolicy``, summed gradient reduction; with one GPU over a 1-rank group), and
takes two optimizer steps on its share of a global batch with the loss normalised by the global
target-token count, as the trainer does. Rank 0 then repeats the two steps with an unsharded model
under bf16 autocast on the whole batch. Prints one JSON line: both loss curves, the dtypes the
blocks received (hidden states bf16, RoPE cos/sin fp32), the attention backend; exit 1 on a
mismatch beyond bf16 tolerance (2 %) or a non-finite loss.
"""

from __future__ import annotations

import json
import math
import os
import sys
from types import SimpleNamespace

import torch
import torch.distributed as dist

from proxytrain.attention import resolve_backend
from proxytrain.loss import per_token_loss, target_mask
from proxytrain.model import ModelConfig, build_model
from proxytrain.optim import make_optimizer
from proxytrain.parallel import parallelize
from proxytrain.train_cli import SyntheticSource

OPT = SimpleNamespace(lr=3e-3, weight_decay=0.1, beta1=0.9, beta2=0.95)


def _steps(model, opt, batches, n_tgt, autocast: bool) -> list[float]:
    losses = []
    for b in batches:
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
            logits = model(b["tokens"], b["segment_ids"])
        loss, _ = per_token_loss(logits, b["tokens"], b["segment_ids"])
        total = loss.sum() / n_tgt
        total.backward()
        part = total.detach().clone()
        if dist.is_initialized() and not autocast:
            dist.all_reduce(part)
        losses.append(float(part))
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        if hasattr(norm, "full_tensor"):
            norm.full_tensor()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return losses


def main() -> int:
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()
    cfg = ModelConfig.preset("tiny", vocab_size=512, max_seq_len=256, n_kv_heads=2)
    rows, steps = 4 * world, 2
    src = SyntheticSource(vocab_size=512, seq_len=256, seed=3)
    glob = [src.next_batch(rows) for _ in range(steps)]
    n_tgt = [float(target_mask(b["segment_ids"]).sum()) for b in glob]

    model = build_model(cfg, dev, materialize=False)
    parallelize(model, SimpleNamespace(activation_checkpointing=False, compile=False, dtype="bf16",
                                       fsdp_single_rank=True))
    model.to_empty(device=dev)
    model.init_weights(0)
    seen: set[str] = set()
    model.layers[0].register_forward_pre_hook(lambda m, a: seen.update(f"{i}:{t.dtype}" for i, t in enumerate(a[:3])))
    opt = make_optimizer(model, OPT)
    mine = [{k: v[rank::world].to(dev) for k, v in b.items()} for b in glob]
    losses = [_steps(model, opt, [b], n, autocast=False)[0] for b, n in zip(mine, n_tgt, strict=True)]
    dist.barrier()
    ok = True
    out = {"world": world, "gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__,
           "attention": resolve_backend(cfg.attn_backend, dev), "fsdp_losses": losses,
           "block_inputs": sorted(seen)}
    if rank == 0:
        ref = build_model(cfg, dev, seed=0)
        ref_opt = make_optimizer(ref, OPT)
        full = [{k: v.to(dev) for k, v in b.items()} for b in glob]
        ref_losses = [_steps(ref, ref_opt, [b], n, autocast=True)[0] for b, n in zip(full, n_tgt, strict=True)]
        out["single_losses"] = ref_losses
        ok = all(math.isfinite(a) and abs(a - b) <= 2e-2 * abs(b) for a, b in zip(losses, ref_losses, strict=True))
        ok = ok and sorted(seen) == ["0:torch.bfloat16", "1:torch.float32", "2:torch.float32"]
        out["ok"] = ok
        print(json.dumps(out), flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
