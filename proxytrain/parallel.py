"""Parallelism applied from outside the model (torchtitan's order).

``parallelize(model, cfg)`` on a model built on the meta device, in this order:

1. activation checkpointing per block (``activation_checkpointing``),
2. ``torch.compile`` per block (``compile``),
3. FSDP2 ``fully_shard`` per block, then the root, over all ranks of the default process group,
   with ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32, cast_forward_inputs=False)``
   when ``dtype == "bf16"``.

Why ``cast_forward_inputs=False``: FSDP would otherwise cast every floating-point argument of a
block to bf16, including the fp32 RoPE cos/sin tables the root passes in, while single-process
autocast keeps them fp32; the hidden states need no cast (the root's bf16 embedding makes them
bf16), so without the cast 1-rank and N-rank runs rotate with the same tables.

The trainer normalises the loss by the global number of target tokens, so gradients must be SUMMED
over ranks, not averaged: the divide factor is 1.0. With a factor FSDP may use a PREMUL_SUM
reduction, which gloo lacks and which NCCL has had bf16 bugs with, so every backend is forced to a
plain sum (``set_force_sum_reduction_for_comms``). Both setters exist from torch 2.8
(``require_fsdp_api`` says so clearly on older builds instead of failing inside FSDP).

``setup_distributed()`` initialises the process group under ``torchrun`` (gloo on CPU, nccl on CUDA)
and returns (rank, world_size, device). A worker started by torchrun first asks the kernel to kill it
when its agent dies (``die_with_agent``): torchrun starts each worker in a session of its own, so a
SIGKILL of the job's process group (or of the agent alone) would otherwise leave the workers running
on, still training and writing checkpoints beside the run that is started next.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_agent() -> bool:
    """Under torchrun (``TORCHELASTIC_RUN_ID`` set), on Linux: SIGKILL this process when its parent, the
    agent, dies. Returns whether the request was made. If the agent died while the request was being
    made (the parent changed), exits at once with the same signal. The agent may itself be PID 1 (torchrun
    as a container's entrypoint), so a parent of 1 is not taken as a dead agent."""
    if "TORCHELASTIC_RUN_ID" not in os.environ or not sys.platform.startswith("linux"):
        return False
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        return False
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)
    return True


def setup_distributed(device: str = "auto") -> tuple[int, int, torch.device]:
    """Init the process group when launched by torchrun; pick this rank's device."""
    die_with_agent()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(f"cuda:{local}") if device == "cuda" else torch.device(device)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    if world > 1 and not dist.is_initialized():
        kwargs: dict[str, Any] = {}
        restart = os.environ.get("TORCHELASTIC_RESTART_COUNT")
        if restart is not None:
            # workers restarted by torchrun (--max-restarts) connect to the agent's same TCPStore;
            # without a per-attempt prefix they read the dead attempt's addresses and the group never
            # forms (gloo: "connectFullMesh failed ... Connection refused", then a hang)
            store, _, _ = next(dist.rendezvous("env://"))
            kwargs = {"store": dist.PrefixStore(f"corpusmix/attempt-{restart}", store), "rank": rank,
                      "world_size": world}
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo", device_id=dev
                                if dev.type == "cuda" else None, **kwargs)
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


FSDP_METHODS = ("set_gradient_divide_factor", "set_force_sum_reduction_for_comms")


def require_fsdp_api() -> None:
    """Refuse, with the fix, a torch whose FSDP2 lacks what multi-rank training uses."""
    try:
        from torch.distributed.fsdp import FSDPModule, fully_shard  # noqa: F401  (public from 2.6)
    except ImportError as exc:
        raise RuntimeError(f"torch {torch.__version__} has no public FSDP2 (torch.distributed.fsdp.fully_shard): "
                           "multi-rank training needs torch >= 2.8; upgrade torch (and a matching flash-attn)"
                           ) from exc
    missing = [m for m in FSDP_METHODS if not hasattr(FSDPModule, m)]
    if missing:
        raise RuntimeError(f"torch {torch.__version__}: FSDPModule lacks {', '.join(missing)}; multi-rank training "
                           "needs torch >= 2.8 (upgrade torch and a matching flash-attn wheel), or run one rank")


def mixed_precision(dtype: str) -> Any:
    """The FSDP2 policy for ``dtype``: bf16 compute, fp32 reduction, inputs not cast (see above)."""
    from torch.distributed.fsdp import MixedPrecisionPolicy

    if dtype == "bf16":
        return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                                    cast_forward_inputs=False)
    return MixedPrecisionPolicy()


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
    # fsdp_single_rank: shard over a 1-rank group too (the GPU smoke test on a single-GPU machine)
    if not is_distributed() and not (getattr(cfg, "fsdp_single_rank", False) and dist.is_initialized()):
        return model

    require_fsdp_api()
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    dev_type = "cuda" if torch.cuda.is_available() and dist.get_backend() == "nccl" else "cpu"
    mesh = init_device_mesh(dev_type, (dist.get_world_size(),))
    mp = mixed_precision(cfg.dtype)
    n = len(layers)
    for i, block in enumerate(layers):
        # the last block is resharded by the root's post-forward anyway
        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=i < n - 1)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    for m in [*layers, model]:
        m.set_gradient_divide_factor(1.0)  # type: ignore[operator]
        m.set_force_sum_reduction_for_comms(True)  # type: ignore[operator]  (every backend, see above)
    return model
