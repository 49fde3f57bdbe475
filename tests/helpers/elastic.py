"""Row logging for the resume tests: which manifest rows and token fingerprints each rank consumed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from proxytrain.shards import ShardBatchSource


def fingerprint(tokens: torch.Tensor | np.ndarray) -> np.ndarray:
    """Per row, the sum of each token times its 1-based position."""
    t = np.asarray(tokens, dtype=np.int64)
    return (t * np.arange(1, t.shape[-1] + 1)).sum(-1)


def recording(src: ShardBatchSource, path: str, rank: int, world: int, stop_after: int | None = None,
              hang_after: int | None = None) -> Callable[[int, dict, object], None]:
    """Wrap ``src.next_batch`` to log, per finished step, the manifest rows and token fingerprints this
    rank consumed; returns the trainer's ``on_step``. ``stop_after``: end the process after that step
    (a preempted job: the step's checkpoint is written before ``on_step`` runs). ``hang_after``: the
    last rank of a multi-rank run writes ``<path>.hung`` after that step and hangs (a node about to be lost)."""
    got, plain = [], src.next_batch

    def next_batch(n: int) -> dict[str, torch.Tensor]:
        b = plain(n)
        got.append((src.last_rows.tolist(), fingerprint(b["tokens"]).tolist()))
        return b

    src.next_batch = next_batch  # type: ignore[method-assign]

    def on_step(step: int, rec: dict, model) -> None:
        with open(path, "a") as fh:
            fh.write(json.dumps({"step": step - 1, "rank": rank, "world": world, "loss": rec["loss"],
                                 "rows": [r for g in got for r in g[0]], "fp": [f for g in got for f in g[1]]}) + "\n")
        got.clear()
        if stop_after is not None and step == stop_after:
            raise SystemExit(0)
        if hang_after is not None and step == hang_after and world > 1 and rank == world - 1:
            Path(path + ".hung").touch()
            time.sleep(600)

    return on_step
