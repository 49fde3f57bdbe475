"""Llama-style decoder for proxy and full training runs, plus the in-process training API.

The model is RMSNorm + RoPE + SwiGLU with optional grouped-query attention and tied or untied
embeddings. It is built on the meta device and then materialised and initialised deterministically:
every parameter's initial value depends only on ``seed`` and the parameter's name, so a model that
is sharded before it is materialised (FSDP2) holds exactly the values of an unsharded one.

The model knows nothing about parallelism; ``proxytrain.parallel.parallelize`` wraps it from the
outside. Mixture search (DoReMi, RegMix) uses the small API at the bottom of this module directly::

    model = build_model(ModelConfig.preset("tiny", vocab_size=4096), "cpu", seed=0)
    opt = make_optimizer(model, cfg)            # cfg: a TrainConfig (or anything with its fields)
    losses, mask = per_token_loss(model(tokens, segment_ids), tokens, segment_ids)
    evaluate(model, batches, domains)           # -> {domain: mean loss per target token}
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from proxytrain.attention import attend, prepare_attention
from proxytrain.ops import (
    cross_entropy,
    rms_norm,
    rope_attention,
    rope_attention_supported,
    rope_heads,
    swiglu,
)

# name -> (d_model, n_layers, n_heads); vocabulary and sequence length come from the data.
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (128, 5, 4),      # ~1.0M non-embedding parameters (RegMix-style proxy)
    "small": (256, 8, 8),     # ~6.4M
    "medium": (512, 8, 8),    # ~25M
    "125m": (768, 12, 12),    # ~85M non-embedding, ~124M with a 50k tied vocabulary
    "350m": (1024, 24, 16),   # ~302M non-embedding
}


@dataclass
class ModelConfig:
    """Shape of the decoder. Use ``ModelConfig.preset(name, ...)`` for the named sizes."""

    vocab_size: int = 4096
    d_model: int = 128
    n_layers: int = 5
    n_heads: int = 4
    n_kv_heads: int = 0  # 0 = same as n_heads (no grouped-query attention)
    ffn_multiple_of: int = 32
    max_seq_len: int = 512
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = True
    init_std: float = 0.02
    attn_backend: str = "auto"  # auto | sdpa | flex | flash
    head_dtype: str = "fp32"  # fp32 | bf16: the output projection's inputs (fp32 accumulation, bf16 logits)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> ModelConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown model preset {name!r}; choose one of {sorted(PRESETS)}")
        d, n_layers, n_heads = PRESETS[name]
        return dataclasses.replace(cls(d_model=d, n_layers=n_layers, n_heads=n_heads), **overrides)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def ffn_hidden(self) -> int:
        hidden = int(8 * self.d_model / 3)
        m = self.ffn_multiple_of
        return m * ((hidden + m - 1) // m)

    def validate(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim={self.head_dim} must be even for RoPE; change d_model or n_heads")
        if self.n_heads % self.kv_heads:
            raise ValueError(f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.kv_heads}")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # statistics in fp32 so bf16 runs keep them exact enough; one hand-written backward
        return rms_norm(x, self.weight, self.eps)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` [B, H, S, D] by RoPE, half-split convention; cos/sin are [S, D/2] fp32.

    Real arithmetic (not complex numbers): inductor does not generate code for complex ops.
    """
    half = x.shape[-1] // 2
    xf = x.float()
    x1, x2 = xf[..., :half], xf[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).type_as(x)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        # one fused projection for q, k and v: one matmul instead of three (matters on CPU)
        self.wqkv = nn.Linear(cfg.d_model, (cfg.n_heads + 2 * cfg.kv_heads) * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, ctx: Any,
                residual: torch.Tensor | None = None) -> torch.Tensor:
        """Attention output [B, S, d_model]; plus ``residual`` when given (added inside the matmul)."""
        b, s, _ = x.shape
        qkv = self.wqkv(x).view(b, s, self.n_heads + 2 * self.n_kv, self.head_dim)
        if ctx.backend == "sdpa" and rope_attention_supported(qkv, self.n_heads, ctx.mask):
            # eager CPU: RoPE and the flash kernel in one function (fewer full-size copies)
            out = rope_attention(qkv, cos, sin, self.n_heads, ctx.mask)
        else:
            # q and k rotated in one pass, v copied along: one output, one backward, no slice copies
            qkv = rope_heads(qkv, cos, sin, self.n_heads + self.n_kv).transpose(1, 2)
            q, k, v = qkv.split([self.n_heads, self.n_kv, self.n_kv], dim=1)
            out = attend(q, k, v, ctx)  # [B, H, S, D]
        return _project(out.transpose(1, 2).reshape(b, s, -1), self.wo.weight, residual)


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.hidden = cfg.ffn_hidden
        self.w13 = nn.Linear(cfg.d_model, 2 * self.hidden, bias=False)  # gate and up, fused
        self.w2 = nn.Linear(self.hidden, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        """silu(gate) * up, projected back; plus ``residual`` when given (added inside the matmul)."""
        return _project(swiglu(self.w13(x)), self.w2.weight, residual)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, ctx: Any) -> torch.Tensor:
        if _fuse_residual(x):
            # eager fp32 CPU: each residual add is the beta=1 term of its projection's GEMM (addmm),
            # one full-size pass less each (the gradient passes through to x unchanged either way)
            x = self.attn(self.attn_norm(x), cos, sin, ctx, residual=x)
            return self.ffn(self.ffn_norm(x), residual=x)
        x = x + self.attn(self.attn_norm(x), cos, sin, ctx)
        return x + self.ffn(self.ffn_norm(x))


def _fuse_residual(x: torch.Tensor) -> bool:
    """Residual adds go into the projections' addmm: eager CPU, fp32, no autocast (under autocast
    addmm would round the residual stream to the autocast dtype; compiled graphs fuse the add)."""
    return (x.device.type == "cpu" and x.dtype == torch.float32 and type(x) is torch.Tensor
            and not torch.is_autocast_enabled("cpu") and not torch.compiler.is_compiling())


def _project(y: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor | None) -> torch.Tensor:
    """``y @ weight.T`` (+ ``residual``, as the GEMM's accumulate term: same sum, one pass less)."""
    if residual is None:
        return F.linear(y, weight)
    out = torch.addmm(residual.reshape(-1, residual.shape[-1]), y.reshape(-1, y.shape[-1]), weight.t())
    return out.view(residual.shape)


class Transformer(nn.Module):
    """Decoder: ``forward(tokens [B,S] int64, segment_ids [B,S] int32) -> logits [B,S,V]``."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.output = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.register_buffer("rope_cos", torch.empty(cfg.max_seq_len, cfg.head_dim // 2), persistent=False)
        self.register_buffer("rope_sin", torch.empty(cfg.max_seq_len, cfg.head_dim // 2), persistent=False)

    def forward(self, tokens: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        s = tokens.shape[1]
        if s > self.cfg.max_seq_len:
            raise ValueError(f"sequence length {s} > max_seq_len {self.cfg.max_seq_len}; raise max_seq_len")
        h = self.tok_emb(tokens)
        # the dtype attention will compute in: autocast's, else the (FSDP-cast) parameters'
        dev = h.device.type
        dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else h.dtype
        ctx = prepare_attention(segment_ids, self.cfg.attn_backend, dtype)
        cos, sin = self.rope_cos[:s], self.rope_sin[:s]
        for layer in self.layers:
            h = layer(h, cos, sin, ctx)
        h = self.norm(h)
        weight = self.tok_emb.weight if self.output is None else self.output.weight
        if self.cfg.head_dtype == "bf16" and h.dtype != torch.bfloat16:
            # the [tokens, vocab] projection is most of a small model's step; bf16 inputs with fp32
            # accumulation (as GPU mixed precision computes it), logits bf16, the loss in fp32
            return F.linear(h.to(torch.bfloat16), weight.to(torch.bfloat16))
        return F.linear(h, weight)

    @torch.no_grad()
    def init_weights(self, seed: int = 0) -> None:
        """Deterministic init: each parameter from its own generator seeded by (seed, name).

        Works on plain tensors and on FSDP2 DTensor shards (the full value is built and the local
        shard copied), so every sharding of the model starts from the same numbers.
        """
        cfg = self.cfg
        inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim))
        freqs = torch.outer(torch.arange(cfg.max_seq_len, dtype=torch.float64), inv)
        self.rope_cos.copy_(freqs.cos().float())
        self.rope_sin.copy_(freqs.sin().float())
        # GPT-2/OLMo style: output projections of residual branches scaled by 1/sqrt(2 * n_layers)
        out_std = cfg.init_std / math.sqrt(2 * cfg.n_layers)
        for name, p in self.named_parameters():
            clean = name.replace("_checkpoint_wrapped_module.", "").replace("_orig_mod.", "")
            gen = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(clean.encode())) % 2**63)
            if clean.endswith("norm.weight"):
                full = torch.ones(p.shape)
            else:
                std = out_std if clean.endswith(("wo.weight", "w2.weight")) else cfg.init_std
                full = torch.nn.init.trunc_normal_(torch.empty(p.shape), std=std, a=-3 * std, b=3 * std,
                                                   generator=gen)
            _copy_full(p, full)


def _copy_full(p: torch.Tensor, full: torch.Tensor) -> None:
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(p, DTensor):
        local = distribute_tensor(full.to(p.device), p.device_mesh, p.placements).to_local()
        p.to_local().copy_(local)
    else:
        p.copy_(full.to(device=p.device, dtype=p.dtype))


def count_params(model: nn.Module, *, non_embedding: bool = True) -> int:
    """Parameters of the model; ``non_embedding`` drops the embedding table and an untied head."""
    total = sum(p.numel() for p in model.parameters())  # tied weights are counted once
    if non_embedding:
        total -= model.tok_emb.weight.numel()
        if model.output is not None:
            total -= model.output.weight.numel()
    return total


def build_model(cfg: ModelConfig, device: str | torch.device = "cpu", *, seed: int = 0,
                materialize: bool = True) -> Transformer:
    """Build on the meta device, then (unless ``materialize=False``) move to ``device`` and init."""
    with torch.device("meta"):
        model = Transformer(cfg)
    if materialize:
        model.to_empty(device=device)
        model.init_weights(seed)
    return model


# --------------------------------------------------------------------------- losses and evaluation


def target_mask(segment_ids: torch.Tensor) -> torch.Tensor:
    """[B, S-1] bool: position t predicts t+1 only when both lie in the same (non-pad) document."""
    return (segment_ids[:, 1:] == segment_ids[:, :-1]) & (segment_ids[:, :-1] >= 0)


def per_token_loss(logits: torch.Tensor, tokens: torch.Tensor,
                   segment_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token cross-entropy [B, S-1] (fp32, zero where masked) and the target mask [B, S-1]."""
    mask = target_mask(segment_ids)
    b, s, v = logits.shape
    # targets aligned with every position (the last one ignored), so the loss reads the logits in
    # place: slicing logits[:, :-1] would copy [B, S, V] forward and zero-fill it again backward
    targets = torch.full_like(tokens, -1)
    targets[:, :-1] = tokens[:, 1:].masked_fill(~mask, -1)  # ignored targets give exactly 0 loss
    loss = cross_entropy(logits.reshape(b * s, v), targets.reshape(-1)).view(b, s)[:, :-1]
    return loss, mask


def domain_sums(loss: torch.Tensor, mask: torch.Tensor, domain_id: torch.Tensor,
                n_domains: int) -> torch.Tensor:
    """[2, n_domains] fp64: per-domain loss sum and target-token count (rows are one domain each)."""
    out = torch.zeros(2, n_domains, dtype=torch.float64, device=loss.device)
    out[0].index_add_(0, domain_id, loss.detach().double().sum(1))
    out[1].index_add_(0, domain_id, mask.double().sum(1))
    return out


@torch.no_grad()
def evaluate(model: nn.Module, batches: Iterable[dict[str, torch.Tensor]],
             domains: list[str] | None = None, *, reduce: Any = None) -> dict[str, float]:
    """Mean loss per target token, per domain (and ``"all"``), over ``batches`` (dicts of [B, S]).

    ``reduce`` is an optional callable that sums a tensor over ranks in place (data parallel).
    """
    was_training = model.training
    model.eval()
    sums = None
    device = next(model.parameters()).device
    for batch in batches:
        tokens = batch["tokens"].to(device)
        seg = batch["segment_ids"].to(device)
        dom = batch["domain_id"].to(device)
        n = len(domains) if domains else int(dom.max()) + 1
        loss, mask = per_token_loss(model(tokens, seg), tokens, seg)
        part = domain_sums(loss, mask, dom, n)
        if sums is None:
            sums = part
        else:
            if part.shape[1] > sums.shape[1]:
                sums = F.pad(sums, (0, part.shape[1] - sums.shape[1]))
            sums[:, : part.shape[1]] += part
    model.train(was_training)
    if sums is None:
        return {}
    if reduce is not None:
        reduce(sums)
    names = domains or [str(i) for i in range(sums.shape[1])]
    out = {names[i]: float(sums[0, i] / sums[1, i]) for i in range(sums.shape[1]) if sums[1, i] > 0}
    out["all"] = float(sums[0].sum() / sums[1].sum().clamp_min(1))
    return out


# --------------------------------------------------------------------------- optimisation


class OptimFields(Protocol):
    lr: float
    min_lr: float
    warmup_steps: int
    steps: int
    weight_decay: float
    beta1: float
    beta2: float


def make_optimizer(model: nn.Module, cfg: OptimFields) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only, fused (one kernel per step for all parameters).

    torch has fused AdamW kernels for CUDA and CPU; on CPU the per-parameter loop torch defaults to
    costs ~10 small kernels per tensor, which is a visible share of a proxy's step.
    """
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    fused = all(p.device.type in ("cuda", "cpu") for p in model.parameters())
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=1e-8, fused=fused or None)


def lr_at(step: int, cfg: OptimFields) -> float:
    """Linear warmup to ``lr`` over ``warmup_steps``, then cosine down to ``min_lr`` at ``steps``."""
    if cfg.warmup_steps > 0 and step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    span = max(1, cfg.steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + math.cos(math.pi * progress))
