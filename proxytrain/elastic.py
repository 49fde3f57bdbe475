"""Resuming a run with another number of ranks: the global batch, and who may change the world size.

The global batch is the unit that must not change for a resumed run to train on the same rows at
every step: ``global_batch_size`` rows per optimizer step over all ranks. It is taken from the
config when set, else from the checkpoint being resumed (``extra["batch"]["global"]``), else it is
``micro_batch_size * grad_accum * ranks``. Each rank then reads ``global / ranks`` rows per step in
``grad_accum`` micro-batches of at most ``micro_batch_size`` rows: the fewest micro-batches that
divide the rank's rows evenly (the loss is normalised by the global target-token count, so the
split does not change the gradient). A global batch that the ranks cannot share evenly is refused
before the model is built.

A checkpoint written by another number of ranks is loaded only when the data source says its
cursor is global (``resumes_across_world_sizes``: shards, synthetic data) and so does the
objective, if any: model and optimizer are resharded by ``torch.distributed.checkpoint``, the
JSON state (cursor, spike guard, RNG, objective) is rank 0's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpusmix.config import ConfigError


@dataclass(frozen=True)
class BatchPlan:
    global_rows: int
    micro: int
    accum: int
    world: int

    def as_dict(self) -> dict[str, int]:
        return {"global": self.global_rows, "micro": self.micro, "accum": self.accum, "world": self.world}


def previous_run(checkpoint: Path | None) -> dict[str, Any] | None:
    """``{"world": ranks, "global": rows per step or None}`` of the checkpoint to resume (JSON only)."""
    if checkpoint is None:
        return None
    try:
        marker = json.loads((checkpoint / "COMPLETE").read_text())
        extra = json.loads((checkpoint / "extra-rank0.json").read_text())
    except (OSError, ValueError):
        return None  # load_checkpoint reports an unreadable checkpoint with its own message
    batch = extra.get("batch") or {}
    return {"world": int(marker.get("world_size", 0)), "global": batch.get("global")}


def batch_plan(global_batch_size: int, micro_batch_size: int, grad_accum: int, world: int,
               previous: dict[str, Any] | None = None) -> BatchPlan:
    """The rows per step and their split over ranks and micro-batches (see the module docstring)."""
    if micro_batch_size < 1 or grad_accum < 1:
        raise ConfigError(f"micro_batch_size and grad_accum must be >= 1, got {micro_batch_size} and {grad_accum}")
    if global_batch_size < 0:
        raise ConfigError(f"global_batch_size must be >= 0 (0: from the checkpoint or micro_batch_size x "
                          f"grad_accum x ranks), got {global_batch_size}")
    prev = (previous or {}).get("global")
    rows = global_batch_size or prev or micro_batch_size * grad_accum * world
    if rows % world:
        where = "global_batch_size" if global_batch_size else "the checkpoint's global batch"
        raise ConfigError(f"{where} of {rows} rows is not divisible by {world} ranks: resume with a number of "
                          f"ranks that divides {rows}, or set global_batch_size to a multiple of {world} (the "
                          "rows per step then change)")
    per_rank = rows // world
    accum = -(-per_rank // micro_batch_size)
    while per_rank % accum:
        accum += 1
    return BatchPlan(global_rows=rows, micro=per_rank // accum, accum=accum, world=world)


def resumes_across_world_sizes(source: Any, objective: Any) -> bool:
    """Whether the data source (and the objective, if any) keep a global, rank-independent state."""
    return bool(getattr(source, "resumes_across_world_sizes", False)) and (
        objective is None or bool(getattr(objective, "resumes_across_world_sizes", False)))


def data_record(source: Any) -> dict[str, float]:
    """Per-domain tokens consumed and planned (``data_tokens/<d>``, ``data_planned/<d>``), if the source counts."""
    if not hasattr(source, "accounting"):
        return {}
    rec: dict[str, float] = {}
    for d, v in source.accounting().items():
        rec[f"data_tokens/{d}"] = v["consumed"]
        rec[f"data_planned/{d}"] = v["planned"]
    return rec
