"""Parallelism applied from outside the model (torchtitan's order).

``parallelize(model, cfg)`` on a model built on the meta device, in this order:

1. activation checkpointing per block (``activation_checkpointing``),
2. ``torch.compile`` per block (``compile``),
3. FSDP2 ``fully_shard`` per block, then the root, over all ranks of the default process group,
   with ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` when ``dtype == "bf16"``.

The trainer normalises the loss by the global number of target tokens, so gradients must be SUMMED
over ranks, not averaged: the divide factor is 1.0. gloo has no PREMUL_SUM, so with gloo the
reduction is forced to a plain sum (``set_force_sum_reduction_for_comms``).

``setup_distributed()`` initialises the process group under ``torchrun`` (gloo on CPU, nccl on CUDA)
and returns (rank, world_size, device).
"""

from __future__ import annotations

import os
from typing import Any

import torch
import torch.distributed as dist
from torch import nn


def setup_distributed(device: str = "auto") -> tuple[int, int, torch.device]:
    """Init the process group when launched by torchrun; pick this rank's device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(f"cuda:{local}") if device == "cuda" else torch.device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo", device_id=dev
                                if dev.type == "cuda" else None)
    return rank, world, dev


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def all_reduce_sum(t: torch.Tensor) -> torch.Tensor:
    """Sum ``t`` over ranks in place (no-op in a single process)."""
    if is_distributed():
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return t


def reshard_all(model: nn.Module) -> None:
    """Reshard every FSDP2 module: a forward without backward (evaluation) leaves the blocks that
    do not reshard after forward unsharded, and state dicts / optimizers expect sharded params."""
    from torch.distributed.fsdp import FSDPModule

    for m in model.modules():
        if isinstance(m, FSDPModule):
            m.reshard()


def parallelize(model: nn.Module, cfg: Any) -> nn.Module:
    """Apply AC -> compile -> FSDP2 to ``model.layers`` and the root; returns the same model.

    ``cfg`` needs ``activation_checkpointing`` (bool), ``compile`` (bool) and ``dtype``
    (``fp32``/``bf16``). FSDP is applied only when more than one rank runs.
    """
    layers: nn.ModuleList = model.layers  # type: ignore[assignment]
    if cfg.activation_checkpointing:
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

        for i, block in enumerate(layers):
            layers[i] = checkpoint_wrapper(block, preserve_rng_state=False)
    if cfg.compile:
        for block in layers:
            block.compile()  # no fullgraph: older flash-attn builds are not traceable ops
    if not is_distributed():
        return model

    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    dev_type = "cuda" if torch.cuda.is_available() and dist.get_backend() == "nccl" else "cpu"
    mesh = init_device_mesh(dev_type, (dist.get_world_size(),))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) \
        if cfg.dtype == "bf16" else MixedPrecisionPolicy()
    n = len(layers)
    for i, block in enumerate(layers):
        # the last block is resharded by the root's post-forward anyway
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=i < n - 1)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    gloo = dist.get_backend() == "gloo"
    for m in [*layers, model]:
        m.set_gradient_divide_factor(1.0)  # type: ignore[operator]
        if gloo:
            m.set_force_sum_reduction_for_comms(True)  # type: ignore[operator]
    return model
