"""Training health signals for long runs: per-layer statistics, peak memory, the loss-spike event log.

``LayerMonitor`` samples every ``every`` steps (``train.monitor_every``): forward hooks on each block
record the RMS and the largest absolute value of the block's output (the residual stream), and after
backward the gradient norm of each block's parameters and of the embedding is taken (before
clipping). Under FSDP the statistics are reduced over ranks (sums of squares summed, maxima maxed),
so they describe the global batch. The trainer puts them into its step record, which goes to the
JSONL log and to dvclive (``act_rms/layer_3``, ``act_absmax/layer_3``, ``grad_norm/layer_3``,
``grad_norm/tok_emb``). Off-interval steps register no hooks and cost nothing.

``peak_memory_gb(device)``: the CUDA allocator's peak since start, or the process's peak resident
set size on CPU. ``EventLog`` appends the spike guard's decisions (skips, rollbacks) to
``events.jsonl``, one JSON object a line, so a long run's incidents can be read without the metrics.
``RunLogger`` writes the trainer's step records (JSONL + dvclive + tqdm) on rank 0.
"""

from __future__ import annotations

import json
import math
import resource
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if hasattr(t, "to_local") else t  # DTensor shard -> its local part


class LayerMonitor:
    """Per-block activation and gradient-norm statistics at an interval (see the module docstring)."""

    def __init__(self, model: nn.Module, every: int) -> None:
        self.model, self.every = model, every
        self.layers: list[nn.Module] = list(model.layers)  # type: ignore[arg-type]
        self._hooks: list[Any] = []
        self._act: torch.Tensor | None = None  # [L, 3]: sum of squares, element count, abs max

    def wants(self, step: int) -> bool:
        return self.every > 0 and step % self.every == 0

    def begin(self, step: int) -> None:
        """Before the step's forwards: hook the blocks when this step is sampled."""
        if not self.wants(step):
            return
        dev = next(self.model.parameters()).device
        self._act = torch.zeros(len(self.layers), 3, dtype=torch.float64, device=dev)
        for i, layer in enumerate(self.layers):
            self._hooks.append(layer.register_forward_hook(self._make_hook(i)))

    def _make_hook(self, i: int) -> Any:
        @torch.compiler.disable  # statistics run eagerly, outside a compiled block's graph
        def hook(_module: nn.Module, _args: Any, out: torch.Tensor) -> None:
            with torch.no_grad():
                x = out.detach().float()
                self._act[i, 0] += x.pow(2).sum().double()
                self._act[i, 1] += x.numel()
                self._act[i, 2] = torch.maximum(self._act[i, 2], x.abs().max().double())
        return hook

    def end(self, step: int) -> dict[str, float]:
        """After backward, before clipping: remove the hooks and return the step's statistics."""
        for h in self._hooks:
            h.remove()
        self._hooks = []
        if not self.wants(step) or self._act is None:
            return {}
        act, self._act = self._act, None
        groups = [("tok_emb", list(self.model.tok_emb.parameters()))]
        groups += [(f"layer_{i}", list(layer.parameters())) for i, layer in enumerate(self.layers)]
        sq = torch.zeros(len(groups), dtype=torch.float64, device=act.device)
        for g, (_, params) in enumerate(groups):
            for p in params:
                if p.grad is not None:
                    sq[g] += _local(p.grad).detach().double().pow(2).sum()
        sums = torch.cat([act[:, :2].flatten(), sq])
        absmax = act[:, 2].clone()
        from proxytrain.parallel import is_distributed

        if is_distributed():
            import torch.distributed as dist

            dist.all_reduce(sums)
            dist.all_reduce(absmax, op=dist.ReduceOp.MAX)
        n = len(self.layers)
        act_sums = sums[: 2 * n].view(n, 2)
        out: dict[str, float] = {}
        for i in range(n):
            out[f"act_rms/layer_{i}"] = float((act_sums[i, 0] / act_sums[i, 1].clamp_min(1)).sqrt())
            out[f"act_absmax/layer_{i}"] = float(absmax[i])
        for g, (name, _) in enumerate(groups):
            out[f"grad_norm/{name}"] = float(sums[2 * n + g].sqrt())
        return out


def peak_memory_gb(device: torch.device) -> float:
    """Peak memory of this rank: CUDA allocator peak, or the process's peak RSS on CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (2**30 if sys.platform == "darwin" else 2**20)


class EventLog:
    """Append-only JSONL of spike-guard events (``events.jsonl`` next to the training log)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def write(self, rec: dict[str, Any]) -> None:
        if self.path is None:
            return
        with open(self.path, "a") as fh:
            fh.write(json.dumps(rec) + "\n")


# step-record fields measured in wall-clock time or on this machine: in train_timing.jsonl, not in
# train_log.jsonl or dvclive (DVC outputs, the same bytes on every run); the in-memory history keeps them
TIMING_FIELDS = frozenset({"tokens_per_s", "mfu", "step_s", "peak_mem_gb"})


class RunLogger:
    """JSONL + dvclive + tqdm, on rank 0 only."""

    def __init__(self, cfg: Any, out: Path, start: int, rank: int, resumed: bool) -> None:
        self.on = rank == 0
        self.fh = self.timing = self.live = self.bar = None
        self.events = EventLog(None)
        if not self.on:
            return
        out.mkdir(parents=True, exist_ok=True)
        self.fh = open(out / "train_log.jsonl", "a" if resumed else "w")
        # wall-clock fields of each step beside the log: train_log.jsonl is a DVC output (results only)
        self.timing = open(out / "train_timing.jsonl", "a" if resumed else "w")
        if not resumed:
            (out / "events.jsonl").unlink(missing_ok=True)
        self.events = EventLog(out / "events.jsonl")
        if cfg.dvclive:
            from dvclive import Live

            self.live = Live(dir=str(out / "dvclive"), resume=resumed, save_dvc_exp=False, dvcyaml=None)
        if cfg.progress:
            from tqdm import tqdm

            self.bar = tqdm(total=cfg.steps, initial=start, desc="train", unit="step", dynamic_ncols=True)

    def record(self, rec: dict[str, Any]) -> None:
        if not self.on:
            return
        self.fh.write(json.dumps({k: v for k, v in rec.items() if k not in TIMING_FIELDS}) + "\n")
        self.fh.flush()
        self.timing.write(json.dumps({"step": rec["step"], **{k: rec[k] for k in TIMING_FIELDS if k in rec}}) + "\n")
        self.timing.flush()
        if self.live is not None:
            self.live.step = rec["step"]
            for k, v in rec.items():
                if k in TIMING_FIELDS:  # dvclive's files are DVC outputs: results only, timings stay in the log
                    continue
                if k != "step" and isinstance(v, int | float) and v is not None and math.isfinite(v):
                    self.live.log_metric(k.replace("/", "_"), v, plot=True)  # "loss" vs "loss/x" would clash
            self.live.next_step()
        if self.bar is not None and "loss" in rec:
            self.bar.n = rec["step"] + 1
            self.bar.set_postfix(loss=f"{rec['loss']:.4f}", refresh=False)
            self.bar.refresh()

    def event(self, rec: dict[str, Any]) -> None:
        """Guard events (skips, rollbacks): JSONL only (the log and events.jsonl), they are not metrics."""
        if self.fh:
            self.fh.write(json.dumps(rec) + "\n")
            self.fh.flush()
        self.events.write(rec)

    def close(self) -> None:
        if self.fh:
            self.fh.close()
            self.timing.close()
        if self.live is not None:
            self.live.end()
        if self.bar is not None:
            self.bar.close()
