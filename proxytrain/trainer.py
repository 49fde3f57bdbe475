"""The training loop as a small ``Trainer``: setup, step, evaluate, checkpoint (nanoGPT-like, flat).

``Trainer(cfg, source, ...)`` sets up the run (ranks, model, optimizer, resume from the latest
checkpoint, run log); ``run()`` calls ``step()`` until ``cfg.steps``, with ``evaluate()`` and
``checkpoint()`` at their intervals. ``proxytrain.train.train`` is the public entry over it. What
one step does, the objective hook and the spike guard: docs/full-scale.md (The training loop).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger
from proxytrain import cpu_kernels, elastic
from proxytrain.attention import auto_reason, resolve_backend
from proxytrain.flops import flops_per_token, mfu, peak_flops
from proxytrain.loss import domain_sums, evaluate, per_token_loss, target_mask
from proxytrain.lr_schedule import lr_at
from proxytrain.model import build_model, count_params
from proxytrain.monitor import LayerMonitor, RunLogger, peak_memory_gb
from proxytrain.optim import make_optimizer
from proxytrain.parallel import all_reduce_sum, is_distributed, parallelize, reshard_all, setup_distributed
from proxytrain.spike_guard import SpikeGuard, TrainingAborted
from proxytrain.train_config import TrainConfig, model_config

log = get_logger("proxytrain.train")


class BatchSource(Protocol):
    """Where batches come from (see ``proxytrain.train_cli`` for shards, pools and synthetic data).

    ``next_batch(n)`` returns the trainer-batch dict of docs/formats.md with a leading batch
    dimension (``tokens`` int64 [n, S], ``segment_ids`` int32 [n, S], ``domain_id`` int64 [n]);
    ``state_dict()`` is the JSON-able data cursor saved in checkpoints.
    """

    domains: list[str]
    vocab_size: int

    def next_batch(self, n: int) -> dict[str, torch.Tensor]: ...

    def eval_batches(self, n: int, count: int) -> list[dict[str, torch.Tensor]]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class Objective(Protocol):
    """A reweighting of the per-token loss, with state saved in checkpoints (docs/full-scale.md)."""

    def token_loss(self, step: int, batch: dict[str, torch.Tensor], loss_tok: torch.Tensor,
                   mask: torch.Tensor) -> torch.Tensor: ...

    def record(self) -> dict[str, float]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def _param_norm(model: torch.nn.Module) -> float:
    from torch.distributed.tensor import DTensor

    local = [(p.to_local() if isinstance(p, DTensor) else p).detach() for p in model.parameters()]
    # one fused kernel for the per-tensor norms (no fp64 copy of every parameter each step), then
    # their squares summed in fp64 (and over ranks: each holds its shards)
    norms = torch._foreach_norm(local)
    sq = torch.stack(norms).double().pow(2).sum()
    return float(all_reduce_sum(sq).sqrt())


def _grad_norm_clip(model: torch.nn.Module, clip: float) -> float:
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.nn.utils.clip_grad_norm_(params, clip if clip > 0 else float("inf"), foreach=True)
    if hasattr(norm, "full_tensor"):
        norm = norm.full_tensor()
    return float(norm)


@dataclass
class _ParallelOpts:
    activation_checkpointing: bool
    compile: bool
    dtype: str


def _val_batches(cfg: TrainConfig, val_source: BatchSource | None) -> list[dict[str, torch.Tensor]]:
    if val_source is None or cfg.eval_every <= 0:
        return []
    return val_source.eval_batches(cfg.eval_batch_size, cfg.eval_batches)


class Trainer:
    """One training run (or its resumption). Under torchrun, ``source`` is this rank's share of the data.

    After construction ``step`` is the next step to run, ``history`` the records so far and ``val``
    the latest validation losses.
    """

    def __init__(self, cfg: TrainConfig, source: BatchSource, *, val_source: BatchSource | None = None,
                 objective: Objective | None = None) -> None:
        from proxytrain import checkpoint as ckpt  # torch.distributed.checkpoint: slow import

        self.cfg, self.source, self.objective = cfg, source, objective
        self.rank, self.world, self.device = setup_distributed(cfg.device)
        self.dtype = cfg.resolved_dtype(self.device)
        if cfg.threads > 0:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.domains = source.domains
        self.out = Path(cfg.out_dir)
        self.ckpt_dir = self.out / "checkpoints"
        latest = ckpt.latest_checkpoint(self.ckpt_dir) if cfg.resume else None
        prev = elastic.previous_run(latest)
        self.plan = elastic.batch_plan(cfg.global_batch_size, cfg.micro_batch_size, cfg.grad_accum, self.world,
                                       prev)
        self.any_world = elastic.resumes_across_world_sizes(source, objective)
        if prev and prev["world"] != self.world and not self.any_world:
            raise ckpt.CheckpointError(f"checkpoint {latest} was written by {prev['world']} ranks, this run has "
                                       f"{self.world}, and its {type(source).__name__} data (or objective) keeps "
                                       f"a per-rank state; resume with --nproc {prev['world']}")
        self.vocab = cfg.vocab_size or source.vocab_size
        if self.vocab < source.vocab_size:
            raise ConfigError(f"vocab_size={self.vocab} is smaller than the data's vocabulary {source.vocab_size}")
        self._setup_model()
        self.step, self.resumed = 0, False
        if latest is not None:
            self._resume(latest, prev)
        self._setup_run(val_source)

    # ---- setup

    def _setup_model(self) -> None:
        """Model, parallelism, optimizer, autocast, layer monitor and spike guard."""
        cfg, device, dtype = self.cfg, self.device, self.dtype
        self.mcfg = model_config(cfg, self.vocab)
        if self.mcfg.head_dtype == "bf16" and device.type == "cpu" and dtype == "fp32":
            cpu_kernels.warn_without_native_bf16()
        model = build_model(self.mcfg, device, materialize=False)
        parallelize(model, _ParallelOpts(cfg.activation_checkpointing, cfg.compile, dtype))
        model.to_empty(device=device)
        model.init_weights(cfg.seed)
        self.model = model
        self.optimizer = make_optimizer(model, cfg)
        # single process bf16: autocast, for training AND evaluation (FSDP runs cast the parameters
        # through its policy instead)
        self.autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if dtype == "bf16"
                         and not is_distributed() else contextlib.nullcontext())
        self.monitor = LayerMonitor(model, cfg.monitor_every)
        self.guard = SpikeGuard(cfg)

    def _resume(self, latest: Path, prev: dict[str, Any] | None) -> None:
        from proxytrain import checkpoint as ckpt

        extra = ckpt.load_checkpoint(latest, self.model, self.optimizer, any_world=self.any_world)
        self.step, self.resumed = int(extra["step"]), True
        self.source.load_state_dict(extra["data"])
        self.guard.load_state_dict(extra["guard"])
        ckpt.set_rng_state(extra["rng"], self.device)
        if self.objective is not None:
            if "objective" not in extra:
                raise ckpt.CheckpointError(f"checkpoint {latest} holds no objective state, but this run has an "
                                           "objective: it was written by another kind of run; use a new out_dir")
            self.objective.load_state_dict(extra["objective"])
        plan = self.plan
        if self.rank == 0:
            log.info("resumed", extra={"data": {"checkpoint": str(latest), "step": self.step,
                                                "batch": plan.as_dict(),
                                                "ranks_before": prev["world"] if prev else None}})
            if prev and prev["global"] and prev["global"] != plan.global_rows:
                log.warning(f"the global batch changes from {prev['global']} to {plan.global_rows} rows per step: "
                            "the data stream continues without repeats or gaps, but later steps hold other rows "
                            "than an uninterrupted run's")

    def _setup_run(self, val_source: BatchSource | None) -> None:
        """FLOP accounting, validation batches, the run log and its ``start`` line, a fixed batch."""
        cfg, device = self.cfg, self.device
        n_params = count_params(self.model)
        self.flops_tok = flops_per_token(self.mcfg, self.model, seq_len=cfg.seq_len)
        self.peak = peak_flops(device, self.dtype)
        self.tokens_per_step = self.plan.global_rows * cfg.seq_len
        self.val_batches = _val_batches(cfg, val_source)
        self.logger = RunLogger(cfg, self.out, self.step, self.rank, self.resumed)
        attn = resolve_backend(cfg.attn_backend, device)
        attn_why = auto_reason(device) if cfg.attn_backend == "auto" else "attn_backend set explicitly"
        if self.rank == 0:
            log.info("start", extra={"data": {"params_non_embedding": n_params, "world": self.world,
                                              "device": str(device), "dtype": self.dtype, "attention": attn,
                                              "attention_reason": attn_why,
                                              "tokens_per_step": self.tokens_per_step,
                                              "batch": self.plan.as_dict(), "config": asdict(cfg)}})
            if device.type == "cuda" and attn != "flash":
                log.warning(f"FlashAttention is off: attention backend {attn} ({attn_why})")
        self.fixed = [self.source.next_batch(self.plan.micro) for _ in range(self.plan.accum)] \
            if cfg.overfit_one_batch else None
        self.history: list[dict[str, Any]] = []
        self.val: dict[str, float] = {}

    # ---- the loop

    def run(self, on_step: Callable[[int, dict[str, Any], torch.nn.Module], None] | None = None) -> None:
        """Train until ``cfg.steps``; ``on_step(step, record, model)`` is called after every step."""
        cfg = self.cfg
        self.model.train()
        try:
            while self.step < cfg.steps:
                rec = self.train_step()
                if rec is None:  # skipped by the spike guard
                    continue
                step = self.step
                if self.val_batches and cfg.eval_every > 0 and (step % cfg.eval_every == 0 or step == cfg.steps):
                    self.val = self.evaluate()
                    rec.update({f"val_loss/{k}": v for k, v in self.val.items()})
                at_ckpt = cfg.ckpt_every > 0 and (step % cfg.ckpt_every == 0 or step == cfg.steps)
                if at_ckpt or step == cfg.steps:  # per-domain tokens consumed vs planned by the mixture
                    rec.update(elastic.data_record(self.source))
                self.logger.record(rec)
                self.history.append(rec)
                if at_ckpt:
                    self.checkpoint(step)
                if on_step is not None:
                    on_step(step, rec, self.model)
        finally:
            self.logger.close()

    def _micro_batches(self) -> tuple[list[dict[str, torch.Tensor]], torch.Tensor]:
        """This step's micro-batches on the device, and the global number of target tokens."""
        vocab, plan = self.vocab, self.plan
        micro = self.fixed or [self.source.next_batch(plan.micro) for _ in range(plan.accum)]
        for b in micro:  # checked on the host, before the copy: no device sync
            if int(b["tokens"].max()) >= vocab or int(b["tokens"].min()) < 0:
                raise ConfigError(f"token id {int(b['tokens'].max())} outside the vocabulary 0..{vocab - 1}: "
                                  "the data was made with another tokenizer; pass the right --tokenizer")
        n_tgt = torch.tensor(float(sum(int(target_mask(b["segment_ids"]).sum()) for b in micro)),
                             device=self.device)
        n_tgt = all_reduce_sum(n_tgt).clamp_min(1.0)
        micro = [{k: v.to(self.device, non_blocking=True) for k, v in b.items()} for b in micro]
        return micro, n_tgt

    def _forward_backward(self, micro: list[dict[str, torch.Tensor]],
                          n_tgt: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward + backward over the micro-batches: per-domain loss sums and the objective's sum."""
        model, objective, step, n_dom = self.model, self.objective, self.step, len(self.domains)
        sums = torch.zeros(2, n_dom, dtype=torch.float64, device=self.device)
        obj_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        for i, b in enumerate(micro):
            if is_distributed():
                model.set_requires_gradient_sync(i == len(micro) - 1)
            with self.autocast:
                logits = model(b["tokens"], b["segment_ids"])
            loss_tok, mask = per_token_loss(logits, b["tokens"], b["segment_ids"])
            opt_tok = loss_tok if objective is None else objective.token_loss(step, b, loss_tok, mask)
            (opt_tok.sum() / n_tgt).backward()
            sums += domain_sums(loss_tok, mask, b["domain_id"], n_dom)
            if objective is not None:
                obj_sum += opt_tok.detach().double().sum()
        return sums, obj_sum

    def train_step(self) -> dict[str, Any] | None:
        """One optimizer step: its log record, or None when the spike guard skipped the batch."""
        cfg, objective, optimizer, step = self.cfg, self.objective, self.optimizer, self.step
        t0 = time.perf_counter()
        lr = lr_at(step, cfg) * self.guard.lr_scale
        for group in optimizer.param_groups:
            group["lr"] = lr
        if objective is not None and hasattr(objective, "begin_step"):  # optional: work before the forward
            with self.autocast:
                objective.begin_step(step, self.model)
        micro, n_tgt = self._micro_batches()
        self.monitor.begin(step)
        sums, obj_sum = self._forward_backward(micro, n_tgt)
        all_reduce_sum(sums)
        loss = float(sums[0].sum() / sums[1].sum().clamp_min(1.0))
        layer_stats = self.monitor.end(step)  # before clipping: the raw per-layer gradient norms
        grad_norm = _grad_norm_clip(self.model, cfg.grad_clip)

        # ---- spike guard, then the update
        reason = self.guard.check(loss, grad_norm)
        if reason is not None:
            self._skip(reason, loss, grad_norm)
            return None
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        self.guard.accept(loss)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        dt = time.perf_counter() - t0
        tps = self.tokens_per_step / dt
        rec = {"step": step, "loss": loss, "lr": lr, "grad_norm": grad_norm, "param_norm": _param_norm(self.model),
               "tokens": self.tokens_per_step, "flops": self.tokens_per_step * self.flops_tok,
               "tokens_per_s": tps, "mfu": mfu(tps, self.flops_tok, self.peak, self.world), "step_s": dt,
               "peak_mem_gb": peak_memory_gb(self.device), **layer_stats}
        for d, name in enumerate(self.domains):
            if sums[1, d] > 0:
                rec[f"loss/{name}"] = float(sums[0, d] / sums[1, d])
        if objective is not None:
            rec["objective_loss"] = float(all_reduce_sum(obj_sum) / n_tgt.double())
            rec.update(objective.record())
        self.step = step + 1
        return rec

    def evaluate(self) -> dict[str, float]:
        """Per-domain validation loss over the validation batches (every rank the same rows)."""
        with self.autocast:  # evaluate in the precision the model trains in
            val = evaluate(self.model, self.val_batches, self.domains, reduce=all_reduce_sum)
        reshard_all(self.model)
        return val

    # ---- checkpoints and the spike guard

    def checkpoint(self, at: int) -> None:
        """Save a checkpoint of step ``at``: model, optimizer, data cursor, guard, RNG (and objective)."""
        from proxytrain import checkpoint as ckpt

        guard = self.guard
        extra = {"data": self.source.state_dict(), "guard": guard.state_dict(), "rng": ckpt.rng_state(self.device),
                 "scheduler": {"step": at, "lr_scale": guard.lr_scale}, "batch": self.plan.as_dict()}
        if self.objective is not None:
            extra["objective"] = self.objective.state_dict()
        ckpt.save_checkpoint(self.ckpt_dir, at, self.model, self.optimizer, extra, keep=self.cfg.keep_checkpoints)

    def _skip(self, reason: str, loss: float, grad_norm: float) -> None:
        """Drop the step's gradients, log the skip; roll back after too many in a row."""
        guard = self.guard
        self.optimizer.zero_grad(set_to_none=True)
        guard.consecutive += 1
        rec = {"step": self.step, "event": "skip", "reason": reason, "loss": loss, "grad_norm": grad_norm,
               "consecutive": guard.consecutive}
        log.warning("loss spike: batch skipped", extra={"data": rec})
        self.logger.event(rec)
        self.history.append(rec)
        if guard.consecutive >= self.cfg.spike_max_consecutive:
            self.step = self._rollback()

    def _rollback(self) -> int:
        """Reload the latest checkpoint's model/optimizer, keep the data cursor, lower the lr."""
        from proxytrain import checkpoint as ckpt

        cfg, guard, step = self.cfg, self.guard, self.step
        latest = ckpt.latest_checkpoint(self.ckpt_dir)
        if latest is None:
            raise TrainingAborted(f"{guard.consecutive} loss spikes in a row at step {step} and no checkpoint to "
                                  "roll back to: lower lr, raise warmup_steps, or set ckpt_every")
        if guard.rollbacks >= cfg.max_rollbacks:
            raise TrainingAborted(f"loss keeps spiking after {guard.rollbacks} rollbacks (step {step}): lower lr or "
                                  "inspect the data around this step")
        extra = ckpt.load_checkpoint(latest, self.model, self.optimizer, any_world=True)  # checked at setup
        rollbacks, scale = guard.rollbacks + 1, guard.lr_scale * cfg.spike_lr_factor
        guard.load_state_dict(extra["guard"])
        guard.rollbacks, guard.lr_scale, guard.consecutive = rollbacks, scale, 0
        if self.objective is not None and "objective" in extra:
            self.objective.load_state_dict(extra["objective"])
        back = int(extra["step"])
        rec = {"step": step, "event": "rollback", "to_step": back, "lr_scale": scale, "rollbacks": rollbacks}
        log.warning("rolled back after repeated loss spikes", extra={"data": rec})
        self.logger.event(rec)
        self.history.append(rec)
        return back
