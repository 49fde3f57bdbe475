"""The optimizer: fused AdamW with weight decay on matrices only."""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn


class OptimFields(Protocol):
    lr: float
    weight_decay: float
    beta1: float
    beta2: float


def make_optimizer(model: nn.Module, cfg: OptimFields) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only, fused (one kernel per step for all parameters).

    torch has fused AdamW kernels for CUDA and CPU; on CPU the per-parameter loop torch defaults to
    costs ~10 small kernels per tensor, which is a visible share of a proxy's step.
    """
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    fused = all(p.device.type in ("cuda", "cpu") for p in model.parameters())
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=1e-8, fused=fused or None)
