"""The training run's settings (``params.yaml``'s ``train:`` section) and the model shape they describe."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from corpusmix.config import ConfigError

if TYPE_CHECKING:  # torch loads with the model, in the training command (not when the CLI is built)
    import torch

    from proxytrain.model import ModelConfig


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
    from proxytrain.model import ModelConfig

    if cfg.head_dtype not in ("fp32", "bf16"):
        raise ConfigError(f"head_dtype must be fp32 or bf16, got {cfg.head_dtype!r}")
    shape = {k: getattr(cfg, k) for k in ("d_model", "n_layers", "n_heads") if getattr(cfg, k)}
    return ModelConfig.preset(cfg.model, vocab_size=vocab_size, max_seq_len=cfg.seq_len, n_kv_heads=cfg.n_kv_heads,
                              tie_embeddings=cfg.tie_embeddings, attn_backend=cfg.attn_backend,
                              head_dtype=cfg.head_dtype, **shape)
