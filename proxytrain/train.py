"""Training entry point: ``train()`` runs (or resumes) one training run through ``proxytrain.trainer``.

Run it through the CLI (``corpusmix train``, see ``proxytrain.train_cli``) or in-process::

    result = train(TrainConfig(model="tiny", steps=200), source=SyntheticSource(vocab_size=512, seq_len=128))

Checkpoints every ``ckpt_every`` steps (atomic, see ``proxytrain.checkpoint``) and auto-resume from
the latest one, with data cursor and RNG state, so a killed run continues with exactly the same
losses on CPU; a checkpoint of another number of ranks resumes too when the data cursor is global
(``proxytrain.elastic``). ``objective`` lets a caller reweight the per-token loss (the mixture
searches' Group-DRO proxies, ``mix.dro``). What a step does, the objective hook and the spike
guard: docs/full-scale.md (The training loop).

``TrainConfig``, ``model_config``, ``BatchSource`` and ``Objective`` are importable from here too
(``proxytrain.train_config``, ``proxytrain.trainer``): the names callers of ``train()`` use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from proxytrain.train_config import TrainConfig, model_config
from proxytrain.trainer import BatchSource, Objective, Trainer

__all__ = ["BatchSource", "Objective", "TrainConfig", "TrainResult", "model_config", "train"]


@dataclass
class TrainResult:
    model: torch.nn.Module
    history: list[dict[str, Any]]
    val: dict[str, float]
    step: int


def train(cfg: TrainConfig, *, source: BatchSource, val_source: BatchSource | None = None,
          on_step: Callable[[int, dict[str, Any], torch.nn.Module], None] | None = None,
          objective: Objective | None = None) -> TrainResult:
    """Run (or resume) a training run; ``on_step(step, record, model)`` is called after every step.

    Under torchrun, ``source`` must already be this rank's share of the data. ``objective``: an
    optional per-token loss reweighting (see ``proxytrain.trainer.Objective``).
    """
    trainer = Trainer(cfg, source, val_source=val_source, objective=objective)
    trainer.run(on_step)
    return TrainResult(model=trainer.model, history=trainer.history, val=trainer.val, step=trainer.step)
