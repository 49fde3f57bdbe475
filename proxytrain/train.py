"""The training loop: flat and readable top to bottom (nanoGPT-like); parallelism comes from outside.

Run it through the CLI (``corpusmix train``, see ``proxytrain.train_cli``) or in-process::

    result = train(TrainConfig(model="tiny", steps=200), source=SyntheticSource(vocab_size=512, seq_len=128))

What one step does: ``grad_accum`` micro-batches, each a forward + per-token loss whose sum is
divided by the GLOBAL number of target tokens of the step (all micro-batches, all ranks), so the
gradient is exact whatever the split; FSDP sums the gradients over ranks. Then the spike guard,
global-norm clipping, AdamW, and the log record (JSONL + dvclive + tqdm). Checkpoints every
``ckpt_every`` steps (atomic, see ``proxytrain.checkpoint``) and auto-resume from the latest one,
with data cursor and RNG state, so a killed run continues with exactly the same losses on CPU.
A checkpoint of another number of ranks resumes too when the data cursor is global (shards,
synthetic data): the global batch (``global_batch_size``) is kept and split over the new ranks
(``proxytrain.elastic``). Checkpoint steps log each domain's tokens consumed and planned by the mixture.

Objective hook: ``train(..., objective=obj)`` lets a caller reweight the per-token loss without a
second training loop (the mixture searches' Group-DRO proxies, ``mix.doremi``). Per micro-batch,
``obj.token_loss(step, batch, loss_tok, mask)`` gets the batch (on the device) and the unreduced
per-token loss ``[B, S-1]`` (zero where masked) and returns the per-token loss to optimise (same
shape; its sum is divided by the global target-token count as usual). Under torchrun it is called
on every rank in step, so it may all-reduce (``proxytrain.parallel.all_reduce_sum``).
An optional ``obj.begin_step(step, model)`` runs before each step's forward (every rank).
``obj.record()`` adds JSON-able numbers to the step's log record; ``obj.state_dict()`` /
``load_state_dict()`` (JSON-able) go into the checkpoints, so a resumed run continues the
objective's state too. The logged ``loss`` stays the plain mean (the spike guard watches it); the
optimised one is logged as ``objective_loss``. The trainer knows nothing about mixtures.

Spike guard: a non-finite loss or gradient norm, or a loss above ``spike_factor`` × the median of
the last ``spike_window`` accepted losses, skips the batch (no optimizer step). ``spike_max_consecutive``
spikes in a row roll back to the last checkpoint, keep the data cursor (the bad data is skipped, as
in PaLM), and multiply the learning rate by ``spike_lr_factor``. Everything is logged.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger
from proxytrain import cpu_kernels, elastic
from proxytrain.attention import auto_reason, resolve_backend
from proxytrain.flops import flops_per_token, mfu, peak_flops
from proxytrain.model import (
    ModelConfig,
    build_model,
    count_params,
    domain_sums,
    evaluate,
    lr_at,
    make_optimizer,
    per_token_loss,
    target_mask,
)
from proxytrain.monitor import LayerMonitor, RunLogger, peak_memory_gb
from proxytrain.parallel import all_reduce_sum, is_distributed, parallelize, reshard_all, setup_distributed

log = get_logger("proxytrain.train")


class TrainingAborted(RuntimeError):
    """The spike guard gave up (no checkpoint to roll back to, or too many rollbacks)."""


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
    """A reweighting of the per-token loss, with state saved in checkpoints (see the module docstring)."""

    def token_loss(self, step: int, batch: dict[str, torch.Tensor], loss_tok: torch.Tensor,
                   mask: torch.Tensor) -> torch.Tensor: ...

    def record(self) -> dict[str, float]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def _f(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass
class TrainConfig:
    """Everything a training run reads from ``params.yaml``'s ``train:`` section."""

    model: str = _f("tiny", "model preset: tiny | small | medium | 125m | 350m")
    d_model: int = _f(0, "override the preset's width (0 = preset)")
    n_layers: int = _f(0, "override the preset's depth (0 = preset)")
    n_heads: int = _f(0, "override the preset's heads (0 = preset)")
    vocab_size: int = _f(0, "0 = from the tokenizer / data source")
    n_kv_heads: int = _f(0, "grouped-query attention heads (0 = n_heads)")
    tie_embeddings: bool = _f(True, "share input embedding and output head")
    seq_len: int = _f(256, "tokens per row (shards: must match the manifest)")
    steps: int = _f(1000, "optimizer steps in the whole run")
    micro_batch_size: int = _f(8, "rows per rank per micro-batch")
    grad_accum: int = _f(1, "micro-batches per optimizer step")
    global_batch_size: int = _f(0, "rows per optimizer step over all ranks (0: the resumed checkpoint's, else "
                                   "micro_batch_size x grad_accum x ranks); kept across a change of ranks")
    lr: float = _f(1e-3, "peak learning rate")
    min_lr: float = _f(1e-4, "learning rate at the end of the cosine")
    warmup_steps: int = _f(100, "linear warmup steps")
    weight_decay: float = _f(0.1, "AdamW weight decay on matrices (not norms)")
    beta1: float = _f(0.9, "AdamW beta1")
    beta2: float = _f(0.95, "AdamW beta2")
    grad_clip: float = _f(1.0, "clip the global gradient norm (0 = off)")
    dtype: str = _f("auto", "auto (fp32 on CPU, bf16 on CUDA) | fp32 | bf16")
    attn_backend: str = _f("auto", "auto | sdpa | flex | flash")
    head_dtype: str = _f("fp32", "output projection: fp32 | bf16 (bf16 inputs, fp32 accumulation, bf16 logits, "
                                 "fp32 loss; with dtype fp32 on CPU, ~2x a small model's step where the CPU has "
                                 "native bf16: avx512_bf16 / AMX)")
    compile: bool = _f(False, "torch.compile each block")
    activation_checkpointing: bool = _f(False, "recompute blocks in backward")
    device: str = _f("auto", "auto | cpu | cuda")
    threads: int = _f(0, "CPU intra-op threads (0 = torch's default; 1 suits tiny proxies on busy machines)")
    seed: int = _f(0, "init and data seed")
    ckpt_every: int = _f(200, "checkpoint every N steps (0 = off)")
    keep_checkpoints: int = _f(3, "complete checkpoints kept (0 = all)")
    resume: bool = _f(True, "resume from the latest complete checkpoint in out_dir")
    eval_every: int = _f(100, "per-domain validation loss every N steps (0 = off)")
    eval_batches: int = _f(4, "validation batches (pools: per domain)")
    eval_batch_size: int = _f(8, "rows per validation batch (every rank evaluates the same rows)")
    spike_factor: float = _f(3.0, "skip a batch whose loss exceeds this x the recent median")
    spike_window: int = _f(50, "accepted losses the median is taken over")
    spike_min_history: int = _f(20, "accepted losses needed before the factor test is active")
    spike_max_consecutive: int = _f(3, "spikes in a row that trigger a rollback")
    spike_lr_factor: float = _f(0.5, "lr multiplier after a rollback")
    max_rollbacks: int = _f(3, "rollbacks before the run gives up with an error")
    overfit_one_batch: bool = _f(False, "train on the first batch only (sanity check: loss -> ~0)")
    out_dir: str = _f("runs/train", "log, dvclive and checkpoint folder")
    data: str = _f("", "shards folder (manifest.json) or pools folder (pools.json); empty = synthetic")
    data_order: str = _f("mixed", "shards: mixed (seeded by seed, the pack's domain shares in every prefix) | "
                                  "manifest (file order)")
    loader_workers: int = _f(0, "shards: dataloader worker processes per rank assembling batches")
    val_data: str = _f("", "validation shards/pools folder (pools: its held-out split by default)")
    mixture: str = _f("", "mixture.json for pools data (default: token shares)")
    tokenizer: str = _f("", "tokenizer.json the data must have been made with (hash checked)")
    tokenizer_sha256: str = _f("", "or: the expected tokenizer sha256")
    dvclive: bool = _f(True, "write dvclive metrics for dvc plots")
    progress: bool = _f(True, "tqdm progress bar")
    monitor_every: int = _f(50, "per-layer activation / gradient-norm statistics every N steps (0 = off)")

    def resolved_dtype(self, device: torch.device) -> str:
        if self.dtype == "auto":
            return "bf16" if device.type == "cuda" else "fp32"
        if self.dtype not in ("fp32", "bf16"):
            raise ConfigError(f"dtype must be auto, fp32 or bf16, got {self.dtype!r}")
        return self.dtype


def model_config(cfg: TrainConfig, vocab_size: int) -> ModelConfig:
    """The ModelConfig a TrainConfig describes (preset plus explicit overrides)."""
    if cfg.head_dtype not in ("fp32", "bf16"):
        raise ConfigError(f"head_dtype must be fp32 or bf16, got {cfg.head_dtype!r}")
    shape = {k: getattr(cfg, k) for k in ("d_model", "n_layers", "n_heads") if getattr(cfg, k)}
    return ModelConfig.preset(cfg.model, vocab_size=vocab_size, max_seq_len=cfg.seq_len, n_kv_heads=cfg.n_kv_heads,
                              tie_embeddings=cfg.tie_embeddings, attn_backend=cfg.attn_backend,
                              head_dtype=cfg.head_dtype, **shape)


@dataclass
class TrainResult:
    model: torch.nn.Module
    history: list[dict[str, Any]]
    val: dict[str, float]
    step: int


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


def train(cfg: TrainConfig, *, source: BatchSource, val_source: BatchSource | None = None,
          on_step: Callable[[int, dict[str, Any], torch.nn.Module], None] | None = None,
          objective: Objective | None = None) -> TrainResult:
    """Run (or resume) a training run; ``on_step(step, record, model)`` is called after every step.

    Under torchrun, ``source`` must already be this rank's share of the data. ``objective``: an
    optional per-token loss reweighting (see the module docstring).
    """
    from proxytrain import checkpoint as ckpt  # torch.distributed.checkpoint: slow import, keep --help fast

    rank, world, device = setup_distributed(cfg.device)
    dtype = cfg.resolved_dtype(device)
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    domains = source.domains
    out = Path(cfg.out_dir)
    ckpt_dir = out / "checkpoints"
    latest = ckpt.latest_checkpoint(ckpt_dir) if cfg.resume else None
    prev = elastic.previous_run(latest)
    plan = elastic.batch_plan(cfg.global_batch_size, cfg.micro_batch_size, cfg.grad_accum, world, prev)
    any_world = elastic.resumes_across_world_sizes(source, objective)
    if prev and prev["world"] != world and not any_world:
        raise ckpt.CheckpointError(f"checkpoint {latest} was written by {prev['world']} ranks, this run has {world}, "
                                   f"and its {type(source).__name__} data (or objective) keeps a per-rank state; "
                                   f"resume with --nproc {prev['world']}")
    vocab = cfg.vocab_size or source.vocab_size
    if vocab < source.vocab_size:
        raise ConfigError(f"vocab_size={vocab} is smaller than the data's vocabulary {source.vocab_size}")

    # ---- model, parallelism, optimizer
    mcfg = model_config(cfg, vocab)
    if mcfg.head_dtype == "bf16" and device.type == "cpu" and dtype == "fp32":
        cpu_kernels.warn_without_native_bf16()
    model = build_model(mcfg, device, materialize=False)
    parallelize(model, _ParallelOpts(cfg.activation_checkpointing, cfg.compile, dtype))
    model.to_empty(device=device)
    model.init_weights(cfg.seed)
    optimizer = make_optimizer(model, cfg)
    # single process bf16: autocast, for training AND evaluation (FSDP runs cast the parameters
    # through its policy instead)
    autocast = (torch.autocast(device.type, dtype=torch.bfloat16) if dtype == "bf16" and not is_distributed()
                else contextlib.nullcontext())
    monitor = LayerMonitor(model, cfg.monitor_every)
    guard = SpikeGuard(cfg)

    # ---- resume
    step, resumed = 0, False
    if latest is not None:
        extra = ckpt.load_checkpoint(latest, model, optimizer, any_world=any_world)
        step, resumed = int(extra["step"]), True
        source.load_state_dict(extra["data"])
        guard.load_state_dict(extra["guard"])
        ckpt.set_rng_state(extra["rng"], device)
        if objective is not None:
            if "objective" not in extra:
                raise ckpt.CheckpointError(f"checkpoint {latest} holds no objective state, but this run has an "
                                           "objective: it was written by another kind of run; use a new out_dir")
            objective.load_state_dict(extra["objective"])
        if rank == 0:
            log.info("resumed", extra={"data": {"checkpoint": str(latest), "step": step, "batch": plan.as_dict(),
                                                "ranks_before": prev["world"] if prev else None}})
            if prev and prev["global"] and prev["global"] != plan.global_rows:
                log.warning(f"the global batch changes from {prev['global']} to {plan.global_rows} rows per step: "
                            "the data stream continues without repeats or gaps, but later steps hold other rows "
                            "than an uninterrupted run's")

    def save(at: int) -> None:
        extra = {"data": source.state_dict(), "guard": guard.state_dict(), "rng": ckpt.rng_state(device),
                 "scheduler": {"step": at, "lr_scale": guard.lr_scale}, "batch": plan.as_dict()}
        if objective is not None:
            extra["objective"] = objective.state_dict()
        ckpt.save_checkpoint(ckpt_dir, at, model, optimizer, extra, keep=cfg.keep_checkpoints)

    n_params = count_params(model)
    flops_tok = flops_per_token(mcfg, model, seq_len=cfg.seq_len)
    peak = peak_flops(device, dtype)
    tokens_per_step = plan.global_rows * cfg.seq_len
    val_batches = _val_batches(cfg, val_source)
    logger = RunLogger(cfg, out, step, rank, resumed)
    attn = resolve_backend(cfg.attn_backend, device)
    attn_why = auto_reason(device) if cfg.attn_backend == "auto" else "attn_backend set explicitly"
    if rank == 0:
        log.info("start", extra={"data": {"params_non_embedding": n_params, "world": world, "device": str(device),
                                          "dtype": dtype, "attention": attn, "attention_reason": attn_why,
                                          "tokens_per_step": tokens_per_step, "batch": plan.as_dict(),
                                          "config": asdict(cfg)}})
        if device.type == "cuda" and attn != "flash":
            log.warning(f"FlashAttention is off: attention backend {attn} ({attn_why})")
    fixed = [source.next_batch(plan.micro) for _ in range(plan.accum)] \
        if cfg.overfit_one_batch else None
    history: list[dict[str, Any]] = []
    val: dict[str, float] = {}

    model.train()
    try:
        while step < cfg.steps:
            t0 = time.perf_counter()
            lr = lr_at(step, cfg) * guard.lr_scale
            for group in optimizer.param_groups:
                group["lr"] = lr
            if objective is not None and hasattr(objective, "begin_step"):  # optional: work before the forward
                with autocast:
                    objective.begin_step(step, model)
            micro = fixed or [source.next_batch(plan.micro) for _ in range(plan.accum)]
            for b in micro:  # checked on the host, before the copy: no device sync
                if int(b["tokens"].max()) >= vocab or int(b["tokens"].min()) < 0:
                    raise ConfigError(f"token id {int(b['tokens'].max())} outside the vocabulary 0..{vocab - 1}: "
                                      "the data was made with another tokenizer; pass the right --tokenizer")
            n_tgt = torch.tensor(float(sum(int(target_mask(b["segment_ids"]).sum()) for b in micro)), device=device)
            n_tgt = all_reduce_sum(n_tgt).clamp_min(1.0)
            micro = [{k: v.to(device, non_blocking=True) for k, v in b.items()} for b in micro]

            # ---- forward / backward over the micro-batches
            sums = torch.zeros(2, len(domains), dtype=torch.float64, device=device)
            obj_sum = torch.zeros((), dtype=torch.float64, device=device)
            monitor.begin(step)
            for i, b in enumerate(micro):
                if is_distributed():
                    model.set_requires_gradient_sync(i == len(micro) - 1)
                with autocast:
                    logits = model(b["tokens"], b["segment_ids"])
                loss_tok, mask = per_token_loss(logits, b["tokens"], b["segment_ids"])
                opt_tok = loss_tok if objective is None else objective.token_loss(step, b, loss_tok, mask)
                (opt_tok.sum() / n_tgt).backward()
                sums += domain_sums(loss_tok, mask, b["domain_id"], len(domains))
                if objective is not None:
                    obj_sum += opt_tok.detach().double().sum()
            all_reduce_sum(sums)
            loss = float(sums[0].sum() / sums[1].sum().clamp_min(1.0))
            layer_stats = monitor.end(step)  # before clipping: the raw per-layer gradient norms
            grad_norm = _grad_norm_clip(model, cfg.grad_clip)

            # ---- spike guard, then the update
            reason = guard.check(loss, grad_norm)
            if reason is not None:
                optimizer.zero_grad(set_to_none=True)
                guard.consecutive += 1
                rec = {"step": step, "event": "skip", "reason": reason, "loss": loss, "grad_norm": grad_norm,
                       "consecutive": guard.consecutive}
                log.warning("loss spike: batch skipped", extra={"data": rec})
                logger.event(rec)
                history.append(rec)
                if guard.consecutive >= cfg.spike_max_consecutive:
                    step = _rollback(cfg, ckpt_dir, model, optimizer, guard, device, step, logger, history,
                                     objective)
                continue
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            guard.accept(loss)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            dt = time.perf_counter() - t0
            tps = tokens_per_step / dt
            rec = {"step": step, "loss": loss, "lr": lr, "grad_norm": grad_norm, "param_norm": _param_norm(model),
                   "tokens": tokens_per_step, "flops": tokens_per_step * flops_tok,
                   "tokens_per_s": tps, "mfu": mfu(tps, flops_tok, peak, world), "step_s": dt,
                   "peak_mem_gb": peak_memory_gb(device), **layer_stats}
            for d, name in enumerate(domains):
                if sums[1, d] > 0:
                    rec[f"loss/{name}"] = float(sums[0, d] / sums[1, d])
            if objective is not None:
                rec["objective_loss"] = float(all_reduce_sum(obj_sum) / n_tgt.double())
                rec.update(objective.record())
            step += 1
            if val_batches and cfg.eval_every > 0 and (step % cfg.eval_every == 0 or step == cfg.steps):
                with autocast:  # evaluate in the precision the model trains in
                    val = evaluate(model, val_batches, domains, reduce=all_reduce_sum)
                reshard_all(model)
                rec.update({f"val_loss/{k}": v for k, v in val.items()})
            at_ckpt = cfg.ckpt_every > 0 and (step % cfg.ckpt_every == 0 or step == cfg.steps)
            if at_ckpt or step == cfg.steps:  # per-domain tokens consumed vs planned by the mixture
                rec.update(elastic.data_record(source))
            logger.record(rec)
            history.append(rec)
            if at_ckpt:
                save(step)
            if on_step is not None:
                on_step(step, rec, model)
    finally:
        logger.close()
    return TrainResult(model=model, history=history, val=val, step=step)


@dataclass
class _ParallelOpts:
    activation_checkpointing: bool
    compile: bool
    dtype: str


def _val_batches(cfg: TrainConfig, val_source: BatchSource | None) -> list[dict[str, torch.Tensor]]:
    if val_source is None or cfg.eval_every <= 0:
        return []
    return val_source.eval_batches(cfg.eval_batch_size, cfg.eval_batches)


def _rollback(cfg: TrainConfig, ckpt_dir: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
              guard: SpikeGuard, device: torch.device, step: int, logger: RunLogger,
              history: list[dict[str, Any]], objective: Objective | None = None) -> int:
    """Reload the latest checkpoint's model/optimizer, keep the data cursor, lower the lr."""
    from proxytrain import checkpoint as ckpt

    latest = ckpt.latest_checkpoint(ckpt_dir)
    if latest is None:
        raise TrainingAborted(f"{guard.consecutive} loss spikes in a row at step {step} and no checkpoint to roll "
                           "back to: lower lr, raise warmup_steps, or set ckpt_every")
    if guard.rollbacks >= cfg.max_rollbacks:
        raise TrainingAborted(f"loss keeps spiking after {guard.rollbacks} rollbacks (step {step}): lower lr or "
                           "inspect the data around this step")
    extra = ckpt.load_checkpoint(latest, model, optimizer, any_world=True)  # train() checked the world size
    rollbacks, scale = guard.rollbacks + 1, guard.lr_scale * cfg.spike_lr_factor
    guard.load_state_dict(extra["guard"])
    guard.rollbacks, guard.lr_scale, guard.consecutive = rollbacks, scale, 0
    if objective is not None and "objective" in extra:
        objective.load_state_dict(extra["objective"])
    back = int(extra["step"])
    rec = {"step": step, "event": "rollback", "to_step": back, "lr_scale": scale, "rollbacks": rollbacks}
    log.warning("rolled back after repeated loss spikes", extra={"data": rec})
    logger.event(rec)
    history.append(rec)
    return back
