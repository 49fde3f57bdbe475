"""The learning-rate schedule: linear warmup, then a cosine down to ``min_lr``."""

from __future__ import annotations

import math
from typing import Protocol


class ScheduleFields(Protocol):
    lr: float
    min_lr: float
    warmup_steps: int
    steps: int


def lr_at(step: int, cfg: ScheduleFields) -> float:
    """Linear warmup to ``lr`` over ``warmup_steps``, then cosine down to ``min_lr`` at ``steps``."""
    if cfg.warmup_steps > 0 and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + math.cos(math.pi * progress))
