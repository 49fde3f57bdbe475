"""A proxy run's settings (:class:`ProxyConfig`, ``params.yaml``: ``mix.proxy``) and the trainer's
``proxytrain.train.TrainConfig`` they map to (:func:`train_config`).

The proxy's fields keep their own names and defaults: their names and values are hashed into every
proxy's cache key and written into its result (:mod:`mix.proxy_cache`); the trainer's settings that
a proxy fixes (optimizer, schedule floor, clipping, evaluation cadence) are set in :func:`train_config`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpusmix.config import ConfigError


@dataclass
class ProxyConfig:
    """One proxy run (``params.yaml``: ``mix.presets.<name>.proxy``)."""

    model_preset: str = field(default="tiny", metadata={"help": "proxytrain.model preset"})
    d_model: int = field(default=0, metadata={"help": "override the preset's width (0 = preset)"})
    n_layers: int = field(default=0, metadata={"help": "override the preset's depth (0 = preset)"})
    n_heads: int = field(default=0, metadata={"help": "override the preset's heads (0 = preset)"})
    steps: int = field(default=200, metadata={"help": "optimizer steps"})
    batch_size: int = field(default=8, metadata={"help": "sequences per step (all ranks together)"})
    seq_len: int = field(default=128, metadata={"help": "tokens per sequence"})
    lr: float = field(default=3e-3, metadata={"help": "peak learning rate"})
    warmup: int = field(default=20, metadata={"help": "warmup steps"})
    val_batches: int = field(default=4, metadata={"help": "validation batches per domain"})
    val_seed: int = field(default=1234, metadata={"help": "seed of the (shared) validation batches"})
    val_windows: str = field(default="spread", metadata={
        "help": "spread: the validation windows evenly spaced over each domain's split; first: its first "
                "consecutive windows (one or two documents at micro size)"})
    sampling: str = field(default="stratified", metadata={
        "help": "stratified: each domain gets its exact share of rows (low-discrepancy sequence) and "
                "its own window stream, so runs on nearby mixtures see nearly the same data; "
                "iid: every row's domain drawn independently"})
    head_dtype: str = field(default="fp32", metadata={
        "help": "fp32 | bf16: the output projection's precision (bf16 inputs, fp32 accumulation, fp32 loss); "
                "on CPUs with native bf16 (avx512_bf16 / AMX) about half a small proxy's step"})
    device: str = field(default="auto", metadata={
        "help": "auto (CUDA when present) | cpu | cuda: where proxies train (not part of the cache key on CPU)"})
    ckpt_every: int = field(default=0, metadata={
        "help": "checkpoint a proxy every N steps so a killed long proxy resumes (0 = off: it restarts)"})

    def validate(self) -> None:
        for name in ("steps", "batch_size", "seq_len", "val_batches"):
            if getattr(self, name) < 1:
                raise ValueError(f"proxy {name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"proxy lr must be > 0, got {self.lr}")
        if self.sampling not in ("stratified", "iid"):
            raise ValueError(f"proxy sampling must be 'stratified' or 'iid', got {self.sampling!r}")
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"proxy device must be auto, cpu or cuda, got {self.device!r}")
        if self.ckpt_every < 0:
            raise ValueError(f"proxy ckpt_every must be >= 0, got {self.ckpt_every}")
        if self.val_windows not in ("spread", "first"):
            raise ValueError(f"proxy val_windows must be spread or first, got {self.val_windows!r}")
        if self.head_dtype not in ("fp32", "bf16"):
            raise ValueError(f"proxy head_dtype must be fp32 or bf16, got {self.head_dtype!r}")


# fields that say where and how safely a proxy runs, not what it computes: out of the cache key
PLACEMENT_FIELDS = ("device", "ckpt_every")


def train_config(cfg: ProxyConfig, *, vocab_size: int, seed: int, out_dir: str | Path, rows: int,
                 world: int = 1, progress: bool = False) -> Any:
    """The ``proxytrain.train.TrainConfig`` of a proxy run (``rows`` per step, all ranks together)."""
    from proxytrain.train_config import TrainConfig
    if rows % world:
        raise ConfigError(f"a proxy step of {rows} rows cannot be split over {world} ranks: make the proxy "
                          f"batch_size a multiple of the world size ({world})")
    device = resolve_device(cfg.device)
    return TrainConfig(
        model=cfg.model_preset, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
        vocab_size=vocab_size, seq_len=cfg.seq_len, steps=cfg.steps, micro_batch_size=rows // world, grad_accum=1,
        lr=cfg.lr, min_lr=cfg.lr * 0.1, warmup_steps=cfg.warmup, weight_decay=0.1, beta1=0.9, beta2=0.95,
        grad_clip=1.0, dtype="auto", attn_backend="auto", head_dtype=cfg.head_dtype, device=device,
        # one thread per proxy on CPU: `workers` proxies share the cores (and the bits do not depend
        # on the machine's OMP_NUM_THREADS)
        threads=1 if device == "cpu" else 0, seed=seed, ckpt_every=cfg.ckpt_every, keep_checkpoints=1,
        resume=True, eval_every=cfg.steps, eval_batches=cfg.val_batches, eval_batch_size=cfg.batch_size,
        dvclive=False, progress=progress, monitor_every=0, out_dir=str(out_dir))


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("proxy device cuda: no CUDA device here; use device auto or cpu")
    return device


def shape_config(cfg: ProxyConfig) -> Any:
    """The trainer config that fixes a proxy's model shape (model size, FLOPs per token)."""
    from proxytrain.train_config import TrainConfig

    return TrainConfig(model=cfg.model_preset, d_model=cfg.d_model, n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                       seq_len=cfg.seq_len, head_dtype=cfg.head_dtype)
