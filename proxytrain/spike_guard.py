"""The spike guard: which steps to skip, and when to roll back to the last checkpoint.

A non-finite loss or gradient norm, or a loss above ``spike_factor`` x the median of the last
``spike_window`` accepted losses, skips the batch; ``spike_max_consecutive`` spikes in a row roll
back (``proxytrain.trainer``). See docs/full-scale.md (The training loop).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from proxytrain.train_config import TrainConfig


class TrainingAborted(RuntimeError):
    """The spike guard gave up (no checkpoint to roll back to, or too many rollbacks)."""


class SpikeGuard:
    """Decides whether a step's loss is a spike; its state is saved in checkpoints."""

    def __init__(self, cfg: TrainConfig) -> None:
        self.cfg = cfg
        self.recent: list[float] = []
        self.consecutive = 0
        self.rollbacks = 0
        self.lr_scale = 1.0

    def check(self, loss: float, grad_norm: float | None = None) -> str | None:
        """None when fine, else the reason (``non_finite`` or ``spike``)."""
        if not math.isfinite(loss) or (grad_norm is not None and not math.isfinite(grad_norm)):
            return "non_finite"
        c = self.cfg
        if c.spike_factor > 0 and len(self.recent) >= c.spike_min_history:
            if loss > c.spike_factor * statistics.median(self.recent):
                return "spike"
        return None

    def accept(self, loss: float) -> None:
        self.consecutive = 0
        self.recent = (self.recent + [loss])[-self.cfg.spike_window:]

    def state_dict(self) -> dict[str, Any]:
        return {"recent": self.recent, "consecutive": self.consecutive, "rollbacks": self.rollbacks,
                "lr_scale": self.lr_scale}

    def load_state_dict(self, s: dict[str, Any]) -> None:
        self.recent, self.consecutive = list(s["recent"]), int(s["consecutive"])
        self.rollbacks, self.lr_scale = int(s["rollbacks"]), float(s["lr_scale"])
